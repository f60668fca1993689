"""Names: distinct within a run (``unique_names``), hashed alike everywhere to compare them across
blocks (``name_hashes``), built from invented gazetteer-free stems, and turned into URL parts."""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from fictionworld.folding import ascii_key

__all__ = ["unique_names", "name_hashes", "clean_stems", "join_suffix", "slug"]


def unique_names(
    candidates: Callable[[np.ndarray, int], list[str]],
    n: int,
    taken: Taken | None = None,
    max_rounds: int = 60,
    reject: Callable[[str], bool] | None = None,
) -> list[str]:
    """Fill ``n`` slots with distinct names: ``candidates(slots, round)`` proposes one name per
    slot still open; the first unused proposal wins (order-preserving, so deterministic).
    ``taken``: names already used (this block's, and every block's by hash); each name won is
    added to it."""
    taken = Taken(set()) if taken is None else taken
    out: list[str | None] = [None] * n
    todo = list(range(n))
    for rnd in range(max_rounds):
        if not todo:
            break
        props = candidates(np.asarray(todo, np.int64), rnd)
        # every block's names do not change within a round: tested for all its proposals at
        # once (one name at a time, its hash and search cost some 40 us: at 3M entities
        # 216,000 of them, 9 s on one core, more than linearly more with the entities as more
        # names clash; the graph's generation with 2 workers went from 28.2 to 24.3 s there)
        elsewhere = taken.elsewhere(props)
        rest = []
        for slot, name, other in zip(todo, props, elsewhere):
            if other or name in taken.names or (reject is not None and reject(name)):
                rest.append(slot)
            else:
                taken.add(name)
                out[slot] = name
        todo = rest
    if todo:
        raise RuntimeError(f"could not invent {len(todo)} distinct names after {max_rounds} rounds")
    return out  # type: ignore[return-value]


def name_hashes(names) -> np.ndarray:
    """A 64-bit hash of each name, the same in every process and on every machine: a
    polynomial over the UTF-8 bytes, then a SplitMix64 finish, vectorised. Two names with one
    hash only cost a redrawn name (fictionworld/generators/blocks.py), never a wrong world."""
    import pyarrow as pa

    arr = pa.array(list(names), pa.large_string())
    if len(arr) == 0:
        return np.zeros(0, np.uint64)
    offsets = np.frombuffer(arr.buffers()[1], np.int64)[: len(arr) + 1]
    data = np.frombuffer(arr.buffers()[2], np.uint8) if arr.buffers()[2] is not None else np.zeros(0, np.uint8)
    lengths = np.diff(offsets)
    pos = np.arange(offsets[-1], dtype=np.int64) - np.repeat(offsets[:-1], lengths)
    powers = np.cumprod(np.full(int(lengths.max(initial=0)) + 1, 0x100000001B3, np.uint64))
    terms = (data[: offsets[-1]].astype(np.uint64) + np.uint64(1)) * powers[pos]
    h = np.zeros(len(arr), np.uint64)
    np.add.at(h, np.repeat(np.arange(len(arr)), lengths), terms)
    h ^= lengths.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    h ^= h >> np.uint64(30)
    h *= np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(27)
    h *= np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


class Taken:
    """Names taken: a set of this block's, and the sorted hashes of every block's (none by
    default)."""

    def __init__(self, names: set[str], banned: np.ndarray | None = None):
        self.names = names
        self.banned = np.zeros(0, np.uint64) if banned is None else banned

    def __contains__(self, name: str) -> bool:
        return name in self.names or self.elsewhere([name])[0]

    def elsewhere(self, names: list[str]) -> list[bool]:
        """Whether each of ``names`` is one of every block's (by its hash), in one pass."""
        if not len(self.banned):
            return [False] * len(names)
        h = name_hashes(names)
        at = np.minimum(self.banned.searchsorted(h), len(self.banned) - 1)
        return (self.banned[at] == h).tolist()

    def add(self, name: str) -> None:
        self.names.add(name)


def clean_stems(cultures: np.ndarray, rng: np.random.Generator, min_len: int = 4) -> np.ndarray:
    """One invented word per entry of ``cultures`` (indices into CULTURES), none of them a real
    place name (gazetteer) and none shorter than ``min_len``."""
    from fictionworld.gazetteer import normalize_many, real_place_names
    from fictionworld.generators.morphology import CULTURES, invent_words, pronounceable

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


_NOT_SLUG = re.compile(r"[^a-z0-9]+")


def slug(name: str) -> str:
    """``name`` as a URL part: ASCII letters and digits joined by dashes."""
    return _NOT_SLUG.sub("-", ascii_key(name)).strip("-")
