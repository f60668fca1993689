"""``fictionworld export``: a world's tasks as a trainer's dataset, or a run's episodes as Parquet.

- ``export verl TASKS --world DIR --out OUT``: train/val Parquet in verl's row schema, its tool
  and agent-loop YAML and a launch script (:func:`fictionworld.integrations.verl.export_verl`);
- ``export trl TASKS --world DIR --out OUT``: train/val Parquet for TRL's ``GRPOTrainer`` with
  ``environment_factory`` (:func:`fictionworld.integrations.trl.export_trl`);
- ``export episodes RUN``: a rollout's episodes with GRPO advantages (``export RUN``, the form
  before the trainers came, still works).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from typer.core import TyperGroup

from fictionworld.cli.common import KnobOption, check_output, err, fail, out, parse_knobs, probability

__all__ = ["register", "TARGETS"]

TARGETS = ("verl", "trl", "episodes")
TOOL_SETS = ("basic", "agentworld", "memory", "all")


class _ExportGroup(TyperGroup):
    """``export RUN`` (a path, not a target) means ``export episodes RUN``."""

    def resolve_command(self, ctx, args):
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["episodes", *args]
        return super().resolve_command(ctx, args)


TasksArg = Annotated[Path, typer.Argument(help="Tasks file (tasks.jsonl from `fictionworld tasks`).")]
WorldOpt = Annotated[Path, typer.Option("--world", help="The saved world the tasks were made from.")]
OutOpt = Annotated[Path, typer.Option("--out", help="Output directory (created).")]
ValOpt = Annotated[float, typer.Option(help="Share of the tasks held out for validation.", callback=probability)]
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
    if val_fraction >= 1:
        fail(f"--val-fraction must be below 1 (some tasks must train), not {val_fraction:g}")
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
        from fictionworld.integrations.verl import export_verl as exporter
    else:
        from fictionworld.integrations.trl import export_trl as exporter
    try:
        summary = exporter(tasks, world, out_dir, val_fraction=val_fraction, seed=seed, knobs=knobs, **options)
    except ValueError as exc:
        fail(str(exc))
    for key, value in summary.items():
        if key != "overrides":  # the launch script shows them
            out.print(f"{key}: {value}", highlight=False)
    return summary


def verl(
    tasks_path: TasksArg,
    world: WorldOpt,
    out_dir: OutOpt,
    val_fraction: ValOpt = 0.1,
    seed: SeedOpt = 0,
    knob: KnobOption = None,
    tools: Annotated[str, typer.Option(help="Tool set: basic (search/open/answer), agentworld, memory (basic + dict_memory) or all.")] = "basic",
    model: Annotated[str, typer.Option(help="Model path or hub id the launch script trains.")] = "",
) -> None:
    """verl: train/val Parquet, tools.yaml, agent_loop.yaml and a GRPO launch script (train.sh)."""
    if tools not in TOOL_SETS:
        fail(f"--tools must be one of {', '.join(TOOL_SETS)}, not {tools!r}")
    extra = {"model_path": model} if model else {}
    _export("verl", tasks_path, world, out_dir, val_fraction, seed, knob, tools=tools, **extra)
    err.print(f"train with: bash {out_dir / 'train.sh'}", highlight=False)


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


def register(app: typer.Typer) -> None:
    """Adds the ``export`` group (``verl``, ``trl``, ``episodes``) to ``app``."""
    from fictionworld.cli.rollout import export as episodes

    group = typer.Typer(cls=_ExportGroup, no_args_is_help=True, add_completion=False,
                        help="Export tasks for a trainer (verl, trl) or a run's episodes (episodes RUN).")  # fmt: skip
    group.command("verl")(verl)
    group.command("trl")(trl)
    group.command("episodes")(episodes)
    app.add_typer(group, name="export")
