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

CHILD = r"""
import json, os, sys, tempfile, time
import numpy as np, psutil
n, peers, rank_n = int(sys.argv[1]), sys.argv[2] == "1", int(sys.argv[3])
try:
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
except (AttributeError, OSError):
    pass
proc = psutil.Process()
rss = lambda: proc.memory_info().rss / 2**30
import fictionworld as fw
from fictionworld.web import Web
from fictionworld.web.index import TantivyIndex
from fictionworld.web.render import plain_text, render_pages
out = {"entities": n}
t = time.perf_counter(); world = fw.generate(seed=1, entities=n); out["generate_s"] = time.perf_counter() - t
t = time.perf_counter(); pages = render_pages(world, pool=world.spec.web.perturbation_pool); out["render_s"] = time.perf_counter() - t
out["pages"] = len(pages)
text = pages.table.column("text")
t = time.perf_counter(); docs = [(pages.titles[i], plain_text(text[i].as_py())) for i in range(len(pages))]; out["plain_s"] = time.perf_counter() - t
tmp = tempfile.TemporaryDirectory()
r0 = rss(); t = time.perf_counter(); ix = TantivyIndex.build(iter(docs), tmp.name + "/ix"); out["tantivy_build_s"] = time.perf_counter() - t
out["tantivy_build_rss_gib"] = rss() - r0
web = Web(world, pages, ix); world.web = web
t = time.perf_counter(); world.save(tmp.name + "/w"); out["save_s"] = time.perf_counter() - t

# realistic queries, fixed by seed: names, name + attribute, misspellings, categories, relations
rng = np.random.default_rng(0)
e = world.entities
names = e.name.tolist()
def typo(s):
    w = s.split(" "); i = max(range(len(w)), key=lambda k: len(w[k])); x = w[i]
    if len(x) > 4: j = int(rng.integers(1, len(x) - 2)); w[i] = x[:j] + x[j + 1] + x[j] + x[j + 2:]
    return " ".join(w)
words = {"person": ["born", "occupation", "married"], "company": ["founded", "employees", "headquarters", "CEO"],
         "city": ["population", "area"], "book": ["author", "published"], "film": ["director", "release"],
         "album": ["tracks", "released"], "product": ["price", "launched"], "event": ["attendance", "held"]}
queries = []
for r in rng.choice(len(e), 1200, replace=False).tolist():
    t_ = e.type_of(r); kind = len(queries) % 6
    if kind == 0: queries.append(names[r])
    elif kind in (1, 2) and t_ in words: queries.append(f"{names[r]} {words[t_][int(rng.integers(len(words[t_])))]}")
    elif kind == 3: queries.append(typo(names[r]))
    elif kind == 4: queries.append(pages.titles[int(rng.choice(np.flatnonzero(pages.kind == "list")))].lower())
    else: queries.append(f"who {['founded', 'directed', 'wrote', 'won'][len(queries) % 4]} {names[r]}")
out["queries"] = len(queries)

def lat(fn, qs):
    ts = []
    for q in qs:
        t = time.perf_counter(); fn(q); ts.append(time.perf_counter() - t)
    ts = np.array(ts) * 1000
    return {"p50_ms": float(np.percentile(ts, 50)), "p99_ms": float(np.percentile(ts, 99)), "qps": float(len(ts) / (ts.sum() / 1000))}

for q in queries[:50]: web.search(q, k=10)  # warm the linker and caches
out["tantivy_engine"] = lat(lambda q: ix.search(ix.analyze(q), 10), queries)
out["retrieval"] = lat(lambda q: web.hits(q, 10), queries)
out["search_tool"] = lat(lambda q: web.search(q, k=10), queries)
out["open_tool"] = lat(lambda u: web.open(u), [pages.urls[i] for i in rng.choice(len(pages), 1000).tolist()])

# load: a saved world opens for searching (world + web + linker + first query)
t = time.perf_counter(); w2 = fw.World.load(tmp.name + "/w"); t_world = time.perf_counter() - t
t = time.perf_counter(); w2.search(queries[0], k=10); t_web = time.perf_counter() - t
out["load"] = {"world_s": t_world, "web_and_first_query_s": t_web, "total_s": t_world + t_web}
del w2

if peers:
    plain = [f"{a} {b}" for a, b in docs]
    import bm25s
    try:
        import numba  # noqa: F401
        backend = "numba"
    except ImportError:
        backend = "numpy"
    r0 = rss(); t = time.perf_counter()
    toks = bm25s.tokenize(plain, stopwords="en", show_progress=False)
    bm = bm25s.BM25(backend=backend); bm.index(toks, show_progress=False)
    out["bm25s_build_s"] = time.perf_counter() - t; out["bm25s_build_rss_gib"] = rss() - r0
    out["bm25s_backend"] = backend
    def bq(q):
        qt = bm25s.tokenize([q], stopwords="en", show_progress=False)
        if len(qt.vocab):
            bm.retrieve(qt, k=10, show_progress=False, n_threads=1)
    for q in queries[:20]: bq(q)  # numba compiles on first use
    out["bm25s_engine"] = lat(bq, queries)
    del bm, toks
    from rank_bm25 import BM25Okapi
    import re
    tok = lambda s: re.findall(r"\w+", s.lower())
    r0 = rss(); t = time.perf_counter(); rb = BM25Okapi([tok(p) for p in plain])
    out["rank_bm25_build_s"] = time.perf_counter() - t; out["rank_bm25_build_rss_gib"] = rss() - r0
    def rq(q):
        s = rb.get_scores(tok(q)); np.argpartition(-s, 10)[:10]
    out["rank_bm25_engine"] = lat(rq, queries[:rank_n]); out["rank_bm25_queries"] = rank_n
out["peak_rss_gib"] = proc.memory_info().rss / 2**30
import resource
out["max_rss_gib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
print(json.dumps(out))
"""


