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
from fictionworld.schema import ENTITY_TYPES, RELATIONS, DType
from fictionworld.seeding import rng as make_rng
from fictionworld.tables import TYPE_CODE
from fictionworld.tasks.clauses import clause, header
from fictionworld.tasks.model import ColumnEval, Evaluation, GoldTable, RowProvenance, Task, norm_header
from fictionworld.tasks.phrasing import ATTR_NOUN, KEY_HEADER, PLURAL
from fictionworld.tasks.query import Column, Condition, GraphIndex, Hop, Query, evaluate, type_of_path
from fictionworld.web.phrasing import LIST_BY_ATTRIBUTE, LIST_BY_RELATION, LIST_BY_YEAR

__all__ = ["TaskKnobs", "WideTaskGenerator", "column_eval", "build_task"]

_EXACT_COUNTS = {"page_count", "runtime_min", "track_count", "height_cm", "elevation_m", "stadium_capacity"}
_SKIP_COLUMNS = {"gender"}
# Relations that may serve as column paths: functional ones plus those usually single-valued
# (a row with several values makes the column ineligible for that task).
_COLUMN_RELATIONS = {name for name, r in RELATIONS.items() if r.functional} | {"founded_by"}
_COLUMN_HOPS = [Hop(predicate=p) for p in sorted(_COLUMN_RELATIONS)] + [Hop(predicate="author_of", inverse=True)]


class TaskKnobs(BaseModel):
    """Difficulty of generated tasks."""

    model_config = ConfigDict(extra="forbid")

    rows_min: int = Field(3, ge=1)
    rows_max: int = Field(30, ge=1)
    columns: int = Field(4, ge=1, le=12)  # including the key column
    hops: int = Field(2, ge=0, le=4)  # longest relation path in a column or condition
    selectivity: float = Field(1.0, gt=0, le=1)  # share of the discoverable group kept by filters
    clues: int = Field(5, ge=1, le=8)  # most clues of a deep task

    @model_validator(mode="after")
    def _order(self):
        if self.rows_max < self.rows_min:
            raise ValueError("rows_max must be >= rows_min")
        return self


def column_eval(col: Column, row_type: str, *, key: bool, pick: float) -> ColumnEval:
    """Preprocessing and metric of a column (``pick`` in [0, 1) chooses between variants)."""
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


def _format(row_type: str, path: tuple[Hop, ...], attribute: str | None, rng) -> str:
    if attribute is None:
        return "name"
    dtype = ENTITY_TYPES[type_of_path(row_type, path)].attribute(attribute).dtype
    if dtype == DType.DATE:
        return "year" if rng.random() < 0.3 else "date"
    if attribute == "price_usd":
        return "money"
    return {DType.INT: "int", DType.FLOAT: "float", DType.URL: "url", DType.CATEGORY: "category"}.get(dtype, "text")


def _instructions(cols: list[Column]) -> str:
    notes = []
    fmts = {c.format for c in cols}
    if "date" in fmts:
        notes.append("dates as YYYY-MM-DD")
    if "year" in fmts:
        notes.append("years as four digits")
    if fmts & {"int", "float", "money"}:
        notes.append("numbers as plain digits without units")
    if "url" in fmts:
        notes.append("websites as full URLs")
    return ("Write " + ", ".join(notes) + ". ") if notes else ""


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
) -> Task:
    """A task from a query: gold table, evaluation, aliases and provenance."""
    ans = evaluate(world, q, g)
    headers = [c.header for c in q.columns]
    required = [norm_header(h) for h in headers]
    pipeline = {
        name: column_eval(c, q.type, key=j < key_count, pick=float(rng.random()))
        for j, (name, c) in enumerate(zip(required, q.columns))
    }
    rows = [[cell.text for cell in r] for r in ans.cells]
    aliases: dict[str, list[list[str]]] = {}
    for j, name in enumerate(required):
        if q.columns[j].attribute is None:
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
    )


