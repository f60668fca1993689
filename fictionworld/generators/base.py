"""Generation context (one run, or one block task of it), the generator registry, and the
sampling helpers the generators share."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from fictionworld.dates import NA_DATE, YEAR, to_days
from fictionworld.generators.flow import Flow
from fictionworld.generators.naming import Taken, unique_names
from fictionworld.schema import PREDICATE_CODE, DType
from fictionworld.seeding import child_seed
from fictionworld.spec import WorldSpec
from fictionworld.tables import NA_INT, FactTable, object_array

__all__ = [
    "Block",
    "GenContext",
    "TypeData",
    "WorldGenerator",
    "register",
    "people_task",
    "make",
    "registered",
    "child_seed",
]


@dataclass(frozen=True)
class Block:
    """The entities of ``type`` with type-local indices ``start .. start + n - 1``: block number
    ``index`` of ``spec.generation_block`` entities, the unit one generation task makes (see
    fictionworld/generators/blocks.py). Its draws come from streams of its own (:meth:`GenContext.rng`)."""

    type: str
    index: int
    start: int
    n: int


def block_spans(n: int, size: int) -> list[tuple[int, int]]:
    """(start, length) of each block of a type with ``n`` entities; at least one block."""
    return [(s, min(size, n - s)) for s in range(0, n, size)] or [(0, 0)]


@dataclass
class TypeData:
    """Everything generated for one entity type, indexed by the type-local index (in a block
    task, only the block's entities: ``start`` is the type-local index of the first)."""

    name: str
    n: int
    offset: int  # global row of local index 0
    start: int = 0  # type-local index of this data's first entity
    source: str = ""  # generator id that made the type
    names: np.ndarray | None = None
    aliases: np.ndarray | None = None
    culture: np.ndarray | None = None
    namesake_group: np.ndarray | None = None
    attrs: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def rows(self) -> np.ndarray:
        first = self.offset + self.start
        return np.arange(first, first + self.n, dtype=np.int64)


class GenContext:
    """Shared state of one generation run, or of one block task of it: seeded streams, type
    data, relation facts, and the typed hand-offs between generators (``flow``, see
    fictionworld/generators/flow.py).

    With ``block``, a generator makes only that block of its type: ``span(t)`` says which
    entities of ``t`` it makes, type-local indices of the block's type are block-relative
    (``relate`` shifts them), every other type is whole, and ``rng`` draws from the block's own
    streams. Block 0's streams are the whole run's, so a type that fits one block comes out
    exactly as a run without blocks makes it."""

    def __init__(self, spec: WorldSpec, seed: int, block: Block | None = None, flow: Flow | None = None):
        self.spec = spec
        self.seed = int(seed)
        self.present = to_days(spec.present)
        self.counts = spec.counts()
        self.enabled_relations = set(spec.relations())
        self.block = block
        self.types: dict[str, TypeData] = {}
        offset = 0
        for t, n in self.counts.items():
            mine = block is not None and block.type == t
            self.types[t] = TypeData(t, block.n, offset, block.start) if mine else TypeData(t, n, offset)
            offset += n
        self.n_entities = offset
        self.flow = flow if flow is not None else Flow()
        self._facts: list[FactTable] = []
        self._records: list[tuple[int, str, str | None, str]] = []  # (call number, relation, after, source)
        self._calls = 0
        self.source = ""
        self.reopen: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}  # see unique()

    # -- blocks ------------------------------------------------------------------------------
    def span(self, t: str) -> tuple[int, int]:
        """(first type-local index, count) of the entities of ``t`` this context makes."""
        d = self.types[t]
        return d.start, d.n

    # -- randomness ------------------------------------------------------------------------
    def rng(self, key: str) -> np.random.Generator:
        if self.block is not None and self.block.index:
            key = f"{key}#{self.block.index}"
        return np.random.Generator(np.random.PCG64(child_seed(self.seed, key)))

    def has(self, *types: str) -> bool:
        return all(t in self.types for t in types)

    def __getitem__(self, t: str) -> TypeData:
        return self.types[t]

    # -- output ----------------------------------------------------------------------------
    def set_names(self, t: str, names, aliases=None, culture=None, namesake_group=None) -> None:
        d = self.types[t]
        d.source = self.source
        d.names = object_array(names)
        d.aliases = object_array(aliases) if aliases is not None else object_array([()] * d.n)
        d.culture = object_array(culture) if culture is not None else object_array([""] * d.n)
        d.namesake_group = (
            np.asarray(namesake_group, np.int32) if namesake_group is not None else np.full(d.n, -1, np.int32)
        )

    def set_attr(self, t: str, name: str, values: np.ndarray) -> None:
        self.types[t].attrs[name] = values

    def relate(
        self, rel: str, subj_type: str, subj_local, obj_type: str, obj_local, start=None, end=None, after=None
    ) -> None:
        """Add relation facts (local indices, block-relative for the block's type; -1 entries
        and disabled relations are dropped). ``after``: in a task over another type's blocks
        (:attr:`WorldGenerator.people`), the facts go right after the main task's ``after``
        facts (else after all of the generator's main facts)."""
        call = self._calls
        self._calls += 1
        if rel not in self.enabled_relations or not self.has(subj_type, obj_type):
            return
        s = np.asarray(subj_local, np.int64)
        o = np.asarray(obj_local, np.int64)
        keep = (s >= 0) & (o >= 0)
        if self.block is not None:
            s = s + self.block.start if subj_type == self.block.type else s
            o = o + self.block.start if obj_type == self.block.type else o
        start = None if start is None else np.broadcast_to(np.asarray(start, np.int32), s.shape)[keep]
        end = None if end is None else np.broadcast_to(np.asarray(end, np.int32), s.shape)[keep]
        self._facts.append(
            FactTable.build(
                s[keep] + self.types[subj_type].offset,
                PREDICATE_CODE[rel],
                obj=o[keep] + self.types[obj_type].offset,
                start=start,
                end=end,
                source=0,  # the run's source code, set when the blocks are joined (blocks.py)
            )
        )
        self._records.append((call, rel, after, self.source))

    def unique(self, t: str, candidates, n: int, reject=None) -> list[str]:
        """:func:`unique_names` for the names of type ``t``; in a block task, then again for
        the slots the run found taken in other blocks (``reopen[t]``: (block-relative slots,
        sorted name hashes of every block), one pair per round of that search)."""
        out = unique_names(candidates, n, reject=reject)
        for slots, banned in self.reopen.get(t, ()):
            keep = np.ones(n, bool)
            keep[slots] = False
            seen = Taken({x for x, k in zip(out, keep.tolist()) if k}, banned)

            def again(s: np.ndarray, rnd: int, slots: np.ndarray = slots) -> list[str]:
                return candidates(slots[s], rnd + 1)

            new = unique_names(again, len(slots), taken=seen, reject=reject)
            for slot, name in zip(slots.tolist(), new):
                out[slot] = name
        return out


