"""Entity linking: which entities a query names, even misspelt or by an alias.

Narrow first, then re-rank a few with rapidfuzz (scanning every name per query would cost
60–650 ms at a million entities):

1. each query word found among the words of entity names (and aliases) is kept; an unknown
   word of 4+ letters is corrected to the closest name words of similar length (rapidfuzz optimal-string-alignment
   distance, a swap counts as one edit, over words of similar length, normalised similarity ≥ 0.75);
2. candidate entities are those containing the rarest matched word;
3. a candidate is linked when every word of its name (or of one alias) is matched; links are
   ranked by rapidfuzz ``ratio`` of the corrected query and the name, so the fullest match
   ("Cilnarano Trade Fair 2023") beats a name inside it ("Cilnarano").
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict

import numpy as np
from rapidfuzz import fuzz, process
from rapidfuzz.distance import OSA

__all__ = ["EntityLinker", "Link", "words"]

_WORD = re.compile(r"\w+")
MIN_SIMILARITY = 0.75
MAX_CANDIDATES = 2_000


def words(text: str) -> list[str]:
    """Lowercase, accent-free words: the linker's unit."""
    if text.isascii():
        return _WORD.findall(text.lower())
    t = unicodedata.normalize("NFKD", text.lower())
    t = "".join(c for c in t if not unicodedata.combining(c))
    return _WORD.findall(t.replace("ł", "l").replace("ø", "o").replace("đ", "d").replace("ß", "ss"))


class Link(tuple):
    """(entity row, score 0–100, corrected words)"""

    __slots__ = ()

    def __new__(cls, row: int, score: float, corrected: tuple[str, ...]):
        return super().__new__(cls, (row, score, corrected))

    row = property(lambda self: self[0])
    score = property(lambda self: self[1])
    corrected = property(lambda self: self[2])


class EntityLinker:
    def __init__(self, names: list[str], aliases: list[tuple[str, ...]]):
        vocab: dict[str, int] = {}
        postings: dict[int, list[int]] = defaultdict(list)
        self.forms: list[list[tuple[int, ...]]] = []  # per entity: word-id tuples of name and aliases
        for row, (name, al) in enumerate(zip(names, aliases)):
            forms = []
            for form in (name, *al):
                ids = tuple(vocab.setdefault(w, len(vocab)) for w in words(form))
                if ids:
                    forms.append(ids)
                    for w in set(ids):
                        postings[w].append(row)
            self.forms.append(forms)
        self.vocab = vocab
        self.word_of = list(vocab)  # word id -> word (dicts keep insertion order)
        self.postings = {w: np.unique(np.array(rows, np.int32)) for w, rows in postings.items()}
        self.names = names
        by_len: dict[int, list[str]] = defaultdict(list)
        for w in vocab:
            by_len[len(w)].append(w)
        self.by_len = {n: sorted(ws) for n, ws in by_len.items()}

    def correct(self, word: str) -> list[str]:
        """Name words a query word may stand for: itself if known, else close spellings."""
        if word in self.vocab:
            return [word]
        if len(word) < 4 or word.isdigit():
            return []
        pool = [w for n in range(len(word) - 2, len(word) + 3) for w in self.by_len.get(n, ())]
        hits = process.extract(word, pool, scorer=OSA.normalized_similarity, score_cutoff=MIN_SIMILARITY, limit=3)
        if not hits:
            return []
        best = hits[0][1]
        return [w for w, s, _ in hits if s >= best - 1e-9]

    def link(self, query: str, limit: int = 5, known=None) -> list[Link]:
        """Entities the query names in full (by name or alias), best first; ties by row.
        ``known(word)`` says a word is spelt right (it occurs on some page), so it is not
        corrected: that keeps ordinary words ("founded", "companies") off the fuzzy path."""
        qwords = words(query)
        matched: dict[int, str] = {}
        corrected: list[str] = []
        for w in qwords:
            options = [w] if w in self.vocab else [] if known is not None and known(w) else self.correct(w)
            corrected.append(options[0] if options else w)
            for o in options:
                matched[self.vocab[o]] = o
        if not matched:
            return []
        rarest = min(matched, key=lambda w: (len(self.postings[w]), w))
        cands = self.postings[rarest][:MAX_CANDIDATES]
        have = set(matched)
        fixed = " ".join(corrected)
        out = []
        for row in cands.tolist():
            full = [f for f in self.forms[row] if set(f) <= have]
            if full:
                score = max(fuzz.ratio(fixed, " ".join(self.word_of[i] for i in f)) for f in full)
                out.append(Link(row, score, tuple(corrected)))
        out.sort(key=lambda x: (-x.score, x.row))
        return out[:limit]
