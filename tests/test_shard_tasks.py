"""The tasks of a sharded build (fictionworld/web/shard_tasks.py) one at a time: the graph saved
the same by any of its ways, a render store on disk against one in memory, what a worker keeps
between tasks and lets go of, and shard page files written compressed and joined."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from build_helpers import resident_bytes, small_spec

pytestmark = pytest.mark.big


def test_shard_files_are_written_compressed_and_read_back_whole(tmp_path):
    """A shard's pages are written compressed (smaller than the same table written plain), and
    the join's readers get them back: the four key columns, the batch sizes, and the text
    dictionary trained on the same sample of pages as from the table itself."""
    from fictionworld.generators import generate_world
    from fictionworld.web import join, shard_tasks
    from fictionworld.web.arrow import write_arrow
    from fictionworld.web.pagetext import TextCodec, sample_rows
    from fictionworld.web.store import write_store

    world = generate_world(small_spec(3000, block=100), 4)
    write_store(world, tmp_path / "store")
    (tmp_path / "p").mkdir()
    n, _, _ = shard_tasks.render_shard(str(tmp_path / "store"), 0, (0, 30), str(tmp_path / "p"))
    shard = tmp_path / "p" / "shard-00000.arrow"
    table = pa.ipc.open_file(pa.OSFile(str(shard))).read_all()
    assert table.num_rows == n > 0
    write_arrow(tmp_path / "plain.arrow", table)
    assert shard.stat().st_size < (tmp_path / "plain.arrow").stat().st_size / 2
    keys = ["url", "kind", "title", "layer"]
    assert join._read_columns(shard, keys).equals(table.select(keys))
    assert join._batch_rows(shard) == [b.num_rows for b in table.to_batches()] and len(join._batch_rows(shard)) == 30
    texts = table.column("text").to_pylist()
    want = TextCodec.train([texts[i] for i in sample_rows(n)])
    assert want.raw is not None and join._text_codec([shard]).raw == want.raw


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the kernel's mappings in /proc/self/maps")
def test_a_worker_lets_go_of_a_removed_store(tmp_path):
    """The renderer of a store that was removed is dropped at the worker's next index or check
    task, and its mappings with it (they would keep the removed files' disk space taken)."""
    from fictionworld.generators import generate_world
    from fictionworld.web import shard_tasks, shards
    from fictionworld.web.store import write_store

    world = generate_world(small_spec(1500, block=100), 4)
    store = tmp_path / "store"
    write_store(world, store)
    mapped = lambda: str(store.resolve()) in Path("/proc/self/maps").read_text()  # noqa: E731
    shard_tasks.RENDERER_CACHE.clear()
    try:
        shard_tasks._renderer(str(store)).render_block(0)
        shard_tasks._forget_removed_stores()
        assert str(store) in shard_tasks.RENDERER_CACHE and mapped()  # (kept while the store is there)
        shards._remove_store(tmp_path)  # (the driver's)
        assert not store.exists()
        shard_tasks._forget_removed_stores()
        assert not shard_tasks.RENDERER_CACHE and not mapped()
        # a check unit (queued after every render task) goes through tidy, which lets go of
        # the renderer first, the store removed or not
        write_store(world, store)
        shard_tasks._renderer(str(store)).render_block(0)
        assert mapped() and shard_tasks.tidy(lambda *a: (a, mapped()), 1, 2) == ((1, 2), False)
        assert not shard_tasks.RENDERER_CACHE
        # a store removed and written again (a resumed build rendering a damaged shard again):
        # the old renderer, mapping the removed files, is let go at the next render task
        first = shard_tasks._renderer(str(store))
        shards._remove_store(tmp_path)
        write_store(world, store)
        second = shard_tasks._renderer(str(store))
        assert second is not first and shard_tasks._renderer(str(store)) is second
        del first
        import gc

        gc.collect()
        assert "(deleted)" not in "".join(
            x for x in Path("/proc/self/maps").read_text().splitlines() if str(store.resolve()) in x
        )
        assert shard_tasks._renderer(str(store)).render_block(0).num_rows > 0  # (opened again at need)
    finally:
        shard_tasks.RENDERER_CACHE.clear()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the kernel's mappings in /proc/self/maps")
def test_an_index_task_lets_go_of_a_store_removed_while_it_runs(tmp_path, monkeypatch):
    """The driver removes the store when the last shard is rendered, often while a worker is
    indexing (a shard's index task ran 76 s at 10M entities): the worker lets go of its
    mappings at its next record batch, not when the task ends, and indexes every page still."""
    from fictionworld.generators import generate_world
    from fictionworld.web import shard_tasks, shards
    from fictionworld.web.index import TantivyIndex
    from fictionworld.web.store import write_store

    world = generate_world(small_spec(1500, block=100), 4)
    store = tmp_path / "store"
    write_store(world, store)
    (tmp_path / "p").mkdir()
    mapped = lambda: str(store.resolve()) in Path("/proc/self/maps").read_text()  # noqa: E731
    shard_tasks.RENDERER_CACHE.clear()
    try:
        n, _, _ = shard_tasks.render_shard(str(store), 0, (0, 4), str(tmp_path / "p"))
        pages = tmp_path / "p" / "shard-00000.arrow"
        batch_rows = [b.num_rows for b in pa.ipc.open_file(pa.OSFile(str(pages))).read_all().to_batches()]
        assert len(batch_rows) == 4 and min(batch_rows) > 0 and str(store) in shard_tasks.RENDERER_CACHE
        seen: list[bool] = []  # whether the store is mapped, page by page, as the index reads it
        text = shard_tasks.plain_text

        def reading(markdown: str) -> str:
            seen.append(mapped())
            if len(seen) == 1:
                shards._remove_store(tmp_path)  # (the driver's, as the first batch is indexed)
            return text(markdown)

        monkeypatch.setattr(shard_tasks, "plain_text", reading)
        indexed, _, _ = shard_tasks.index_shard(str(pages), 0, str(tmp_path / "ix"), 64_000_000)
        assert indexed == n == len(seen) and TantivyIndex.open(tmp_path / "ix").num_docs == n
        first = batch_rows[0]
        assert all(seen[:first])  # (mapped through the first batch: it was read before the removal)
        assert not any(seen[first:]) and not shard_tasks.RENDERER_CACHE  # let go from the second batch on
    finally:
        shard_tasks.RENDERER_CACHE.clear()


def test_the_graph_is_saved_the_same_by_a_forked_child_a_thread_or_in_turn(tmp_path, monkeypatch):
    """write_graph saves the graph beside the store in a forked child or a thread, as free
    memory allows, else after the store: the files are the same every way."""
    import psutil

    from fictionworld.generators import generate_world
    from fictionworld.storage import read_manifest
    from fictionworld.web import shard_tasks

    world = generate_world(small_spec(1500), 3)
    rss = psutil.Process().memory_info().rss
    made: list[str] = []

    def spy(kind, cls):
        def make(*a, **k):
            made.append(kind)
            return cls(*a, **k)

        return make

    monkeypatch.setattr(shard_tasks, "forked_pool", spy("fork", shard_tasks.forked_pool))
    monkeypatch.setattr(shard_tasks, "ThreadPoolExecutor", spy("thread", shard_tasks.ThreadPoolExecutor))
    for name, room, way in (("fork", 1 << 50, ["fork"]), ("thread", rss, ["thread"]), ("in turn", 0, [])):

        class Room:
            available = room

        monkeypatch.setattr(psutil, "virtual_memory", lambda: Room())
        made.clear()
        shard_tasks.write_graph(world, tmp_path / name / "graph", tmp_path / name / "store")
        assert made == way, (name, made)
    a = tmp_path / "in turn"
    for name in ("fork", "thread"):
        b = tmp_path / name
        for f in ("entities.parquet", "facts.parquet"):
            assert (a / "graph" / f).read_bytes() == (b / "graph" / f).read_bytes(), (name, f)
        assert read_manifest(a / "graph")["files"] == read_manifest(b / "graph")["files"]
        for f in sorted((a / "store").iterdir()):
            assert f.read_bytes() == (b / "store" / f.name).read_bytes(), (name, f.name)


def test_a_render_store_on_disk_renders_what_one_in_memory_does(tmp_path):
    """Workers read the store memory-mapped; the in-memory store of Web.build must give the
    same blocks, and a store of another format is refused."""
    from fictionworld.generators import generate_world
    from fictionworld.web.render import Renderer
    from fictionworld.web.store import RenderStore, write_store

    world = generate_world(small_spec(1500, block=100), 4)
    on_disk = Renderer(write_store(world, tmp_path / "store"))
    in_memory = Renderer.of_world(world)
    assert on_disk.blocks == in_memory.blocks == Renderer.count_blocks(world) > 3
    for b in range(on_disk.blocks):
        assert on_disk.render_block(b).equals(in_memory.render_block(b)), b
    meta = json.loads((tmp_path / "store" / "store.json").read_text())
    (tmp_path / "store" / "store.json").write_text(json.dumps({**meta, "format": "fictionworld-render-store/0"}))
    with pytest.raises(ValueError, match="not a render store"):
        RenderStore.open(tmp_path / "store")


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads the kernel's resident pages in /proc/self/smaps"
)
def test_a_worker_keeps_its_renderer_but_not_the_store_pages_a_shard_read(tmp_path):
    """A worker's renderer outlives its render tasks; the store pages a task read are let go
    when it ends (they added up to the whole store in every worker), and the next task, reading
    them again through the same mapping, renders the same pages."""
    from fictionworld.generators import generate_world
    from fictionworld.web import shard_tasks
    from fictionworld.web.store import write_store

    world = generate_world(small_spec(1500, block=100), 4)
    store = tmp_path / "store"
    write_store(world, store)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    shard_tasks.RENDERER_CACHE.clear()
    try:
        renderer = shard_tasks._renderer(str(store))
        first = renderer.render_block(1)
        assert resident_bytes(store) > 0  # (what a task leaves behind without the release)
        n, _, _ = shard_tasks.render_shard(str(store), 0, (0, 3), str(tmp_path / "a"))
        assert shard_tasks._renderer(str(store)) is renderer and resident_bytes(store) == 0
        shard_tasks.render_shard(str(store), 0, (0, 3), str(tmp_path / "b"))
        assert (tmp_path / "a" / "shard-00000.arrow").read_bytes() == (
            tmp_path / "b" / "shard-00000.arrow"
        ).read_bytes()
        assert renderer.render_block(1).equals(first) and n > first.num_rows
    finally:
        shard_tasks.RENDERER_CACHE.clear()


