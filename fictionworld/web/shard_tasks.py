"""The tasks of a sharded build (:mod:`~fictionworld.web.shards`): the same functions run in
the driver, in local worker processes or as Ray tasks. Make the graph and its render store;
render a shard's blocks to a page file; index a shard's pages; write the lexicon. A worker keeps
what it opened (the graph, a store's renderer) for its next task, in the caches below.
"""

from __future__ import annotations

import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc

from fictionworld.executors import LocalTasks, RayTasks, forked_pool
from fictionworld.executors import node_name as _node
from fictionworld.web.pages import PAGE_SCHEMA
from fictionworld.web.render import Renderer, plain_text
from fictionworld.web.store import RenderStore, write_store

__all__ = [
    "seal",
    "sealed_intact",
    "seal_file",
    "make_graph",
    "graph_progress",
    "write_graph",
    "render_shard",
    "index_shard",
    "index_heap",
    "tidy",
    "build_lexicon",
    "SHARD_COMPRESSION",
]

# A shard's pages are written compressed (Arrow IPC, each buffer of each record batch): the
# shards wait on disk until the join has copied them all into ``pages.arrow``, and were the
# most of a build's disk at its peak (1M entities: 1.8 GiB of shards beside 0.87 GiB of joined
# pages). zstd made 100,000 pages of a 1M world 4.4 times smaller (67.6 -> 15.3 MB), their
# write taking 0.14 CPU s against 0.05 plain and a read 0.05 s against 0.01. Readers need not
# know: Arrow's reader decompresses what it reads.
SHARD_COMPRESSION = "zstd"

WORLD_CACHE: dict[str, object] = {}  # graph directory -> World, one per worker process
# render store directory -> (its store.json's identity when opened, Renderer): a store removed,
# or removed and written again (a resumed build that renders a damaged shard again), is let go
RENDERER_CACHE: dict[str, tuple[tuple[int, int] | None, Renderer]] = {}


def _world(graph: str):
    w = WORLD_CACHE.get(graph)
    if w is None:
        from fictionworld.world import World

        # The driver verified the files when it wrote or resumed the graph.
        w = WORLD_CACHE[graph] = World.load(graph, verify=False)
    return w


def _store_id(store: str) -> tuple[int, int] | None:
    """(inode, modification time) of a store's ``store.json`` (written last), or None."""
    try:
        st = (Path(store) / "store.json").stat()
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_mtime_ns


def _renderer(store: str) -> Renderer:
    WORLD_CACHE.clear()  # a worker that wrote the lexicon or ran the checks needs the graph no more
    _forget_removed_stores()
    got = RENDERER_CACHE.get(store)
    if got is None:
        got = RENDERER_CACHE[store] = (_store_id(store), Renderer(RenderStore.open(store)))
    return got[1]


def _forget_removed_stores() -> None:
    """Drop the renderers of stores no longer on disk (the driver removes the store once every
    shard is rendered), or written again since they were opened: their mappings would hold its
    disk space until the worker ends. Index tasks call it as they start, between record batches
    and as they end (at 10M entities the store is 6.8 GiB), and render tasks as they start. A
    stat per store: cheap enough to ask often."""
    _drop_renderers([s for s, (opened, _) in RENDERER_CACHE.items() if _store_id(s) != opened])


def _drop_renderers(stores: list[str]) -> None:
    for store in stores:
        del RENDERER_CACHE[store]
    if stores:
        import gc

        gc.collect()  # (the store's Arrow buffers hold its mappings)


def tidy(fn, *args):
    """``fn(*args)`` in a worker that first lets go of its renderers (the check units' tasks).
    The checks are queued after every render task, so a worker that starts one has rendered
    for the last time in this build (a task queued later that does render opens its store
    again: a mapping, milliseconds). Kept, the renderer would map the store through the check
    units that the last renderers run next, long after the store is removed: at 10M entities
    both workers held the removed 6.8 GiB store for minutes, disk space the build's peak
    counted."""
    _drop_renderers(list(RENDERER_CACHE))
    return fn(*args)


