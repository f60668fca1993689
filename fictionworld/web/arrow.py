"""Arrow files of a web (pages, speller tables, entity names), read memory-mapped, and a
sequence view over a string column that reads one value at a time."""

from __future__ import annotations

import bisect
import mmap
import os
import struct
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from fictionworld.reading import WorldFormatError

__all__ = [
    "Strings", "MappedArrow", "DamagedArrow", "offsets_fit", "batch_blocks", "choose_access", "int64_array", "numpy_of",
    "read_arrow", "write_arrow",
]  # fmt: skip


def read_arrow(path: str | Path) -> pa.Table:
    """The table of an Arrow IPC file, memory-mapped: O(1) in its size."""
    return ipc.open_file(pa.memory_map(str(path), "r")).read_all()


_ADVICE = {"random": "MADV_RANDOM", "sequential": "MADV_SEQUENTIAL", "normal": "MADV_NORMAL"}


# "auto" maps a file for random reads when it is larger than this share of the memory available
# as it is opened: then the page cache cannot keep it, and read-ahead only evicts what searches
# read. A file that fits is read ahead as by default: its first searches bring large runs of it
# into the cache, and the later ones find it there.
RANDOM_BEYOND = 0.5


def choose_access(size: int, available: int) -> str:
    """The access "auto" picks for a file of ``size`` bytes with ``available`` bytes of memory."""
    return "random" if size > RANDOM_BEYOND * available else "normal"


def batch_blocks(data) -> list[tuple[int, int, int]]:
    """(offset, metadata length, body length) of every record batch of an Arrow IPC file, as
    its footer lists them (``data``: the file's bytes, e.g. a mapping), read off the footer's
    flatbuffer: pyarrow does not expose them. ``[]`` where the footer cannot be read so; a
    caller may use them only as a hint (which parts of the file to read ahead)."""
    try:
        n = len(data)
        if n < 16 or data[n - 6 :] != b"ARROW1":
            return []
        footer = n - 10 - struct.unpack_from("<i", data, n - 10)[0]
        table = footer + struct.unpack_from("<I", data, footer)[0]
        vtable = table - struct.unpack_from("<i", data, table)[0]
        fields = (struct.unpack_from("<H", data, vtable)[0] - 4) // 2
        if fields < 4:  # version, schema, dictionaries, recordBatches
            return []
        at = struct.unpack_from("<H", data, vtable + 4 + 2 * 3)[0]
        if not at:
            return []
        vector = table + at + struct.unpack_from("<I", data, table + at)[0]
        count = struct.unpack_from("<I", data, vector)[0]
        if not 0 <= footer < n or vector + 4 + 24 * count > n:
            return []
        blocks = [struct.unpack_from("<qi4xq", data, vector + 4 + 24 * i) for i in range(count)]
    except (struct.error, ValueError, IndexError, TypeError):
        return []
    if any(o < 0 or m < 0 or b < 0 or o + m + b > footer for o, m, b in blocks):
        return []
    return blocks


def _fadvise_will_need(fd: int, ranges: Iterable[tuple[int, int]]) -> None:
    """Ask the kernel to start reading these (offset, size) ranges of a file, where it can be asked."""
    advise = getattr(os, "posix_fadvise", None)
    if advise is not None:
        for offset, size in ranges:
            if size > 0:
                advise(fd, offset, size, os.POSIX_FADV_WILLNEED)


