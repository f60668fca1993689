"""Generation speed and memory: entities/s, facts/s and peak RSS at 10k, 100k and 1M entities.

Each size runs in a fresh subprocess so its peak RSS is its own. Inside that process the peers
that this design replaced run on the same data, and the ratios are printed:

* Faker ``name()`` (the per-call way to name people) vs our vectorised naming of the same people;
* building a networkx MultiDiGraph of the same facts (graph-as-storage) vs our whole generation.

    python benchmarks/bench_generate.py                    # 10k, 100k, 1M
    python benchmarks/bench_generate.py --sizes 10000 --profile
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

CHILD = r"""
import gc, json, resource, sys, time, tempfile
import numpy as np
n, peer_max, profile = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
import fictionworld as fw
from fictionworld.gazetteer import real_place_names, famous_people
from fictionworld.spec import default_spec
from generators import generate_world
t = time.perf_counter(); real_place_names(); famous_people(); t_gaz = time.perf_counter() - t
spec = default_spec(n)
if profile:
    import cProfile, pstats, io
    pr = cProfile.Profile(); pr.enable()
t = time.perf_counter(); world = generate_world(spec, seed=1); t_gen = time.perf_counter() - t
if profile:
    pr.disable(); s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(18)
    print(s.getvalue(), file=sys.stderr)
t = time.perf_counter(); violations = fw.check_world(world); t_check = time.perf_counter() - t
with tempfile.TemporaryDirectory() as d:
    t = time.perf_counter(); world.save(d + "/w", web=False); t_save = time.perf_counter() - t
    t = time.perf_counter(); fw.World.load(d + "/w"); t_load = time.perf_counter() - t
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
out = dict(n=n, entities=len(world.entities), facts=len(world.facts), gazetteer_s=t_gaz, gen_s=t_gen,
           check_s=t_check, save_s=t_save, load_s=t_load, peak_rss=rss, violations=len(violations))
# peers, measured after our peak RSS was recorded
persons = world.counts()["person"]
from faker import Faker
fk = Faker("en_US"); fk.seed_instance(1)
k = min(persons, 20_000)
t = time.perf_counter()
for _ in range(k): fk.name()
out["faker_names_per_s"] = k / (time.perf_counter() - t)
out["our_person_gen_per_s"] = None
import generators.people as gp
from generators.base import GenContext
ctx = GenContext(spec, 1)
import generators.places as pl
pl.generate_places(ctx)
t = time.perf_counter(); gp.generate_people(ctx); out["our_person_gen_per_s"] = persons / (time.perf_counter() - t)
if n <= peer_max:
    gc.disable()
    t = time.perf_counter(); g = world.graph; out["networkx_build_s"] = time.perf_counter() - t
    out["networkx_nodes"] = g.number_of_nodes(); out["networkx_edges"] = g.number_of_edges()
print(json.dumps(out))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--peer-max", type=int, default=100_000, help="largest size to also build the networkx peer for")
    ap.add_argument("--profile", action="store_true", help="print a cProfile of generation")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = []
    for n in args.sizes:
        t = time.perf_counter()
        res = subprocess.run(
            [sys.executable, "-c", CHILD, str(n), str(args.peer_max), "1" if args.profile else "0"],
            capture_output=True,
            text=True,
        )
        if res.returncode != 0:
            sys.exit(f"benchmark at {n} failed:\n{res.stderr}")
        if args.profile:
            print(res.stderr, file=sys.stderr)
        row = json.loads(res.stdout.strip().splitlines()[-1])
        row["wall_s"] = time.perf_counter() - t
        rows.append(row)
        _print_row(row)
    if args.json:
        print(json.dumps(rows, indent=2))


def _print_row(r: dict) -> None:
    gv = r["gen_s"] + r["check_s"]
    print(f"\n== {r['entities']:,} entities, {r['facts']:,} facts ({r['facts'] / r['entities']:.1f} per entity)")
    print(
        f"  generate {r['gen_s']:.2f} s  ({r['entities'] / r['gen_s']:,.0f} entities/s, {r['facts'] / r['gen_s']:,.0f} facts/s)"
    )
    print(f"  check    {r['check_s']:.2f} s  ({r['facts'] / r['check_s']:,.0f} facts/s; {r['violations']} violations)")
    print(f"  generate + validate {gv:.2f} s   (+ one-time gazetteer load {r['gazetteer_s']:.2f} s)")
    print(f"  save {r['save_s']:.2f} s   load+verify {r['load_s']:.2f} s   peak RSS {r['peak_rss'] / 2**30:.2f} GiB")
    print(
        f"  people named: ours {r['our_person_gen_per_s']:,.0f}/s (whole person generator) vs Faker name() "
        f"{r['faker_names_per_s']:,.0f}/s  -> {r['our_person_gen_per_s'] / r['faker_names_per_s']:.1f}x"
    )
    if "networkx_build_s" in r:
        print(
            f"  networkx MultiDiGraph of the same facts: {r['networkx_build_s']:.2f} s "
            f"({r['networkx_edges']:,} edges) = {r['networkx_build_s'] / r['gen_s']:.2f}x our whole generation"
        )


if __name__ == "__main__":
    main()
