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

__all__ = [
    "Hop",
    "Condition",
    "Column",
    "Order",
    "Query",
    "Cell",
    "Answer",
    "evaluate",
    "GraphIndex",
    "attribute_dtype",
]

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
    [``lo``, ``hi``] (numbers; dates compare by calendar year).

    ``any_of`` makes the condition a disjunction of its members (the other fields unset).
    ``during`` (first year, last year) narrows an entity condition over one temporal relation
    to the facts whose dated span overlaps those years ("played for X between 2001 and
    2010"): the start is known and no later than the last year, and the fact is ongoing or
    ended no earlier than the first year."""

    path: tuple[Hop, ...] = ()
    attribute: str | None = None
    equals: str | None = None
    lo: float | None = None
    hi: float | None = None
    any_of: tuple[Condition, ...] = ()
    during: tuple[int, int] | None = None


class Column(_Model):
    """A column: the name (``attribute`` None) or an attribute of the entity reached by the
    functional ``path`` from the row. ``aggregate`` ``count``: the number of distinct
    entities (of type ``of_type``) the path reaches from the row; ``rank``: the row's place
    (1, 2, …) in the query's :class:`Order`."""

    header: str
    path: tuple[Hop, ...] = ()
    attribute: str | None = None
    format: Format = "name"
    aggregate: Literal["count", "rank"] | None = None
    of_type: str | None = None


class Order(_Model):
    """Rows sorted by an attribute along a functional path (highest first when
    ``descending``), keeping the first ``limit`` (all when None)."""

    path: tuple[Hop, ...] = ()
    attribute: str
    descending: bool = True
    limit: int | None = None


class Query(_Model):
    type: str
    conditions: tuple[Condition, ...] = ()
    columns: tuple[Column, ...]
    order: Order | None = None


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

    def unique_name(self, row: int) -> bool:
        """Whether entity ``row``'s name names nothing else (no other name or alias folds to it)."""
        return len(self._name_owners().get(fold_key(self.world.entities.name[row]), ())) == 1

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
        if c.any_of:
            return np.unique(np.concatenate([self.satisfying(x) for x in c.any_of]))
        reach = np.unique(self.terminal(c))
        for n, hop in enumerate(reversed(c.path)):
            a, b, ids = self.edges(hop)
            m = np.isin(b, reach)
            if c.during is not None and n == len(c.path) - 1:
                m &= self.overlaps(ids, *c.during)
            reach = np.unique(a[m])
        return reach

    def overlaps(self, fact_ids: np.ndarray, first: int, last: int) -> np.ndarray:
        """Mask of facts whose dated span overlaps the years ``first``–``last`` (an undated
        fact never does: nothing on a page could show it)."""
        f = self.world.facts
        rows = np.searchsorted(f.id, fact_ids)
        start, end = f.start[rows].astype(np.int64), f.end[rows].astype(np.int64)
        return (
            (start != NA_DATE) & (start <= year_end(int(last))) & ((end == NA_DATE) | (end >= year_start(int(first))))
        )

    def select(self, q: Query) -> np.ndarray:
        """The query's rows: in entity order, or in its :class:`Order` (ties by entity row)."""
        rows = np.flatnonzero(self.world.entities.type_code == TYPE_CODE[q.type]).astype(np.int64)
        for c in q.conditions:
            rows = rows[np.isin(rows, self.satisfying(c))]
        if q.order is not None:
            keys = self.order_keys(rows, q.order)
            known = ~np.isnan(keys)
            rows, keys = rows[known], keys[known]
            rank = np.lexsort((rows, -keys if q.order.descending else keys))
            rows = rows[rank][: q.order.limit]
        return rows

    def order_keys(self, rows: np.ndarray, order: Order) -> np.ndarray:
        """Each row's sort value as a float (NaN where it has none); dates as day numbers."""
        cells = self.column(rows, Column(header="", path=order.path, attribute=order.attribute))
        out = np.full(len(rows), np.nan)
        for i, cell in enumerate(cells):
            if cell is not None:
                v = cell.value
                out[i] = (v - dt.date(1970, 1, 1)).days if isinstance(v, dt.date) else float(v)
        return out

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

    def column(self, rows: np.ndarray, col: Column, order: Order | None = None) -> list[Cell | None]:
        """The column's cell for each row (None where the row has no single value). A ``rank``
        column needs the query's ``order`` and ``rows`` in that order."""
        if col.aggregate == "count":
            return self._count(rows, col)
        if col.aggregate == "rank":
            if order is None:
                raise ValueError("a rank column needs the query's order")
            key = self.column(rows, Column(header="", path=order.path, attribute=order.attribute))
            return [Cell(str(i + 1), i + 1, None, k.facts if k else ()) for i, k in enumerate(key)]
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

    def _count(self, rows: np.ndarray, col: Column) -> list[Cell | None]:
        if len(col.path) != 1:
            raise ValueError("a count column follows one relation hop")
        a, b, ids = self.edges(col.path[0])
        if col.of_type is not None:
            keep = self.world.entities.type_code[b] == TYPE_CODE[col.of_type]
            a, b, ids = a[keep], b[keep], ids[keep]
        lo, hi = np.searchsorted(a, rows, "left"), np.searchsorted(a, rows, "right")
        out: list[Cell | None] = []
        for i in range(len(rows)):
            n = len(np.unique(b[lo[i] : hi[i]]))
            out.append(Cell(str(n), n, None, tuple(int(x) for x in ids[lo[i] : hi[i]])))
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
    """Rows of the query (in entity order, or its order) and their cells; rows missing a column are an error
    the task generator avoids by choosing full-coverage columns."""
    g = index or GraphIndex(world)
    rows = g.select(q)
    ans = Answer(entities=[world.entities.ids[r] for r in rows.tolist()])
    columns = [g.column(rows, c, q.order) for c in q.columns]
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