class MappedArrow:
    """An Arrow IPC file memory-mapped with an access pattern the kernel is told about.

    A page store is read at random: ten pages of a query, anywhere in the file. Left to its
    default, Linux reads ahead around every page fault of a file mapping, as far as the device's
    ``read_ahead_kb`` (8 MiB on this project's machine). For a file the page cache can hold,
    that is the fastest way to get it there (the 1M world's 1.8 GiB of pages). For one it cannot
    (18.1 GiB at 10M on a 24 GiB machine) each search that touched cold pages read about
    14 MiB, and evicted pages that later searches wanted: ``"random"`` (MADV_RANDOM) reads only
    the pages touched. ``"auto"`` (the default) picks one of those two by the file's size and
    the memory available (:func:`choose_access`); :meth:`scanning` turns read-ahead up while a
    caller reads the file in order. ``will_need``: columns the caller will read whole at once
    (:meth:`will_need`). Where ``madvise`` is missing (not POSIX) no advice is given."""

    def __init__(self, path: str | Path, access: str = "auto", will_need: Iterable[str] = ()):
        if access != "auto" and access not in _ADVICE:
            raise ValueError(f"access must be 'auto' or one of {sorted(_ADVICE)}, not {access!r}")
        with open(path, "rb") as f:
            size = f.seek(0, 2)
            self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else None
        if access == "auto":
            import psutil

            access = choose_access(size, psutil.virtual_memory().available)
        self.path, self.access = Path(path), access
        # An empty file cannot be mapped; Arrow reports it as not an Arrow file.
        buffer = pa.py_buffer(self._map) if self._map is not None else pa.py_buffer(b"")
        self._base = buffer.address
        # Reading the table reads every batch's header, scattered through the file: asked for
        # together, without read-ahead around each, the disk serves them side by side (at 10M,
        # 392 headers; a fresh process's first answer with the file not cached took 7.2-8.2 s
        # with read-ahead, 0.8-2.0 s so). The same for the columns the caller reads whole.
        if self.advise("random"):
            self._will_need((o, m) for o, m, _ in batch_blocks(self._map))
        self.table = ipc.open_file(pa.BufferReader(buffer)).read_all()
        self.will_need(will_need)
        self.advise(access)

    def will_need(self, columns: Iterable[str]) -> int:
        """Ask the kernel to start reading every buffer of ``columns`` now (MADV_WILLNEED), all
        at once; returns the bytes asked for. A column read whole through a mapping for random
        reads would otherwise fault in one page at a time, each waiting for the disk, and with
        read-ahead would read far around each of its batches."""
        return self._will_need(
            (buf.address - self._base, buf.size)
            for name in columns
            for chunk in self.table.column(name).chunks
            for buf in chunk.buffers()
            if buf is not None
        )

    def take(self, column: str, rows) -> pa.Array:
        """Rows ``rows`` (sorted) of a string or binary column, read from the file (``pread``)
        and not through the mapping, each once: their offsets, then their values, asked of the
        kernel together first (POSIX_FADV_WILLNEED), so that a cold file is read in parallel.

        For a sample of a large file: ``ChunkedArray.take`` of a string column joins its chunks
        first, reading the whole column (at 10M, the page join's 20,000 text samples read the
        text of every shard), and even a take per chunk leaves pages around each row mapped
        into the process (fault-around: 0.9 GiB for 20,000 rows of a file in the cache)."""
        col = self.table.column(column)
        type_ = col.type
        if not any(f(type_) for f in (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary, pa.types.is_large_binary)):  # fmt: skip
            raise ValueError(f"take reads a string or binary column, not {type_}")
        rows = np.asarray(rows, np.int64)
        if len(rows) and (rows[0] < 0 or rows[-1] >= len(col) or np.any(np.diff(rows) < 0)):
            raise IndexError(f"rows must be sorted and within the column's {len(col)} rows")
        if any(c.null_count for c in col.chunks):
            raise ValueError(f"take reads a column without nulls; {column!r} has some")
        wide = pa.types.is_large_string(type_) or pa.types.is_large_binary(type_)
        dtype = np.dtype(np.int64 if wide else np.int32)
        starts = np.cumsum([0, *(len(c) for c in col.chunks)])
        at_offsets, data_at = [], []  # per row: where its two offsets are, where its chunk's values start
        for i, chunk in enumerate(col.chunks):
            lo, hi = np.searchsorted(rows, [starts[i], starts[i + 1]])
            if hi > lo:
                buffers = chunk.buffers()
                where = buffers[1].address - self._base + (rows[lo:hi] - starts[i] + chunk.offset) * dtype.itemsize
                at_offsets.append(where)
                data_at.append(np.full(hi - lo, buffers[2].address - self._base if buffers[2] is not None else 0))
        with open(self.path, "rb") as f:
            fd = f.fileno()
            pairs = np.zeros((len(rows), 2), dtype)
            if len(rows):
                at_offsets = np.concatenate(at_offsets).tolist()
                _fadvise_will_need(fd, ((o, 2 * dtype.itemsize) for o in at_offsets))
                pairs = np.frombuffer(b"".join(os.pread(fd, 2 * dtype.itemsize, o) for o in at_offsets), dtype)
                pairs = pairs.reshape(-1, 2).astype(np.int64)
            sizes = pairs[:, 1] - pairs[:, 0]
            if np.any(sizes < 0):
                raise ValueError(f"{self.path}: column {column!r} has offsets out of order")
            where = (np.concatenate(data_at) + pairs[:, 0]).tolist() if len(rows) else []
            _fadvise_will_need(fd, zip(where, sizes.tolist()))
            data = b"".join(os.pread(fd, n, o) for o, n in zip(where, sizes.tolist()))
        if len(data) != int(sizes.sum()):
            raise ValueError(f"{self.path}: column {column!r} reaches past the end of the file")
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(dtype)
        out = pa.Array.from_buffers(type_, len(rows), [None, pa.py_buffer(offsets), pa.py_buffer(data)])
        out.validate(full=True)  # (UTF-8, for a string column)
        return out

    def _flag(self, name: str) -> int | None:
        """The ``madvise`` flag ``name``, or None where this mapping cannot be advised."""
        flag = getattr(mmap, name, None)
        return None if self._map is None or not hasattr(self._map, "madvise") else flag

    def _will_need(self, ranges: Iterable[tuple[int, int]]) -> int:
        flag = self._flag("MADV_WILLNEED")
        if flag is None:
            return 0
        asked = 0
        for start, size in ranges:
            if size > 0 and 0 <= start and start + size <= len(self._map):
                lo = start - start % mmap.PAGESIZE
                self._map.madvise(flag, lo, start + size - lo)
                asked += size
        return asked

    def advise(self, access: str) -> bool:
        """Tell the kernel how the mapping will be read next; whether it could be told."""
        flag = self._flag(_ADVICE[access])
        if flag is None:
            return False
        self._map.madvise(flag)
        return True

    def release(self) -> bool:
        """Unmap the pages this process has read (MADV_DONTNEED: a read-only mapping of a file
        loses nothing; they stay in the page cache and are mapped again when read), so that they
        no longer count in its RSS; whether it could be done."""
        flag = self._flag("MADV_DONTNEED")
        if flag is None:
            return False
        self._map.madvise(flag)
        return True

    @contextmanager
    def scanning(self) -> Iterator[None]:
        """Read ahead while the block runs (a caller reading every page in order), then back
        to the access the file was opened with."""
        self.advise("sequential")
        try:
            yield
        finally:
            self.advise(self.access)