@pytest.mark.parametrize("seed", range(6))
def test_shard_pages_stream_into_batches_of_one_size_with_renamed_urls(tmp_path, monkeypatch, seed):
    """Shards of any sizes and record batches (empty ones included) join into batches of
    exactly PAGE_BATCH rows but the last, in order, with the renamed pages' URLs."""
    from fictionworld.web import join as sh
    from fictionworld.web.arrow import read_arrow, write_arrow
    from fictionworld.web.pages import PAGE_SCHEMA
    from fictionworld.web.pagetext import Texts, codec_of

    monkeypatch.setattr(sh, "PAGE_BATCH", 7)
    rng = np.random.default_rng(seed)
    files, total = [], 0
    for s in range(int(rng.integers(1, 6))):
        n = int(rng.choice([0, 1, 6, 7, 8, int(rng.integers(0, 30))]))
        rows = {f.name: [None] * n for f in PAGE_SCHEMA}
        rows["url"] = [f"https://x.test/{total + i}" for i in range(n)]
        rows["text"] = [f"page {total + i}" for i in range(n)]
        total += n
        files.append(tmp_path / f"shard-{s}.arrow")
        write_arrow(files[-1], pa.table(rows, schema=PAGE_SCHEMA), max_chunksize=int(rng.integers(1, 10)))
    renamed = {int(r): f"https://x.test/renamed-{r}" for r in rng.choice(max(total, 1), min(total, 3), replace=False)}
    assert sh._write_pages(files, renamed, tmp_path / "pages.arrow") == total
    reader = pa.ipc.open_file(pa.memory_map(str(tmp_path / "pages.arrow")))
    sizes = [reader.get_batch(i).num_rows for i in range(reader.num_record_batches)]
    assert sum(sizes) == total and all(n == 7 for n in sizes[:-1]) and (not sizes or 0 < sizes[-1] <= 7)
    want = [renamed.get(i, f"https://x.test/{i}") for i in range(total)]
    joined = read_arrow(tmp_path / "pages.arrow")
    assert joined.column("url").to_pylist() == want
    assert list(Texts(joined.column("text"), codec_of(joined.schema))) == [f"page {i}" for i in range(total)]


