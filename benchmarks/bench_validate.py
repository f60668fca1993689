"""Validation of a saved world: the streamed check (``fictionworld validate``) against its peer,
the whole-world check (``World.load`` + ``check_world`` in one process), on the same world in
the same run. Each runs in a fresh process tree whose RSS is sampled every 0.2 s: the peak of
one process, and of the tree summed. Also times the streamed content hash against loading the
world whole to hash it.

    python benchmarks/bench_validate.py --world worlds/w1m --workers 2
    python benchmarks/bench_validate.py --world /path/w10m --workers 2 --no-peer   # the peer needs ~12 GiB at 10M
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from record import Record, add_options  # (beside this script: its directory is on sys.path)

STREAM = """
import json, sys, time
from fictionworld.check.stream import check_world_dir
st = {}
t = time.perf_counter(); v = check_world_dir(sys.argv[1], workers=int(sys.argv[2]), stats=st)
big = max(st["units"], key=lambda u: u["facts"])
print(json.dumps({"wall_s": time.perf_counter() - t, "violations": len(v), "units": len(st["units"]),
                  "largest_unit_facts": big["facts"], "cpu_s": st["context_cpu_s"] + sum(u["cpu_s"] for u in st["units"])}))
"""
WHOLE = """
import json, sys, time
import fictionworld as fw
t = time.perf_counter(); v = fw.check_world(fw.World.load(sys.argv[1], verify=False))
print(json.dumps({"wall_s": time.perf_counter() - t, "violations": len(v)}))
"""
HASH = """
import json, sys, time
from fictionworld.streaming import stream_world_hash
t = time.perf_counter(); h = stream_world_hash(sys.argv[1])
print(json.dumps({"wall_s": time.perf_counter() - t, "hash": h}))
"""
LOAD_HASH = """
import json, sys, time
import fictionworld as fw
t = time.perf_counter(); h = fw.World.load(sys.argv[1], verify=True).world_hash
print(json.dumps({"wall_s": time.perf_counter() - t, "hash": h}))
"""


def sampled(code: str, *args: str) -> dict:
    """Run ``code`` in a fresh interpreter; its JSON line, plus the peak RSS of one process and
    of the process tree summed (GiB), sampled every 0.2 s."""
    import psutil

    p = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, text=True)
    root = psutil.Process(p.pid)
    one = total = 0
    while p.poll() is None:
        try:
            rss = [q.memory_info().rss for q in [root, *root.children(recursive=True)]]
            one, total = max(one, max(rss)), max(total, sum(rss))
        except psutil.Error:
            pass
        time.sleep(0.2)
    out = p.stdout.read().strip().splitlines()
    if p.returncode or not out:
        raise SystemExit(f"the child failed (exit {p.returncode})")
    return {**json.loads(out[-1]), "peak_one_gib": one / 2**30, "peak_tree_gib": total / 2**30}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--world", required=True, help="a saved world directory")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--no-peer", action="store_true", help="skip the whole-world peers (they hold the world)")
    add_options(ap)
    a = ap.parse_args()
    with Record("validate", a) as rec:
        run(a, rec)


def run(a: argparse.Namespace, rec: Record) -> None:
    rows = {"streamed check": sampled(STREAM, a.world, str(a.workers)), "streamed hash": sampled(HASH, a.world)}
    if not a.no_peer:
        rows["whole check (peer)"] = sampled(WHOLE, a.world)
        rows["load + hash (peer)"] = sampled(LOAD_HASH, a.world)
    print(f"{'':<20} {'wall':>9} {'peak one':>10} {'peak tree':>10}  notes")
    for name, r in rows.items():
        notes = {k: (round(v, 1) if isinstance(v, float) else v) for k, v in r.items() if k not in ("wall_s", "peak_one_gib", "peak_tree_gib")}  # fmt: skip
        print(f"{name:<20} {r['wall_s']:>8.1f}s {r['peak_one_gib']:>8.2f}GiB {r['peak_tree_gib']:>8.2f}GiB  {notes}")
        at = {"world": a.world, "workers": a.workers, "what": name}
        rec.figure("wall", r["wall_s"], "s", **at)
        rec.figure("peak RSS", r["peak_one_gib"], "GiB", **at, of="one process")
        rec.figure("peak RSS", r["peak_tree_gib"], "GiB", **at, of="the process tree")
        for key, value in notes.items():
            if key == "hash":
                rec.note(f"{name}: world hash {value}")
            else:
                rec.figure(key, r[key], "s" if key.endswith("_s") else "", **at)
    if not a.no_peer:
        s, w = rows["streamed check"], rows["whole check (peer)"]
        print(f"streamed / whole: wall {s['wall_s'] / w['wall_s']:.2f}x, peak of one process "
              f"{s['peak_one_gib'] / w['peak_one_gib']:.2f}x, tree {s['peak_tree_gib'] / w['peak_tree_gib']:.2f}x")  # fmt: skip
        assert s["violations"] == w["violations"], "the streamed and the whole check disagree"
        assert rows["streamed hash"]["hash"] == rows["load + hash (peer)"]["hash"], "the hashes differ"
        peer = "the whole-world check (World.load + check_world in one process) on the same world, same run"
        for key, what in (("wall_s", "wall"), ("peak_one_gib", "peak RSS of one process"),
                          ("peak_tree_gib", "peak RSS of the process tree")):  # fmt: skip
            rec.ratio(f"{what}: streamed / whole check", s[key], w[key], world=a.world, workers=a.workers, against=peer)
        rec.note("the streamed and the whole check found the same violations; the streamed and the loaded hash agree")


if __name__ == "__main__":
    main()
