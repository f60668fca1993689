"""Arrow columns read value by value, checked as they are read: :class:`Strings` (a column's
values without building them, with a fast bisect of a sorted string column) and
:func:`offsets_fit` (a chunk's offsets, before its first value is read: a damaged file's
otherwise abort the process)."""

from __future__ import annotations

import bisect
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from fictionworld.reading import WorldFormatError
from fictionworld.web.arrow import int64_array

__all__ = ["Strings", "DamagedArrow", "offsets_fit"]


class DamagedArrow(WorldFormatError):
    """An Arrow array whose offsets point outside its data (a damaged file)."""


_LARGE = (pa.types.is_large_string, pa.types.is_large_binary, pa.types.is_large_list)
_VARIABLE = (pa.types.is_string, pa.types.is_binary, pa.types.is_list, *_LARGE)


def offsets_fit(arr: pa.Array) -> bool:
    """Whether the offsets of ``arr``'s variable-length values (strings, binaries, lists, and
    in turn their values') start at or after 0, never fall, and end within its data. pyarrow
    trusts them when it reads a value, and a memory-mapped file is not validated when opened:
    damaged ones abort the process (``std::length_error``) or read outside the file. Reads the
    offsets only (about 4 bytes a row), never the data."""
    t = arr.type
    if not any(is_(t) for is_ in _VARIABLE) or len(arr) == 0:
        return True
    listed = pa.types.is_list(t) or pa.types.is_large_list(t)
    buffers = arr.buffers()
    try:
        offsets = np.frombuffer(buffers[1], np.int64 if any(is_(t) for is_ in _LARGE) else np.int32)
    except (TypeError, ValueError):  # no buffer, or one of a size no offsets have
        return False
    if len(offsets) < arr.offset + len(arr) + 1:
        return False
    o = offsets[arr.offset : arr.offset + len(arr) + 1]
    end = len(arr.values) if listed else (buffers[2].size if buffers[2] is not None else 0)
    if o[0] < 0 or o[-1] > end or (np.diff(o) < 0).any():
        return False
    return not listed or offsets_fit(arr.values)


