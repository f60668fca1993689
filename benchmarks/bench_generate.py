"""Generation speed and memory: entities/s, facts/s and peak RSS at 10k, 100k and 1M entities.

Each size runs in a fresh subprocess so its peak RSS is its own. Inside that process the peers
that this design replaced run on the same data, and the ratios are printed:

* Faker ``name()`` (the per-call way to name people) vs our vectorised naming of the same people;
* building a networkx MultiDiGraph of the same facts (graph-as-storage) vs our whole generation.

    python benchmarks/bench_generate.py                    # 10k, 100k, 1M
    python benchmarks/bench_generate.py --sizes 10000 --profile

``--full`` times the whole build instead (graph + validate + pages + index, as ``fictionworld
generate`` runs it) with 1 and 2 workers, local processes or ``--ray`` tasks, and prints per
stage entities/s and pages/s, peak RSS per process and of the whole process tree (sampled),
disk bytes per entity (and the peak while it builds), and the speed-up of 2 workers over 1 on the
same machine:

    python benchmarks/bench_generate.py --full --sizes 100000 1000000
    python benchmarks/bench_generate.py --full --ray --sizes 100000 --workers 1 2
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import machine  # (beside this script: its directory is on sys.path when run)
from record import Record, add_options

TARGET_SPEEDUP = 1.7  # 2 workers over 1, the same build on the same machine

CHILD = r"""
import gc, json, resource, sys, time, tempfile
import numpy as np
n, peer_max, profile = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
import fictionworld as fw
from fictionworld.gazetteer import real_place_names, famous_people
from fictionworld.spec import default_spec
from fictionworld.generators import generate_world
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
import fictionworld.generators.people as gp
from fictionworld.generators.base import GenContext
ctx = GenContext(spec, 1)
import fictionworld.generators.places as pl
pl.generate_places(ctx)
t = time.perf_counter(); gp.generate_people(ctx); out["our_person_gen_per_s"] = persons / (time.perf_counter() - t)
if n <= peer_max:
    gc.disable()
    t = time.perf_counter(); g = world.graph; out["networkx_build_s"] = time.perf_counter() - t
    out["networkx_nodes"] = g.number_of_nodes(); out["networkx_edges"] = g.number_of_edges()
print(json.dumps(out))
"""


FULL_CHILD = r"""
import json, os, sys, tempfile, threading, time
import psutil
n, workers, use_ray, tmp, keep, validate = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4], sys.argv[5], sys.argv[6] == "1"
from fictionworld.spec import default_spec
from fictionworld.web.shards import build_world
me = psutil.Process()
peak = {"total": 0, "pss": 0, "per_process": 0, "processes": 0, "anon": 0, "per_process_anon": 0, "at_peak": [],
        "disk_tree": 0, "disk_fs": 0}
stop = threading.Event()
where = {}  # "out": the build's directory, once known; "fs0": its filesystem's used bytes before
def tree_bytes(root):
    # bytes of the files under root, read while the build writes and deletes them; a file with
    # several links (the joined index links the shards' segments) counted once
    total, stack, seen = 0, [root], set()
    while stack:
        try:
            with os.scandir(stack.pop()) as it:
                for e in it:
                    try:
                        if e.is_dir(follow_symlinks=False):
                            stack.append(e.path)
                        elif e.is_file(follow_symlinks=False):
                            st = e.stat(follow_symlinks=False)
                            if (st.st_dev, st.st_ino) not in seen:
                                seen.add((st.st_dev, st.st_ino))
                                total += st.st_size
                    except OSError:
                        pass
        except OSError:
            pass
    return total
