"""Wide tasks: "list every X that … with columns A, B, C", drawn from graph queries.

A task starts from a grouping an agent can discover (the companies headquartered in a city,
the books of a genre, the films released in some years: each has a directory page), narrows
it with filters down to the requested selectivity (attribute ranges, or relation paths such as
"directed by someone born in X"), and asks for columns that every selected row has: the
row's own attributes and values along functional relation paths up to ``hops`` long.
"""

from __future__ import annotations

import math
from functools import cached_property

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from fictionworld.dates import years_of
from fictionworld.schema import ENTITY_TYPES, DType
from fictionworld.seeding import rng as make_rng
from fictionworld.tables import TYPE_CODE
from fictionworld.tasks.clauses import header
from fictionworld.tasks.families import BUILDERS, WIDE_FAMILIES, Draw, via_paths
from fictionworld.tasks.grammar import candidate_columns, column_format, key_header, render_wide
from fictionworld.tasks.guess import GAIN_LIMIT, GUESS_LIMIT, BaseRates
from fictionworld.tasks.model import ColumnEval, Evaluation, GoldTable, RowProvenance, Task, norm_header
from fictionworld.tasks.parse import parse_question
from fictionworld.tasks.phrasing import ATTR_NOUN, TEMPORAL_CLAUSES
from fictionworld.tasks.query import Column, Condition, GraphIndex, Hop, Query, evaluate, type_of_path
from fictionworld.web.phrasing import LIST_BY_ATTRIBUTE, LIST_BY_RELATION, LIST_BY_YEAR

__all__ = ["TaskKnobs", "WideTaskGenerator", "column_eval", "build_task", "runs_through"]

_EXACT_COUNTS = {"page_count", "runtime_min", "track_count", "height_cm", "elevation_m", "stadium_capacity"}


class TaskKnobs(BaseModel):
    """Difficulty of generated tasks (see :data:`PRESETS` for the curriculum)."""

    model_config = ConfigDict(extra="forbid")

    rows_min: int = Field(3, ge=1)
    rows_max: int = Field(30, ge=1)
    columns: int = Field(4, ge=1, le=12)  # including the key column (the fewest, with columns_max)
    columns_max: int | None = Field(None, ge=1, le=12)  # most columns; None: exactly ``columns``
    hops: int = Field(2, ge=0, le=4)  # longest relation path in a column or condition
    selectivity: float = Field(1.0, gt=0, le=1)  # share of the discoverable group kept by filters (list)
    clues: int = Field(5, ge=1, le=8)  # most clues of a deep task
    families: tuple[str, ...] = WIDE_FAMILIES  # wide families drawn from, evenly (see tasks.families)
    # Most item F1 that keys + base-rate guesses may earn over keys alone in a task (tasks.guess).
    guess_gain: float = Field(GAIN_LIMIT, gt=0, le=1)
    preset: str | None = None  # the preset these knobs came from, written into each task

    @model_validator(mode="after")
    def _order(self):
        if self.rows_max < self.rows_min:
            raise ValueError("rows_max must be >= rows_min")
        if self.columns_max is not None and self.columns_max < self.columns:
            raise ValueError("columns_max must be >= columns")
        bad = [f for f in self.families if f not in WIDE_FAMILIES]
        if bad or not self.families:
            raise ValueError(f"families must be some of {', '.join(WIDE_FAMILIES)}, not {bad or 'none'}")
        return self


