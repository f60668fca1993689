"""Naming checks: duplicate names, namesake records, gazetteer and famous names, unique values."""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np

from fictionworld.check.base import (
    _Checker,
)
from fictionworld.gazetteer import famous_people, normalize_many, real_place_names
from fictionworld.records import ViolationKind as K
from fictionworld.schema import (
    ATTRIBUTES,
    INVENTED_NAME_TYPES,
    PLACE_TYPES,
)
from fictionworld.tables import TYPE_CODE, TYPE_NAMES


def check_names(c: _Checker) -> None:
    e = c.w.entities
    names = e.name.tolist()
    group = e.namesake_group
    counts = Counter(zip(c.tc.tolist(), names))
    dup_keys = {k for k, v in counts.items() if v > 1}
    by_key: dict[tuple[int, str], list[int]] = defaultdict(list)
    if dup_keys:
        for i, key in enumerate(zip(c.tc.tolist(), names)):
            if key in dup_keys:
                by_key[key].append(i)
    for (t, n), rows in by_key.items():
        if len(rows) > 1:
            gs = {int(group[r]) for r in rows}
            if len(gs) != 1 or -1 in gs:
                c.add(
                    K.DUPLICATE_NAME,
                    f"{len(rows)} {TYPE_NAMES[t]} entities are named {n!r} without being recorded as namesakes",
                    rows[:8],
                )
    # namesake records: a group is a set of >= 2 same-type entities sharing one name,
    # identified by the local index of one of its members
    members: dict[tuple[int, int], list[int]] = defaultdict(list)
    for i in np.flatnonzero(group >= 0).tolist():
        members[(int(c.tc[i]), int(group[i]))].append(i)
    local = e.local
    for (t, g), rows in members.items():
        names_in = {names[r] for r in rows}
        if len(rows) < 2 or len(names_in) != 1 or not any(int(local[r]) == g for r in rows):
            c.add(
                K.NAMESAKE_RECORD,
                f"namesake group {g} of {TYPE_NAMES[t]} is not a set of >= 2 "
                f"entities sharing one name (members: {len(rows)}, names: {sorted(names_in)[:3]})",
                rows[:8],
            )
    # gazetteer: invented names (and word aliases) of places and organisations
    gaz = real_place_names()
    invented = np.flatnonzero(np.isin(c.tc, [TYPE_CODE[t] for t in INVENTED_NAME_TYPES])).tolist()
    place = np.isin(c.tc, [TYPE_CODE[t] for t in PLACE_TYPES])
    owner: list[int] = []
    keys: list[str] = []
    for i in invented:
        for k in [names[i], *(a for a in e.aliases[i] if any(ch.islower() for ch in a))]:
            owner.append(i), keys.append(k)
        if place[i]:
            owner.append(i), keys.append(names[i].split(" ")[0])
    reported: set[int] = set()
    for i, k, norm in zip(owner, keys, normalize_many(keys)):
        if norm in gaz and i not in reported:
            reported.add(i)
            c.add(K.GAZETTEER_COLLISION, f"{c.ids[i]} {names[i]!r}: {k!r} is a real place name", (i,))
    famous = famous_people()
    people = c.rows_of("person").tolist()
    for i, norm in zip(people, normalize_many([names[i] for i in people])):
        if norm in famous:
            c.add(K.FAMOUS_NAME, f"{c.ids[i]} is named {names[i]!r}, a famous real person", (i,))


def check_unique_values(c: _Checker) -> None:
    f = c.w.facts
    for a in sorted(n for n, a in ATTRIBUTES.items() if a.unique):
        rows = c.attr(a)
        seen: dict[str, int] = {}
        for r in rows.tolist():
            v = f.v_text[r]
            if v is None:
                continue
            if v in seen:
                c.add(
                    K.UNIQUE_VALUE,
                    f"{c.ids[c.s[r]]} and {c.ids[c.s[seen[v]]]} share {a} {v!r}",
                    (c.s[r], c.s[seen[v]]),
                    (seen[v], r),
                )
            else:
                seen[v] = r
