"""Temporal checks: overlapping terms, interval order, future dates, lifespans."""

from __future__ import annotations

import numpy as np

from fictionworld.check.base import (
    KEY_STRIDE,
    Checker,
    day_text,
    ongoing_mask,
)
from fictionworld.dates import NA_DATE, YEAR
from fictionworld.records import ViolationKind as K
from fictionworld.schema import (
    ORDERED_ATTRIBUTES,
    RELATIONS,
)
from fictionworld.tables import TYPE_CODE


def check_overlaps(c: Checker) -> None:
    f = c.w.facts
    for name, r in RELATIONS.items():
        if not r.exclusive:
            continue
        rows = c.rel(name)
        key = c.s[rows] if r.exclusive == "subject" else c.o[rows]
        start = f.start[rows].astype(np.int64)
        end = np.where(f.end[rows] == NA_DATE, KEY_STRIDE, f.end[rows])
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
            c.add(
                K.OVERLAP,
                f"{c.describe(rr[i])} overlaps {c.describe(rr[i - 1])}: one {name} per {who} at a time",
                c._ends(rr[i]),
                (rr[i - 1], rr[i]),
            )


def check_interval_order(c: Checker) -> None:
    f = c.w.facts
    bad = np.flatnonzero(c.valid & (f.start != NA_DATE) & (f.end != NA_DATE) & (f.end < f.start))
    c.add_facts(K.INTERVAL_ORDER, bad, "ends before it starts")
    for t, (a, b) in ORDERED_ATTRIBUTES.items():
        if not c.owns(a):  # (b is checked in the same unit: see stream.TOGETHER)
            continue
        first = np.full(c.n, NA_DATE, np.int64)
        second = np.full(c.n, NA_DATE, np.int64)
        for attr, arr in ((a, first), (b, second)):
            rows = c.attr(attr, t)
            arr[c.s[rows]] = f.v_date[rows]
        bad = np.flatnonzero((first != NA_DATE) & (second != NA_DATE) & (second < first))
        for e in c.cap(K.INTERVAL_ORDER, bad).tolist():
            c.add(K.INTERVAL_ORDER, f"{c.ids[e]}: {b} {day_text(second[e])} is before {a} {day_text(first[e])}", (e,))


def check_future(c: Checker) -> None:
    f = c.w.facts
    for col in ("v_date", "start", "end"):
        arr = getattr(f, col)
        bad = np.flatnonzero(c.valid & (arr != NA_DATE) & (arr > c.present))
        c.add_facts(K.FUTURE_DATE, bad, f"{col} is after the world's present {c.w.spec.present}")


def check_lifespans(c: Checker) -> None:
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
                c.add(
                    K.LIFESPAN,
                    f"{c.describe(rows[i])}: {role} {c.ids[ends[i]]} at {day_text(when[i])}{age}",
                    c._ends(rows[i]),
                    (rows[i],),
                )
            death = c.death[ends]
            last = np.where(f.end[rows] != NA_DATE, f.end[rows], np.where(ongoing_mask(r, start), c.present, when))
            ongoing = (start != NA_DATE) & (f.end[rows] == NA_DATE) & (r.temporal and not r.instant)
            dead = (death != NA_DATE) & known & ((when > death) | (last > death) | ongoing)
            for i in c.cap(K.LIFESPAN, np.flatnonzero(dead)).tolist():
                c.add(
                    K.LIFESPAN,
                    f"{c.describe(rows[i])}: {role} {c.ids[ends[i]]} died {day_text(death[i])}",
                    c._ends(rows[i]),
                    (rows[i],),
                )