# The latency runs' queries (names, a name and a word, misspelt names, directory titles, "who
# ... X"), pasted into the children that time them (SERVE_CHILD, HIDDEN_CHILD).
LATENCY_QUERIES = r"""
def latency_queries(web, names):
    import numpy as np
    lists = np.flatnonzero(web.pages.kind == "list")
    extra = ["founded", "born", "population", "director", "released", "author", "headquarters"]
    def typo(s, rng):
        w = s.split(" "); i = max(range(len(w)), key=lambda k: len(w[k])); x = w[i]
        if len(x) > 4: j = int(rng.integers(1, len(x) - 2)); w[i] = x[:j] + x[j + 1] + x[j] + x[j + 2:]
        return " ".join(w)
    def make_queries(seed):
        rng = np.random.default_rng(seed)
        queries = []
        for r in rng.choice(len(names), 1200, replace=False).tolist():
            kind = len(queries) % 6
            name = names[r]
            if kind == 0: queries.append(name)
            elif kind in (1, 2): queries.append(f"{name} {extra[int(rng.integers(len(extra)))]}")
            elif kind == 3: queries.append(typo(name, rng))
            elif kind == 4: queries.append(web.pages.titles[int(rng.choice(lists))].lower())
            else: queries.append(f"who {['founded', 'directed', 'wrote', 'won'][len(queries) % 4]} {name}")
        return queries
    return make_queries
"""

