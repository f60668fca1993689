"""Generation context, seeding and the generator registry."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from fictionworld.dates import NA_DATE, YEAR, to_days
from fictionworld.folding import ascii_key
from fictionworld.schema import ENTITY_TYPES, PREDICATE_CODE, DType
from fictionworld.seeding import child_seed
from fictionworld.spec import WorldSpec
from fictionworld.tables import NA_INT, TYPE_CODE, EntityTable, FactTable, object_array
from generators.flow import Flow

__all__ = [
    "GenContext",
    "TypeData",
    "WorldGenerator",
    "register",
    "make",
    "registered",
    "child_seed",
]


@dataclass
class TypeData:
    """Everything generated for one entity type, indexed by the type-local index."""

    name: str
    n: int
    offset: int  # global row of local index 0
    source: str = ""  # generator id that made the type
    names: np.ndarray | None = None
    aliases: np.ndarray | None = None
    culture: np.ndarray | None = None
    namesake_group: np.ndarray | None = None
    attrs: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def rows(self) -> np.ndarray:
        return np.arange(self.offset, self.offset + self.n, dtype=np.int64)


class GenContext:
    """Shared state of one generation run: seeded streams, type data, relation facts, and the
    typed hand-offs between generators (``flow``, see generators/flow.py)."""

    def __init__(self, spec: WorldSpec, seed: int):
        self.spec = spec
        self.seed = int(seed)
        self.present = to_days(spec.present)
        self.counts = spec.counts()
        self.enabled_relations = set(spec.relations())
        self.types: dict[str, TypeData] = {}
        offset = 0
        for t, n in self.counts.items():
            self.types[t] = TypeData(t, n, offset)
            offset += n
        self.n_entities = offset
        self.flow = Flow()
        self._facts: list[FactTable] = []
        self._sources: list[str] = []
        self.source = ""

    # -- randomness ------------------------------------------------------------------------
    def rng(self, key: str) -> np.random.Generator:
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

    def relate(self, rel: str, subj_type: str, subj_local, obj_type: str, obj_local, start=None, end=None) -> None:
        """Add relation facts (local indices; -1 entries and disabled relations are dropped)."""
        if rel not in self.enabled_relations or not self.has(subj_type, obj_type):
            return
        s = np.asarray(subj_local, np.int64)
        o = np.asarray(obj_local, np.int64)
        keep = (s >= 0) & (o >= 0)
        start = None if start is None else np.broadcast_to(np.asarray(start, np.int32), s.shape)[keep]
        end = None if end is None else np.broadcast_to(np.asarray(end, np.int32), s.shape)[keep]
        self._facts.append(
            FactTable.build(
                s[keep] + self.types[subj_type].offset,
                PREDICATE_CODE[rel],
                obj=o[keep] + self.types[obj_type].offset,
                start=start,
                end=end,
                source=self._source_code(),
            )
        )

    def _source_code(self) -> int:
        if self.source not in self._sources:
            self._sources.append(self.source)
        return self._sources.index(self.source)

    def finalize(self) -> tuple[EntityTable, FactTable]:
        ent_parts = []
        attr_parts = []
        for t, d in self.types.items():
            if d.names is None:
                raise RuntimeError(f"no generator produced names for {t}")
            ent_parts.append(
                EntityTable(
                    type_code=np.full(d.n, TYPE_CODE[t], np.int16),
                    local=np.arange(d.n, dtype=np.int32),
                    name=d.names,
                    aliases=d.aliases,
                    culture=d.culture,
                    namesake_group=d.namesake_group,
                )
            )
            schema = ENTITY_TYPES[t]
            for a_name in self.spec.attributes(t):
                if a_name not in d.attrs:
                    continue
                attr = schema.attribute(a_name)
                vals = d.attrs[a_name]
                self.source = d.source
                attr_parts.append(_attribute_facts(d, attr.dtype, a_name, vals, self._source_code()))
        entities = ent_parts[0]
        for p in ent_parts[1:]:
            entities = entities.concat(p)
        facts = FactTable.concat_all(attr_parts + self._facts, tuple(self._sources))
        facts = facts.with_values(id=np.arange(len(facts), dtype=np.int64))
        return entities, facts


def _attribute_facts(d: TypeData, dtype: DType, name: str, vals: np.ndarray, source: int) -> FactTable:
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
    after ``after`` types when those are present."""

    id: str  # "people-v0": bump the version whenever the output distribution changes
    produces: tuple[str, ...]
    after: tuple[str, ...]
    run: Callable[[GenContext], None]


_REGISTRY: dict[str, WorldGenerator] = {}


