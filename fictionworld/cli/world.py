"""The world and web commands: ``generate``, ``validate``, ``stats``, ``index``, ``search``,
``open`` and ``spec`` (added to the app by :func:`register`)."""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from fictionworld.cli.common import (
    MAX_K,
    MAX_PAGE,
    KnobOption,
    WorldModelApiOption,
    WorldModelNameOption,
    WorldModelOption,
    WorldModelUrlOption,
    address_option,
    check_output,
    entities_option,
    err,
    fail,
    interrupted,
    load_world_dir,
    out,
    parse_knobs,
    ray_option,
    served_web,
    stages,
    workers_option,
    world_model_config,
)
from fictionworld.progress import progress_bar

__all__ = ["register"]

_WEB_STAGES = 6  # articles, organisation sites, news, directories, perturbation layers, index


def _read_spec(path: Path, entities: int):
    """A spec file scaled to ``entities``, or one ``error:`` line per problem in it."""
    import yaml
    from pydantic import ValidationError

    from fictionworld.errors import problem_lines
    from fictionworld.spec import WorldSpec

    try:
        return WorldSpec.from_yaml(path).scaled(entities)
    except OSError as exc:  # missing, a directory, unreadable
        fail(f"--spec {path}: {exc.strerror or exc}")
    except UnicodeDecodeError:
        fail(f"--spec {path}: not a text file")
    except yaml.YAMLError as exc:
        fail(f"--spec {path}: not valid YAML ({' '.join(str(exc).split())[:200]})")
    except ValidationError as exc:
        fail("\n".join(f"--spec {path}: {line}" for line in problem_lines(exc, what="spec field", model=WorldSpec)))


def generate(
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Directory to write the world to.")],
    seed: Annotated[int, typer.Option(help="Seed (>= 0): same seed and spec, same world.", min=0)] = 0,
    entities: Annotated[int, entities_option("Target number of entities (scales the spec)")] = 10_000,
    spec: Annotated[Path | None, typer.Option(help="World spec YAML (default: the shipped spec).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing world directory.")] = False,
    web: Annotated[bool, typer.Option("--web/--no-web", help="Render the pages and build the search index.")] = True,
    workers: Annotated[int | None, workers_option("building the web")] = None,
    shards: Annotated[
        int | None,
        typer.Option(
            help="Tasks the web build is cut into, 1 to 100,000 (default: 4 per worker); any number gives the same world.",
            min=1,
            max=100_000,
        ),
    ] = None,
    use_ray: Annotated[bool, ray_option("Build")] = False,
    address: Annotated[str | None, address_option("build", "--out")] = None,
    check: Annotated[
        bool,
        typer.Option(
            "--validate/--no-validate", help="Check every constraint during the build; exit 1 on any violation."
        ),
    ] = True,
) -> None:
    """Generate a world (and its web) and save it in format fictionworld/1.

    The web is rendered and indexed in shards over local processes (or Ray tasks with --ray);
    the world is the same for any number of shards, workers or machines. A build that was
    killed continues from its finished shards when the same command is run again."""
    from fictionworld.spec import default_spec

    check_output(out_dir, directory=True)
    world_spec = _read_spec(spec, entities) if spec is not None else default_spec(entities)
    if (out_dir / "manifest.json").exists() and not force:
        fail(f"{out_dir} holds a world (use --force to overwrite)")
    if not web:
        return _generate_graph(out_dir, world_spec, seed, force)
    from fictionworld.web.shards import BUILD_DIR, BuildError, build_world

    t0 = time.perf_counter()
    with _bar() as progress:
        task = progress.add_task("generating", total=1)

        def step(stage: str, done: int, total: int) -> None:
            progress.update(task, description=stage, completed=done, total=total)

        try:
            summary = build_world(
                world_spec, seed, out_dir, workers=workers, shards=shards, use_ray=use_ray or bool(address),
                address=address, validate=check, force=force, progress=step,
            )  # fmt: skip
        except (FileExistsError, BuildError) as exc:
            fail(str(exc))
        except KeyboardInterrupt:
            again = ["generate", "--out", str(out_dir), "--seed", str(seed), "--entities", str(entities)]
            for flag, value in (("--spec", spec), ("--workers", workers), ("--shards", shards), ("--address", address)):
                again += [flag, str(value)] if value is not None else []
            again += (["--ray"] if use_ray else []) + ([] if check else ["--no-validate"])
            interrupted(f"the build of {out_dir} stopped; what it finished is kept in {out_dir / BUILD_DIR}", again)
    dt = time.perf_counter() - t0
    if summary["resumed_shards"]:
        err.print(f"resumed: {summary['resumed_shards']} of {summary['shards']} shards were already rendered")
    out.print(
        f"world [bold]{out_dir}[/]: {summary['entities']:,} entities, {summary['facts']:,} facts, "
        f"{summary['pages']:,} pages, hash {summary['world_hash'][:16]} ({dt:.1f} s)",
        highlight=False,
    )
    if summary["violations"]:
        kinds = Counter(v["kind"] for v in summary["violations"])
        err.print(f"[red]{len(summary['violations'])} constraint violations[/] ({dict(kinds)}); "
                  f"run `fictionworld validate {out_dir}` for the list")  # fmt: skip
        raise typer.Exit(1)