SERVE_CHILD = r"""
import time
t0 = time.perf_counter()
import json, os, sys
verify = {"on-read": "on-read", "files": "files", "none": False, "content": True}[sys.argv[2]]
try:
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
except (AttributeError, OSError):
    pass
import fictionworld as fw
t1 = time.perf_counter()
world = fw.World.load(sys.argv[1], verify=verify)
t2 = time.perf_counter()
first = world.search("Juopla festival", k=10)
t3 = time.perf_counter()
out = {"import_s": t1 - t0, "load_s": t2 - t1, "first_search_s": t3 - t2, "in_process_s": t3 - t0, "verify": sys.argv[2],
       "first_answer_at": time.time()}  # the wall clock, for the parent's spawn-to-first-answer
if sys.argv[3] == "1":
    import numpy as np, psutil
    web = world.web
    names = web.lexicon.names if web.lexicon is not None else world.entities.name
    make_queries = latency_queries(web, names)
    queries = make_queries(0)
    asked = set(queries)
    unseen = [q for q in make_queries(1) if q not in asked]
    import resource
    def lat(fn, qs):
        ts = []
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for q in qs:
            t = time.perf_counter(); fn(q); ts.append(time.perf_counter() - t)
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
        ts = np.array(ts) * 1000
        return {"p50_ms": float(np.percentile(ts, 50)), "p99_ms": float(np.percentile(ts, 99)), "max_ms": float(ts.max()),
                "mean_ms": float(ts.mean()), "minor_faults": faults}
    out["search_tool"] = lat(lambda q: world.search(q, k=10), queries)
    out["search_unseen"] = lat(lambda q: world.search(q, k=10), unseen)
    out["by_kind"] = {k: lat(lambda q: world.search(q, k=10), queries[i::6]) for i, k in enumerate(
        ["name", "name+word", "name+word ", "typo", "directory", "who ... name"])}
    out["retrieval"] = lat(lambda q: web.hits(q, 10), queries)
    out["open_tool"] = lat(lambda u: world.open(u), [web.pages.urls[i] for i in np.random.default_rng(2).choice(len(web.pages), 1000).tolist()])
    out["rss_gib"] = psutil.Process().memory_info().rss / 2**30
print(json.dumps(out))
"""

