"""The first ``open`` in a forked service worker, with and without the service's warm-up:

    python benchmarks/bench_first_open.py --world DIR [--runs 2]

The first page a process opens reads the entities' ids (seconds at 10M entities). A service
warms up in the process that forks its workers (``WorldService.warm``: a search and an open),
so they inherit what it read. Each run is a fresh process that opens a ``WorldService`` warmed
or not (alternating), forks a child as ``fictionworld serve`` forks a worker, and times the
child's first and second ``open_url``. Printed per run: ``WorldService.open`` seconds, the
child's first and second open in ms.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from record import Record, add_options  # (beside this script: its directory is on sys.path)

CHILD = r"""
import json, os, sys, time
t = time.perf_counter()
from fictionworld.env.service import WorldService
service = WorldService.open(sys.argv[1], warm=sys.argv[2] == "1")
opened = time.perf_counter() - t
urls = [r["url"] for r in service.search("Juopla festival", k=5)["results"]]
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    service.reopen_index()
    times = []
    for url in (urls[-1], urls[-2]):
        t = time.perf_counter()
        service.open_url(url)
        times.append(time.perf_counter() - t)
    os.write(w, json.dumps(times).encode())
    os._exit(0)
os.close(w)
os.waitpid(pid, 0)
print(json.dumps({"open_s": opened, "worker_open_s": json.loads(os.read(r, 1000))}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--world", required=True, help="a saved world with its web")
    ap.add_argument("--runs", type=int, default=2, help="runs of each way")
    add_options(ap)
    args = ap.parse_args()
    with Record("first_open", args) as rec:
        run(args, rec)


def run(args: argparse.Namespace, rec: Record) -> None:
    print(f"== {args.world}: a forked worker's first open ==")
    print(f"{'warm-up':10} {'WorldService.open s':>20} {'first open ms':>14} {'second ms':>10}")
    for i in range(2 * args.runs):
        warm = i % 2
        out = subprocess.run(
            [sys.executable, "-c", CHILD, args.world, str(warm)], capture_output=True, text=True, check=True
        )
        d = json.loads(out.stdout.strip().splitlines()[-1])
        first, second = d["worker_open_s"]
        print(f"{'yes' if warm else 'no':10} {d['open_s']:20.2f} {first * 1000:14.1f} {second * 1000:10.1f}")
        at = {"world": args.world, "warmed": bool(warm), "run": i // 2 + 1}
        rec.figure("WorldService.open", d["open_s"], "s", **at)
        rec.figure("forked worker's open", first * 1000, "ms", **at, open="first")
        rec.figure("forked worker's open", second * 1000, "ms", **at, open="second")


if __name__ == "__main__":
    main()
