"""Cross-fact checks: containment, symmetry and inverses, cycles, ranges, quantities, roles."""

from __future__ import annotations

import numpy as np

from fictionworld.check.base import (
    Checker,
    attribute_by_row,
    equal_pairs,
    fact_key,
    functional_object,
    rows_in,
)
from fictionworld.dates import NA_DATE, year_end, year_start
from fictionworld.records import ViolationKind as K
from fictionworld.schema import (
    ENTITY_TYPES,
    RELATIONS,
    DType,
)
from fictionworld.tables import NA_INT, TYPE_CODE


def check_containment(c: Checker) -> None:
    if "located_in" not in c.enabled:
        return
    parent, country = c.parent, c.country
    if c.owns("capital"):
        for r in c.rel("capital").tolist():
            if country[c.o[r]] != c.s[r]:
                c.add(
                    K.CONTAINMENT,
                    f"{c.describe(r)}: the capital lies in {c.ids[country[c.o[r]]] if country[c.o[r]] >= 0 else 'no country'}",
                    c._ends(r),
                    (r,),
                )
    if not c.owns("located_in"):
        return
    # every city must reach a country through a region, every region a country
    for t in ("city", "region"):
        rows = c.rows_of(t)
        lost = rows[(country[rows] < 0) | (c.tc[np.maximum(country[rows], 0)] != TYPE_CODE["country"])]
        lost = lost[parent[lost] >= 0]  # a missing parent is reported as missing_value
        for e in c.cap(K.CONTAINMENT, lost).tolist():
            c.add(
                K.CONTAINMENT,
                f"{c.ids[e]} ({t}) does not nest into a country through {'a region' if t == 'city' else 'located_in'}",
                (e,),
            )


def check_symmetry_inverse(c: Checker) -> None:
    for name, r in RELATIONS.items():
        rows = c.rel(name)
        if r.symmetric:
            miss = rows[~rows_in(fact_key(c, rows), fact_key(c, rows, flip=True))]
            c.add_facts(K.SYMMETRY, miss, f"{name} is symmetric but the mirrored fact is missing")
        if r.inverse and r.inverse in c.enabled:
            miss = rows[~rows_in(fact_key(c, rows), fact_key(c, c.rel(r.inverse), flip=True))]
            c.add_facts(K.INVERSE, miss, f"no matching {r.inverse} fact")


def check_cycles(c: Checker) -> None:
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
                c.add(
                    K.CYCLE,
                    f"{name} forms a cycle through {', '.join(c.ids[m] for m in members[:8])}"
                    + (" …" if len(members) > 8 else ""),
                    members[:8],
                )


def check_ranges(c: Checker) -> None:
    f = c.w.facts
    for t, schema in ENTITY_TYPES.items():
        for a in schema.attributes:
            if a.lo is None and a.hi is None:
                continue
            rows = c.attr(a.name, t)
            if a.dtype == DType.DATE:
                v = f.v_date[rows].astype(np.int64)
                lo = year_start(int(a.lo))
                hi = year_end(int(a.hi)) if a.hi is not None else c.present
                ok = (v == NA_DATE) | ((v >= lo) & (v <= hi))
            elif a.dtype == DType.INT:
                v = f.v_int[rows]
                ok = (v == NA_INT) | ((v >= a.lo) & (v <= a.hi))
            else:
                v = f.v_float[rows]
                ok = np.isnan(v) | ((v >= a.lo) & (v <= a.hi))
            unit = f" {a.unit}" if a.unit else ""
            top = f"{a.hi:g}" if a.hi is not None else "present"
            c.add_facts(K.RANGE, rows[~ok], f"{t}.{a.name} outside the realistic range {a.lo:g}–{top}{unit}")