def attribute_facts(d: TypeData, dtype: DType, name: str, vals: np.ndarray, source: int) -> FactTable:
    code = PREDICATE_CODE[name]
    if dtype == DType.DATE:
        keep = vals != NA_DATE
        return FactTable.build(d.rows[keep], code, v_date=vals[keep], source=source)
    if dtype == DType.INT:
        keep = vals != NA_INT
        return FactTable.build(d.rows[keep], code, v_int=vals[keep], source=source)
    if dtype == DType.FLOAT:
        keep = ~np.isnan(vals)
        return FactTable.build(d.rows[keep], code, v_float=vals[keep], source=source)
    keep = np.array([v is not None for v in vals.tolist()], dtype=bool)
    return FactTable.build(d.rows[keep], code, v_text=vals[keep], source=source)


# -- registry ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class WorldGenerator:
    """A registered generator: makes ``produces`` types (and their relations), in causal order
    after ``after`` types when those are present.

    A generator of one type runs in blocks of it (one task per block, see fictionworld/generators/blocks.py);
    one of several types (places) runs whole. ``people``, if set, runs after every block, once
    per block of people, for the relations each person has to the generator's type (staff,
    students, players)."""

    id: str  # "people-v0": bump the version whenever the output distribution changes
    produces: tuple[str, ...]
    after: tuple[str, ...]
    run: Callable[[GenContext], None]
    people: Callable[[GenContext], None] | None = None

    @property
    def blocked(self) -> bool:
        return len(self.produces) == 1


_REGISTRY: dict[str, WorldGenerator] = {}


def register(id: str, produces: Iterable[str], after: Iterable[str] = ()):
    def deco(fn: Callable[[GenContext], None]) -> Callable[[GenContext], None]:
        if id in _REGISTRY:
            raise ValueError(f"generator {id!r} registered twice")
        _REGISTRY[id] = WorldGenerator(id, tuple(produces), tuple(after), fn)
        return fn

    return deco


def people_task(id: str):
    """Register ``fn`` as the per-block-of-people task of generator ``id`` (registered already)."""

    def deco(fn: Callable[[GenContext], None]) -> Callable[[GenContext], None]:
        from dataclasses import replace

        _REGISTRY[id] = replace(make(id), people=fn)
        return fn

    return deco


def make(id: str) -> WorldGenerator:
    try:
        return _REGISTRY[id]
    except KeyError:
        raise KeyError(f"no generator {id!r}; registered: {sorted(_REGISTRY)}") from None


def registered() -> tuple[WorldGenerator, ...]:
    return tuple(_REGISTRY.values())


# -- sampling helpers shared by the generators ---------------------------------------------
def years(x) -> np.ndarray:
    return np.round(np.asarray(x, np.float64) * YEAR).astype(np.int64)


def sample_dates(rng: np.random.Generator, n: int, lo: int, hi: int, recent_bias: float = 1.0) -> np.ndarray:
    """Day numbers in [lo, hi]; ``recent_bias`` > 1 favours later dates."""
    u = rng.random(n) ** (1.0 / recent_bias)
    return (lo + np.floor(u * (hi - lo + 1))).astype(np.int32).clip(lo, hi)


