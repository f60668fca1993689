"""``fictionworld tasks`` and ``fictionworld score`` (registered on the main app)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from fictionworld.cli_common import MAX_TASKS, app, check_output, err, fail, http_url, load_world_dir, out, warn

MAX_TRIALS = 1_000  # trials per task that `score` reads


def _task_knobs(**values):
    """TaskKnobs from the command's options, or one ``error: --option: ...`` line per problem."""
    from pydantic import ValidationError

    from fictionworld.errors import problem_lines
    from fictionworld.tasks.wide import TaskKnobs

    try:
        return TaskKnobs(**values)
    except ValidationError as exc:
        fail("\n".join(problem_lines(exc, label=lambda field: "--" + field.replace("_", "-"))))


@app.command()
def tasks(
    path: Annotated[Path, typer.Argument(help="World directory.")],
    n: Annotated[int, typer.Option("--n", help=f"Number of tasks, 1 to {MAX_TASKS:,}.", min=1, max=MAX_TASKS)] = 20,
    kind: Annotated[str, typer.Option(help="wide, deep or mixed.")] = "wide",
    seed: Annotated[int, typer.Option(help="Task seed (>= 0, independent of the world's).", min=0)] = 0,
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

    if kind not in ("wide", "deep", "mixed"):
        fail(f"--kind must be wide, deep or mixed, not {kind!r}")
    knobs = _task_knobs(
        rows_min=rows_min, rows_max=rows_max, columns=columns, hops=hops, selectivity=selectivity, clues=clues
    )
    check_output(out_path)
    if widesearch is not None:
        check_output(widesearch, "--widesearch", directory=True)
    world = load_world_dir(path)
    with Progress(
        TextColumn("tasks"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err, transient=True
    ) as progress:
        bar = progress.add_task("tasks", total=n)
        try:
            made = generate_tasks(
                world, n, kind=kind, seed=seed, knobs=knobs, progress=lambda k: progress.update(bar, completed=k)
            )
        except TaskGenerationError as exc:
            fail(str(exc), 1)
    if not made:  # generate_tasks makes n >= 1 tasks or raises; never write an empty file
        fail("no tasks were made", 1)
    write_tasks(made, out_path)
    if widesearch is not None:
        export_widesearch(made, widesearch)
    rows = [len(t.gold.rows) for t in made]
    out.print(
        f"{len(made)} {kind} tasks → {out_path} (gold rows {min(rows)}–{max(rows)}, mean {sum(rows) / len(rows):.1f})",
        highlight=False,
    )


def _some(ids, limit: int = 5) -> str:
    ids = list(ids)
    return ", ".join(map(str, ids[:limit])) + (f", … ({len(ids)} in all)" if len(ids) > limit else "")


def _check_score_paths(tasks_path: Path, responses: Path, gold_dir: Path | None, out_path: Path) -> None:
    if not tasks_path.is_file():
        what = "is a directory; give the tasks file" if tasks_path.is_dir() else "no such file"
        fail(f"--tasks {tasks_path}: {what}")
    if not responses.exists():
        fail(f"--responses {responses}: no such file or directory")
    if gold_dir is not None:
        _check_gold_dir(gold_dir, tasks_path)
    check_output(out_path)


def _score_tasks(tasks_path: Path, gold_dir: Path | None) -> list:
    """The tasks to score (those without a gold table skipped, each named); at least one."""
    from fictionworld.scoring.io import load_tasks
    from fictionworld.tasks.model import TaskError

    try:
        task_list, skipped = load_tasks(tasks_path, gold_dir)
    except TaskError as exc:
        fail(str(exc))
    for s in skipped:
        err.print(f"skipped {s}", highlight=False)
    if not task_list:
        fail(f"{tasks_path}: no tasks to score" + (f" ({len(skipped)} skipped)" if skipped else ""))
    return task_list


def _check_gold_dir(gold_dir: Path, tasks_path: Path) -> None:
    """``--gold-dir`` must be a directory, and only goes with official tasks (ours carry their gold)."""
    if not gold_dir.is_dir():
        fail(f"--gold-dir {gold_dir}: " + ("is not a directory" if gold_dir.exists() else "no such directory"))
    from fictionworld.scoring.io import carries_gold
    from fictionworld.tasks.model import TaskError

    try:
        ours = carries_gold(tasks_path.read_text(encoding="utf-8"), tasks_path)
    except (OSError, UnicodeDecodeError, TaskError):
        return  # reading the tasks file says what is wrong with it
    if ours:
        fail(
            f"--gold-dir: {tasks_path} holds tasks with their gold tables; --gold-dir is for an official widesearch.jsonl"
        )


def _responses(path: Path, task_ids: list[str], trials: int) -> dict[str, dict[int, str]]:
    """The responses to ``task_ids``; an error when there is nothing to score, a warning for
    tasks without a response, responses to no task and trials beyond ``trials``."""
    from fictionworld.scoring.io import ResponseError, load_responses

    if path.is_dir() and not any(path.glob("*_response.jsonl")):
        fail(f"--responses {path}: no response files (*_response.jsonl) in this directory")
    try:
        found = load_responses(path, task_ids)
    except ResponseError as exc:
        fail(str(exc))
    if not found and not path.is_dir():
        fail(f"--responses {path}: no responses in this file")
    missing = [i for i in task_ids if i not in found]
    if len(missing) == len(task_ids):
        fail(
            f"no response matches a task: the tasks are {_some(task_ids)}"
            + (f"; the responses answer {_some(sorted(found))}" if found else "")
            + " (wrong --tasks or --responses?)"
        )
    if missing:
        warn(f"{len(missing)} of {len(task_ids)} tasks have no response and score 0: {_some(missing)}")
    unknown = sorted(set(found) - set(task_ids))
    if unknown:
        warn(f"{len(unknown)} responses answer no task in the tasks file and are ignored: {_some(unknown)}")
    late = sorted({t for i in task_ids for t in found.get(i, {}) if not 0 <= t < trials})
    if late:
        warn(f"responses to trials {_some(late)} are ignored (--trials {trials} scores trials 0 to {trials - 1})")
    return found


@app.command()
def score(
    tasks_path: Annotated[Path, typer.Option("--tasks", help="tasks.jsonl or an official widesearch.jsonl.")],
    responses: Annotated[Path, typer.Option(help="Responses JSONL, or a directory of official response files.")],
    gold_dir: Annotated[
        Path | None, typer.Option(help="Official gold CSVs (default: widesearch_gold/ beside).")
    ] = None,
    mode: Annotated[str, typer.Option(help="strict (default, the RL reward) or compat (official numbers).")] = "strict",
    trials: Annotated[
        int,
        typer.Option(
            help=f"Trials per task (N of avg@N / pass@N / max@N), 1 to {MAX_TRIALS:,}.", min=1, max=MAX_TRIALS
        ),
    ] = 1,
    judge_base_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible judge endpoint (compat).", callback=http_url)
    ] = None,
    judge_model: Annotated[str, typer.Option(help="Judge model name.")] = "gpt-4.1",
    today: Annotated[str | None, typer.Option(help="Date compat's date parsing is relative to (YYYY-MM-DD).")] = None,
    out_path: Annotated[Path, typer.Option("--out", help="Per-task results (JSON Lines).")] = Path("scores.jsonl"),
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Score responses with WideSearch's metrics; prints SR / Row F1 / Item F1 (avg@N, pass@N / max@N)."""
    import datetime as dt

    from fictionworld.scoring import aggregate
    from fictionworld.scoring import score as score_one

    if mode not in ("strict", "compat"):
        fail(f"--mode must be strict or compat, not {mode!r}")
    ref = None
    if today:
        try:
            ref = dt.date.fromisoformat(today)
        except ValueError:
            fail(f"--today {today!r} is not YYYY-MM-DD")
    if mode == "strict" and (judge_base_url or today):
        warn("--judge-base-url and --today apply to --mode compat only; the strict scorer ignores them")
    _check_score_paths(tasks_path, responses, gold_dir, out_path)
    task_list = _score_tasks(tasks_path, gold_dir)
    found = _responses(responses, [t.instance_id for t in task_list], trials)
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
