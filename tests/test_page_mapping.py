"""The pages file of a saved web is mapped for random access (searches read ten pages anywhere in
it), and read ahead only while a caller scans it in order."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest
from build_helpers import resident_bytes
from web_helpers import unrecorded

import fictionworld as fw
from fictionworld.web import Web
from fictionworld.web.arrow import MappedArrow, batch_blocks, choose_access, read_arrow
from fictionworld.web.pages import PageTable
from fictionworld.web.web import WebError


def _vm_flags(path: Path) -> list[set[str]]:
    """The kernel's flags of each mapping of ``path`` in this process (Linux /proc/self/smaps)."""
    out, current = [], None
    for line in Path("/proc/self/smaps").read_text().splitlines():
        if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
            parts = line.split(maxsplit=5)
            current = parts[5] if len(parts) > 5 else ""
        elif line.startswith("VmFlags:") and current == str(path):
            out.append(set(line.split()[1:]))
    return out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the kernel's flags in /proc/self/smaps")
def test_pages_are_mapped_for_random_reads_and_scanned_with_read_ahead(saved_world, tmp_path):
    # A copy of its own: the session's world may be mapped already by a test run before in this
    # process (a pytest-xdist worker runs whole files one after another), and its flags counted too.
    saved_world = Path(shutil.copytree(saved_world, tmp_path / "w"))
    path = (saved_world / "pages.arrow").resolve()
    pages = PageTable.load(path, "random")
    assert pages.mapped is not None and pages.mapped.access == "random"
    # "rr": MADV_RANDOM (no read-ahead around a fault); "sr": MADV_SEQUENTIAL
    assert [f & {"rr", "sr"} for f in _vm_flags(path)] == [{"rr"}]
    with pages.scanning():
        assert [f & {"rr", "sr"} for f in _vm_flags(path)] == [{"sr"}]
    assert [f & {"rr", "sr"} for f in _vm_flags(path)] == [{"rr"}]
    with pytest.raises(RuntimeError):  # advice is restored when the scan fails too
        with pages.scanning():
            raise RuntimeError
    assert [f & {"rr", "sr"} for f in _vm_flags(path)] == [{"rr"}]
    # A world opened as by default: its pages file, a few MiB, fits in memory many times over,
    # so it keeps the kernel's default read-ahead (a second mapping, without either flag).
    world = fw.World.load(saved_world)
    assert world.web.pages.mapped.access == "normal"
    assert sorted(len(f & {"rr", "sr"}) for f in _vm_flags(path)) == [0, 1]


def test_auto_maps_for_random_reads_only_a_file_the_page_cache_cannot_hold():
    gib = 2**30
    assert choose_access(int(18.1 * gib), 22 * gib) == "random"  # the 10M world's pages here
    assert choose_access(int(1.8 * gib), 22 * gib) == "normal"  # the 1M world's
    assert choose_access(2 * gib, 3 * gib) == "random"  # the same, with little memory left
    assert choose_access(0, 0) == "normal"


def test_mapped_pages_read_as_arrow_maps_them(saved_world):
    """Every column of every page, read through the advised mapping, is what Arrow's own memory
    map reads; and the search results are the same."""
    world = fw.World.load(saved_world)
    assert world.web.pages.table.equals(read_arrow(saved_world / "pages.arrow"))
    mapped = MappedArrow(saved_world / "pages.arrow", "sequential")
    assert mapped.table.equals(world.web.pages.table)
    with pytest.raises(ValueError, match="access must be"):
        MappedArrow(saved_world / "pages.arrow", "backwards")


@pytest.mark.parametrize("content", [b"", b"ARROW1\0\0garbage"])
def test_an_empty_or_broken_pages_file_is_a_clear_error(saved_world, tmp_path, content):
    d = tmp_path / "w"
    shutil.copytree(saved_world, d)
    (d / "pages.arrow").write_bytes(content)
    with pytest.raises(WebError, match="pages.arrow has another size than web.json records"):
        Web.load(fw.World.load(d), d)
    with pytest.raises(WebError, match="pages.arrow: unreadable"):
        Web.load(fw.World.load(d), unrecorded(d))


