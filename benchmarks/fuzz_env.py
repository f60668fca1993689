"""Fuzzing the env: nasty actions, drawn from a seed, through ``SearchEnv.step`` (and so
``parse_action``, the tool dispatch, ``Web.search``/``Web.open`` and the strict scorer).

    python benchmarks/fuzz_env.py [--cases 100000] [--seed 0] [--entities 300]

Actions (``fictionworld.testing.env_fuzz.NastyActions``): dicts with a wrong type in every
field, content parts whose text is not a string, tool calls whose arguments are not JSON or
JSON of the wrong type, huge strings, lone surrogates, NUL bytes, bad URLs (``https://[::1``,
``http://``, ``://x``, ``javascript:``, very long), text tags and ``<tool_call>`` blocks with
broken JSON, unknown tools, answers that are huge Markdown tables, replies that only think
(calls and answers inside ``<think>`` blocks), arguments named by something other than a string,
steps after the episode ended, and well-formed calls among them. They go to three envs (all
tools with text tags; basic tools with 20 % injected faults and a 500-character observation
cap; the AgentWorld tools with a mixed reward) over a small world built once; an episode
starts when the last one ends. Each step must not raise, must give a reward in [0, 1] and
observations with string content, an ``Error: …`` observation for an action that is bad by construction and for every
call that failed to parse, and records (messages, steps, answer) writable as UTF-8 JSON.
The same seed gives the same cases and the same results digest. Exits 1 on any problem.
"""

from __future__ import annotations

import argparse
import sys
import time

from record import Record, add_options  # (beside this script: its directory is on sys.path)
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

import fictionworld as fw
from fictionworld.tasks.generate import generate_tasks
from fictionworld.testing.env_fuzz import FuzzReport, run_fuzz


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=100_000, help="actions to step (default 100,000)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the actions and episodes")
    ap.add_argument("--entities", type=int, default=300, help="size of the world (seed 5)")
    ap.add_argument("--tasks", type=int, default=6, help="mixed tasks the episodes cycle through")
    add_options(ap)
    args = ap.parse_args()
    with Record("fuzz_env", args) as rec:
        ok = run(args, rec)
    sys.exit(0 if ok else 1)


def run(args: argparse.Namespace, rec: Record) -> bool:
    """The world, the fuzzing, its summary printed and recorded; whether every promise held."""
    t = time.perf_counter()
    world = fw.generate(seed=5, entities=args.entities)
    tasks = generate_tasks(world, args.tasks, kind="mixed", seed=1)
    pages = len(world.web.pages)
    print(f"world: {args.entities:,} entities, {pages:,} pages, {len(tasks)} tasks ({time.perf_counter() - t:.1f} s)")
    at = {"cases": args.cases, "seed": args.seed, "entities": args.entities, "tasks": args.tasks}
    rec.figure("world and tasks made", time.perf_counter() - t, "s", **at)
    rec.figure("pages", pages, "", **at)

    columns = (TextColumn("fuzzing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns, transient=True) as bar:
        task = bar.add_task("cases", total=args.cases)
        t = time.perf_counter()
        report = run_fuzz(args.cases, args.seed, world, tasks, progress=lambda n: bar.advance(task, n))
        seconds = time.perf_counter() - t
    summarize(report, seconds, args.seed)
    record(rec, report, seconds, at)
    return report.ok


def record(rec: Record, r: FuzzReport, seconds: float, at: dict) -> None:
    """The counts of the summary as figures (labelled ``at``), its digest and verdict as notes."""
    for name, count in (("cases stepped", r.cases), ("bad by construction", r.bad), ("after the end", r.steps_after_end),
                        ("episodes", r.episodes), ("episodes ended with a reward above 0", r.positive),
                        ("exceptions", r.exceptions), ("rewards outside [0, 1]", r.out_of_range)):  # fmt: skip
        rec.figure(name, count, "", **at)
    for name, counter in (("episodes ended by", r.ends), ("cases of a family", r.kinds),
                          ("first observations", r.outcomes), ("broken promises", r.problems)):  # fmt: skip
        for key, count in sorted(counter.items()):
            rec.figure(name, count, "", **at, of=str(key))
    rec.figure("slowest case", r.slowest[0] * 1000, "ms", **at)
    rec.figure("time", seconds, "s", **at)
    rec.figure("rate", r.cases / seconds, "1/s", **at, what="cases per s")
    rec.note(f"slowest case: {r.slowest[1]}; results digest: {r.digest}; {'OK' if r.ok else 'FAILED'}")


def summarize(r: FuzzReport, seconds: float, seed: int) -> None:
    print(f"\ncases: {r.cases:,} (seed {seed}): {r.bad:,} bad by construction, {r.steps_after_end:,} after the end")
    print(f"episodes: {r.episodes:,}; ended by " + ", ".join(f"{k} {v:,}" for k, v in r.ends.most_common()))
    print(f"episodes ended with a reward above 0: {r.positive:,}")
    print("families: " + ", ".join(f"{k} {v:,}" for k, v in r.kinds.most_common()))
    print("first observations: " + ", ".join(f"{k} {v:,}" for k, v in r.outcomes.most_common()))
    print(f"exceptions: {r.exceptions}")
    print(f"rewards outside [0, 1]: {r.out_of_range}")
    other = {k: v for k, v in r.problems.items() if not k.startswith(("exception", "reward"))}
    print(f"other broken promises: {sum(other.values())}" + "".join(f"\n  {v:,} × {k}" for k, v in other.items()))
    for example in r.examples:
        print("  " + example.replace("\n", "\n  "))
    print(f"slowest case: {r.slowest[0] * 1000:.0f} ms ({r.slowest[1]})")
    print(f"results digest: {r.digest}")
    print(f"time: {seconds:.1f} s, {r.cases / seconds:,.0f} cases/s")
    print("OK" if r.ok else "FAILED")


if __name__ == "__main__":
    main()
