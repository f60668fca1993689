"""Opening a saved world to serve it: lazily read tables, file digests, the lexicon (linker,
speller and names memory-mapped), the article map, the URL lookup, and search results equal to
a world read whole with its linker built in memory. The lookups under the speller and the
linker are tested in ``test_lookups.py``."""

from __future__ import annotations

import json
import os
import pickle
import random
import re
import shutil
from dataclasses import fields

import numpy as np
import pyarrow as pa
import pytest
from spelling_helpers import edits
from web_helpers import unrecorded

import fictionworld as fw
from fictionworld.storage import WorldFormatError, load_world
from fictionworld.tables import LazyColumns
from fictionworld.web import WebError


def test_url_lookup_finds_every_page_and_nothing_else(world):
    pages = world.web.pages
    urls = list(pages.urls)
    assert len(set(urls)) == len(urls)
    assert all(pages.row_of_url[u] == i for i, u in enumerate(urls))
    for u in ["", "https://nowhere.example/x", urls[0] + "x", urls[-1][:-1], "\uffff"]:
        assert pages.row_of_url.get(u) is None and u not in pages.row_of_url
    assert pages.row_of_url.get(None) is None and 7 not in pages.row_of_url
    with pytest.raises(KeyError):
        pages.row_of_url["https://nowhere.example/x"]


def test_entity_rows_by_id_without_a_table_of_ids(world):
    e = world.entities
    assert all(e.row_of_id(i) == r for i, r in e.row_of.items())
    assert list(e.id_view[np.arange(len(e))]) == e.ids.tolist() and e.id_view[-1] == e.ids[-1]
    for bad in ["person:07", "person:-1", "nope:1", "person:", "person:99999999", "Person:1", " person:1", 5]:
        with pytest.raises(KeyError):
            e.row_of_id(bad)
        with pytest.raises(KeyError):
            world.row(bad)


def _same_tables(a, b) -> None:
    for table_a, table_b in ((a.entities, b.entities), (a.facts, b.facts)):
        for f in fields(table_b):
            x, y = getattr(table_a, f.name), getattr(table_b, f.name)
            if isinstance(y, np.ndarray) and y.dtype == object:
                assert x.tolist() == y.tolist(), f.name
            elif isinstance(y, np.ndarray):
                assert np.array_equal(x, y, equal_nan=y.dtype.kind == "f") and x.dtype == y.dtype, f.name
            else:
                assert x == y, f.name


@pytest.mark.parametrize("verify", [False, "files", "on-read"])
def test_a_world_opened_to_serve_reads_nothing_until_asked_and_then_the_same(saved_world, world, verify):
    served = load_world(saved_world, verify=verify)
    assert isinstance(served.entities, LazyColumns) and isinstance(served.facts, LazyColumns)
    assert len(served.entities) == len(world.entities) and len(served.facts) == len(world.facts)
    assert served.world_hash == world.world_hash  # the manifest's, checked by digest or trusted
    queries = [world.entities.name[r] for r in range(0, len(world.entities), 97)] + ["founded 1998", "Glasswrks"]
    assert [served.search(q, k=10) for q in queries] == [world.search(q, k=10) for q in queries]
    article = served.web.article_url_of(world.entities.ids[3])
    assert served.open(article) == world.open(article)
    # searching and opening an article read no fact and no entity name: only what the page says
    assert not {"subject", "object", "v_text", "name", "aliases"} & (
        set(served.facts.__dict__) | set(served.entities.__dict__)
    )
    assert "rows" in repr(served.facts)  # a repr that reads nothing
    _same_tables(served, world)  # and read on demand, every column equals the one read whole
    assert (
        fw.World(spec=served.spec, seed=served.seed, entities=served.entities, facts=served.facts).world_hash
        == world.world_hash
    )
    plain = pickle.loads(pickle.dumps(load_world(saved_world, verify=False).entities))
    assert type(plain) is type(world.entities) and plain.ids.tolist() == world.entities.ids.tolist()


@pytest.mark.parametrize("first", ["sources", "source", "subject"])
def test_a_lazily_read_field_read_first_is_the_one_read_whole(saved_world, world, first):
    """Any field first (``sources`` has a dataclass default, which attribute lookup finds
    before the loader), and a world opened lazily saves again as the same world."""
    served = load_world(saved_world, verify=False)
    x, y = getattr(served.facts, first), getattr(world.facts, first)
    assert (x == y) if isinstance(y, tuple) else np.array_equal(x, y)
    assert served.facts.sources == world.facts.sources


