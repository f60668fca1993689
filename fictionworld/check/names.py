"""Naming checks: duplicate names, namesake records, gazetteer and famous names, unique values."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fictionworld.check.base import (
    Checker,
)
from fictionworld.gazetteer import famous_people, normalize_many, real_place_names
from fictionworld.records import ViolationKind as K
from fictionworld.schema import (
    ATTRIBUTES,
    INVENTED_NAME_TYPES,
    PLACE_TYPES,
)
from fictionworld.tables import TYPE_CODE, TYPE_NAMES

_CHUNK = 1 << 20  # entities per step of the name passes that build Python strings


def _string_codes(values) -> np.ndarray:
    """Equal strings -> equal int64 codes (null -> -1), by Arrow's hash table."""
    arr = pa.array(values, pa.string()) if not isinstance(values, pa.Array | pa.ChunkedArray) else values
    enc = pc.dictionary_encode(arr)
    if isinstance(enc, pa.ChunkedArray):
        enc = enc.combine_chunks() if enc.num_chunks != 1 else enc.chunk(0)
    return enc.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)


def _groups_of(key: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``rows`` sorted by ``key`` (stably), and where each run of one key starts and ends."""
    order = rows[np.argsort(key[rows], kind="stable")]
    k = key[order]
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    return order, starts, np.r_[starts[1:], len(order)]


def _first_seen(order: np.ndarray, starts: np.ndarray, bad: np.ndarray) -> list[int]:
    """The numbers of the ``bad`` runs, in the order their first rows come in the table."""
    runs = np.flatnonzero(bad)
    return runs[np.argsort(order[starts[runs]], kind="stable")].tolist()


def check_names(c: Checker) -> None:
    if not c.entity_rules:  # (a streamed check runs these in a unit of their own)
        return
    e = c.w.entities
    names = e.name
    group = e.namesake_group.astype(np.int64)
    name_code = _string_codes(names)
    # duplicate names: a (type, name) shared by entities that are not one namesake group
    key = name_code * len(TYPE_NAMES) + c.tc
    _, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    shared = np.flatnonzero(counts[inverse] > 1)
    del inverse
    if len(shared):
        order, starts, ends = _groups_of(key, shared)
        lo, hi = np.minimum.reduceat(group[order], starts), np.maximum.reduceat(group[order], starts)
        for j in _first_seen(order, starts, (lo != hi) | (lo == -1)):
            rows = order[starts[j] : ends[j]]
            t, n = int(c.tc[rows[0]]), names[rows[0]]
            c.add(
                K.DUPLICATE_NAME,
                f"{len(rows)} {TYPE_NAMES[t]} entities are named {n!r} without being recorded as namesakes",
                rows[:8],
            )
    # namesake records: a group is a set of >= 2 same-type entities sharing one name,
    # identified by the local index of one of its members
    local = e.local.astype(np.int64)
    grouped = np.flatnonzero(group >= 0)
    if len(grouped):
        gkey = c.tc * (int(group.max()) + 1) + group
        order, starts, ends = _groups_of(gkey, grouped)
        one_name = np.minimum.reduceat(name_code[order], starts) == np.maximum.reduceat(name_code[order], starts)
        named = np.logical_or.reduceat(local[order] == group[order], starts)
        for j in _first_seen(order, starts, (ends - starts < 2) | ~one_name | ~named):
            rows = order[starts[j] : ends[j]]
            t, g = int(c.tc[rows[0]]), int(group[rows[0]])
            names_in = sorted({names[r] for r in rows.tolist()})
            c.add(
                K.NAMESAKE_RECORD,
                f"namesake group {g} of {TYPE_NAMES[t]} is not a set of >= 2 "
                f"entities sharing one name (members: {len(rows)}, names: {names_in[:3]})",
                rows[:8],
            )
    # gazetteer: invented names (and word aliases) of places and organisations
    gaz = real_place_names()
    invented = np.flatnonzero(np.isin(c.tc, [TYPE_CODE[t] for t in INVENTED_NAME_TYPES]))
    place = np.isin(c.tc, [TYPE_CODE[t] for t in PLACE_TYPES])
    aliases = e.aliases
    for lo in range(0, len(invented), _CHUNK):
        owner: list[int] = []
        keys: list[str] = []
        for i in invented[lo : lo + _CHUNK].tolist():
            for k in [names[i], *(a for a in aliases[i] if any(ch.islower() for ch in a))]:
                owner.append(i), keys.append(k)
            if place[i]:
                owner.append(i), keys.append(names[i].split(" ")[0])
        reported: set[int] = set()  # an entity's keys all fall in one chunk
        for i, k, norm in zip(owner, keys, normalize_many(keys)):
            if norm in gaz and i not in reported:
                reported.add(i)
                c.add(K.GAZETTEER_COLLISION, f"{c.ids[i]} {names[i]!r}: {k!r} is a real place name", (i,))
    famous = famous_people()
    people = c.rows_of("person")
    for lo in range(0, len(people), _CHUNK):
        part = people[lo : lo + _CHUNK].tolist()
        for i, norm in zip(part, normalize_many([names[i] for i in part])):
            if norm in famous:
                c.add(K.FAMOUS_NAME, f"{c.ids[i]} is named {names[i]!r}, a famous real person", (i,))


def check_unique_values(c: Checker) -> None:
    f = c.w.facts
    for a in sorted(n for n, a in ATTRIBUTES.items() if a.unique):
        rows = c.attr(a)
        code = _string_codes(f.v_text[rows])
        rows, code = rows[code >= 0], code[code >= 0]
        if not len(rows):
            continue
        _, first, inverse = np.unique(code, return_index=True, return_inverse=True)
        seen = first[inverse]  # position of each value's first row
        for i in np.flatnonzero(seen != np.arange(len(rows))).tolist():
            r, q = int(rows[i]), int(rows[seen[i]])
            v = f.v_text[r]
            c.add(
                K.UNIQUE_VALUE,
                f"{c.ids[c.s[r]]} and {c.ids[c.s[q]]} share {a} {v!r}",
                (c.s[r], c.s[q]),
                (q, r),
            )