ENGINE_CHILD = r"""
import json, os, sys, time
import numpy as np
try:
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
except (AttributeError, OSError):
    pass
import fictionworld as fw
import fictionworld.web.index as index_module
world = fw.World.load(sys.argv[1], verify=False)
ix = world.web.index
if sys.argv[2] != "default":  # pages a clause may be on and still be rare: "share" (0.5 % only) or a number
    index_module.COMMON_POSTINGS = float("inf") if sys.argv[2] == "share" else int(sys.argv[2])
names = world.web.lexicon.names
extra = ["founded", "born", "population", "director", "released", "author", "headquarters"]
def make(seed):
    rng = np.random.default_rng(seed); qs = []
    for r in rng.choice(len(names), 600, replace=False).tolist():
        k = len(qs) % 4
        qs.append(names[r] if k == 0 else f"{names[r]} {extra[int(rng.integers(len(extra)))]}" if k < 3
                  else f"who {['founded', 'directed', 'wrote', 'won'][len(qs) % 4]} {names[r]}")
    return qs
def lat(qs):
    ts = []
    for q in qs:
        tokens = ix.analyze(q)
        t = time.perf_counter(); ix.search(tokens, 20); ts.append(time.perf_counter() - t)
    ts = np.array(ts) * 1000
    return {"p50_ms": float(np.percentile(ts, 50)), "p99_ms": float(np.percentile(ts, 99))}
first, unseen = make(0), make(1)
out = {"limit": index_module.common_limit(ix.num_docs), "first": lat(first), "unseen": lat(unseen), "again": lat(first)}
print(json.dumps(out))
"""
HIDDEN_CHILD = r"""
import json, os, sys, time
import numpy as np
try:
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
except (AttributeError, OSError):
    pass
import fictionworld as fw
import fictionworld.web.web as web_module
world = fw.World.load(sys.argv[1], verify="on-read")
web = world.web
ix = web.index
if not ix.hides_layers:
    print(json.dumps({"error": "this world's index has no layer field (built before 2026-11-27): rebuild it"}))
    raise SystemExit(0)
names = web.lexicon.names
make_queries = latency_queries(web, names)  # the queries of the latency runs (SERVE_CHILD)
first = make_queries(0)
queries = first + [q for q in make_queries(1) if q not in set(first)]
real_search, real_hits = ix.search, web_module.Web.hits
calls = []
def counted(tokens, n, hide=()):
    calls.append(n)
    return real_search(tokens, n, hide)
ix.search = counted
def hits_hiding_first(self, query, n, knobs=None):  # every fetch leaves the hidden layers out
    rates = self.rates(knobs or self.knobs)
    every = web_module._hidden(rates)
    ix.search = lambda tokens, m, hide=(): counted(tokens, m, every)
    try:
        return real_hits(self, query, n, knobs)
    finally:
        ix.search = counted
ways = {"after": [], "again": [], "first": []}
fetches = []
for i, q in enumerate(queries):
    for way in [("after", "again", "first"), ("again", "first", "after"), ("first", "after", "again")][i % 3]:
        ix.hides_layers = way != "after"
        ix._common_top.clear()  # each query pays for its common words, as in a fresh process
        calls.clear()
        fn = hits_hiding_first if way == "first" else real_hits
        t = time.perf_counter(); fn(web, q, 10); ways[way].append((time.perf_counter() - t) * 1000)
        if way == "after":
            fetches.append(len(calls))
fetches = np.array(fetches)
many = fetches > 1
out = {"queries": len(queries), "fetched_again": int(many.sum()), "fetches": np.bincount(fetches).tolist()}
for way, ts in ways.items():
    ts = np.array(ts)
    out[way] = {"p50_ms": float(np.percentile(ts, 50)), "p99_ms": float(np.percentile(ts, 99)), "mean_ms": float(ts.mean()),
                "again_median_ms": float(np.median(ts[many])) if many.any() else 0.0,
                "again_mean_ms": float(ts[many].mean()) if many.any() else 0.0,
                "others_mean_ms": float(ts[~many].mean())}
print(json.dumps(out))
"""
COLD_CHILD = r"""
import json, os, sys, time
import numpy as np
try:
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
except (AttributeError, OSError):
    pass
world_dir, access, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
fd = os.open(os.path.join(world_dir, "pages.arrow"), os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # out of the page cache (no process maps it now)
os.close(fd)
t0 = time.perf_counter()
import psutil
import fictionworld as fw
import fictionworld.web.pages as pages_module
pages_module.PAGES_ACCESS = access
world = fw.World.load(world_dir, verify=False)
world.search("Juopla festival", k=10)
first_answer = time.perf_counter() - t0
names = world.web.lexicon.names
rng = np.random.default_rng(7)
extra = ["founded", "born", "population", "director", "released", "author", "headquarters"]
queries = [names[r] + ("" if i % 2 else " " + extra[int(rng.integers(len(extra)))])
           for i, r in enumerate(rng.choice(len(names), n, replace=False).tolist())]
io = psutil.Process().io_counters().read_bytes
ts = []
for q in queries:
    t = time.perf_counter(); world.search(q, k=10); ts.append(time.perf_counter() - t)
read = psutil.Process().io_counters().read_bytes - io
ts = np.array(ts) * 1000
print(json.dumps({"first_answer_s": first_answer, "p50_ms": float(np.percentile(ts, 50)), "p90_ms": float(np.percentile(ts, 90)),
                  "p99_ms": float(np.percentile(ts, 99)), "read_mib_per_query": read / 2**20 / n}))
"""


def _child(code: str, *args: str) -> dict:
    """Run ``code`` in a fresh Python process with ``args``; the JSON of its last line of
    output (its error output, and this script's exit, if it fails)."""
    r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
    if r.returncode:
        print(r.stderr, file=sys.stderr)
        raise SystemExit(r.returncode)
    return json.loads(r.stdout.strip().splitlines()[-1])


def engine(world: str) -> None:
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