def register(id: str, produces: Iterable[str], after: Iterable[str] = ()):
    def deco(fn: Callable[[GenContext], None]) -> Callable[[GenContext], None]:
        if id in _REGISTRY:
            raise ValueError(f"generator {id!r} registered twice")
        _REGISTRY[id] = WorldGenerator(id, tuple(produces), tuple(after), fn)
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
    rng: np.random.Generator, founded: np.ndarray, when: np.ndarray, candidates: np.ndarray | None = None
) -> np.ndarray:
    """For each date, a uniformly chosen entity (local index) with ``founded <= when``; -1 if none."""
    cand = np.arange(len(founded)) if candidates is None else np.asarray(candidates, np.int64)
    order = np.argsort(founded[cand], kind="stable")
    cand = cand[order]
    f = founded[cand]
    hi = np.searchsorted(f, np.asarray(when), "right")
    k = np.floor(rng.random(len(hi)) * hi).astype(np.int64)
    return np.where(hi > 0, cand[np.minimum(k, max(len(cand) - 1, 0))] if len(cand) else -1, -1)


def weighted_choice(rng: np.random.Generator, weights: np.ndarray, n: int) -> np.ndarray:
    p = np.asarray(weights, np.float64)
    cdf = np.cumsum(p / p.sum())
    return np.minimum(np.searchsorted(cdf, rng.random(n), "right"), len(p) - 1)


def unique_names(
    candidates: Callable[[np.ndarray, int], list[str]],
    n: int,
    taken: set[str] | None = None,
    max_rounds: int = 60,
    reject: Callable[[str], bool] | None = None,
) -> list[str]:
    """Fill ``n`` slots with distinct names: ``candidates(slots, round)`` proposes one name per
    slot still open; the first unused proposal wins (order-preserving, so deterministic)."""
    taken = set() if taken is None else taken
    out: list[str | None] = [None] * n
    todo = list(range(n))
    for rnd in range(max_rounds):
        if not todo:
            break
        props = candidates(np.asarray(todo, np.int64), rnd)
        rest = []
        for slot, name in zip(todo, props):
            if name in taken or (reject is not None and reject(name)):
                rest.append(slot)
            else:
                taken.add(name)
                out[slot] = name
        todo = rest
    if todo:
        raise RuntimeError(f"could not invent {len(todo)} distinct names after {max_rounds} rounds")
    return out  # type: ignore[return-value]


def clean_stems(cultures: np.ndarray, rng: np.random.Generator, min_len: int = 4) -> np.ndarray:
    """One invented word per entry of ``cultures`` (indices into CULTURES), none of them a real
    place name (gazetteer) and none shorter than ``min_len``."""
    from fictionworld.gazetteer import normalize_many, real_place_names
    from generators.morphology import CULTURES, invent_words, pronounceable

    gaz = real_place_names()
    cultures = np.asarray(cultures, np.int64)
    out = np.empty(len(cultures), dtype=object)
    todo = np.arange(len(cultures))
    for _ in range(100):
        if len(todo) == 0:
            return out
        for c in np.unique(cultures[todo]).tolist():
            idx = todo[cultures[todo] == c]
            out[idx] = invent_words(CULTURES[c], len(idx), rng)
        words = out[todo].tolist()
        keys = normalize_many(words)
        todo = np.array(
            [i for i, w, k in zip(todo.tolist(), words, keys) if len(w) < min_len or k in gaz or not pronounceable(w)],
            np.int64,
        )
    raise RuntimeError("could not invent gazetteer-free words")


def join_suffix(stem: str, suffix: str) -> str:
    """Glue a suffix to a stem, dropping a doubled vowel at the seam."""
    if stem and suffix and stem[-1] in "aeiouy" and suffix[0] in "aeiouy":
        stem = stem[:-1]
    return stem + suffix


def namesake_pairs(ctx: GenContext, t: str, eligible: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Deliberate namesakes asked for by ``namesake_rate``: (copies, originals), local indices,
    all distinct; each copy will carry its original's name, and both record the group."""
    n = ctx.counts[t]
    k = int(round(ctx.spec.types[t].namesake_rate * n))
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
        d.namesake_group[copies] = originals
        d.namesake_group[originals] = originals


_NOT_SLUG = re.compile(r"[^a-z0-9]+")


def slug(name: str) -> str:
    """``name`` as a URL part: ASCII letters and digits joined by dashes."""
    return _NOT_SLUG.sub("-", ascii_key(name)).strip("-")


def na_int(n: int) -> np.ndarray:
    return np.full(n, NA_INT, np.int64)


def na_date(n: int) -> np.ndarray:
    return np.full(n, NA_DATE, np.int32)
