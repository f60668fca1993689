"""Arrow files of a web (pages, speller tables, entity names), read memory-mapped, and a
sequence view over a string column that reads one value at a time."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

__all__ = ["Strings", "read_arrow", "write_arrow"]


def read_arrow(path: str | Path) -> pa.Table:
    """The table of an Arrow IPC file, memory-mapped: O(1) in its size."""
    return ipc.open_file(pa.memory_map(str(path), "r")).read_all()


def write_arrow(path: str | Path, table: pa.Table, max_chunksize: int | None = None) -> None:
    """``table`` as an Arrow IPC file (record batches of at most ``max_chunksize`` rows)."""
    with pa.OSFile(str(path), "wb") as sink, ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=max_chunksize)


class Strings(Sequence):
    """A read-only sequence of str over an Arrow string column (memory-mapped or not):
    ``strings[i]`` reads one value, so nothing is built per row up front.

    :meth:`bisect_left` / :meth:`bisect_right` search a sorted column: by the first 8 bytes
    of each string first (one ``searchsorted`` over a uint64 array, made with array
    operations on first use), then among the few strings sharing those bytes; a plain
    ``bisect`` would read about 20 strings through Python for a million."""

    __slots__ = ("arr", "_keys")

    def __init__(self, column: pa.Array | pa.ChunkedArray):
        if isinstance(column, pa.ChunkedArray) and column.num_chunks == 1:
            column = column.chunk(0)
        self.arr = column
        self._keys: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.arr)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return self.arr[i].to_pylist()
        return self.arr[i].as_py()

    def __iter__(self):
        n = len(self.arr)
        for lo in range(0, n, 65_536):
            yield from self.arr.slice(lo, 65_536).to_pylist()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Strings):
            return self.arr.equals(other.arr)
        return isinstance(other, Sequence) and len(other) == len(self) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def take(self, rows) -> list[str]:
        return self.arr.take(pa.array(rows, pa.int64())).to_pylist()

    def bisect_left(self, x: str, lo: int = 0, hi: int | None = None) -> int:
        """``bisect.bisect_left(self, x, lo, hi)`` of a sorted column, faster."""
        a, b = self._narrow(x, lo, len(self) if hi is None else hi)
        return bisect.bisect_left(self, x, a, b)

    def bisect_right(self, x: str, lo: int = 0, hi: int | None = None) -> int:
        """``bisect.bisect_right(self, x, lo, hi)`` of a sorted column, faster."""
        a, b = self._narrow(x, lo, len(self) if hi is None else hi)
        return bisect.bisect_right(self, x, a, b)

    def _narrow(self, x: str, lo: int, hi: int) -> tuple[int, int]:
        """The rows of [lo, hi) whose first 8 bytes are those of ``x``: every row before them
        sorts before ``x``, every row after them after it (UTF-8 keeps code point order)."""
        if self._keys is None:
            self._keys = _prefix_keys(self.arr)
        keys, k = self._keys[lo:hi], _prefix_key(x)
        return lo + int(np.searchsorted(keys, k, "left")), lo + int(np.searchsorted(keys, k, "right"))


_SHIFTS = np.arange(56, -1, -8, dtype=np.uint64)


def _prefix_key(x: str) -> np.uint64:
    return np.uint64(int.from_bytes(x.encode()[:8].ljust(8, b"\0"), "big"))


def _prefix_keys(column: pa.Array | pa.ChunkedArray, rows: int = 1 << 20) -> np.ndarray:
    """The first 8 UTF-8 bytes of every string as a big-endian uint64 (zero-padded), read
    from the Arrow buffers ``rows`` strings at a time."""
    out = []
    for chunk in column.chunks if isinstance(column, pa.ChunkedArray) else [column]:
        wide = pa.types.is_large_string(chunk.type)
        _, offsets, data = chunk.buffers()
        offs = np.frombuffer(offsets, np.int64 if wide else np.int32)[chunk.offset : chunk.offset + len(chunk) + 1]
        data = np.frombuffer(data, np.uint8) if data is not None and data.size else np.zeros(1, np.uint8)
        for a in range(0, len(chunk), rows):
            b = min(a + rows, len(chunk))
            start, end = offs[a:b].astype(np.int64), offs[a + 1 : b + 1].astype(np.int64)
            at = start[:, None] + np.arange(8)
            byte = np.where(at < end[:, None], data[np.minimum(at, len(data) - 1)], 0).astype(np.uint64)
            out.append(np.bitwise_or.reduce(byte << _SHIFTS, axis=1))
    return np.concatenate(out) if out else np.zeros(0, np.uint64)
