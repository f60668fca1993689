"""Serving speed and memory: ``fictionworld serve`` under closed-loop HTTP load (single searches,
opens, Search-R1 batches of 64 queries) with 1 and then 2 worker processes, next to the same
queries answered in-process on one core in the same run, and what each worker process costs in
memory (PSS from /proc/<pid>/smaps_rollup).

    python benchmarks/bench_serve.py                                   # 100k world, the full grid
    python benchmarks/bench_serve.py --quick                           # 2k world, a smoke test
    python benchmarks/bench_serve.py --world DIR --workers 2 --kinds search --concurrency 16,64
    python benchmarks/bench_serve.py --entities 100000 --requests 500 --seconds 5 --json out.json

Worlds (``--seed``, default 7) are generated once with ``fictionworld generate`` and cached under
``--cache`` (default /tmp/fictionworld-bench/w{entities}-s{seed}), reused when the saved spec
matches; ``--world DIR`` takes a saved world instead.

1. In-process peers (a child process pinned to one core, which exits before any server starts,
   so no process outside the server maps the world's files when its memory is read):
   ``world.search(q)`` and ``world.web.open(url)`` on the same queries and URLs the load sends,
   one at a time; plus the handlers' own work without HTTP (``WorldService`` + JSON) for scale.
2. For each worker count: ``python -m fictionworld.cli serve DIR --port 0 --workers W`` (the port
   is read from its start line), wait for /health, check every worker answers (GET /info on new
   connections until each worker's pid was seen), warm up and check the answers' shape; then for
   each kind and concurrency C: C loops on C keep-alive connections, each sending its next request
   as soon as the previous one is answered (a closed loop), bounded by ``--requests`` and
   ``--seconds`` per configuration (after a short warm-up that opens the C connections). Then the
   server's memory, then SIGTERM (the supervisor must exit 0).

The client is ``httpx.AsyncClient`` (on uvloop where installed). By default each loop has its own
client of one connection: one client whose pool holds all C connections (``--httpx-pool
shared``) spends 2-4× the CPU per request from 16 connections up (httpcore's pool does O(C) work
per request), CPU taken from the server on a small machine. ``--client aiohttp`` (one session,
C connections) costs about a quarter of httpx's per-loop CPU, for a closer look at the server.

The load generator runs in this process, on the same machine as the server, so it competes
with the server for the CPU: the tables show its own CPU use (``client``), the server's
(supervisor + workers) and everything else on the machine (``others``), in % of one core.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
from record import Record, add_options  # (beside this script: its directory is on sys.path)
from serve_harness import (  # this directory: the benchmark runs as a script
    AiohttpLoad,
    HttpxLoad,
    MiB,
    Server,
    closed_loop,
    cpu_s,
    log,
    machine_busy_s,
    memory,
)
from serve_report import (  # this directory too
    BATCH,
    HEAD,
    TARGET_ENTITIES,
    TARGET_MEM_GROWTH,
    TARGET_RATIO,
    TARGET_WORKERS,
    check_targets,
    peer_rate,
    print_inprocess,
    print_memory,
    row,
)

KINDS = {"search": "/search", "open": "/open", "retrieve64": "/retrieve"}
DEFAULTS = {"entities": 100_000, "queries": 3_000, "requests": 3_000, "seconds": 10.0, "handler_queries": 500,
            "retrieve_batches": 8}  # fmt: skip
QUICK = {"entities": 2_000, "queries": 600, "requests": 300, "seconds": 3.0, "handler_queries": 200,
         "retrieve_batches": 3}  # fmt: skip
SETTINGS = ("seed", "requests", "seconds", "queries", "timeout", "max_in_flight", "workers", "concurrency", "kinds",
            "client", "httpx_pool")  # fmt: skip


# -- the world -----------------------------------------------------------------------------
def world_dir(args) -> Path:
    """``--world``, or the cached world of ``--entities`` and ``--seed`` (generated with the CLI
    into a temporary directory, then renamed, so a cut-off run leaves no half-written world)."""
    if args.world:
        d = Path(args.world)
        if not (d / "manifest.json").exists() or not (d / "web.json").exists():
            raise SystemExit(f"error: {d} is not a saved world with its web (manifest.json, web.json)")
        return d
    from fictionworld.spec import WorldSpec, default_spec

    n, seed = args.entities, args.seed
    d = Path(args.cache) / f"w{n}-s{seed}"
    try:
        m = json.loads((d / "manifest.json").read_text())
        if m["seed"] == seed and WorldSpec.model_validate(m["spec"]) == default_spec(n) and (d / "web.json").exists():
            log(f"reusing the {n:,}-entity world (seed {seed}) in {d}")
            return d
    except (OSError, ValueError, KeyError):
        pass
    d.parent.mkdir(parents=True, exist_ok=True)
    tmp = d.with_name(f"{d.name}.tmp-{os.getpid()}")
    log(f"generating a {n:,}-entity world (seed {seed}) into {d} …")
    t = time.perf_counter()
    cmd = [sys.executable, "-m", "fictionworld.cli", "generate", "--seed", str(seed), "--entities", str(n),
           "--out", str(tmp), "--force"]  # fmt: skip
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode:
        shutil.rmtree(tmp, ignore_errors=True)
        raise SystemExit(f"error: fictionworld generate failed ({r.returncode}):\n{r.stderr[-3000:]}")
    if d.exists():
        shutil.rmtree(d)  # a stale or mismatched world
    os.replace(tmp, d)
    log(f"generated and saved in {time.perf_counter() - t:.0f} s")
    return d


# -- in-process peers (a child process) ----------------------------------------------------
ATTRS = {"person": ["born", "occupation", "married", "died"], "company": ["founded", "employees", "headquarters", "CEO"],
         "city": ["population", "area"], "region": ["population", "capital"], "country": ["capital", "population"],
         "book": ["author", "published"], "film": ["director", "release"], "album": ["tracks", "released"],
         "product": ["price", "launched"], "event": ["attendance", "held"], "university": ["students", "founded"],
         "publisher": ["founded", "books"], "award": ["winners", "presented"], "sports_team": ["stadium", "sport"]}  # fmt: skip
VERBS = ["who founded", "who directed", "who wrote", "who won", "where is", "when was"]


def build_queries(world, n: int, rng: np.random.Generator) -> list[str]:
    """``n`` queries, fixed by ``rng``: 40 % page titles (any kind of page: articles, lists, news,
    blog and forum posts …), 30 % entity names, 30 % topical multi-word queries (a directory
    title in lower case, a name and an attribute word, a question about a name); shuffled."""
    pages, e = world.web.pages, world.entities
    titles, names = pages.titles, e.name
    lists = np.flatnonzero(pages.kind == "list")
    n_titles, n_names = int(n * 0.4), int(n * 0.3)
    n_topics = n - n_titles - n_names
    pick = lambda size, k: rng.choice(size, k, replace=size < k).tolist()
    qs = [titles[i] for i in pick(len(titles), n_titles)]
    qs += [str(names[r]) for r in pick(len(e), n_names)]
    for j, r in enumerate(pick(len(e), n_topics)):
        form = j % 3
        if form == 0 and len(lists):
            qs.append(titles[int(rng.choice(lists))].lower())
        elif form == 1:
            words = ATTRS.get(e.type_of(r), ["history"])
            qs.append(f"{names[r]} {words[int(rng.integers(len(words)))]}")
        else:
            qs.append(f"{VERBS[int(rng.integers(len(VERBS)))]} {names[r]}")
    return [qs[i] for i in rng.permutation(len(qs)).tolist()]


def timed(fn, xs) -> tuple[dict, list]:
    ts, outs = [], []
    for x in xs:
        t = time.perf_counter()
        outs.append(fn(x))
        ts.append(time.perf_counter() - t)
    a = np.array(ts) * 1e3
    return {"n": len(a), "p50_ms": float(np.percentile(a, 50)), "p99_ms": float(np.percentile(a, 99)),
            "mean_ms": float(a.mean()), "per_s": float(len(a) / (a.sum() / 1e3))}, outs  # fmt: skip


def inprocess_child(args) -> None:
    """Loads the world, draws the queries and URLs, times the peers on one core; writes JSON."""
    import fictionworld as fw
    from fictionworld.env.service import WorldService

    t = time.perf_counter()
    world = fw.load(args.world)
    web = world.web
    n_pages = len(web.pages)
    web.search(web.pages.titles[0])  # builds the linker and lookups, as the server does before forking
    load_s = time.perf_counter() - t
    rng = np.random.default_rng(args.seed)
    queries = build_queries(world, args.queries, rng)
    warm = build_queries(world, 200, np.random.default_rng(args.seed + 1))  # the server warms up on these too
    for q in warm[:100]:
        world.search(q)
    try:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        pinned = True
    except (AttributeError, OSError):
        pinned = False
    search, results = timed(world.search, queries)
    # URLs to open: half the URL of a random result of a query (what an agent opens), half any page.
    urls = [res[int(rng.integers(len(res)))].url for res in results[: len(queries) // 2] if len(res)]
    urls += [web.pages.urls[i] for i in rng.choice(n_pages, len(queries) - len(urls)).tolist()]
    urls = [urls[i] for i in rng.permutation(len(urls)).tolist()]
    for u in urls[:50]:
        world.web.open(u)
    open_, _ = timed(world.web.open, urls)
    svc = WorldService(web)
    dumps = lambda x: json.dumps(x, ensure_ascii=False, separators=(",", ":"))  # as the HTTP app encodes
    h = args.handler_queries
    h_search, _ = timed(lambda q: dumps(svc.search(q)), queries[:h])
    h_open, _ = timed(lambda u: dumps(svc.open_url(u)), urls[:h])
    batches = [queries[i * BATCH : (i + 1) * BATCH] for i in range(min(args.retrieve_batches, len(queries) // BATCH))]
    h_retrieve, _ = timed(lambda b: dumps({"result": svc.retrieve(b, 3, True)}), batches)
    h_retrieve["queries_per_s"] = h_retrieve["per_s"] * BATCH
    out = {
        "world": {
            "directory": str(args.world),
            "entities": len(world.entities),
            "facts": len(world.facts),
            "pages": n_pages,
            "world_hash": world.world_hash,
            "load_and_warm_s": load_s,
        },
        "pinned_one_core": pinned,
        "queries": queries,
        "warm_queries": warm,
        "urls": urls,
        "search": search,
        "open": open_,
        "handler_search": h_search,
        "handler_open": h_open,
        "handler_retrieve64": h_retrieve,
    }
    Path(args.inprocess_child).write_text(json.dumps(out))


def inprocess(args, wdir: Path) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "inprocess.json"
        cmd = [sys.executable, __file__, "--world", str(wdir), "--seed", str(args.seed), "--queries", str(args.queries),
               "--handler-queries", str(args.handler_queries), "--retrieve-batches", str(args.retrieve_batches),
               "--inprocess-child", str(path)]  # fmt: skip
        r = subprocess.run(cmd)
        if r.returncode:
            raise SystemExit(f"error: the in-process run failed ({r.returncode})")
        return json.loads(path.read_text())


# -- the server ----------------------------------------------------------------------------
def bodies(kind: str, data: dict, queries: list[str]) -> list[bytes]:
    enc = lambda x: json.dumps(x, ensure_ascii=False).encode()
    if kind == "search":
        return [enc({"query": q}) for q in queries]
    if kind == "open":
        return [enc({"url": u}) for u in data["urls"]]
    return [enc({"queries": queries[i * BATCH : (i + 1) * BATCH], "topk": 3, "return_scores": True})
            for i in range(len(queries) // BATCH)]  # fmt: skip


async def run_config(server: Server, kind: str, conc: int, payloads: list[bytes], warm: list[bytes], args) -> dict:
    import psutil

    me = psutil.Process()
    if args.client == "aiohttp":
        load = AiohttpLoad(server.url, conc, args.timeout)
    else:
        load = HttpxLoad(server.url, conc, args.timeout, args.httpx_pool)
    try:
        # Warm-up (not counted): cheap single searches from every loop, which opens the C connections.
        await closed_loop(load, "/search", warm, conc, n=max(2 * conc, 20), seconds=3.0, timeout=args.timeout)
        c0, w0, m0 = cpu_s(me), [cpu_s(p) for _, p in server.processes()], machine_busy_s()
        r = await closed_loop(load, KINDS[kind], payloads, conc, args.requests, args.seconds, args.timeout)
        c1, w1, m1 = cpu_s(me), [cpu_s(p) for _, p in server.processes()], machine_busy_s()
    finally:
        await load.close()
    el, per = r["elapsed_s"], BATCH if kind == "retrieve64" else 1
    server_pct = [100 * (b - a) / el for a, b in zip(w0, w1)]
    r.update(workers=server.workers, kind=kind, concurrency=conc,
             ok_req_per_s=r["ok"] / el, answered_per_s=(r["ok"] + r["busy_503"] + r["other_http"]) / el,
             queries_per_s=r["ok"] * per / el, client_cpu_pct=100 * (c1 - c0) / el,
             server_cpu_pct=sum(server_pct), process_cpu_pct=server_pct,
             machine_cpu_pct=100 * (m1 - m0) / el)  # fmt: skip
    r["others_cpu_pct"] = r["machine_cpu_pct"] - r["client_cpu_pct"] - r["server_cpu_pct"]
    return r


def warm_and_check(server: Server, data: dict, warm: list[str]) -> str:
    """A few requests of every kind on new connections (so every worker gets some), checking the
    answers' shape; raises on anything but 200."""
    import httpx

    got = Counter()
    with httpx.Client(base_url=server.url, timeout=60, limits=httpx.Limits(max_keepalive_connections=0)) as client:
        for path, body in [("/search", {"query": q}) for q in warm[100:160]] + \
                          [("/open", {"url": u}) for u in data["urls"][-60:]]:  # fmt: skip
            r = client.post(path, json=body)
            if r.status_code != 200:
                raise RuntimeError(f"warm-up: POST {path} {body} answered {r.status_code}: {r.text[:300]}")
            got[(path, r.json()["status"])] += 1
        for i in range(2):
            b = warm[i * BATCH : (i + 1) * BATCH]
            r = client.post("/retrieve", json={"queries": b, "topk": 3, "return_scores": True})
            if r.status_code != 200:
                raise RuntimeError(f"warm-up: POST /retrieve answered {r.status_code}: {r.text[:300]}")
            res = r.json()["result"]
            ok = len(res) == len(b) and all(len(x) <= 3 and all("document" in d and "score" in d for d in x)
                                             for x in res)  # fmt: skip
            if not ok:
                raise RuntimeError(f"warm-up: /retrieve answered the wrong shape: {r.text[:300]}")
            got[("/retrieve", f"{len(res)} results")] += 1
    return ", ".join(f"{p} {s} ×{n}" for (p, s), n in sorted(got.items()))


