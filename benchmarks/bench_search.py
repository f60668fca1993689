"""Search speed: index build, load, and query latency of the web of a 100k (and 1M) world,
next to bm25s and rank-bm25 on the same pages and queries in the same process.

    python benchmarks/bench_search.py                        # 100k with peers
    python benchmarks/bench_search.py --sizes 1000000 --no-peers
    python benchmarks/bench_search.py --world DIR            # serving a saved world (any size)
    python benchmarks/bench_search.py --world DIR --engine   # the engine alone on name queries
    python benchmarks/bench_search.py --world DIR --cold     # pages not in the page cache
    python benchmarks/bench_search.py --world DIR --hidden   # hidden layers: left out in the engine or struck out
    python benchmarks/bench_search.py --world DIR --evict --verify on-read files   # first answers from disk
    python benchmarks/bench_search.py --world DIR --preload  # Web.preload or not, alternated in one process
    python benchmarks/bench_search.py --world DIR --by-speed --repeat 2   # by the machine's speed (machine.py)
    python benchmarks/bench_search.py --world DIR --split [--preload]   # where a search's time goes

``--world`` times a fresh process from its start to its first answer, opening the world as a
server does (``verify="on-read"``: lazily read tables, each data file's digest checked before
its first read, the memory-mapped lexicon), with both digests checked first (``"files"``),
trusted (``"none"``), and as ``World.load`` does by default (the content hash); ``--evict``
takes every file of the world out of the page cache before each process. Then query latency on
one core: over the first 1,200 queries of the fresh process (its caches and memory maps cold),
then over 1,200 other queries it has not seen (a server some queries into its life).

Each size runs in a fresh subprocess (its own RSS). Latencies are single-query, one at a time,
on one core (the process is pinned to one CPU where the OS allows). "engine" is the index alone
(tokenise + top-10); "retrieval" adds entity linking (rapidfuzz) and visibility filtering under the default
knobs (``Web.hits``); "search tool" is the whole ``world.search``: retrieval plus rendering the
ten results with query-dependent snippets.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from statistics import median

import machine  # (these three beside this script: its directory is on sys.path)
from record import Record, add_options
from search_children import (
    BY_SPEED_CHILD,
    CHILD,
    COLD_CHILD,
    ENGINE_CHILD,
    HIDDEN_CHILD,
    LATENCY_QUERIES,
    PRELOAD_CHILD,
    SERVE_CHILD,
    SPLIT_CHILD,
)


def _child(code: str, *args: str) -> dict:
    """Run ``code`` in a fresh Python process with ``args``; the JSON of its last line of
    output (its error output, and this script's exit, if it fails)."""
    r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
    if r.returncode:
        print(r.stderr, file=sys.stderr)
        raise SystemExit(r.returncode)
    return json.loads(r.stdout.strip().splitlines()[-1])


def engine(world: str, rec: Record) -> None:
    """The engine alone (``TantivyIndex.search``, top 20) on 600 name queries (a name, a name
    and a word, "who founded X") in a fresh process: first pass, 600 unseen queries after
    it, then the first 600 again, with common clauses limited as today and by share alone."""
    print(f"== engine on {world} (fresh process each; one core; top 20) ==")
    for limit in ("default", "share"):
        d = _child(ENGINE_CHILD, world, limit)
        print(
            f"common beyond {d['limit']:,.0f} pages ({limit}): "
            + ", ".join(
                f"{k} p50 {d[k]['p50_ms']:.2f} / p99 {d[k]['p99_ms']:.1f} ms" for k in ("first", "unseen", "again")
            )
        )
        rec.figure("common beyond", d["limit"], "pages", world=world, limit=limit)
        for k in ("first", "unseen", "again"):
            rec.stats("engine latency", d[k], world=world, limit=limit, queries=k)


def hidden(world: str, repeat: int, rec: Record) -> None:
    """Retrieval (``Web.hits``, n = 10) over the 2,400 queries of the latency runs, the pages of
    hidden layers struck out after ranking ("after", as before 2026-11-27), left out in the engine
    when a query fetches again ("again", what ``Web.hits`` does), and left out from the first
    fetch ("first"): the three alternated query by query in one process, the common-clause
    cache emptied before each search (each query pays for its common words, as in a fresh
    process). Under the world's default knobs."""
    print(
        f"== hidden layers: {world} (one process per run; one core; Web.hits, n = 10; common-clause cache emptied each time) =="
    )
    for run in range(1, repeat + 1):
        d = _child(LATENCY_QUERIES + HIDDEN_CHILD, world)
        if "error" in d:
            raise SystemExit(d["error"])
        print(
            f"{d['queries']:,} queries, {d['fetched_again']} fetched again when struck out after ranking (fetches: {d['fetches']})"
        )
        for way, label in (("after", "struck out after ranking"), ("again", "left out when fetching again"),
                           ("first", "left out from the first fetch")):  # fmt: skip
            m = d[way]
            print(f"  {label:30} p50 {m['p50_ms']:.2f} p99 {m['p99_ms']:.2f} mean {m['mean_ms']:.2f} ms | fetched again: "
                  f"median {m['again_median_ms']:.2f} mean {m['again_mean_ms']:.2f} | the others' mean {m['others_mean_ms']:.2f}")  # fmt: skip
            rec.stats("hits latency", m, world=world, hidden=label, run=run)
        rec.figure("queries", d["queries"], "", world=world, run=run)
        rec.figure("fetched again", d["fetched_again"], "queries", world=world, run=run)
        for fetches, queries in enumerate(d["fetches"]):
            rec.figure("queries by fetches", queries, "queries", world=world, fetches=fetches, run=run)


def cold(world: str, repeat: int, rec: Record, queries: int = 600) -> None:
    """A fresh process's first answer (imports, ``World.load``, one search) and its next
    ``queries`` searches (names, names and a word), with ``pages.arrow`` evicted from the page
    cache first (the index and lexicon as earlier runs left them): the pages file mapped for
    random access (``PAGES_ACCESS``, the default) against the kernel's default read-ahead,
    alternated, the same queries each time. Linux only."""
    print(f"== cold pages: {world} (fresh process each; one core; {queries} searches; pages.arrow evicted first) ==")
    _child(COLD_CHILD, world, "random", "50")  # warms the index and lexicon for every run after
    runs: dict[str, list[dict]] = {"random": [], "normal": []}
    for i in range(repeat):
        for access in ("normal", "random") if i % 2 else ("random", "normal"):
            d = _child(COLD_CHILD, world, access, str(queries))
            runs[access].append(d)
            print(
                f"{access:7} imports to first answer {d['first_answer_s']:5.2f} s, then p50 {d['p50_ms']:7.2f}  "
                f"p90 {d['p90_ms']:7.2f}  p99 {d['p99_ms']:7.1f} ms, read from disk {d['read_mib_per_query']:7.2f} MiB per search"
            )
            rec.stats("cold pages", d, world=world, access=access, queries=queries, run=i + 1)
    r, n = (median(d["p50_ms"] for d in runs[a]) for a in ("random", "normal"))
    b, m = (median(d["read_mib_per_query"] for d in runs[a]) for a in ("random", "normal"))
    print(f"median p50: default read-ahead / random = {n / r:.2f}x; bytes read: {m / max(b, 1e-9):.1f}x")
    rec.ratio("median p50, default read-ahead / random", n, r, world=world,
              against="the pages mapped for random access (PAGES_ACCESS), runs alternated")  # fmt: skip
    rec.figure("bytes read, default read-ahead / random", m / max(b, 1e-9), "×", world=world)
    import os

    import psutil

    from fictionworld.web.arrow import choose_access

    size, free = os.path.getsize(os.path.join(world, "pages.arrow")), psutil.virtual_memory().available
    print(
        f"PAGES_ACCESS='auto' maps these {size / 2**30:.1f} GiB of pages, with {free / 2**30:.1f} GiB available: {choose_access(size, free)}"
    )
    rec.figure("pages file", size / 2**30, "GiB", world=world)
    rec.figure("memory available", free / 2**30, "GiB", world=world)
    rec.note(f"PAGES_ACCESS='auto' maps the pages of {world}: {choose_access(size, free)}")


def _evict(world: str) -> int:
    """Drop every file of ``world`` from the page cache (``posix_fadvise``; pages a process
    maps stay); returns the bytes asked for."""
    import os

    total = 0
    for root, _dirs, files in os.walk(world):
        for name in files:
            fd = os.open(os.path.join(root, name), os.O_RDONLY)
            try:
                total += os.fstat(fd).st_size
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
    return total


def serve(world: str, repeat: int, rec: Record, modes: tuple[str, ...] = ("on-read", "files", "none", "content"),
          evict: bool = False) -> None:  # fmt: skip
    """Fresh processes opening ``world``: wall time from spawning one to its first answer
    (``evict``: with every file of the world out of the page cache first)."""
    import time

    print(
        f"== serving {world} (fresh process each; one core{'; every file evicted from the page cache first' if evict else ''}) =="
    )
    for verify in modes:
        for i in range(repeat if verify != "content" else 1):
            if evict:
                _evict(world)
            spawned = time.time()  # (the child that also times queries exits long after its first answer)
            d = _child(
                LATENCY_QUERIES + SERVE_CHILD, world, verify, "1" if (verify, i) == (modes[0], 0) and not evict else "0"
            )
            wall = d["first_answer_at"] - spawned
            print(
                f"verify={verify:8} spawn to first answer {wall:.2f} s  (in process {d['in_process_s']:.2f} s: import "
                f"{d['import_s']:.2f}, World.load {d['load_s']:.2f}, first search {d['first_search_s']:.2f})"
            )
            parts = {k: d[k] for k in ("in_process_s", "import_s", "load_s", "first_search_s")}
            rec.stats("fresh process", {"spawn_to_first_answer_s": wall, **parts}, world=world, verify=verify,
                      evicted=evict, run=i + 1)  # fmt: skip
            if "search_tool" in d:
                print(f"{'':32} {'p50 ms':>9} {'p99 ms':>9} {'max ms':>9}")
                rows = [("world.search (1,200 queries)", d["search_tool"]), ("  then 1,200 unseen queries", d["search_unseen"]),
                        ("  the 1,200 again, pages kept", d["search_kept"]),
                        ("retrieval (Web.hits)", d["retrieval"]),
                        ("world.open (1,000 pages)", d["open_tool"])] + [(f"  search: {k}", v) for k, v in d["by_kind"].items()]  # fmt: skip
                for name, m in rows:
                    print(f"{name:32} {m['p50_ms']:9.3f} {m['p99_ms']:9.3f} {m['max_ms']:9.1f}")
                    rec.stats(
                        "latency", m, world=world, verify=verify, what=name.lstrip()
                    )  # (kinds 1 and 2: "name+word", "name+word ")
                print(f"RSS after the queries: {d['rss_gib']:.2f} GiB")
                rec.figure("RSS after the queries", d["rss_gib"], "GiB", world=world, verify=verify)
                c = sorted(d["calibration_ms"])
                print(f"machine during the queries (this process, its core; every 300 queries): calibration min {c[0]:.1f}, "
                      f"median {median(c):.1f}, max {c[-1]:.1f} ms over {len(c)} (lower is faster; benchmarks/machine.py)")  # fmt: skip
                for stat, v in (("min", c[0]), ("median", median(c)), ("max", c[-1]), ("samples", len(c))):
                    rec.figure("calibration during the queries", v, "" if stat == "samples" else "ms", world=world,
                               verify=verify, stat=stat)  # fmt: skip
                print(json.dumps(d), file=sys.stderr)


def by_speed(world: str, repeat: int, rec: Record) -> None:
    """``world.search`` over the latency runs' first 1,200 queries and 1,200 unseen ones, in
    fresh processes, the machine's calibration (``machine.py``, one pass) taken every 50
    queries: each block of 50 is timed with the machine's speed on both sides of it. This
    machine's speed swings 1.6x within minutes, so besides every query, the blocks where it ran
    at its fastest (both samples within 12 % of the run's fastest) and at its slowest (both 35 %
    or more above it) are given apart. Only the public API is used: with PYTHONPATH set to
    another checkout, its code is timed the same way (on a world it can read)."""
    print(f"== {world}: world.search by the machine's speed (fresh process each; one core; blocks of 50) ==")
    for run in range(repeat):
        d = _child(BY_SPEED_CHILD, world)
        for name in ("first", "unseen"):
            r = d[name]
            parts = []
            for part, label in (("all", "every query"), ("fast", "at its fastest"), ("slow", "slow blocks")):
                m = r[part]
                parts.append(
                    f"{label} ({m['n']:,}) "
                    + (f"p50 {m['p50_ms']:.2f} / p99 {m['p99_ms']:.1f} ms" if m["n"] else "none")
                )
                rec.stats("latency by speed", m, world=world, queries=name, blocks=label, run=run + 1)
            print(f"run {run + 1}, {name:6}: fastest calibration {r['fastest_ms']:.1f} ms; " + "; ".join(parts))
            rec.figure("fastest calibration", r["fastest_ms"], "ms", world=world, queries=name, run=run + 1)
        print(json.dumps(d), file=sys.stderr)


def split(world: str, repeat: int, preloaded: bool, rec: Record) -> None:
    """Where each ``world.search`` goes, in fresh processes (one core): the engine
    (``TantivyIndex.search``, every fetch), entity linking (``EntityLinker.link``), the ten
    results (``render_results``: snippets, titles, URLs) and the rest (analysis, respelling,
    visibility, exact titles), each query's own parts; over the latency runs' first 1,200
    queries, 1,200 unseen ones, and those again (what a query asked before costs: the engine's
    caches and the CPU's hold its postings). The parts' p50s do not add up to the whole's.
    ``preloaded``: ``Web.preload`` first (resident files only), as ``fictionworld serve`` does."""
    print(f"== {world}: world.search in parts (fresh process each; one core"
          f"{'; preloaded' if preloaded else ''}), p50 / mean ms ==")  # fmt: skip
    parts = ("search", "engine", "linker", "results", "rest")
    for run in range(repeat):
        d = _child(SPLIT_CHILD, world, "1" if preloaded else "0")
        print(f"{f'run {run + 1}':11} {'queries':>6}" + "".join(f" {p:>13}" for p in parts) + f" {'faults/query':>13}")
        for name in ("first", "unseen", "asked again"):
            r = d[name]
            cells = "".join(f" {r[p]['p50_ms']:6.2f} /{r[p]['mean_ms']:5.2f}" for p in parts)
            print(f"{name:11} {r['queries']:6,}{cells} {r['minor_faults'] / r['queries']:13.1f}")
            at = {"world": world, "preloaded": preloaded, "queries": name, "run": run + 1}
            for p in parts:
                rec.stats("search in parts", r[p], **at, part=p)
            rec.figure("minor faults per query", r["minor_faults"] / r["queries"], "", **at)
            rec.figure("queries asked", r["queries"], "", **at)
        print(json.dumps(d), file=sys.stderr)


def preload_ab(world: str, repeat: int, rec: Record, blocks: tuple[int, ...] = (600, 50)) -> None:
    """``Web.preload`` (what each worker of ``fictionworld serve --preload`` runs once it
    starts) against none, in one process: 3,600 queries in blocks, this process's page-table
    entries for the world's maps emptied before each block (as a fresh process starts), then
    mapped in again by ``preload`` or not, in ABBA order. Blocks of 600: a fresh process's
    first 600 queries; of 50: its first 50."""
    for block, run in ((b, r + 1) for b in blocks for r in range(repeat)):
        print(f"== {world}: one process, one core; page tables emptied before each block of {block} queries, "
              "then preloaded or not (ABBA) ==")  # fmt: skip
        print(f"{'':10} {'queries':>8} {'p50 ms':>8} {'p90':>7} {'p99':>7} {'mean':>7} {'faults/query':>13}")
        d = _child(LATENCY_QUERIES + PRELOAD_CHILD, world, str(block))
        for way in ("cold", "preloaded"):
            m = d[way]
            print(f"{way:10} {m['queries']:8,} {m['p50_ms']:8.2f} {m['p90_ms']:7.2f} {m['p99_ms']:7.1f} "
                  f"{m['mean_ms']:7.2f} {m['minor_faults'] / m['queries']:13.1f}")  # fmt: skip
            rec.stats("preload latency", m, world=world, block=block, way=way, run=run)
        p = sorted(d["preload_s"])
        print(f"(each preload: median {p[len(p) // 2]:.2f} s, max {p[-1]:.2f} s)")
        for stat, v in (("median", p[len(p) // 2]), ("max", p[-1])):
            rec.figure("preload", v, "s", world=world, block=block, run=run, stat=stat)
        print(json.dumps(d), file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    ap.add_argument("--no-peers", action="store_true", help="skip bm25s and rank-bm25")
    ap.add_argument("--rank-bm25-queries", type=int, default=100, help="rank-bm25 scans every page per query")
    ap.add_argument("--world", help="serve this saved world instead of generating (first answer, latency)")
    ap.add_argument("--repeat", type=int, default=3, help="fresh processes per verify mode with --world")
    ap.add_argument("--engine", action="store_true", help="with --world: the engine alone on name queries")
    ap.add_argument("--verify", nargs="+", choices=["on-read", "files", "none", "content"],
                    default=["on-read", "files", "none", "content"],
                    help="with --world: the ways a fresh process opens it (content reads every fact: minutes at 10M, and it "
                    "evicts the page cache a server would have)")  # fmt: skip
    ap.add_argument("--cold", action="store_true", help="with --world: searches with the pages file evicted first")
    ap.add_argument(
        "--hidden",
        action="store_true",
        help="with --world: retrieval with hidden layers struck out after "
        "ranking, left out in the engine when fetching again, and from the first fetch (alternated)",
    )
    ap.add_argument(
        "--evict",
        action="store_true",
        help="with --world: every file of the world evicted from the page "
        "cache before each fresh process (its first answer from disk; no query timings)",
    )
    ap.add_argument(
        "--preload",
        action="store_true",
        help="with --world: Web.preload (as `fictionworld serve` runs "
        "it) or not, blocks of queries alternated in one process; latency and page faults",
    )
    ap.add_argument(
        "--by-speed",
        action="store_true",
        help="with --world: world.search timed in blocks of 50 "
        "queries with the machine's speed between them; every query, and the blocks at its fastest",
    )
    ap.add_argument(
        "--split",
        action="store_true",
        help="with --world: each search's engine, linking, results "
        "and the rest, asked the first time and again (with --preload: preloaded first)",
    )
    add_options(ap)
    args = ap.parse_args()
    print(machine.line(), flush=True)  # figures of different days compare only through it
    with Record("search", args) as rec:
        run(args, rec)


def run(args: argparse.Namespace, rec: Record) -> None:
    """The mode the arguments ask for, its figures printed and recorded in ``rec``."""
    if args.world and args.split:
        split(args.world, args.repeat, args.preload, rec)
        return
    if args.world and args.by_speed:
        by_speed(args.world, args.repeat, rec)
        return
    if args.world and args.preload:
        preload_ab(args.world, args.repeat, rec)
        return
    if args.world and args.cold:
        cold(args.world, args.repeat, rec)
        return
    if args.world and args.hidden:
        hidden(args.world, args.repeat, rec)
        return
    if args.world and args.engine:
        engine(args.world, rec)
        return
    if args.world:
        serve(args.world, args.repeat, rec, tuple(args.verify), args.evict)
        return
    for n in args.sizes:
        sizes(n, args, rec)


def sizes(n: int, args: argparse.Namespace, rec: Record) -> None:
    """A world of ``n`` entities generated, indexed and searched in a fresh process (with the peers)."""
    d = _child(CHILD, str(n), "0" if args.no_peers else "1", str(args.rank_bm25_queries))
    print(f"\n== {d['entities']:,} entities: {d['pages']:,} pages, {d['queries']:,} queries ==")
    print(
        f"generate {d['generate_s']:.1f} s | render {d['render_s']:.1f} s | tantivy build {d['tantivy_build_s']:.1f} s "
        f"(+{d['tantivy_build_rss_gib']:.2f} GiB) | save {d['save_s']:.1f} s | max RSS {d['max_rss_gib']:.2f} GiB"
    )
    ld = d["load"]
    print(
        f"open saved world for searching: {ld['total_s']:.2f} s (world {ld['world_s']:.2f} s + web, linker, first query {ld['web_and_first_query_s']:.2f} s)"
    )
    rows = [
        ("tantivy engine", d["tantivy_engine"]),
        ("retrieval (+linking, knobs)", d["retrieval"]),
        ("world.search tool (+10 snippets)", d["search_tool"]),
        ("world.open tool", d["open_tool"]),
    ]
    if "bm25s_engine" in d:
        rows += [
            (f"bm25s engine ({d['bm25s_backend']})", d["bm25s_engine"]),
            (f"rank-bm25 engine ({d['rank_bm25_queries']} q)", d["rank_bm25_engine"]),
        ]
    print(f"{'':32} {'p50 ms':>9} {'p99 ms':>9} {'q/s':>9}")
    for name, m in rows:
        print(f"{name:32} {m['p50_ms']:9.3f} {m['p99_ms']:9.3f} {m['qps']:9.0f}")
    if "bm25s_engine" in d:
        t = d["tantivy_engine"]["p50_ms"]
        print(
            f"build: bm25s {d['bm25s_build_s']:.1f} s (+{d['bm25s_build_rss_gib']:.2f} GiB), rank-bm25 {d['rank_bm25_build_s']:.1f} s (+{d['rank_bm25_build_rss_gib']:.2f} GiB)"
        )
        print(
            f"p50 ratio: rank-bm25 / tantivy = {d['rank_bm25_engine']['p50_ms'] / t:.0f}x; bm25s / tantivy = {d['bm25s_engine']['p50_ms'] / t:.2f}x; "
            f"rank-bm25 / whole search tool = {d['rank_bm25_engine']['p50_ms'] / d['search_tool']['p50_ms']:.0f}x"
        )
    print(json.dumps(d), file=sys.stderr)
    record_size(rec, d, rows)


def record_size(rec: Record, d: dict, rows: list[tuple[str, dict]]) -> None:
    """The figures of one size's child (``d``) and its latency ``rows``, and the targets: the
    search tool within 2x the engine at p50 and 3x at p99, rank-bm25 60x slower than the tool."""
    n = d["entities"]
    rec.figure("pages", d["pages"], "", entities=n)
    rec.figure("queries", d["queries"], "", entities=n)
    build = ("generate_s", "render_s", "plain_s", "tantivy_build_s", "tantivy_build_rss_gib", "save_s", "max_rss_gib",
             "peak_rss_gib", "bm25s_build_s", "bm25s_build_rss_gib", "rank_bm25_build_s", "rank_bm25_build_rss_gib")  # fmt: skip
    rec.stats("build", {k: d[k] for k in build if k in d}, entities=n)
    rec.stats("open saved world", d["load"], entities=n)
    for name, m in rows:
        rec.stats("latency", m, entities=n, what=name)
    engine, tool = d["tantivy_engine"], d["search_tool"]
    same = "on the same 1,200 queries in the same process, one core"
    rec.ratio("world.search p50 / engine p50", tool["p50_ms"], engine["p50_ms"], at_most=2, entities=n,
              against=f"the tantivy engine alone (tokenise + top 10) {same}")  # fmt: skip
    rec.ratio("world.search p99 / engine p99", tool["p99_ms"], engine["p99_ms"], at_most=3, entities=n,
              against=f"the tantivy engine alone (tokenise + top 10) {same}")  # fmt: skip
    if "rank_bm25_engine" in d:
        peer = f"on the same pages and the first {d['rank_bm25_queries']} of the queries, in the same process, one core"
        rec.ratio("rank-bm25 p50 / world.search p50", d["rank_bm25_engine"]["p50_ms"], tool["p50_ms"], at_least=60,
                  entities=n, against=f"rank-bm25 (BM25Okapi, every page scored per query) {peer}")  # fmt: skip
        rec.ratio("rank-bm25 p50 / engine p50", d["rank_bm25_engine"]["p50_ms"], engine["p50_ms"], entities=n,
                  against=f"rank-bm25 (BM25Okapi) {peer}")  # fmt: skip
        rec.ratio("bm25s p50 / engine p50", d["bm25s_engine"]["p50_ms"], engine["p50_ms"], entities=n,
                  against=f"bm25s ({d['bm25s_backend']} backend) {same}")  # fmt: skip


if __name__ == "__main__":
    main()