def _batches_file(path: Path, sizes: list[int]) -> pa.Table:
    t = pa.table(
        {"n": pa.array(range(sum(sizes)), pa.int64()), "s": pa.array([f"row {i}" * (i % 7) for i in range(sum(sizes))])}
    )
    with pa.OSFile(str(path), "wb") as sink, ipc.new_file(sink, t.schema) as w:
        at = 0
        for n in sizes:  # one batch each, empty ones too
            w.write_batch(pa.record_batch([c.slice(at, n).combine_chunks() for c in t.columns], schema=t.schema))
            at += n
    return t


@pytest.mark.parametrize("sizes", [[5], [3, 0, 7, 1000], [1] * 40])
def test_batch_blocks_are_where_the_batches_are(tmp_path, saved_world, sizes):
    """The footer's blocks, read without pyarrow: one per batch, each batch's buffers inside its
    body, right after its header; the pages file of a saved world too."""
    for path in [tmp_path / "t.arrow", saved_world / "pages.arrow"]:
        if path.name == "t.arrow":
            _batches_file(path, sizes)
        data = path.read_bytes()
        mapped = MappedArrow(path, "random")
        buf = pa.py_buffer(data)
        batches = ipc.open_file(pa.BufferReader(buf)).read_all().to_batches()
        blocks = batch_blocks(data)
        assert len(blocks) == ipc.open_file(pa.BufferReader(buf)).num_record_batches
        for (offset, meta, body), batch in zip(blocks, batches):
            spans = [
                (b.address - buf.address, b.size)
                for c in batch.columns
                for b in c.buffers()
                if b is not None and b.size
            ]
            assert all(offset + meta <= a and a + n <= offset + meta + body for a, n in spans)
        ends = [8] + [o + m + b for o, m, b in blocks]  # after "ARROW1" and its padding, in order
        assert all(end <= o for end, (o, _, _) in zip(ends, blocks))
        assert mapped.will_need(["text"] if path.name == "pages.arrow" else ["s", "n"]) > 0


def test_batch_blocks_of_anything_else_is_empty_never_an_error(tmp_path):
    """Only a hint: truncated, corrupted or foreign bytes give [] (or blocks inside the file)."""
    path = tmp_path / "t.arrow"
    _batches_file(path, [10, 20, 30])
    data = path.read_bytes()
    assert len(batch_blocks(data)) == 3
    rng = np.random.default_rng(0)
    for _ in range(2_000):
        broken = bytearray(data)
        kind = rng.integers(3)
        if kind == 0:
            broken = broken[: rng.integers(len(broken))] + b"ARROW1"[: rng.integers(7)]
        else:
            for at in rng.integers(max(0, len(broken) - 400), len(broken), rng.integers(1, 6)):
                broken[at] = rng.integers(256)
        blocks = batch_blocks(bytes(broken))
        assert all(0 <= o and 0 <= m and 0 <= b and o + m + b <= len(broken) for o, m, b in blocks)
    assert batch_blocks(b"") == batch_blocks(b"ARROW1") == batch_blocks(b"x" * 100) == []


def _write_chunks(path: Path, type_, chunks: list[list]) -> None:
    schema = pa.schema([("v", type_), ("n", pa.int32())])
    with pa.OSFile(str(path), "wb") as sink, ipc.new_file(sink, schema) as writer:
        for values in chunks:
            writer.write_batch(pa.record_batch([pa.array(values, type_), pa.array(range(len(values)), pa.int32())], schema=schema))  # fmt: skip