def check_quantities(c: Checker) -> None:
    parent = c.parent
    for attr, kind in (("population", "int"), ("area_km2", "float")):
        if not c.owns(attr):
            continue
        for child_t, parent_t, exact in (("city", "region", False), ("region", "country", True)):
            v = (
                attribute_by_row(c, child_t, attr, kind)
                if child_t != "region"
                else attribute_by_row(c, "region", attr, kind)
            )
            pv = attribute_by_row(c, parent_t, attr, kind)
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
                c.add(
                    K.QUANTITY_AGREEMENT,
                    f"{c.ids[e]} {attr} {pv[e]:,.1f} should {rel} the sum over its "
                    f"{child_t} entities ({total[e]:,.1f})",
                    (e,),
                )
    for t, num, den, lo, hi, what in (
        ("company", "revenue_usd", "employees", 10_000, 5_000_000, "revenue per employee (USD)"),
        ("album", "runtime_min", "track_count", 1, 15, "minutes per track"),
    ):
        if not c.owns(num):  # (its denominator is checked in the same unit: see stream.TOGETHER)
            continue
        a = attribute_by_row(c, t, num, "int")
        b = attribute_by_row(c, t, den, "int")
        ents = c.rows_of(t)
        ents = ents[~np.isnan(a[ents]) & ~np.isnan(b[ents]) & (b[ents] > 0)]
        ratio = a[ents] / b[ents]
        off = (ratio < lo) | (ratio > hi)
        for e, x in zip(c.cap(K.QUANTITY_AGREEMENT, ents[off]).tolist(), ratio[off].tolist()):
            c.add(K.QUANTITY_AGREEMENT, f"{c.ids[e]}: {what} {x:,.1f} outside {lo:,}–{hi:,}", (e,))
    if not c.owns("start_date"):
        return
    start = np.full(c.n, NA_DATE, np.int64)
    end = np.full(c.n, NA_DATE, np.int64)
    f = c.w.facts
    for a, arr in (("start_date", start), ("end_date", end)):
        rows = c.attr(a, "event")
        arr[c.s[rows]] = f.v_date[rows]
    long = np.flatnonzero((start != NA_DATE) & (end != NA_DATE) & (end - start > 62))
    for e in c.cap(K.QUANTITY_AGREEMENT, long).tolist():
        c.add(K.QUANTITY_AGREEMENT, f"{c.ids[e]} lasts {end[e] - start[e]} days; events last at most two months", (e,))


def check_consistency(c: Checker) -> None:
    # a chief executive works for the company for the whole term
    if "works_for" in c.enabled and c.owns("ceo_of"):
        _ceo_employed(c)
    # an acquisition makes the company a subsidiary from that date
    if "subsidiary_of" in c.enabled and c.owns("acquired_by"):
        bought = c.rel("acquired_by")
        for r in bought[~rows_in(fact_key(c, bought), fact_key(c, c.rel("subsidiary_of")))].tolist():
            c.add(K.CONSISTENCY, f"{c.describe(r)}: no subsidiary_of fact from the acquisition date", c._ends(r), (r,))
    # siblings share a parent: (a, b) is fine when (b, p) is a child_of fact for some parent p of a
    if "child_of" in c.enabled and c.owns("sibling_of"):
        kids, sibs = c.rel("child_of"), c.rel("sibling_of")
        which, parent = equal_pairs(c.s[kids], c.s[sibs])
        shared = rows_in((c.o[sibs][which], c.o[kids][parent]), (c.s[kids], c.o[kids]))
        ok = np.zeros(len(sibs), bool)
        ok[which[shared]] = True
        for r in sibs[~ok].tolist():
            c.add(K.CONSISTENCY, f"{c.describe(r)}: siblings without a common parent", c._ends(r), (r,))
    # citizenship follows the birthplace's country
    if "located_in" in c.enabled and "born_in" in c.enabled and c.owns("citizen_of"):
        country = c.country
        born = functional_object(c, "born_in", c.n)
        cit = c.rel("citizen_of")
        place = born[c.s[cit]]
        home = np.where(place >= 0, country[np.maximum(place, 0)], -1)
        wrong = (home >= 0) & (home != c.o[cit])
        for r, b in zip(c.cap(K.CONSISTENCY, cit[wrong]).tolist(), place[wrong].tolist()):
            c.add(
                K.CONSISTENCY,
                f"{c.describe(r)}: born in {c.ids[b]}, which lies in {c.ids[country[b]]}",
                c._ends(r),
                (r,),
            )
    # only the dead have a place of death
    if "person" in c.w.spec.types and "death_date" in c.w.spec.attributes("person") and c.owns("died_in"):
        died = c.rel("died_in")
        bad = died[c.death[c.s[died]] == NA_DATE]
        c.add_facts(K.CONSISTENCY, bad, "a place of death without a death date")


def _ceo_employed(c: Checker) -> None:
    f = c.w.facts
    jobs, terms = c.rel("works_for"), c.rel("ceo_of")
    pair = np.int64(c.n)
    which, job = equal_pairs(
        c.s[jobs].astype(np.int64) * pair + c.o[jobs], c.s[terms].astype(np.int64) * pair + c.o[terms]
    )
    js, je = f.start[jobs][job], f.end[jobs][job]
    s0, e0 = f.start[terms][which], f.end[terms][which]
    fits = ((js == NA_DATE) | (s0 == NA_DATE) | (js <= s0)) & ((je == NA_DATE) | ((e0 != NA_DATE) & (je >= e0)))
    covered = np.zeros(len(terms), bool)
    covered[which[fits]] = True
    for r in terms[~covered].tolist():
        c.add(K.CONSISTENCY, f"{c.describe(r)}: no works_for fact covers the term", c._ends(r), (r,))
