"""The checker state shared by all checks: fact rows by predicate, origins, deaths, reporting."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

import numpy as np

from fictionworld.dates import NA_DATE, from_days, to_days
from fictionworld.records import Violation
from fictionworld.records import ViolationKind as K
from fictionworld.schema import (
    ENTITY_TYPES,
    PREDICATE_CODE,
    PREDICATES,
)
from fictionworld.tables import NA_INT, TYPE_CODE

_URL = re.compile(r"^https?://[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*\.[a-z]{2,}(/\S*)?$")

_BIG = np.int64(2**40)


class _Checker:
    def __init__(self, world, limit: int):
        self.w = world
        self.limit = limit
        self.found: dict[K, list[Violation]] = defaultdict(list)
        self.extra: dict[K, int] = defaultdict(int)
        e, f = world.entities, world.facts
        self.n = len(e)
        self.ids = e.ids
        self.tc = e.type_code.astype(np.int64)
        self.present = to_days(world.spec.present)
        self.enabled = set(world.spec.relations())  # cross-fact rules apply only among these
        # facts whose ends exist; every later pass only looks at these
        s, o = f.subject.astype(np.int64), f.object.astype(np.int64)
        known_pred = (f.predicate >= 0) & (f.predicate < len(PREDICATES))
        self.ok_ref = (s >= 0) & (s < self.n) & (o >= -1) & (o < self.n)
        self.valid = self.ok_ref & known_pred
        self.s, self.o, self.p = np.where(self.ok_ref, s, 0), np.where(self.ok_ref, o, -1), f.predicate.astype(np.int64)
        # fact rows grouped by predicate, computed once (every check asks by predicate)
        order = np.argsort(np.where(self.valid, self.p, -1), kind="stable")
        bounds = np.searchsorted(np.where(self.valid, self.p, -1)[order], np.arange(len(PREDICATES) + 1))
        self._by_pred = [order[bounds[i] : bounds[i + 1]] for i in range(len(PREDICATES))]
        self.origin = np.full(self.n, NA_DATE, np.int64)
        self.death = np.full(self.n, NA_DATE, np.int64)
        for t, schema in ENTITY_TYPES.items():
            for attr, target in ((schema.origin, self.origin), (schema.end, self.death)):
                if attr:
                    m = self.attr(attr, t)
                    m = m[f.v_date[m] != NA_DATE]
                    target[self.s[m]] = f.v_date[m]

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
            when = f" [{_d(f.start[r])} – {_d(f.end[r])}]"
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


def _d(day) -> str:
    return "…" if day == NA_DATE else from_days(day).isoformat()


# =============================================================================================
# The checks. Each takes the checker and reports through ``c.add``.
# =============================================================================================


def ongoing_mask(r, start: np.ndarray) -> np.ndarray:
    return (start != NA_DATE) & (r.temporal and not r.instant)


def _single(c: _Checker, name: str, n: int) -> np.ndarray:
    """Object row of a functional relation per subject row (-1 if none)."""
    out = np.full(n, -1, np.int64)
    rows = c.rel(name)
    out[c.s[rows]] = c.o[rows]
    return out


def _keyset(c: _Checker, rows: np.ndarray, flip: bool) -> set[tuple[int, int, int, int]]:
    f = c.w.facts
    s, o = (c.o[rows], c.s[rows]) if flip else (c.s[rows], c.o[rows])
    return set(zip(s.tolist(), o.tolist(), f.start[rows].tolist(), f.end[rows].tolist()))


def _count_per_subject(c: _Checker, rows: np.ndarray) -> np.ndarray:
    return np.bincount(c.s[rows], minlength=c.n)


def _values(c: _Checker, type_name: str, attr: str, kind: str) -> np.ndarray:
    f = c.w.facts
    rows = c.attr(attr, type_name)
    out = np.full(c.n, np.nan)
    col = {"int": f.v_int, "float": f.v_float}[kind]
    v = col[rows].astype(np.float64)
    if kind == "int":
        v[col[rows] == NA_INT] = np.nan
    out[c.s[rows]] = v
    return out