def hidden(world: str, repeat: int) -> None:
    """Retrieval (``Web.hits``, n = 10) over the 2,400 queries of the latency runs, the pages of
    hidden layers struck out after ranking ("after", as before 2026-11-27), left out in the engine
    when a query fetches again ("again", what ``Web.hits`` does), and left out from the first
    fetch ("first"): the three alternated query by query in one process, the common-clause
    cache emptied before each search (each query pays for its common words, as in a fresh
    process). Under the world's default knobs."""
    print(
        f"== hidden layers: {world} (one process per run; one core; Web.hits, n = 10; common-clause cache emptied each time) =="
    )
    for _ in range(repeat):
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


def cold(world: str, repeat: int, queries: int = 600) -> None:
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
    r, n = (median(d["p50_ms"] for d in runs[a]) for a in ("random", "normal"))
    b, m = (median(d["read_mib_per_query"] for d in runs[a]) for a in ("random", "normal"))
    print(f"median p50: default read-ahead / random = {n / r:.2f}x; bytes read: {m / max(b, 1e-9):.1f}x")
    import os

    import psutil

    from fictionworld.web.arrow import choose_access

    size, free = os.path.getsize(os.path.join(world, "pages.arrow")), psutil.virtual_memory().available
    print(
        f"PAGES_ACCESS='auto' maps these {size / 2**30:.1f} GiB of pages, with {free / 2**30:.1f} GiB available: {choose_access(size, free)}"
    )


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


def serve(world: str, repeat: int, modes: tuple[str, ...] = ("on-read", "files", "none", "content"), evict: bool = False) -> None:
    """Fresh processes opening ``world``: wall time from spawning one to its first answer
    (``evict``: with every file of the world out of the page cache first)."""
    import time

    print(f"== serving {world} (fresh process each; one core{'; every file evicted from the page cache first' if evict else ''}) ==")
    for verify in modes:
        for i in range(repeat if verify != "content" else 1):
            if evict:
                _evict(world)
            spawned = time.time()  # (the child that also times queries exits long after its first answer)
            d = _child(LATENCY_QUERIES + SERVE_CHILD, world, verify, "1" if (verify, i) == (modes[0], 0) and not evict else "0")
            wall = d["first_answer_at"] - spawned
            print(
                f"verify={verify:8} spawn to first answer {wall:.2f} s  (in process {d['in_process_s']:.2f} s: import "
                f"{d['import_s']:.2f}, World.load {d['load_s']:.2f}, first search {d['first_search_s']:.2f})"
            )
            if "search_tool" in d:
                print(f"{'':32} {'p50 ms':>9} {'p99 ms':>9} {'max ms':>9}")
                rows = [("world.search (1,200 queries)", d["search_tool"]), ("  then 1,200 unseen queries", d["search_unseen"]),
                        ("retrieval (Web.hits)", d["retrieval"]),
                        ("world.open (1,000 pages)", d["open_tool"])] + [(f"  search: {k}", v) for k, v in d["by_kind"].items()]  # fmt: skip
                for name, m in rows:
                    print(f"{name:32} {m['p50_ms']:9.3f} {m['p99_ms']:9.3f} {m['max_ms']:9.1f}")
                print(f"RSS after the queries: {d['rss_gib']:.2f} GiB")
                print(json.dumps(d), file=sys.stderr)


# Pins a child to one core (where the OS allows), pasted before the children that time queries.
ONE_CORE = r"""
import os
try:
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
except (AttributeError, OSError):
    pass
"""

