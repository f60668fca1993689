"""A saved web's page text: one zstd frame per page with one dictionary for the web
(fictionworld/web/pagetext.py). Read back exactly, the same bytes however made, smaller than
the text, and a broken file refused by name."""

from __future__ import annotations

import base64
import os
import shutil
import threading

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest
from web_helpers import unrecorded

import fictionworld as fw
from fictionworld.reading import WorldFormatError
from fictionworld.web import Web
from fictionworld.web.arrow import read_arrow, write_arrow
from fictionworld.web.pages import PAGE_SCHEMA, PageTable
from fictionworld.web.pagetext import META_DICT, TextCodec, Texts, codec_of, sample_rows
from fictionworld.web.web import WebError


def _texts(n: int, seed: int) -> list[str]:
    """Page-like texts: shared boilerplate, varying names and numbers, some non-ASCII, some empty."""
    rng = np.random.default_rng(seed)
    words = ["Vaelor", "Kettridge", "Ostrava", "Miré", "Łódź", "北京", "founded", "in", "the", "company", "river"]
    out = []
    for i in range(n):
        body = " ".join(rng.choice(words, size=int(rng.integers(0, 60))))
        out.append("" if i % 97 == 5 else f"# Page {i}\n\n{body}\n\nFounded: {int(rng.integers(1800, 2020))}\n")
    return out