def record(rec: Record, inproc: dict, results: list[dict], mem: dict, stops: dict, targets: list) -> None:
    """The run's figures: the in-process peers, each load configuration, the servers' memory and
    stops; served / in-process and 2 / 1 workers' memory as ratio targets; the other targets'
    verdicts as notes."""
    world = inproc["world"]
    at = {"entities": world["entities"]}
    for key in ("facts", "pages"):
        rec.figure(key, world[key], "", **at)
    rec.figure("load and warm-up", world["load_and_warm_s"], "s", **at)
    for key in ("search", "open", "handler_search", "handler_open", "handler_retrieve64"):
        rec.stats("in-process", inproc[key], **at, what=key, one_core=inproc["pinned_one_core"])
    for r in results:
        fields = {k: v for k, v in r.items() if k not in ("workers", "kind", "concurrency")}
        rec.stats("served", fields, **at, workers=r["workers"], kind=r["kind"], concurrency=r["concurrency"])
    for w, m in mem.items():
        for when, got in (("after start and warm-up", m["after_start"]), ("after the load", m["after_load"])):
            if got["readable"]:
                for field, value in got["total"].items():
                    rec.figure("server memory", value / MiB, "MiB", **at, workers=w, when=when, of=field)
    for w, s in stops.items():
        if s["exit_code"] is not None:
            rec.figure("supervisor exit code", s["exit_code"], "", **at, workers=w)
        if s["stop_s"] is not None:
            rec.figure("stop after SIGTERM", s["stop_s"], "s", **at, workers=w)
    served = [
        r for r in results if r["workers"] == TARGET_WORKERS and r["kind"] == "search" and r["concurrency"] in (16, 64)
    ]
    if served:
        best = max(served, key=lambda r: r["queries_per_s"])
        rec.ratio(f"served search queries/s ({TARGET_WORKERS} workers, best of 16/64 clients) / in-process world.search",
                  best["queries_per_s"], inproc["search"]["per_s"], at_least=TARGET_RATIO, **at,
                  against="world.search on the same queries in one process pinned to one core, in the same run")  # fmt: skip
        rec.figure("clients of the best served search", best["concurrency"], "", **at, workers=TARGET_WORKERS)
    if 1 in mem and 2 in mem and mem[1]["after_load"]["readable"] and mem[2]["after_load"]["readable"]:
        rec.ratio("total PSS after the load, 2 workers / 1 worker", mem[2]["after_load"]["total"]["Pss"],
                  mem[1]["after_load"]["total"]["Pss"], at_most=1 + TARGET_MEM_GROWTH, **at,
                  against="the 1-worker server after the same load, in the same run")  # fmt: skip
    for name, measured, verdict in targets:
        rec.note(f"{verdict}: {name}: {measured}")


