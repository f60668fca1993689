"""Misspelt names: how many find their entity, and how long retrieval takes for them.

The queries are the misspelt names of ``bench_search.py``'s latency queries (every sixth: two
inner letters of a name's longest word swapped) of seeds 1 and 2. A query's entity is the one
its unswapped name links to at score 100 (tried at each swap the misspelling could have made,
with the running code's linker). Counted: queries whose entity's article is among the top 10
of ``Web.hits``; timed: ``Web.hits``, one core, two passes (the second with the caches of the
first). Public API only, so that another checkout's code can be timed on the same world and
queries (``PYTHONPATH=/path/to/other/checkout``); the queries' entities are then found by that
code's linker too.

    python benchmarks/bench_misspelt.py --world DIR
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from record import Record, add_options  # noqa: E402
from search_children import world_from_args  # noqa: E402


def misspelt(make_queries) -> list[str]:
    return [q for seed in (1, 2) for i, q in enumerate(make_queries(seed)) if i % 6 == 3]


def entity_of(linker, query: str) -> list[int]:
    """Entity rows the unswapped query names in full (score 100), or [] if none."""
    words = query.split(" ")
    i = max(range(len(words)), key=lambda k: len(words[k]))
    w = words[i]
    for j in range(1, len(w) - 2):
        name = " ".join(words[:i] + [w[:j] + w[j + 1] + w[j] + w[j + 2 :]] + words[i + 1 :])
        links = [link for link in linker.link(name) if link.score == 100.0]
        if links:
            return sorted(link.row for link in links)
    return []


def main() -> None:
    world, make_queries, args = world_from_args(__doc__, add_options)
    with Record("misspelt", args) as rec:
        run(world, make_queries, args.world, rec)


def run(world, make_queries, directory: str, rec: Record) -> None:
    web = world.web
    truth = {q: rows for q in misspelt(make_queries) if (rows := entity_of(web.linker, q))}
    print(f"{directory}: {len(truth)} misspelt names with a known entity")
    rec.figure("misspelt names with a known entity", len(truth), "queries", world=directory)
    for rep in range(2):
        found, took = 0, []
        for q, rows in truth.items():
            t = time.perf_counter()
            hits = web.hits(q, 10)
            took.append(time.perf_counter() - t)
            articles = set(web.articles_of(rows))
            found += any(h.page in articles for h in hits)
        ms = np.array(took) * 1e3
        print(f"pass {rep + 1}: article in the top 10 for {found} / {len(truth)}; "
              f"Web.hits p50 {np.median(ms):.2f} ms, mean {ms.mean():.2f} ms")  # fmt: skip
        at = {"world": directory, "pass": rep + 1}
        rec.figure("article in the top 10", found, "queries", **at)
        rec.stats("Web.hits latency", {"p50_ms": float(np.median(ms)), "mean_ms": float(ms.mean())}, **at)


if __name__ == "__main__":
    main()