def make_graph(
    spec: dict,
    seed: int,
    graph: str,
    store: str,
    where: tuple = ("local", 1),
    lexicon: str | None = None,
    progress: str | None = None,
) -> dict:
    """Generate the world into ``graph`` and write its render store to ``store``, in a process
    of its own. No process holds the whole world: the generators' block tasks spool what they
    make, and this process writes the graph from the spools a block at a time
    (:func:`fictionworld.generators.streamed.write_graph_files`); the store is written from the graph's
    files by workers (:mod:`~fictionworld.web.store_stream`): its entity files as soon as
    ``entities.parquet`` is written, beside the rest of the write, and its fact files beside
    the content hash. The block tasks run on ``where``: ``("local", workers)`` (forked from
    this process) or ``("ray",)`` (the cluster this task runs on).

    With ``lexicon`` (a directory) and workers beside this process, this process writes the
    lexicon's first part there (as :func:`build_lexicon`, sealed) once the hash is taken: it
    would otherwise only wait for the store's fact half, which ends after the hash (5.7 s at
    1M entities, 63.7 s at 10M), while the lexicon took a worker from the first renderers.

    With ``progress`` (a file), the stage it is at is kept there for the driver to show
    (:func:`graph_progress`): ``{"stage", "done", "total"}``, a step per round of block tasks,
    one for writing the graph and one for sealing the render store."""
    from fictionworld.generators.streamed import write_graph_files
    from fictionworld.spec import WorldSpec
    from fictionworld.web.store_stream import seal_store, write_store_entities, write_store_facts
    from fictionworld.world import World

    world_spec = WorldSpec.model_validate(spec)
    report = _GraphProgress(progress, world_spec)
    store = Path(store)
    tmp = store.with_name(store.name + ".tmp")
    for d in (store, tmp):
        shutil.rmtree(d, ignore_errors=True)
    tasks = LocalTasks(where[1]) if where[0] == "local" else RayTasks(None, None)
    tasks.start([])
    lexicon_times: dict[str, float] = {}
    halves = {
        "entities": (write_store_entities, int(seed), world_spec.web.perturbation_pool),
        "facts": (write_store_facts,),
    }

    def store_beside(written: Path, part: str):
        if part == "hashed":
            if lexicon is not None and tasks.concurrent:  # (with one worker nothing would overlap)
                t, cpu = time.perf_counter(), time.process_time()
                _write_lexicon_part(World.load(written, verify=False).entities, lexicon)
                lexicon_times.update(lexicon_s=time.perf_counter() - t, lexicon_cpu_s=time.process_time() - cpu)
            return lambda: None
        # With one worker a task runs here, at once: the entity half then waits for the write
        # to end, so as not to hold its memory beside the writer's (nothing would overlap).
        if not tasks.concurrent:
            if part == "entities":
                return lambda: None
            parts = ["entities", "facts"]
        else:
            parts = [part]
        futures = [tasks.submit(halves[p][0], str(written), str(tmp), *halves[p][1:]) for p in parts]
        return lambda: [tasks.result(f) for f in futures]

    try:
        times = write_graph_files(world_spec, int(seed), graph, tasks=tasks, beside=store_beside, progress=report.step)
    finally:
        tasks.stop()
    report.step("sealing the render store")
    seal_store(graph, tmp)
    os.replace(tmp, store)
    return {**times, **lexicon_times, "save_s": times["write_s"] + times["hash_s"], "graph_peak_rss": _peak_rss()}


class _GraphProgress:
    """Where :func:`make_graph` is, kept in a file the driver reads (:func:`graph_progress`):
    a step per round of the generators' block tasks, one for writing the graph, one for
    sealing the render store."""

    def __init__(self, path: str | None, world_spec):
        from fictionworld.generators import plan
        from fictionworld.generators.blocks import waves

        counts = world_spec.counts()
        self.path, self.done = (Path(path) if path else None), 0
        self.total = len(waves(plan(counts), counts)) + 2

    def step(self, stage: str) -> None:
        """A step begins: a round of generators (their ids), ``write``, or what make_graph says."""
        if self.path is None:
            return
        from fictionworld.web.index_files import write_json

        if stage == "write":
            stage = "writing the graph"
        elif self.done < self.total - 2:
            stage = f"generating: {stage}"
        write_json(self.path, {"stage": stage, "done": self.done, "total": self.total})
        self.done += 1