def sample():
    # RSS every 0.5 s (/proc/PID/statm: cheap); PSS every 5 s (smaps_rollup walks every mapped
    # page: at 1M it cost 4.6 CPU s a build when read every 0.5 s, taken from the workers)
    k = 0
    while not stop.is_set():
        procs = [me] + me.children(recursive=True)
        rss, pss, anon, who = [], [], [], []
        for p in procs:
            try:
                if k % 10 == 0:
                    m = p.memory_full_info()
                    pss.append(m.pss)
                else:
                    m = p.memory_info()
                rss.append(m.rss)
                # resident less file-backed and shared pages (statm): what the process holds
                # itself, where the rest is mapped files the kernel may drop and read again
                anon.append(m.rss - m.shared)
                who.append((p.pid, round(m.rss / 2**30, 2), round((m.rss - m.shared) / 2**30, 2)))
            except psutil.Error:
                pass
        if sum(rss) > peak["total"]:
            peak["at_peak"] = sorted(who, key=lambda x: -x[1])[:5]  # (pid, RSS GiB, anonymous GiB)
        peak["anon"] = max(peak["anon"], sum(anon))
        peak["per_process_anon"] = max(peak["per_process_anon"], max(anon, default=0))
        peak["total"] = max(peak["total"], sum(rss))
        peak["pss"] = max(peak["pss"], sum(pss))
        peak["per_process"] = max(peak["per_process"], max(rss))
        peak["processes"] = max(peak["processes"], len(rss))
        if "out" in where:
            # disk: the build's tree every 2 s (everything it writes lies under its directory),
            # and its filesystem's used bytes over those before it (anything else written there
            # counts too; nothing else runs during a benchmark)
            used = __import__("shutil").disk_usage(where["fs"]).used - where["fs0"]
            if used > peak["disk_fs"]:
                peak["disk_fs"], peak["disk_fs_at_s"] = used, time.perf_counter() - T0
            if k % 4 == 0:
                tree = tree_bytes(where["out"])
                if tree > peak["disk_tree"]:
                    peak["disk_tree"], peak["disk_tree_at_s"] = tree, time.perf_counter() - T0
        peak["monitor_cpu_s"] = time.thread_time()
        k += 1
        stop.wait(0.5)
threading.Thread(target=sample, daemon=True).start()
T0, last = time.perf_counter(), {}
def progress(stage, done, total):  # a log line per stage and per tenth of it, on stderr
    step = 10 * done // max(total, 1)
    if last.get(stage) != step:
        last[stage] = step
        print(f"[{time.perf_counter() - T0:7.1f} s] {stage}: {done}/{total}  (total RSS {peak['total'] / 2**30:.2f} GiB so far)",
              file=sys.stderr, flush=True)
def build(out):
    fs = os.path.dirname(os.path.abspath(out))
    where.update(fs=fs, fs0=__import__("shutil").disk_usage(fs).used, out=out)
    t = time.perf_counter()
    s = build_world(default_spec(n), 1, out, workers=workers, use_ray=use_ray, validate=validate, progress=progress)
    wall = time.perf_counter() - t
    stop.set()
    return s, wall, sum(f.stat().st_size for f in __import__("pathlib").Path(out).rglob("*") if f.is_file())
if keep:
    s, wall, disk = build(keep)
else:
    with tempfile.TemporaryDirectory(dir=tmp or None) as d:
        s, wall, disk = build(d + "/w")
if use_ray:
    import ray; ray.shutdown()
print(json.dumps(dict(n=n, workers=workers, ray=use_ray, validate=validate, wall_s=wall, disk=disk, peak=peak,
                      **{k: s[k] for k in ("entities", "facts", "pages", "shards", "times")})))
