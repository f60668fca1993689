"""Arrow files of a web (pages, speller tables, entity names), read memory-mapped, and a
sequence view over a string column that reads one value at a time."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

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
    ``strings[i]`` reads one value, so nothing is built per row up front."""

    __slots__ = ("arr",)

    def __init__(self, column: pa.Array | pa.ChunkedArray):
        if isinstance(column, pa.ChunkedArray) and column.num_chunks == 1:
            column = column.chunk(0)
        self.arr = column

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