def graph_progress(path: str | Path) -> tuple[str, int, int] | None:
    """(stage, steps done, steps in all) of the graph stage that writes ``path``, or None while
    it has written nothing there (or what it wrote cannot be read)."""
    import json

    try:
        data = json.loads(Path(path).read_text())
        return str(data["stage"]), int(data["done"]), int(data["total"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_graph(world, graph: str | Path, store: str | Path) -> None:
    """Save ``world`` (without web) to ``graph`` and its render store to ``store``; the store's
    ``store.json`` is written last and marks the stage done. The graph is saved beside the
    store, by the first way that fits in free memory:

    - a forked child, when two more copies of this process would still fit (the child only
      reads the world, but every page it touches may be copied, and both count in the build's
      RSS);
    - else a thread, when half a copy more fits: both writers' buffers are live at once, but
      the world is shared. Much of either writer runs without the GIL (Arrow's encoders, zstd,
      NumPy's sorts), so the two overlap: 13.4–15.0 s one after the other against 7.6–9.3 s
      in threads at 1M, for 0.22 GiB more peak RSS (a 10M world on a 24 GiB machine saves
      this way);
    - else one after the other."""
    import psutil

    from fictionworld.storage import save_world

    graph, store = Path(graph), Path(store)
    for d in (graph, store):
        shutil.rmtree(d, ignore_errors=True)
    room, rss = psutil.virtual_memory().available, psutil.Process().memory_info().rss
    saver = None
    if room > 3 * rss:
        WORLD_CACHE[str(graph)] = world  # the child inherits it
        saver = forked_pool(1)
        saved = saver.submit(_save_inherited, str(graph))
    elif room > rss // 2:
        saver = ThreadPoolExecutor(1)
        saved = saver.submit(save_world, world, graph, web=False)
    else:
        save_world(world, graph, web=False)
    try:
        tmp = store.with_name(store.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        write_store(world, tmp)
        if saver is not None:
            saved.result()
    finally:
        if saver is not None:
            saver.shutdown(wait=True, cancel_futures=True)
            WORLD_CACHE.pop(str(graph), None)
    os.replace(tmp, store)


def _save_inherited(graph: str) -> None:
    from fictionworld.storage import save_world

    save_world(WORLD_CACHE[graph], graph, web=False)


def _peak_rss() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


SEAL_SUFFIX = ".sum.json"


def seal_file(path: Path) -> Path:
    """Where :func:`seal` records ``path``: ``<name>.sum.json`` beside it."""
    return path.with_name(path.name + SEAL_SUFFIX)


def seal(path: str | Path) -> None:
    """Record the size and digest of a finished shard's file (a directory: of each of its files,
    but tantivy's lock and bookkeeping files) beside it, in ``<name>.sum.json``. A resumed
    build takes a finished shard only while it still matches (:func:`sealed_intact`): Arrow
    and tantivy files carry no checksum, and a damaged one would otherwise be joined into the
    world, or fail the join with no file named, at every run."""
    from fictionworld.digests import file_digests, files_under
    from fictionworld.web.index_files import write_json

    path = Path(path)
    if path.is_dir():
        record = file_digests(path, tuple(files_under(path)))
    else:
        record = file_digests(path.parent, (path.name,))
    write_json(seal_file(path), record)


def sealed_intact(path: str | Path) -> str | None:
    """Why a finished shard's file (or directory) is not the one :func:`seal` recorded (missing,
    unsealed, another size or digest, or a directory holding a file the seal does not record:
    the join would take it along), or None when it is. Reads it whole."""
    import json

    from fictionworld.digests import check_files
    from fictionworld.reading import WorldFormatError

    path = Path(path)
    if not path.exists():
        return f"{path} is missing"
    try:
        record = json.loads(seal_file(path).read_text())
    except (OSError, ValueError):
        return f"{path} has no readable record of its digest ({seal_file(path).name})"
    if path.is_dir() and isinstance(record, dict):
        from fictionworld.digests import files_under

        extra = sorted(set(files_under(path)) - set(record))
        if extra:
            return f"{path} holds {extra[0]}, which {seal_file(path).name} does not record"
    try:
        check_files(path if path.is_dir() else path.parent, record, digests=True, record=seal_file(path).name)
    except WorldFormatError as e:
        return str(e)
    return None


def render_shard(store: str, shard: int, blocks: tuple[int, int], pages_dir: str) -> tuple[int, str, float]:
    """Render blocks [a, b) to ``pages_dir/shard-NNNNN.arrow``; returns (page count, node)."""
    t = time.process_time()
    r = _renderer(store)
    final = Path(pages_dir) / f"shard-{shard:05d}.arrow"
    tmp = final.with_suffix(f".tmp{os.getpid()}")
    n = 0
    try:
        options = ipc.IpcWriteOptions(compression=SHARD_COMPRESSION)
        with pa.OSFile(str(tmp), "wb") as sink, ipc.new_file(sink, PAGE_SCHEMA, options=options) as writer:
            for b in range(*blocks):
                batch = r.render_block(b)
                writer.write_batch(batch)
                n += batch.num_rows
    finally:
        r.store.release()  # (the worker keeps the renderer for its next shard, not the pages read)
    os.replace(tmp, final)
    seal(final)
    return n, _node(), time.process_time() - t


# The index writer's memory: tantivy writes a segment each time its heap fills, and a term
# lookup costs about a microsecond in every segment, several times per query clause (`benchmarks/BIG_WORLDS.md`,
# "Index segments"). A shard's heap is sized to hold all of its pages (about 370 bytes
# each: 256 MB filled at 0.7M pages of the 10M world), so that each shard is one segment where
# memory allows, and never less than INDEX_HEAP_MIN (one segment per shard at 1M either way).
INDEX_HEAP_MIN = 256_000_000
INDEX_HEAP_PER_PAGE = 480  # bytes, with room: a segment cut short leaves a small one behind
INDEX_HEAP_MAX = 3_000_000_000  # tantivy takes under 4 GB per indexing thread
INDEX_HEAP_MEMORY_SHARE = 0.2  # of the memory available when the task starts


def index_heap(pages: int, available: int) -> int:
    """Bytes of index-writer heap for a shard of ``pages`` pages, ``available`` bytes free."""
    want = max(INDEX_HEAP_MIN, pages * INDEX_HEAP_PER_PAGE)
    return int(max(INDEX_HEAP_MIN, min(want, INDEX_HEAP_MAX, INDEX_HEAP_MEMORY_SHARE * available)))


def index_shard(
    pages_file: str, offset: int, index_dir: str, heap: int | None = None, terms_above: float = 0.0
) -> tuple[int, str, float]:
    """Index a shard's pages as page ids ``offset``… into ``index_dir`` (its own segments),
    listing its terms on more than ``terms_above`` of them (:data:`~fictionworld.web.index.COMMON_TERMS`);
    ``heap``: the writer's bytes (default :func:`index_heap`)."""
    import psutil

    from fictionworld.web.index import TantivyIndex

    t = time.process_time()
    WORLD_CACHE.clear()  # the index writer's heap gets the graph's memory (the renderer stays: the
    # worker renders again next, and its store is memory-mapped)
    _forget_removed_stores()
    final = Path(index_dir)
    tmp = final.with_name(final.name + f".tmp{os.getpid()}")
    # The shard is read (not mapped) a record batch at a time, only the two columns indexed: a
    # mapping keeps every page it read in the process's RSS until it is let go (a shard's file
    # is 2.3 GiB at 10M)
    with pa.OSFile(pages_file, "r") as source:
        columns = ipc.open_file(source).schema.get_field_index
        if heap is None:
            titles = ipc.open_file(source, options=ipc.IpcReadOptions(included_fields=[columns("title")]))
            pages = sum(titles.get_batch(i).num_rows for i in range(titles.num_record_batches))
            heap = index_heap(pages, psutil.virtual_memory().available)
        fields = [columns("title"), columns("text"), columns("layer")]
        reader = ipc.open_file(source, options=ipc.IpcReadOptions(included_fields=fields))

        def batches():
            for i in range(reader.num_record_batches):
                # The store is removed once the last shard is rendered, often while this task
                # runs (76 s a shard at 10M entities): let go of it then, not at the task's end.
                _forget_removed_stores()
                yield reader.get_batch(i)

        docs = (
            (title, plain_text(text), layer)
            for batch in batches()
            for title, text, layer in zip(*(batch.column(c).to_pylist() for c in ("title", "text", "layer")))
        )
        n = TantivyIndex.build(docs, tmp, heap=heap, first_id=offset, terms_above=terms_above).num_docs
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    seal(final)
    _forget_removed_stores()  # (removed while this task ran: the last index tasks run beside the join)
    return n, _node(), time.process_time() - t


def build_lexicon(graph: str, target: str) -> tuple[None, str, float]:
    """The linker and entity names of the web's lexicon (:mod:`fictionworld.web.lexicon`),
    written beside the rendering when the graph stage did not write it (:func:`make_graph`);
    the driver adds the speller at the end."""
    t = time.process_time()
    if seal_file(Path(target)).exists():  # a task run again (Ray retries one whose worker was lost
        return None, _node(), 0.0  # after it sealed): the lexicon is written, and may be being finished
    _write_lexicon_part(_world(graph).entities, target)
    return None, _node(), time.process_time() - t


def _write_lexicon_part(e, target: str) -> None:
    """The lexicon's first part of the entity table ``e``, written to ``target`` and sealed."""
    from fictionworld.web.lexicon import entity_forms, write_lexicon
    from fictionworld.web.linker import EntityLinker

    write_lexicon(target, EntityLinker(e.name.tolist(), e.aliases.tolist()), entity_forms(e))
    seal(target)  # last: the build takes the lexicon as written once it is sealed (lexicon_done)
