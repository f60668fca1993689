"""Result lists with directories read whole and read by their first lines, side by side in one
process on a saved world:

    python benchmarks/bench_results.py --world DIR

A directory's result is its number of entries and its first three. It was made from the
directory's whole text (decompressed, decoded, its lines counted: at 10M entities up to 6.4M
characters); now from its first lines alone (``PageTable.head``, decompressing only that far)
and its entities (``PageTable.entries``). ``render_results`` of the hits (n = 10) of the first
1,200 latency queries of ``bench_search.py``, pinned to one core, each way in turn (which goes
first alternates); the results must be the same. Printed: p50 / p99 / max / mean of the
result lists, and of those holding a directory of more than 100,000 characters.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from record import Record, add_options  # (beside this script: its directory is on sys.path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--world", required=True, help="a saved world with its web")
    add_options(ap)
    args = ap.parse_args()
    with Record("results", args) as rec:
        run(args, rec)


def run(args: argparse.Namespace, rec: Record) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from search_children import latency_world

    from fictionworld.web.pages import PageTable

    world, make = latency_world(args.world)
    web = world.web
    pages = web.pages
    queries = make(0)
    asked = [(q, web.hits(q, 10)) for q in queries]
    lists = {h.page for _, hits in asked for h in hits if pages.kind_of(h.page) == "list"}
    big = {r for r in lists if len(pages.text(r)) > 100_000}

    def whole(self, row, lines):  # the old way: the whole text, its lines counted
        return pages.text(row)

    ways = {"whole text": (whole, lambda self, row: None), "first lines": (PageTable.head, PageTable.entries)}
    times: dict[str, list[float]] = {name: [] for name in ways}
    for i, (q, hits) in enumerate(asked):
        got = {}
        for name, (head, entries) in list(ways.items())[:: 1 if i % 2 else -1]:
            PageTable.head, PageTable.entries = head, entries
            t = time.perf_counter()
            got[name] = web.model.render_results(web, q, hits, web.knobs)
            times[name].append(time.perf_counter() - t)
        if got["whole text"] != got["first lines"]:
            raise SystemExit(f"different results for {q!r}")
    PageTable.head, PageTable.entries = ways["first lines"]
    with_big = np.array([any(h.page in big for h in hits) for _, hits in asked])
    print(f"== {args.world}: render_results of 10 hits, one core, the two ways alternated query by query ==")
    print(
        f"{len(lists):,} directories among the results, {len(big)} of over 100,000 characters, in {with_big.sum()} of {len(asked)} lists"
    )
    at = {"world": args.world}
    rec.figure("directories among the results", len(lists), "", **at)
    rec.figure("directories of over 100,000 characters", len(big), "", **at)
    rec.figure("result lists with a big directory", int(with_big.sum()), "", **at)
    rec.figure("result lists", len(asked), "", **at)
    print(f"{'':34} {'p50 ms':>8} {'p99':>7} {'max':>7} {'mean':>7}")
    for name, ts in times.items():
        ms = np.array(ts) * 1000
        for label, w in (("all", ms), ("with a big directory", ms[with_big])):
            if len(w):
                p50, p99 = np.percentile(w, [50, 99])
                print(f"{name + ', ' + label:34} {p50:8.2f} {p99:7.2f} {w.max():7.1f} {w.mean():7.2f}")
                rec.stats("render_results", {"p50_ms": p50, "p99_ms": p99, "max_ms": w.max(), "mean_ms": w.mean()},
                          **at, way=name, lists=label)  # fmt: skip
    print("results: the same for every query")
    rec.note("results: the same for every query, both ways")


if __name__ == "__main__":
    main()
