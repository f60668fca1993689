"""The checker state shared by all checks: fact rows by predicate, origins, deaths, reporting."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

from fictionworld.dates import NA_DATE, from_days, to_days
from fictionworld.records import Violation
from fictionworld.records import ViolationKind as K
from fictionworld.schema import (
    ENTITY_TYPES,
    PREDICATE_CODE,
    PREDICATES,
)
from fictionworld.tables import NA_INT, TYPE_CODE, runs

URL_PATTERN = re.compile(
    r"^https?://[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*\.[a-z]{2,}(/\S*)?$"
)

KEY_STRIDE = np.int64(2**40)


class Checker:
    """Fact rows by predicate and per-entity dates, held as int32 row arrays (a 10M-entity
    world's 88M facts cost 4 bytes each per array); entity ids are formatted only to report.

    ``owned`` (predicate codes) makes a checker for one unit of a streamed check
    (:mod:`fictionworld.check.stream`): ``world.facts`` then holds every fact of those
    predicates and no other, every rule runs only where the facts it reads are all here, and
    the per-entity arrays other predicates give (origin and end dates, ``located_in``) come
    from ``context``; the rules over entities alone (names) run where ``entity_rules``.
    ``owned=None`` checks the whole world, entity rules and fact ids included."""

    def __init__(self, world, limit: int, *, owned=None, entity_rules: bool | None = None, context: CheckContext | None = None):  # fmt: skip
        self.w = world
        self.limit = limit
        self.owned = None if owned is None else frozenset(int(p) for p in owned)
        self.entity_rules = self.owned is None if entity_rules is None else entity_rules
        self.found: dict[K, list[Violation]] = defaultdict(list)
        self.extra: dict[K, int] = defaultdict(int)
        e, f = world.entities, world.facts
        self.n = len(e)
        self.tc = e.type_code.astype(np.int64)
        self.present = to_days(world.spec.present)
        self.enabled = set(world.spec.relations())  # cross-fact rules apply only among these
        # facts whose ends exist; every later pass only looks at these
        s, o = f.subject, f.object
        self.ok_ref = (s >= 0) & (s < self.n) & (o >= -1) & (o < self.n)
        self.p = f.predicate.astype(np.int32)
        self.valid = self.ok_ref & (self.p >= 0) & (self.p < len(PREDICATES))
        self.s = np.where(self.ok_ref, s, 0).astype(np.int32)
        self.o = np.where(self.ok_ref, o, -1).astype(np.int32)
        # fact rows grouped by predicate, computed once (every check asks by predicate): one
        # pass per predicate, so no sort of every row and no 8-byte index per fact
        key = np.where(self.valid, self.p, -1).astype(np.int16)
        self._by_pred = [np.flatnonzero(key == i).astype(np.int32) for i in range(len(PREDICATES))]
        del key
        if context is None:
            rows = np.sort(np.concatenate([self._by_pred[p] for p in CONTEXT_PREDICATES]))
            context = context_of(self.tc, self.s[rows], self.p[rows], self.o[rows], f.v_date[rows])
        self.origin, self.death, self.parent, self.country = context

    def owns(self, name: str) -> bool:
        """Whether every fact of predicate ``name`` is in this checker's table."""
        return self.owned is None or PREDICATE_CODE[name] in self.owned

    @property
    def whole(self) -> bool:
        """Whether this checker holds the whole world (then it also checks the fact ids)."""
        return self.owned is None

    @property
    def ids(self):
        """Entity ids by row, formatted on demand (a valid world never needs them)."""
        return self.w.entities.id_view

    # -- reporting -------------------------------------------------------------------------
    def add(self, kind: K, message: str, entities: Iterable[int] = (), facts: Iterable[int] = ()) -> None:
        if len(self.found[kind]) >= self.limit:
            self.extra[kind] += 1
            return
        f = self.w.facts
        self.found[kind].append(
            Violation(
                kind=kind,
                message=message,
                entities=tuple(self.ids[int(i)] for i in entities),
                facts=tuple(int(f.id[i]) for i in facts),
            )
        )

    def cap(self, kind: K, items) -> np.ndarray:
        """The first items that still fit under the per-kind limit; the rest are only counted."""
        items = np.asarray(items)
        room = max(0, self.limit - len(self.found[kind]))
        self.extra[kind] += max(0, len(items) - room)
        return items[:room]

    def add_facts(self, kind: K, rows: np.ndarray, why: str) -> None:
        for r in self.cap(kind, rows).tolist():
            self.add(kind, f"{self.describe(r)}: {why}", self._ends(r), (r,))

    def _ends(self, r: int) -> tuple[int, ...]:
        return (self.s[r],) if self.o[r] < 0 else (self.s[r], self.o[r])

    def result(self) -> list[Violation]:
        out: list[Violation] = []
        for kind in K:
            out.extend(self.found.get(kind, ()))
            if self.extra.get(kind):
                out.append(Violation(kind=kind, message=f"... and {self.extra[kind]} more {kind.value} violations"))
        return out

    def describe(self, r: int) -> str:
        f = self.w.facts
        pred = PREDICATES[self.p[r]] if 0 <= self.p[r] < len(PREDICATES) else f"<predicate {self.p[r]}>"
        subj = self.ids[self.s[r]] if self.ok_ref[r] else f"<row {f.subject[r]}>"
        if self.o[r] >= 0:
            tail = self.ids[self.o[r]]
        else:
            tail = repr(self.value(r))
        when = ""
        if f.start[r] != NA_DATE or f.end[r] != NA_DATE:
            when = f" [{day_text(f.start[r])} – {day_text(f.end[r])}]"
        return f"fact {int(f.id[r])} ({subj} {pred} {tail}{when})"

    def value(self, r: int):
        return self.w.facts.value(r)

    # -- helpers ---------------------------------------------------------------------------
    def rel(self, name: str) -> np.ndarray:
        rows = self._by_pred[PREDICATE_CODE[name]]
        return rows[self.o[rows] >= 0]

    def attr(self, name: str, type_name: str | None = None) -> np.ndarray:
        rows = self._by_pred[PREDICATE_CODE[name]]
        rows = rows[self.o[rows] < 0]
        if type_name is not None:
            rows = rows[self.tc[self.s[rows]] == TYPE_CODE[type_name]]
        return rows

    def rows_of(self, type_name: str) -> np.ndarray:
        return np.flatnonzero(self.tc == TYPE_CODE[type_name])


class CheckContext(NamedTuple):
    """Per-entity arrays that rules over other predicates read: the origin and end dates
    (birth, founding, ...; death), the ``located_in`` parent and the country of a place."""

    origin: np.ndarray  # int64 days, NA_DATE when unknown
    death: np.ndarray  # int64 days, NA_DATE when unknown
    parent: np.ndarray  # int64 row of the located_in object, -1 when none
    country: np.ndarray  # int64 row of the country a place nests into, -1 when none


CONTEXT_PREDICATES = tuple(
    sorted(
        {PREDICATE_CODE[a] for schema in ENTITY_TYPES.values() for a in (schema.origin, schema.end) if a}
        | {PREDICATE_CODE["located_in"]}
    )
)
"""The predicates :func:`context_of` reads."""


def context_of(tc: np.ndarray, s: np.ndarray, p: np.ndarray, o: np.ndarray, v_date: np.ndarray) -> CheckContext:
    """The :class:`CheckContext` of a world with entity types ``tc``, from its valid facts of
    :data:`CONTEXT_PREDICATES` (columns in fact order)."""
    b = ContextBuilder(tc)
    b.add(s, p, o, v_date)
    return b.finish()


class ContextBuilder:
    """A :class:`CheckContext` built from facts given in file order, whole or a row group at a
    time (where one entity has several facts of a predicate, the last one counts either way)."""

    def __init__(self, tc: np.ndarray):
        self.tc = tc
        n = len(tc)
        self.origin = np.full(n, NA_DATE, np.int64)
        self.death = np.full(n, NA_DATE, np.int64)
        self.parent = np.full(n, -1, np.int64)

    def add(self, s: np.ndarray, p: np.ndarray, o: np.ndarray, v_date: np.ndarray) -> None:
        for t, schema in ENTITY_TYPES.items():
            for attr, target in ((schema.origin, self.origin), (schema.end, self.death)):
                if attr:
                    m = (p == PREDICATE_CODE[attr]) & (o < 0) & (v_date != NA_DATE)
                    m[m] = self.tc[s[m]] == TYPE_CODE[t]
                    target[s[m]] = v_date[m]
        m = (p == PREDICATE_CODE["located_in"]) & (o >= 0)
        self.parent[s[m]] = o[m]

    def finish(self) -> CheckContext:
        tc, parent = self.tc, self.parent
        country = np.full(len(tc), -1, np.int64)
        for t in ("region", "city"):
            rows = np.flatnonzero(tc == TYPE_CODE[t])
            up = parent[rows]
            country[rows] = up if t == "region" else np.where(up >= 0, parent[np.maximum(up, 0)], -1)
        rows = np.flatnonzero(tc == TYPE_CODE["country"])
        country[rows] = rows
        return CheckContext(self.origin, self.death, parent, country)


def day_text(day) -> str:
    return "…" if day == NA_DATE else from_days(day).isoformat()


# =============================================================================================
# The checks. Each takes the checker and reports through ``c.add``.
# =============================================================================================


def ongoing_mask(r, start: np.ndarray) -> np.ndarray:
    return (start != NA_DATE) & (r.temporal and not r.instant)


def functional_object(c: Checker, name: str, n: int) -> np.ndarray:
    """Object row of a functional relation per subject row (-1 if none)."""
    out = np.full(n, -1, np.int64)
    rows = c.rel(name)
    out[c.s[rows]] = c.o[rows]
    return out


def fact_key(c: Checker, rows: np.ndarray, flip: bool = False) -> tuple[np.ndarray, ...]:
    """The (subject, object, start, end) columns of ``rows``; ends swapped with ``flip``."""
    f = c.w.facts
    s, o = (c.o[rows], c.s[rows]) if flip else (c.s[rows], c.o[rows])
    return s, o, f.start[rows], f.end[rows]


def rows_in(a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...]) -> np.ndarray:
    """For each row of the columns ``a``, whether an equal row is among the columns ``b``:
    exact, by one sort of both together (no Python set of tuples, whatever their number)."""
    na, nb = len(a[0]), len(b[0])
    if not na or not nb:
        return np.zeros(na, bool)
    cols = [np.concatenate((x, y)) for x, y in zip(a, b)]
    tag = np.r_[np.zeros(na, bool), np.ones(nb, bool)]
    order = np.lexsort([tag, *cols[::-1]])  # the last key is the primary one
    new = np.ones(na + nb, bool)
    for col in cols:
        sc = col[order]
        new[1:] &= sc[1:] == sc[:-1]
    new = ~new
    new[0] = True
    group = np.cumsum(new) - 1
    tag = tag[order]
    has_b = np.zeros(group[-1] + 1, bool)
    has_b[group[tag]] = True
    out = np.empty(na, bool)
    out[order[~tag]] = has_b[group[~tag]]
    return out


def equal_pairs(keys: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every (query position, key position) with ``queries[i] == keys[j]``: a join by sorting,
    for lookups a dict of lists would otherwise hold."""
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    lo = np.searchsorted(sk, queries, "left")
    which, at = runs(lo, np.searchsorted(sk, queries, "right") - lo)
    return which, order[at]


def count_per_subject(c: Checker, rows: np.ndarray) -> np.ndarray:
    return np.bincount(c.s[rows], minlength=c.n)


def attribute_by_row(c: Checker, type_name: str, attr: str, kind: str) -> np.ndarray:
    f = c.w.facts
    rows = c.attr(attr, type_name)
    out = np.full(c.n, np.nan)
    col = {"int": f.v_int, "float": f.v_float}[kind]
    v = col[rows].astype(np.float64)
    if kind == "int":
        v[col[rows] == NA_INT] = np.nan
    out[c.s[rows]] = v
    return out
