"""The speller: close spellings of a word within a vocabulary of millions, from an Arrow table.

Entity linking (:mod:`fictionworld.web.linker`) corrects a misspelt name word with it, and the web
respells a query's unknown words with one over names and directory titles. The vocabulary is an
Arrow table of sorted words and keys, memory-mapped when saved: nothing per word is built in
Python.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from functools import cached_property
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from rapidfuzz import process
from rapidfuzz.distance import OSA

from fictionworld.errors import FictionWorldError
from fictionworld.web.arrow import MappedArrow, int64_array, map_array, numpy_of, save_array, write_arrow
from fictionworld.web.strings import Strings

__all__ = [
    "Speller",
    "affix",
    "speller_table",
    "letters_of",
    "tail3_table",
    "keys_path",
    "tail3_path",
    "MIN_SIMILARITY",
    "DeadlinePassed",
    "check_deadline",
]

MIN_SIMILARITY = 0.75
# Pools larger than this are first searched for words one edit away (Speller._one_edit, about
# 1.3 ms at 10M entities); scoring a pool costs about 0.28 us per word.
ONE_EDIT_POOL = 5_000


class DeadlinePassed(FictionWorldError):
    """A search's work went past its deadline (a ``time.monotonic()`` time): it stopped there,
    with no answer, rather than give one that left some of the query's words out."""

    exit_code = 1


def check_deadline(deadline: float | None) -> None:
    """DeadlinePassed once ``time.monotonic()`` is past ``deadline`` (None: no deadline).
    Checked between a query's words, where each costs at most a few ms (:meth:`Speller.correct`)."""
    if deadline is not None and time.monotonic() > deadline:
        raise DeadlinePassed(f"the search's work passed its deadline ({time.monotonic() - deadline:.3f} s ago)")


def affix(n: int) -> int:
    """How many first (or last) letters a word of ``n`` letters must share with a misspelling
    to be a candidate: 1 up to 4 letters, 2 for 5–6, 3 from 7. One edit (an insertion, a
    deletion, a substitution or a swap of neighbours) never reaches both ends of a word that
    long, so every spelling one edit away is a candidate; longer affixes keep the candidates few
    in a vocabulary of millions (a 10M-entity world has 3.2M name words)."""
    return 1 if n <= 4 else 2 if n <= 6 else 3


