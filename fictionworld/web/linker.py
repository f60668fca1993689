"""Entity linking: which entities a query names, even misspelt or by an alias.

Narrow first, then re-rank a few with rapidfuzz (scanning every name per query would cost
60–650 ms at a million entities):

1. each query word found among the words of entity names (and aliases) is kept; an unknown
   word of 4+ letters is corrected to the closest name words of similar length (rapidfuzz optimal-string-alignment
   distance, a swap counts as one edit, over words of length ±1 sharing their first or last
   :func:`affix` letters with it, normalised similarity ≥ 0.75);
2. candidate entities are those containing the rarest matched word;
3. a candidate is linked when every word of its name (or of one alias) is matched; links are
   ranked by rapidfuzz ``ratio`` of the corrected query and the name, so the fullest match
   ("Cilnarano Trade Fair 2023") beats a name inside it ("Cilnarano").
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from rapidfuzz import fuzz

from fictionworld.folding import LETTERS, fold
from fictionworld.tables import runs
from fictionworld.web.speller import Speller, check_deadline, speller_table

__all__ = ["EntityLinker", "Link", "words"]

_WORD = re.compile(r"\w+")
MAX_CANDIDATES = 2_000


def words(text: str) -> list[str]:
    """Words of :func:`fictionworld.folding.fold` ``(text)``: the linker's unit."""
    return _WORD.findall(fold(text))


class Link(tuple):
    """(entity row, score 0–100, corrected words)"""

    __slots__ = ()

    def __new__(cls, row: int, score: float, corrected: tuple[str, ...]):
        return super().__new__(cls, (row, score, corrected))

    row = property(lambda self: self[0])
    score = property(lambda self: self[1])
    corrected = property(lambda self: self[2])


LINKER_ARRAYS = ("form_start", "form_words", "entity_forms", "entity_start", "post_row", "post_start")


