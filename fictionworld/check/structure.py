"""Structural checks: references, predicates, types, cardinality, duplicates."""

from __future__ import annotations

import numpy as np

from fictionworld.check.base import (
    URL_PATTERN,
    Checker,
    count_per_subject,
)
from fictionworld.dates import NA_DATE
from fictionworld.records import ViolationKind as K
from fictionworld.schema import (
    ENTITY_TYPES,
    PREDICATE_CODE,
    RELATIONS,
    TYPES_WITH,
    DType,
)
from fictionworld.seeding import mix64
from fictionworld.tables import NA_INT, TYPE_CODE, TYPE_NAMES


def check_references(c: Checker) -> None:
    bad = np.flatnonzero(~c.ok_ref)
    f = c.w.facts
    for r in c.cap(K.DANGLING_REFERENCE, bad).tolist():
        c.add(
            K.DANGLING_REFERENCE,
            f"fact {int(f.id[r])} refers to a missing entity "
            f"(subject row {int(f.subject[r])}, object row {int(f.object[r])})",
            (),
            (r,),
        )


def check_predicates(c: Checker) -> None:
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


def check_domain_range(c: Checker) -> None:
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
        c.add_facts(
            K.DOMAIN_RANGE,
            bad,
            f"{name} does not link these entity types (allowed: {', '.join(f'{s}->{o}' for s, o in spec.pairs)})",
        )
    for a, types in TYPES_WITH.items():
        rows = np.flatnonzero(c.valid & (c.p == PREDICATE_CODE[a]))
        has = np.array([t in types for t in TYPE_NAMES])
        bad = rows[~has[c.tc[c.s[rows]]]]
        c.add_facts(K.DOMAIN_RANGE, bad, f"this entity type has no attribute {a!r}")


def check_attribute_types(c: Checker) -> None:
    f = c.w.facts
    is_int, is_float = f.v_int != NA_INT, ~np.isnan(f.v_float)
    is_date, is_text = f.v_date != NA_DATE, f.v_text != None  # noqa: E711
    n_values = is_int.astype(np.int8) + is_float + is_date + is_text
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
                bad = [
                    r for r in good.tolist() if not isinstance(f.v_text[r], str) or not URL_PATTERN.match(f.v_text[r])
                ]
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


def check_missing_and_cardinality(c: Checker) -> None:
    spec = c.w.spec
    for t, schema in ENTITY_TYPES.items():
        if t not in spec.types:
            continue
        ents = c.rows_of(t)
        for a in schema.attributes:
            if not c.owns(a.name):
                continue
            rows = c.attr(a.name, t)
            cnt = count_per_subject(c, rows)
            if a.required:
                for e in c.cap(K.MISSING_VALUE, ents[cnt[ents] == 0]).tolist():
                    c.add(K.MISSING_VALUE, f"{c.ids[e]} has no {a.name}", (e,))
            for e in c.cap(K.CARDINALITY, ents[cnt[ents] > 1]).tolist():
                c.add(K.CARDINALITY, f"{c.ids[e]} has {cnt[e]} values of {a.name}", (e,), rows[c.s[rows] == e])
    enabled = set(spec.relations())
    for name, r in RELATIONS.items():
        if name not in enabled or not (r.functional or r.required) or not c.owns(name):
            continue
        rows = c.rel(name)
        cnt = count_per_subject(c, rows)
        for st in r.domain:
            if st not in spec.types:
                continue
            ents = c.rows_of(st)
            if r.required and any(o in spec.types for s, o in r.pairs if s == st):
                for e in c.cap(K.MISSING_VALUE, ents[cnt[ents] == 0]).tolist():
                    c.add(K.MISSING_VALUE, f"{c.ids[e]} has no {name}", (e,))
            if r.functional:
                for e in c.cap(K.CARDINALITY, ents[cnt[ents] > 1]).tolist():
                    c.add(
                        K.CARDINALITY,
                        f"{c.ids[e]} has {cnt[e]} {name} facts; at most one allowed",
                        (e,),
                        rows[c.s[rows] == e],
                    )


def check_duplicate_facts(c: Checker) -> None:
    f = c.w.facts
    if c.whole:  # (a streamed check reads the fact ids a row group at a time instead)
        report_repeated_ids(c, repeated_ids(lambda: iter([f.id])))
    # equal facts share a predicate: one predicate's rows at a time, one 64-bit mix per row;
    # equal rows have equal mixes, so only equal mixes need comparing
    found: list[tuple[int, int]] = []
    for rows in c._by_pred:
        if len(rows) < 2:  # (a streamed unit holds one predicate group: the rest are empty)
            continue
        h = np.zeros(len(rows), np.uint64)
        for k, col in enumerate((c.s, c.p, c.o, f.v_int, f.v_date, f.start, f.end, f.v_float.view(np.int64))):
            h = mix64(h ^ col[rows].astype(np.int64).view(np.uint64), k)
        by_mix = np.argsort(h, kind="stable")
        order, hs = rows[by_mix], h[by_mix]
        for i in np.flatnonzero(hs[1:] == hs[:-1]).tolist():
            a, b = int(order[i]), int(order[i + 1])
            same = all(col[a] == col[b] for col in (c.s, c.p, c.o, f.v_int, f.v_date, f.start, f.end))
            fa, fb = f.v_float[a], f.v_float[b]
            if same and (fa == fb or (np.isnan(fa) and np.isnan(fb))) and f.v_text[a] == f.v_text[b]:
                found.append((h[by_mix[i]], a, b))
    # reported in the order of one sort over every row (by mix, then row), as before
    for _, a, b in sorted(found):
        c.add(K.DUPLICATE_FACT, f"{c.describe(b)} repeats fact {int(f.id[a])}", c._ends(b), (a, b))


def check_self_reference(c: Checker) -> None:
    rows = np.flatnonzero(c.valid & (c.o >= 0) & (c.s == c.o))
    c.add_facts(K.SELF_REFERENCE, rows, "an entity cannot be related to itself")


def report_repeated_ids(c: Checker, repeats: list[tuple[int, int]]) -> None:
    for fid, n in repeats:
        c.add(K.DUPLICATE_FACT, f"fact id {fid} is used {n} times")


def repeated_ids(parts, step: int = 1 << 22) -> list[tuple[int, int]]:
    """``(fact id, uses)`` of every id used more than once, smallest first, among the id
    arrays that ``parts()`` yields (the whole column, or one row group at a time). Fact ids
    come out ascending from every writer: checking that, a slice at a time, spares sorting a
    copy of them all; ids out of order are read again, together, and sorted."""
    last = None
    for ids in parts():
        for lo in range(0, len(ids), step):
            x = ids[lo : lo + step + 1]
            if (last is not None and len(x) and x[0] <= last) or not (np.diff(x) > 0).all():
                uniq, counts = np.unique(np.concatenate(list(parts())), return_counts=True)
                twice = counts > 1
                return list(zip(uniq[twice].tolist(), counts[twice].tolist()))
        if len(ids):
            last = ids[-1]
    return []
