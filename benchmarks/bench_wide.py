"""Wide tasks at every preset: is each one fair to an agent that knows nothing, and what does it cost?

For each preset and task seed it generates tasks on a world big enough for the preset
(``WORLD_ENTITIES``), runs the explorer (only the question and the tools) and the oracle
(told each gold cell's provenance) on every task in process, and prints per (preset, seed):
the set's shape (rows, columns, mean cells vs WideSearch's 938.6), the explorer's row recall,
success rate and tool calls, and the ratio of its tool calls to the oracle's on the same tasks
(what finding the rows oneself costs over being told them).

    python benchmarks/bench_wide.py                      # all presets, seeds 1-3, 12 wide + 4 deep each
    python benchmarks/bench_wide.py --presets widesearch --tasks 20 --seeds 1 2 3 --json out.json

Worlds are generated in memory (seed 1, the default spec). Exit 1 if the explorer misses a row.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
from record import Record, add_options  # (beside this script: its directory is on sys.path)

import fictionworld as fw
from fictionworld.env import EnvConfig, SearchEnv
from fictionworld.rollouts.agents.explorer import explore
from fictionworld.rollouts.agents.oracle import OracleAgent
from fictionworld.rollouts.episode import run_episode
from fictionworld.tasks.generate import generate_tasks
from fictionworld.tasks.presets import PRESETS, WORLD_ENTITIES
from fictionworld.tasks.stats import AnswerPages, task_stats


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def oracle_calls(world, tasks) -> list[int]:
    agent = OracleAgent(world=world)
    env = SearchEnv(world.web, EnvConfig(**agent.env_defaults))
    out = []
    for t in tasks:
        ep = run_episode(env, agent, t, seed=0)
        if not (env.scores and env.scores.success):
            raise SystemExit(f"the oracle failed {t.instance_id}: a bug in the world, pages or tasks")
        out.append(len(ep.steps))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--presets", nargs="+", default=list(PRESETS), choices=list(PRESETS))
    ap.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    ap.add_argument("--tasks", type=int, default=12, help="wide tasks per (preset, seed)")
    ap.add_argument("--deep", type=int, default=4, help="deep tasks per (preset, seed)")
    ap.add_argument("--json", default=None, help="also write the rows here")
    add_options(ap)
    args = ap.parse_args()
    with Record("wide", args) as rec:
        missed = run(args, rec)
    return 1 if missed else 0


def run(args: argparse.Namespace, rec: Record) -> int:
    """Every (preset, seed): its row printed and recorded; the explorer's runs that missed a row."""
    worlds: dict[int, fw.World] = {}
    rows, missed = [], 0
    head = (f"{'preset':<11}{'seed':>5}{'tasks':>6}{'rows (mean/max)':>17}{'cols':>6}{'cells':>8}"
            f"{'recall':>8}{'SR':>6}{'calls':>7}{'max':>7}{'x oracle':>9}{'1-page':>7}{'s':>7}")  # fmt: skip
    print(head)
    for preset in args.presets:
        n = WORLD_ENTITIES[preset]
        if n not in worlds:
            log(f"world: {n:,} entities")
            worlds[n] = fw.generate(seed=1, entities=n)
            _ = worlds[n].web
        world = worlds[n]
        pages = AnswerPages(world.web)
        for seed in args.seeds:
            t0 = time.perf_counter()
            tasks = generate_tasks(world, args.tasks, seed=seed, knobs=PRESETS[preset])
            tasks += (
                generate_tasks(world, args.deep, kind="deep", seed=seed, knobs=PRESETS[preset]) if args.deep else []
            )
            wide = [t for t in tasks if t.kind == "wide"]
            s = task_stats(wide)
            runs = explore(world, tasks)
            ocalls = oracle_calls(world, tasks)
            calls = [r["calls"] for r in runs]
            one_page = sum(1 for t in wide if pages.holding(t))
            recall = float(np.mean([r["row_recall"] for r in runs]))
            sr = float(np.mean([r["success"] for r in runs]))
            missed += sum(r["row_recall"] < 1.0 for r in runs)
            row = {
                "preset": preset, "seed": seed, "entities": n, "tasks": len(tasks), "families": s["families"],
                "rows_mean": s["rows"]["mean"], "rows_max": s["rows"]["max"], "columns_mean": s["columns"]["mean"],
                "cells_mean": s["cells"]["mean"], "explorer_row_recall": recall, "explorer_success": sr,
                "explorer_calls_mean": float(np.mean(calls)), "explorer_calls_max": int(max(calls)),
                "oracle_calls_mean": float(np.mean(ocalls)), "calls_ratio": float(np.sum(calls) / np.sum(ocalls)),
                "answered_by_one_page": one_page, "seconds": time.perf_counter() - t0,
            }  # fmt: skip
            rows.append(row)
            print(f"{preset:<11}{seed:>5}{len(tasks):>6}{row['rows_mean']:>11.1f}/{row['rows_max']:<5.0f}"
                  f"{row['columns_mean']:>6.1f}{row['cells_mean']:>8.0f}{recall:>8.3f}{sr:>6.2f}"
                  f"{row['explorer_calls_mean']:>7.0f}{row['explorer_calls_max']:>7}{row['calls_ratio']:>9.2f}"
                  f"{one_page:>7}{row['seconds']:>7.1f}", flush=True)  # fmt: skip
            at = {"preset": preset, "seed": seed, "entities": n, "wide_tasks": args.tasks, "deep_tasks": args.deep}
            for key, value in row.items():
                if key not in at and isinstance(value, int | float):
                    rec.figure(key, value, "s" if key == "seconds" else "", **at)
            for family, count in row["families"].items():
                rec.figure("tasks of a family", count, "", **at, family=family)
    print("WideSearch (published): 938.6 cells per English task, 2001.2 per Chinese task; 44+ pages, ~2.3 h by hand")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=2)
    rec.figure("explorer runs that missed a row", missed, "", presets=" ".join(args.presets),
               seeds=" ".join(map(str, args.seeds)), wide_tasks=args.tasks, deep_tasks=args.deep)  # fmt: skip
    return missed


if __name__ == "__main__":
    sys.exit(main())
