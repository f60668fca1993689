"""Sharded builds whose finished parts were damaged between runs (issue 19): shard page files
and indexes, the joined pages and lexicon, the lexicon's first part, a file damaged while the
world was being moved into place. Each part is sealed with its size and digest as it is
written; a resumed build reads the seals and makes a damaged part again, ending with the same
world, or names the damaged file where nothing is left to make it from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from build_helpers import SEED, fingerprint, small_spec, stopped_before_the_index_join, stopped_before_the_page_join

from fictionworld.web.shards import BUILD_DIR, build_world

pytestmark = pytest.mark.big


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(data)


def test_damaged_shard_indexes_are_made_again_when_a_build_resumes(reference, tmp_path, monkeypatch):
    """A shard's index files changed between runs (one truncated, one bit flipped: tantivy's
    files carry no checksum): the resumed build indexes those shards again, and only those,
    and ends with the same world (before, the join read them as they were)."""
    from fictionworld.web import shards

    path = tmp_path / "w"
    build = stopped_before_the_index_join(path, monkeypatch)
    largest = max((build / "index" / "shard-00001").glob("*.idx"), key=lambda p: p.stat().st_size)
    largest.write_bytes(largest.read_bytes()[:-10])
    _flip(next((build / "index" / "shard-00002").glob("*.term")))
    indexed = []
    real = shards.index_shard
    monkeypatch.setattr(shards, "index_shard", lambda *a: indexed.append(Path(a[2]).name) or real(*a))
    build_world(small_spec(), SEED, path, workers=1, shards=3)
    assert sorted(indexed) == ["shard-00001", "shard-00002"]
    assert fingerprint(path) == reference[1]


def test_a_damaged_shard_page_file_is_rendered_again_or_named(reference, tmp_path, monkeypatch):
    """A rendered shard's page file changed between runs: rendered again, from the render store
    while it is there, and once it is gone (every shard rendered) from one written again from
    the graph (before, the build stopped there: a build from scratch); unless the pages are
    joined and the shard indexed (nothing reads the file again)."""
    from fictionworld.web import shards

    path = tmp_path / "w"
    real_write = shards.write_json

    def stop_at_two(file, obj, *rest, **kw):  # two shards rendered and recorded, the store kept
        real_write(file, obj, *rest, **kw)
        if Path(file).name == "counts.json" and len(obj) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(shards, "write_json", stop_at_two)
    with pytest.raises(KeyboardInterrupt):
        build_world(small_spec(), SEED, path, workers=1, shards=3)
    monkeypatch.undo()
    build = path / BUILD_DIR
    done = sorted(int(s) for s in json.loads((build / "counts.json").read_text()))
    assert len(done) == 2 and (build / "store" / "store.json").exists()
    _flip(build / "pages" / f"shard-{done[0]:05d}.arrow")
    rendered = []
    real = shards.render_shard
    monkeypatch.setattr(shards, "render_shard", lambda *a: rendered.append(a[1]) or real(*a))
    build_world(small_spec(), SEED, path, workers=1, shards=3)
    assert sorted(rendered) == sorted({done[0]} | ({0, 1, 2} - set(done)))
    assert fingerprint(path) == reference[1]
    monkeypatch.undo()

    path = tmp_path / "w2"  # the pages joined and the shard indexed: its page file is read no more
    build = stopped_before_the_index_join(path, monkeypatch)
    _flip(build / "pages" / "shard-00001.arrow")
    rendered.clear()
    monkeypatch.setattr(shards, "render_shard", lambda *a: rendered.append(a[1]) or real(*a))
    build_world(small_spec(), SEED, path, workers=1, shards=3)
    assert rendered == [] and fingerprint(path) == reference[1]

    path = tmp_path / "w3"  # still to be joined, and the store gone: written again from the graph
    build = stopped_before_the_page_join(path, monkeypatch)
    assert not (build / "store").exists()
    _flip(build / "pages" / "shard-00001.arrow")
    rendered.clear()
    monkeypatch.setattr(shards, "render_shard", lambda *a: rendered.append(a[1]) or real(*a))
    build_world(small_spec(), SEED, path, workers=1, shards=3)
    assert rendered == [1]
    assert fingerprint(path) == reference[1]


def test_a_build_stopped_while_it_writes_the_render_store_again_resumes_from_its_shards(
    reference, tmp_path, monkeypatch
):
    """Stopped while the render store is written again for a damaged shard (minutes at 10M):
    the next run still finds every shard rendered, checks them, writes the store again and ends
    with the same world; it does not take the build for one with no store, which made the
    graph again from scratch."""
    from fictionworld.web import shards, store_stream

    path = tmp_path / "w"
    build = stopped_before_the_page_join(path, monkeypatch)
    _flip(build / "pages" / "shard-00002.arrow")

    def half(graph, store, **kw):  # the facts' files written, then stopped
        store_stream.write_store_facts(graph, store)
        raise KeyboardInterrupt

    monkeypatch.setattr(store_stream, "write_store_from_graph", half)
    with pytest.raises(KeyboardInterrupt):
        build_world(small_spec(), SEED, path, workers=1, shards=3)
    monkeypatch.undo()
    assert not (build / "store" / "store.json").exists()

    def never(*_):
        raise AssertionError("the graph was made again")

    monkeypatch.setattr(shards, "make_graph", never)
    monkeypatch.setattr(shards, "write_graph", never)
    summary = build_world(small_spec(), SEED, path, workers=1, shards=3)
    assert summary["resumed_shards"] == 2 and fingerprint(path) == reference[1]


def _largest(directory: Path) -> Path:
    return max((p for p in directory.iterdir() if p.is_file()), key=lambda p: p.stat().st_size)


@pytest.mark.parametrize("damaged", ["pages.arrow", "pages.url-order.npy", "lexicon"])
def test_damaged_joined_pages_or_lexicon_are_joined_again_when_a_build_resumes(
    reference, tmp_path, monkeypatch, damaged
):
    """A file of the finished page join (the pages, an array beside them, the finished lexicon)
    changed between runs: the resumed build undoes the join, makes the lexicon again from the
    graph, joins the shards again (rendering and indexing none of them) and ends with the same
    world. Before, the damaged file was moved into the world, and recorded in ``web.json``."""
    from fictionworld.web import shards

    path = tmp_path / "w"
    build = stopped_before_the_index_join(path, monkeypatch)
    _flip(_largest(build / "lexicon") if damaged == "lexicon" else build / damaged)
    calls: list[str] = []
    for name in ("build_lexicon", "render_shard", "index_shard"):
        real = getattr(shards, name)
        monkeypatch.setattr(shards, name, lambda *a, _n=name, _f=real: calls.append(_n) or _f(*a))
    build_world(small_spec(), SEED, path, workers=1, shards=3)
    assert calls == ["build_lexicon"]
    assert fingerprint(path) == reference[1]


@pytest.mark.parametrize("damage", ["flipped", "unsealed", "left by a join stopped half-way"])
def test_a_damaged_unfinished_lexicon_is_made_again_when_a_build_resumes(reference, tmp_path, monkeypatch, damage):
    """Stopped before the page join, its lexicon's first part written: a file of it changed
    between runs, no seal (stopped before the task sealed it), or a file the seal does not
    record (a half-written file of a join stopped while it finished the lexicon): the lexicon
    is made again (before, the join finished the damaged one, or moved the stray file into the
    world)."""
    from fictionworld.web import shards

    path = tmp_path / "w"
    lexicon = stopped_before_the_page_join(path, monkeypatch) / "lexicon"
    assert (lexicon / "part.json").exists()
    if damage == "flipped":
        _flip(_largest(lexicon))
    elif damage == "unsealed":
        (lexicon.parent / "lexicon.sum.json").unlink()
    else:
        (lexicon / "web.keys.npy.tmp4242").write_bytes(b"\x93NUMPY half")
    calls = []
    real = shards.build_lexicon
    monkeypatch.setattr(shards, "build_lexicon", lambda *a: calls.append(a) or real(*a))
    build_world(small_spec(), SEED, path, workers=1, shards=3)
    assert len(calls) == 1
    assert fingerprint(path) == reference[1]


@pytest.mark.parametrize("damaged", ["pages.arrow", "entities.parquet", "lexicon", "index"])
def test_a_file_damaged_while_a_build_was_stopped_in_its_moves_is_named_not_moved_into_the_world(
    reference, tmp_path, monkeypatch, damaged
):
    """Stopped while moving its files into place, a file damaged before the build resumed, one
    already moved (the pages, the graph's entities) or one still in the build (the lexicon, the
    index): the resumed build names it and leaves the world unfinished, its manifest unwritten,
    and says so again when run again (before, it finished the world with the damage in it:
    ``web.json`` held the digests taken as the files were written, so only `validate` named it)."""
    import os

    from fictionworld.reading import WorldFormatError
    from fictionworld.web.join import MOVING

    path = tmp_path / "w"
    real_replace = os.replace
    moved: list[str] = []

    def replace(source, target):
        if Path(target).parent == path:
            moved.append(Path(target).name)
            if "pages.arrow" in moved[:-1]:
                raise KeyboardInterrupt
        return real_replace(source, target)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(KeyboardInterrupt):
        build_world(small_spec(), SEED, path, workers=1, shards=3)
    monkeypatch.undo()
    build = path / BUILD_DIR
    target = {"pages.arrow": path / "pages.arrow", "entities.parquet": path / "entities.parquet",
              "lexicon": _largest(build / "lexicon"), "index": _largest(build / "index.joined")}[damaged]  # fmt: skip
    assert target.exists() and (damaged in ("lexicon", "index")) == (build in target.parents)
    _flip(target)
    for _ in range(2):
        with pytest.raises(
            WorldFormatError, match=rf"{target.name} does not match .*damaged while the build was stopped"
        ):
            build_world(small_spec(), SEED, path, workers=1, shards=3)
        assert (build / MOVING).exists() and not (path / "manifest.json").exists()
    moved_to = next(p for p in path.rglob(target.name) if build not in p.parents)  # (the moves are finished)
    _flip(moved_to)  # (the damage undone, the build finishes: nothing was lost)
    build_world(small_spec(), SEED, path, workers=1, shards=3)
    assert fingerprint(path) == reference[1]
