"""Deep tasks: one entity described only by blurred clues along relation paths.

"Identify the film released in the 1990s, directed by someone born in a city with a
population between 100,000 and 200,000, and with a running time between 90 and 100 minutes."
No clue names an entity; dates become years, decades or centuries and numbers round ranges.
Clues are added greedily (each must narrow the candidates) until the graph query returns the
target alone, so the answer is unique by construction and checked by evaluating the query.
"""

from __future__ import annotations

import numpy as np

from fictionworld.schema import ENTITY_TYPES, DType
from fictionworld.seeding import rng as make_rng
from fictionworld.tables import TYPE_CODE
from fictionworld.tasks.clauses import nice_range, year_range
from fictionworld.tasks.families import discoverable
from fictionworld.tasks.grammar import render_deep
from fictionworld.tasks.model import Task
from fictionworld.tasks.parse import parse_question
from fictionworld.tasks.query import Column, Condition, GraphIndex, Query, type_of_path
from fictionworld.tasks.wide import TaskKnobs, WideTaskGenerator, build_task, canonical_query
from fictionworld.web.phrasing import LIST_BY_ATTRIBUTE, LIST_BY_YEAR

__all__ = ["DeepTaskGenerator", "DEEP_TYPES"]

DEEP_TYPES = ("company", "film", "book", "album", "product", "person", "sports_team", "event", "university")
_BLUNT = {DType.URL, DType.TEXT}  # websites and ISBNs would name the answer outright


def _narrow(c: Condition) -> bool:
    """A discoverable clue small enough to start from: a category, or at most a decade."""
    return c.equals is not None or (c.hi - c.lo) <= 9


class DeepTaskGenerator:
    """Draws deep tasks from one world; ``task(i)`` is a pure function of (world, seed, i)."""

    def __init__(self, world, *, seed: int = 0, knobs: TaskKnobs | None = None):
        self.world = world
        self.seed = int(seed)
        self.knobs = knobs or TaskKnobs()
        self.g = GraphIndex(world)
        self._wide = WideTaskGenerator(world, seed=seed, knobs=self.knobs)
        self._columns = {t: self._wide.columns_for(t) for t in DEEP_TYPES}

    def task(self, i: int, *, attempts: int = 40) -> Task | None:
        r = make_rng(self.seed, f"tasks:deep:{i}")
        # Only types a reader can list candidates of from a clue (a year or category directory).
        listed = {t for t, _ in (*LIST_BY_YEAR, *LIST_BY_ATTRIBUTE)}
        types = [t for t in DEEP_TYPES if t in listed and (self.world.entities.type_code == TYPE_CODE[t]).any()]
        for _ in range(attempts):
            t = self._try(r, i, types[int(r.integers(len(types)))])
            if t is not None:
                return t
        return None

    def _clues(self, r, row_type: str, target) -> list[Condition]:
        out = []
        for c in self._columns[row_type]:
            if c.attribute is None:
                continue
            dtype = ENTITY_TYPES[type_of_path(row_type, c.path)].attribute(c.attribute).dtype
            if dtype in _BLUNT:
                continue
            cell = self.g.column(target, c)[0]
            if cell is None:
                continue
            v = cell.value
            if dtype == DType.DATE:
                lo, hi = year_range(v.year, int(r.integers(0, 3)))
                out.append(Condition(path=c.path, attribute=c.attribute, lo=lo, hi=hi))
            elif dtype in (DType.INT, DType.FLOAT):
                lo, hi = nice_range(float(v), int(r.integers(0, 3)))
                out.append(Condition(path=c.path, attribute=c.attribute, lo=lo, hi=hi))
            else:
                out.append(Condition(path=c.path, attribute=c.attribute, equals=str(v)))
        return out

    def _try(self, r, i: int, row_type: str) -> Task | None:
        k, w, g = self.knobs, self.world, self.g
        rows = w.entities.rows_of_type(row_type)
        target = np.array([int(rows[int(r.integers(len(rows)))])], dtype=np.int64)
        clues = self._clues(r, row_type, target)
        if not clues:
            return None
        order = r.permutation(len(clues)).tolist()
        # A clue a reader can list candidates from (a year or category directory) comes first,
        # then a multi-hop clue, so the question needs at least one hop to answer.
        found = [j for j in order if discoverable(row_type, clues[j]) and _narrow(clues[j])]
        if not found:
            return None
        far = [j for j in order if len(clues[j].path) >= min(2, k.hops) and j != found[0]]
        if not far:
            return None
        for j in (far[0], found[0]):
            order.remove(j)
            order.insert(0, j)
        chosen: list[Condition] = []
        cand = w.entities.rows_of_type(row_type).astype(np.int64)
        for n, j in enumerate(order):
            narrowed = cand[np.isin(cand, g.satisfying(clues[j]))]
            if len(narrowed) == len(cand) and n:
                continue  # says nothing new
            chosen.append(clues[j])
            cand = narrowed
            if len(cand) == 1 or len(chosen) >= k.clues:
                break
        if len(cand) != 1 or int(cand[0]) != int(target[0]) or len(chosen) < 2:
            return None
        q = Query(type=row_type, conditions=tuple(chosen), columns=(Column(header="Answer"),))
        if len(g.select(q)) != 1:  # the stored query must recompute to the one answer
            return None
        question = render_deep(q, r)
        readings = parse_question(question)
        if len(readings) != 1 or not readings[0].deep or canonical_query(readings[0].query) != canonical_query(q):
            return None
        diff = {
            "rows": 1.0,
            "columns": 1.0,
            "hops": float(max(len(c.path) for c in chosen)),
            "clues": float(len(chosen)),
        }
        iid = f"fw-{w.world_hash[:8]}-deep-{self.seed}-{i:05d}"
        task = build_task(w, g, q, instance_id=iid, kind="deep", question=question, key_count=1, rng=r, knobs=diff,
                          family="lookup", preset=k.preset)  # fmt: skip
        clue_facts = {}
        for n, c in enumerate(chosen):
            col = Column(header="", path=c.path, attribute=c.attribute)
            cell = g.column(target, col)[0]
            clue_facts[f"clue:{n}"] = list(cell.facts) if cell is not None else []
        task.provenance[0].facts.update(clue_facts)
        return task
