"""The ``fictionworld`` command line: a thin layer over the library."""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Invent consistent fictional worlds and turn them into training grounds for search agents.",
)
out = Console()
err = Console(stderr=True)


def _fail(message: str, code: int = 2) -> None:
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _load(path: Path, verify: bool = True):
    from fictionworld.storage import WorldFormatError, load_world

    try:
        return load_world(path, verify=verify)
    except WorldFormatError as exc:
        _fail(str(exc))


@app.command()
def generate(
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Directory to write the world to.")],
    seed: Annotated[int, typer.Option(help="Seed: same seed and spec, same world.")] = 0,
    entities: Annotated[int, typer.Option(help="Target number of entities (scales the spec).", min=50)] = 10_000,
    spec: Annotated[Path | None, typer.Option(help="World spec YAML (default: the shipped spec).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing world directory.")] = False,
) -> None:
    """Generate a world and save it in format fictionworld/1."""
    from fictionworld.spec import WorldSpec, default_spec
    from generators import generate_world, plan

    if spec is not None:
        try:
            world_spec = WorldSpec.from_yaml(spec).scaled(entities)
        except FileNotFoundError:
            _fail(f"{spec}: no such spec file")
        except Exception as exc:  # pydantic / YAML errors: one clear line
            _fail(f"{spec}: invalid spec: {' '.join(str(exc).split())[:400]}")
    else:
        world_spec = default_spec(entities)
    if out_dir.exists() and any(out_dir.iterdir()) and not force:
        _fail(f"{out_dir} exists and is not empty (use --force to overwrite)")
    steps = plan(world_spec.counts())
    t0 = time.perf_counter()
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=err,
        transient=False,
    ) as progress:
        task = progress.add_task("generating", total=len(steps) + 2)

        def step(name: str) -> None:
            progress.update(task, description=f"generating: {name}")
            progress.advance(task)

        world = generate_world(world_spec, seed, progress=step)
        progress.update(task, description="saving")
        try:
            world.save(out_dir, overwrite=force)
        except FileExistsError as exc:
            _fail(str(exc))
        progress.update(task, description="done", completed=len(steps) + 2)
    dt = time.perf_counter() - t0
    out.print(
        f"world [bold]{out_dir}[/]: {len(world.entities):,} entities, {len(world.facts):,} facts, "
        f"hash {world.world_hash[:16]} ({dt:.1f} s)",
        highlight=False,
    )


@app.command()
def validate(
    world_dir: Annotated[Path, typer.Argument(help="World directory.")],
    limit: Annotated[int, typer.Option(help="List at most this many violations per kind.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    verify_hash: Annotated[
        bool, typer.Option("--verify-hash/--no-verify-hash", help="Refuse content that differs from the manifest hash.")
    ] = True,
) -> None:
    """Check every constraint; exit 1 and list the violations if there are any, else 0.

    Use --no-verify-hash to check a world whose Parquet files were edited by hand."""
    from fictionworld.check import check_world

    world = _load(world_dir, verify=verify_hash)
    with err.status("checking constraints"):
        violations = check_world(world, limit_per_kind=limit)
    if as_json:
        print(
            json.dumps(
                {
                    "world": str(world_dir),
                    "world_hash": world.world_hash,
                    "ok": not violations,
                    "violations": [v.model_dump(mode="json") for v in violations],
                },
                indent=2,
            )
        )
    else:
        for v in violations:
            out.print(f"[red]✗[/] {escape(str(v))}", highlight=False, soft_wrap=True)
        if violations:
            by_kind = Counter(v.kind.value for v in violations)
            out.print(
                f"[bold red]{len(violations)} violation(s)[/] listed: "
                + ", ".join(f"{k} {n}" for k, n in sorted(by_kind.items())),
                highlight=False,
            )
        else:
            out.print(
                f"[green]✓[/] {world_dir}: {len(world.entities):,} entities, {len(world.facts):,} facts, no violations",
                highlight=False,
            )
    raise typer.Exit(1 if violations else 0)


@app.command()
def stats(
    world_dir: Annotated[Path, typer.Argument(help="World directory.")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Counts per entity type and predicate, and a degree summary."""
    from fictionworld.schema import RELATIONS

    world = _load(world_dir)
    counts, preds, degree = world.counts(), world.predicate_counts(), world.degree_summary()
    if as_json:
        print(
            json.dumps(
                {
                    "world_hash": world.world_hash,
                    "seed": world.seed,
                    "entities": len(world.entities),
                    "facts": len(world.facts),
                    "by_type": counts,
                    "by_predicate": preds,
                    "degree": degree,
                },
                indent=2,
            )
        )
        return
    out.print(
        f"[bold]{world_dir}[/]  seed {world.seed}  hash {world.world_hash[:16]}  "
        f"{len(world.entities):,} entities  {len(world.facts):,} facts",
        highlight=False,
    )
    t = Table(title="entities by type (degree = relation facts per entity)")
    for col in ("type", "count", "mean degree", "median", "max"):
        t.add_column(col, justify="right" if col != "type" else "left")
    for name, n in counts.items():
        d = degree.get(name, {"mean": 0, "median": 0, "max": 0})
        t.add_row(name, f"{n:,}", f"{d['mean']:.2f}", f"{d['median']:g}", f"{d['max']:,}")
    out.print(t)
    for title, keys in (
        ("relations", [p for p in preds if p in RELATIONS]),
        ("attributes", [p for p in preds if p not in RELATIONS]),
    ):
        t = Table(title=title)
        t.add_column("predicate")
        t.add_column("facts", justify="right")
        for p in keys:
            t.add_row(p, f"{preds[p]:,}")
        out.print(t)


@app.command("spec")
def spec_cmd(entities: Annotated[int, typer.Option(help="Target number of entities.")] = 10_000) -> None:
    """Print the default world spec as YAML (a starting point for your own)."""
    from fictionworld.spec import default_spec

    sys.stdout.write(default_spec(entities).to_yaml())


def main() -> None:
    app()


if __name__ == "__main__":
    main()
