"""Task families: the graph queries behind each kind of wide question.

Each family draws the row set of a task (its conditions, and an order for rankings) from a
:class:`~fictionworld.tasks.wide.WideTaskGenerator`, which then picks the columns and writes the
question. Every family puts first a condition whose candidate set the web lets a reader
discover from the question's words (:func:`discoverable`): a directory page ("Companies
headquartered in X", "Films released in 1994", "Players of Y"), or a walk back from a named
entity through directories and articles ("films directed by someone born in Z": the people
born in Z, then the films each directed). The other conditions are checked on the pages.

=========== ================================================================================
family      question
=========== ================================================================================
list        every X of a directory, optionally narrowed by one filter
and         a directory narrowed by two or three conditions at once
or          the union of two directories of one kind ("either … or")
temporal    a dated membership overlapping a window ("who played for X between 2001 and 2010")
            or a period of a year directory ("films released in the 1990s")
top         the N highest or lowest by a number, ranked where the table is wide enough to hold
            ranks within the guess budget; or a whole group ranked
aggregate   a group with counts as columns ("number of alumni" of each university); in the
            default ontology the types whose counts spread have few columns a base rate misses,
            so these come only with a guess_gain above the default (0.025 at widesearch)
via         rows related to a named entity through a third one ("books by authors born in Z")
=========== ================================================================================
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from fictionworld.dates import NA_DATE, years_of
from fictionworld.schema import ENTITY_TYPES, DType
from fictionworld.tasks.grammar import count_columns
from fictionworld.tasks.guess import GUESS_LIMIT
from fictionworld.tasks.phrasing import HOP_CLAUSES, TEMPORAL_CLAUSES
from fictionworld.tasks.query import Condition, Hop, Order, Query, type_of_path
from fictionworld.web.phrasing import INCOMING, LIST_BY_ATTRIBUTE, LIST_BY_RELATION, LIST_BY_YEAR

if TYPE_CHECKING:
    from fictionworld.tasks.wide import WideTaskGenerator

__all__ = ["FAMILIES", "WIDE_FAMILIES", "Draw", "discoverable", "reversible"]

WIDE_FAMILIES = ("list", "and", "or", "temporal", "top", "aggregate", "via")
FAMILIES = (*WIDE_FAMILIES, "lookup")
_RANKABLE = (DType.INT, DType.FLOAT)


class Draw:
    """A family's row set: conditions (the discoverable one first), optional order, the extra
    columns the family asks for (ranks, counts), and the size of the discovered group."""

    def __init__(self, row_type: str, conds: list[Condition], rows: np.ndarray, size: int, *,
                 order: Order | None = None, extra: tuple = ()):  # fmt: skip
        self.row_type, self.conds, self.rows, self.size = row_type, conds, rows, size
        self.order, self.extra = order, extra


def reversible(t: str, hop: Hop) -> bool:
    """Whether the web lets a reader go back along ``hop`` (from an entity of type ``t``):
    find every entity reaching a known one. A forward hop needs a directory of its subjects
    or the object's article listing them; an inverse hop is on the subject's own article."""
    if hop.inverse:
        return True
    return (hop.predicate, t) in LIST_BY_RELATION or INCOMING.get(hop.predicate, ("",))[0] == type_of_path(t, (hop,))


def discoverable(t: str, c: Condition) -> bool:
    """Whether the rows satisfying ``c`` can be listed from the web without the answer."""
    if c.any_of:
        return all(discoverable(t, x) for x in c.any_of)
    if not c.path:
        if c.attribute is None:
            return False
        if c.equals is not None:
            return (t, c.attribute) in LIST_BY_ATTRIBUTE
        return (t, c.attribute) in LIST_BY_YEAR and c.lo is not None and c.hi is not None
    if c.attribute is not None or c.equals is None:
        return False
    cur = t
    for hop in c.path:
        if not reversible(cur, hop):
            return False
        cur = type_of_path(cur, (hop,))
    return True


def _target(gen: WideTaskGenerator, r) -> int:
    k = gen.knobs
    t = int(round(np.exp(r.uniform(np.log(k.rows_min), np.log(k.rows_max + 1)))))
    return min(max(t, k.rows_min), k.rows_max)


def _anchor(gen: WideTaskGenerator, r, lo: float, hi: float, *, types=None):
    cands = [a for a in gen.anchors if lo <= a[2] <= hi and (types is None or a[0] in types) and gen.named_ok(a[1])]
    if not cands:
        return None
    return cands[int(r.integers(len(cands)))]


def _select(gen: WideTaskGenerator, t: str, conds) -> np.ndarray:
    return gen.g.select(Query(type=t, conditions=tuple(conds), columns=()))


def _in_range(gen: WideTaskGenerator, rows) -> bool:
    return gen.knobs.rows_min <= len(rows) <= gen.knobs.rows_max


def family_list(gen: WideTaskGenerator, r) -> Draw | None:
    k = gen.knobs
    target = _target(gen, r)
    want_lo = max(k.rows_min, target) / k.selectivity
    a = _anchor(gen, r, want_lo * 0.6, min(target / k.selectivity * 1.6, 10 * k.rows_max))
    a = a or _anchor(gen, r, k.rows_min, k.rows_max / k.selectivity)
    if a is None:
        return None
    t, anchor, size = a
    conds = [anchor]
    rows = _select(gen, t, conds)
    if k.selectivity < 1.0:
        f = gen.filter(r, t, rows, max(k.rows_min, int(round(len(rows) * k.selectivity))))
        if f is None:
            return None
        conds.append(f)
        rows = _select(gen, t, conds)
    return Draw(t, conds, rows, size) if _in_range(gen, rows) else None


def family_and(gen: WideTaskGenerator, r) -> Draw | None:
    k = gen.knobs
    target = _target(gen, r)
    n_filters = 1 + int(r.random() < 0.4)
    a = _anchor(gen, r, target * 1.5, target * (2.5 if n_filters == 1 else 5.0) + 5)
    if a is None:
        return None
    t, anchor, size = a
    conds = [anchor]
    rows = _select(gen, t, conds)
    for j in range(n_filters):
        share = (target / len(rows)) ** (1 / (n_filters - j))
        f = gen.filter(r, t, rows, max(k.rows_min, int(round(len(rows) * share))), avoid=conds)
        if f is None:
            return None
        conds.append(f)
        rows = _select(gen, t, conds)
    return Draw(t, conds, rows, size) if _in_range(gen, rows) and len(rows) < size else None


def family_or(gen: WideTaskGenerator, r) -> Draw | None:
    return _either(gen, r, _target(gen, r))


def _either(gen: WideTaskGenerator, r, target: int, types=None) -> Draw | None:
    """The union of two directories of one kind, about ``target`` rows (of one of ``types``)."""
    a = _anchor(gen, r, max(1, target * 0.3), target * 0.8, types=types)
    if a is None:
        return None
    t, first, size = a
    kind = gen.anchor_kind(a)
    others = [b for b in gen.anchors if b[0] == t and gen.anchor_kind(b) == kind and b[1] != first
              and gen.named_ok(b[1]) and target * 0.2 <= b[2] <= target * 0.9]  # fmt: skip
    if not others:
        return None
    second = others[int(r.integers(len(others)))]
    either = Condition(any_of=(first, second[1]))
    rows = _select(gen, t, [either])
    if len(rows) <= max(size, second[2]):  # the union adds nothing to one of them
        return None
    return Draw(t, [either], rows, size + second[2]) if _in_range(gen, rows) else None


def family_temporal(gen: WideTaskGenerator, r) -> Draw | None:
    target = _target(gen, r)
    windows = [a for a in gen.temporal_groups if a[2] > gen.knobs.rows_min]
    if windows and r.random() < 0.6:
        t, cond, size = windows[int(r.integers(len(windows)))]
        if not gen.named_ok(cond):
            return None
        hop = cond.path[0]
        a, b, ids = gen.g.edges(hop)
        m = b == gen.world.row(cond.equals)
        f = gen.world.facts
        rows_f = np.searchsorted(f.id, ids[m])
        if len(rows_f) == 0 or (f.start[rows_f] == NA_DATE).any():  # an undated membership: no window
            return None
        starts = years_of(f.start[rows_f].astype(np.int64))
        lo = int(starts[int(r.integers(len(starts)))]) - int(r.integers(0, 6))
        width = int(r.choice([4, 9, 14]))
        c = cond.model_copy(update={"during": (lo, lo + width)})
        rows = _select(gen, t, [c])
        ok = _in_range(gen, rows) and len(rows) < size
        return Draw(t, [c], rows, size) if ok else None
    periods = [a for a in gen.anchors if a[1].lo is not None and a[1].hi - a[1].lo in (9, 19)
               and target * 0.6 <= a[2] <= target * 1.6 + 3]  # fmt: skip
    if not periods:
        return None
    t, cond, size = periods[int(r.integers(len(periods)))]
    rows = _select(gen, t, [cond])
    return Draw(t, [cond], rows, size) if _in_range(gen, rows) else None


def family_top(gen: WideTaskGenerator, r) -> Draw | None:
    # "1" answers one rank of any table: within the knobs' guess_gain, so a rank column needs at
    # least this many rows. Smaller tables ask for the N highest without ranks (a whole group
    # ranked needs them).
    fewest = math.ceil(1 / (gen.knobs.guess_gain * _widest(gen)) - 1e-9)
    target = _target(gen, r)
    with_ranks = fewest <= gen.knobs.rows_max and r.random() < 0.5 + 0.5 * (target >= fewest)
    target = max(target, fewest) if with_ranks else target
    full = with_ranks and r.random() < 0.3
    a = _anchor(gen, r, target, target * 1.2 + 2) if full else _anchor(gen, r, target * 1.5 + 1, target * 6 + 10)
    if a is None:
        return None
    t, anchor, size = a
    rows = _select(gen, t, [anchor])
    attrs = [x.name for x in ENTITY_TYPES[t].attributes if x.dtype in _RANKABLE]
    if not attrs:
        return None
    attr = attrs[int(r.integers(len(attrs)))]
    descending = bool(r.random() < 0.7)
    order = Order(attribute=attr, descending=descending, limit=None if full else target)
    keys = gen.g.order_keys(rows, order)
    if np.isnan(keys).any():
        return None
    ranked = np.sort(-keys if descending else keys)
    top = ranked if full else ranked[: target + 1]
    if len(np.unique(top)) < len(top):  # a tie inside or at the edge makes ranks ambiguous
        return None
    q_rows = gen.g.select(Query(type=t, conditions=(anchor,), columns=(), order=order))
    if not _in_range(gen, q_rows):
        return None
    return Draw(t, [anchor], q_rows, size, order=order, extra=("rank",) if with_ranks else ())


def family_aggregate(gen: WideTaskGenerator, r) -> Draw | None:
    # Counts that are spread (zero rare) belong to types with few, big groups (cities, awards,
    # publishers), so the group is any a reader discovers: one directory, two of one kind, or a
    # walk through a named entity ("cities located in a region of T").
    types = {t for t in ENTITY_TYPES if _counts(gen, t)}
    if not types:
        return None
    target = _target(gen, r)
    ways = (_directory, _either, _walk)
    first = int(r.integers(len(ways)))
    # No count is common in the group: at most GUESS_LIMIT of it, and at most what the knobs'
    # widest table holds within guess_gain (so none in tiny tables, where one count is a third).
    most = min(GUESS_LIMIT, gen.knobs.guess_gain * _widest(gen))
    for j in range(len(ways)):
        d = ways[(first + j) % len(ways)](gen, r, target, types)
        if d is None or not gen.count_names_ok(d.rows):
            continue
        counts = [c for c in _counts(gen, d.row_type) if gen.share(d.row_type, c, d.rows) <= most]
        if counts:
            r.shuffle(counts)
            return Draw(d.row_type, d.conds, d.rows, d.size, extra=tuple(counts[: 1 + int(r.random() < 0.4)]))
    return None


def _directory(gen: WideTaskGenerator, r, target: int, types=None) -> Draw | None:
    """One directory of about ``target`` rows (of one of ``types``)."""
    a = _anchor(gen, r, target * 0.7, target * 1.4 + 2, types=types)
    if a is None:
        return None
    t, anchor, size = a
    rows = _select(gen, t, [anchor])
    return Draw(t, [anchor], rows, size) if _in_range(gen, rows) else None


def _widest(gen: WideTaskGenerator) -> int:
    return gen.knobs.columns_max or gen.knobs.columns


def _counts(gen: WideTaskGenerator, t: str) -> list:
    """The count columns of type ``t`` whose base rate over the type is low (no count, zero
    included, is more than GUESS_LIMIT of them); a group's own counts are checked when drawn."""
    return [c for c in count_columns(t) if gen.guessability(t, c) <= GUESS_LIMIT]


