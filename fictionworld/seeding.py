"""One seeding helper for the whole project: a named child stream per purpose."""

from __future__ import annotations

import hashlib

import numpy as np

__all__ = ["child_seed", "rng", "mix64", "mix64_int", "hash_text"]


def child_seed(seed: int, key: str) -> np.random.SeedSequence:
    """A seed sequence for one named stream: independent of every other name and of order."""
    digest = hashlib.blake2b(key.encode(), digest_size=16).digest()
    words = [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]
    return np.random.SeedSequence([int(seed) & 0xFFFFFFFF, int(seed) >> 32, *words])


def rng(seed: int, key: str) -> np.random.Generator:
    return np.random.default_rng(child_seed(seed, key))


def mix64(values: np.ndarray, salt: int) -> np.ndarray:
    """A fast stateless 64-bit hash (splitmix64 finaliser) of integers: per-item choices that
    never depend on order or on other items."""
    with np.errstate(over="ignore"):
        z = np.asarray(values, dtype=np.uint64) + np.uint64((salt * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def mix64_int(x: int, salt: int) -> int:
    """Scalar :func:`mix64`, for one-off choices: ``mix64_int(x, s) == int(mix64([x], s)[0])``."""
    m = 0xFFFFFFFFFFFFFFFF
    z = (x + salt * 0x9E3779B97F4A7C15) & m
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
    return z ^ (z >> 31)


def hash_text(text: str) -> int:
    """A stable 48-bit hash of a string (the same on every machine and Python run)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=6).digest(), "little")
