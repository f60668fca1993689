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
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from fictionworld.errors import FictionWorldError
from fictionworld.executors import POOL_RESTARTS, LocalTasks, RayTasks
from fictionworld.web.index import common_limit
from fictionworld.web.index_files import write_json
from fictionworld.web.join import MOVING, PAGES_DONE, join_pages, join_shards, joined_intact, move_joined, unjoin
from fictionworld.web.render import RENDERER
from fictionworld.web.shard_tasks import (
    RENDERER_CACHE,
    WORLD_CACHE,
    build_lexicon,
    graph_progress,
    index_shard,
    make_graph,
    render_shard,
    seal_file,
    tidy,
    write_graph,
)
from fictionworld.web.store import RenderStore

__all__ = ["build_world", "BuildError", "plan_shards", "BUILD_DIR"]

BUILD_DIR = ".building"
GRAPH_PROGRESS = "graph.progress.json"  # where the graph stage says how far it is
CHECK_LIMIT = 20  # violations the build lists per kind
PLAN_FORMAT = "fictionworld-build/1"
Progress = Callable[[str, int, int], None]  # (stage, done, total)


class BuildError(FictionWorldError, RuntimeError):
    """A build that cannot go on (a foreign unfinished build in the way, a worker that keeps dying)."""

    exit_code = 1


def plan_shards(blocks: int, shards: int) -> list[tuple[int, int]]:
    """``shards`` runs of whole blocks, as even as possible (fewer when there are fewer blocks)."""
    shards = max(1, min(shards, blocks))
    cuts = [round(i * blocks / shards) for i in range(shards + 1)]
    return [(a, b) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]


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
    if out.exists() and (out / "manifest.json").exists() and not (build / MOVING).exists():
        # (with the marker, a build stopped after writing the manifest, before removing itself)
        if not force:
            raise FileExistsError(f"{out} holds a world (pass force=True / --force to overwrite)")
        shutil.rmtree(out)
    elif out.exists() and any(p.name != BUILD_DIR for p in out.iterdir()) and not (build / MOVING).exists():
        # (with the marker, the files beside the build are the ones it was moving into place)
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
    if plan is None and (build / MOVING).exists():
        shutil.rmtree(out)  # (the files already moved out of the build are that build's too)
    elif plan is None and build.exists():
        shutil.rmtree(build)
    if plan is not None and (build / MOVING).exists():  # stopped while moving the joined world into place
        say("resuming", 0, 1)
        checks_file = build / "checks.json"
        violations = json.loads(checks_file.read_text()) if validate and checks_file.exists() else []
        summary = move_joined(build, build / "graph", out, say, check=True)
        return {**summary, "times": times, "violations": violations, "nodes": [],
                "shards": len(plan["shards"]), "resumed_shards": len(plan["shards"])}  # fmt: skip
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
        # (the lexicon's first part: the graph stage writes it when workers run beside it)
        lexicon = None if _lexicon_done(build) else str(build / "lexicon")
        steps = build / GRAPH_PROGRESS  # (the graph stage runs in a process of its own: it says where it is there)
        steps.unlink(missing_ok=True)

        def poll() -> None:
            if (at := graph_progress(steps)) is not None:
                say(f"graph: {at[0]}", at[1], at[2])

        times.update(runner.alone(make_graph, want["spec"], want["seed"], str(graph), str(store), where, lexicon,
                                  str(steps), poll=poll))  # fmt: skip
        steps.unlink(missing_ok=True)
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
    for cache in (WORLD_CACHE, RENDERER_CACHE):
        cache.clear()
    return {**summary, "times": times, "violations": result["violations"], "nodes": result["nodes"],
            "shards": len(plan["shards"]), "resumed_shards": result["resumed_shards"]}  # fmt: skip