@pytest.mark.parametrize("n", [0, 1, 50, 3000])
def test_texts_come_back_exactly_with_and_without_a_dictionary(n):
    texts = _texts(n, n)
    codec = TextCodec.train([texts[i] for i in sample_rows(n)])
    assert (codec.raw is not None) == (n >= 3000)  # too little text trains no dictionary
    column = codec.compress(pa.array(texts, pa.large_string()))
    assert column.type == pa.large_binary() and len(column) == n
    read = Texts(pa.chunked_array([column.slice(0, n // 3), column.slice(n // 3)], pa.large_binary()), codec)
    assert list(read) == texts and read[n // 2 :] == texts[n // 2 :]
    if n:
        assert read[-1] == texts[-1]
    with pytest.raises(IndexError):
        read[n]


@pytest.mark.parametrize("dictionary", [False, True])
def test_the_first_lines_of_a_page_are_its_first_lines_however_the_frame_is_read(dictionary):
    """``Texts.head`` decompresses only as far as the lines asked for: the same lines as
    splitting the whole text, read a few bytes at a time, so that reads end inside multi-byte
    characters (which must not leak into the lines kept), for texts with and without newlines."""
    texts = _texts(3000, 4) + ["one line, no newline, Łódź 北京", "\n\n\n", "end\n", "北" * 5000 + "\nnext\n北"]
    codec = TextCodec.train([texts[i] for i in sample_rows(3000)]) if dictionary else TextCodec(None)
    frames = codec.compress(pa.array(texts, pa.large_string()))
    read = Texts(pa.chunked_array([frames]), codec)
    rng = np.random.default_rng(1)
    for i in [*rng.choice(3000, 200, replace=False).tolist(), *range(3000, len(texts))]:
        for lines in (0, 1, 2, 3, 5, 100):
            want = "\n".join(texts[i].split("\n", lines)[:lines])
            assert read.head(i, lines) == want, (i, lines)
            assert codec.head(frames[i].as_buffer(), lines, step=int(rng.integers(1, 9))) == want, (i, lines)


def test_frames_do_not_depend_on_threads_or_chunks_and_the_dictionary_on_nothing_but_the_samples():
    texts = _texts(5000, 1)
    a, b = TextCodec.train(texts[::3]), TextCodec.train(texts[::3])
    assert a.raw == b.raw and a.raw is not None
    one = a.compress(pa.array(texts, pa.large_string()), threads=1)
    chunked = pa.chunked_array([pa.array(texts[:7], pa.string()), pa.array(texts[7:], pa.string())])
    assert one.equals(b.compress(chunked, threads=2))
    assert TextCodec.train(texts[1::3]).raw != a.raw  # (other samples, another dictionary)


def test_a_saved_web_keeps_its_text_smaller_and_reads_it_back(world, saved_world):
    """The pages file of the shared 2,000-entity world: frames under half the text's bytes, and
    every page's text and opened page as rendered."""
    loaded = fw.World.load(saved_world)
    rendered, read = world.web.pages, loaded.web.pages
    assert read.codec is not None and read.codec.raw is not None
    assert list(read.texts) == list(rendered.texts)
    stored = sum(c.buffers()[2].size for c in read.table.column("text").chunks)
    plain = sum(c.buffers()[2].size for c in rendered.table.column("text").chunks)
    assert stored < plain / 2, (stored, plain)
    for row in np.random.default_rng(0).choice(len(read), 50, replace=False):
        assert read.page(int(row), loaded.web.entity_ids) == rendered.page(int(row), world.web.entity_ids)


def test_saving_a_loaded_web_again_writes_the_same_bytes(saved_world, tmp_path):
    pages = PageTable.load(saved_world / "pages.arrow")
    pages.save(tmp_path / "pages.arrow")
    assert (tmp_path / "pages.arrow").read_bytes() == (saved_world / "pages.arrow").read_bytes()


def test_a_pages_file_of_plain_text_still_reads(saved_world, tmp_path):
    """A file written before text was compressed (text a string column, no codec) reads as before."""
    d = tmp_path / "w"
    shutil.copytree(saved_world, d)
    unrecorded(d)  # (the loader's own checks, behind web.json's sizes)
    pages = PageTable.load(d / "pages.arrow")
    plain = pages.table.set_column(
        6, pa.field("text", pa.large_string()), pa.array(list(pages.texts), pa.large_string())
    )
    write_arrow(d / "new.arrow", plain.replace_schema_metadata(None).cast(PAGE_SCHEMA), max_chunksize=65_536)
    os.replace(d / "new.arrow", d / "pages.arrow")  # (pages maps the old file: not overwritten in place)
    old = fw.World.load(d).web.pages
    assert old.codec is None and list(old.texts) == list(pages.texts)


def _rewrite(path, table: pa.Table, metadata) -> None:
    """``table`` written to ``path`` with schema ``metadata``, the file replaced (``table`` may
    be mapped from it)."""
    tmp = path.with_name("new.arrow")
    with pa.OSFile(str(tmp), "wb") as sink, ipc.new_file(sink, table.schema.with_metadata(metadata)) as w:
        w.write_table(table.replace_schema_metadata(metadata))
    os.replace(tmp, path)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda m: {**m, META_DICT: b"not base64!"}, "text dictionary is unreadable"),
        (lambda m: {**m, META_DICT: base64.b64encode(b"\0" * 5000)}, "text dictionary is unreadable"),
        (lambda m: {**m, b"fictionworld.text-codec": b"lz77"}, "this reads zstd frames"),
        (lambda m: {}, "names no codec"),
    ],
)
def test_a_broken_codec_is_refused_when_the_web_opens(saved_world, tmp_path, change, message):
    d = tmp_path / "w"
    shutil.copytree(saved_world, d)
    unrecorded(d)  # (the loader's own checks, behind web.json's sizes)
    table = read_arrow(d / "pages.arrow")
    _rewrite(d / "pages.arrow", table, change(table.schema.metadata))
    with pytest.raises(WebError, match=f"pages.arrow: unreadable .*{message}"):
        Web.load(fw.World.load(saved_world), d)


def test_a_corrupt_frame_or_another_webs_dictionary_is_named_when_read(saved_world, tmp_path):
    d = tmp_path / "w"
    shutil.copytree(saved_world, d)
    unrecorded(d)  # (the loader's own checks, behind web.json's sizes)
    table = read_arrow(d / "pages.arrow")
    other = TextCodec.train(_texts(3000, 9))
    _rewrite(d / "pages.arrow", table, other.metadata())  # frames of one dictionary, another named
    pages = Web.load(fw.World.load(saved_world), d).pages
    with pytest.raises(WorldFormatError, match=r"pages.arrow: page 3's text is corrupt"):
        pages.texts[3]
    with pytest.raises(WorldFormatError, match=r"pages.arrow: page 3's text is corrupt"):
        pages.head(3, 2)
    frames = table.column("text").to_pylist()
    row = next(i for i, f in enumerate(frames) if len(f) > 40)
    middle = len(frames[row]) // 2
    frames[row] = frames[row][:middle] + bytes([frames[row][middle] ^ 1]) + frames[row][middle + 1 :]  # one bit
    broken = table.set_column(6, table.schema.field("text"), pa.array(frames, pa.large_binary()))
    _rewrite(d / "pages.arrow", broken, table.schema.metadata)
    pages = Web.load(fw.World.load(saved_world), d).pages
    assert pages.texts[row - 1] == PageTable.load(saved_world / "pages.arrow").texts[row - 1]
    with pytest.raises(WorldFormatError, match=rf"page {row}'s text is corrupt"):
        pages.texts[row]


def test_threads_read_pages_at_once(saved_world):
    """Each thread decompresses with its own context (zstd's are not thread-safe)."""
    pages = PageTable.load(saved_world / "pages.arrow")
    want = list(pages.texts)
    got: dict[int, list[str]] = {}
    rows = [np.random.default_rng(t).permutation(len(want)) for t in range(4)]

    def read(t: int) -> None:
        got[t] = [pages.texts[int(r)] for r in rows[t]]

    threads = [threading.Thread(target=read, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(got[t] == [want[r] for r in rows[t]] for t in range(4))


def test_a_codec_pickles_as_its_dictionary(saved_world):
    import pickle

    codec = PageTable.load(saved_world / "pages.arrow").codec
    again = pickle.loads(pickle.dumps(codec))
    frames = codec.compress(pa.array(["a page about Vaelor Kettridge"] * 3))
    assert (
        again.raw == codec.raw
        and [again.decompress(f) for f in frames.to_pylist()] == ["a page about Vaelor Kettridge"] * 3
    )


def test_codec_of_a_schema_without_text_compression_is_none():
    assert codec_of(PAGE_SCHEMA) is None