def column_eval(col: Column, row_type: str, *, key: bool, pick: float) -> ColumnEval:
    """Preprocessing and metric of a column (``pick`` in [0, 1) chooses between variants)."""
    if col.aggregate is not None:
        return ColumnEval(preprocess=["extract_number"], metric=["number_near"], criterion=0.0)
    if col.attribute is None:
        if key or pick < 0.5:
            return ColumnEval(preprocess=["norm_str"], metric=["exact_match"])
        what = type_of_path(row_type, col.path).replace("_", " ")
        return ColumnEval(
            metric=["llm_judge"],
            criterion=f"The response names the same {what} as the gold value. Differences in case, "
            "accents, spacing or an added qualifier are acceptable; a different name is not.",
        )
    if col.format == "year":
        return ColumnEval(preprocess=["extract_number"], metric=["number_near"], criterion=0.0)
    dtype = ENTITY_TYPES[type_of_path(row_type, col.path)].attribute(col.attribute).dtype
    if dtype == DType.DATE:
        return ColumnEval(preprocess=["norm_date"], metric=["date_near" if pick < 0.7 else "exact_match"])
    if dtype in (DType.INT, DType.FLOAT):
        tol = 0.0 if col.attribute in _EXACT_COUNTS else 0.01
        return ColumnEval(preprocess=["extract_number"], metric=["number_near"], criterion=tol)
    if dtype == DType.URL:
        return ColumnEval(metric=["url_match"])
    if dtype == DType.CATEGORY and pick >= 0.6:
        return ColumnEval(
            metric=["llm_judge"],
            criterion=f"The response gives the same {ATTR_NOUN[col.attribute]} as the gold value, "
            "allowing for case, plural and word-order differences.",
        )
    return ColumnEval(preprocess=["norm_str"], metric=["exact_match"])


def build_task(
    world,
    g: GraphIndex,
    q: Query,
    *,
    instance_id: str,
    kind: str,
    question: str,
    key_count: int,
    rng,
    knobs: dict | None = None,
    family: str | None = None,
    preset: str | None = None,
) -> Task:
    """A task from a query: gold table, evaluation, aliases and provenance."""
    ans = evaluate(world, q, g)
    if any(cell is None for row in ans.cells for cell in row):
        raise ValueError("a gold cell has no value")
    headers = [c.header for c in q.columns]
    required = [norm_header(h) for h in headers]
    pipeline = {
        name: column_eval(c, q.type, key=j < key_count, pick=float(rng.random()))
        for j, (name, c) in enumerate(zip(required, q.columns))
    }
    rows = [[cell.text for cell in r] for r in ans.cells]
    aliases: dict[str, list[list[str]]] = {}
    for j, name in enumerate(required):
        if q.columns[j].attribute is None and q.columns[j].aggregate is None:
            aliases[name] = [g.unambiguous_aliases(world.row(r[j].entity)) for r in ans.cells]
    prov = [
        RowProvenance(
            entity=e,
            facts={name: list(r[j].facts) for j, name in enumerate(required)},
            entities={name: r[j].entity for j, name in enumerate(required) if r[j].entity},
        )
        for e, r in zip(ans.entities, ans.cells)
    ]
    return Task(
        instance_id=instance_id,
        kind=kind,
        query=question,
        evaluation=Evaluation(unique_columns=required[:key_count], required=required, eval_pipeline=pipeline),
        gold=GoldTable(columns=required, rows=rows),
        headers=headers,
        aliases=aliases,
        graph_query=q,
        world_hash=world.world_hash,
        provenance=prov,
        difficulty=dict(knobs or {}),
        family=family,
        preset=preset,
    )