# -- main ----------------------------------------------------------------------------------
def csv_ints(s: str) -> list[int]:
    try:
        xs = [int(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: {s!r}") from None
    if not xs or min(xs) < 1:
        raise argparse.ArgumentTypeError(f"give positive integers: {s!r}")
    return xs


def csv_kinds(s: str) -> list[str]:
    xs = [x.strip() for x in s.split(",") if x.strip()]
    if not xs or any(x not in KINDS for x in xs):
        raise argparse.ArgumentTypeError(f"kinds are {', '.join(KINDS)}: not {s!r}")
    return xs


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--world", help="a saved world (instead of generating one)")
    ap.add_argument("--entities", type=int, help=f"entities of the generated world (default {DEFAULTS['entities']:,})")
    ap.add_argument("--seed", type=int, default=7, help="world seed, and the seed of the queries and URLs")
    ap.add_argument("--cache", default="/tmp/fictionworld-bench", help="where generated worlds are kept")
    ap.add_argument("--workers", type=csv_ints, default=[1, 2], help="worker counts, one server each (default 1,2)")
    ap.add_argument("--concurrency", type=csv_ints, default=[1, 16, 64, 256], help="clients (default 1,16,64,256)")
    ap.add_argument("--kinds", type=csv_kinds, default=list(KINDS), help="default search,open,retrieve64")
    ap.add_argument(
        "--requests", type=int, help=f"requests per configuration at most (default {DEFAULTS['requests']:,})"
    )
    ap.add_argument(
        "--seconds", type=float, help=f"seconds per configuration at most (default {DEFAULTS['seconds']:g})"
    )
    ap.add_argument("--queries", type=int, help=f"distinct queries and URLs (default {DEFAULTS['queries']:,})")
    ap.add_argument("--handler-queries", type=int, help="in-process handler rows: calls (default 500)")
    ap.add_argument("--retrieve-batches", type=int, help=f"in-process handler rows: batches of {BATCH} (default 8)")
    ap.add_argument("--timeout", type=float, default=60.0, help="client timeout per request, seconds (default 60: "
                    "past the server's own 30 s limit, so a timeout here means a hang)")  # fmt: skip
    ap.add_argument("--max-in-flight", type=int, help="passed to serve (default: serve's, 64 per worker)")
    ap.add_argument("--startup-timeout", type=float, default=300.0, help="seconds for the server to be ready")
    ap.add_argument("--client", choices=["httpx", "aiohttp"], default="httpx", help="HTTP client of the load")
    ap.add_argument("--httpx-pool", choices=["per-loop", "shared"], default="per-loop",
                    help="httpx: one AsyncClient (1 connection) per loop, or one AsyncClient with C connections")  # fmt: skip
    ap.add_argument("--no-uvloop", action="store_true", help="run the load generator on asyncio's own loop")
    ap.add_argument("--quick", action="store_true", help="a smoke test: 2k world, 300 requests, 3 s per config")
    ap.add_argument("--json", help="write the results as JSON here")
    ap.add_argument("--inprocess-child", help=argparse.SUPPRESS)
    add_options(ap)
    args = ap.parse_args()
    for k, v in (QUICK if args.quick else DEFAULTS).items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    if args.queries < 2 * BATCH:
        ap.error(f"--queries must be at least {2 * BATCH}")
    return args


def main() -> int:
    args = parse_args()
    if args.inprocess_child:
        inprocess_child(args)
        return 0
    with Record("serve", args) as rec:
        code = run(args, rec)
    return code


def run(args: argparse.Namespace, rec: Record) -> int:
    """The in-process peers, then the servers under load: printed, recorded, and the exit code."""
    import httpx
    import psutil

    def on_sigterm(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_sigterm)  # stop the server on SIGTERM too, as on Ctrl-C
    loop_name = "asyncio"
    if not args.no_uvloop:
        try:
            import uvloop

            asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
            loop_name = "uvloop"
        except ImportError:
            pass
    t_start = time.perf_counter()
    me = psutil.Process()
    cpu_run0 = cpu_s(me)
    wdir = world_dir(args)
    log(f"in-process peers: {args.queries:,} queries and URLs (seed {args.seed}) on one core …")
    inproc = inprocess(args, wdir)
    print_inprocess(inproc)
    queries, warm_q = inproc["queries"], inproc["warm_queries"]
    warm_bodies = bodies("search", inproc, warm_q)
    payloads = {k: bodies(k, inproc, queries) for k in args.kinds}
    n_cpu = os.cpu_count()
    if args.client == "aiohttp":
        import aiohttp

        client_name = f"aiohttp {aiohttp.__version__} (one ClientSession, C connections)"
    else:
        pool = "one AsyncClient with C connections" if args.httpx_pool == "shared" else "one AsyncClient per loop"
        client_name = f"httpx {httpx.__version__} ({pool})"
    print(f"\n== HTTP load: closed loop, {client_name} on {loop_name} in this process; "
          f"≤ {args.requests:,} requests and ≤ {args.seconds:g} s per config ==")  # fmt: skip
    print(f"NOTE: the load generator runs on the same {n_cpu}-CPU machine as the server and competes with it for\n"
          f"the CPU. client / server / others = CPU use of this process / the server's processes / everything\n"
          f"else on the machine, in % of one core (the machine has {n_cpu * 100} %); per process = the server's\n"
          f"share by supervisor/worker 0/worker 1 … (a worker near 0 % got no connection: the kernel gives a new\n"
          f"connection to whichever worker accepts first). Latency: 2xx answers, as the client sees them.\n"
          f"vs peer = queries/s ÷ the in-process one-core rate (search: world.search, open: world.web.open,\n"
          f"retrieve64: WorldService.retrieve). tmo = client timeouts, conn = connection errors. A 503 counts\n"
          f"as sent, and its loop sends its next request at once (it does not wait the Retry-After).")  # fmt: skip
    results: list[dict] = []
    mem: dict[int, dict] = {}
    stops: dict[int, dict] = {}
    header_shown = False
    interrupted = failed = False
    try:
        for w in args.workers:
            server = Server(wdir, w, args.max_in_flight, args.startup_timeout)
            try:
                log(f"starting the server with {w} worker(s) …")
                server.start()
                log(f"{server.url}: address after {server.opened_s:.1f} s, every worker answering after "
                    f"{server.ready_s:.1f} s; warming up …")  # fmt: skip
                if server.info["world_hash"] != inproc["world"]["world_hash"]:
                    raise RuntimeError("the server serves another world than the in-process run loaded")
                log(f"warm-up answers: {warm_and_check(server, inproc, warm_q)}")
                mem_start = memory(server)
                for kind in args.kinds:
                    for c in args.concurrency:
                        log(f"W{w} {kind} × {c} clients …")
                        r = asyncio.run(run_config(server, kind, c, payloads[kind], warm_bodies, args))
                        r["vs_peer"] = r["queries_per_s"] / peer_rate(inproc, kind)
                        results.append(r)
                        if not header_shown:
                            print(HEAD)
                            header_shown = True
                        print(row(r), flush=True)
                        server._check_alive("during the load")
                        if len(server.worker_procs) and not all(p.is_running() for p in server.worker_procs):
                            log("warning: a worker died during the load (the supervisor replaces it)")
                mem[w] = {"after_start": mem_start, "after_load": memory(server)}
            finally:
                log(f"stopping the {w}-worker server (SIGTERM) …")
                stops[w] = server.stop()
                s = stops[w]
                left = f"; workers left running (now killed): {s['workers_left']}" if s["workers_left"] else ""
                log(f"supervisor exit code {s['exit_code']} after {s['stop_s']:.1f} s"
                    f"{' (it did not stop: killed)' if s['killed'] else ''}{left}")  # fmt: skip
    except KeyboardInterrupt:
        interrupted = True
        log("interrupted: the server was stopped; reporting what was measured")
    except RuntimeError as exc:
        failed = True
        print(f"error: {exc}", file=sys.stderr)
    cpu_run = cpu_s(me) - cpu_run0
    wall = time.perf_counter() - t_start

    print_memory(mem)
    if 1 in mem and 2 in mem and mem[1]["after_load"]["readable"] and mem[2]["after_load"]["readable"]:
        p1, p2 = mem[1]["after_load"]["total"]["Pss"], mem[2]["after_load"]["total"]["Pss"]
        print(f"\na second worker adds {p2 / p1 - 1:+.1%} (total PSS of 2 workers vs 1 worker: "
              f"{p1 / MiB:.0f} → {p2 / MiB:.0f} MiB)")  # fmt: skip
    print(f"\nload generator (this process, world never loaded here): {cpu_run:.1f} CPU s over the "
          f"{wall:.0f} s run ({100 * cpu_run / wall:.0f} % of one core on average); per config see 'client' above")  # fmt: skip
    codes = ", ".join(f"W{w}: {s['exit_code']}" for w, s in stops.items())
    print(f"server exit codes after SIGTERM: {codes or 'no server was started'}")
    targets = check_targets(results, mem, inproc, stops)
    ents = inproc["world"]["entities"]
    note = "" if abs(ents - TARGET_ENTITIES) <= TARGET_ENTITIES // 10 else \
        f" — set for a {TARGET_ENTITIES:,}-entity world; this one has {ents:,}: indicative only"  # fmt: skip
    print(f"\n== targets{note} ==")
    for name, measured, verdict in targets:
        print(f"{verdict:<4}  {name}: {measured}")
    record(rec, inproc, results, mem, stops, targets)
    rec.figure("load generator CPU", cpu_run, "s", entities=ents)
    rec.figure("run", wall, "s", entities=ents)
    if interrupted or failed:
        rec.note(f"the run was {'interrupted' if interrupted else 'stopped by an error'}: what was measured until then")
    if args.json:
        out = {
            "argv": sys.argv[1:],
            "interrupted": interrupted,
            "failed": failed,
            "wall_s": wall,
            "machine": {
                "cpus": n_cpu,
                "platform": platform.platform(),
                "python": platform.python_version(),
                "client": client_name,
                "client_loop": loop_name,
            },
            "settings": {k: getattr(args, k) for k in SETTINGS},
            "world": inproc["world"],
            "inprocess": {k: v for k, v in inproc.items() if k not in ("queries", "warm_queries", "urls", "world")},
            "query_examples": queries[:20],
            "results": results,
            "memory": {str(w): m for w, m in mem.items()},
            "server_stops": {str(w): s for w, s in stops.items()},
            "load_generator_cpu_s": cpu_run,
            "targets": [{"target": a, "measured": b, "verdict": c} for a, b, c in targets],
        }
        Path(args.json).write_text(json.dumps(out, indent=1))
        log(f"wrote {args.json}")
    return 130 if interrupted else 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
