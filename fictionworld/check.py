"""``check_world``: every constraint a world must satisfy, as vectorised passes over the facts.

Each finding is a :class:`Violation` with a :class:`ViolationKind`. The constraints come from
the ontology (``fictionworld.schema``): functional, required, temporal, exclusive, symmetric,
inverse, acyclic, min ages, ranges, units, uniqueness; plus cross-fact rules (containment,
quantities that must add up, role consistency) and the naming rules (gazetteer, famous names).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

import numpy as np

from fictionworld.dates import NA_DATE, YEAR, from_days, to_days, year_end, year_start
from fictionworld.gazetteer import famous_people, normalize, real_place_names
from fictionworld.records import Violation
from fictionworld.records import ViolationKind as K
from fictionworld.schema import (
    ENTITY_TYPES,
    INVENTED_NAME_TYPES,
    ORDERED_ATTRIBUTES,
    PLACE_TYPES,
    PREDICATE_CODE,
    PREDICATES,
    RELATIONS,
    DType,
)
from fictionworld.tables import NA_INT, TYPE_CODE, TYPE_NAMES

__all__ = ["check_world", "CHECKS"]

_URL = re.compile(r"^https?://[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*\.[a-z]{2,}(/\S*)?$")
_BIG = np.int64(2**40)


def check_world(world, *, limit_per_kind: int = 200) -> list[Violation]:
    """All constraint violations of ``world`` (empty list when it is consistent).

    At most ``limit_per_kind`` violations are listed per kind; a final entry of that kind
    says how many more there were.
    """
    c = _Checker(world, limit_per_kind)
    for check in CHECKS:
        check(c)
    return c.result()


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
        # facts whose ends exist; every later pass only looks at these
        s, o = f.subject.astype(np.int64), f.object.astype(np.int64)
        known_pred = (f.predicate >= 0) & (f.predicate < len(PREDICATES))
        self.ok_ref = (s >= 0) & (s < self.n) & (o >= -1) & (o < self.n)
        self.valid = self.ok_ref & known_pred
        self.s, self.o, self.p = np.where(self.ok_ref, s, 0), np.where(self.ok_ref, o, -1), f.predicate.astype(np.int64)
        self.origin = np.full(self.n, NA_DATE, np.int64)
        self.death = np.full(self.n, NA_DATE, np.int64)
        for t, schema in ENTITY_TYPES.items():
            for attr, target in ((schema.origin, self.origin), (schema.end, self.death)):
                if attr:
                    m = self.valid & (self.p == PREDICATE_CODE[attr]) & (self.tc[self.s] == TYPE_CODE[t]) & (f.v_date != NA_DATE)
                    target[self.s[m]] = f.v_date[m]

    # -- reporting -------------------------------------------------------------------------
    def add(self, kind: K, message: str, entities: Iterable[int] = (), facts: Iterable[int] = ()) -> None:
        if len(self.found[kind]) >= self.limit:
            self.extra[kind] += 1
            return
        f = self.w.facts
        self.found[kind].append(Violation(
            kind=kind, message=message, entities=tuple(self.ids[int(i)] for i in entities),
            facts=tuple(int(f.id[i]) for i in facts)))

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
        f = self.w.facts
        if f.v_int[r] != NA_INT:
            return int(f.v_int[r])
        if not np.isnan(f.v_float[r]):
            return float(f.v_float[r])
        if f.v_date[r] != NA_DATE:
            return from_days(f.v_date[r])
        return f.v_text[r]

    # -- helpers ---------------------------------------------------------------------------
    def rel(self, name: str) -> np.ndarray:
        return np.flatnonzero(self.valid & (self.p == PREDICATE_CODE[name]) & (self.o >= 0))

    def attr(self, name: str, type_name: str | None = None) -> np.ndarray:
        m = self.valid & (self.p == PREDICATE_CODE[name]) & (self.o < 0)
        if type_name is not None:
            m &= self.tc[self.s] == TYPE_CODE[type_name]
        return np.flatnonzero(m)

    def rows_of(self, type_name: str) -> np.ndarray:
        return np.flatnonzero(self.tc == TYPE_CODE[type_name])


def _d(day) -> str:
    return "…" if day == NA_DATE else from_days(day).isoformat()


# =============================================================================================
# The checks. Each takes the checker and reports through ``c.add``.
# =============================================================================================

def check_references(c: _Checker) -> None:
    bad = np.flatnonzero(~c.ok_ref)
    f = c.w.facts
    for r in c.cap(K.DANGLING_REFERENCE, bad).tolist():
        c.add(K.DANGLING_REFERENCE, f"fact {int(f.id[r])} refers to a missing entity "
              f"(subject row {int(f.subject[r])}, object row {int(f.object[r])})", (), (r,))


def check_predicates(c: _Checker) -> None:
    spec = c.w.spec
    unknown = np.flatnonzero(c.ok_ref & ~c.valid)
    c.add_facts(K.UNKNOWN_PREDICATE, unknown, "predicate not in the ontology")
    enabled = set(spec.relations())
    for name in RELATIONS:
        if name not in enabled:
            rows = np.flatnonzero(c.valid & (c.p == PREDICATE_CODE[name]))
            c.add_facts(K.UNKNOWN_PREDICATE, rows, f"relation {name!r} is not enabled by the spec")
    for t in ENTITY_TYPES:
        if t not in spec.types:
            rows = np.flatnonzero(c.valid & (c.tc[c.s] == TYPE_CODE[t]))
            c.add_facts(K.UNKNOWN_PREDICATE, rows, f"entity type {t!r} is not in the spec")
            continue
        for a in set(spec.types[t].exclude_attributes):
            c.add_facts(K.UNKNOWN_PREDICATE, c.attr(a, t), f"attribute {a!r} is excluded by the spec")


def check_domain_range(c: _Checker) -> None:
    for name, spec in RELATIONS.items():
        code = PREDICATE_CODE[name]
        rows = np.flatnonzero(c.valid & (c.p == code))
        literal = rows[c.o[rows] < 0]
        c.add_facts(K.DOMAIN_RANGE, literal, f"relation {name!r} needs an entity as object")
        rows = rows[c.o[rows] >= 0]
        allowed = np.zeros((len(TYPE_NAMES), len(TYPE_NAMES)), bool)
        for s, o in spec.pairs:
            allowed[TYPE_CODE[s], TYPE_CODE[o]] = True
        bad = rows[~allowed[c.tc[c.s[rows]], c.tc[c.o[rows]]]]
        c.add_facts(K.DOMAIN_RANGE, bad, f"{name} does not link these entity types "
                    f"(allowed: {', '.join(f'{s}->{o}' for s, o in spec.pairs)})")
    for a in {a.name for s in ENTITY_TYPES.values() for a in s.attributes}:
        rows = np.flatnonzero(c.valid & (c.p == PREDICATE_CODE[a]))
        has = np.array([any(x.name == a for x in ENTITY_TYPES[t].attributes) for t in TYPE_NAMES])
        bad = rows[~has[c.tc[c.s[rows]]]]
        c.add_facts(K.DOMAIN_RANGE, bad, f"this entity type has no attribute {a!r}")


def check_attribute_types(c: _Checker) -> None:
    f = c.w.facts
    is_int, is_float = f.v_int != NA_INT, ~np.isnan(f.v_float)
    is_date, is_text = f.v_date != NA_DATE, f.v_text != None  # noqa: E711
    n_values = is_int.astype(int) + is_float + is_date + is_text
    rel = np.flatnonzero(c.valid & (c.p < len(RELATIONS)) & (n_values > 0))
    c.add_facts(K.ATTRIBUTE_TYPE, rel, "a relation fact must not carry a literal value")
    attr_with_object = np.flatnonzero(c.valid & (c.p >= len(RELATIONS)) & (c.o >= 0))
    c.add_facts(K.ATTRIBUTE_TYPE, attr_with_object, "an attribute takes a value, not an entity")
    for t, schema in ENTITY_TYPES.items():
        for a in schema.attributes:
            rows = c.attr(a.name, t)
            if not len(rows):
                continue
            want = {DType.INT: is_int, DType.FLOAT: is_float, DType.DATE: is_date}.get(a.dtype, is_text)
            bad = rows[~want[rows] | (n_values[rows] != 1)]
            c.add_facts(K.ATTRIBUTE_TYPE, bad, f"{t}.{a.name} must hold exactly one {a.dtype.value} value")
            good = rows[want[rows] & (n_values[rows] == 1)]
            if a.dtype == DType.CATEGORY:
                cats = set(a.categories)
                bad = [r for r in good.tolist() if f.v_text[r] not in cats]
                c.add_facts(K.ATTRIBUTE_TYPE, np.array(bad, np.int64), f"not a {t}.{a.name} category")
            elif a.dtype == DType.URL:
                bad = [r for r in good.tolist() if not isinstance(f.v_text[r], str) or not _URL.match(f.v_text[r])]
                c.add_facts(K.ATTRIBUTE_TYPE, np.array(bad, np.int64), "not a well-formed http(s) URL")
            elif a.name == "isbn":
                bad = [r for r in good.tolist() if not _isbn13_ok(f.v_text[r])]
                c.add_facts(K.ATTRIBUTE_TYPE, np.array(bad, np.int64), "not a valid ISBN-13 (check digit)")
            elif a.dtype == DType.TEXT:
                bad = [r for r in good.tolist() if not isinstance(f.v_text[r], str) or not f.v_text[r].strip()]
                c.add_facts(K.ATTRIBUTE_TYPE, np.array(bad, np.int64), "empty text")


def _isbn13_ok(s) -> bool:
    if not isinstance(s, str):
        return False
    d = s.replace("-", "")
    if len(d) != 13 or not d.isdigit():
        return False
    return sum(int(x) * (1 if i % 2 == 0 else 3) for i, x in enumerate(d)) % 10 == 0


def _count_per_subject(c: _Checker, rows: np.ndarray) -> np.ndarray:
    return np.bincount(c.s[rows], minlength=c.n)


def check_missing_and_cardinality(c: _Checker) -> None:
    spec = c.w.spec
    for t, schema in ENTITY_TYPES.items():
        if t not in spec.types:
            continue
        ents = c.rows_of(t)
        for a in schema.attributes:
            rows = c.attr(a.name, t)
            cnt = _count_per_subject(c, rows)
            if a.required:
                for e in c.cap(K.MISSING_VALUE, ents[cnt[ents] == 0]).tolist():
                    c.add(K.MISSING_VALUE, f"{c.ids[e]} has no {a.name}", (e,))
            for e in c.cap(K.CARDINALITY, ents[cnt[ents] > 1]).tolist():
                c.add(K.CARDINALITY, f"{c.ids[e]} has {cnt[e]} values of {a.name}", (e,), rows[c.s[rows] == e])
    enabled = set(spec.relations())
    for name, r in RELATIONS.items():
        if name not in enabled or not (r.functional or r.required):
            continue
        rows = c.rel(name)
        cnt = _count_per_subject(c, rows)
        for st in r.domain:
            if st not in spec.types:
                continue
            ents = c.rows_of(st)
            if r.required and any(o in spec.types for s, o in r.pairs if s == st):
                for e in c.cap(K.MISSING_VALUE, ents[cnt[ents] == 0]).tolist():
                    c.add(K.MISSING_VALUE, f"{c.ids[e]} has no {name}", (e,))
            if r.functional:
                for e in c.cap(K.CARDINALITY, ents[cnt[ents] > 1]).tolist():
                    c.add(K.CARDINALITY, f"{c.ids[e]} has {cnt[e]} {name} facts; at most one allowed",
                          (e,), rows[c.s[rows] == e])


def check_overlaps(c: _Checker) -> None:
    f = c.w.facts
    for name, r in RELATIONS.items():
        if not r.exclusive:
            continue
        rows = c.rel(name)
        key = c.s[rows] if r.exclusive == "subject" else c.o[rows]
        start = f.start[rows].astype(np.int64)
        end = np.where(f.end[rows] == NA_DATE, _BIG, f.end[rows])
        order = np.lexsort((start, key))
        k, st, en, rr = key[order], start[order], end[order], rows[order]
        # running maximum of earlier ends within the same key
        same = np.r_[False, k[1:] == k[:-1]]
        run_end = en.copy()
        for i in np.flatnonzero(same).tolist():  # sequential by nature; few rows per key
            run_end[i] = max(run_end[i], run_end[i - 1])
        clash = np.flatnonzero(same & (st < np.r_[0, run_end[:-1]]))
        who = "subject" if r.exclusive == "subject" else "object"
        for i in c.cap(K.OVERLAP, clash).tolist():
            c.add(K.OVERLAP, f"{c.describe(rr[i])} overlaps {c.describe(rr[i - 1])}: one {name} per {who} at a time",
                  c._ends(rr[i]), (rr[i - 1], rr[i]))


def check_interval_order(c: _Checker) -> None:
    f = c.w.facts
    bad = np.flatnonzero(c.valid & (f.start != NA_DATE) & (f.end != NA_DATE) & (f.end < f.start))
    c.add_facts(K.INTERVAL_ORDER, bad, "ends before it starts")
    for t, (a, b) in ORDERED_ATTRIBUTES.items():
        first = np.full(c.n, NA_DATE, np.int64)
        second = np.full(c.n, NA_DATE, np.int64)
        for attr, arr in ((a, first), (b, second)):
            rows = c.attr(attr, t)
            arr[c.s[rows]] = f.v_date[rows]
        bad = np.flatnonzero((first != NA_DATE) & (second != NA_DATE) & (second < first))
        for e in c.cap(K.INTERVAL_ORDER, bad).tolist():
            c.add(K.INTERVAL_ORDER, f"{c.ids[e]}: {b} {_d(second[e])} is before {a} {_d(first[e])}", (e,))


def check_future(c: _Checker) -> None:
    f = c.w.facts
    for col in ("v_date", "start", "end"):
        arr = getattr(f, col)
        bad = np.flatnonzero(c.valid & (arr != NA_DATE) & (arr > c.present))
        c.add_facts(K.FUTURE_DATE, bad, f"{col} is after the world's present {c.w.spec.present}")


def check_lifespans(c: _Checker) -> None:
    """Both ends of a relation exist at its time: founded / born (and old enough), not dead."""
    f = c.w.facts
    for name, r in RELATIONS.items():
        if not r.coexist:
            continue
        rows = c.rel(name)
        if not len(rows):
            continue
        s, o = c.s[rows], c.o[rows]
        os_, oo = c.origin[s], c.origin[o]
        start = f.start[rows].astype(np.int64)
        when = np.where(start != NA_DATE, start, np.maximum(os_, oo))
        known = when != NA_DATE
        for ends, org, min_age, role in ((s, os_, r.min_age_subject, "subject"), (o, oo, r.min_age_object, "object")):
            is_person = c.tc[ends] == TYPE_CODE["person"]
            need = org + np.where(is_person, np.round(min_age * YEAR).astype(np.int64), 0)
            early = known & (org != NA_DATE) & (when < need)
            for i in c.cap(K.LIFESPAN, np.flatnonzero(early)).tolist():
                age = " (too young)" if is_person[i] and when[i] >= org[i] else " (before it existed)"
                c.add(K.LIFESPAN, f"{c.describe(rows[i])}: {role} {c.ids[ends[i]]} at {_d(when[i])}{age}",
                      c._ends(rows[i]), (rows[i],))
            death = c.death[ends]
            last = np.where(f.end[rows] != NA_DATE, f.end[rows], np.where(ongoing_mask(r, start), c.present, when))
            ongoing = (start != NA_DATE) & (f.end[rows] == NA_DATE) & (r.temporal and not r.instant)
            dead = (death != NA_DATE) & known & ((when > death) | (last > death) | ongoing)
            for i in c.cap(K.LIFESPAN, np.flatnonzero(dead)).tolist():
                c.add(K.LIFESPAN, f"{c.describe(rows[i])}: {role} {c.ids[ends[i]]} died {_d(death[i])}",
                      c._ends(rows[i]), (rows[i],))


def ongoing_mask(r, start: np.ndarray) -> np.ndarray:
    return (start != NA_DATE) & (r.temporal and not r.instant)


def _single(c: _Checker, name: str, n: int) -> np.ndarray:
    """Object row of a functional relation per subject row (-1 if none)."""
    out = np.full(n, -1, np.int64)
    rows = c.rel(name)
    out[c.s[rows]] = c.o[rows]
    return out


def check_containment(c: _Checker) -> None:
    parent = _single(c, "located_in", c.n)
    country = np.full(c.n, -1, np.int64)
    for t in ("region", "city"):
        rows = c.rows_of(t)
        up = parent[rows]
        up2 = np.where(up >= 0, parent[np.maximum(up, 0)], -1)
        country[rows] = np.where(t == "region", up, up2) if t == "region" else up2
    country[c.rows_of("country")] = c.rows_of("country")
    for r in c.rel("capital").tolist():
        if country[c.o[r]] != c.s[r]:
            c.add(K.CONTAINMENT, f"{c.describe(r)}: the capital lies in {c.ids[country[c.o[r]]] if country[c.o[r]] >= 0 else 'no country'}",
                  c._ends(r), (r,))
    # every city must reach a country through a region, every region a country
    for t in ("city", "region"):
        rows = c.rows_of(t)
        lost = rows[(country[rows] < 0) | (c.tc[np.maximum(country[rows], 0)] != TYPE_CODE["country"])]
        lost = lost[parent[lost] >= 0]  # a missing parent is reported as missing_value
        for e in c.cap(K.CONTAINMENT, lost).tolist():
            c.add(K.CONTAINMENT, f"{c.ids[e]} ({t}) does not nest into a country through "
                  f"{'a region' if t == 'city' else 'located_in'}", (e,))
    c.country_of_place = country


def _keyset(c: _Checker, rows: np.ndarray, flip: bool) -> set[tuple[int, int, int, int]]:
    f = c.w.facts
    s, o = (c.o[rows], c.s[rows]) if flip else (c.s[rows], c.o[rows])
    return set(zip(s.tolist(), o.tolist(), f.start[rows].tolist(), f.end[rows].tolist()))


def check_symmetry_inverse(c: _Checker) -> None:
    for name, r in RELATIONS.items():
        rows = c.rel(name)
        if r.symmetric:
            mirror = _keyset(c, rows, flip=True)
            mine = _keyset(c, rows, flip=False)
            miss = [row for row, key in zip(rows.tolist(), zip(c.s[rows].tolist(), c.o[rows].tolist(),
                    c.w.facts.start[rows].tolist(), c.w.facts.end[rows].tolist())) if key not in mirror]
            del mine
            c.add_facts(K.SYMMETRY, np.array(miss, np.int64), f"{name} is symmetric but the mirrored fact is missing")
        if r.inverse:
            inv = set(_keyset(c, c.rel(r.inverse), flip=True))
            f = c.w.facts
            miss = [row for row, key in zip(rows.tolist(), zip(c.s[rows].tolist(), c.o[rows].tolist(),
                    f.start[rows].tolist(), f.end[rows].tolist())) if key not in inv]
            c.add_facts(K.INVERSE, np.array(miss, np.int64), f"no matching {r.inverse} fact")


def check_cycles(c: _Checker) -> None:
    import networkx as nx

    for name, r in RELATIONS.items():
        if not r.acyclic:
            continue
        rows = c.rel(name)
        rows = rows[c.s[rows] != c.o[rows]]
        s, o = c.s[rows], c.o[rows]
        # Peel sources (in-degree 0) round by round; what never peels sits on or after a cycle.
        alive = np.ones(len(rows), bool)
        while True:
            indeg = np.bincount(o[alive], minlength=c.n)
            drop = alive & (indeg[s] == 0)
            if not drop.any():
                break
            alive &= ~drop
        if not alive.any():
            continue
        g = nx.DiGraph()
        g.add_edges_from(zip(s[alive].tolist(), o[alive].tolist()))
        for comp in nx.strongly_connected_components(g):
            if len(comp) > 1:
                members = sorted(comp)
                c.add(K.CYCLE, f"{name} forms a cycle through {', '.join(c.ids[m] for m in members[:8])}"
                      + (" …" if len(members) > 8 else ""), members[:8])


def check_self_reference(c: _Checker) -> None:
    rows = np.flatnonzero(c.valid & (c.o >= 0) & (c.s == c.o))
    c.add_facts(K.SELF_REFERENCE, rows, "an entity cannot be related to itself")


def check_ranges(c: _Checker) -> None:
    f = c.w.facts
    for t, schema in ENTITY_TYPES.items():
        for a in schema.attributes:
            if a.lo is None and a.hi is None:
                continue
            rows = c.attr(a.name, t)
            if a.dtype == DType.DATE:
                v = f.v_date[rows].astype(np.int64)
                lo, hi = year_start(int(a.lo)), year_end(int(a.hi))
                ok = (v == NA_DATE) | ((v >= lo) & (v <= hi))
            elif a.dtype == DType.INT:
                v = f.v_int[rows]
                ok = (v == NA_INT) | ((v >= a.lo) & (v <= a.hi))
            else:
                v = f.v_float[rows]
                ok = np.isnan(v) | ((v >= a.lo) & (v <= a.hi))
            unit = f" {a.unit}" if a.unit else ""
            c.add_facts(K.RANGE, rows[~ok], f"{t}.{a.name} outside the realistic range {a.lo:g}–{a.hi:g}{unit}")


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


def check_quantities(c: _Checker) -> None:
    parent = _single(c, "located_in", c.n)
    for attr, kind in (("population", "int"), ("area_km2", "float")):
        for child_t, parent_t, exact in (("city", "region", False), ("region", "country", True)):
            v = _values(c, child_t, attr, kind) if child_t != "region" else _values(c, "region", attr, kind)
            pv = _values(c, parent_t, attr, kind)
            kids = c.rows_of(child_t)
            kids = kids[(parent[kids] >= 0) & ~np.isnan(v[kids])]
            kids = kids[c.tc[parent[kids]] == TYPE_CODE[parent_t]]
            total = np.bincount(parent[kids], weights=v[kids], minlength=c.n)
            has = np.zeros(c.n, bool)
            has[parent[kids]] = True
            ps = np.flatnonzero(has & ~np.isnan(pv))
            tol = 1e-9 * np.abs(total[ps]) + 0.051 if kind == "float" else 0.0  # integers add up exactly
            bad = ps[(np.abs(pv[ps] - total[ps]) > tol) if exact else (pv[ps] + tol < total[ps])]
            rel = "equal" if exact else "be at least"
            for e in c.cap(K.QUANTITY_AGREEMENT, bad).tolist():
                c.add(K.QUANTITY_AGREEMENT, f"{c.ids[e]} {attr} {pv[e]:,.1f} should {rel} the sum over its "
                      f"{child_t} entities ({total[e]:,.1f})", (e,))
    for t, num, den, lo, hi, what in (
        ("company", "revenue_usd", "employees", 10_000, 5_000_000, "revenue per employee (USD)"),
        ("album", "runtime_min", "track_count", 1, 15, "minutes per track"),
    ):
        a = _values(c, t, num, "int")
        b = _values(c, t, den, "int")
        ents = c.rows_of(t)
        ents = ents[~np.isnan(a[ents]) & ~np.isnan(b[ents]) & (b[ents] > 0)]
        ratio = a[ents] / b[ents]
        off = (ratio < lo) | (ratio > hi)
        for e, x in zip(c.cap(K.QUANTITY_AGREEMENT, ents[off]).tolist(), ratio[off].tolist()):
            c.add(K.QUANTITY_AGREEMENT, f"{c.ids[e]}: {what} {x:,.1f} outside {lo:,}–{hi:,}", (e,))
    start = np.full(c.n, NA_DATE, np.int64)
    end = np.full(c.n, NA_DATE, np.int64)
    f = c.w.facts
    for a, arr in (("start_date", start), ("end_date", end)):
        rows = c.attr(a, "event")
        arr[c.s[rows]] = f.v_date[rows]
    long = np.flatnonzero((start != NA_DATE) & (end != NA_DATE) & (end - start > 62))
    for e in c.cap(K.QUANTITY_AGREEMENT, long).tolist():
        c.add(K.QUANTITY_AGREEMENT, f"{c.ids[e]} lasts {end[e] - start[e]} days; events last at most two months", (e,))


def check_names(c: _Checker) -> None:
    e = c.w.entities
    names = e.name.tolist()
    group = e.namesake_group
    by_key: dict[tuple[int, str], list[int]] = defaultdict(list)
    for i, (t, n) in enumerate(zip(c.tc.tolist(), names)):
        by_key[(t, n)].append(i)
    for (t, n), rows in by_key.items():
        if len(rows) > 1:
            gs = {int(group[r]) for r in rows}
            if len(gs) != 1 or -1 in gs:
                c.add(K.DUPLICATE_NAME, f"{len(rows)} {TYPE_NAMES[t]} entities are named {n!r} "
                      "without being recorded as namesakes", rows[:8])
    # namesake records: a group is a set of >= 2 same-type entities sharing one name,
    # identified by the local index of one of its members
    members: dict[tuple[int, int], list[int]] = defaultdict(list)
    for i in np.flatnonzero(group >= 0).tolist():
        members[(int(c.tc[i]), int(group[i]))].append(i)
    local = e.local
    for (t, g), rows in members.items():
        names_in = {names[r] for r in rows}
        if len(rows) < 2 or len(names_in) != 1 or not any(int(local[r]) == g for r in rows):
            c.add(K.NAMESAKE_RECORD, f"namesake group {g} of {TYPE_NAMES[t]} is not a set of >= 2 "
                  f"entities sharing one name (members: {len(rows)}, names: {sorted(names_in)[:3]})", rows[:8])
    # gazetteer: invented names (and word aliases) of places and organisations
    gaz = real_place_names()
    invented = np.isin(c.tc, [TYPE_CODE[t] for t in INVENTED_NAME_TYPES])
    place = np.isin(c.tc, [TYPE_CODE[t] for t in PLACE_TYPES])
    for i in np.flatnonzero(invented).tolist():
        keys = [names[i]] + [a for a in e.aliases[i] if any(ch.islower() for ch in a)]
        if place[i]:
            keys.append(names[i].split(" ")[0])
        hit = next((k for k in keys if normalize(k) in gaz), None)
        if hit is not None:
            c.add(K.GAZETTEER_COLLISION, f"{c.ids[i]} {names[i]!r}: {hit!r} is a real place name", (i,))
    famous = famous_people()
    for i in c.rows_of("person").tolist():
        if normalize(names[i]) in famous:
            c.add(K.FAMOUS_NAME, f"{c.ids[i]} is named {names[i]!r}, a famous real person", (i,))


def check_unique_values(c: _Checker) -> None:
    f = c.w.facts
    for a in sorted({a.name for s in ENTITY_TYPES.values() for a in s.attributes if a.unique}):
        rows = c.attr(a)
        seen: dict[str, int] = {}
        for r in rows.tolist():
            v = f.v_text[r]
            if v is None:
                continue
            if v in seen:
                c.add(K.UNIQUE_VALUE, f"{c.ids[c.s[r]]} and {c.ids[c.s[seen[v]]]} share {a} {v!r}",
                      (c.s[r], c.s[seen[v]]), (seen[v], r))
            else:
                seen[v] = r


def check_duplicate_facts(c: _Checker) -> None:
    f = c.w.facts
    ids, counts = np.unique(f.id, return_counts=True)
    for fid in c.cap(K.DUPLICATE_FACT, ids[counts > 1]).tolist():
        c.add(K.DUPLICATE_FACT, f"fact id {fid} is used {int(counts[ids == fid][0])} times")
    rows = np.flatnonzero(c.valid)
    cols = (f.end[rows], f.start[rows], f.v_date[rows], f.v_float[rows], f.v_int[rows], c.o[rows], c.p[rows], c.s[rows])
    order = rows[np.lexsort(cols)]
    same = np.ones(len(order) - 1, bool) if len(order) > 1 else np.zeros(0, bool)
    for col in (c.s, c.p, c.o, f.v_int, f.v_date, f.start, f.end):
        same &= col[order][1:] == col[order][:-1]
    fl = f.v_float[order]
    same &= (fl[1:] == fl[:-1]) | (np.isnan(fl[1:]) & np.isnan(fl[:-1]))
    for i in np.flatnonzero(same).tolist():
        a, b = order[i], order[i + 1]
        if f.v_text[a] == f.v_text[b]:
            c.add(K.DUPLICATE_FACT, f"{c.describe(b)} repeats fact {int(f.id[a])}", c._ends(b), (a, b))


def check_consistency(c: _Checker) -> None:
    f = c.w.facts
    # a chief executive works for the company for the whole term
    jobs: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for r in c.rel("works_for").tolist():
        jobs[(c.s[r], c.o[r])].append((int(f.start[r]), int(f.end[r])))
    for r in c.rel("ceo_of").tolist():
        s0, e0 = int(f.start[r]), int(f.end[r])
        covered = any((js == NA_DATE or s0 == NA_DATE or js <= s0) and (je == NA_DATE or (e0 != NA_DATE and je >= e0))
                      for js, je in jobs.get((c.s[r], c.o[r]), ()))
        if not covered:
            c.add(K.CONSISTENCY, f"{c.describe(r)}: no works_for fact covers the term", c._ends(r), (r,))
    # an acquisition makes the company a subsidiary from that date
    subs = _keyset(c, c.rel("subsidiary_of"), flip=False)
    for r in c.rel("acquired_by").tolist():
        if (c.s[r], c.o[r], int(f.start[r]), int(f.end[r])) not in subs:
            c.add(K.CONSISTENCY, f"{c.describe(r)}: no subsidiary_of fact from the acquisition date", c._ends(r), (r,))
    # siblings share a parent
    parents: dict[int, set[int]] = defaultdict(set)
    for r in c.rel("child_of").tolist():
        parents[c.s[r]].add(c.o[r])
    for r in c.rel("sibling_of").tolist():
        if not parents[c.s[r]] & parents[c.o[r]]:
            c.add(K.CONSISTENCY, f"{c.describe(r)}: siblings without a common parent", c._ends(r), (r,))
    # citizenship follows the birthplace's country
    country = getattr(c, "country_of_place", None)
    if country is not None:
        born = _single(c, "born_in", c.n)
        for r in c.rel("citizen_of").tolist():
            b = born[c.s[r]]
            if b >= 0 and country[b] >= 0 and country[b] != c.o[r]:
                c.add(K.CONSISTENCY, f"{c.describe(r)}: born in {c.ids[b]}, which lies in {c.ids[country[b]]}",
                      c._ends(r), (r,))
    # only the dead have a place of death
    died = c.rel("died_in")
    bad = died[c.death[c.s[died]] == NA_DATE]
    c.add_facts(K.CONSISTENCY, bad, "a place of death without a death date")


CHECKS = (
    check_references, check_predicates, check_domain_range, check_attribute_types,
    check_missing_and_cardinality, check_overlaps, check_interval_order, check_future,
    check_lifespans, check_containment, check_symmetry_inverse, check_cycles,
    check_self_reference, check_ranges, check_quantities, check_names, check_unique_values,
    check_duplicate_facts, check_consistency,
)