@pytest.mark.parametrize("type_", [pa.string(), pa.large_string(), pa.binary(), pa.large_binary()])
def test_take_reads_the_rows_arrow_takes(tmp_path, type_):
    """``MappedArrow.take`` (rows read from the file, not through the mapping) gives what
    ``ChunkedArray.take`` gives: empty values, non-ASCII text, empty record batches, rows at
    both ends of every batch, none at all."""
    rng = np.random.default_rng(3)
    strings = pa.types.is_string(type_) or pa.types.is_large_string(type_)

    def value(i: int):
        text = "" if i % 7 == 0 else f"página {i} " + "ü€" * int(rng.integers(0, 40))
        return text if strings else text.encode()

    sizes = [5, 0, 1, 300, 2, 0, 57]
    chunks, at = [], 0
    for n in sizes:
        chunks.append([value(at + i) for i in range(n)])
        at += n
    path = tmp_path / "v.arrow"
    _write_chunks(path, type_, chunks)
    mapped = MappedArrow(path, "random")
    column = mapped.table.column("v")
    ends = np.cumsum(sizes)
    picks = [
        np.arange(at),
        np.unique(np.concatenate([ends[ends > 0] - 1, (ends - np.array(sizes))[np.array(sizes) > 0]])),
        np.sort(rng.choice(at, 40, replace=False)),
        np.array([], np.int64),
        np.array([at - 1]),
    ]
    for rows in picks:
        got = mapped.take("v", rows)
        assert got.type == type_
        assert got.equals(column.take(pa.array(rows, pa.int64())).combine_chunks())


def test_take_refuses_what_it_cannot_read(tmp_path):
    path = tmp_path / "v.arrow"
    _write_chunks(path, pa.string(), [["a", "b"], ["c"]])
    mapped = MappedArrow(path, "random")
    for rows in ([2, 1], [-1], [3], [0, 5]):
        with pytest.raises(IndexError, match="sorted and within"):
            mapped.take("v", rows)
    with pytest.raises(ValueError, match="string or binary"):
        mapped.take("n", [0])
    _write_chunks(path, pa.string(), [["a", None]])
    with pytest.raises(ValueError, match="without nulls"):
        MappedArrow(path, "random").take("v", [0])


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads the kernel's resident pages in /proc/self/smaps"
)
def test_take_leaves_the_file_unmapped_where_arrow_maps_it(tmp_path):
    """A sample of rows of a file the page cache holds: ``take`` brings none of the file into
    the process (``ChunkedArray.take`` of pyarrow 26 brings in most of it: it joins the chunks
    first)."""
    path = (tmp_path / "big.arrow").resolve()
    rng = np.random.default_rng(0)
    words = np.array([f"w{i}" for i in range(1000)])
    chunks = [[" ".join(rng.choice(words, 400)) for _ in range(1000)] for _ in range(16)]  # ~30 MB
    _write_chunks(path, pa.large_string(), chunks)
    size = path.stat().st_size

    rows = np.linspace(0, 16_000 - 1, 200).astype(np.int64)
    mapped = MappedArrow(path, "normal")
    ours = mapped.take("v", rows)
    assert resident_bytes(path) < 0.05 * size
    assert ours.equals(mapped.table.column("v").take(pa.array(rows)).combine_chunks())
    assert sum(len(v) for v in mapped.table.column("v").to_pylist()) > 0  # every row read through the mapping
    assert resident_bytes(path) > 0.5 * size  # (so this test sees pages read through the mapping)


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads the kernel's resident pages in /proc/self/smaps"
)
def test_release_unmaps_what_was_read_and_the_table_reads_the_same_after(tmp_path):
    path = (tmp_path / "big.arrow").resolve()
    chunks = [[f"row {i} " * 50 for i in range(j * 1000, (j + 1) * 1000)] for j in range(16)]  # ~6 MB
    _write_chunks(path, pa.string(), chunks)
    mapped = MappedArrow(path, "normal")
    before = mapped.table.column("v").to_pylist()  # every page read
    assert resident_bytes(path) > 0.5 * path.stat().st_size
    assert mapped.release()
    assert resident_bytes(path) < 0.05 * path.stat().st_size
    assert mapped.table.column("v").to_pylist() == before  # read again, through the same mapping
    assert resident_bytes(path) > 0.5 * path.stat().st_size
