"""Rollout speed and memory: episodes/s on the Ray actor pool with 1 and then 2 workers (the same
jobs, one after the other in the same process), the env's own overhead per tool call on a
100k-entity world next to the bare web tool, and each actor's memory next to the world's size.

    python benchmarks/bench_rollout.py [--entities 20000] [--tasks 40 --samples 4] [--delay 0]
    python benchmarks/bench_rollout.py --entities 3000 --step-entities 5000 --tasks 10 --samples 2
    python benchmarks/bench_rollout.py --adapters --skip-throughput --skip-steps   # verl/TRL adapters only

Worlds (seed 1) are generated once and cached under ``worlds/bench/`` (git-ignored), reused when
the saved spec matches; ``--world DIR`` / ``--rollout-world DIR`` take a saved world instead.
Throughput is timed after a warm-up run on each pool (Ray start-up, world loading and the
first queries are not counted). ``--delay`` sleeps that long before each oracle tool call, as an
LLM's latency would. Env steps run on one core (pinned where the OS allows) after Ray is shut down.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import psutil
from record import Record, add_options  # (beside this script: its directory is on sys.path)

import fictionworld as fw
from fictionworld.spec import WorldSpec, default_spec
from fictionworld.tasks.generate import generate_tasks

MiB = 2**20
TARGET_SPEEDUP, TARGET_OVERHEAD_MS, RESET_EVERY = 1.8, 1.0, 50


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def world_dir(n: int, given: str | None, cache: str) -> Path:
    if given:
        return Path(given)
    d = Path(cache) / f"{n}-s1"
    try:
        m = json.loads((d / "manifest.json").read_text())
        if m["seed"] == 1 and WorldSpec.model_validate(m["spec"]) == default_spec(n) and (d / "web.json").exists():
            log(f"reusing the {n:,}-entity world in {d}")
            return d
    except (OSError, ValueError, KeyError):
        pass
    log(f"generating a {n:,}-entity world (seed 1) into {d} …")
    t = time.perf_counter()
    fw.generate(seed=1, entities=n).save(d, overwrite=True)
    log(f"generated and saved in {time.perf_counter() - t:.0f} s")
    return d


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * q))]


def throughput(args, wdir: Path, rec: Record) -> None:
    from fictionworld.rollouts.pool import RolloutPool, init_ray, make_jobs

    world = fw.World.load(wdir)  # the driver needs the tasks only; the actors load their own copy
    tasks = generate_tasks(world, args.tasks, kind="mixed", seed=0)
    jobs = make_jobs(tasks, args.samples, seed=0)
    warm = make_jobs(tasks[:2], 2, seed=1)  # 4 episodes: 2 in flight per actor, so every actor warms up
    cfg = {"delay": args.delay} if args.agent == "oracle" else {}
    init_ray(num_cpus=2)
    rows, mem = {}, {}
    for n in (1, 2):
        log(f"pool of {n} worker(s): starting, warm-up {len(warm)} episodes …")
        with RolloutPool(wdir, agent=args.agent, agent_config=cfg, workers=n) as pool:
            loaded = pool.info()
            pool.run(warm)
            warmed = pool.info()
            log(f"pool of {n}: timing {len(jobs)} episodes …")
            t = time.perf_counter()
            recs = pool.run(jobs)
            rows[n] = (recs, time.perf_counter() - t)
            mem[n] = (loaded, warmed, pool.info())
    import ray

    ray.shutdown()
    size, driver = du(wdir), psutil.Process().memory_info().rss
    print(f"== throughput: {args.agent} agent, {len(world.entities):,}-entity world, {args.tasks} mixed tasks × "
          f"{args.samples} samples, delay {args.delay * 1e3:g} ms per tool call, {os.cpu_count()} CPUs ==")  # fmt: skip
    print(f"{'workers':>7} {'episodes':>9} {'seconds':>9} {'episodes/s':>11} {'turns/ep':>9} {'SR':>6}  status")
    setting = {"entities": len(world.entities), "agent": args.agent, "tasks": args.tasks, "samples": args.samples,
               "delay_s": args.delay}  # fmt: skip
    for n, (recs, s) in rows.items():
        sr = [r["scores"]["score"] for r in recs if r.get("scores")]
        statuses = Counter(r["status"] for r in recs)
        st = ", ".join(f"{k} {v}" for k, v in statuses.items())
        print(f"{n:>7} {len(recs):>9} {s:>9.2f} {len(recs) / s:>11.2f} "
              f"{statistics.mean(r['turns'] for r in recs):>9.1f} {statistics.mean(sr or [0]):>6.3f}  {st}")  # fmt: skip
        rec.figure("episodes", len(recs), "", **setting, workers=n)
        rec.figure("seconds", s, "s", **setting, workers=n)
        rec.figure("throughput", len(recs) / s, "episodes/s", **setting, workers=n)
        rec.figure("turns per episode", statistics.mean(r["turns"] for r in recs), "", **setting, workers=n)
        rec.figure("success rate", statistics.mean(sr or [0]), "", **setting, workers=n)
        for status, count in statuses.items():
            rec.figure("episodes by status", count, "", **setting, workers=n, status=status)
    ratio = (len(rows[2][0]) / rows[2][1]) / (len(rows[1][0]) / rows[1][1])
    verdict = "holds" if ratio >= TARGET_SPEEDUP else "MISSED"
    print(f"2 workers / 1 worker (episodes/s): {ratio:.2f}× (target ≥ {TARGET_SPEEDUP}×: {verdict})")
    rec.figure("speed-up", ratio, "×", **setting, workers=2, over=1)
    rec.ratio("episodes/s with 2 workers / with 1", len(rows[2][0]) / rows[2][1], len(rows[1][0]) / rows[1][1],
              at_least=TARGET_SPEEDUP, **setting,
              against="the same jobs on a 1-worker pool, one after the other in the same process, each pool warmed up")  # fmt: skip
    per = Counter(r["worker_pid"] for r in rows[2][0])
    print(f"episodes per actor (2 workers): {', '.join(f'pid {p}: {c}' for p, c in per.items())}")
    for i, c in enumerate(per.values()):
        rec.figure("episodes per actor", c, "", **setting, workers=2, actor=i)

    loaded, warmed, after = mem[2]
    print(f"\n== actor memory: 2-worker pool, world on disk {size / MiB:.1f} MiB ({wdir}) ==")
    print(f"driver RSS {driver / MiB:.0f} MiB (it loaded the world too, to draw the tasks)")
    print(
        f"{'actor pid':>10} {'loaded MiB':>11} {'warm MiB':>9} {'after MiB':>10} {'growth MiB':>11} {'per episode':>12}"
    )
    growth = []
    for a, b, c in zip(loaded, warmed, after):
        g, eps = c["rss"] - b["rss"], max(1, per[c["pid"]])
        growth.append((g, eps))
        print(f"{c['pid']:>10} {a['rss'] / MiB:>11.0f} {b['rss'] / MiB:>9.0f} {c['rss'] / MiB:>10.0f} "
              f"{g / MiB:>+11.1f} {g / eps / 2**10:>+8.1f} KiB")  # fmt: skip
    g, eps = max(growth)
    print(f"largest growth over the timed run ({eps} episodes on that actor): {g / MiB:+.1f} MiB = {g / size:.1%} of "
          f"the world on disk; a per-task copy would add ~{size / MiB:.0f} MiB per episode "
          f"(~{eps * size / 2**30:.2f} GiB on that actor)")  # fmt: skip
    rec.figure("world on disk", size / MiB, "MiB", **setting)
    rec.figure("driver RSS", driver / MiB, "MiB", **setting)
    for i, (a, b, c) in enumerate(zip(loaded, warmed, after)):
        for when, m in (("loaded", a), ("warm", b), ("after", c)):
            rec.figure("actor RSS", m["rss"] / MiB, "MiB", **setting, workers=2, actor=i, when=when)
        rec.figure("actor growth", growth[i][0] / MiB, "MiB", **setting, workers=2, actor=i)
        rec.figure(
            "actor growth per episode", growth[i][0] / growth[i][1] / 2**10, "KiB", **setting, workers=2, actor=i
        )
    rec.figure("largest actor growth", g / MiB, "MiB", **setting, workers=2)
    rec.ratio("largest actor growth / world on disk", g, size, **setting, workers=2,
              against="the world's size on disk (what a per-task copy would add per episode)")  # fmt: skip


def steps(args, wdir: Path, rec: Record) -> None:
    from fictionworld.env import EnvConfig, SearchEnv

    log(f"loading {wdir} for env steps …")
    world = fw.World.load(wdir)
    web = world.web
    task = generate_tasks(world, 1, kind="mixed", seed=0)[0]
    rng, ids, n = random.Random(0), world.entities.ids, args.steps
    words = ["", "", "born", "founded", "population", "author", "released", "headquarters"]
    rows = rng.sample(range(len(ids)), 2 * n + 50)
    queries = [f"{world.entity(ids[r]).name} {rng.choice(words)}".strip() for r in rows]
    urls = [web.article_url_of(ids[r]) for r in rows]
    warm = web.session(web.knobs, 0)
    for q, u in zip(queries[2 * n :], urls[2 * n :]):  # builds the linker, touches the index
        warm.search(q)
        warm.open(u)
    env = SearchEnv(web, EnvConfig(max_turns=10**6, max_context_chars=10**12))
    actions = []
    for i in range(n):  # the env gets the first n queries and URLs, the bare tool the next n (no shared caches)
        actions += [("search", {"name": "search", "arguments": {"query": queries[i]}}),
                    ("open", {"name": "open", "arguments": {"url": urls[i]}})]  # fmt: skip
        if i % 5 == 4:
            actions.append(("malformed", {"name": "bogus", "arguments": {}}))
    log(f"timing {len(actions)} env steps …")
    timed = {k: ([], []) for k in ("search", "open", "malformed")}  # kind -> (wall, web) seconds
    for j, (kind, a) in enumerate(actions):
        if j % RESET_EVERY == 0:
            env.reset(task, seed=j)
        t = time.perf_counter()
        env.step(a)
        timed[kind][0].append(time.perf_counter() - t)
        timed[kind][1].append(env.steps[-1].seconds)
    log(f"timing {2 * n} bare tool calls …")
    bare = {"search": [], "open": []}
    for i in range(n):
        if i % (RESET_EVERY // 2) == 0:  # about as often as the env resets
            sess = web.session(web.knobs, i)
        for kind, fn, x in (("search", sess.search, queries[n + i]), ("open", sess.open, urls[n + i])):
            t = time.perf_counter()
            fn(x)
            bare[kind].append(time.perf_counter() - t)

    ms = lambda xs: f"{1e3 * pct(xs, 0.5):>7.3f} {1e3 * statistics.mean(xs):>7.3f} {1e3 * pct(xs, 0.99):>7.3f}"
    print(f"\n== env overhead per step: {len(world.entities):,} entities, {len(web.pages):,} pages, one core ==")
    print(f"overhead = env.step wall time − web time of that call (StepRecord.seconds); env reset every "
          f"{RESET_EVERY} steps so the message list stays episode-sized; bare = web.session(knobs, seed).search/open")  # fmt: skip
    print(f"{'':10} {'n':>5} | {'step ms: p50':>12} {'mean':>7} {'p99':>7} | {'overhead: p50':>13} {'mean':>7} "
          f"{'p99':>7} | {'web':>5} | {'bare: p50':>9} {'mean':>7} {'p99':>7} | {'env/bare':>8}")  # fmt: skip
    worst = 0.0
    at = {"entities": len(world.entities), "pages": len(web.pages)}
    stats = lambda xs: {
        "p50_ms": 1e3 * pct(xs, 0.5),
        "mean_ms": 1e3 * statistics.mean(xs),
        "p99_ms": 1e3 * pct(xs, 0.99),
    }
    for kind, (wall, webs) in timed.items():
        over = [w - s for w, s in zip(wall, webs)]
        worst = max(worst, statistics.mean(over))
        b = bare.get(kind)
        tail = f"{ms(b):>25} | {statistics.mean(wall) / statistics.mean(b):>7.3f}×" if b else f"{'—':>25} | {'—':>8}"
        print(f"{kind:10} {len(wall):>5} | {ms(wall):>28} | {ms(over):>29} | {sum(webs) / sum(wall):>5.1%} | {tail}")
        rec.figure("steps", len(wall), "", **at, kind=kind)
        rec.stats("env step", stats(wall), **at, kind=kind)
        rec.stats("env overhead", stats(over), **at, kind=kind)
        rec.figure("web share of the step", 100 * sum(webs) / sum(wall), "%", **at, kind=kind)
        if b:
            rec.stats("bare tool call", stats(b), **at, kind=kind)
            rec.ratio("env step / bare tool call, mean", statistics.mean(wall), statistics.mean(b), **at, kind=kind,
                      against="the bare web tool (web.session(knobs, seed)), other queries of the same kind, one core")  # fmt: skip
    verdict = "holds" if worst * 1e3 <= TARGET_OVERHEAD_MS else "MISSED"
    print(f"largest mean env overhead {worst * 1e3:.3f} ms per step (target ≤ {TARGET_OVERHEAD_MS:g} ms: {verdict})")
    rec.figure("largest mean env overhead", worst * 1e3, "ms", **at)
    rec.note(f"env overhead: largest mean {worst * 1e3:.3f} ms per step, target ≤ {TARGET_OVERHEAD_MS:g} ms: "
             f"{verdict.lower()}")  # fmt: skip
    print("malformed = an unknown tool name: no web call, so its whole step time is env overhead")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entities", type=int, default=20_000, help="entities of the throughput world")
    ap.add_argument("--step-entities", type=int, default=100_000, help="entities of the env-step world")
    ap.add_argument("--tasks", type=int, default=40)
    ap.add_argument("--samples", type=int, default=4)
    ap.add_argument("--delay", type=float, default=0.0, help="seconds the oracle sleeps per tool call")
    ap.add_argument("--agent", choices=["oracle", "baseline"], default="oracle")
    ap.add_argument("--steps", type=int, default=1000, help="search and open calls timed each, env and bare")
    ap.add_argument("--skip-steps", action="store_true", help="skip the env-step part (and its 100k world)")
    ap.add_argument("--rollout-world", help="a saved world for the throughput part (instead of --entities)")
    ap.add_argument("--world", help="a saved world for the env-step part (instead of --step-entities)")
    ap.add_argument("--cache", default="worlds/bench", help="where generated worlds are kept")
    ap.add_argument(
        "--adapters",
        action="store_true",
        help="also time the verl and TRL adapters per tool call (needs the [verl] and [trl] extras)",
    )
    ap.add_argument("--skip-throughput", action="store_true", help="skip the Ray pool part")
    add_options(ap)
    args = ap.parse_args()
    if args.delay and args.agent != "oracle":
        ap.error("--delay is an oracle option")
    with Record("rollout", args) as rec:
        if not args.skip_throughput:
            throughput(args, world_dir(args.entities, args.rollout_world, args.cache), rec)
        if not args.skip_steps or args.adapters:
            try:
                os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
            except (AttributeError, OSError):
                pass
        if not args.skip_steps:
            steps(args, world_dir(args.step_entities, args.world, args.cache), rec)
        if args.adapters:
            adapters(args, world_dir(args.step_entities, args.world, args.cache), rec)


def adapters(args, wdir: Path, rec: Record) -> None:
    """Trainer adapter overhead per tool call (benchmarks/adapter_overhead.py)."""
    import adapter_overhead

    from fictionworld.env.trainer import shared_world

    log(f"loading {wdir} for the adapters …")
    world = shared_world(wdir)  # the instance the adapters open too
    task = generate_tasks(world, 1, kind="mixed", seed=0)[0]
    log(f"timing {args.steps} calls through each of {', '.join(adapter_overhead.PATHS)} …")
    times = adapter_overhead.measure(world, wdir, task, calls=args.steps, reset_every=RESET_EVERY)
    adapter_overhead.report(times, entities=len(world.entities), pages=len(world.web.pages), rec=rec)


if __name__ == "__main__":
    main()
