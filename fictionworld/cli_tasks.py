"""``fictionworld tasks`` and ``fictionworld score`` (registered on the main app)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from fictionworld.cli import _fail, _load, app, err, out


@app.command()
def tasks(
    path: Annotated[Path, typer.Argument(help="World directory.")],
    n: Annotated[int, typer.Option("--n", help="Number of tasks.")] = 20,
    kind: Annotated[str, typer.Option(help="wide, deep or mixed.")] = "wide",
    seed: Annotated[int, typer.Option(help="Task seed (independent of the world's).")] = 0,
    rows_min: Annotated[int, typer.Option(help="Fewest gold rows of a wide task.")] = 3,
    rows_max: Annotated[int, typer.Option(help="Most gold rows of a wide task.")] = 30,
    columns: Annotated[int, typer.Option(help="Columns of a wide task, key included.")] = 4,
    hops: Annotated[int, typer.Option(help="Longest relation path in a column or clue.")] = 2,
    selectivity: Annotated[float, typer.Option(help="Share of the discoverable group a wide task keeps.")] = 1.0,
    clues: Annotated[int, typer.Option(help="Most clues of a deep task.")] = 5,
    out_path: Annotated[Path, typer.Option("--out", help="Tasks file (JSON Lines).")] = Path("tasks.jsonl"),
    widesearch: Annotated[
        Path | None, typer.Option(help="Also write the official layout (widesearch.jsonl + widesearch_gold/) here.")
    ] = None,
) -> None:
    """Generate WideSearch-style tasks (gold tables from the graph) from a saved world."""
    from fictionworld.scoring.io import export_widesearch
    from fictionworld.tasks.generate import TaskGenerationError, generate_tasks
    from fictionworld.tasks.model import write_tasks
    from fictionworld.tasks.wide import TaskKnobs

    if kind not in ("wide", "deep", "mixed"):
        _fail(f"--kind must be wide, deep or mixed, not {kind!r}")
    try:
        knobs = TaskKnobs(
            rows_min=rows_min, rows_max=rows_max, columns=columns, hops=hops, selectivity=selectivity, clues=clues
        )
    except Exception as exc:
        _fail(f"bad task knobs: {' '.join(str(exc).split())[:300]}")
    world = _load(path)
    with Progress(
        TextColumn("tasks"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err, transient=True
    ) as progress:
        bar = progress.add_task("tasks", total=n)
        try:
            made = generate_tasks(
                world, n, kind=kind, seed=seed, knobs=knobs, progress=lambda k: progress.update(bar, completed=k)
            )
        except TaskGenerationError as exc:
            _fail(str(exc), 1)
    write_tasks(made, out_path)
    if widesearch is not None:
        export_widesearch(made, widesearch)
    rows = [len(t.gold.rows) for t in made]
    out.print(
        f"{len(made)} {kind} tasks → {out_path} (gold rows {min(rows)}–{max(rows)}, mean {sum(rows) / len(rows):.1f})",
        highlight=False,
    )


@app.command()
def score(
    tasks_path: Annotated[Path, typer.Option("--tasks", help="tasks.jsonl or an official widesearch.jsonl.")],
    responses: Annotated[Path, typer.Option(help="Responses JSONL, or a directory of official response files.")],
    gold_dir: Annotated[
        Path | None, typer.Option(help="Official gold CSVs (default: widesearch_gold/ beside).")
    ] = None,
    mode: Annotated[str, typer.Option(help="strict (default, the RL reward) or compat (official numbers).")] = "strict",
    trials: Annotated[int, typer.Option(help="Trials per task (N of avg@N / pass@N / max@N).")] = 1,
    judge_base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible judge endpoint (compat).")] = None,
    judge_model: Annotated[str, typer.Option(help="Judge model name.")] = "gpt-4.1",
    today: Annotated[str | None, typer.Option(help="Date compat's date parsing is relative to (YYYY-MM-DD).")] = None,
    out_path: Annotated[Path, typer.Option("--out", help="Per-task results (JSON Lines).")] = Path("scores.jsonl"),
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Score responses with WideSearch's metrics; prints SR / Row F1 / Item F1 (avg@N, pass@N / max@N)."""
    import datetime as dt

    from fictionworld.scoring import aggregate
    from fictionworld.scoring import score as score_one
    from fictionworld.scoring.io import ResponseError, load_responses, load_tasks
    from fictionworld.tasks.model import TaskError

    if mode not in ("strict", "compat"):
        _fail(f"--mode must be strict or compat, not {mode!r}")
    if trials < 1:
        _fail("--trials must be at least 1")
    ref = None
    if today:
        try:
            ref = dt.date.fromisoformat(today)
        except ValueError:
            _fail(f"--today {today!r} is not YYYY-MM-DD")
    try:
        task_list, skipped = load_tasks(tasks_path, gold_dir)
        found = load_responses(responses, [t.instance_id for t in task_list])
    except (TaskError, ResponseError) as exc:
        _fail(str(exc))
    for s in skipped:
        err.print(f"skipped {s}", highlight=False)
    judge = None
    if judge_base_url:
        from fictionworld.llm import ChatClient
        from fictionworld.scoring.judge import LLMJudge

        judge = LLMJudge(ChatClient(judge_base_url, judge_model, api_key=os.environ.get("FICTIONWORLD_JUDGE_API_KEY")))
    per_task, records = {}, []
    with Progress(
        TextColumn("scoring"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err, transient=True
    ) as progress:
        bar = progress.add_task("scoring", total=len(task_list) * trials)
        for t in task_list:
            runs = []
            for trial in range(trials):
                resp = found.get(t.instance_id, {}).get(trial)
                if resp is None:
                    runs.append(None)
                else:
                    s = score_one(resp, t, mode=mode, judge=judge, today=ref).model_copy(update={"trial": trial})
                    runs.append(s)
                    records.append(s.model_dump())
                progress.advance(bar)
            per_task[t.instance_id] = runs
    summary = aggregate(per_task, trials)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    note = ""
    if mode == "compat":
        note = "judge: " + ("endpoint " + judge_base_url if judge else "deterministic fallback (no --judge-base-url)")
        note += f"; dates relative to {(ref or dt.date.today()).isoformat()}"
    if as_json:
        print(json.dumps({"mode": mode, "note": note, **summary.model_dump()}, indent=2))
        return
    table = Table(title=f"{summary.tasks} tasks × {trials} trial(s), {mode} mode")
    table.add_column("metric")
    table.add_column(f"avg@{trials}", justify="right")
    table.add_column(f"pass@{trials} / max@{trials}", justify="right")
    for name, avg, best in summary.table_rows():
        table.add_row(name, f"{avg:.4f}", f"{best:.4f}")
    out.print(table)
    if summary.missing:
        out.print(f"{summary.missing} (task, trial) pairs had no response and score 0", highlight=False)
    if note:
        out.print(note, highlight=False)
    out.print(f"per-task results → {out_path}", highlight=False)
