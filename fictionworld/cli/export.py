"""``fictionworld export``: a world's tasks as a trainer's dataset, or a run's episodes as Parquet.

- ``export verl TASKS --world DIR --out OUT``: train/val Parquet in verl's row schema, its tool
  and agent-loop YAML and a launch script (:func:`fictionworld.integrations.verl.export_verl`);
- ``export trl TASKS --world DIR --out OUT``: train/val Parquet for TRL's ``GRPOTrainer`` with
  ``environment_factory`` (:func:`fictionworld.integrations.trl.export_trl`);
- ``export skyrl TASKS --world DIR --out OUT``: train/val Parquet in SkyRL's row schema and a
  launch script (:func:`fictionworld.integrations.skyrl.export_skyrl`);
- ``export episodes RUN``: a rollout's episodes with GRPO advantages;
- ``export lwm RUN|WORLD --out OUT``: (history, action, observation) examples for language world
  models, verified against the graph, with negatives and a dataset card
  (:func:`fictionworld.worldmodel.lwm_files.export_lwm`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fictionworld.cli.common import KnobOption, check_output, err, fail, out, parse_knobs, probability, warn

__all__ = ["register", "TARGETS"]

TARGETS = ("verl", "trl", "skyrl", "episodes", "lwm")
TOOL_SETS = ("basic", "agentworld", "memory", "all")


TasksArg = Annotated[Path, typer.Argument(help="Tasks file (tasks.jsonl from `fictionworld tasks`).")]
WorldOpt = Annotated[Path, typer.Option("--world", help="The saved world the tasks were made from.")]
OutOpt = Annotated[Path, typer.Option("--out", help="Output directory (created).")]


def held_out_share(value: float | None) -> float | None:
    """Typer callback: a share in [0, 1) (0: every task trains, no validation rows)."""
    if value is not None and not 0 <= value < 1:
        raise typer.BadParameter(f"must be >= 0 and below 1 (some tasks must train), not {value:g}")
    return value


ValOpt = Annotated[
    float,
    typer.Option(help="Share of the tasks held out for validation, 0 (none) to below 1.", callback=held_out_share),
]
SeedOpt = Annotated[int, typer.Option(help="Seed (>= 0) of the train/val split and of each row's episode seed.", min=0)]


def _export(target: str, tasks_path: Path, world: Path, out_dir: Path, val_fraction: float, seed: int,
            knob: list[str] | None, **options) -> dict:  # fmt: skip
    """Checks the inputs (``error:`` lines before any work), then runs the target's exporter. The
    world is opened once (:func:`~fictionworld.env.trainer.shared_world`: the exporter reuses
    it); tasks made from another world are the exporter's ValueError, reported as one line."""
    from fictionworld.env.trainer import shared_world
    from fictionworld.storage import WorldFormatError
    from fictionworld.tasks.model import TaskError, read_tasks

    check_output(out_dir, directory=True)
    knobs = parse_knobs(knob) if knob else None
    if not tasks_path.is_file():
        fail(f"{tasks_path}: " + ("no such file" if not tasks_path.exists() else "not a file"))
    try:
        tasks = read_tasks(tasks_path)
    except TaskError as exc:
        fail(str(exc))
    if not tasks:
        fail(f"{tasks_path}: no tasks")
    try:
        shared_world(world)
    except (WorldFormatError, FileNotFoundError, NotADirectoryError) as exc:
        fail(f"--world {world}: {exc}")
    if target == "verl":
        from fictionworld.integrations.verl_export import export_verl as exporter
    elif target == "skyrl":
        from fictionworld.integrations.skyrl_export import export_skyrl as exporter
    else:
        from fictionworld.integrations.trl import export_trl as exporter
    try:
        summary = exporter(tasks, world, out_dir, val_fraction=val_fraction, seed=seed, knobs=knobs, **options)
    except ValueError as exc:
        fail(str(exc))
    for key, value in summary.items():
        if key != "overrides" and value is not None:  # the launch script shows the overrides
            out.print(f"{key}: {value}", highlight=False)
    return summary


ToolsOpt = Annotated[
    str, typer.Option(help="Tool set: basic (search/open/answer), agentworld, memory (basic + dict_memory) or all.")
]
ModelOpt = Annotated[str, typer.Option(help="Model path or hub id the launch script trains.")]
LOGGER_HELP = "wandb needs a login; the script's own trainer.logger=… argument wins"