class WideTaskGenerator:
    """Draws wide tasks from one world; ``task(i)`` is a pure function of (world, seed, knobs, i).
    Each draw picks a family of ``knobs.families`` (:mod:`fictionworld.tasks.families`), then
    the columns, then the question from the grammar; a question that does not read back as
    exactly its query (:func:`~fictionworld.tasks.grammar.parse_question`) is never kept."""

    def __init__(self, world, *, seed: int = 0, knobs: TaskKnobs | None = None):
        self.world = world
        self.seed = int(seed)
        self.knobs = knobs or TaskKnobs()
        self.g = GraphIndex(world)
        self.rejected: dict[str, int] = {}  # why draws were dropped: reason -> count

    # -- discoverable groups ---------------------------------------------------------------
    @cached_property
    def anchors(self) -> list[tuple[str, Condition, int]]:
        """(row type, condition, group size) for every directory-style grouping."""
        w, out = self.world, []
        tc = w.entities.type_code
        for (p, st), _title in LIST_BY_RELATION.items():
            a, b, _ = self.g.edges(Hop(predicate=p))
            keep = tc[a] == TYPE_CODE[st]
            objs, counts = np.unique(b[keep], return_counts=True)
            ids = w.entities.ids
            for o, n in zip(objs.tolist(), counts.tolist()):
                out.append((st, Condition(path=(Hop(predicate=p),), equals=ids[o]), n))
        for (t, attr), _title in LIST_BY_ATTRIBUTE.items():
            rows, values, _ = self.g.attribute(attr)
            vals = values[tc[rows] == TYPE_CODE[t]]
            for v, n in zip(*np.unique(vals.astype(str), return_counts=True)):
                out.append((t, Condition(attribute=attr, equals=str(v)), int(n)))
        for (t, attr), _title in LIST_BY_YEAR.items():
            rows, values, _ = self.g.attribute(attr)
            years = years_of(values[tc[rows] == TYPE_CODE[t]].astype(np.int64))
            if not len(years):
                continue
            for width in (1, 3, 5, 10, 20):
                for lo in range(int(years.min()) - int(years.min()) % min(width, 10), int(years.max()) + 1, width):
                    n = int(((years >= lo) & (years < lo + width)).sum())
                    if n:
                        out.append((t, Condition(attribute=attr, lo=lo, hi=lo + width - 1), n))
        return out

    @cached_property
    def temporal_groups(self) -> list[tuple[str, Condition, int]]:
        """Directory groupings over a dated membership (players of a team, alumni)."""
        return [a for a in self.anchors if a[1].path and a[1].path[0].predicate in TEMPORAL_CLAUSES]

    @cached_property
    def via_paths(self):
        types = [t for t in ENTITY_TYPES if (self.world.entities.type_code == TYPE_CODE[t]).any()]
        return via_paths(types)

    @staticmethod
    def anchor_kind(a) -> tuple:
        c = a[1]
        return (a[0], c.path, c.attribute, None if c.lo is None else c.hi - c.lo)

    def named_ok(self, c: Condition) -> bool:
        """Whether every entity ``c`` names has a name (and alias) nothing else has, so the
        name alone finds it and its directory pages."""
        if c.any_of:
            return all(self.named_ok(x) for x in c.any_of)
        if c.attribute is not None or c.equals is None:
            return True
        return self.g.unique_name(self.world.row(c.equals))

    def count_names_ok(self, rows: np.ndarray) -> bool:
        """Counts are read off each row's directory, found by the row's name: no namesakes."""
        return all(self.g.unique_name(int(x)) for x in rows.tolist())

    def columns_for(self, row_type: str) -> list[Column]:
        """Every candidate value column of a type, up to ``hops`` relation hops."""
        return candidate_columns(row_type, self.knobs.hops)

    # -- one task ------------------------------------------------------------------------
    def task(self, i: int, *, attempts: int = 60) -> Task | None:
        r = make_rng(self.seed, f"tasks:wide:{i}")
        fams = self.knobs.families
        for _ in range(attempts):
            fam = fams[int(r.integers(len(fams)))]
            draw = BUILDERS[fam](self, r)
            if draw is None:
                self._reject(f"{fam}: no row set in range")
                continue
            t = self._finish(r, i, fam, draw)
            if t is not None:
                return t
        return None

    def _reject(self, why: str) -> None:
        self.rejected[why] = self.rejected.get(why, 0) + 1

    def _finish(self, r, i: int, family: str, d: Draw) -> Task | None:
        k, w = self.knobs, self.world
        row_type, conds, rows = d.row_type, d.conds, d.rows
        hi = k.columns_max or k.columns
        extra = [c for c in d.extra if c != "rank"]
        # An aggregate's counts are what it asks for, and a fixed guess answers a share of them
        # (share): the table is at least wide enough to hold them within guess_gain.
        fewest = math.ceil(sum(self.share(row_type, c, rows) for c in extra) / k.guess_gain - 1e-9)
        if fewest > hi:
            self._reject(f"{family}: counts too guessable for the widest table")
            return None
        n_cols = int(r.integers(max(k.columns, fewest), hi + 1))
        ranked = "rank" in d.extra
        used = {c.path for c in conds if c.attribute is None} | {(c.attribute,) for c in conds if not c.path}
        through = _named_paths(conds)  # paths to an entity the question names: one value in every row
        pool = []
        for c in self.columns_for(row_type):
            if c.path in used and c.attribute is None or (not c.path and (c.attribute,) in used):
                continue
            if any(c.path[: len(p)] == p for p in through):
                continue
            if self.guessability(row_type, c) > GUESS_LIMIT:  # a base rate would answer too much of it
                continue
            if all(x is not None for x in self.g.column(rows, c)):
                pool.append(c)
        fixed: list[Column] = []
        if ranked:
            fixed.append(Column(header="Rank", aggregate="rank", format="int"))
        if d.order is not None:  # the number the rows are ordered by
            o = d.order
            fixed.append(Column(header="", path=o.path, attribute=o.attribute))
            pool = [c for c in pool if (c.path, c.attribute) != (o.path, o.attribute)]
        fixed += extra
        free = max(0, n_cols - 1 - len(fixed))
        if len(pool) < free:
            self._reject(f"{family}: too few full columns")
            return None
        weight = np.array([(4.0, 2.0, 1.0, 1.0, 1.0)[len(c.path)] for c in pool])
        order = r.choice(len(pool), size=free, replace=False, p=weight / weight.sum()) if free else []
        pick = [pool[j] for j in list(order)]
        if k.hops >= 2 and pick and not any(len(c.path) >= 2 for c in pick):
            deep = [c for c in pool if len(c.path) >= 2]
            if deep:
                pick[-1] = deep[int(r.integers(len(deep)))]
        cols = [Column(header=key_header(row_type))]
        for c in [*fixed, *pick]:
            cols.append(self._written(row_type, c, year=bool(r.random() < 0.3)) if c.aggregate is None else c)
        cols = self._within_budget(row_type, rows, cols, len(fixed), [c for c in pool if c not in pick], conds, d.order)
        if cols is None:
            self._reject(f"{family}: base rates would answer too much")
            return None
        if len({norm_header(c.header) for c in cols}) < len(cols):
            self._reject(f"{family}: two columns read alike")
            return None
        names = w.entities.name[rows]
        key_count = 1
        if len(set(names.tolist())) < len(rows):  # namesakes: the key needs a second column
            for j, c in enumerate(cols[1:], 1):
                if c.aggregate == "rank":
                    continue
                vals = [x.text for x in self.g.column(rows, c, d.order)]
                if len(set(zip(names.tolist(), vals))) == len(rows):
                    cols.insert(1, cols.pop(j))
                    key_count = 2
                    break
            else:
                self._reject(f"{family}: namesakes without a telling column")
                return None
        q = Query(type=row_type, conditions=tuple(conds), columns=tuple(cols), order=d.order)
        mentioned = _names(w, conds)
        question = render_wide(q, mentioned, r)
        if not _reads_back(question, q, mentioned):
            self._reject(f"{family}: question does not read back as its query")
            return None
        diff = {
            "rows": float(len(rows)),
            "columns": float(len(cols)),
            "cells": float(len(rows) * len(cols)),
            "hops": float(max([len(c.path) for c in cols] + [_depth(c) for c in conds])),
            "selectivity": len(rows) / max(d.size, len(rows)),
            "conditions": float(len(conds) + sum(max(0, len(c.any_of) - 1) for c in conds)),
        }
        iid = f"fw-{w.world_hash[:8]}-wide-{self.seed}-{i:05d}"
        task = build_task(w, self.g, q, instance_id=iid, kind="wide", question=question, key_count=key_count, rng=r,
                          knobs=diff, family=family, preset=k.preset)  # fmt: skip
        return self._measured(task)

    # -- base rates ------------------------------------------------------------------------
    @cached_property
    def base_rates(self) -> BaseRates:
        return BaseRates(self.g)

    def guessability(self, row_type: str, c: Column, rows: int = 0) -> float:
        """The share of a column's values over every entity of ``row_type`` that its best
        single guess answers, under the most lenient way the column may be scored (a date
        column as a date within a month, or as a year; ``rows``: a rank's table size)."""
        if c.aggregate == "rank":
            return 1.0 / max(1, rows)
        fmts = [column_format(row_type, c)]
        if fmts == ["date"]:
            fmts.append("year")
        out = 0.0
        for f in fmts:
            cf = c.model_copy(update={"format": f})
            ev = column_eval(cf, row_type, key=False, pick=0.0)
            out = max(out, self.base_rates.guess(row_type, cf, ev, f).share)
        return out

    def _written(self, row_type: str, c: Column, *, year: bool = False) -> Column:
        c = c.model_copy(update={"format": column_format(row_type, c, year=year)})
        return c.model_copy(update={"header": header(row_type, c)})

    def share(self, row_type: str, c: Column, rows: np.ndarray, conds=(), order=None) -> float:
        """What a fixed guess earns on a column as written (its format; dates within a month):
        the base rate over the row type (a count's too: counts are drawn only where no count is
        common over the type, so a policy that conditions on the group learns little more), or
        what that guess answers of ``rows`` when it answers more (a small table holding the
        entity whose value the guess is, or rows the conditions make alike); a rank 1/rows.
        Where the question predicts more (the column runs through an entity on the path of one
        of ``conds``, or ``rows`` hold mostly one value of it: :mod:`fictionworld.tasks.guess`),
        the best single answer's share of ``rows`` when it is larger; for the number a ranking
        orders by (``order``), the type's extreme value's share where that is larger."""
        if c.aggregate == "rank":
            return 1.0 / max(1, len(rows))
        ev = column_eval(c, row_type, key=False, pick=0.0)
        base = self.base_rates.guess(row_type, c, ev, c.format).share
        cells = [x for x in self.g.column(rows, c) if x is not None]
        here = self.base_rates.share(row_type, c, ev, cells, c.format, through=runs_through(c, conds), order=order)
        return max(base, here * len(cells) / max(1, len(rows)))

    def _within_budget(self, row_type, rows, cols, n_fixed, spare, conds=(), order=None):
        """``cols`` (the key, ``n_fixed`` fixed columns, then the drawn ones) with the drawn
        columns a fixed guess answers most swapped for the unused ones it answers least (of the
        same depth class when it can) until the task's expected gain from guessing (the value
        columns' shares over the column count, an aggregate's counts and a ranking's ranks
        included) is at most ``knobs.guess_gain``; None if it cannot be."""
        cols = list(cols)
        share = {c: self.share(row_type, c, rows, conds, order) for c in cols[1:]}
        spare = [self._written(row_type, c) for c in spare]
        share |= {c: self.share(row_type, c, rows, conds, order) for c in spare}
        spare.sort(key=lambda c: share[c])
        budget = self.knobs.guess_gain * len(cols)
        while sum(share[c] for c in cols[1:]) > budget + 1e-12:
            drawn = range(1 + n_fixed, len(cols))
            if not drawn:
                return None
            j = max(drawn, key=lambda j: (share[cols[j]], -j))
            deep = len(cols[j].path) >= 2
            better = [c for c in spare if share[c] < share[cols[j]]]
            sub = next((c for c in better if (len(c.path) >= 2) == deep), better[0] if better else None)
            if sub is None:
                return None
            spare.remove(sub)
            cols[j] = sub
        return cols

    def _measured(self, task: Task) -> Task:
        """``task`` with each value column's guessability (the share of its gold cells the
        base-rate guess answers, with the column's own metric; where the question predicts more,
        the larger share of :meth:`share`'s rules) and the task's ``guess_gain``."""
        q, ev = task.graph_query, task.evaluation
        keys = set(ev.unique_columns)
        ans = evaluate(self.world, q, self.g)
        shares = {}
        for j, name in enumerate(task.gold.columns):
            if name in keys:
                continue
            cells = [row[j] for row in ans.cells]
            col = q.columns[j]
            share = self.base_rates.share(q.type, col, ev.eval_pipeline[name], cells,
                                          through=runs_through(col, q.conditions), order=q.order)  # fmt: skip
            shares[name] = round(share, 6)
        gain = sum(shares.values()) / max(1, len(task.gold.columns))
        diff = task.difficulty | {"guess_gain": round(gain, 6)}
        return task.model_copy(update={"guessability": shares, "difficulty": diff})

    def filter(self, r, row_type: str, rows: np.ndarray, want: int, avoid=()) -> Condition | None:
        """A condition keeping about ``want`` of ``rows``: an attribute range of the rows or of
        an entity on a path (born in a city of 1–2 million people), or a path to one entity."""
        taken = {(c.path, c.attribute) for c in avoid}
        cols = [c for c in self.columns_for(row_type) if (c.attribute is not None or c.path)
                and (c.path, c.attribute) not in taken]  # fmt: skip
        r.shuffle(cols)
        for c in cols[:12]:
            cells = self.g.column(rows, c)
            vals = [x.value for x in cells if x is not None]
            if len(vals) < want:
                continue
            if c.attribute is None:  # a path to one entity
                ents = [x.entity for x in cells if x is not None]
                uniq, counts = np.unique(ents, return_counts=True)
                best = int(np.argmin(np.abs(counts - want)))
                if counts[best] < 1 or counts[best] == len(rows):
                    continue
                cond = Condition(path=c.path, equals=str(uniq[best]))
                if not self.named_ok(cond):
                    continue
                return cond
            dtype = ENTITY_TYPES[type_of_path(row_type, c.path)].attribute(c.attribute).dtype
            if dtype == DType.DATE:
                ys = np.sort([v.year for v in vals])
                lo = int(ys[int(r.integers(0, max(1, len(ys) - want + 1)))])
                hi = int(ys[min(len(ys) - 1, np.searchsorted(ys, lo) + want - 1)])
                return Condition(path=c.path, attribute=c.attribute, lo=lo, hi=hi)
            if dtype in (DType.INT, DType.FLOAT):
                xs = np.sort(np.asarray(vals, dtype=float))
                j = int(r.integers(0, max(1, len(xs) - want + 1)))
                lo, hi = _round_down(xs[j]), _round_up(xs[min(len(xs) - 1, j + want - 1)])
                return Condition(path=c.path, attribute=c.attribute, lo=lo, hi=hi)
        return None


