"""The code of the fresh processes ``bench_search.py`` times (each a string run with
``python -c``, its last line of output JSON), and the snippets pasted into them: every child
pins itself to one core (:data:`ONE_CORE`); the latency runs share their queries
(:data:`LATENCY_QUERIES`)."""

from pathlib import Path

# Pins a child to one core (where the OS allows), pasted before every child.
ONE_CORE = r"""
import os
try:
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
except (AttributeError, OSError):
    pass
"""
# Children are ``python -c``: this lets them import machine.py from beside this file.
BESIDE = f"import sys\nsys.path.insert(0, {str(Path(__file__).resolve().parent)!r})\n"

PRELOAD_CHILD = (
    ONE_CORE
    + r"""
import json, resource, sys, time
import numpy as np
import fictionworld as fw
from fictionworld.web.preload import _libc, mapped_files, preload
world = fw.World.load(sys.argv[1], verify="on-read")
world.search("Juopla festival", k=10)
web = world.web
web.kept.limit = 0  # the engine measured: no result page kept for a query asked again
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
)

CHILD = (
    ONE_CORE
    + r"""
import json, os, sys, tempfile, time
import numpy as np, psutil
n, peers, rank_n = int(sys.argv[1]), sys.argv[2] == "1", int(sys.argv[3])
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

web.kept.limit = 0  # the engine measured: no result page kept for a query asked again
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
)


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

SERVE_CHILD = (
    ONE_CORE
    + BESIDE
    + r"""
import time
t0 = time.perf_counter()
import json, os, sys
verify = {"on-read": "on-read", "files": "files", "none": False, "content": True}[sys.argv[2]]
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
    web.kept.limit = 0  # the engine measured (``by_kind`` asks the queries again); the results kept last
    names = web.lexicon.names if web.lexicon is not None else world.entities.name
    make_queries = latency_queries(web, names)
    queries = make_queries(0)
    asked = set(queries)
    unseen = [q for q in make_queries(1) if q not in asked]
    import resource
    import machine
    out["calibration_ms"] = []  # the machine's speed through the queries: this machine's swings 1.6x within minutes
    def lat(fn, qs):
        ts = []
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for i, q in enumerate(qs):
            if i % 300 == 0:  # (its page faults are few, and counted)
                out["calibration_ms"].append(machine.calibrate(2))
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
    from fictionworld.web.web import RESULTS_KEPT
    web.kept.limit = RESULTS_KEPT
    for q in queries: world.search(q, k=10)
    out["search_kept"] = lat(lambda q: world.search(q, k=10), queries)  # each a result page kept
    out["rss_gib"] = psutil.Process().memory_info().rss / 2**30
print(json.dumps(out))
"""
)