@pytest.mark.parametrize("workers", [1, 2])
def test_make_graph_writes_the_graph_and_store_that_the_world_in_memory_gives(tmp_path, workers):
    """With two workers the store's entity half runs beside the rest of the graph's write and
    its fact half beside the hash, and the lexicon's first part is written after the hash,
    beside the fact half; with one, the store's halves run after the write, in turn, and the
    lexicon is left to the build's first tasks. The same files as the world in memory gives."""
    from fictionworld.generators import generate_world
    from fictionworld.storage import save_world
    from fictionworld.web import shard_tasks
    from fictionworld.web.shard_tasks import build_lexicon, make_graph, seal_file, sealed_intact
    from fictionworld.web.store import write_store

    spec = small_spec(3000, block=100).model_copy(update={"generation_block": 512})
    world = generate_world(spec, 6)
    save_world(world, tmp_path / "a" / "graph", web=False)
    write_store(world, tmp_path / "a" / "store")
    shard_tasks.WORLD_CACHE.clear()
    try:
        build_lexicon(str(tmp_path / "a" / "graph"), str(tmp_path / "a" / "lexicon"))
    finally:
        shard_tasks.WORLD_CACHE.clear()
    b = tmp_path / "b"
    times = make_graph(spec.model_dump(mode="json"), 6, str(b / "graph"), str(b / "store"), ("local", workers), str(b / "lexicon"))  # fmt: skip
    assert times["write_s"] > 0 and times["hash_s"] > 0
    made = ["graph", "store"] + (["lexicon", seal_file(b / "lexicon").name] if workers > 1 else [])
    assert sorted(p.name for p in b.iterdir()) == sorted(made)  # no store.tmp, no spool, no lexicon.tmp
    assert ("lexicon_s" in times) == (workers > 1)
    if workers > 1:
        assert sealed_intact(b / "lexicon") is None
    for d in made[:3]:
        names = sorted(p.name for p in (tmp_path / "a" / d).iterdir())
        assert names == sorted(p.name for p in (tmp_path / "b" / d).iterdir())
        for name in names:
            assert (tmp_path / "a" / d / name).read_bytes() == (tmp_path / "b" / d / name).read_bytes(), (d, name)