def _bar(transient: bool = False):
    """A progress bar on stderr: stage, bar, done/total, time elapsed (left on screen unless
    ``transient``). When stderr is no terminal, a line per stage and every few seconds instead
    (:func:`~fictionworld.progress.progress_bar`), and nothing for a transient one, so an error
    stays the one line there."""
    return progress_bar(
        err,
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        transient=transient,
    )


def _generate_graph(out_dir: Path, world_spec, seed: int, force: bool) -> None:
    """``generate --no-web``: the graph alone, in this process."""
    from fictionworld.generators import generate_world, plan

    if out_dir.exists() and any(out_dir.iterdir()) and not force:
        fail(f"{out_dir} exists and is not empty (use --force to overwrite)")
    steps = plan(world_spec.counts())
    t0 = time.perf_counter()
    with _bar() as progress:
        task = progress.add_task("generating", total=len(steps) + 2)

        def step(name: str) -> None:
            progress.update(task, description=f"generating: {name}")
            progress.advance(task)

        world = generate_world(world_spec, seed, progress=step)
        progress.update(task, description="saving")
        try:
            world.save(out_dir, overwrite=force, web=False)
        except FileExistsError as exc:
            fail(str(exc))
        progress.update(task, description="done", completed=progress.tasks[0].total)
    dt = time.perf_counter() - t0
    out.print(
        f"world [bold]{out_dir}[/]: {len(world.entities):,} entities, {len(world.facts):,} facts, "
        f"hash {world.world_hash[:16]} ({dt:.1f} s)",
        highlight=False,
    )


