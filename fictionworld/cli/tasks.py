"""``fictionworld tasks`` and ``fictionworld score`` (added to the app by :func:`register`)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from fictionworld.cli.common import (
    MAX_TASKS,
    check_output,
    err,
    fail,
    http_url,
    load_world_dir,
    out,
    plain_text,
    warn,
)
from fictionworld.extras import require

__all__ = ["register"]

MAX_TRIALS = 1_000  # trials per task that `score` reads
SCORES_FILE = "scores.jsonl"  # score's per-task results, beside the responses unless --out says


def _task_knobs(preset: str, **values):
    """TaskKnobs of a preset with the options given, or one ``error: --option: ...`` line per problem."""
    from pydantic import ValidationError

    from fictionworld.errors import problem_lines
    from fictionworld.tasks.presets import PRESETS, preset_knobs

    if preset not in PRESETS:
        fail(f"--preset must be one of {', '.join(PRESETS)}, not {preset!r}")
    given = {k: v for k, v in values.items() if v is not None}
    try:
        return preset_knobs(preset, **given)
    except ValidationError as exc:
        fail("\n".join(problem_lines(exc, label=lambda field: "--" + field.replace("_", "-"))))


def tasks(
    path: Annotated[Path, typer.Argument(help="World directory.")],
    n: Annotated[int, typer.Option("--n", help=f"Number of tasks, 1 to {MAX_TASKS:,}.", min=1, max=MAX_TASKS)] = 20,
    kind: Annotated[str, typer.Option(help="wide, deep or mixed.")] = "wide",
    seed: Annotated[int, typer.Option(help="Task seed (>= 0, independent of the world's).", min=0)] = 0,
    preset: Annotated[
        str, typer.Option(help="Difficulty preset: tiny, small, medium or widesearch (options below override it).")
    ] = "small",
    family: Annotated[
        list[str] | None,
        typer.Option(help="Wide families to draw from (repeat): list, and, or, temporal, top, aggregate, via."),
    ] = None,
    rows_min: Annotated[int | None, typer.Option(help="Fewest gold rows of a wide task.")] = None,
    rows_max: Annotated[int | None, typer.Option(help="Most gold rows of a wide task.")] = None,
    columns: Annotated[int | None, typer.Option(help="Columns of a wide task, key included (the fewest).")] = None,
    columns_max: Annotated[int | None, typer.Option(help="Most columns of a wide task.")] = None,
    hops: Annotated[int | None, typer.Option(help="Longest relation path in a column or clue.")] = None,
    selectivity: Annotated[
        float | None, typer.Option(help="Share of the discoverable group a list task keeps.")
    ] = None,
    clues: Annotated[int | None, typer.Option(help="Most clues of a deep task.")] = None,
    stats: Annotated[
        bool,
        typer.Option(
            "--stats",
            help="Also print the set's shape next to WideSearch's published figures, with the explorer agent's "
            "row recall, success and tool calls (it runs here, knowing only each question), and how much "
            "base-rate guessing would earn (each task's guessability is in the tasks file); the table is saved "
            "beside the tasks file too (tasks.jsonl: tasks.stats.txt).",
        ),
    ] = False,
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
        preset, rows_min=rows_min, rows_max=rows_max, columns=columns, columns_max=columns_max, hops=hops,
        selectivity=selectivity, clues=clues, families=tuple(family) if family else None,
    )  # fmt: skip
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
    rows = [len(t.gold.rows) for t in made]
    out.print(
        f"{len(made)} {kind} tasks → {out_path} ({knobs.preset or 'custom'}: gold rows {min(rows)}–{max(rows)}, "
        f"mean {sum(rows) / len(rows):.1f})",
        highlight=False,
        soft_wrap=True,
    )
    if widesearch is not None:
        jsonl = export_widesearch(made, widesearch)
        gold = jsonl.parent / "widesearch_gold"
        csvs = len({t.instance_id for t in made})
        out.print(
            f"official layout → {jsonl} ({len(made)} tasks), {gold}/ ({csvs} gold CSVs)",
            highlight=False,
            soft_wrap=True,
        )
    if stats:
        _print_stats(world, made, stats_file(out_path))


def stats_file(tasks_file: Path) -> Path:
    """Where ``tasks --stats`` saves its table: beside the tasks, ``NAME.stats.txt``."""
    return tasks_file.with_name(f"{tasks_file.stem}.stats.txt")


def _print_stats(world, made, path: Path) -> None:
    """The set's shape next to WideSearch's published figures, and the explorer's results;
    printed, and saved as text in ``path``."""
    from fictionworld.rollouts.agents.explorer import explore
    from fictionworld.tasks.presets import WIDESEARCH_PUBLISHED
    from fictionworld.tasks.stats import AnswerPages, task_stats

    s = task_stats(made)
    with Progress(
        TextColumn("explorer"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err, transient=True
    ) as progress:
        bar = progress.add_task("explorer", total=len(made))
        runs = explore(world, made, progress=lambda k: progress.update(bar, completed=k))
    pages = AnswerPages(world.web)
    one_page = sum(1 for t in made if t.family != "lookup" and pages.holding(t))

    def rng(d: dict, fmt: str = "{:.1f}") -> str:
        return f"{fmt.format(d['mean'])} (min {d['min']:.0f}, max {d['max']:.0f})"

    calls = [r["calls"] for r in runs]
    table = Table(title="task set vs WideSearch (published)", show_lines=False)
    table.add_column("")
    table.add_column("this set")
    table.add_column("WideSearch")
    table.add_row("tasks", str(s["tasks"]), WIDESEARCH_PUBLISHED["tasks"])
    table.add_row("families", ", ".join(f"{k} {v}" for k, v in s["families"].items()),
                  WIDESEARCH_PUBLISHED["domains"] + " domains")  # fmt: skip
    table.add_row("rows per task", rng(s["rows"]), "tens to hundreds")
    table.add_row("columns per task", rng(s["columns"]), "")
    table.add_row("cells per task", rng(s["cells"]), WIDESEARCH_PUBLISHED["mean cells per task"])
    table.add_row("hops (longest path)", rng(s["hops"]), "")
    table.add_row("conditions", rng(s["conditions"]), "")
    table.add_row("explorer tool calls", f"{np.mean(calls):.0f} (min {min(calls)}, max {max(calls)})",
                  WIDESEARCH_PUBLISHED["pages consulted per task"] + " pages, " +
                  WIDESEARCH_PUBLISHED["human time per task"] + " (human)")  # fmt: skip
    table.add_row("explorer row recall", f"{np.mean([r['row_recall'] for r in runs]):.3f}", "")
    table.add_row("explorer success rate", f"{np.mean([r['success'] for r in runs]):.3f}", "")
    table.add_row("tasks answered by one page", str(one_page), "")
    g = s["guess"]
    if g["tasks"]:
        gg = g["guess_gain"]
        table.add_row("guess gain (item F1: keys + base-rate guesses − keys)",
                      f"{gg['mean']:.3f} (min {gg['min']:.3f}, max {gg['max']:.3f}; "
                      f"{g['gain_over_limit']} of {g['tasks']} over {g['gain_limit']:g})", "")  # fmt: skip
        table.add_row("column guessability", f"{g['guessability']['mean']:.3f} (max {g['guessability']['max']:.3f}; "
                      f"{g['over_limit']} of {g['columns']} over {g['limit']:g})", "")  # fmt: skip
        table.add_row("most guessable columns", "; ".join(f"{h} {v:.2f} ({n})" for h, v, n in g["most_guessable"]), "")
    out.print(table)
    path.write_text(plain_text(table), encoding="utf-8")
    out.print(f"table → {path}", highlight=False, soft_wrap=True)


def _some(ids, limit: int = 5) -> str:
    ids = list(ids)
    return ", ".join(map(str, ids[:limit])) + (f", … ({len(ids)} in all)" if len(ids) > limit else "")


def _score_paths(
    tasks_path: Path | None, responses: Path, gold_dir: Path | None, out_path: Path | None
) -> tuple[Path, Path]:
    """The tasks file (by default a rollout run's own) and the scores file (by default beside
    the responses), checked before any work."""
    from fictionworld.scoring.io import EPISODES_FILE, rollout_run, run_tasks_file

    if not responses.exists():
        fail(f"--responses {responses}: no such file or directory")
    run = rollout_run(responses)
    if tasks_path is None:
        tasks_path = run_tasks_file(responses)
        if tasks_path is None:
            fail(
                f"--tasks is needed: the run {run} holds no tasks.jsonl (a run not made by `fictionworld rollout`)"
                if run is not None
                else "--tasks is needed (only a rollout run that holds its tasks.jsonl may go without)"
            )
        err.print(f"scoring against the run's tasks: {tasks_path}", highlight=False, soft_wrap=True)
    if not tasks_path.is_file():
        what = "is a directory; give the tasks file" if tasks_path.is_dir() else "no such file"
        fail(f"--tasks {tasks_path}: {what}")
    if gold_dir is not None:
        _check_gold_dir(gold_dir, tasks_path)
    if out_path is None:  # beside the input, never the current directory
        out_path = (run or (responses if responses.is_dir() else responses.parent)) / SCORES_FILE
    check_output(out_path)
    inputs = {responses.resolve(), tasks_path.resolve()} | ({(run / EPISODES_FILE).resolve()} if run else set())
    if out_path.resolve() in inputs:
        fail(f"--out {out_path}: is an input; give another --out")
    return tasks_path, out_path


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


def _responses(path: Path, task_ids: list[str], trials: int | None) -> tuple[dict[str, dict[int, str]], int]:
    """The responses to ``task_ids`` and the trials to score (``trials``, else every trial the
    responses hold: a run's samples); an error when there is nothing to score, a warning for
    tasks without a response, responses to no task and trials beyond ``trials``."""
    from fictionworld.scoring.io import EPISODES_FILE, ResponseError, load_responses, rollout_run

    run = rollout_run(path)
    if path.is_dir() and run is None and not any(path.glob("*_response.jsonl")):
        fail(
            f"--responses {path}: neither a rollout run ({EPISODES_FILE}) "
            "nor official response files (*_response.jsonl) in this directory"
        )
    try:
        found = load_responses(path, task_ids)
    except ResponseError as exc:
        fail(str(exc))
    if not found and (run is not None or not path.is_dir()):
        fail(f"--responses {path}: " + ("no episodes in this run" if run is not None else "no responses in this file"))
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
    if trials is None:
        trials = min(max((t + 1 for i in task_ids for t in found.get(i, {})), default=1), MAX_TRIALS)
    late = sorted({t for i in task_ids for t in found.get(i, {}) if not 0 <= t < trials})
    if late:
        warn(f"responses to trials {_some(late)} are ignored (--trials {trials} scores trials 0 to {trials - 1})")
    return found, trials


def score(
    responses: Annotated[
        Path,
        typer.Option(
            help="Responses: a JSONL file of {instance_id, response, trial} records, a directory of official "
            "*_response.jsonl files, or a rollout run (RUN or RUN/episodes.jsonl: each episode's answer to its "
            "task_id, its sample the trial).",
        ),
    ],
    tasks_path: Annotated[
        Path | None,
        typer.Option(
            "--tasks",
            help="tasks.jsonl or an official widesearch.jsonl (default for a rollout run: its RUN/tasks.jsonl).",
        ),
    ] = None,
    gold_dir: Annotated[
        Path | None, typer.Option(help="Official gold CSVs (default: widesearch_gold/ beside).")
    ] = None,
    mode: Annotated[
        str,
        typer.Option(
            help="strict (default, the RL reward), strict-abstain (strict where a blank or N/A cell is no claim: "
            "it leaves item precision's denominator) or compat (official numbers)."
        ),
    ] = "strict",
    trials: Annotated[
        int | None,
        typer.Option(
            help=f"Trials per task (N of avg@N / pass@N / max@N), 1 to {MAX_TRIALS:,} (default: every trial the "
            "responses hold, a run's samples per task).",
            min=1,
            max=MAX_TRIALS,
        ),
    ] = None,
    judge_url: Annotated[
        str | None,
        typer.Option(
            help="compat: the LLM judge's OpenAI-compatible server, e.g. http://127.0.0.1:30000/v1 "
            "(key in FICTIONWORLD_JUDGE_API_KEY).",
            callback=http_url,
        ),
    ] = None,
    judge_model: Annotated[str, typer.Option(help="compat: the judge's model name at --judge-url.")] = "gpt-4.1",
    today: Annotated[str | None, typer.Option(help="Date compat's date parsing is relative to (YYYY-MM-DD).")] = None,
    out_path: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Per-task results, JSON Lines (default: scores.jsonl beside the responses: in the run, in the "
            "responses directory, or in the responses file's directory).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Score responses with WideSearch's metrics; prints SR / Row F1 / Item F1 (avg@N, pass@N / max@N)."""
    import datetime as dt

    from fictionworld.scoring import aggregate
    from fictionworld.scoring import score as score_one

    if mode not in ("strict", "strict-abstain", "compat"):
        fail(f"--mode must be strict, strict-abstain or compat, not {mode!r}")
    if mode == "compat":
        require("compat", "fictionworld score --mode compat")
    ref = None
    if today:
        try:
            ref = dt.date.fromisoformat(today)
        except ValueError:
            fail(f"--today {today!r} is not YYYY-MM-DD")
    if mode != "compat" and (judge_url or today):
        warn("--judge-url and --today apply to --mode compat only; the strict scorer ignores them")
    tasks_path, out_path = _score_paths(tasks_path, responses, gold_dir, out_path)
    task_list = _score_tasks(tasks_path, gold_dir)
    found, trials = _responses(responses, [t.instance_id for t in task_list], trials)
    judge = None
    if judge_url:
        from fictionworld.llm import ChatClient
        from fictionworld.scoring.judge import LLMJudge

        judge = LLMJudge(ChatClient(judge_url, judge_model, api_key=os.environ.get("FICTIONWORLD_JUDGE_API_KEY")))
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
        note = "judge: " + ("endpoint " + judge_url if judge else "deterministic fallback (no --judge-url)")
        note += f"; dates relative to {(ref or dt.date.today()).isoformat()}"
    if as_json:
        print(json.dumps({"mode": mode, "note": note, **summary.model_dump(), "scores_file": str(out_path)}, indent=2))
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
    out.print(f"per-task results → {out_path}", highlight=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Adds ``tasks`` and ``score`` to ``app``."""
    app.command()(tasks)
    app.command()(score)
