"""Scoring speed: responses scored per second for 20-row × 6-column tables with every metric
kind (exact_match key, number_near, date_near, url_match, llm_judge, exact_match), strict mode
next to compat mode (the official semantics on pandas) in the same process, on one core.

    python benchmarks/bench_score.py [--responses 2000] [--wide 20] [--world 20000] [--sweep 10 50 200 500]

Responses vary: perfect, wrong cells, surface forms (bold, "1.2 thousand", "March 14, 1987",
bare domains), shuffled rows and columns, extra and near-duplicate rows, unparseable text.
Also times the scorer's cost per response against the table's size (``--sweep``: gold rows,
6 columns; strict cold and warm, and compat) and task generation on a 20k-entity world.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import statistics
import time

from record import Record, add_options  # (beside this script: its directory is on sys.path)

from fictionworld.scoring import score
from fictionworld.surface import format_date, format_int
from fictionworld.tasks.model import ColumnEval, Evaluation, GoldTable, Task

COLUMNS = ["company", "employees", "founded", "website", "industry", "headquarters"]
PIPELINE = {
    "company": ColumnEval(preprocess=["norm_str"], metric=["exact_match"]),
    "employees": ColumnEval(preprocess=["extract_number"], metric=["number_near"], criterion=0.01),
    "founded": ColumnEval(preprocess=["norm_date"], metric=["date_near"]),
    "website": ColumnEval(metric=["url_match"]),
    "industry": ColumnEval(metric=["llm_judge"], criterion="same industry"),
    "headquarters": ColumnEval(preprocess=["norm_str"], metric=["exact_match"]),
}
INDUSTRIES = ["robotics", "banking", "textiles", "media", "mining", "retail"]


def company_row(r: random.Random, i: int) -> list[str]:
    d = dt.date(1900, 1, 1) + dt.timedelta(days=r.randrange(40_000))
    return [
        f"Company {i} {r.choice('ABCDEFG')}orp",
        str(r.randrange(10, 500_000)),
        d.isoformat(),
        f"https://www.c{i}.example",
        r.choice(INDUSTRIES),
        f"City {r.randrange(50)}",
    ]


def make_task(r: random.Random, n: int = 20) -> Task:
    """A task of ``n`` gold rows × 6 columns."""
    rows = [company_row(r, i) for i in range(n)]
    ev = Evaluation(unique_columns=["company"], required=COLUMNS, eval_pipeline=PIPELINE)
    aliases = {"company": [[row[0].replace("orp", "orporation")] for row in rows]}
    return Task(
        instance_id="bench", query="", evaluation=ev, gold=GoldTable(columns=COLUMNS, rows=rows), aliases=aliases
    )


def make_response(task: Task, r: random.Random) -> str:
    kind = r.randrange(6)
    if kind == 5:
        return "I could not find a complete list; here is what I know: " + task.gold.rows[0][0]
    rows = [list(x) for x in task.gold.rows]
    if kind >= 1:  # surface forms
        for row in rows:
            row[1] = format_int(int(row[1]), r.randrange(3))
            row[2] = format_date(dt.date.fromisoformat(row[2]), r.randrange(4))
            row[3] = row[3].replace("https://www.", "") if r.random() < 0.5 else row[3]
            row[0] = f"**{row[0]}**" if r.random() < 0.2 else row[0]
    if kind >= 2:  # mistakes
        for row in rows:
            if r.random() < 0.2:
                row[r.randrange(1, 6)] = "unknown"
    if kind >= 3:  # shuffled rows and columns, an extra and a near-duplicate row
        r.shuffle(rows)
        rows.append(["Nobody Ltd", "3", "2000-01-01", "https://x.example", "media", "City 1"])
        rows.append([rows[0][0].upper(), *rows[0][1:]])
    order = list(range(6))
    if kind == 4:
        r.shuffle(order)
    head = [["Company", "Employees", "Founded", "Website", "Industry", "Headquarters"][i] for i in order]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 6]
    lines += ["| " + " | ".join(row[i] for i in order) + " |" for row in rows]
    return "Here is the table.\n```markdown\n" + "\n".join(lines) + "\n```"


def _clear_caches(task, keep_task: bool = False) -> None:
    from fictionworld.scoring import cells, metrics

    for f in (
        metrics.clean_cell,
        metrics.strict_norm,
        metrics.strict_hosts,
        cells.read_numbers,
        cells.read_date,
        cells.fold_name,
        cells.name_readings,
        cells._category_words,
    ):
        f.cache_clear()
    if not keep_task:
        task._cache.clear()


WIDE_COLUMNS = [*COLUMNS, "ceo", "revenue"]
WIDE_PIPELINE = {
    **PIPELINE,
    "ceo": ColumnEval(metric=["llm_judge"], criterion="same person"),
    "revenue": ColumnEval(preprocess=["extract_number"], metric=["number_near"], criterion=0.01),
}


def make_wide_task(r: random.Random, n: int = 500) -> Task:
    """A WideSearch-size task: ``n`` rows × 8 columns, names with aliases from a 'graph'."""
    rows = [
        [*company_row(r, i), f"Person {r.randrange(10_000)} Surname", str(r.randrange(10**6, 10**9))] for i in range(n)
    ]
    ev = Evaluation(unique_columns=["company"], required=WIDE_COLUMNS, eval_pipeline=WIDE_PIPELINE)
    aliases = {"company": [[row[0].replace("orp", "orporation")] for row in rows], "ceo": [[] for _ in rows]}
    return Task(
        instance_id="wide", query="", evaluation=ev, gold=GoldTable(columns=WIDE_COLUMNS, rows=rows), aliases=aliases
    )


def wide_response(task: Task, r: random.Random, junk: int = 0) -> str:
    """The gold table in surface forms (some cells wrong), shuffled, plus ``junk`` wrong rows."""
    rows = [list(x) for x in task.gold.rows]
    for row in rows:
        row[1] = format_int(int(row[1]), r.randrange(3))
        row[2] = format_date(dt.date.fromisoformat(row[2]), r.randrange(4))
        row[0] = f"**{row[0]}**" if r.random() < 0.2 else row[0]
        if r.random() < 0.1:
            row[r.randrange(1, 8)] = "unknown"
    rows += [[f"Junk {i}", str(i), "2000-01-01", "x.example", "media", "City", "Nobody", "1"] for i in range(junk)]
    r.shuffle(rows)
    head = ["Company", "Employees", "Founded", "Website", "Industry", "Headquarters", "CEO", "Revenue"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 8] + ["| " + " | ".join(x) + " |" for x in rows]
    return "\n".join(lines)


def time_wide(r: random.Random, reps: int, rec: Record) -> None:
    """Strict scoring of 500 × 8 tables, cold (every cache cleared) and warm, next to compat."""
    task = make_wide_task(r)
    responses = [wide_response(task, r) for _ in range(reps)]
    junk = wide_response(task, r, junk=1500)
    head = (
        "| Company | Employees | Founded | Website | Industry | Headquarters | CEO | Revenue |\n" + "|---" * 8 + "|\n"
    )
    huge = head + "".join(
        f"| Junk {i} | 1 | 2000-01-01 | x.example | media | City | Nobody | {i} |\n" for i in range(1990)
    )
    huge += "x" * (999_000 - len(huge))  # just under the 1,000,000-character cap, 1,990 junk rows
    cell = " _a" * 300 + "<a href=x>" * 50 + "[" * 200  # unclosed markup: quadratic for unbounded patterns
    markup = head + "".join(f"| Junk {i} | {cell} | {cell} | | | | | |\n" for i in range(300))
    print(f"\n500 × 8 tables (WideSearch size), one core, {reps} responses")
    print(f"{'case':<36} {'mean ms':>9} {'p50 ms':>9} {'max ms':>9}")
    cases = {
        "strict cold (every cache cleared)": (responses, "strict", True, False),
        "strict, task prepared, new cells": (responses, "strict", True, True),
        "strict warm (cells seen before)": (responses, "strict", False, False),
        "strict, + 1,500 junk rows, cold": ([junk], "strict", True, False),
        f"strict, {len(huge) / 1e6:.2f} MB answer, cold": ([huge], "strict", True, False),
        f"strict, {len(markup) / 1e6:.2f} MB unclosed markup": ([markup], "strict", True, False),
        "compat (official semantics)": (responses[: max(2, reps // 4)], "compat", False, False),
    }
    means = {}
    for name, (resps, mode, cold, keep) in cases.items():
        ts = time_mode([(task, x) for x in resps], mode, cold=cold, keep_task=keep)
        means[name] = statistics.mean(ts)
        p50 = sorted(ts)[len(ts) // 2]
        print(f"{name:<36} {1e3 * means[name]:>9.2f} {1e3 * p50:>9.2f} {1e3 * max(ts):>9.2f}")
        for stat, v in (("mean", means[name]), ("p50", p50), ("max", max(ts))):
            rec.figure("wide per response", 1e3 * v, "ms", rows=500, columns=8, case=name, stat=stat)
        rec.figure("wide per response", len(ts), "", rows=500, columns=8, case=name, stat="n")
    first = next(iter(means.values()))
    print(f"compat / strict cold (mean): {means['compat (official semantics)'] / first:.1f}×")
    rec.ratio("compat / strict cold, mean per response", means["compat (official semantics)"], first, rows=500,
              columns=8, against="strict scoring with every cache cleared, the same tables, in the same process")  # fmt: skip


def sweep(r: random.Random, sizes: list[int], n: int, rec: Record) -> None:
    """Scorer cost vs table size: ``n`` responses to a task of each size in ``sizes`` (gold rows,
    6 columns), strict with every cache cleared, strict on the same responses again, and
    compat on a quarter of them (at least one)."""
    print(f"\nscorer cost vs table size: 6 columns, every metric kind, one core, {n} responses per size "
          f"(compat: {max(1, n // 4)})")  # fmt: skip
    print(f"{'rows':>6} {'strict cold ms':>15} {'strict warm ms':>15} {'compat ms':>10}  (mean per response)")
    for rows in sizes:
        task = make_task(r, rows)
        pairs = [(task, make_response(task, r)) for _ in range(n)]
        got = {"strict cold": time_mode(pairs, "strict", cold=True), "strict warm": time_mode(pairs, "strict"),
               "compat": time_mode(pairs[: max(1, n // 4)], "compat")}  # fmt: skip
        for mode, ts in got.items():
            rec.figure("cost per response", 1e3 * statistics.mean(ts), "ms", rows=rows, columns=6, mode=mode,
                       stat="mean")  # fmt: skip
            rec.figure("responses", len(ts), "", rows=rows, columns=6, mode=mode)
        print(f"{rows:>6} " + " ".join(f"{1e3 * statistics.mean(ts):>15.3f}" for ts in got.values()))


def time_mode(pairs, mode: str, cold: bool = False, keep_task: bool = False) -> list[float]:
    times = []
    options = {"today": dt.date(2026, 11, 21)} if mode == "compat" else {}  # (the strict scorer reads no date)
    for task, resp in pairs:
        if cold:
            _clear_caches(task, keep_task)
        t = time.perf_counter()
        score(resp, task, mode=mode, **options)
        times.append(time.perf_counter() - t)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--responses", type=int, default=2000)
    ap.add_argument("--wide", type=int, default=20, help="500 × 8 responses to time (0 skips)")
    ap.add_argument("--world", type=int, default=20_000, help="entities of the task-generation world (0 skips)")
    ap.add_argument("--sweep", type=int, nargs="*", default=[10, 50, 200, 500],
                    help="gold rows of the tables of the cost-vs-size sweep (none skips it)")  # fmt: skip
    ap.add_argument("--sweep-responses", type=int, default=8, help="responses per size in the sweep")
    add_options(ap)
    args = ap.parse_args()
    with Record("score", args) as rec:
        run(args, rec)


def run(args: argparse.Namespace, rec: Record) -> None:
    try:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    except (AttributeError, OSError):
        pass
    r = random.Random(0)
    tasks = [make_task(r) for _ in range(50)]
    pairs = [(tasks[i % 50], make_response(tasks[i % 50], r)) for i in range(args.responses)]
    time_mode(pairs[:50], "strict")  # warm imports
    time_mode(pairs[:20], "compat")
    strict = time_mode(pairs, "strict")
    cold = time_mode(pairs, "strict", cold=True)
    compat = time_mode(pairs[: max(200, args.responses // 5)], "compat")

    def row(name, ts):
        ts = sorted(ts)
        p50, p99 = ts[len(ts) // 2], ts[int(len(ts) * 0.99)]
        print(
            f"{name:<8} {len(ts):>6} {1e3 * statistics.mean(ts):>9.3f} {1e3 * p50:>9.3f} {1e3 * p99:>9.3f} {len(ts) / sum(ts):>10.0f}"
        )
        rec.stats("per response", {"n": len(ts), "mean_ms": 1e3 * statistics.mean(ts), "p50_ms": 1e3 * p50,
                                   "p99_ms": 1e3 * p99, "tables_per_s": len(ts) / sum(ts)}, rows=20, columns=6, mode=name)  # fmt: skip

    print("20-row × 6-column tables, every metric kind, one core")
    print("strict: warm per-task and per-string caches (many rollouts of one task); cold: caches cleared")
    print(f"{'mode':<8} {'n':>6} {'mean ms':>9} {'p50 ms':>9} {'p99 ms':>9} {'tables/s':>10}")
    row("strict", strict)
    row("cold", cold)
    row("compat", compat)
    print(f"compat / strict (mean): {statistics.mean(compat) / statistics.mean(strict):.1f}×")
    rec.ratio("compat / strict, mean per response", statistics.mean(compat), statistics.mean(strict), rows=20,
              columns=6, against="strict scoring with warm caches, the same kinds of response, in the same process")  # fmt: skip
    if args.wide:
        time_wide(r, args.wide, rec)
    if args.sweep:
        sweep(r, args.sweep, args.sweep_responses, rec)
    if args.world:
        import fictionworld as fw
        from fictionworld.tasks.generate import generate_tasks

        world = fw.generate(seed=1, entities=args.world)
        for kind in ("wide", "deep"):
            t = time.perf_counter()
            made = generate_tasks(world, 100, kind=kind, seed=0)
            s = time.perf_counter() - t
            rows = statistics.mean(len(x.gold.rows) for x in made)
            print(
                f"task generation ({args.world:,} entities): 100 {kind} tasks in {s:.2f} s ({100 / s:.0f}/s), "
                f"mean gold rows {rows:.1f}"
            )
            rec.figure("task generation", s, "s", entities=args.world, kind=kind, tasks=100, stat="wall")
            rec.figure("task generation", 100 / s, "1/s", entities=args.world, kind=kind, tasks=100, stat="tasks/s")
            rec.figure("task generation", rows, "", entities=args.world, kind=kind, tasks=100, stat="mean gold rows")


if __name__ == "__main__":
    main()