def _drop_damaged(build: Path, counts: dict[int, int], indexed: set[int], say: Progress) -> None:
    """Before a resumed build takes what it finished: the joined pages and lexicon still as the
    page join recorded them (else the join is undone, :func:`~fictionworld.web.join.unjoin`),
    the unfinished lexicon and each rendered shard's pages and each indexed shard's index still
    as :func:`~fictionworld.web.shard_tasks.seal` recorded them (all read whole); else that part
    is made again. A damaged page file once the render store is gone is rendered from a store
    written again from the build's graph (:func:`~fictionworld.web.store_stream.write_store_from_graph`:
    the same store, byte for byte). Once the pages are joined, an indexed shard's pages are
    never read again, and are not checked."""
    from fictionworld.web.shard_tasks import sealed_intact

    pages_dir, index_dir, lexicon = build / "pages", build / "index", build / "lexicon"
    joined = (build / PAGES_DONE).exists()
    if joined:
        say("checking the joined pages", 0, 1)
        if joined_intact(build) is not None:
            unjoin(build)
            joined = False
        say("checking the joined pages", 1, 1)
    lexicon_seal = seal_file(lexicon)
    if not joined and (lexicon.exists() or lexicon_seal.exists()) and sealed_intact(lexicon) is not None:
        # (damaged, unsealed, or holding what a join stopped half-way left: made again from the graph)
        shutil.rmtree(lexicon, ignore_errors=True)
        lexicon_seal.unlink(missing_ok=True)
    finished, checked = len(counts) + len(indexed), 0
    if finished:
        say("checking the finished shards", 0, finished)
    for s in sorted(indexed):
        if sealed_intact(index_dir / f"shard-{s:05d}") is not None:
            indexed.discard(s)
        checked += 1
        say("checking the finished shards", checked, finished)
    damaged = []
    for s in sorted(counts):
        if not (joined and s in indexed):  # (else its pages are read by nothing any more)
            if sealed_intact(pages_dir / f"shard-{s:05d}.arrow") is not None:
                damaged.append(s)
        checked += 1
        say("checking the finished shards", checked, finished)
    if damaged and not (build / "store" / "store.json").exists():  # (removed once every shard was rendered)
        from fictionworld.web.store_stream import write_store_from_graph

        # before counts.json loses the shards: a build stopped while the store is written is
        # still one with every shard rendered, which resumes here, not from a new graph
        say("writing the render store again", 0, 1)
        write_store_from_graph(build / "graph", build / "store")
        say("writing the render store again", 1, 1)
    for s in damaged:
        del counts[s]
        indexed.discard(s)
    if damaged:
        write_json(build / "counts.json", counts)
    for p in index_dir.glob("shard-*.done"):
        if int(p.stem.split("-")[1]) not in indexed:
            p.unlink()  # (its index is made again, over what is left of it)


def _run(runner, plan: dict, build: Path, graph: Path, validate: bool, say: Progress, times: dict) -> dict:
    """Render every unfinished shard, index each as soon as the page ids before it are known,
    and check the graph alongside (and write the lexicon's first part, where the graph stage
    did not: :func:`~fictionworld.web.shard_tasks.make_graph`); starts the pool again if a local
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
    _drop_damaged(build, counts, indexed, say)
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
                side = [job for _, job in first[:1]]  # the first pass (or a unit), after the lexicon if that is here
                tags = [(job[0].__name__, -1) for job in jobs] + [("check", key) for key, _ in first[:1]]
                pending: dict = dict(zip(runner.start(jobs + side), tags))
                for s, blocks in enumerate(shards):
                    if s not in counts:
                        pending[runner.submit(render_shard, str(build / "store"), s, blocks, str(pages_dir))] = (
                            "render",
                            s,
                        )
                for key, job in first[1:]:  # the units that need no first pass, after the renderers
                    pending[runner.submit(tidy, *job)] = ("check", key)
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
                                pending[runner.submit(tidy, *job)] = ("check", key)
                            if checks.violations is not None:
                                violations = [v.model_dump(mode="json") for v in checks.violations]
                                write_json(checks_file, violations)
                        done = len(counts) + len(indexed) + (1 if violations is not None else 0)
                        say("rendering and indexing", done, total)
                        page_join.start_when_ready(len(counts) == len(shards))
                page_join.wait()
                break
            except KeyboardInterrupt:  # Ctrl-C: the workers are killed, not waited for; a rerun resumes
                runner.stop(now=True)
                raise
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
    for s in range(len(shards)):  # (each page id is the pages counted before it: a wrong count moves them all)
        done = index_dir / f"shard-{s:05d}.done"
        if (indexed_pages := done.read_text().strip()) != str(counts[s]):
            raise BuildError(
                f"{done}: shard {s} indexed {indexed_pages} pages, but {counts_file.name} says "
                f"{counts[s]}: the build's files were changed; remove {build} to start over"
            )
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


def _lexicon_done(build: Path) -> bool:
    """The lexicon's first part is written and sealed (its writer hashes it after the files are
    in place: not before, or the join would finish it under the hashing), or, once the pages
    are joined, it is finished."""
    return seal_file(build / "lexicon").exists() or (build / PAGES_DONE).exists()


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
        return _lexicon_done(self.build)

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