def _launcher(target: str, tasks_path: Path, world: Path, out_dir: Path, val_fraction: float, seed: int,
              knob: list[str] | None, tools: str, model: str, **options) -> None:  # fmt: skip
    """A trainer whose export writes a launch script (verl, SkyRL): the tool set checked, the
    model passed on when given, and the script named."""
    if tools not in TOOL_SETS:
        fail(f"--tools must be one of {', '.join(TOOL_SETS)}, not {tools!r}")
    extra = {"model_path": model} if model else {}
    _export(target, tasks_path, world, out_dir, val_fraction, seed, knob, tools=tools, **options, **extra)
    if target == "verl":
        from fictionworld.integrations.verl_export import GPU_INSTALL_NOTE, missing_trainer_packages

        missing = missing_trainer_packages()
        if missing:
            warn(f"train.sh needs {' and '.join(missing)} (verl 0.9.1's default trainer imports transfer_queue and "
                 f"rolls out with vLLM), not installed here; {GPU_INSTALL_NOTE}")  # fmt: skip
    err.print(f"train with: bash {out_dir / 'train.sh'}", highlight=False)


def verl(
    tasks_path: TasksArg,
    world: WorldOpt,
    out_dir: OutOpt,
    val_fraction: ValOpt = 0.1,
    seed: SeedOpt = 0,
    knob: KnobOption = None,
    tools: ToolsOpt = "basic",
    model: ModelOpt = "",
    logger: Annotated[
        str,
        typer.Option(help=f"verl's trainer.logger, comma-separated (console, wandb, tensorboard, …); {LOGGER_HELP}."),
    ] = "console",
) -> None:
    """verl: train/val Parquet, tools.yaml, agent_loop.yaml and a GRPO launch script (train.sh)."""
    from fictionworld.integrations.verl_export import LOGGERS

    names = [x.strip() for x in logger.split(",") if x.strip()]
    unknown = [x for x in names if x not in LOGGERS]
    if unknown or not names:
        fail(f"--logger: {'unknown logger ' + repr(unknown[0]) if unknown else 'none given'}; "
             f"verl 0.9.1 knows {', '.join(LOGGERS)}")  # fmt: skip
    _launcher("verl", tasks_path, world, out_dir, val_fraction, seed, knob, tools, model, logger=names)


def trl(
    tasks_path: TasksArg,
    world: WorldOpt,
    out_dir: OutOpt,
    val_fraction: ValOpt = 0.1,
    seed: SeedOpt = 0,
    knob: KnobOption = None,
) -> None:
    """TRL: train/val Parquet whose rows FictionWorldEnv.reset(**row) reads (GRPOTrainer environment_factory)."""
    _export("trl", tasks_path, world, out_dir, val_fraction, seed, knob)


def skyrl(
    tasks_path: TasksArg,
    world: WorldOpt,
    out_dir: OutOpt,
    val_fraction: ValOpt = 0.1,
    seed: SeedOpt = 0,
    knob: KnobOption = None,
    tools: ToolsOpt = "basic",
    model: ModelOpt = "",
    max_turns: Annotated[
        int, typer.Option(help="Turns per trajectory (SkyRL's generator.max_turns; >= 1).", min=1)
    ] = 30,
    logger: Annotated[
        str, typer.Option(help=f"SkyRL's trainer.logger, one name (console, wandb, …); {LOGGER_HELP}.")
    ] = "console",
) -> None:
    """SkyRL: train/val Parquet (env_class, reward_spec, extra_info) and a launch script (train.sh)."""
    if not logger.isidentifier():
        fail(f"--logger: SkyRL takes one logger name (console, wandb, tensorboard, mlflow), not {logger!r}")
    _launcher("skyrl", tasks_path, world, out_dir, val_fraction, seed, knob, tools, model, max_turns=max_turns,
              logger=logger)  # fmt: skip