def validate(
    world_dir: Annotated[Path, typer.Argument(help="World directory.")],
    limit: Annotated[int, typer.Option(help="List at most this many violations per kind (>= 1).", min=1)] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    verify_hash: Annotated[
        bool,
        typer.Option(
            "--verify-hash/--no-verify-hash",
            help="Refuse content that differs from the manifest hash, or web files that differ from web.json.",
        ),
    ] = True,
    workers: Annotated[int | None, workers_option("checking")] = None,
    use_ray: Annotated[bool, ray_option("Check")] = False,
    address: Annotated[str | None, address_option("check", "the world")] = None,
) -> None:
    """Check every constraint; exit 1 and list the violations if there are any, else 0.

    The world is read a few predicates at a time, in tasks over local processes (or Ray with
    --ray), so a world of any size is checked in bounded memory; the content hash is computed
    a column at a time, and each file of the web (pages, index, lexicon) against the size and
    digest its web.json records. Use --no-verify-hash to check a world whose Parquet files were
    edited by hand."""
    from fictionworld.check.stream import check_world_dir
    from fictionworld.storage import WorldFormatError
    from fictionworld.streaming import SavedWorld, stream_world_hash
    from fictionworld.web.pages import WebError
    from fictionworld.web.web_files import WEB_JSON, verify_web

    web_files = None  # whether the web's files were checked against digests (None: no web, or not asked)

    with _bar(transient=True) as progress:
        task = progress.add_task(f"reading {world_dir}", total=None)
        try:
            saved = SavedWorld(world_dir)
            if verify_hash:
                progress.update(task, description="verifying the content hash")
                if stream_world_hash(world_dir) != saved.manifest["world_hash"]:
                    fail(f"{world_dir}: content does not match the manifest's world_hash (modified or corrupt)")
                if (world_dir / WEB_JSON).exists():
                    progress.update(task, description="verifying the web's files")
                    web_files = verify_web(world_dir, lambda done, total: progress.update(task, completed=done, total=total),
                                           world_hash=saved.manifest["world_hash"])  # fmt: skip

            def step(stage: str, done: int, total: int) -> None:
                progress.update(task, description=stage, completed=done, total=total)

            violations = check_world_dir(
                world_dir, limit_per_kind=limit, workers=workers, use_ray=use_ray or bool(address), address=address,
                progress=step,
            )  # fmt: skip
        except (WorldFormatError, WebError) as exc:
            fail(str(exc))
    n_ent, n_facts = saved.manifest["counts"]["entities"], saved.manifest["counts"]["facts"]
    if as_json:
        print(
            json.dumps(
                {
                    "world": str(world_dir),
                    "world_hash": saved.manifest["world_hash"],
                    "ok": not violations,
                    "web_files_verified": web_files,
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
                f"[green]✓[/] {world_dir}: {n_ent:,} entities, {n_facts:,} facts, no violations",
                highlight=False,
            )
    raise typer.Exit(1 if violations else 0)


def stats(
    world_dir: Annotated[Path, typer.Argument(help="World directory.")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Counts per entity type and predicate, and a degree summary."""
    from fictionworld.schema import RELATIONS

    with stages(f"loading {world_dir}") as say:
        world = load_world_dir(world_dir)
        say("counting entities, facts and degrees")
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


def index(
    path: Annotated[Path, typer.Argument(help="World directory.")],
    force: Annotated[bool, typer.Option("--force", help="Rebuild even if the world has a web.")] = False,
) -> None:
    """Render a saved world's pages and build its search index (pages.arrow, index/)."""
    from fictionworld.web import Web

    world = load_world_dir(path)
    if (path / "web.json").exists() and not force:
        fail(f"{path} already has a web (use --force to rebuild)", 1)
    t0 = time.perf_counter()
    with progress_bar(err, SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn()) as progress:
        task = progress.add_task("rendering", total=None)
        web = Web.build(world, progress=lambda s: progress.update(task, description=s))
        progress.update(task, description="saving")
        web.save(path)
    out.print(f"web of [bold]{path}[/]: {len(web.pages):,} pages ({time.perf_counter() - t0:.1f} s)", highlight=False)


def search(
    path: Annotated[Path, typer.Argument(help="World directory.")],
    query: Annotated[str, typer.Argument(help="What to search for.")],
    k: Annotated[
        int | None,
        typer.Option(
            "--k", help=f"Results per page, 1 to {MAX_K} (default: the knobs' results_per_page).", min=1, max=MAX_K
        ),
    ] = None,
    page: Annotated[int, typer.Option(help=f"Result page, 1-based: 1 to {MAX_PAGE}.", min=1, max=MAX_PAGE)] = 1,
    knob: KnobOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    world_model: WorldModelOption = "template",
    world_model_url: WorldModelUrlOption = None,
    world_model_name: WorldModelNameOption = None,
    world_model_api: WorldModelApiOption = None,
) -> None:
    """Search a world's web; prints results as agents see them ([n] URL / Title / Snippet / Date)."""
    from fictionworld.web import WebError, format_results

    knobs = parse_knobs(knob)
    config = world_model_config(world_model, world_model_url, world_model_name, world_model_api)
    web = served_web(path, config)
    try:
        results = web.search(query, k, page, knobs)
    except WebError as exc:
        fail(str(exc))
    if as_json:
        print(json.dumps([r.model_dump(mode="json") for r in results], indent=2, ensure_ascii=False))
    else:
        print(format_results(query, results, (page - 1) * (k or knobs.results_per_page)))


def open_cmd(
    path: Annotated[Path, typer.Argument(help="World directory.")],
    url: Annotated[str, typer.Argument(help="Page URL (directories take ?page=N).")],
    knob: KnobOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    world_model: WorldModelOption = "template",
    world_model_url: WorldModelUrlOption = None,
    world_model_name: WorldModelNameOption = None,
    world_model_api: WorldModelApiOption = None,
) -> None:
    """Open a page of a world's web and print it as Markdown. Exit 1 if there is no such page."""
    from fictionworld.web import PageNotFound, WebError

    knobs = parse_knobs(knob)
    config = world_model_config(world_model, world_model_url, world_model_name, world_model_api)
    web = served_web(path, config)
    try:
        page = web.open(url, knobs)
    except WebError as exc:
        fail(str(exc))
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


def spec_cmd(entities: Annotated[int, entities_option("Target number of entities")] = 10_000) -> None:
    """Print the default world spec as YAML (a starting point for your own)."""
    from fictionworld.spec import default_spec

    sys.stdout.write(default_spec(entities).to_yaml())


def register(app: typer.Typer) -> None:
    """Adds the world and web commands to ``app``."""
    for command in (generate, validate, stats, index, search):
        app.command()(command)
    app.command("open")(open_cmd)
    app.command("spec")(spec_cmd)