PRELOAD_CHILD = r"""
import json, resource, sys, time
import numpy as np
import fictionworld as fw
from fictionworld.web.preload import _libc, mapped_files, preload
world = fw.World.load(sys.argv[1], verify="on-read")
world.search("Juopla festival", k=10)
web = world.web
make_queries = latency_queries(web, web.lexicon.names if web.lexicon is not None else world.entities.name)
queries = make_queries(0) + make_queries(1) + make_queries(2)
libc = _libc()
def empty_page_tables():  # MADV_DONTNEED on a shared file map: this process's entries go, the page cache stays
    for lo, hi, _ in mapped_files(sys.argv[1]):
        libc.madvise(lo, hi - lo, 4)
times, faults, spent = {"cold": [], "preloaded": []}, {"cold": 0, "preloaded": 0}, []
block = int(sys.argv[2])
for b in range(len(queries) // block):
    way = ("cold", "preloaded")[(b + b // 2) % 2]  # ABBA
    empty_page_tables()
    if way == "preloaded":
        spent.append(preload(sys.argv[1]).seconds)
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for q in queries[b * block : (b + 1) * block]:
        t = time.perf_counter(); world.search(q, k=10); times[way].append(time.perf_counter() - t)
    faults[way] += resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
out = {"block": block, "preload_s": spent}
for way, ts in times.items():
    ts = np.array(ts) * 1000
    out[way] = {"queries": len(ts), "p50_ms": float(np.percentile(ts, 50)), "p90_ms": float(np.percentile(ts, 90)),
                "p99_ms": float(np.percentile(ts, 99)), "mean_ms": float(ts.mean()), "minor_faults": faults[way]}
print(json.dumps(out))
"""


def preload_ab(world: str, repeat: int, blocks: tuple[int, ...] = (600, 50)) -> None:
    """``Web.preload`` (what each worker of ``fictionworld serve --preload`` runs once it
    starts) against none, in one process: 3,600 queries in blocks, this process's page-table
    entries for the world's maps emptied before each block (as a fresh process starts), then
    mapped in again by ``preload`` or not, in ABBA order. Blocks of 600: a fresh process's
    first 600 queries; of 50: its first 50."""
    for block, _ in ((b, r) for b in blocks for r in range(repeat)):
        print(f"== {world}: one process, one core; page tables emptied before each block of {block} queries, "
              "then preloaded or not (ABBA) ==")  # fmt: skip
        print(f"{'':10} {'queries':>8} {'p50 ms':>8} {'p90':>7} {'p99':>7} {'mean':>7} {'faults/query':>13}")
        d = _child(ONE_CORE + LATENCY_QUERIES + PRELOAD_CHILD, world, str(block))
        for way in ("cold", "preloaded"):
            m = d[way]
            print(f"{way:10} {m['queries']:8,} {m['p50_ms']:8.2f} {m['p90_ms']:7.2f} {m['p99_ms']:7.1f} "
                  f"{m['mean_ms']:7.2f} {m['minor_faults'] / m['queries']:13.1f}")  # fmt: skip
        p = sorted(d["preload_s"])
        print(f"(each preload: median {p[len(p) // 2]:.2f} s, max {p[-1]:.2f} s)")
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
    ap.add_argument("--hidden", action="store_true", help="with --world: retrieval with hidden layers struck out after "
                    "ranking, left out in the engine when fetching again, and from the first fetch (alternated)")
    ap.add_argument("--evict", action="store_true", help="with --world: every file of the world evicted from the page "
                    "cache before each fresh process (its first answer from disk; no query timings)")
    ap.add_argument("--preload", action="store_true", help="with --world: Web.preload (as `fictionworld serve` runs "
                    "it) or not, blocks of queries alternated in one process; latency and page faults")
    args = ap.parse_args()
    if args.world and args.preload:
        preload_ab(args.world, args.repeat)
        return
    if args.world and args.cold:
        cold(args.world, args.repeat)
        return
    if args.world and args.hidden:
        hidden(args.world, args.repeat)
        return
    if args.world and args.engine:
        engine(args.world)
        return
    if args.world:
        serve(args.world, args.repeat, tuple(args.verify), args.evict)
        return
    for n in args.sizes:
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


if __name__ == "__main__":
    main()