class AlivePicker:
    """Pick people who exist and are of age at given dates: sorted births + searchsorted."""

    def __init__(self, birth: np.ndarray, death: np.ndarray, pool: np.ndarray, present: int):
        pool = np.asarray(pool, np.int64)
        order = np.argsort(birth[pool], kind="stable")
        self.pool = pool[order]
        self.birth = birth[self.pool].astype(np.int64)
        self.death = np.where(death[self.pool] == NA_DATE, present + 1, death[self.pool]).astype(np.int64)

    def pick(
        self,
        rng: np.random.Generator,
        when: np.ndarray,
        min_age: float,
        max_age: float,
        until: np.ndarray | None = None,
        tries: int = 6,
    ) -> np.ndarray:
        """For each date in ``when``: a person aged [min_age, max_age] then and alive until
        ``until`` (default ``when``); -1 where none was found."""
        when = np.asarray(when, np.int64)
        until = when if until is None else np.asarray(until, np.int64)
        out = np.full(len(when), -1, np.int64)
        if len(self.pool) == 0:
            return out
        lo = np.searchsorted(self.birth, when - years(max_age), "left")
        hi = np.searchsorted(self.birth, when - years(min_age), "right")
        todo = np.flatnonzero(hi > lo)
        for _ in range(tries):
            if len(todo) == 0:
                break
            k = lo[todo] + np.floor(rng.random(len(todo)) * (hi[todo] - lo[todo])).astype(np.int64)
            ok = self.death[k] > until[todo]
            out[todo[ok]] = self.pool[k[ok]]
            todo = todo[~ok]
        return out


def pick_founded_before(
    rng: np.random.Generator,
    founded: np.ndarray,
    when: np.ndarray,
    candidates: np.ndarray | None = None,
    *,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """For each date, an entity (local index) with ``founded <= when``, chosen uniformly or in
    proportion to ``weights`` (one per entity of ``founded``); -1 if none."""
    if candidates is None:
        cand, f = _by_founding(founded)
    else:
        cand = np.asarray(candidates, np.int64)
        cand = cand[np.argsort(founded[cand], kind="stable")]
        f = founded[cand]
    hi = np.searchsorted(f, np.asarray(when), "right")
    if weights is None or not len(cand):
        k = np.floor(rng.random(len(hi)) * hi).astype(np.int64)
    else:  # the first hi candidates in founding order, by weight: a draw below their total
        total = np.cumsum(np.asarray(weights, np.float64)[cand])
        below = rng.random(len(hi)) * np.where(hi > 0, total[np.maximum(hi - 1, 0)], 0.0)
        k = np.minimum(np.searchsorted(total, below, "right"), np.maximum(hi - 1, 0))
    return np.where(hi > 0, cand[np.minimum(k, max(len(cand) - 1, 0))] if len(cand) else -1, -1)


_SORTED: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}  # id -> (array, order, sorted)


def _by_founding(founded: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indices of ``founded`` in date order (stable) and the sorted dates, kept for the last few
    arrays: a block task picks from the same whole type's dates again and again."""
    hit = _SORTED.get(id(founded))
    if hit is None or hit[0] is not founded:
        order = np.argsort(founded, kind="stable")
        hit = (founded, order, founded[order])
        if len(_SORTED) >= 8:
            _SORTED.pop(next(iter(_SORTED)))
        _SORTED[id(founded)] = hit
    return hit[1], hit[2]


def weighted_choice(rng: np.random.Generator, weights: np.ndarray, n: int) -> np.ndarray:
    p = np.asarray(weights, np.float64)
    cdf = np.cumsum(p / p.sum())
    return np.minimum(np.searchsorted(cdf, rng.random(n), "right"), len(p) - 1)


def namesake_pairs(ctx: GenContext, t: str, eligible: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Deliberate namesakes asked for by ``namesake_rate``: (copies, originals), local indices
    (block-relative in a block task: namesakes are drawn within a block), all distinct; each
    copy will carry its original's name, and both record the group."""
    first, n = ctx.span(t)
    rate = ctx.spec.types[t].namesake_rate  # cumulative rounding: the blocks' pairs add up to the type's
    k = int(round(rate * (first + n))) - int(round(rate * first))
    if not k:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    pool = np.arange(n) if eligible is None else np.asarray(eligible, np.int64)
    k = min(k, len(pool) // 2)
    pair = ctx.rng(f"{t}/namesakes").choice(pool, size=2 * k, replace=False)
    return pair[:k], pair[k:]


def apply_namesakes(ctx: GenContext, t: str) -> None:
    """Namesakes for a type whose generator does not make its own (all but people)."""
    copies, originals = namesake_pairs(ctx, t)
    if len(copies):
        d = ctx[t]
        d.names[copies] = d.names[originals]
        d.aliases[copies] = d.aliases[originals]
        d.namesake_group[copies] = originals + d.start
        d.namesake_group[originals] = originals + d.start


def na_int(n: int) -> np.ndarray:
    return np.full(n, NA_INT, np.int64)


def na_date(n: int) -> np.ndarray:
    return np.full(n, NA_DATE, np.int32)
