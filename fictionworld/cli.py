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


_WEB_STAGES = 6  # articles, organisation sites, news, directories, perturbation layers, index


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
    web: Annotated[bool, typer.Option("--web/--no-web", help="Render the pages and build the search index.")] = True,
) -> None:
    """Generate a world (and its web) and save it in format fictionworld/1."""
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
        task = progress.add_task("generating", total=len(steps) + 2 + (_WEB_STAGES if web else 0))

        def step(name: str) -> None:
            progress.update(task, description=f"generating: {name}")
            progress.advance(task)

        world = generate_world(world_spec, seed, progress=step)
        if web:
            from fictionworld.web import Web

            world.web = Web.build(world, progress=step)
        progress.update(task, description="saving")
        try:
            world.save(out_dir, overwrite=force, web=web)
        except FileExistsError as exc:
            _fail(str(exc))
        progress.update(task, description="done", completed=progress.tasks[0].total)
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


def _web(path: Path):
    """A saved world's web; built and saved into the directory the first time."""
    from fictionworld.web import Web, WebError

    world = _load(path)
    if not (path / "web.json").exists():
        err.print(f"{path} has no web yet: rendering pages and indexing (once)…", highlight=False)
        web = Web.build(world)
        web.save(path)
        world.web = web
    try:
        return world.web
    except WebError as exc:
        _fail(f"{exc} (rebuild with `fictionworld index {path} --force`)")


def _knobs(items: list[str] | None):
    from fictionworld.knobs import Knobs

    values = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep:
            _fail(f"--knob {item!r}: expected NAME=VALUE, e.g. conflict_rate=0.3")
        values[key.strip()] = value.strip()
    try:
        return Knobs.model_validate(values)
    except Exception as exc:
        _fail(f"bad knobs: {' '.join(str(exc).split())[:300]}")


KnobOption = Annotated[
    list[str] | None,
    typer.Option("--knob", help="Perturbation knob NAME=VALUE (repeatable), e.g. --knob conflict_rate=0.3"),
]


WorldModelOption = Annotated[
    str, typer.Option("--world-model", help="Who writes pages and snippets: template, or sglang (an LLM, verified).")
]
BaseUrlOption = Annotated[
    str | None, typer.Option("--base-url", help="sglang world model: server, e.g. http://127.0.0.1:30000/v1")
]
ModelOption = Annotated[str, typer.Option("--model", help="sglang world model: served model name.")]
ApiOption = Annotated[str, typer.Option("--api", help="sglang world model: chat (/v1/chat/completions) or generate.")]


def _world_model_config(kind: str, base_url: str | None, model: str, api: str = "chat", **extra):
    """A WorldModelConfig from command-line options, or a clear error."""
    from fictionworld.worldmodel.config import WorldModelConfig

    if kind not in ("template", "sglang"):
        _fail(f"--world-model must be template or sglang, not {kind!r}")
    if kind == "sglang" and not base_url:
        _fail("--world-model sglang needs --base-url (the SGLang server, e.g. http://127.0.0.1:30000/v1)")
    try:
        return WorldModelConfig(kind=kind, base_url=base_url, model=model, api=api, **extra)
    except ValueError as exc:
        _fail(f"bad world model settings: {' '.join(str(exc).split())[:300]}")


def _served_web(path: Path, config):
    """A saved world's web, served by ``config``'s world model."""
    web = _web(path)
    _serve_with(web, config)
    return web


def _serve_with(web, config) -> None:
    """Puts ``config``'s world model on ``web``; says plainly when its server does not answer
    (the model then serves template pages until it does)."""
    from fictionworld.worldmodel.config import use_world_model

    model = use_world_model(web, config)
    if config.kind == "sglang":
        from fictionworld.worldmodel.client import ServerUnreachable

        try:
            model.check()
        except ServerUnreachable as exc:
            err.print(f"[yellow]warning:[/] {escape(str(exc))}; serving template pages", highlight=False)


@app.command()
def index(
    path: Annotated[Path, typer.Argument(help="World directory.")],
    force: Annotated[bool, typer.Option("--force", help="Rebuild even if the world has a web.")] = False,
) -> None:
    """Render a saved world's pages and build its search index (pages.arrow, index/)."""
    from fictionworld.web import Web

    world = _load(path)
    if (path / "web.json").exists() and not force:
        _fail(f"{path} already has a web (use --force to rebuild)", 1)
    t0 = time.perf_counter()
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=err) as progress:
        task = progress.add_task("rendering")
        web = Web.build(world, progress=lambda s: progress.update(task, description=s))
        progress.update(task, description="saving")
        web.save(path)
    out.print(f"web of [bold]{path}[/]: {len(web.pages):,} pages ({time.perf_counter() - t0:.1f} s)", highlight=False)


@app.command()
def search(
    path: Annotated[Path, typer.Argument(help="World directory.")],
    query: Annotated[str, typer.Argument(help="What to search for.")],
    k: Annotated[
        int | None, typer.Option("--k", help="Results per page (default: the knobs' results_per_page).")
    ] = None,
    page: Annotated[int, typer.Option(help="Result page, 1-based.")] = 1,
    knob: KnobOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    world_model: WorldModelOption = "template",
    base_url: BaseUrlOption = None,
    model: ModelOption = "default",
    api: ApiOption = "chat",
) -> None:
    """Search a world's web; prints results as agents see them ([n] URL / Title / Snippet / Date)."""
    from fictionworld.web import WebError, format_results

    web = _served_web(path, _world_model_config(world_model, base_url, model, api))
    knobs = _knobs(knob)
    try:
        results = web.search(query, k, page, knobs)
    except WebError as exc:
        _fail(str(exc))
    if as_json:
        print(json.dumps([r.model_dump(mode="json") for r in results], indent=2, ensure_ascii=False))
    else:
        print(format_results(query, results, (page - 1) * (k or knobs.results_per_page)))


@app.command("open")
def open_cmd(
    path: Annotated[Path, typer.Argument(help="World directory.")],
    url: Annotated[str, typer.Argument(help="Page URL (directories take ?page=N).")],
    knob: KnobOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    world_model: WorldModelOption = "template",
    base_url: BaseUrlOption = None,
    model: ModelOption = "default",
    api: ApiOption = "chat",
) -> None:
    """Open a page of a world's web and print it as Markdown. Exit 1 if there is no such page."""
    from fictionworld.web import PageNotFound, WebError

    web = _served_web(path, _world_model_config(world_model, base_url, model, api))
    try:
        page = web.open(url, _knobs(knob))
    except WebError as exc:
        _fail(str(exc))
    if as_json:
        print(
            json.dumps(
                {"found": not isinstance(page, PageNotFound), **page.model_dump(mode="json")},
                indent=2,
                ensure_ascii=False,
            )
        )
    else:
        print(page.markdown())
    if isinstance(page, PageNotFound):
        raise typer.Exit(1)


@app.command("spec")
def spec_cmd(entities: Annotated[int, typer.Option(help="Target number of entities.")] = 10_000) -> None:
    """Print the default world spec as YAML (a starting point for your own)."""
    from fictionworld.spec import default_spec

    sys.stdout.write(default_spec(entities).to_yaml())


def main() -> None:
    import fictionworld.cli_rollout  # noqa: F401  (registers `rollout`, `export`, `demo`, `train-demo`)
    import fictionworld.cli_tasks  # noqa: F401  (registers `tasks` and `score`)
    import fictionworld.cli_worldmodel  # noqa: F401  (registers `fidelity` and `render-cache`)
    from fictionworld import cli  # the importable module's app, also when run as __main__

    cli.app()


if __name__ == "__main__":
    main()