class EntityLinker:
    """Links query words to entities. Built from the names (``EntityLinker(names, aliases)``,
    vectorised in Arrow: about 0.3 s for 100k entities) or opened from a saved world's
    ``lexicon/`` (:meth:`open`: memory-mapped arrays, ready at once)."""

    def __init__(self, names: list[str], aliases: list[tuple[str, ...]]):
        n = len(names)
        alias_count = np.fromiter((len(a) for a in aliases), np.int64, n)
        texts = names + [x for a in aliases for x in a]
        form_entity = np.concatenate([np.arange(n), np.repeat(np.arange(n), alias_count)]).astype(np.int64)
        arr = pc.utf8_lower(pa.array(texts, pa.string()))
        for a, b in LETTERS.items():  # the vectorised twin of words(): folding.fold in Arrow
            arr = pc.replace_substring(arr, a, b)
        arr = pc.replace_substring_regex(pc.utf8_normalize(arr, "NFKD"), r"\p{Mn}", "")
        toks = pc.split_pattern_regex(arr, r"[^\p{L}\p{N}_]+")
        flat = pc.list_flatten(toks)
        parent = pc.list_parent_indices(toks).to_numpy()
        keep = pc.greater(pc.utf8_length(flat), 0).to_numpy(zero_copy_only=False)
        flat, parent = pc.filter(flat, pa.array(keep)), parent[keep]
        enc = pc.dictionary_encode(flat.combine_chunks() if isinstance(flat, pa.ChunkedArray) else flat)
        # Word ids are positions in the sorted vocabulary (the speller's), whatever the names' order.
        order = pc.sort_indices(enc.dictionary).to_numpy()
        rank = np.empty(len(order), np.int32)
        rank[order] = np.arange(len(order), dtype=np.int32)
        word_ids = rank[enc.indices.to_numpy()] if len(order) else np.zeros(0, np.int32)
        speller = Speller(table=speller_table(enc.dictionary.take(pa.array(order)), sorted_unique=True))
        # forms (a name or an alias) as runs of word ids, grouped by entity
        counts = np.bincount(parent, minlength=len(texts))
        forms_sorted = np.argsort(form_entity, kind="stable")
        # postings: word id -> sorted unique entity rows
        pairs = np.sort(word_ids.astype(np.int64) * max(n, 1) + form_entity[parent])
        pairs = pairs[np.r_[True, pairs[1:] != pairs[:-1]]] if len(pairs) else pairs
        post_word = (pairs // max(n, 1)).astype(np.int32)
        arrays = {
            "form_start": np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
            "form_words": word_ids.astype(np.int32),  # parent is ascending: each form's words are contiguous
            "entity_forms": forms_sorted.astype(np.int64),
            "entity_start": np.searchsorted(form_entity[forms_sorted], np.arange(n + 1)).astype(np.int64),
            "post_row": (pairs % max(n, 1)).astype(np.int32),
            "post_start": np.searchsorted(post_word, np.arange(len(speller) + 1)).astype(np.int64),
        }
        self._attach(speller, arrays)

    def _attach(self, speller: Speller, arrays: dict[str, np.ndarray]) -> None:
        self.speller = speller
        self.word_of = speller.words  # word id -> word
        self.arrays = arrays
        self._form_start, self._form_words = arrays["form_start"], arrays["form_words"]
        self._entity_forms, self._entity_start = arrays["entity_forms"], arrays["entity_start"]
        self._post_row, self._post_start = arrays["post_row"], arrays["post_start"]

    @property
    def entities(self) -> int:
        return len(self._entity_start) - 1

    def save(self, directory: str | Path) -> None:
        """``names.arrow`` (the vocabulary and its speller keys) and one ``.npy`` per array."""
        d = Path(directory)
        self.speller.save(d / "names.arrow")
        for name in LINKER_ARRAYS:
            np.save(d / f"{name}.npy", self.arrays[name])

    @classmethod
    def open(cls, directory: str | Path) -> EntityLinker:
        """The linker :meth:`save` wrote, memory-mapped (ValueError if it is incomplete)."""
        d = Path(directory)
        self = cls.__new__(cls)
        try:
            # plain ndarray views of the maps: slicing a np.memmap costs a Python call per slice
            arrays = {name: np.load(d / f"{name}.npy", mmap_mode="r").view(np.ndarray) for name in LINKER_ARRAYS}
        except (OSError, ValueError) as e:
            raise ValueError(f"{d}: unreadable linker arrays ({e})") from None
        speller = Speller.open(d / "names.arrow")
        if len(arrays["post_start"]) != len(speller) + 1 or len(arrays["form_start"]) < 1:
            raise ValueError(f"{d}: the linker arrays do not match its vocabulary")
        self._attach(speller, arrays)
        return self

    def word_id(self, word: str) -> int:
        return self.speller.id(word)

    def postings(self, word_id: int) -> np.ndarray:
        return self._post_row[self._post_start[word_id] : self._post_start[word_id + 1]]

    def forms(self, row: int) -> list[np.ndarray]:
        fs = self._entity_forms[self._entity_start[row] : self._entity_start[row + 1]]
        return [self._form_words[self._form_start[f] : self._form_start[f + 1]] for f in fs.tolist()]

    def correct(self, word: str) -> list[str]:
        """Name words a query word may stand for: itself if known, else close spellings."""
        return self.speller.correct(word)

    def link(self, query: str, limit: int = 5, known=None, deadline: float | None = None) -> list[Link]:
        """Entities the query names in full (by name or alias), best first; ties by row.
        ``known(word)`` says a word is spelt right (it occurs on some page), so it is not
        corrected: that keeps ordinary words ("founded", "companies") off the fuzzy path.
        ``deadline`` (``time.monotonic()``): DeadlinePassed once past it, checked per word."""
        qwords = words(query)
        matched: dict[int, str] = {}
        corrected: list[str] = []
        spellings: list[list[int]] = []  # each query word's ids: itself, or its closest spellings
        for w in qwords:
            check_deadline(deadline)
            wid = self.word_id(w)
            if wid >= 0 or (known is not None and known(w)):
                options = [w] if wid >= 0 else []
            else:
                options = self.speller.spellings(w, deadline=deadline)
            corrected.append(options[0] if options else w)
            ids = [wid if o == w and wid >= 0 else self.word_id(o) for o in options]
            matched.update(zip(ids, options))
            spellings.append(ids)
        if not matched:
            return []
        # The candidates hold the query word whose spellings are on fewest entities, in any of its
        # spellings: a misspelt word's spellings are alternatives ("rirbis": "ribris", "rirbia",
        # "riris"), and the rarest alone may be another name's ("Rirbia Solutions"), which left
        # the entity meant out (2026-11-29: 8 of 200 misspelt names at 1M and at 10M found
        # their article in the top 10 again).
        rarest = min((ids for ids in spellings if ids), key=lambda ids: (sum(len(self.postings(i)) for i in ids), ids))
        if len(rarest) == 1:
            cands = self.postings(rarest[0])[:MAX_CANDIDATES]
        else:
            cands = np.unique(np.concatenate([self.postings(i) for i in rarest]))[:MAX_CANDIDATES]
        fixed = " ".join(corrected)
        # The candidates' forms whose every word is matched, found in one vectorised pass (a
        # common surname has thousands of candidates in a 10M-entity world); only those are scored.
        start = self._entity_start[cands]
        cand_of_form, at = runs(start, self._entity_start[cands + 1] - start)
        forms, owner = self._entity_forms[at], cands[cand_of_form]
        start = self._form_start[forms]
        form_of_word, at = runs(start, self._form_start[forms + 1] - start)
        missing = np.bincount(form_of_word[~_among(self._form_words[at], list(matched))], minlength=len(forms))
        best: dict[int, tuple[float, list[int]]] = {}  # row -> its best form's score and words
        for f, row in zip(forms[missing == 0].tolist(), owner[missing == 0].tolist()):
            form = self._form_words[self._form_start[f] : self._form_start[f + 1]].tolist()
            score = fuzz.ratio(fixed, " ".join(self.word_of[i] for i in form))
            if row not in best or score > best[row][0]:
                best[row] = score, form
        # Each link's corrected words are the query's as its name spells them: of a misspelt
        # word's spellings, the one in the name (what the search then adds to the query).
        out = sorted(
            (Link(row, score, self._spelt(corrected, spellings, form)) for row, (score, form) in best.items()),
            key=lambda x: (-x.score, x.row),
        )
        return out[:limit]

    def _spelt(self, corrected: list[str], spellings: list[list[int]], form: list[int]) -> tuple[str, ...]:
        """``corrected`` with each word that has several spellings spelt as ``form`` (a name's
        word ids) spells it, where it holds one of them."""
        held = set(form)
        return tuple(
            next((self.word_of[i] for i in ids if i in held), c) if len(ids) > 1 else c
            for c, ids in zip(corrected, spellings)
        )


def _among(values: np.ndarray, ids: list[int]) -> np.ndarray:
    """``np.isin(values, ids)``; for a few ids (the words of a query) one comparison each,
    without the sort ``isin`` sets up for every call."""
    if len(ids) > 16:
        return np.isin(values, ids)
    hit = np.zeros(len(values), bool)
    for i in ids:
        hit |= values == i
    return hit