ENGINE_CHILD = (
    ONE_CORE
    + r"""
import json, os, sys, time
import numpy as np
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
)
HIDDEN_CHILD = (
    ONE_CORE
    + r"""
import json, os, sys, time
import numpy as np
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
        ix.common.tops.clear()  # each query pays for its common words, as in a fresh process
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
)
COLD_CHILD = (
    ONE_CORE
    + r"""
import json, os, sys, time
import numpy as np
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
)


BY_SPEED_CHILD = (
    ONE_CORE
    + BESIDE
    + r"""
import json, sys, time
import numpy as np
import machine
from search_children import latency_world  # (another checkout's code too: PYTHONPATH=its tree)
world, make_queries = latency_world(sys.argv[1])
world.search("Juopla festival", k=10)
BLOCK, CLOSE, FAR = 50, 1.12, 1.35
out = {}
for name, seed in (("first", 0), ("unseen", 1)):
    qs, blocks = make_queries(seed), []
    before = machine.calibrate(1)
    for i in range(0, len(qs), BLOCK):
        ts = []
        for q in qs[i : i + BLOCK]:
            t = time.perf_counter(); world.search(q, k=10); ts.append(time.perf_counter() - t)
        after = machine.calibrate(1)
        blocks.append((min(before, after), max(before, after), ts))
        before = after
    fastest = min(b[0] for b in blocks)
    def stats(keep):
        x = np.array([t for lo, hi, ts in blocks if keep(lo, hi) for t in ts]) * 1e3
        return {"n": len(x), **({"p50_ms": float(np.percentile(x, 50)), "p99_ms": float(np.percentile(x, 99))} if len(x) else {})}
    out[name] = {"fastest_ms": fastest, "all": stats(lambda lo, hi: True),
                 "fast": stats(lambda lo, hi: hi <= fastest * CLOSE), "slow": stats(lambda lo, hi: lo >= fastest * FAR)}
print(json.dumps(out))
"""
)


def latency_world(directory: str):
    """The start of an in-process A/B benchmark (``bench_index_ab.py``, ``bench_results.py``)
    and of ``--by-speed``: this process pinned to one core, the world at ``directory`` loaded as
    a server loads it (``verify="on-read"``), and the latency queries' maker
    (:data:`LATENCY_QUERIES`). Public API only, so that another checkout's code loads it too
    (older ones have no ``"on-read"``, keep no result pages and may have no lexicon)."""
    import os

    try:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    except (AttributeError, OSError):
        pass
    import fictionworld as fw

    try:
        world = fw.World.load(directory, verify="on-read")
    except ValueError:
        world = fw.World.load(directory, verify="files")
    web = world.web
    if hasattr(web, "kept"):
        web.kept.limit = 0  # A/B of the engine: the second way must not read the first way's pages
    lexicon = getattr(web, "lexicon", None)
    space: dict = {}
    exec(LATENCY_QUERIES, space)
    return world, space["latency_queries"](web, lexicon.names if lexicon is not None else world.entities.name)


def timed(cls, name: str, part: str, spent: dict) -> None:
    """``cls.name`` wrapped so that each call's time is added to ``spent[part]`` (the class's
    own method kept): a search's parts, timed in the benchmark's process only."""
    import time

    real = getattr(cls, name)

    def wrapper(self, *a, **k):
        t = time.perf_counter()
        try:
            return real(self, *a, **k)
        finally:
            spent[part] = spent.get(part, 0.0) + time.perf_counter() - t

    setattr(cls, name, wrapper)


def world_from_args(doc: str, options=None):
    """(world, latency query maker, parsed arguments) of a benchmark run as ``--world DIR``
    (:func:`latency_world`); ``doc``: the script's docstring, its first paragraph the help;
    ``options``: a function that adds the script's other options to the parser."""
    import argparse

    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--world", required=True, help="a saved world (fictionworld generate --out DIR)")
    if options is not None:
        options(ap)
    args = ap.parse_args()
    return (*latency_world(args.world), args)


# ``--split``: where each ``world.search`` goes, the same query asked the first time and again.
SPLIT_CHILD = (
    ONE_CORE
    + BESIDE
    + r"""
import json, resource, sys, time
import numpy as np
from search_children import latency_world
world, make_queries = latency_world(sys.argv[1])
web = world.web
world.search("Juopla festival", k=10)
preloaded = web.preload(resident_only=True).as_dict() if sys.argv[2] == "1" else None
spent = {}
from search_children import timed
timed(type(web.index), "search", "engine", spent)
timed(type(web.linker), "link", "linker", spent)
timed(type(web.model), "render_results", "results", spent)
out = {"preload": preloaded}
first, again = make_queries(0), make_queries(1)
asked = set(first)
unseen = [q for q in again if q not in asked]
for name, qs in (("first", first), ("unseen", unseen), ("asked again", unseen)):
    rows = []
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for q in qs:
        spent.clear()
        t = time.perf_counter(); world.search(q, k=10); whole = time.perf_counter() - t
        rows.append([whole, spent.get("engine", 0.0), spent.get("linker", 0.0), spent.get("results", 0.0)])
    x = np.array(rows) * 1e3
    x = np.column_stack([x, x[:, 0] - x[:, 1:].sum(axis=1)])
    out[name] = {"queries": len(qs), "minor_faults": resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults,
                 **{part: {"p50_ms": float(np.percentile(x[:, i], 50)), "mean_ms": float(x[:, i].mean())}
                    for i, part in enumerate(["search", "engine", "linker", "results", "rest"])}}
print(json.dumps(out))
"""
)