class Strings(Sequence):
    """A read-only sequence of str over an Arrow string column (memory-mapped or not):
    ``strings[i]`` reads one value, so nothing is built per row up front.

    :meth:`bisect_left` / :meth:`bisect_right` search a sorted column: by the first 8 bytes
    of every ``STRIDE``-th string first (one ``searchsorted`` over a uint64 array, given as
    saved or made with array operations on first use: 19 ms for the 3.2M words of a 10M world,
    where a key for every word took 0.6–1.0 s), then among the strings between (a few, unless
    many share those bytes); a plain ``bisect`` would read about 20 strings through Python for
    a million."""

    __slots__ = ("arr", "_keys", "_chunks", "_starts", "_ok", "what")
    STRIDE = 16  # one key per this many strings

    def __init__(self, column: pa.Array | pa.ChunkedArray, keys: np.ndarray | None = None, what: str = "a column"):
        """``keys``: :attr:`prefix_keys` as saved (checked here); default: made on first use.
        ``what``: the column, for the error a damaged chunk gives (each chunk's offsets are
        checked before its first value is read: :func:`offsets_fit`). Any column reads as its
        values (``as_py``), not only strings."""
        if isinstance(column, pa.ChunkedArray) and column.num_chunks == 1:
            column = column.chunk(0)
        self.arr, self.what = column, what
        self._keys: np.ndarray | None = None
        # A chunked column's values are read from their chunk, found by a bisect of the chunks'
        # first rows: the ChunkedArray's own lookup costs 2-3 us more per value (a page's text
        # 5.9 against 2.6 us over the 40 batches of a 1M world's pages)
        self._chunks = column.chunks if isinstance(column, pa.ChunkedArray) else None
        self._starts = np.cumsum([0, *map(len, self._chunks)]).tolist() if self._chunks is not None else None
        self._ok = [False] * (len(self._chunks) if self._chunks is not None else 1)  # chunks whose offsets fit
        if keys is not None:
            self._keys = self._checked(keys)

    def _chunk(self, c: int) -> pa.Array:
        """Chunk ``c`` (0: the array, unchunked), its offsets checked the first time."""
        chunk = self.arr if self._chunks is None else self._chunks[c]
        if not self._ok[c]:
            if not offsets_fit(chunk):
                raise DamagedArrow(f"{self.what}: record batch {c} is damaged (its offsets point outside its data)")
            self._ok[c] = True
        return chunk

    def _check_rows(self, a: int, b: int) -> None:
        """The chunks holding rows [a, b), checked."""
        if self._chunks is None:
            self._chunk(0)
            return
        for c in range(max(bisect.bisect_right(self._starts, a) - 1, 0), len(self._chunks)):
            if self._starts[c] >= b:
                break
            self._chunk(c)

    def scalar(self, i: int) -> pa.Scalar:
        """Row ``i`` as an Arrow scalar, from its checked chunk."""
        if self._chunks is None:
            return self._chunk(0)[i]
        starts = self._starts
        if i < 0:
            i += starts[-1]
        if not 0 <= i < starts[-1]:
            raise IndexError(f"index {i} out of range for {starts[-1]} strings")
        c = bisect.bisect_right(starts, i) - 1  # (an empty chunk starts where the next does)
        return self._chunk(c)[i - starts[c]]

    @property
    def prefix_keys(self) -> np.ndarray:
        """The first 8 UTF-8 bytes of every ``STRIDE``-th string, as big-endian uint64: what
        :meth:`bisect_left` narrows by. Made on first use (at 10M entities 13-93 ms for each of
        a speller's columns, most of it reading pages of the column for the first time), unless
        given saved (:meth:`Speller.save`)."""
        if self._keys is None:
            self._keys = _prefix_keys(self.arr, self.STRIDE)
        return self._keys

    def _checked(self, keys: np.ndarray) -> np.ndarray:
        """``keys`` if they are this column's, as far as a few reads can tell: one per stride,
        uint64, ascending, and equal to the strings' at 17 rows spread over the column."""
        n = -(-len(self) // self.STRIDE)
        if keys.shape != (n,) or keys.dtype != np.uint64:
            raise ValueError(f"not the prefix keys of {len(self):,} strings (shape {keys.shape}, {keys.dtype})")
        at = np.unique(np.linspace(0, n - 1, 17).astype(np.int64)) if n else np.zeros(0, np.int64)
        if (n and (keys[1:] < keys[:-1]).any()) or any(
            keys[k] != _prefix_key(self[int(k) * self.STRIDE]) for k in at.tolist()
        ):
            raise ValueError(f"not the prefix keys of these {len(self):,} strings")
        return keys

    def __len__(self) -> int:
        return len(self.arr)

    def __getitem__(self, i):
        if isinstance(i, slice):
            self._check_rows(0, len(self))
            return self.arr[i].to_pylist()
        return self.scalar(i).as_py()

    def __iter__(self):
        n = len(self.arr)
        self._check_rows(0, n)
        for lo in range(0, n, 65_536):
            yield from self.arr.slice(lo, 65_536).to_pylist()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Strings):
            self._check_rows(0, len(self))
            other._check_rows(0, len(other))
            return self.arr.equals(other.arr)
        return isinstance(other, Sequence) and len(other) == len(self) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def take(self, rows) -> list[str]:
        return self._take(np.asarray(rows, np.int64)).to_pylist()

    def _take(self, rows: np.ndarray) -> pa.Array:
        """Rows ``rows`` as one array, taken chunk by chunk from a chunked column (a
        ``ChunkedArray.take`` may first join its chunks: a copy of the whole column)."""
        if self._chunks is None:
            return self._chunk(0).take(int64_array(rows))
        if not len(rows) or not self._chunks:
            return self._chunks[0].slice(0, 0) if self._chunks else pa.array([], self.arr.type)
        starts = np.asarray(self._starts, np.int64)
        order = np.argsort(rows, kind="stable")
        chunk = np.searchsorted(starts, rows[order], "right") - 1
        cuts = np.flatnonzero(np.r_[True, chunk[1:] != chunk[:-1], True])
        parts = [
            self._chunk(int(chunk[a])).take(int64_array(rows[order[a:b]] - starts[chunk[a]]))
            for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist())
        ]
        got = pa.concat_arrays(parts)
        return got.take(int64_array(np.argsort(order, kind="stable")))  # (back in the order asked)

    def bisect_left(self, x: str, lo: int = 0, hi: int | None = None) -> int:
        """``bisect.bisect_left(self, x, lo, hi)`` of a sorted column, faster."""
        a, b = self._narrow(x, lo, len(self) if hi is None else hi)
        window = self._window(a, b)
        return bisect.bisect_left(self, x, a, b) if window is None else a + bisect.bisect_left(window, x)

    def bisect_right(self, x: str, lo: int = 0, hi: int | None = None) -> int:
        """``bisect.bisect_right(self, x, lo, hi)`` of a sorted column, faster."""
        a, b = self._narrow(x, lo, len(self) if hi is None else hi)
        window = self._window(a, b)
        return bisect.bisect_right(self, x, a, b) if window is None else a + bisect.bisect_right(window, x)

    def find(self, x: str) -> int:
        """The row of ``x`` in a sorted column (its first, if repeated), or -1."""
        a, b = self._narrow(x, 0, len(self))
        window = self._window(a, b)
        if window is None:
            i = bisect.bisect_left(self, x, a, b)
            return i if i < len(self) and self[i] == x else -1
        i = bisect.bisect_left(window, x)
        return a + i if i < len(window) and window[i] == x else -1

    def isin(self, xs: Sequence[str]) -> np.ndarray:
        """Which of ``xs`` a sorted column holds: ``[self.find(x) >= 0 for x in xs]`` in array
        operations. Each string's rows are narrowed by its first 8 bytes as in :meth:`find`;
        the rows of all the windows are taken in one call, and only rows whose first 8 bytes
        and length are the string's are compared whole (hundreds of strings in about a
        millisecond, where :meth:`find` costs 3-5 us each)."""
        enc = [x.encode() for x in xs]
        hit = np.zeros(len(enc), bool)
        if not enc or not len(self):
            return hit
        keys = np.frombuffer(b"".join(b[:8].ljust(8, b"\0") for b in enc), ">u8").astype(np.uint64)
        step, stride_keys = self.STRIDE, self.prefix_keys
        before, after = stride_keys.searchsorted(keys, "left"), stride_keys.searchsorted(keys, "right")
        lo = np.where(before > 0, (before - 1) * step + 1, 0)
        width = np.maximum(np.minimum(after * step, len(self)) - lo, 0)
        owner = np.repeat(np.arange(len(enc)), width)
        rows = np.repeat(lo - (np.cumsum(width) - width), width) + np.arange(len(owner))
        got = self._take(rows)
        _, offsets, data = got.buffers()
        offsets = np.frombuffer(offsets, np.int64 if pa.types.is_large_string(got.type) else np.int32)
        offsets = offsets[got.offset : got.offset + len(got) + 1]
        size = np.array([len(b) for b in enc], np.int64)
        same = np.flatnonzero(np.diff(offsets) == size[owner])  # rows as long as the string they may be
        if not len(same):
            return hit
        # each row's first 8 bytes (and whatever follows a shorter row, masked off), gathered at once
        padded = np.concatenate([np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8), _ZERO8])
        eight = np.lib.stride_tricks.as_strided(padded, (len(padded) - 7, 8), (1, 1), writeable=False)
        first = np.ascontiguousarray(eight[offsets[same]]).view(">u8").ravel()
        same = same[(first & _MASKS[np.minimum(size[owner[same]], 8)]) == keys[owner[same]]]
        for i in same.tolist():  # (the same first 8 bytes and length: compared whole when longer)
            if not hit[owner[i]] and (size[owner[i]] <= 8 or got[i].as_py() == xs[owner[i]]):
                hit[owner[i]] = True
        return hit

    def _window(self, a: int, b: int) -> list[str] | None:
        """Rows [a, b) read in one call, when they are few (a narrowed range is at most two
        strides, unless many strings share their first 8 bytes): one slice costs about what
        one string read alone does, where a bisect reads four or five."""
        if b - a > 4 * self.STRIDE:
            return None
        self._check_rows(a, b)
        return self.arr.slice(a, b - a).to_pylist()

    def _narrow(self, x: str, lo: int, hi: int) -> tuple[int, int]:
        """Rows [a, b) within [lo, hi) such that every row of [lo, a) sorts before ``x`` and
        every row of [b, hi) after it: by the keys of every ``STRIDE``-th row, a key smaller
        than ``x``'s sorting before it, a greater one after (UTF-8 keeps code point order)."""
        step = self.STRIDE
        keys = self.prefix_keys
        k = _prefix_key(x)
        # (the array's method: the np.searchsorted wrapper costs three times as much per call)
        before = int(keys.searchsorted(k, "left"))  # keyed rows sorting before x
        after = int(keys.searchsorted(k, "right"))  # the first keyed row after x
        a = (before - 1) * step + 1 if before else 0
        b = min(after * step, len(self))
        a = min(max(lo, a), hi)
        return a, max(min(hi, b), a)