def _mapped(path: Path) -> MappedArrow:
    """``path`` mapped for random reads, or a ValueError naming it (damaged, or no Arrow file)."""
    try:
        return MappedArrow(path, access="random")
    except (OSError, pa.ArrowException) as e:
        raise ValueError(f"{path}: unreadable ({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None


class Speller:
    """Close spellings of a word within a vocabulary (folded words, as :func:`words` gives them):
    rapidfuzz optimal-string-alignment similarity ≥ MIN_SIMILARITY over words of length ±1 that
    share their first or last :func:`affix` letters with it.

    The vocabulary is an Arrow table (:func:`speller_table`): the words sorted, and two sorted
    keys, "length|first letter" and "length|last two letters", each with the word it stands
    for. Lookups are binary searches, so a table memory-mapped from disk (:meth:`open`) serves
    at once: nothing per word is built in Python. Words of 7 letters or more must share their
    last three: a third key, "length|last three letters" (:func:`tail3_table`, saved beside
    the table), finds them where a "last two" group held up to 60,000 words at 10M entities,
    each read to test its third letter (half of a correction's 2.0-2.3 ms). A table saved
    without it is read as before."""

    def __init__(
        self, vocab: Iterable[str] = (), *, table: pa.Table | None = None, tail3: pa.Table | None | bool = True,
        keys: np.ndarray | None = None,
    ):  # fmt: skip
        """``tail3``: the :func:`tail3_table` of the words, True to make it, False for none.
        ``keys``: the columns' prefix keys as :meth:`save` wrote them (:meth:`_key_columns`)."""
        self.table = speller_table(vocab) if table is None else table
        t = self.table
        self.tail3 = tail3_table(t.column("word")) if tail3 is True else tail3 if isinstance(tail3, pa.Table) else None
        columns = [t.column("word"), t.column("head_key"), t.column("tail_key")]
        if self.tail3 is not None:
            columns.append(self.tail3.column("key"))
        parts = _split_keys(keys, [len(c) for c in columns]) if keys is not None else [None] * len(columns)
        strings = [Strings(c, k) for c, k in zip(columns, parts)]
        self.words, self._head, self._tail = strings[:3]
        self._head_word = numpy_of(t.column("head_word"), np.int32)
        self._tail_word = numpy_of(t.column("tail_word"), np.int32)
        if self.tail3 is not None:
            self._tail3 = strings[3]
            self._tail3_word = numpy_of(self.tail3.column("word"), np.int32)

    def _key_columns(self) -> list[Strings]:
        """The sorted columns looked up by :meth:`Strings.bisect_left`, in the order their
        prefix keys are saved."""
        return [self.words, self._head, self._tail] + ([self._tail3] if self.tail3 is not None else [])

    @classmethod
    def open(cls, path: str | Path) -> Speller:
        """A speller table saved by :meth:`save`, memory-mapped (with its :func:`tail3_table`
        and the columns' prefix keys when they were saved beside it)."""
        path = Path(path)
        # Opening checks the key columns against a few words spread through the table, and the
        # last-three-letters key's word ids whole. With the kernel's read-ahead (8 MiB a fault
        # here) those checks read 168 MiB of a 10M world's files from disk; so the tables are
        # mapped for random reads while they are opened, the word ids asked for at once, and for
        # the default read-ahead after (what lookups get, as before).
        maps = [_mapped(path)]
        table = maps[0].table
        if table.schema != SPELLER_SCHEMA:
            raise ValueError(f"{path.name}: not a speller table (columns {table.schema.names})")
        tail3: pa.Table | bool = False
        if tail3_path(path).exists():
            maps.append(_mapped(tail3_path(path)))
            tail3 = maps[-1].table
            if tail3.schema == TAIL3_SCHEMA:
                maps[-1].will_need(["word"])
            ids = numpy_of(tail3.column("word"), np.int32) if tail3.schema == TAIL3_SCHEMA else None
            if (
                ids is None
                or tail3.num_rows > table.num_rows
                or (len(ids) and not 0 <= ids.min() <= ids.max() < table.num_rows)
            ):
                raise ValueError(f"{tail3_path(path).name}: not the last-three-letters key of {path.name}")
        keys = map_array(keys_path(path)) if keys_path(path).exists() else None
        try:
            speller = cls(table=table, tail3=tail3, keys=keys)
        except ValueError as e:
            if keys is None:
                raise
            raise ValueError(f"{keys_path(path).name}: {e}") from None
        for m in maps:
            m.advise("normal")
        return speller

    def save(self, path: str | Path) -> None:
        """The table, its :func:`tail3_table` and the prefix keys of its sorted columns (one
        uint64 array, ``.keys.npy``): a process opening it looks words up at once, where making
        the keys read a page of each column for every 16 words (at 10M entities, 36-93 ms in
        each of three of a fresh server's first hundred queries)."""
        path = Path(path)
        write_arrow(path, self.table)
        if self.tail3 is not None:
            write_arrow(tail3_path(path), self.tail3)
        else:  # not another table's key left beside this one
            tail3_path(path).unlink(missing_ok=True)
        save_array(keys_path(path), np.concatenate([c.prefix_keys for c in self._key_columns()]))

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and self.id(word) >= 0

    def id(self, word: str) -> int:
        """The word's position in the sorted vocabulary, -1 if it is not there."""
        return self.words.find(word)

    def _group(self, keys: Strings, perm: np.ndarray, key: str) -> np.ndarray:
        lo = keys.bisect_left(key)
        return perm[lo : keys.bisect_right(key, lo)]

    def correct(self, word: str, deadline: float | None = None) -> list[str]:
        """``[word]`` if known, else the closest spellings (ties all kept), else ``[]``; words of
        fewer than 4 letters and numbers are not corrected. ``deadline``: :func:`check_deadline`
        before the candidates are scored."""
        scored = self._scored(word, 3, deadline)
        if scored is None:
            return [word]
        return [w for s, w in scored if s >= scored[0][0] - 1e-9]

    def spellings(self, word: str, limit: int = 16, deadline: float | None = None) -> list[str]:
        """``[word]`` if known, else the words at the fewest edits from it (OSA distance; those
        :meth:`correct` would consider), up to ``limit``, the most similar first (then
        alphabetically); ``[]`` where :meth:`correct` finds none.

        What entity linking asks: a misspelt name's word may stand for any of them, and the
        rest of the name says which. :meth:`correct` keeps the three most similar, and its
        similarity, normalised by the longer word, ranks an added letter above a swap of two
        ("voumko": "volumko", "vovumko", "voyumko" over "vuomko"), while a 10M-entity world
        holds several words one edit from most misspellings (2026-11-29, misspelt names of
        the latency queries: the name's own spelling missing in 38 of the 55 found nowhere in
        the top 10)."""
        scored = self._scored(word, None, deadline)
        if scored is None:
            return [word]
        edits = [OSA.distance(word, w) for _, w in scored]
        fewest = min(edits, default=0)
        return [w for (_, w), d in zip(scored, edits) if d == fewest][:limit]

    def _scored(self, word: str, limit: int | None, deadline: float | None = None) -> list[tuple[float, str]] | None:
        """None if ``word`` is known; else (similarity, word) of the words a correction considers
        that reach MIN_SIMILARITY, the most similar first, then alphabetically, at most ``limit``
        (None: all); none for words of fewer than 4 letters and numbers."""
        if word in self:
            return None
        if len(word) < 4 or word.isdigit():
            return []
        check_deadline(deadline)
        ids = self._pool(word)
        check_deadline(deadline)
        if len(ids) > ONE_EDIT_POOL and (near := self._one_edit(word)):
            return sorted(near, key=lambda sw: (-sw[0], sw[1]))[:limit]
        pool = self.words.take(ids)  # sorted, as the words are
        hits = process.extract(word, pool, scorer=OSA.normalized_similarity, score_cutoff=MIN_SIMILARITY, limit=limit)
        return [(s, w) for w, s, _ in hits]

    def _pool(self, word: str) -> np.ndarray:
        """Ids of the words of length ±1 sharing ``word``'s first or last :func:`affix`
        letters, ascending: those a correction scores."""
        found = []
        prefixed: dict[int, tuple[int, int]] = {}  # h -> ids of the words starting with word[:h]
        for n in range(len(word) - 1, len(word) + 2):
            h = affix(n)
            head = self._group(self._head, self._head_word, f"{n:04d}|{word[0]}")
            if h > 1:  # a group's ids ascend; the words sharing the first h letters are a range of ids
                if h not in prefixed:
                    lo = self.words.bisect_left(word[:h])
                    prefixed[h] = lo, self.words.bisect_left(word[:h] + "\U0010ffff", lo)
                lo, hi = prefixed[h]
                head = head[np.searchsorted(head, lo) : np.searchsorted(head, hi)]
            if h > 2 and self.tail3 is not None:
                tail = self._group(self._tail3, self._tail3_word, f"{n:04d}|{word[-3:]}")
            else:
                tail = self._group(self._tail, self._tail_word, f"{n:04d}|{word[-2:]}")
                if h > 2 and len(tail):  # (a table saved without the key)
                    # kept by position: a boolean mask's to_numpy imports pandas, 0.17 s once
                    ends = pc.ends_with(self.words.arr.take(int64_array(tail)), word[-h:])
                    tail = tail[numpy_of(pc.indices_nonzero(ends), np.int64)]
            found += [head, tail]
        ids = np.sort(np.concatenate(found))
        return ids[np.r_[True, ids[1:] != ids[:-1]]] if len(ids) else ids  # (np.unique hashes: slower here)

    def _one_edit(self, word: str) -> list[tuple[float, str]]:
        """(similarity, word) of the vocabulary's words one edit from ``word`` (a letter dropped,
        added, changed, or two neighbours swapped) that score at least MIN_SIMILARITY: what
        :meth:`correct` finds best, where there are any, without scoring the whole pool. Such
        a word scores 1 - 1/len (the longer of the two), and a word two edits away at most
        1 - 2/(len + 1), which is less (the pool's lengths are ±1): so the best of the pool are
        then exactly the best of the words one edit away, all of which are in the pool
        (:func:`affix`). These are few, made from the word and the vocabulary's letters (about
        75 per letter of the word) and looked up together (:meth:`Strings.isin`): about 1 ms,
        where scoring a pool of 60,000 words (a common ending at 10M entities) took 10-20 ms."""
        near = list(_edits(word, self._letters))
        near = [w for w, hit in zip(near, self.words.isin(near)) if hit]
        scored = [(OSA.normalized_similarity(word, w, score_cutoff=MIN_SIMILARITY), w) for w in near]
        return [(s, w) for s, w in scored if s]

    @cached_property
    def _letters(self) -> str:
        """Every character some word of the vocabulary holds (read once from the column's
        buffers: 35-38 ms at 10M entities)."""
        return "".join(sorted(letters_of(self.words.arr)))


def _edits(word: str, letters: str) -> set[str]:
    """The strings one optimal-string-alignment edit from ``word`` over ``letters`` (and its
    own): each letter dropped, each pair of neighbours swapped, each letter changed to and each
    gap given one of ``letters``."""
    cuts = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    out = {a + b[1:] for a, b in cuts if b}
    out.update(a + b[1] + b[0] + b[2:] for a, b in cuts if len(b) > 1)
    out.update(a + c + b[1:] for a, b in cuts if b for c in letters)
    out.update(a + c + b for a, b in cuts for c in letters)
    out.discard(word)
    return out


_PLAIN = "0123456789abcdefghijklmnopqrstuvwxyz"  # taken as letters of every vocabulary


def letters_of(column: pa.Array | pa.ChunkedArray) -> set[str]:
    """The characters of a string column, and digits and a-z whether it holds them or not:
    what is left of its bytes when those are deleted (``bytes.translate``: 20 ms for the 30 MB
    of a 10M world's words, where counting every byte in NumPy took 170-570 ms), read as text."""
    out = set(_PLAIN)
    for chunk in column.chunks if isinstance(column, pa.ChunkedArray) else [column]:
        _, offsets, data = chunk.buffers()
        if not len(chunk) or data is None:
            continue
        offs = np.frombuffer(offsets, np.int64 if pa.types.is_large_string(chunk.type) else np.int32)
        lo, hi = (int(x) for x in offs[[chunk.offset, chunk.offset + len(chunk)]])
        out.update(bytes(memoryview(data)[lo:hi]).translate(None, _PLAIN.encode()).decode())
    return out


SPELLER_SCHEMA = pa.schema(
    [
        ("word", pa.string()),
        ("head_key", pa.string()),
        ("head_word", pa.int32()),
        ("tail_key", pa.string()),
        ("tail_word", pa.int32()),
    ]
)


def speller_table(vocab: Iterable[str] | pa.Array, *, sorted_unique: bool = False) -> pa.Table:
    """The :class:`Speller` table of ``vocab`` (empty words dropped), computed in Arrow."""
    arr = vocab if isinstance(vocab, pa.Array | pa.ChunkedArray) else pa.array(list(vocab), pa.string())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if not sorted_unique:
        arr = pc.unique(arr)
        arr = arr.take(pc.sort_indices(arr))
    arr = arr.filter(pc.greater(pc.utf8_length(arr), 0))
    head, head_word = _keyed(arr, pc.utf8_slice_codeunits(arr, 0, 1))
    tail, tail_word = _keyed(arr, pc.utf8_slice_codeunits(arr, -2))
    return pa.Table.from_arrays([arr, head, head_word, tail, tail_word], schema=SPELLER_SCHEMA)


def _keyed(words: pa.Array, part: pa.Array, ids: pa.Array | None = None) -> tuple[pa.Array, pa.Array]:
    """Keys "length|part" of ``words`` sorted, and the word id of each: ``ids`` (ascending),
    else the words' positions. The sort is stable, so a group's ids ascend."""
    length = pc.utf8_lpad(pc.cast(pc.utf8_length(words), pa.string()), 4, "0")
    key = pc.binary_join_element_wise(length, part, "|")
    order = pc.sort_indices(key)
    return key.take(order), pc.cast(order if ids is None else ids.take(order), pa.int32())


TAIL3_SCHEMA = pa.schema([("key", pa.string()), ("word", pa.int32())])
TAIL3_MIN = 7  # letters: the words whose last three letters a candidate must share (affix)


def keys_path(path: Path) -> Path:
    """Where the prefix keys of the speller table at ``path`` are saved (:meth:`Speller.save`)."""
    return path.with_name(path.stem + ".keys.npy")


def _split_keys(keys: np.ndarray, lengths: list[int]) -> list[np.ndarray]:
    """Saved prefix keys cut into each column's (one per ``Strings.STRIDE`` strings)."""
    sizes = [-(-n // Strings.STRIDE) for n in lengths]
    if keys.ndim != 1 or len(keys) != sum(sizes):
        raise ValueError(f"{len(keys):,} prefix keys for columns that have {sum(sizes):,}")
    return np.split(keys, np.cumsum(sizes)[:-1])


def tail3_path(path: Path) -> Path:
    """Where the :func:`tail3_table` of the speller table at ``path`` is saved."""
    return path.with_name(path.stem + ".tail3.arrow")


def tail3_table(words: pa.Array | pa.ChunkedArray) -> pa.Table:
    """The words of ``TAIL3_MIN`` letters or more keyed "length|last three letters", sorted by
    key; within a key the word ids ascend (a stable sort of ascending ids)."""
    if isinstance(words, pa.ChunkedArray):
        words = words.combine_chunks()
    ids = pc.indices_nonzero(pc.greater_equal(pc.utf8_length(words), TAIL3_MIN))
    long = words.take(ids)
    return pa.Table.from_arrays(list(_keyed(long, pc.utf8_slice_codeunits(long, -3), ids)), schema=TAIL3_SCHEMA)
