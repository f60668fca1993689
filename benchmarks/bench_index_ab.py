"""Retrieval by two versions of the search index's code, side by side in one process on a
saved world:

    python benchmarks/bench_index_ab.py --world DIR                 # without / with the floors
    python benchmarks/bench_index_ab.py --world DIR --peer REV      # index.py of git REV / now

Two indexes are opened on the same files, each with its own caches, as two fresh processes
would have: the peer, and this checkout's ``TantivyIndex``. The peer is either this code told
its common clauses have no floors (``CommonClauses.floor``; the default, ``--peer no-floors``)
or the class of ``fictionworld/web/index.py`` as git revision REV has it (read with ``git
show``, loaded beside this one). ``Web.hits`` (n = 10) asks each the same 2,400 queries of
``bench_search.py``'s latency runs in turn (which goes first alternates), pinned to one core;
the answers must be the same, page for page and score for score (a score may differ in its
last bits, within a millionth of it, where one way adds the same clauses' scores in another
order: counted and printed). Printed: p50 / p90 / p99 /
mean over the first 1,200 queries and the next 1,200. For the floors, the world's
``index/common-best.json`` must hold them (a build since they were added); one without them
gives two equal columns.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from record import Record, add_options  # (beside this script: its directory is on sys.path)

ROOT = Path(__file__).resolve().parent.parent


def peer_class(rev: str):
    """``TantivyIndex`` of git revision ``rev``: its ``fictionworld/web/index.py`` and, where
    ``rev`` has it, ``common_clauses.py`` (the engine's two modules), each imported under a name
    of its own beside this checkout's; the rest of the package is this checkout's."""
    loaded: dict[str, object] = {}
    for name in ("common_clauses", "index"):
        got = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{rev}:fictionworld/web/{name}.py"], capture_output=True, text=True
        )
        if got.returncode:
            if name == "index":
                sys.exit(f"git show {rev}: {got.stderr.strip()}")
            continue  # (older revisions: the whole engine in index.py)
        source = got.stdout
        for dep, module in loaded.items():  # that revision's modules, not this checkout's
            source = source.replace(f"from fictionworld.web.{dep} import", f"from {module.__name__} import")
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
            f.write(source)
        spec = importlib.util.spec_from_file_location(f"fictionworld.web._{name}_{rev}", f.name)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        os.unlink(f.name)
        loaded[name] = module
    return loaded["index"].TantivyIndex


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--world", required=True, help="a saved world with its web")
    ap.add_argument("--peer", default="no-floors", help="'no-floors' (default) or a git revision")
    add_options(ap)
    args = ap.parse_args()
    with Record("index_ab", args) as rec:
        run(args, rec)


def run(args: argparse.Namespace, rec: Record) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from search_children import latency_world

    from fictionworld.web.index import TantivyIndex

    world, make = latency_world(args.world)
    web = world.web
    world.search("Juopla festival", k=10)
    path = web.index.path
    if args.peer == "no-floors":
        names = ("no floors", "floors")
        peer = TantivyIndex.open(path)
        peer.common.floor = lambda common, n: 0.0  # the search before the floors
        if not any(peer.common.stats(c)[1] for c in peer.common.read_known()):
            print("(this index's common-best.json holds no floors: both columns search the same way)")
    else:
        names = (args.peer, "this checkout")
        peer = peer_class(args.peer).open(path)
    ways = dict(zip(names, (peer, TantivyIndex.open(path))))
    queries = make(0) + make(1)
    times: dict[str, list[float]] = {name: [] for name in names}
    floats, worst = 0, 0.0  # answers whose scores differ in their last bits; the largest relative difference
    for i, q in enumerate(queries):
        answers = {}
        for name, ix in list(ways.items())[:: 1 if i % 2 else -1]:
            web.index = ix
            t = time.perf_counter()
            hits = web.hits(q, 10)
            times[name].append(time.perf_counter() - t)
            answers[name] = [(h.page, h.score) for h in hits]
        a, b = answers[names[0]], answers[names[1]]
        if a != b:  # the same pages, the scores equal but for the last bits of a sum added in another order
            drift = max((abs(x[1] - y[1]) / max(abs(x[1]), 1e-9) for x, y in zip(a, b)), default=0.0)
            if [x[0] for x in a] != [y[0] for y in b] or drift > 1e-6:
                raise SystemExit(f"different answers for {q!r}: {answers}")
            floats += 1
            worst = max(worst, drift)
    print(f"== {args.world}: Web.hits (n = 10), one core, the two ways alternated query by query ==")
    width = max(len(name) for name in names) + 13
    print(f"{'':{width}} {'p50 ms':>8} {'p90':>7} {'p99':>7} {'mean':>7}")
    for name, ts in times.items():
        ms = np.array(ts) * 1000
        for lo, label in ((0, "first 1,200"), (1200, "next 1,200")):
            w = ms[lo : lo + 1200]
            p50, p90, p99 = np.percentile(w, [50, 90, 99])
            print(f"{name + ', ' + label:{width}} {p50:8.2f} {p90:7.2f} {p99:7.1f} {w.mean():7.2f}")
            at = {"world": args.world, "peer": args.peer, "way": name, "queries": label}
            rec.stats("Web.hits latency", {"p50_ms": p50, "p90_ms": p90, "p99_ms": p99, "mean_ms": w.mean()}, **at)
    rec.figure("answers differing in a score's last bits", floats, "queries", world=args.world, peer=args.peer)
    rec.figure("largest relative score difference", worst, "", world=args.world, peer=args.peer)
    if floats:
        print(f"answers: the same pages for every query; {floats} of {len(queries)} differ in a score's last bits")
        print(f"(at most {worst:.1e} of it: a sum of the same clauses' scores, added in another order)")
        rec.note(f"answers: the same pages for every query; {floats} of {len(queries)} differ in a score's last bits")
    else:
        print("answers: the same for every query")
        rec.note("answers: the same for every query")


if __name__ == "__main__":
    main()
