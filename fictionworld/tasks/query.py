"""Graph queries: the stored, recomputable definition of a task.

A :class:`Query` selects entities of one type with :class:`Condition` s (an attribute range or
value, or a relation path ending at an entity or at an attribute range: "directed by someone
born in a city of 1–2 million people") and reads :class:`Column` s off each selected entity by
following functional relation paths ("headquarters → country"). Evaluation is vectorised over
the fact table, so a query over a million-entity world takes milliseconds; every gold cell
carries the fact ids it was read from.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from fictionworld.dates import NA_DATE, from_days, year_end, year_start
from fictionworld.folding import fold_key
from fictionworld.schema import DTYPES, PREDICATE_CODE, RELATIONS, DType
from fictionworld.tables import NA_INT, TYPE_CODE

__all__ = ["Hop", "Condition", "Column", "Query", "Cell", "Answer", "evaluate", "GraphIndex", "attribute_dtype"]

Format = Literal["name", "int", "float", "money", "date", "year", "url", "category", "text"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Hop(_Model):
    """One step along a relation: subject → object, or object → subject when ``inverse``."""

    predicate: str
    inverse: bool = False


class Condition(_Model):
    """The entity reached by ``path`` from a row is ``equals`` (an entity id, when no
    ``attribute``), or has ``attribute`` equal to ``equals`` (a category) or within
    [``lo``, ``hi``] (numbers; dates compare by calendar year)."""

    path: tuple[Hop, ...] = ()
    attribute: str | None = None
    equals: str | None = None
    lo: float | None = None
    hi: float | None = None


class Column(_Model):
    """A column: the name (``attribute`` None) or an attribute of the entity reached by the
    functional ``path`` from the row."""

    header: str
    path: tuple[Hop, ...] = ()
    attribute: str | None = None
    format: Format = "name"


class Query(_Model):
    type: str
    conditions: tuple[Condition, ...] = ()
    columns: tuple[Column, ...]


@dataclass(frozen=True)
class Cell:
    text: str  # the gold value as written in the gold table
    value: object  # typed value (int, float, date, str)
    entity: str | None  # entity id when the value is an entity's name
    facts: tuple[int, ...]  # fact ids the value is read from (relation hops, then attribute)


@dataclass
class Answer:
    entities: list[str]  # row entity ids, in order
    cells: list[list[Cell]] = field(default_factory=list)  # [row][column]


def attribute_dtype(name: str) -> DType:
    if name not in DTYPES:
        raise KeyError(f"unknown attribute {name!r}")
    return DTYPES[name]


class GraphIndex:
    """Per-predicate views of the fact table, built lazily and shared by all queries."""

    def __init__(self, world):
        self.world = world
        self._edges: dict[tuple[str, bool], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._owners: dict[str, set[int]] | None = None

    def unambiguous_aliases(self, row: int) -> list[str]:
        """The aliases of entity ``row`` that name nothing else in the world: an alias that is
        (up to case, accents and punctuation) another entity's name or alias would let a
        scorer accept that other entity ("J. Smith" for both John and Jane Smith)."""
        fold, owners = fold_key, self._name_owners()
        return [a for a in self.world.entities.aliases[row] if len(owners.get(fold(a), ())) == 1]

    def _name_owners(self) -> dict[str, set[int]]:
        if self._owners is None:
            fold, e = fold_key, self.world.entities
            owners: dict[str, set[int]] = {}
            for i, (name, aliases) in enumerate(zip(e.name.tolist(), e.aliases.tolist())):
                for n in (name, *aliases):
                    owners.setdefault(fold(n), set()).add(i)
            self._owners = owners
        return self._owners

    def edges(self, hop: Hop) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(from rows, to rows, fact ids) of a hop, sorted by ``from``."""
        key = (hop.predicate, hop.inverse)
        if key not in self._edges:
            if hop.predicate not in RELATIONS:
                raise ValueError(f"{hop.predicate!r} is not a relation")
            f = self.world.facts
            m = np.flatnonzero(f.predicate == PREDICATE_CODE[hop.predicate])
            a, b = f.subject[m].astype(np.int64), f.object[m].astype(np.int64)
            if hop.inverse:
                a, b = b, a
            order = np.argsort(a, kind="stable")
            self._edges[key] = (a[order], b[order], f.id[m][order])
        return self._edges[key]

    def attribute(self, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(entity rows, values, fact ids) of an attribute over every type that has it."""
        key = (name, None)
        if key not in self._edges:
            f = self.world.facts
            m = np.flatnonzero(f.predicate == PREDICATE_CODE[name])
            dtype = attribute_dtype(name)
            self._edges[key] = (f.subject[m].astype(np.int64), f.column(dtype)[m], f.id[m])
        return self._edges[key]

    @cached_property
    def row_of(self) -> dict[str, int]:
        return self.world.entities.row_of

    # -- selection -----------------------------------------------------------------------
    def terminal(self, c: Condition) -> np.ndarray:
        """Rows of the entities the condition's path must reach."""
        if c.attribute is None:
            if c.equals is None:
                raise ValueError("a condition needs an entity (equals) or an attribute")
            return np.array([self.row_of[c.equals]], dtype=np.int64)
        rows, values, _ = self.attribute(c.attribute)
        dtype = attribute_dtype(c.attribute)
        if c.equals is not None:
            return rows[values == c.equals]
        if dtype == DType.DATE:
            v = values.astype(np.int64)
            ok = v != NA_DATE
            if c.lo is not None:
                ok &= v >= year_start(int(c.lo))
            if c.hi is not None:
                ok &= v <= year_end(int(c.hi))
        else:
            v = values.astype(np.float64)
            ok = ~np.isnan(v) if dtype == DType.FLOAT else values != NA_INT
            if c.lo is not None:
                ok &= v >= c.lo
            if c.hi is not None:
                ok &= v <= c.hi
        return rows[ok]

    def satisfying(self, c: Condition) -> np.ndarray:
        """Rows (of any type) from which the condition holds, as a sorted unique array."""
        reach = np.unique(self.terminal(c))
        for hop in reversed(c.path):
            a, b, _ = self.edges(hop)
            reach = np.unique(a[np.isin(b, reach)])
        return reach

    def select(self, q: Query) -> np.ndarray:
        rows = np.flatnonzero(self.world.entities.type_code == TYPE_CODE[q.type]).astype(np.int64)
        for c in q.conditions:
            rows = rows[np.isin(rows, self.satisfying(c))]
        return rows

    # -- columns -------------------------------------------------------------------------
    def follow(self, rows: np.ndarray, path: tuple[Hop, ...]) -> tuple[np.ndarray, list[list[int]]]:
        """The entity each row reaches along a functional path (-1 where it reaches none or
        several), with the fact ids of the hops."""
        cur = rows.astype(np.int64).copy()
        facts: list[list[int]] = [[] for _ in range(len(rows))]
        for hop in path:
            a, b, ids = self.edges(hop)
            lo = np.searchsorted(a, cur, "left")
            hi = np.searchsorted(a, cur, "right")
            one = (hi - lo == 1) & (cur >= 0)
            nxt = np.full(len(cur), -1, dtype=np.int64)
            nxt[one] = b[lo[one]]
            for i in np.flatnonzero(one).tolist():
                facts[i].append(int(ids[lo[i]]))
            cur = nxt
        return cur, facts

    def column(self, rows: np.ndarray, col: Column) -> list[Cell | None]:
        """The column's cell for each row (None where the row has no single value)."""
        ends, hop_facts = self.follow(rows, col.path)
        names = self.world.entities.name
        ids = self.world.entities.ids
        out: list[Cell | None] = [None] * len(rows)
        if col.attribute is None:
            for i, e in enumerate(ends.tolist()):
                if e >= 0:
                    out[i] = Cell(names[e], names[e], ids[e], tuple(hop_facts[i]))
            return out
        arows, values, fids = self.attribute(col.attribute)
        order = np.argsort(arows, kind="stable")
        arows, values, fids = arows[order], values[order], fids[order]
        lo = np.searchsorted(arows, ends, "left")
        hi = np.searchsorted(arows, ends, "right")
        dtype = attribute_dtype(col.attribute)
        for i in np.flatnonzero((hi - lo == 1) & (ends >= 0)).tolist():
            v = _typed(values[lo[i]], dtype)
            if v is None:
                continue
            out[i] = Cell(gold_text(v, col.format), v, None, (*hop_facts[i], int(fids[lo[i]])))
        return out


def _typed(v, dtype: DType):
    if dtype == DType.DATE:
        return None if int(v) == NA_DATE else from_days(int(v))
    if dtype == DType.INT:
        return None if v == NA_INT else int(v)
    if dtype == DType.FLOAT:
        return None if np.isnan(v) else float(v)
    return None if v is None else str(v)


def gold_text(v, fmt: str) -> str:
    """How a gold table writes a value: plain digits, ISO dates, cents for money."""
    if fmt == "year":
        return str(v.year)
    if isinstance(v, dt.date):
        return v.isoformat()
    if fmt == "money" and isinstance(v, float):
        return f"{v:.2f}"
    if isinstance(v, float):
        return f"{v:.1f}"
    return str(v)


def evaluate(world, q: Query, index: GraphIndex | None = None) -> Answer:
    """Rows of the query (in entity order) and their cells; rows missing a column are an error
    the task generator avoids by choosing full-coverage columns."""
    g = index or GraphIndex(world)
    rows = g.select(q)
    ans = Answer(entities=[world.entities.ids[r] for r in rows.tolist()])
    columns = [g.column(rows, c) for c in q.columns]
    ans.cells = [[columns[j][i] for j in range(len(q.columns))] for i in range(len(rows))]
    return ans


def type_of_path(start: str, path: tuple[Hop, ...]) -> str:
    """The entity type reached from ``start`` along ``path`` (the first allowed pair)."""
    t = start
    for hop in path:
        pairs = RELATIONS[hop.predicate].pairs
        nxt = [o for s, o in pairs if s == t] if not hop.inverse else [s for s, o in pairs if o == t]
        if not nxt:
            raise ValueError(f"{t} has no {'inverse ' if hop.inverse else ''}{hop.predicate}")
        t = nxt[0]
    return t