_SHIFTS = np.arange(56, -1, -8, dtype=np.uint64)
_ZERO8 = np.zeros(8, np.uint8)
# _MASKS[n]: the first n of 8 big-endian bytes
_MASKS = np.array([((1 << 64) - 1) ^ ((1 << (64 - 8 * n)) - 1) for n in range(9)], np.uint64)


def _prefix_key(x: str) -> np.uint64:
    return np.uint64(int.from_bytes(x.encode()[:8].ljust(8, b"\0"), "big"))


def _prefix_keys(column: pa.Array | pa.ChunkedArray, every: int = 1, rows: int = 1 << 20) -> np.ndarray:
    """The first 8 UTF-8 bytes of every ``every``-th string (rows 0, every, 2 * every, …) as
    a big-endian uint64 (zero-padded), read from the Arrow buffers ``rows`` strings at a time."""
    out = []
    base = 0  # the column's row of the chunk's first
    for chunk in column.chunks if isinstance(column, pa.ChunkedArray) else [column]:
        wide = pa.types.is_large_string(chunk.type)
        _, offsets, data = chunk.buffers()
        offs = np.frombuffer(offsets, np.int64 if wide else np.int32)[chunk.offset : chunk.offset + len(chunk) + 1]
        data = np.frombuffer(data, np.uint8) if data is not None and data.size else np.zeros(1, np.uint8)
        picked = np.arange((-base) % every, len(chunk), every)
        base += len(chunk)
        for a in range(0, len(picked), rows):
            at_row = picked[a : a + rows]
            start, end = offs[at_row].astype(np.int64), offs[at_row + 1].astype(np.int64)
            at = start[:, None] + np.arange(8)
            byte = np.where(at < end[:, None], data[np.minimum(at, len(data) - 1)], 0).astype(np.uint64)
            out.append(np.bitwise_or.reduce(byte << _SHIFTS, axis=1))
    return np.concatenate(out) if out else np.zeros(0, np.uint64)