"""


def full(args, rec: Record) -> None:
    if args.tmp:
        from pathlib import Path

        Path(args.tmp).mkdir(parents=True, exist_ok=True)
    runs = [(n, w) for n in args.sizes for w in args.workers]
    rows = []
    for n in args.sizes:
        walls: dict[int, list[float]] = {w: [] for w in args.workers}
        for rep in range(args.repeat):  # interleaved: 1, 2, 1, 2, ... so drift hits both alike
            for w in args.workers:
                keep = args.keep or ""
                if keep and (len(runs) > 1 or args.repeat > 1):  # each build its own directory
                    keep = f"{keep}/{n}-{w}w" + (f"-{rep + 1}" if args.repeat > 1 else "")
                if keep:
                    from pathlib import Path

                    Path(keep).parent.mkdir(parents=True, exist_ok=True)
                before = machine.calibrate()
                res = subprocess.run(
                    [
                        sys.executable,
                        "-c",
                        FULL_CHILD,
                        str(n),
                        str(w),
                        "1" if args.ray else "0",
                        args.tmp or "",
                        keep,
                        "0" if args.no_validate else "1",
                    ],  # fmt: skip
                    stdout=subprocess.PIPE,
                    text=True,
                )  # its progress log goes to our stderr
                if res.returncode != 0:
                    sys.exit(f"full build at {n} with {w} workers failed (exit {res.returncode})")
                r = json.loads(res.stdout.strip().splitlines()[-1])
                r["repeat"] = rep + 1
                r["calibration_ms"] = [before, machine.calibrate()]
                walls[w].append(r["wall_s"])
                rows.append(r)
                _print_full(r, w)
                _record_full(rec, r)
            ws = sorted(walls)
            for w in ws[1:]:
                print(f"  speed-up of {w} workers over {ws[0]}: {walls[ws[0]][-1] / walls[w][-1]:.2f}x"
                      + (f" (run {rep + 1} of {args.repeat})" if args.repeat > 1 else ""))  # fmt: skip
                if args.repeat > 1:
                    rec.figure("speed-up of one run", walls[ws[0]][-1] / walls[w][-1], "×", entities=n, workers=w,
                               over=ws[0], ray=args.ray, run=rep + 1)  # fmt: skip
        for w in sorted(walls)[1:]:  # the median walls' speed-up (one run: its own)
            base = sorted(walls)[0]
            a, b = statistics.median(walls[base]), statistics.median(walls[w])
            rec.figure("speed-up", a / b, "×", entities=n, workers=w, over=base, ray=args.ray)
            rec.ratio(f"wall with {base} worker(s) / wall with {w} workers", a, b, entities=n, workers=w, ray=args.ray,
                      at_least=TARGET_SPEEDUP if (base, w) == (1, 2) else None,
                      against=f"the same build with {base} worker(s) on the same machine, runs interleaved"
                      + (f" (medians of {args.repeat})" if args.repeat > 1 else ""))  # fmt: skip
        if args.repeat > 1 and len(walls) > 1:
            ws = sorted(walls)
            med = {w: statistics.median(v) for w, v in walls.items()}
            for w in ws[1:]:
                pairs = ", ".join(f"{a / b:.2f}x" for a, b in zip(walls[ws[0]], walls[w]))
                print(f"\n  {n:,} entities, {args.repeat} interleaved runs: median wall "
                      f"{med[ws[0]]:.1f} s ({ws[0]} worker(s)) and {med[w]:.1f} s ({w}): speed-up of the medians "
                      f"{med[ws[0]] / med[w]:.2f}x; run by run {pairs}")  # fmt: skip
    if args.json:
        print(json.dumps(rows, indent=2))


def _after_hash(t: dict) -> str:
    """What the graph stage did after the hash: the lexicon's first part (when it wrote it) and
    the wait for the store's fact half."""
    wait = t.get("beside_wait_s", 0)
    if "lexicon_s" not in t:
        return f"the store {wait:.1f} s more"
    return (f"the lexicon {t['lexicon_s']:.1f} s ({t['lexicon_cpu_s']:.1f} CPU s) beside the store, "
            f"which took {max(wait - t['lexicon_s'], 0):.1f} s more")  # fmt: skip


def _record_full(rec: Record, r: dict) -> None:
    """The figures of one full build (``r``, as ``FULL_CHILD`` gives it, with its calibrations)."""
    at = {"entities": r["n"], "workers": r["workers"], "ray": r["ray"], "validate": r["validate"], "run": r["repeat"]}
    t, p = r["times"], r["peak"]
    rec.figure("wall", r["wall_s"], "s", **at, what="full build")
    rec.figure("rate", r["entities"] / r["wall_s"], "1/s", **at, what="entities per s of wall")
    rec.figure("rate", r["pages"] / r["wall_s"], "1/s", **at, what="pages per s of wall")
    for k in ("entities", "facts", "pages", "shards"):
        rec.figure(k, r[k], "", **at)
    rec.stats("stage", {k: v for k, v in t.items() if k != "graph_peak_rss"}, **at)
    rec.figure("peak RSS", t.get("graph_peak_rss", 0) / 2**30, "GiB", **at, what="graph stage's driver")
    for key, what in (("per_process", "one process"), ("total", "all processes (sum of RSS)"),
                      ("pss", "all processes (sum of PSS)"), ("per_process_anon", "one process, anonymous"),
                      ("anon", "all processes, anonymous")):  # fmt: skip
        if key in p:
            rec.figure("peak RSS", p[key] / 2**30, "GiB", **at, what=what)
    rec.figure("processes", p["processes"], "", **at)
    rec.figure("sampler CPU", p.get("monitor_cpu_s", 0), "s", **at)
    rec.figure("disk", r["disk"] / 2**30, "GiB", **at, what="the world")
    rec.figure("disk per entity", r["disk"] / r["entities"], "B", **at)
    if "disk_tree" in p:
        rec.figure("disk", p["disk_tree"] / 2**30, "GiB", **at, what="peak of its directory")
        rec.figure("disk", p["disk_fs"] / 2**30, "GiB", **at, what="peak of its filesystem above the start")
        rec.figure("disk peak at", p.get("disk_tree_at_s", 0), "s", **at, what="its directory")
        rec.figure("disk peak at", p.get("disk_fs_at_s", 0), "s", **at, what="its filesystem")
    before, after = r["calibration_ms"]
    rec.figure("calibration", before, "ms", **at, stat="right before the build")
    rec.figure("calibration", after, "ms", **at, stat="right after the build")