def family_via(gen: WideTaskGenerator, r) -> Draw | None:
    return _walk(gen, r)


def _walk(gen: WideTaskGenerator, r, target: int | None = None, types=None) -> Draw | None:
    """Rows two hops from a named entity, in the knobs' row range (of one of ``types``)."""
    paths = [p for p in gen.via_paths if types is None or p[0] in types]
    if not paths:
        return None
    t, path = paths[int(r.integers(len(paths)))]
    end = type_of_path(t, path)
    ends = gen.world.entities.rows_of_type(end)
    for _ in range(12):
        e = int(ends[int(r.integers(len(ends)))])
        c = Condition(path=path, equals=gen.world.entities.ids[e])
        if not gen.named_ok(c):
            continue
        rows = _select(gen, t, [c])
        if _in_range(gen, rows):
            return Draw(t, [c], rows, len(rows))
    return None


BUILDERS = {
    "list": family_list,
    "and": family_and,
    "or": family_or,
    "temporal": family_temporal,
    "top": family_top,
    "aggregate": family_aggregate,
    "via": family_via,
}


def via_paths(types) -> list[tuple[str, tuple[Hop, ...]]]:
    """Two-hop paths from a row type to a named entity that a reader can walk back."""
    out = []
    hops = [Hop(predicate=p, inverse=inv) for (p, inv) in HOP_CLAUSES if p not in TEMPORAL_CLAUSES]
    for t in types:
        for h1 in hops:
            try:
                mid = type_of_path(t, (h1,))
            except ValueError:
                continue
            for h2 in hops:
                if h2.predicate == h1.predicate and h2.predicate != "located_in":
                    continue
                try:
                    type_of_path(mid, (h2,))
                except ValueError:
                    continue
                if reversible(t, h1) and reversible(mid, h2):
                    out.append((t, (h1, h2)))
    return out