def write_arrow(path: str | Path, table: pa.Table, max_chunksize: int | None = None) -> None:
    """``table`` as an Arrow IPC file (record batches of at most ``max_chunksize`` rows)."""
    with pa.OSFile(str(path), "wb") as sink, ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=max_chunksize)


def map_array(path: Path) -> np.ndarray:
    """The NumPy array saved at ``path``, memory-mapped, as a plain ndarray (indexing a memmap
    costs a Python call more); a ValueError naming the file when it holds no array."""
    try:
        return np.load(path, mmap_mode="r").view(np.ndarray)
    except (OSError, ValueError) as e:
        raise ValueError(f"{Path(path).name}: not a NumPy array ({e})") from None


def save_array(target: Path, array: np.ndarray) -> None:
    """``np.save`` beside ``target``, then moved there (a process mapping the file it
    replaces goes on reading the old one, never a half-written one)."""
    with open(f"{target}.tmp{os.getpid()}", "wb") as f:
        np.save(f, array)
    os.replace(f.name, target)


def numpy_of(column: pa.Array | pa.ChunkedArray, dtype) -> np.ndarray:
    """A fixed-width column without nulls (ints, floats, dates as their ``dtype`` integers) as
    one NumPy array, read off its buffers: pyarrow's ``to_numpy`` imports pandas on first use
    (0.24 s of a fresh process's first search)."""
    dtype = np.dtype(dtype)
    parts = []
    type_ = column.type
    if not pa.types.is_primitive(type_) or pa.types.is_boolean(type_) or type_.byte_width != dtype.itemsize:
        raise ValueError(f"a column of {type_} cannot be read as {dtype}")
    for chunk in column.chunks if isinstance(column, pa.ChunkedArray) else [column]:
        if chunk.null_count:
            raise ValueError(f"a column of {type_} with {chunk.null_count} nulls cannot be read as {dtype}")
        if len(chunk):
            parts.append(np.frombuffer(chunk.buffers()[1], dtype)[chunk.offset : chunk.offset + len(chunk)])
    return parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else np.zeros(0, dtype)


def int64_array(values) -> pa.Array:
    """``pa.array(values, pa.int64())`` for integers (a list or an array), made on their buffer.
    ``pa.array`` asks whether its input is a pandas object, which imports pandas the first time
    (0.17-0.3 s): a server's first misspelt query paid it. Search takes its indices here."""
    a = np.ascontiguousarray(values, np.int64)
    return pa.Array.from_buffers(pa.int64(), len(a), [None, pa.py_buffer(a)])


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
