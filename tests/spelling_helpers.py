"""Misspellings and the speller's rule written plainly (tests only)."""

from __future__ import annotations

import random

from rapidfuzz import process
from rapidfuzz.distance import OSA

from fictionworld.web.speller import MIN_SIMILARITY


def literal_correct(vocab: set[str], word: str) -> list[str]:
    """The speller's rule written plainly: known -> itself; short or a number -> nothing; else the
    closest words of length n = len ±1 sharing the first or the last affix(n) letters, 1 up to
    4 letters, 2 for 5-6, 3 from 7 (ties all kept)."""
    if word in vocab:
        return [word]
    if len(word) < 4 or word.isdigit():
        return []
    h = lambda n: 1 if n <= 4 else 2 if n <= 6 else 3  # noqa: E731
    pool = {
        w
        for w in vocab
        if abs(len(w) - len(word)) <= 1
        and (w[: h(len(w))] == word[: h(len(w))] or w[-h(len(w)) :] == word[-h(len(w)) :])
    }
    hits = process.extract(word, sorted(pool), scorer=OSA.normalized_similarity, score_cutoff=MIN_SIMILARITY, limit=3)
    return [w for w, s, _ in hits if s >= hits[0][1] - 1e-9] if hits else []


def literal_spellings(vocab: set[str], word: str, limit: int = 16) -> list[str]:
    """``Speller.spellings`` written plainly: known -> itself; short or a number -> nothing; else,
    of the words :func:`literal_correct` scores that reach MIN_SIMILARITY, those at the fewest
    OSA edits, the most similar first, then alphabetically, at most ``limit``."""
    if word in vocab:
        return [word]
    if len(word) < 4 or word.isdigit():
        return []
    h = lambda n: 1 if n <= 4 else 2 if n <= 6 else 3  # noqa: E731
    pool = [
        w
        for w in sorted(vocab)
        if abs(len(w) - len(word)) <= 1
        and (w[: h(len(w))] == word[: h(len(w))] or w[-h(len(w)) :] == word[-h(len(w)) :])
        and OSA.normalized_similarity(word, w) >= MIN_SIMILARITY
    ]
    if not pool:
        return []
    fewest = min(OSA.distance(word, w) for w in pool)
    near = [w for w in pool if OSA.distance(word, w) == fewest]
    return sorted(near, key=lambda w: (-OSA.normalized_similarity(word, w), w))[:limit]


def edits(word: str, rng: random.Random) -> str:
    letters = "abcdeéiklmnorstuvyzøß"
    i = rng.randrange(len(word) + 1)
    op = rng.randrange(4)
    if op == 0:
        return word[:i] + rng.choice(letters) + word[i:]
    if op == 1 and i < len(word):
        return word[:i] + word[i + 1 :]
    if op == 2 and i + 1 < len(word):
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    return word[:i] + rng.choice(letters) + word[i + 1 :]