def lwm(
    source: Annotated[Path, typer.Argument(help="A rollout run (RUN, with episodes.jsonl) or a saved world (WORLD).")],
    out_dir: OutOpt,
    sessions: Annotated[
        int | None,
        typer.Option(help="Sessions to sample over the world, 0 to 100,000 (default 200; 0 for a RUN).",
                     min=0, max=100_000),
    ] = None,
    seed: Annotated[
        int, typer.Option(help="Seed (>= 0) of the sampled sessions, the held-out split and the negatives.", min=0)
    ] = 0,
    negatives: Annotated[
        bool, typer.Option("--negatives/--no-negatives", help="Also write corrupted observations, labelled.")
    ] = True,
    held_out: Annotated[
        float, typer.Option("--held-out", help="Share of the sessions held out (below 1).", callback=probability)
    ] = 0.1,
    fmt: Annotated[str, typer.Option("--format", help="jsonl, parquet or both.")] = "both",
    world: Annotated[
        Path | None, typer.Option("--world", help="For a RUN: the world it ran on (default: the one run.json names).")
    ] = None,
) -> None:  # fmt: skip
    """LWM data: AgentWorld-framed examples, verified against the graph, with negatives and a card.

    (history, action, observation) examples from a rollout run's episodes (replayed) and from
    sessions sampled over the world, a held-out split by session, JSONL/Parquet for HF datasets."""
    import time

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from fictionworld.worldmodel.lwm import LwmError
    from fictionworld.worldmodel.lwm_files import FORMATS, export_lwm

    check_output(out_dir, directory=True)
    if out_dir.is_dir() and any(out_dir.iterdir()) and not (out_dir / "lwm.json").is_file():
        fail(f"--out {out_dir}: a directory with other files in it (not an LWM export); give a new or empty one")
    if fmt not in FORMATS:
        fail(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    if held_out >= 1:
        fail(f"--held-out must be below 1 (some sessions must train), not {held_out:g}")
    run, web = _lwm_source(source, world)
    if run is None and sessions == 0:
        fail("--sessions 0 with a WORLD: nothing to export (give a RUN, or sessions to sample)")
    t0 = time.perf_counter()
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, disable=not err.is_interactive) as bar:  # fmt: skip
        phases: dict[str, int] = {}

        def progress(phase: str, done: int, total: int) -> None:
            if phase not in phases:
                phases[phase] = bar.add_task(phase, total=total)
            bar.update(phases[phase], completed=done, total=total)

        try:
            summary = export_lwm(web, out_dir, run=run, sessions=sessions, seed=seed, negatives=negatives,
                                 held_out=held_out, fmt=fmt, progress=progress)  # fmt: skip
        except LwmError as exc:
            fail(str(exc))
    seconds = time.perf_counter() - t0
    examples = sum(summary["examples"].values())
    out.print(f"examples: train {summary['examples']['train']}, test {summary['examples']['test']} "
              f"({examples / max(seconds, 1e-9):,.0f} examples/s)", highlight=False)  # fmt: skip
    if negatives:
        out.print(f"negatives: train {summary['negatives']['train']}, test {summary['negatives']['test']}",
                  highlight=False)  # fmt: skip
    out.print(f"sessions: {', '.join(f'{k} {v}' for k, v in summary['sessions'].items())}", highlight=False)
    for key, value in {**summary["refused"], **summary["left_out"]}.items():
        out.print(f"{key}: {value}", highlight=False)
    out.print(f"card: {out_dir / 'README.md'}", highlight=False)


def _lwm_source(source: Path, world: Path | None):
    """(the run directory or None, the web to replay or sample on) for ``export lwm SOURCE``."""
    import json

    from fictionworld.cli.common import saved_web
    from fictionworld.scoring.io import rollout_run

    if not source.exists():
        fail(f"{source}: no such directory (give a rollout run or a saved world)")
    run = rollout_run(source)
    if run is None:
        if world is not None:
            fail(f"--world is for a RUN; {source} is not a rollout run (no episodes.jsonl)")
        if not (source / "manifest.json").is_file() if source.is_dir() else True:
            fail(f"{source}: neither a rollout run (episodes.jsonl) nor a saved world (manifest.json)")
        return None, saved_web(source)
    meta: dict = {}
    if (run / "run.json").is_file():
        try:
            meta = json.loads((run / "run.json").read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            fail(f"{run / 'run.json'}: not valid JSON")
    if world is None:
        if not isinstance(meta, dict) or not meta.get("world"):
            fail(f"{run}: its run.json names no world; give the world it ran on with --world DIR")
        world = Path(str(meta["world"]))
    if not world.is_dir():
        fail(f"--world {world}: no such directory (the world the run ran on)")
    web = saved_web(world)
    if isinstance(meta, dict) and meta.get("world_hash") not in (None, web.world.world_hash):
        fail(f"{run} ran on world {meta['world_hash']}, not on {world} ({web.world.world_hash})")
    return run, web


def register(app: typer.Typer) -> None:
    """Adds the ``export`` group (``verl``, ``trl``, ``episodes``, ``lwm``) to ``app``."""
    from fictionworld.cli.rollout import export as episodes

    group = typer.Typer(no_args_is_help=True, add_completion=False,
                        help="Trainer data (verl, trl, skyrl), a run's episodes (episodes RUN), LWM data (lwm).")  # fmt: skip
    group.command("verl")(verl)
    group.command("trl")(trl)
    group.command("skyrl")(skyrl)
    group.command("episodes")(episodes)
    group.command("lwm")(lwm)
    app.add_typer(group, name="export")