def _named_paths(conds) -> set[tuple[Hop, ...]]:
    """Paths along which a condition names the entity every row reaches."""
    out = set()
    for c in conds:
        if c.any_of:
            out |= _named_paths(c.any_of)
        elif c.attribute is None and c.equals is not None and c.during is None and c.path:
            out.add(c.path)
    return out


def runs_through(c: Column, conds) -> bool:
    """Whether column ``c`` runs through an entity on the path of one of ``conds`` (the rows
    reach few of those: "companies headquartered in a city in T" share T's few cities)."""
    paths = set()
    stack = list(conds)
    while stack:
        x = stack.pop()
        stack += list(x.any_of)
        paths |= {x.path[:n] for n in range(1, len(x.path) + 1)}
    return any(c.path[: len(p)] == p for p in paths)


def _depth(c: Condition) -> int:
    return max((_depth(x) for x in c.any_of), default=0) if c.any_of else len(c.path)


def _names(world, conds) -> dict[str, str]:
    out: dict[str, str] = {}
    for c in conds:
        if c.any_of:
            out |= _names(world, c.any_of)
        elif c.attribute is None and c.equals:
            out[c.equals] = world.entity(c.equals).name
    return out


def _named(c: Condition, names: dict[str, str]) -> Condition:
    """``c`` with entity ids replaced by names (how a reader of the question knows them)."""
    if c.any_of:
        return c.model_copy(update={"any_of": tuple(_named(x, names) for x in c.any_of)})
    if c.attribute is None and c.equals is not None:
        return c.model_copy(update={"equals": names[c.equals]})
    return c


def canonical_query(q: Query) -> str:
    def num(c: Condition) -> Condition:
        if c.any_of:
            return c.model_copy(update={"any_of": tuple(num(x) for x in c.any_of)})
        upd = {k: float(v) for k, v in (("lo", c.lo), ("hi", c.hi)) if v is not None}
        return c.model_copy(update=upd)

    return q.model_copy(update={"conditions": tuple(num(c) for c in q.conditions)}).model_dump_json()


def _reads_back(question: str, q: Query, names: dict[str, str]) -> bool:
    """Whether the question has exactly one reading, and it is ``q`` (names for ids)."""
    readings = parse_question(question)
    if len(readings) != 1:
        return False
    want = q.model_copy(update={"conditions": tuple(_named(c, names) for c in q.conditions)})
    return canonical_query(readings[0].query) == canonical_query(want)


def _sig(v: float) -> float:
    return 10 ** max(0, math.floor(math.log10(abs(v))) - 1) if v else 1.0


def _round_down(v: float) -> float:
    s = _sig(v)
    return float(math.floor(v / s) * s)


def _round_up(v: float) -> float:
    s = _sig(v)
    return float(math.ceil(v / s) * s)
