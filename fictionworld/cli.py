"""The ``fictionworld`` command line: a thin layer over the library.

Every command fails with one ``error: ...`` line per problem and a non-zero exit (2: bad input,
1: the work itself failed), never a traceback: :class:`_Guarded` turns the project's errors
(and file-system errors) that reach it into such lines. An unexpected exception is reported in
one line too; set ``FICTIONWORLD_DEBUG=1`` to see its traceback."""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from typer.core import TyperGroup

DEBUG_ENV = "FICTIONWORLD_DEBUG"  # set to 1: unexpected errors show their traceback
_PROJECT_PACKAGES = ("fictionworld", "rollout", "generators")
# the command-line framework's own signals and usage errors (typer reports those itself)
_CLI_SIGNALS = (typer.Exit, typer.Abort, *[c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"])

# typer may ship its own copy of click: take its exception classes from typer itself
_click_exceptions = sys.modules[typer.BadParameter.__module__]
_ClickException = _click_exceptions.ClickException
_NoArgsIsHelp = getattr(_click_exceptions, "NoArgsIsHelpError", None)

out = Console()
err = Console(stderr=True)


def _error_lines(lines: list[str]) -> None:
    for line in lines:
        err.print(f"[bold red]error:[/] {escape(line)}", highlight=False, soft_wrap=True)


def _fail(message: str, code: int = 2) -> NoReturn:
    """One ``error:`` line per line of ``message``, then exit with ``code``."""
    _error_lines(message.splitlines() or [message])
    raise typer.Exit(code)


def _warn(message: str) -> None:
    err.print(f"[yellow]warning:[/] {escape(message)}", highlight=False, soft_wrap=True)


def _explain(exc: Exception) -> tuple[list[str], int]:
    """What went wrong, in words, and the exit code (2: bad input, 1: the work failed)."""
    from pydantic import ValidationError

    from fictionworld.errors import problem_lines

    if isinstance(exc, ValidationError):
        return problem_lines(exc), 2
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return [f"{where}{exc.strerror}" if exc.strerror else str(exc) or type(exc).__name__], 2
    if isinstance(exc, MemoryError):
        return ["out of memory"], 1
    if isinstance(exc, UnicodeDecodeError):
        return [f"a file that should be text (UTF-8) is not: {exc.reason} at byte {exc.start}"], 2
    if type(exc).__module__.split(".")[0] in _PROJECT_PACKAGES:
        return str(exc).splitlines() or [type(exc).__name__], 1 if isinstance(exc, RuntimeError) else 2
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return [f"unexpected {type(exc).__name__}{': ' + first if first else ''} (set {DEBUG_ENV}=1 for the traceback)"], 1


def _empty_value(args: list[str]) -> str | None:
    """What is wrong if an option or argument in ``args`` is empty: no path, name, number or
    query may be (an empty path would silently mean the current directory)."""
    for i, arg in enumerate(args):
        if arg.startswith("--") and arg.endswith("=") and len(arg) > 3:
            return f"{arg[:-1]}: empty value; give a value or leave the option out"
        if not arg.strip():
            before = args[i - 1] if i else ""
            if before.startswith("-") and "=" not in before:
                return f"{before}: empty value; give a value or leave the option out"
            return 'an argument is empty (""); give a value'
    return None


class _Guarded(TyperGroup):
    """The app's command group: an empty value is refused before any command runs, and an error
    that escapes a command becomes ``error:`` lines and an exit code instead of a traceback
    (unless ``FICTIONWORLD_DEBUG`` is set)."""

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        empty = _empty_value(args)
        if empty:
            _fail(empty)
        return super().parse_args(ctx, args)

    def main(self, *args, standalone_mode: bool = True, **kwargs):
        """Usage errors (a bad option value, a missing argument) as one ``error:`` line and a hint,
        like every other error, instead of the framework's box."""
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        try:
            code = super().main(*args, standalone_mode=False, **kwargs)
        except _ClickException as e:
            if _NoArgsIsHelp is not None and isinstance(e, _NoArgsIsHelp):
                e.show()
                sys.exit(e.exit_code)
            _error_lines(e.format_message().splitlines() or [type(e).__name__])
            if getattr(e, "ctx", None) is not None:
                err.print(f"Try '{e.ctx.command_path} --help' for help.", highlight=False, soft_wrap=True)
            sys.exit(e.exit_code)
        except typer.Abort:
            _error_lines(["aborted"])
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except _CLI_SIGNALS:
            raise
        except Exception as exc:
            if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
                raise
            lines, code = _explain(exc)
            _error_lines(lines)
            raise typer.Exit(code) from None


app = typer.Typer(
    cls=_Guarded,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Invent consistent fictional worlds and turn them into training grounds for search agents.",
)

MIN_ENTITIES, MAX_ENTITIES = 50, 10_000_000  # every command that makes a world; the spec's floors give >= 161
MAX_K = MAX_PAGE = 100  # Web.search's limits on results per page and on the page number
MAX_TASKS = 100_000  # tasks a command makes at once


def _entities_option(what: str) -> typer.models.OptionInfo:
    return typer.Option(help=f"{what} ({MIN_ENTITIES:,} to {MAX_ENTITIES:,}).", min=MIN_ENTITIES, max=MAX_ENTITIES)


def _positive(value: float | None) -> float | None:
    """Typer callback: a number of seconds (or a rate) that must be above zero."""
    if value is not None and not value > 0:
        raise typer.BadParameter(f"must be > 0, not {value:g}")
    return value


def _url(value: str | None) -> str | None:
    """Typer callback: an http(s) endpoint."""
    if value is not None and not value.startswith(("http://", "https://")):
        raise typer.BadParameter(f"must be an http:// or https:// URL, not {value!r}")
    return value


def _probability(value: float | None) -> float | None:
    """Typer callback: a share in (0, 1]."""
    if value is not None and not 0 < value <= 1:
        raise typer.BadParameter(f"must be > 0 and <= 1, not {value:g}")
    return value


def _check_output(path: Path, option: str = "--out", *, directory: bool = False) -> None:
    """Refuses, before any work, an output path of the wrong kind (a directory where a file is
    written, or the other way round) or one below a file."""
    if directory and path.exists() and not path.is_dir():
        _fail(f"{option} {path}: is a file, not a directory")
    if not directory and path.is_dir():
        _fail(f"{option} {path}: is a directory; give a file name")
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if parent.exists() and not parent.is_dir():
        _fail(f"{option} {path}: {parent} is a file, not a directory")


_WEB_STAGES = 6  # articles, organisation sites, news, directories, perturbation layers, index


def _load(path: Path, verify: bool = True):
    from fictionworld.storage import WorldFormatError, load_world

    try:
        return load_world(path, verify=verify)
    except WorldFormatError as exc:
        _fail(str(exc))


def _read_spec(path: Path, entities: int):
    """A spec file scaled to ``entities``, or one ``error:`` line per problem in it."""
    import yaml
    from pydantic import ValidationError

    from fictionworld.errors import problem_lines
    from fictionworld.spec import WorldSpec

    try:
        return WorldSpec.from_yaml(path).scaled(entities)
    except OSError as exc:  # missing, a directory, unreadable
        _fail(f"--spec {path}: {exc.strerror or exc}")
    except UnicodeDecodeError:
        _fail(f"--spec {path}: not a text file")
    except yaml.YAMLError as exc:
        _fail(f"--spec {path}: not valid YAML ({' '.join(str(exc).split())[:200]})")
    except ValidationError as exc:
        _fail("\n".join(f"--spec {path}: {line}" for line in problem_lines(exc, what="spec field", model=WorldSpec)))


@app.command()
def generate(
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Directory to write the world to.")],
    seed: Annotated[int, typer.Option(help="Seed (>= 0): same seed and spec, same world.", min=0)] = 0,
    entities: Annotated[int, _entities_option("Target number of entities (scales the spec)")] = 10_000,
    spec: Annotated[Path | None, typer.Option(help="World spec YAML (default: the shipped spec).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing world directory.")] = False,
    web: Annotated[bool, typer.Option("--web/--no-web", help="Render the pages and build the search index.")] = True,
) -> None:
    """Generate a world (and its web) and save it in format fictionworld/1."""
    from fictionworld.spec import default_spec
    from generators import generate_world, plan

    _check_output(out_dir, directory=True)
    world_spec = _read_spec(spec, entities) if spec is not None else default_spec(entities)
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
    limit: Annotated[int, typer.Option(help="List at most this many violations per kind (>= 1).", min=1)] = 20,
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
    """Knobs from ``--knob NAME=VALUE`` items (a list knob takes comma-separated values), or
    one ``error: knob 'NAME': ...`` line per problem, listing the valid knobs for an unknown one."""
    from pydantic import ValidationError

    from fictionworld.errors import problem_lines
    from fictionworld.knobs import Knobs

    values: dict[str, object] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            valid = ", ".join(sorted(Knobs.model_fields))
            _fail(f"--knob {item!r}: expected NAME=VALUE, e.g. conflict_rate=0.3; valid knobs: {valid}")
        key, value = key.strip(), value.strip()
        values[key] = tuple(v.strip() for v in value.split(",") if v.strip()) if key == "fault_kinds" else value
    try:
        return Knobs.model_validate(values)
    except ValidationError as exc:
        _fail("\n".join(problem_lines(exc, what="knob", model=Knobs)))


KnobOption = Annotated[
    list[str] | None,
    typer.Option(
        "--knob",
        help="Perturbation knob NAME=VALUE (repeatable), e.g. --knob conflict_rate=0.3; "
        "fault_kinds takes a comma-separated list.",
    ),
]


WorldModelOption = Annotated[
    str, typer.Option("--world-model", help="Who writes pages and snippets: template, or sglang (an LLM, verified).")
]
BaseUrlOption = Annotated[
    str | None,
    typer.Option("--base-url", help="sglang world model: server, e.g. http://127.0.0.1:30000/v1", callback=_url),
]
ModelOption = Annotated[str, typer.Option("--model", help="sglang world model: served model name.")]
ApiOption = Annotated[str, typer.Option("--api", help="sglang world model: chat (/v1/chat/completions) or generate.")]


def _world_model_config(kind: str, base_url: str | None, model: str, api: str = "chat", **extra):
    """A WorldModelConfig from command-line options, or a clear error."""
    from pydantic import ValidationError

    from fictionworld.errors import problem_lines
    from fictionworld.worldmodel.config import WorldModelConfig

    if kind not in ("template", "sglang"):
        _fail(f"--world-model must be template or sglang, not {kind!r}")
    if kind == "template" and base_url:
        _fail("--base-url is only for --world-model sglang")
    if kind == "sglang" and not base_url:
        _fail("--world-model sglang needs --base-url (the SGLang server, e.g. http://127.0.0.1:30000/v1)")
    try:
        return WorldModelConfig(kind=kind, base_url=base_url, model=model, api=api, **extra)
    except ValidationError as exc:
        _fail("\n".join(problem_lines(exc, what="world model setting", model=WorldModelConfig)))


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
        int | None,
        typer.Option(
            "--k", help=f"Results per page, 1 to {MAX_K} (default: the knobs' results_per_page).", min=1, max=MAX_K
        ),
    ] = None,
    page: Annotated[int, typer.Option(help=f"Result page, 1-based: 1 to {MAX_PAGE}.", min=1, max=MAX_PAGE)] = 1,
    knob: KnobOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    world_model: WorldModelOption = "template",
    base_url: BaseUrlOption = None,
    model: ModelOption = "default",
    api: ApiOption = "chat",
) -> None:
    """Search a world's web; prints results as agents see them ([n] URL / Title / Snippet / Date)."""
    from fictionworld.web import WebError, format_results

    knobs = _knobs(knob)
    web = _served_web(path, _world_model_config(world_model, base_url, model, api))
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

    knobs = _knobs(knob)
    web = _served_web(path, _world_model_config(world_model, base_url, model, api))
    try:
        page = web.open(url, knobs)
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
def spec_cmd(entities: Annotated[int, _entities_option("Target number of entities")] = 10_000) -> None:
    """Print the default world spec as YAML (a starting point for your own)."""
    from fictionworld.spec import default_spec

    sys.stdout.write(default_spec(entities).to_yaml())


def load_commands() -> typer.Typer:
    """The app with every command registered (the other modules add theirs to it)."""
    import fictionworld.cli_rollout  # noqa: F401  (registers `rollout`, `export`, `demo`, `train-demo`)
    import fictionworld.cli_tasks  # noqa: F401  (registers `tasks` and `score`)
    import fictionworld.cli_worldmodel  # noqa: F401  (registers `fidelity` and `render-cache`)
    from fictionworld import cli  # the importable module's app, also when run as __main__

    return cli.app


def main() -> None:
    load_commands()()


if __name__ == "__main__":
    main()