class _Finalized:
    """A garbage cycle that records which process destroyed it."""

    def __init__(self, where):
        self.where, self.me = where, self

    def __del__(self):
        import os

        (self.where / str(os.getpid())).touch()


def _collect() -> int:
    import gc
    import os

    gc.collect()
    return os.getpid()


def test_a_forked_worker_never_destroys_what_its_parent_left_as_garbage(tmp_path):
    """A forked worker's garbage collection leaves the inherited objects alone: the parent's
    garbage (a search index, a Ray reference) is destroyed in the parent, whose threads and
    locks its destructors expect, or nowhere."""
    import gc
    import os

    from fictionworld.executors import forked_pool

    pool = forked_pool(1)  # (it forks at the first task)
    gc.disable()
    try:
        _Finalized(tmp_path)  # garbage now: a cycle, left for the collector
        child = pool.submit(_collect).result()
    finally:
        gc.enable()
        pool.shutdown()
    gc.collect()
    assert child != os.getpid() and {p.name for p in tmp_path.iterdir()} == {str(os.getpid())}


def test_the_lexicon_is_taken_as_written_once_sealed_and_a_task_run_again_leaves_it(tmp_path, monkeypatch):
    """The page join finishes the lexicon in place, so the build takes its first part as
    written only once its task has sealed it (hashed after the files are in place; a join
    started on ``part.json`` alone would change the files under the hashing); and the task run
    again after that (Ray retries a task whose worker was lost) leaves it alone, where it would
    replace the directory the join may be finishing."""
    from fictionworld.generators import generate_world
    from fictionworld.storage import save_world
    from fictionworld.web import shard_tasks, shards
    from fictionworld.web.lexicon import write_lexicon

    world = generate_world(small_spec(1500, block=100), 4)
    graph, lexicon = tmp_path / "graph", tmp_path / "lexicon"
    save_world(world, graph, web=False)
    join = shards._PageJoin(False, 1, tmp_path, graph, {})
    written = []
    monkeypatch.setattr("fictionworld.web.lexicon.write_lexicon", lambda *a: written.append(a) or write_lexicon(*a))
    shard_tasks.WORLD_CACHE.clear()
    try:
        seal = shard_tasks.seal
        monkeypatch.setattr(shard_tasks, "seal", lambda p: None)
        shard_tasks.build_lexicon(str(graph), str(lexicon))
        assert (lexicon / "part.json").exists() and not join.lexicon_done()
        seal(lexicon)
        assert join.lexicon_done() and shard_tasks.sealed_intact(lexicon) is None
        shard_tasks.build_lexicon(str(graph), str(lexicon))
        assert len(written) == 1
    finally:
        shard_tasks.WORLD_CACHE.clear()