class WideTaskGenerator:
    """Draws wide tasks from one world; ``task(i)`` is a pure function of (world, seed, i)."""

    def __init__(self, world, *, seed: int = 0, knobs: TaskKnobs | None = None):
        self.world = world
        self.seed = int(seed)
        self.knobs = knobs or TaskKnobs()
        self.g = GraphIndex(world)

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
                for lo in range(int(years.min()), int(years.max()) + 1, width):
                    n = int(((years >= lo) & (years < lo + width)).sum())
                    if n:
                        out.append((t, Condition(attribute=attr, lo=lo, hi=lo + width - 1), n))
        return out

    def columns_for(self, row_type: str) -> list[Column]:
        """Every candidate column of a type, up to ``hops`` relation hops."""
        out: list[Column] = []
        frontier: list[tuple[tuple[Hop, ...], str]] = [((), row_type)]
        for depth in range(self.knobs.hops + 1):
            nxt = []
            for path, t in frontier:
                if path:
                    out.append(Column(header="", path=path))
                for a in ENTITY_TYPES[t].attributes:
                    if a.name not in _SKIP_COLUMNS and (not path or a.dtype != DType.URL):
                        out.append(Column(header="", path=path, attribute=a.name))
                if depth == self.knobs.hops:
                    continue
                for hop in _COLUMN_HOPS:
                    try:
                        t2 = type_of_path(t, (hop,))
                    except ValueError:
                        continue
                    if any(h.predicate == hop.predicate for h in path) and hop.predicate != "located_in":
                        continue
                    nxt.append(((*path, hop), t2))
            frontier = nxt
        return out

    # -- one task ------------------------------------------------------------------------
    def task(self, i: int, *, attempts: int = 60) -> Task | None:
        r = make_rng(self.seed, f"tasks:wide:{i}")
        for _ in range(attempts):
            t = self._try(r, i)
            if t is not None:
                return t
        return None

    def _try(self, r, i: int) -> Task | None:
        k, w = self.knobs, self.world
        target = int(round(math.exp(r.uniform(math.log(k.rows_min), math.log(k.rows_max + 1)))))
        target = min(max(target, k.rows_min), k.rows_max)
        want_lo = max(k.rows_min, target) / k.selectivity
        cands = [a for a in self.anchors if want_lo * 0.6 <= a[2] <= min(target / k.selectivity * 1.6, 10 * k.rows_max)]
        if not cands:
            cands = [a for a in self.anchors if k.rows_min <= a[2] <= k.rows_max / k.selectivity]
        if not cands:
            return None
        row_type, anchor, size = cands[int(r.integers(len(cands)))]
        conds = [anchor]
        rows = self.g.select(Query(type=row_type, conditions=tuple(conds), columns=()))
        if k.selectivity < 1.0:
            f = self._filter(r, row_type, rows, max(k.rows_min, int(round(len(rows) * k.selectivity))))
            if f is None:
                return None
            conds.append(f)
            rows = self.g.select(Query(type=row_type, conditions=tuple(conds), columns=()))
        if not (k.rows_min <= len(rows) <= k.rows_max):
            return None
        used = {c.path for c in conds if c.attribute is None} | {(c.attribute,) for c in conds if not c.path}
        pool = []
        for c in self.columns_for(row_type):
            if c.path in used and c.attribute is None or (not c.path and (c.attribute,) in used):
                continue
            cells = self.g.column(rows, c)
            if all(x is not None for x in cells):
                pool.append(c)
        if len(pool) < k.columns - 1:
            return None
        # Own attributes weigh most, then one hop, then longer paths; at least one column
        # reaches ``hops`` deep when the pool has one.
        weight = np.array([(4.0, 2.0, 1.0, 1.0, 1.0)[len(c.path)] for c in pool])
        order = r.choice(len(pool), size=k.columns - 1, replace=False, p=weight / weight.sum())
        pick = [pool[j] for j in order.tolist()]
        if k.hops >= 2 and not any(len(c.path) >= 2 for c in pick):
            deep = [c for c in pool if len(c.path) >= 2]
            if deep and pick:
                pick[-1] = deep[int(r.integers(len(deep)))]
        key = Column(header=KEY_HEADER.get(row_type, row_type.replace("_", " ").title()))
        cols = [key]
        for c in pick:
            fmt = _format(row_type, c.path, c.attribute, r)
            c = c.model_copy(update={"format": fmt})
            cols.append(c.model_copy(update={"header": header(row_type, c)}))
        if len({norm_header(c.header) for c in cols}) < len(cols):
            return None
        names = w.entities.name[rows]
        key_count = 1
        if len(set(names.tolist())) < len(rows):  # namesakes: the key needs a second column
            for j, c in enumerate(cols[1:], 1):
                vals = [x.text for x in self.g.column(rows, c)]
                if len(set(zip(names.tolist(), vals))) == len(rows):
                    cols.insert(1, cols.pop(j))
                    key_count = 2
                    break
            else:
                return None
        q = Query(type=row_type, conditions=tuple(conds), columns=tuple(cols))
        mentioned = {c.equals: w.entity(c.equals).name for c in conds if c.attribute is None and c.equals}
        what = " and ".join(clause(row_type, c, mentioned) for c in conds)
        headers = [c.header for c in cols]
        question = (
            f"Find every one of the {PLURAL[row_type]} {what}. For each of them give: "
            + ", ".join(h.lower() if j else h.lower() + " (the name)" for j, h in enumerate(headers))
            + f". {_instructions(cols)}Answer with one Markdown table, one row per "
            f"{row_type.replace('_', ' ')}, with exactly these columns in this order:\n"
            "| " + " | ".join(headers) + " |"
        )
        diff = {
            "rows": float(len(rows)),
            "columns": float(len(cols)),
            "hops": float(max([len(c.path) for c in cols] + [len(c.path) for c in conds])),
            "selectivity": len(rows) / size,
        }
        iid = f"fw-{w.world_hash[:8]}-wide-{self.seed}-{i:05d}"
        return build_task(
            w, self.g, q, instance_id=iid, kind="wide", question=question, key_count=key_count, rng=r, knobs=diff
        )

    def _filter(self, r, row_type: str, rows: np.ndarray, want: int) -> Condition | None:
        """A condition keeping about ``want`` of ``rows``: an attribute range of the rows or of
        an entity on a path (born in a city of 1–2 million people), or a path to one entity."""
        cols = [c for c in self.columns_for(row_type) if c.attribute is not None or c.path]
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
                return Condition(path=c.path, equals=str(uniq[best]))
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


def _sig(v: float) -> float:
    return 10 ** max(0, math.floor(math.log10(abs(v))) - 1) if v else 1.0


def _round_down(v: float) -> float:
    s = _sig(v)
    return float(math.floor(v / s) * s)


def _round_up(v: float) -> float:
    s = _sig(v)
    return float(math.ceil(v / s) * s)
