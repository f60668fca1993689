"""``world.search`` by kind of query, and its slowest queries in parts (one fresh process, one core).

The latency queries of ``bench_search.py`` (seed 0's 1,200, then seed 1's that seed 0 did not
ask), each timed whole and in its parts: the engine (``TantivyIndex.search``), entity linking,
the ten results, and within the engine the common clauses' covers (``CommonClauses.above``) and
unions (``union_top``), and respelling. Prints p50 / p90 / p99 per kind of query (0 names,
1-2 name + attribute word, 3 misspelt names, 4 directory titles, 5 "who ... X"), the p50 of the
whole less the engine (the Python floor), and the 30 slowest queries with their parts. Public
API only: another checkout's code runs on the same world with ``PYTHONPATH``.

    python benchmarks/bench_search_kinds.py --world DIR
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from record import Record, add_options  # noqa: E402
from search_children import timed, world_from_args  # noqa: E402

PARTS = ["search", "engine", "linker", "results", "above", "union", "respell"]


def main() -> None:
    world, make, args = world_from_args(__doc__, add_options)
    with Record("search_kinds", args) as rec:
        run(world, make, args.world, rec)


def run(world, make, directory: str, rec: Record) -> None:
    web = world.web
    world.search("Juopla festival", k=10)
    spent: dict[str, float] = {}
    ix = web.index
    for cls, method, part in (
        (type(ix), "search", "engine"), (type(web.linker), "link", "linker"), (type(web.model), "render_results", "results"),
        (type(ix.common), "above", "above"), (type(ix.common), "union_top", "union"), (type(web), "respell", "respell"),
    ):  # fmt: skip
        timed(cls, method, part, spent)
    first = make(0)
    asked = set(first)
    unseen = [q for q in make(1) if q not in asked]
    for name, queries in (("first", first), ("unseen", unseen)):
        rows = []
        for i, q in enumerate(queries):
            spent.clear()
            t = time.perf_counter()
            world.search(q, k=10)
            rows.append([time.perf_counter() - t] + [spent.get(p, 0.0) for p in PARTS[1:]] + [i % 6])
        x = np.array(rows)
        x[:, :-1] *= 1e3
        whole, kind = x[:, 0], x[:, -1]
        pct = lambda v: " ".join(f"{np.percentile(v, p):.2f}" for p in (50, 90, 99))  # noqa: E731
        print(f"== {name}: p50 p90 p99 {pct(whole)} ms, max {whole.max():.1f}; less the engine p50 "
              f"{np.percentile(whole - x[:, 1], 50):.3f}; engine p50 {np.percentile(x[:, 1], 50):.3f}, "
              f"linking {np.percentile(x[:, 2], 50):.3f}, results {np.percentile(x[:, 3], 50):.3f}")  # fmt: skip
        at = {"world": directory, "queries": name}
        for p in (50, 90, 99):
            rec.figure("world.search", np.percentile(whole, p), "ms", **at, stat=f"p{p}")
        rec.figure("world.search", whole.max(), "ms", **at, stat="max")
        for part, v in (("less the engine", whole - x[:, 1]), ("engine", x[:, 1]), ("linking", x[:, 2]),
                        ("results", x[:, 3])):  # fmt: skip
            rec.figure("part of world.search", np.percentile(v, 50), "ms", **at, part=part, stat="p50")
        for k in range(6):
            print(f"  kind {k}: {int((kind == k).sum())} queries, p50 p90 p99 {pct(whole[kind == k])} ms")
            rec.figure("queries of a kind", int((kind == k).sum()), "", **at, kind=k)
            for p in (50, 90, 99):
                rec.figure("world.search by kind", np.percentile(whole[kind == k], p), "ms", **at, kind=k, stat=f"p{p}")
        print("  slowest: " + " / ".join(PARTS) + " (ms) | kind | query")
        for rank, j in enumerate(np.argsort(-whole)[:30], 1):
            print("   " + " ".join(f"{v:6.2f}" for v in x[j, :-1]) + f" | {int(kind[j])} | {queries[j]!r}")
            for part, v in zip(PARTS, x[j, :-1]):
                rec.figure("slowest queries", v, "ms", **at, rank=rank, part=part, kind=int(kind[j]), query=queries[j])


if __name__ == "__main__":
    main()