def test_a_world_opened_lazily_saves_again_as_itself(saved_world, world, tmp_path):
    from fictionworld.storage import save_world

    save_world(load_world(saved_world, verify=False), tmp_path / "again", web=False)
    assert load_world(tmp_path / "again").world_hash == world.world_hash


def _copy(saved_world, tmp_path):
    d = tmp_path / "w"
    shutil.copytree(saved_world, d)
    return d


def test_file_digests_catch_a_changed_byte_and_a_short_file(saved_world, tmp_path):
    d = _copy(saved_world, tmp_path)
    data = bytearray((d / "facts.parquet").read_bytes())
    data[len(data) // 2] ^= 0x01
    (d / "facts.parquet").write_bytes(bytes(data))
    with pytest.raises(WorldFormatError, match="facts.parquet does not match the manifest's digest"):
        load_world(d, verify="files")
    load_world(d, verify=False)  # trusted: opens (what it reads later may fail, as one clear line)
    (d / "entities.parquet").write_bytes((saved_world / "entities.parquet").read_bytes()[:-10])
    with pytest.raises(WorldFormatError, match="entities.parquet has another size"):
        load_world(d, verify="files")
    with pytest.raises(WorldFormatError, match="unreadable"):
        load_world(d, verify=False)  # a footer that does not read is caught even untrusted
    with pytest.raises(ValueError, match="verify must be"):
        load_world(saved_world, verify="yes")


def test_on_read_digests_are_checked_before_a_files_first_read_not_at_load(saved_world, tmp_path, monkeypatch):
    """``verify="on-read"`` (what a server opens with): a changed byte in facts.parquet lets
    the world open and answer searches (they read the web, never the graph), and every read of
    a fact column then raises; entities.parquet, unchanged, reads, its digest taken once for
    all its columns. A truncated file, or a manifest with no known digest, is refused at load."""
    from fictionworld import digests as storage  # (where the files are hashed)

    d = _copy(saved_world, tmp_path)
    data = bytearray((d / "facts.parquet").read_bytes())
    data[len(data) // 2] ^= 0x01
    (d / "facts.parquet").write_bytes(bytes(data))
    digests = []
    real = storage.file_digests
    monkeypatch.setattr(storage, "file_digests", lambda path, names, *a: digests.append(names) or real(path, names, *a))
    served = load_world(d, verify="on-read")
    assert digests == []  # (nothing read yet)
    assert served.search("founded 1998", k=5) == load_world(saved_world, verify=False).search("founded 1998", k=5)
    assert digests == []  # (a search reads no file of the graph)
    for _ in range(2):  # (a file that did not match is not trusted the second time either)
        with pytest.raises(WorldFormatError, match="facts.parquet does not match the manifest's digest"):
            served.facts.subject  # noqa: B018
    assert digests == [("facts.parquet",)]  # (nor hashed again while it is the same file)
    whole = load_world(saved_world, verify=False).entities
    assert served.entities.name.tolist() == whole.name.tolist()
    assert served.entities.ids.tolist() == whole.ids.tolist()
    assert digests[1:] == [("entities.parquet",)]  # one digest for every column of the file
    # the file mended (written again: another file), it is hashed again and read
    (d / "facts.parquet").write_bytes((saved_world / "facts.parquet").read_bytes())
    assert served.facts.subject.tolist() == load_world(saved_world, verify=False).facts.subject.tolist()
    assert digests[2:] == [("facts.parquet",)]
    # and changed again after it passed: the next read sees another file, hashes it, refuses it
    os.replace(d / "facts.parquet", d / "facts.old")
    (d / "facts.parquet").write_bytes(bytes(data))
    with pytest.raises(WorldFormatError, match="facts.parquet does not match the manifest's digest"):
        served.facts.object  # noqa: B018
    (d / "entities.parquet").write_bytes((saved_world / "entities.parquet").read_bytes()[:-10])
    with pytest.raises(WorldFormatError, match="entities.parquet has another size"):
        load_world(d, verify="on-read")
    good = load_world(saved_world, verify="on-read")
    m = json.loads((saved_world / "manifest.json").read_text())
    m["files"]["facts.parquet"] = {"bytes": m["files"]["facts.parquet"]["bytes"], "md5": "0" * 32}
    (d / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(WorldFormatError, match="file digests are of no known kind"):
        load_world(d, verify="on-read")
    assert len(good.facts.subject) == len(good.facts)  # (the unchanged world reads, checked)


def test_on_read_checks_say_one_line_on_os_errors_and_fork_safely(saved_world, tmp_path, monkeypatch):
    """A data file that cannot be read while its digest is taken (permissions, I/O) is one
    WorldFormatError line, in both digest modes. A child forked while another thread of its
    parent hashes a file reads the graph all the same (the locks are made anew in the child)."""
    import threading
    import time

    from fictionworld import digests as storage  # (where the files are hashed)

    def denied(*_a, **_k):
        raise PermissionError(13, "Permission denied")

    served = load_world(saved_world, verify="on-read")
    with monkeypatch.context() as m:
        m.setattr(storage, "file_digests", denied)
        with pytest.raises(WorldFormatError, match=r"facts.parquet: unreadable .*Permission denied"):
            served.facts.id  # noqa: B018
        with pytest.raises(WorldFormatError, match=r"entities.parquet: unreadable .*Permission denied"):
            load_world(saved_world, verify="files")
    assert len(served.facts.id) == len(served.facts)  # (the error was not kept: readable again, checked)
    served = load_world(saved_world, verify="on-read")
    real = storage.file_digests
    monkeypatch.setattr(storage, "file_digests", lambda *a: time.sleep(0.6) or real(*a))
    reader = threading.Thread(target=lambda: served.facts.id)
    reader.start()
    time.sleep(0.2)  # (the thread holds facts.parquet's lock now)
    pid = os.fork()
    if pid == 0:  # pragma: no cover  (the child)
        import signal

        signal.alarm(20)
        try:
            ok = len(served.facts.id) == len(served.facts) and len(served.entities.name) == len(served.entities)
            os._exit(0 if ok else 1)
        except BaseException:
            os._exit(2)
    reader.join()
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status


def test_a_manifest_with_the_older_blake2b_digests_is_checked_with_them(saved_world, tmp_path):
    import hashlib

    d = _copy(saved_world, tmp_path)
    m = json.loads((d / "manifest.json").read_text())
    for name in m["files"]:
        data = (d / name).read_bytes()
        m["files"][name] = {"bytes": len(data), "blake2b": hashlib.blake2b(data, digest_size=20).hexdigest()}
    (d / "manifest.json").write_text(json.dumps(m))
    assert isinstance(load_world(d, verify="files").entities, LazyColumns)  # verified by its digests
    data = bytearray((d / "entities.parquet").read_bytes())
    data[len(data) // 3] ^= 0x20
    (d / "entities.parquet").write_bytes(bytes(data))
    with pytest.raises(WorldFormatError, match="entities.parquet does not match the manifest's digest"):
        load_world(d, verify="files")
    m["files"]["facts.parquet"] = {"bytes": m["files"]["facts.parquet"]["bytes"], "md5": "0" * 32}
    (d / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(WorldFormatError, match="file digests are of no known kind"):
        load_world(d, verify="files")


def test_a_manifest_without_digests_is_checked_by_content(saved_world, tmp_path):
    d = _copy(saved_world, tmp_path)
    m = json.loads((d / "manifest.json").read_text())
    del m["files"]
    (d / "manifest.json").write_text(json.dumps(m))
    assert isinstance(load_world(d, verify=False).entities, LazyColumns)
    assert not isinstance(load_world(d, verify="files").entities, LazyColumns)  # fell back to the content hash
    m["world_hash"] = "0" * 40
    (d / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(WorldFormatError, match="does not match the manifest's world_hash"):
        load_world(d, verify="files")


def test_a_lazily_read_column_that_is_corrupt_says_so_in_one_line(saved_world, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    d = _copy(saved_world, tmp_path)
    t = pq.read_table(d / "facts.parquet")
    bad = t.set_column(t.column_names.index("predicate"), "predicate", pa.array(["no_such"] * t.num_rows))
    pq.write_table(bad, d / "facts.parquet")
    served = load_world(d, verify=False)
    with pytest.raises(WorldFormatError, match="unknown predicate 'no_such'"):
        served.facts.predicate  # noqa: B018


def test_search_without_the_lexicon_and_with_it_agree(saved_world, world, tmp_path):
    d = _copy(saved_world, tmp_path)
    shutil.rmtree(d / "lexicon")
    (d / "pages.url-order.npy").unlink()
    (d / "pages.codes.npy").unlink()
    old = load_world(d)  # a web saved before lexicons: the linker is built from the world
    new = load_world(saved_world, verify=False)
    assert old.web.lexicon is None and new.web.lexicon is not None
    assert old.web.pages.kind_code.tolist() == new.web.pages.kind_code.tolist()
    assert old.web.pages.layer.tolist() == new.web.pages.layer.tolist()
    assert new.web.pages.kind.tolist() == new.web.pages.table.column("kind").to_pylist()
    rng = random.Random(0)
    names = [world.entities.name[r] for r in rng.sample(range(len(world.entities)), 150)]
    typos = [" ".join(edits(w, rng) if len(w) > 4 else w for w in n.split()) for n in names]
    queries = names + typos + ["Films released in 1998", "Compnaies in the glasmaking industry", "founded"]
    assert [old.search(q, k=10) for q in queries] == [new.search(q, k=10) for q in queries]
    assert any(new.web.linker.link(q) for q in typos)  # the typos did go down the fuzzy path
    url = old.web.pages.urls[len(old.web.pages) // 2]
    assert old.open(url) == new.open(url)


def test_the_lexicon_gives_each_entity_its_name_and_aliases(saved_world, world):
    from fictionworld.web.lexicon import Lexicon, entity_forms

    e = world.entities
    want = [(e.name[r], *e.aliases[r]) for r in range(len(e))]
    assert any(len(w) > 1 for w in want) and any(len(w) == 1 for w in want)
    served = load_world(saved_world, verify=False).web.lexicon
    assert [served.subject_forms(r) for r in range(len(e))] == want
    # a forms table in pieces and sliced (offsets not starting at 0) reads the same
    forms = entity_forms(e)
    cut = len(e) // 3
    pieces = pa.Table.from_batches([*forms.slice(0, cut).to_batches(), *forms.slice(cut).to_batches()])
    lex = Lexicon(served.linker, served.speller, pieces)
    assert [lex.subject_forms(r) for r in range(len(e))] == want
    tail = Lexicon(served.linker, served.speller, forms.slice(cut))
    assert [tail.subject_forms(r) for r in range(len(e) - cut)] == want[cut:]
    for bad in (-1, len(e)):
        with pytest.raises(IndexError):
            lex.subject_forms(bad)


def test_page_codes_that_do_not_fit_the_pages_are_refused(saved_world, tmp_path):
    d = _copy(saved_world, tmp_path)
    codes = np.load(d / "pages.codes.npy")
    np.save(d / "pages.codes.npy", codes[:, :-1])
    with pytest.raises(WebError, match="pages.codes.npy has another size than web.json records"):
        load_world(d).web  # noqa: B018
    unrecorded(d)
    for bad in (codes[:, :-1], codes.astype(np.int16), codes[::-1] * 5, -codes - 1):
        np.save(d / "pages.codes.npy", bad)
        with pytest.raises(WebError, match="not the kind and layer codes of"):
            load_world(d).web  # noqa: B018
    np.save(d / "pages.codes.npy", codes)
    assert load_world(d).web.pages.kind_code.tolist() == codes[0].tolist()


def test_the_saved_page_columns_are_mapped_not_copied_and_checked(saved_world, world, tmp_path):
    d = unrecorded(_copy(saved_world, tmp_path))  # (the loader's own checks, behind the sizes)
    served = load_world(d, verify=False).web.pages
    table = served.table
    want = {c: table.column(c) for c in ("u", "entity", "published")}
    assert served.u.tolist() == want["u"].to_pylist()
    assert served.entity.tolist() == want["entity"].to_pylist()
    assert served.published.tolist() == want["published"].cast(pa.int32()).to_pylist()
    for column in (served.u, served.entity, served.published):  # read off the file's mapping, shared
        assert not column.flags.owndata and not column.flags.writeable
    queries = [world.entities.name[r] for r in range(0, len(world.entities), 11)] + ["Films released in 1998"]
    results = [load_world(d, verify=False).search(q, k=10) for q in queries]
    url = served.urls[len(served) // 3]
    page = load_world(d, verify=False).open(url)
    columns = np.load(d / "pages.columns.npy")
    (d / "pages.columns.npy").unlink()  # a web saved before the file: copied from the table
    old = load_world(d, verify=False)
    assert old.web.pages.columns is None and old.web.pages.u.flags.writeable
    assert (
        old.web.pages.u.tolist() == served.u.tolist() and old.web.pages.published.tolist() == served.published.tolist()
    )
    assert [old.search(q, k=10) for q in queries] == results and old.open(url) == page
    for bad in (columns[:, :-1], columns[:2], columns.astype(np.int64), columns.astype(np.float32)):
        np.save(d / "pages.columns.npy", bad)
        with pytest.raises(WebError, match="pages.columns.npy: not the u, entity and published columns of"):
            load_world(d, verify=False).web  # noqa: B018
    swapped = columns.copy()
    swapped[:, [0, -1]] = swapped[:, [-1, 0]]  # rows out of order: the first and last probed
    shifted = np.roll(columns, 1, axis=1)  # every row one off (a file of another web as long)
    for bad in (swapped, shifted, columns[:, ::-1].copy()):
        np.save(d / "pages.columns.npy", bad)
        with pytest.raises(WebError, match="pages.columns.npy: not the u, entity and published columns of"):
            load_world(d, verify=False).web  # noqa: B018
    (d / "pages.columns.npy").write_bytes(b"not an array")
    with pytest.raises(WebError, match="pages.columns.npy: not a NumPy array"):
        load_world(d, verify=False).web  # noqa: B018
    np.save(d / "pages.columns.npy", columns)
    assert [load_world(d, verify=False).search(q, k=10) for q in queries] == results


def test_the_saved_article_map_is_read_and_checked_not_trusted(saved_world, world, tmp_path):
    d = unrecorded(_copy(saved_world, tmp_path))  # (the loader's own checks, behind the sizes)
    articles = np.load(d / "pages.articles.npy")
    served = load_world(d, verify=False).web
    assert isinstance(served.pages.articles, np.ndarray) and served.pages.articles.tolist() == articles.tolist()
    ids = world.entities.ids
    urls = [served.article_url_of(ids[r]) for r in range(0, len(ids), 7)]
    (d / "pages.articles.npy").unlink()  # a web saved before the map: made from the pages on first use
    made = load_world(d, verify=False).web
    assert made.pages.articles is None and made._article_of.tolist() == articles.tolist()
    assert [made.article_url_of(ids[r]) for r in range(0, len(ids), 7)] == urls
    name = world.entities.name[3]
    assert made.search(name, 5) == served.search(name, 5)
    swapped = articles.copy()
    swapped[[3, 4]] = swapped[[4, 3]]  # two entities' articles exchanged: each row names another's
    np.save(d / "pages.articles.npy", swapped)
    bad = load_world(d, verify=False).web
    assert bad.article_url_of(ids[5]) == served.article_url_of(ids[5])  # the rest still read
    with pytest.raises(WebError, match="entity row 3's article is not page"):
        bad.search(name, 5)  # the name links entity 3, whose article the map gets wrong
    gone = articles.copy()
    gone[5] = -1  # (an entity without an article: the map says so, and its URL is no page's)
    np.save(d / "pages.articles.npy", gone)
    with pytest.raises(WebError, match=f"{ids[5]} has no article page in this web"):
        load_world(d, verify=False).web.article_url_of(ids[5])
    np.save(d / "pages.articles.npy", articles[:-1])
    with pytest.raises(WebError, match=f"a map of {len(ids) - 1:,} entities, the world has {len(ids):,}"):
        load_world(d, verify=False).web.article_url_of(ids[0])
    for junk in (b"not an array", (d / "pages.articles.npy").read_bytes()[:60]):
        (d / "pages.articles.npy").write_bytes(junk)
        with pytest.raises(WebError, match="pages.articles.npy: not a NumPy array"):
            load_world(d, verify=False).web  # noqa: B018
    np.save(d / "pages.articles.npy", articles.astype(np.float32))
    with pytest.raises(WebError, match="not a map of entities to article rows"):
        load_world(d, verify=False).web  # noqa: B018


@pytest.mark.parametrize("column", ["url", "text", "entity_rows"])
def test_damaged_offsets_in_the_pages_file_are_an_error_not_an_aborted_process(saved_world, tmp_path, column):
    """One offset of a string, binary or list column of pages.arrow overwritten (the file's
    size unchanged, so only `validate` would see it): pyarrow trusts the offsets of a mapped
    file, and reading that page aborted the process (std::length_error) or read outside the
    file. Each batch's offsets are now checked before its first value is read. Run in a
    process of its own, since the failure this guards against kills the process."""
    import subprocess
    import sys

    import pyarrow.ipc as ipc

    d = _copy(saved_world, tmp_path)
    mapped = pa.memory_map(str(d / "pages.arrow"))
    base = mapped.read_buffer(1).address
    array = ipc.open_file(mapped).get_batch(0).column(column)
    at = array.buffers()[1].address - base
    width = 8 if pa.types.is_large_binary(array.type) else 4
    mapped.close()
    with open(d / "pages.arrow", "r+b") as f:
        f.seek(at + width * 101)
        f.write((2**31 - 1).to_bytes(width, "little"))
    code = f"""
import fictionworld as fw
from fictionworld.reading import WorldFormatError
w = fw.World.load({str(d)!r}, verify=False)
try:
    w.web.pages.page(100, w.entities.ids)
except WorldFormatError as e:
    print(e)
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "pages.arrow" in r.stdout and "record batch 0" in r.stdout and "damaged" in r.stdout, r.stdout


@pytest.mark.parametrize(
    "name, content",
    [("meta.json", b'{"format": "\xff"}'), ("names.tail3.arrow", b"ARROW1 garbage"), ("web.arrow", b"ARROW1 garbage")],
)
def test_a_damaged_lexicon_file_is_named(saved_world, tmp_path, name, content):
    """(Before: a bare UnicodeDecodeError for meta.json, and the lexicon directory, or another
    file, named for a damaged speller table.)"""
    d = unrecorded(_copy(saved_world, tmp_path))
    (d / "lexicon" / name).write_bytes(content)
    with pytest.raises(WebError, match=re.escape(str(d / "lexicon" / name)) + ": unreadable"):
        load_world(d).web  # noqa: B018


def test_a_lexicon_of_another_world_is_refused(saved_world, tmp_path):
    d = unrecorded(_copy(saved_world, tmp_path))
    meta = json.loads((d / "lexicon" / "meta.json").read_text())
    (d / "lexicon" / "meta.json").write_text(json.dumps({**meta, "world_hash": "0" * 40}))
    with pytest.raises(WebError, match="lexicon was built for another world; rebuild it"):
        load_world(d).web  # noqa: B018
    (d / "lexicon" / "meta.json").write_text(json.dumps(meta))
    (d / "lexicon" / "post_row.npy").write_bytes(b"garbage")
    with pytest.raises(WebError, match="unreadable"):
        load_world(d).web  # noqa: B018


def test_a_serving_process_searches_without_importing_pandas(saved_world):
    """pyarrow imports pandas the first time ``pa.array`` or a boolean ``to_numpy`` runs
    (0.17-0.3 s): a server's first misspelt query paid it in the speller. A fresh process opens
    the world as a server does and searches names, misspelt names (the speller runs: counted)
    and directory titles; pandas stays out of ``sys.modules``."""
    import subprocess
    import sys

    code = f"""
import sys
import fictionworld as fw
from fictionworld.web.speller import Speller
calls = []
scored = Speller._scored  # (what correct and spellings both ask)
Speller._scored = lambda self, w, limit, *rest: calls.append(w) or scored(self, w, limit, *rest)
world = fw.World.load({str(saved_world)!r}, verify="files")
names = world.web.lexicon.names
for i in range(0, len(names), max(1, len(names) // 40)):
    name = names[i]
    long = max(name.split(), key=len)
    swapped = long[:1] + long[2] + long[1] + long[3:] if len(long) > 4 else long + "q"
    for q in (name, name.replace(long, swapped), name + " founded", world.web.pages.titles[i]):
        world.search(q, k=10)
print(len(calls), "pandas" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    corrected, pandas = out.stdout.split()
    assert int(corrected) > 10, out.stdout  # the speller ran
    assert pandas == "False", "a search imported pandas"
