"""Arrow files of a web (pages, speller tables, entity names), read memory-mapped, and a
sequence view over a string column that reads one value at a time."""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

__all__ = [
    "MappedArrow", "batch_blocks", "choose_access", "int64_array", "numpy_of", "read_arrow", "write_arrow",
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
