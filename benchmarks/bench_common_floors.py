"""Retrieval with and without the floors of common clauses (``TantivyIndex._floor``), side by
side in one process on a saved world:

    python benchmarks/bench_common_floors.py --world DIR

Two indexes are opened on the same files, one told it has no floors (the search before them),
each with its own caches, as two fresh processes would have. ``Web.hits`` (n = 10) asks each
the same 2,400 queries of ``bench_search.py``'s latency runs in turn (which goes first
alternates), pinned to one core; the answers must be the same, page for page and float for
float. Printed: p50 / p90 / p99 / mean over the first 1,200 queries and the next 1,200.
The world's ``index/common-best.json`` must hold the floors (a build since they were added);
one without them gives two equal columns.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--world", required=True, help="a saved world with its web")
    args = ap.parse_args()
    try:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    except (AttributeError, OSError):
        pass
    sys.path.insert(0, str(Path(__file__).parent))
    import bench_search

    import fictionworld as fw
    from fictionworld.web.index import TantivyIndex

    world = fw.World.load(args.world, verify="on-read")
    web = world.web
    world.search("Juopla festival", k=10)
    before, floors = web.index, TantivyIndex.open(web.index.path)
    before._floor = lambda common, n: 0.0  # the search before the floors
    if not any(floors._stats(c)[1] for c in floors._read_known()):
        print("(this index's common-best.json holds no floors: both columns search the same way)")
    space: dict = {}
    exec(bench_search.LATENCY_QUERIES, space)
    make = space["latency_queries"](web, web.lexicon.names if web.lexicon is not None else world.entities.name)
    queries = make(0) + make(1)
    times: dict[str, list[float]] = {"before": [], "floors": []}
    for i, q in enumerate(queries):
        answers = {}
        for name, ix in (("before", before), ("floors", floors))[:: 1 if i % 2 else -1]:
            web.index = ix
            t = time.perf_counter()
            hits = web.hits(q, 10)
            times[name].append(time.perf_counter() - t)
            answers[name] = [(h.page, h.score) for h in hits]
        if answers["before"] != answers["floors"]:
            raise SystemExit(f"different answers for {q!r}")
    print(f"== {args.world}: Web.hits (n = 10), one core, the two ways alternated query by query ==")
    print(f"{'':24} {'p50 ms':>8} {'p90':>7} {'p99':>7} {'mean':>7}")
    for name, ts in times.items():
        ms = np.array(ts) * 1000
        for lo, label in ((0, "first 1,200"), (1200, "next 1,200")):
            w = ms[lo : lo + 1200]
            p50, p90, p99 = np.percentile(w, [50, 90, 99])
            print(f"{name + ', ' + label:24} {p50:8.2f} {p90:7.2f} {p99:7.1f} {w.mean():7.2f}")
    print("answers: the same for every query")


if __name__ == "__main__":
    main()