def _print_full(r: dict, w: int) -> None:
    t = r["times"]
    print(f"\n== full build{'' if r['validate'] else ' WITHOUT validation'}, {r['entities']:,} entities, {r['facts']:,} facts, {r['pages']:,} pages, "
          f"{w} worker(s){' on Ray' if r['ray'] else ''}, {r['shards']} shards")  # fmt: skip
    print(
        f"  wall {r['wall_s']:.1f} s  ({r['entities'] / r['wall_s']:,.0f} entities/s, {r['pages'] / r['wall_s']:,.0f} pages/s)"
    )
    print(f"  graph (generate to spools, write the graph, hash it; the render store written beside both) {t['graph_s']:.1f} s "
          f"({r['entities'] / t['graph_s']:,.0f} entities/s; generate {t.get('generate_s', 0):.1f} s, "
          f"write {t.get('write_s', 0):.1f} s, hash {t.get('hash_s', 0):.1f} s, then {_after_hash(t)}; "
          f"peak RSS of its driver {t.get('graph_peak_rss', 0) / 2**30:.2f} GiB)")  # fmt: skip
    print(
        f"  shards (validate + render + index) {t['shards_s']:.1f} s wall ({r['pages'] / t['shards_s']:,.0f} pages/s)"
    )
    cpu = {k: t.get(f"{k}_cpu_s", 0.0) for k in ("check", "render", "index")}
    checked = (
        f"validate {cpu['check']:.1f} s ({r['facts'] / max(cpu['check'], 1e-9):,.0f} facts/s), "
        if r["validate"]
        else ""
    )
    print(f"    CPU seconds in tasks (one core each): {checked}render {cpu['render']:.1f} s "
          f"({r['pages'] / max(cpu['render'], 1e-9):,.0f} pages/s, {r['entities'] / max(cpu['render'], 1e-9):,.0f} entities/s), "
          f"index {cpu['index']:.1f} s ({r['pages'] / max(cpu['index'], 1e-9):,.0f} pages/s)")  # fmt: skip
    beside = (f"; its page half, {t['join_pages_s']:.1f} s, ran beside the last index tasks"
              if "join_pages_s" in t else "")  # fmt: skip
    print(f"  join (URLs, pages.arrow, index) {t['finish_s']:.1f} s after the shards{beside}")
    p = r["peak"]
    print(f"  peak RSS: one process {p['per_process'] / 2**30:.2f} GiB, all {p['processes']} processes together "
          f"{p['total'] / 2**30:.2f} GiB (sum of RSS: shared pages counted in each), "
          f"{p['pss'] / 2**30:.2f} GiB (sum of PSS, read every 5 s: shared pages split between their processes); "
          f"the sampler took {p.get('monitor_cpu_s', 0):.1f} CPU s")  # fmt: skip
    if "anon" in p:
        print(f"    of it anonymous (RSS less file-backed and shared pages): one process {p['per_process_anon'] / 2**30:.2f} GiB, "
              f"all together {p['anon'] / 2**30:.2f} GiB; at the RSS peak (pid, RSS, anonymous GiB): {p['at_peak']}")  # fmt: skip
    print(f"  disk {r['disk'] / 2**30:.2f} GiB = {r['disk'] / r['entities']:,.0f} bytes per entity"
          + (f"; peak during the build: its directory {p['disk_tree'] / 2**30:.2f} GiB at {p.get('disk_tree_at_s', 0):.0f} s "
             f"(read every 2 s), its filesystem {p['disk_fs'] / 2**30:.2f} GiB above the start at {p.get('disk_fs_at_s', 0):.0f} s "
             "(every 0.5 s: files removed while still open count until closed)" if "disk_tree" in p else ""))  # fmt: skip
    if "calibration_ms" in r:
        a, b = r["calibration_ms"]
        print(
            f"  machine: calibration {a:.1f} ms right before the build, {b:.1f} ms right after (benchmarks/machine.py)"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--peer-max", type=int, default=100_000, help="largest size to also build the networkx peer for")
    ap.add_argument("--profile", action="store_true", help="print a cProfile of generation")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--full", action="store_true", help="time the whole build (graph + validate + web + index)")
    ap.add_argument("--ray", action="store_true", help="with --full: build as Ray tasks on a local cluster")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="with --full: worker counts to compare")
    ap.add_argument("--tmp", default=None, help="with --full: directory for the worlds (default: the system's)")
    ap.add_argument(
        "--keep",
        default=None,
        help="with --full: build into this directory and keep it (several builds: "
        "one subdirectory each, SIZE-Ww[-RUN])",
    )
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="with --full: build each size this many times, the worker "
        "counts interleaved, and print the median walls and their speed-up",
    )
    ap.add_argument(
        "--no-validate", action="store_true", help="with --full: skip the checks (as `generate --no-validate`)"
    )
    add_options(ap)
    args = ap.parse_args()
    print(machine.line(), flush=True)  # figures of different days compare only through it
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    with Record("generate", args) as rec:
        if args.full:
            full(args, rec)
        else:
            sizes(args, rec)


