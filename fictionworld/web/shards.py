"""Sharded, resumable world builds: graph, checks, pages and index over local processes or Ray.

The web is rendered in blocks of ``spec.web.block`` entities (:class:`~fictionworld.web.render.Renderer`);
a shard is a run of whole blocks. Each shard renders its pages to an Arrow file, then indexes
them into its own tantivy segments with the page ids they will have in the whole web; the
driver joins them (:mod:`~fictionworld.web.join`): settles URL clashes and streams the shards
into ``pages.arrow`` once all are rendered (beside the last index tasks, when workers run
beside it), then joins the segments into one index. BM25 statistics are read
across all segments at search time, so the joined index ranks exactly as one built in one go;
the pages, their order and the ``world_hash`` do not depend on the number of shards, workers
or machines.

Work lives in ``<out>/.building/`` until the end; a build that is killed (a worker, or the
whole command) continues from the shards already finished when it is run again.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc

from fictionworld.executors import POOL_RESTARTS, LocalTasks, RayTasks, die_with_parent
from fictionworld.executors import node_name as _node
from fictionworld.web.index import common_limit
from fictionworld.web.index_files import write_json
from fictionworld.web.join import PAGES_DONE, join_pages, join_shards
from fictionworld.web.pages import PAGE_SCHEMA
from fictionworld.web.render import RENDERER, Renderer, plain_text
from fictionworld.web.store import RenderStore, write_store

__all__ = ["build_world", "BuildError", "plan_shards", "BUILD_DIR"]

BUILD_DIR = ".building"
CHECK_LIMIT = 20  # violations the build lists per kind
PLAN_FORMAT = "fictionworld-build/1"
# A shard's pages are written compressed (Arrow IPC, each buffer of each record batch): the
# shards wait on disk until the join has copied them all into ``pages.arrow``, and were the
# most of a build's disk at its peak (1M entities: 1.8 GiB of shards beside 0.87 GiB of joined
# pages). zstd made 100,000 pages of a 1M world 4.4 times smaller (67.6 -> 15.3 MB), their
# write taking 0.14 CPU s against 0.05 plain and a read 0.05 s against 0.01. Readers need not
# know: Arrow's reader decompresses what it reads.
SHARD_COMPRESSION = "zstd"
Progress = Callable[[str, int, int], None]  # (stage, done, total)


class BuildError(RuntimeError):
    """A build that cannot go on (a foreign unfinished build in the way, a worker that keeps dying)."""


def plan_shards(blocks: int, shards: int) -> list[tuple[int, int]]:
    """``shards`` runs of whole blocks, as even as possible (fewer when there are fewer blocks)."""
    shards = max(1, min(shards, blocks))
    cuts = [round(i * blocks / shards) for i in range(shards + 1)]
    return [(a, b) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]


# -- tasks: the same functions run in a local process or as Ray tasks -------------------------
_WORLDS: dict[str, object] = {}  # graph directory -> World, one per worker process
_RENDERERS: dict[str, Renderer] = {}  # render store directory -> Renderer


def _world(graph: str):
    w = _WORLDS.get(graph)
    if w is None:
        from fictionworld.world import World

        # The driver verified the files when it wrote or resumed the graph.
        w = _WORLDS[graph] = World.load(graph, verify=False)
    return w


def _renderer(store: str) -> Renderer:
    _WORLDS.clear()  # a worker that wrote the lexicon or ran the checks needs the graph no more
    r = _RENDERERS.get(store)
    if r is None:
        r = _RENDERERS[store] = Renderer(RenderStore.open(store))
    return r


def _forget_removed_stores() -> None:
    """Drop the renderers of stores no longer on disk (the driver removes the store once every
    shard is rendered): their mappings would hold its disk space until the worker ends. Index
    tasks call it as they start and end (at 10M entities the store is 6.8 GiB)."""
    gone = [s for s in _RENDERERS if not (Path(s) / "store.json").exists()]
    for store in gone:
        del _RENDERERS[store]
    if gone:
        import gc

        gc.collect()  # (the store's Arrow buffers hold its mappings)


def make_graph(spec: dict, seed: int, graph: str, store: str, where: tuple = ("local", 1)) -> dict:
    """Generate the world into ``graph`` and write its render store to ``store``, in a process
    of its own. No process holds the whole world: the generators' block tasks spool what they
    make, and this process writes the graph from the spools a block at a time
    (:func:`generators.streamed.write_graph_files`); the store is written from the graph's
    files (:func:`~fictionworld.web.store_stream.write_store_from_graph`) by a worker, beside
    the content hash. The block tasks run on ``where``: ``("local", workers)`` (forked from
    this process) or ``("ray",)`` (the cluster this task runs on)."""
    from fictionworld.spec import WorldSpec
    from fictionworld.web.store_stream import write_store_from_graph
    from generators.streamed import write_graph_files

    store = Path(store)
    tmp = store.with_name(store.name + ".tmp")
    for d in (store, tmp):
        shutil.rmtree(d, ignore_errors=True)
    tasks = LocalTasks(where[1]) if where[0] == "local" else RayTasks(None, None)
    tasks.start([])

    def store_beside(written: Path):
        f = tasks.submit(write_store_from_graph, str(written), str(tmp))
        return lambda: tasks.result(f)

    try:
        times = write_graph_files(WorldSpec.model_validate(spec), int(seed), graph, tasks=tasks, beside=store_beside)
    finally:
        tasks.stop()
    os.replace(tmp, store)
    return {**times, "save_s": times["write_s"] + times["hash_s"], "graph_peak_rss": _peak_rss()}


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
    import multiprocessing as mp

    import psutil

    from fictionworld.storage import save_world

    graph, store = Path(graph), Path(store)
    for d in (graph, store):
        shutil.rmtree(d, ignore_errors=True)
    room, rss = psutil.virtual_memory().available, psutil.Process().memory_info().rss
    saver = None
    if room > 3 * rss:
        _WORLDS[str(graph)] = world  # the child inherits it
        saver = ProcessPoolExecutor(1, mp_context=mp.get_context("fork"), initializer=die_with_parent)
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
            _WORLDS.pop(str(graph), None)
    os.replace(tmp, store)


def _save_inherited(graph: str) -> None:
    from fictionworld.storage import save_world

    save_world(_WORLDS[graph], graph, web=False)


def _peak_rss() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


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
    return n, _node(), time.process_time() - t


# The index writer's memory: tantivy writes a segment each time its heap fills, and a term
# lookup costs about a microsecond in every segment, several times per query clause (README,
# "Where search stands"). A shard's heap is sized to hold all of its pages (about 370 bytes
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
    _WORLDS.clear()  # the index writer's heap gets the graph's memory (the renderer stays: the
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
        reader = ipc.open_file(source, options=ipc.IpcReadOptions(included_fields=[columns("title"), columns("text")]))
        batches = (reader.get_batch(i) for i in range(reader.num_record_batches))
        docs = (
            (title, plain_text(text))
            for batch in batches
            for title, text in zip(batch.column("title").to_pylist(), batch.column("text").to_pylist())
        )
        n = TantivyIndex.build(docs, tmp, heap=heap, first_id=offset, terms_above=terms_above).num_docs
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    _forget_removed_stores()  # (removed while this task ran: the last index tasks run beside the join)
    return n, _node(), time.process_time() - t


def build_lexicon(graph: str, target: str) -> tuple[None, str, float]:
    """The linker and entity names of the web's lexicon (:mod:`fictionworld.web.lexicon`),
    written beside the rendering; the driver adds the speller at the end."""
    from fictionworld.web.lexicon import entity_forms, write_lexicon
    from fictionworld.web.linker import EntityLinker

    t = time.process_time()
    e = _world(graph).entities
    write_lexicon(target, EntityLinker(e.name.tolist(), e.aliases.tolist()), entity_forms(e))
    return None, _node(), time.process_time() - t


# -- the driver -------------------------------------------------------------------------------
def build_world(
    spec,
    seed: int,
    out: str | Path,
    *,
    workers: int | None = None,
    shards: int | None = None,
    use_ray: bool = False,
    address: str | None = None,
    validate: bool = True,
    force: bool = False,
    progress: Progress | None = None,
    world=None,
) -> dict:
    """Generate (or take ``world``), check, render and index a world into directory ``out``.

    ``workers`` processes (default: every core) share the work, or Ray tasks with ``use_ray``
    (``address`` of a running cluster, e.g. ``"auto"``; every node must see ``out``). ``shards``
    (default: four per worker) cuts the blocks into that many tasks. Re-running a killed build
    continues it. Returns a summary: world hash, counts, violations, seconds per stage."""
    from fictionworld.storage import read_manifest

    out = Path(out)
    say = progress or (lambda _s, _d, _t: None)
    workers = workers or os.cpu_count() or 1
    build = out / BUILD_DIR
    times: dict[str, float] = {}
    if out.exists() and (out / "manifest.json").exists():
        if not force:
            raise FileExistsError(f"{out} holds a world (pass force=True / --force to overwrite)")
        shutil.rmtree(out)
    elif out.exists() and any(p.name != BUILD_DIR for p in out.iterdir()):
        raise FileExistsError(f"{out} exists and is not a world directory; refusing to write into it")
    plan_file = build / "plan.json"
    want = {"format": PLAN_FORMAT, "renderer": RENDERER, "seed": int(seed), "spec": spec.model_dump(mode="json")}
    plan = json.loads(plan_file.read_text()) if plan_file.exists() else None
    if plan is not None and {k: plan.get(k) for k in want} != want:
        if not force:
            raise BuildError(
                f"{build} holds an unfinished build of another world (seed, spec or renderer differ); "
                "pass force=True / --force to start over"
            )
        plan = None
    if plan is None and build.exists():
        shutil.rmtree(build)
    graph, store = build / "graph", build / "store"
    t = time.perf_counter()
    build.mkdir(parents=True, exist_ok=True)
    runner = RayTasks(address, workers if not address else None) if use_ray else LocalTasks(workers)
    if (graph / "manifest.json").exists() and ((store / "store.json").exists() or _rendered(build, plan)):
        say("resuming", 0, 1)
        from fictionworld.world import World

        m = read_manifest(graph)
        if m["seed"] != want["seed"] or m["spec"] != want["spec"]:
            raise BuildError(f"{graph}: the saved graph is not this build's world; pass --force to start over")
        World.load(graph, verify="files")  # the files are the ones written
    elif world is not None:
        write_graph(world, graph, store)
    else:
        say("generating the graph", 0, 1)
        where = ("ray",) if use_ray else ("local", workers)
        times.update(runner.alone(make_graph, want["spec"], want["seed"], str(graph), str(store), where))
    world = None
    if plan is None:
        blocks = RenderStore.open(store).blocks
        plan = {**want, "blocks": blocks, "shards": plan_shards(blocks, shards or 4 * workers)}
        write_json(plan_file, plan)
    times["graph_s"] = time.perf_counter() - t

    result = _run(runner, plan, build, graph, validate, say, times)
    t = time.perf_counter()
    summary = join_shards(len(plan["shards"]), build, graph, out, say)
    times["finish_s"] = time.perf_counter() - t
    for cache in (_WORLDS, _RENDERERS):
        cache.clear()
    return {**summary, "times": times, "violations": result["violations"], "nodes": result["nodes"],
            "shards": len(plan["shards"]), "resumed_shards": result["resumed_shards"]}  # fmt: skip


def _run(runner, plan: dict, build: Path, graph: Path, validate: bool, say: Progress, times: dict) -> dict:
    """Render every unfinished shard, index each as soon as the page ids before it are known,
    and write the lexicon and check the graph alongside; starts the pool again if a local
    worker dies. With workers running beside the driver, the driver joins the pages
    (:func:`~fictionworld.web.join.join_pages`) as soon as every shard is rendered and the
    lexicon written, while the last shards are indexed."""
    shards = [tuple(s) for s in plan["shards"]]
    pages_dir, index_dir = build / "pages", build / "index"
    pages_dir.mkdir(exist_ok=True)
    index_dir.mkdir(exist_ok=True)
    counts_file = build / "counts.json"
    counts: dict[int, int] = {int(k): v for k, v in json.loads(counts_file.read_text()).items()} if counts_file.exists() else {}  # fmt: skip
    if len(counts) == len(shards):
        _remove_store(build)  # (a build killed before it removed the store)
    indexed = {int(p.stem.split("-")[1]) for p in index_dir.glob("shard-*.done")}
    checks_file = build / "checks.json"
    violations = json.loads(checks_file.read_text()) if checks_file.exists() else None
    checks = None
    resumed = len(counts)
    nodes: set[str] = set()
    page_join = _PageJoin(runner.concurrent, len(shards), build, graph, times)
    lexicon_done = page_join.lexicon_done

    def queue_indexes(pending: dict, queued: set[int]) -> None:
        """Index every rendered shard whose page ids are known (all shards before it rendered)."""
        offset = 0
        for s in range(len(shards)):
            if s not in counts:
                return
            if s not in indexed and s not in queued:
                # A clause common in the whole web is on more than common_limit(pages) / shards
                # pages of some shard, and the web has at least offset + counts[s] pages.
                above = common_limit(offset + counts[s]) / len(shards)
                f = runner.submit(index_shard, str(pages_dir / f"shard-{s:05d}.arrow"), offset,
                                  str(index_dir / f"shard-{s:05d}"), None, above)  # fmt: skip
                pending[f] = ("index", s)
                queued.add(s)
            offset += counts[s]

    t0 = time.perf_counter()
    try:
        for attempt in range(POOL_RESTARTS + 1):
            try:
                jobs = []
                if not lexicon_done():
                    jobs.append((build_lexicon, str(graph), str(build / "lexicon")))
                if validate and violations is None and checks is None:
                    from fictionworld.check.stream import StreamedCheck

                    shutil.rmtree(build / "checks", ignore_errors=True)
                    (build / "checks").mkdir()
                    checks = StreamedCheck(graph, build / "checks", CHECK_LIMIT)
                first = checks.start() if checks is not None and checks.violations is None else []
                side = [job for _, job in first[:1]]  # the first pass (or a unit) runs beside the lexicon
                tags = [(job[0].__name__, -1) for job in jobs] + [("check", key) for key, _ in first[:1]]
                pending: dict = dict(zip(runner.start(jobs + side), tags))
                for s, blocks in enumerate(shards):
                    if s not in counts:
                        pending[runner.submit(render_shard, str(build / "store"), s, blocks, str(pages_dir))] = (
                            "render",
                            s,
                        )
                for key, job in first[1:]:  # the units that need no first pass, after the renderers
                    pending[runner.submit(*job)] = ("check", key)
                queued: set[int] = set()

                queue_indexes(pending, queued)
                page_join.start_when_ready(len(counts) == len(shards))
                total = 2 * len(shards) + (1 if validate else 0)
                while pending:
                    for f in runner.wait(pending):
                        kind, s = pending.pop(f)
                        value = runner.result(f)
                        if kind == "check":
                            nodes.add(value[-2])
                            times["check_cpu_s"] = times.get("check_cpu_s", 0.0) + value[-1]
                        elif kind in ("render", "index", "build_lexicon"):
                            value, node, cpu = value
                            nodes.add(node)
                            stage = {"build_lexicon": "lexicon"}.get(kind, kind)
                            times[f"{stage}_cpu_s"] = times.get(f"{stage}_cpu_s", 0.0) + cpu
                        if kind == "render":
                            counts[s] = value
                            write_json(counts_file, counts)
                            if len(counts) == len(shards):
                                _remove_store(build)
                            queue_indexes(pending, queued)
                        elif kind == "index":
                            indexed.add(s)
                            (index_dir / f"shard-{s:05d}.done").write_text(str(value))
                        elif kind == "check":
                            for key, job in checks.done(s, value):
                                pending[runner.submit(*job)] = ("check", key)
                            if checks.violations is not None:
                                violations = [v.model_dump(mode="json") for v in checks.violations]
                                write_json(checks_file, violations)
                        done = len(counts) + len(indexed) + (1 if violations is not None else 0)
                        say("rendering and indexing", done, total)
                        page_join.start_when_ready(len(counts) == len(shards))
                page_join.wait()
                break
            except BrokenProcessPool:
                page_join.wait()  # no thread of this process running while the next pool is forked
                if attempt == POOL_RESTARTS:
                    raise BuildError(f"local workers died {POOL_RESTARTS + 1} times; the finished shards are kept in {build}") from None  # fmt: skip
            finally:
                runner.stop()
    finally:
        page_join.close()
    times["shards_s"] = time.perf_counter() - t0
    if not lexicon_done():
        raise BuildError(f"{build / 'lexicon'}: the lexicon was not written")
    return {"counts": counts, "violations": violations or [], "nodes": sorted(nodes), "resumed_shards": resumed}


def _rendered(build: Path, plan: dict | None) -> bool:
    """Whether every shard of ``plan`` is rendered (its render store is needed no more)."""
    counts_file = build / "counts.json"
    return plan is not None and counts_file.exists() and len(json.loads(counts_file.read_text())) == len(plan["shards"])


def _remove_store(build: Path) -> None:
    """Remove the render store once every shard is rendered: nothing reads it again (a resumed
    build goes on without it), and it lay on disk beside the shards and the joined pages, the
    build's peak (0.68 GiB at 1M entities). Its marker goes first, so a removal cut short
    leaves no store that looks whole. Workers let their mappings of it go at their next task."""
    store = build / "store"
    (store / "store.json").unlink(missing_ok=True)
    shutil.rmtree(store, ignore_errors=True)


class _PageJoin:
    """The page half of the join (:func:`~fictionworld.web.join.join_pages`), started by a
    driver thread as soon as every shard is rendered and the lexicon written, when the tasks
    run beside the driver (with one local worker they run in it, in turn: nothing to overlap)."""

    def __init__(self, concurrent: bool, n_shards: int, build: Path, graph: Path, times: dict):
        self.args = (n_shards, build, graph)
        self.build, self.times = build, times
        self.thread = ThreadPoolExecutor(1) if concurrent else None
        self.future = None

    def lexicon_done(self) -> bool:
        """The lexicon's first part is written (or, once the pages are joined, it is finished)."""
        return (self.build / "lexicon" / "part.json").exists() or (self.build / PAGES_DONE).exists()

    def start_when_ready(self, rendered: bool) -> None:
        if self.thread is not None and self.future is None and rendered and self.lexicon_done():
            self.future = self.thread.submit(self._join)

    def _join(self) -> None:
        t = time.perf_counter()
        join_pages(*self.args)
        self.times["join_pages_s"] = time.perf_counter() - t

    def wait(self) -> None:
        """Until the join started is done (its error raised here)."""
        if self.future is not None:
            self.future.result()

    def close(self) -> None:
        if self.thread is not None:
            self.thread.shutdown(wait=True)  # (a join still running when the build fails ends, sealed)