def sizes(args, rec: Record) -> None:
    """Each size generated in a fresh process, next to the peers."""
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
        _record_row(rec, row)
    if args.json:
        print(json.dumps(rows, indent=2))


def _record_row(rec: Record, r: dict) -> None:
    """The figures of one size (``r``, as ``CHILD`` gives it)."""
    n = r["n"]
    for key, what in (("gen_s", "generate"), ("check_s", "check"), ("save_s", "save"), ("load_s", "load + verify"),
                      ("gazetteer_s", "gazetteer load (once)"), ("wall_s", "the whole child process")):  # fmt: skip
        rec.figure("wall", r[key], "s", entities=n, what=what)
    rec.figure("wall", r["gen_s"] + r["check_s"], "s", entities=n, what="generate + validate")
    rec.figure("rate", r["entities"] / r["gen_s"], "1/s", entities=n, what="entities generated per s")
    rec.figure("rate", r["facts"] / r["gen_s"], "1/s", entities=n, what="facts generated per s")
    rec.figure("rate", r["facts"] / r["check_s"], "1/s", entities=n, what="facts checked per s")
    for k in ("entities", "facts", "violations"):
        rec.figure(k, r[k], "", entities=n)
    rec.figure("peak RSS", r["peak_rss"] / 2**30, "GiB", entities=n)
    rec.figure("rate", r["our_person_gen_per_s"], "1/s", entities=n, what="people named: ours (whole person generator)")
    rec.figure("rate", r["faker_names_per_s"], "1/s", entities=n, what="people named: Faker name()")
    rec.ratio("people named per s: ours / Faker", r["our_person_gen_per_s"], r["faker_names_per_s"], entities=n,
              against="Faker name() (the per-call way to name people), same process")  # fmt: skip
    if "networkx_build_s" in r:
        rec.figure("wall", r["networkx_build_s"], "s", entities=n, what="networkx MultiDiGraph of the same facts")
        rec.figure("networkx edges", r["networkx_edges"], "", entities=n)
        rec.ratio("networkx build / our generation", r["networkx_build_s"], r["gen_s"], entities=n,
                  against="a networkx MultiDiGraph of the same facts (graph as storage), same process")  # fmt: skip


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
