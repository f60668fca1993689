"""What the command modules share: the app's command group and its error guard, option types and
checks, progress on stderr, and loading a saved world (and its web) for a command. Nothing here
registers a command: :mod:`fictionworld.cli` makes the app with :func:`new_app` and adds each
module's commands to it.

Every command fails with one ``error: ...`` line per problem and a non-zero exit (2: bad input,
1: the work itself failed), never a traceback: :class:`_Guarded` turns usage errors and the
project's errors (and file-system errors) that reach it into such lines. An unexpected exception
is reported in one line too; set ``FICTIONWORLD_DEBUG=1`` to see its traceback."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console, ConsoleDimensions
from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from typer.core import TyperGroup

DEBUG_ENV = "FICTIONWORLD_DEBUG"  # set to 1: unexpected errors show their traceback
# the command-line framework's own signals and usage errors (typer reports those itself)

# typer may ship its own copy of click: take its exception classes from typer itself
_click_exceptions = sys.modules[typer.BadParameter.__module__]
_ClickException = _click_exceptions.ClickException
_NoArgsIsHelp = getattr(_click_exceptions, "NoArgsIsHelpError", None)
_CLI_SIGNALS = (typer.Exit, typer.Abort, _ClickException)  # typer reports these itself

UNWRAPPED = 10_000  # columns of a console that is no terminal: its lines are never cut


class _Console(Console):
    """rich's console, but one whose file is no terminal (a log file, a pipe) does not wrap at
    80 columns (rich's default there, or the width of a terminal the command was started from):
    a line in a file is as long as it is, so hashes and paths stay whole and greppable. Tables
    there take their natural width. (A width given to it is kept; COLUMNS, which rich reads into
    its width, is a terminal's.)"""

    def __init__(self, *args, width: int | None = None, **kwargs):
        super().__init__(*args, width=width, **kwargs)
        self._asked_width = width

    @property
    def size(self) -> ConsoleDimensions:
        size = super().size
        if self._asked_width is not None or self.is_terminal:
            return size
        return ConsoleDimensions(max(size.width, UNWRAPPED), size.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self._width, self._height = new_size
        self._asked_width = new_size[0]


out = _Console()
err = _Console(stderr=True)


def plain_text(renderable) -> str:
    """``renderable`` (a table) as plain text, as a file that is no terminal gets it."""
    import io

    console = _Console(file=io.StringIO(), width=None, color_system=None, force_terminal=False)
    console.print(renderable)
    return console.file.getvalue()


def error_lines(lines: list[str]) -> None:
    for line in lines:
        err.print(f"[bold red]error:[/] {escape(line)}", highlight=False, soft_wrap=True)


def fail(message: str, code: int = 2) -> NoReturn:
    """One ``error:`` line per line of ``message``, then exit with ``code``."""
    error_lines(message.splitlines() or [message])
    raise typer.Exit(code)


INTERRUPTED = 130  # the exit code of a command stopped by Ctrl-C (128 + SIGINT), as shells give it


def interrupted(what: str, again: list[str] | None = None) -> NoReturn:
    """A command stopped by Ctrl-C: one ``error:`` line saying what stopped and, with ``again``
    (the arguments after ``fictionworld``), the command that resumes it; exit 130. A second
    Ctrl-C from here on is ignored: there is nothing left to stop, and it would only print a
    traceback from wherever the interpreter was on its way out."""
    import shlex
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    fail(what + (f"; resume with: fictionworld {shlex.join(again)}" if again else ""), INTERRUPTED)


def warn(message: str) -> None:
    err.print(f"[yellow]warning:[/] {escape(message)}", highlight=False, soft_wrap=True)


@contextmanager
def stages(first: str) -> Iterator[Callable[[str], None]]:
    """A spinner on stderr naming the stage a command is in, with the time elapsed, for work
    that reports no finer progress. Yields ``say(text)``, which moves on to the next stage.
    Transient: stdout is untouched, and nothing is left on stderr (nor shown when it is no terminal)."""
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not err.is_interactive,  # else rich ends with an empty line
    ) as progress:
        task = progress.add_task(first, total=None)
        yield lambda text: progress.update(task, description=text)


def explain_error(exc: Exception) -> tuple[list[str], int]:
    """What went wrong, in words, and the exit code (2: bad input, 1: the work failed)."""
    from pydantic import ValidationError

    from fictionworld.errors import FictionWorldError, problem_lines

    if isinstance(exc, ValidationError):
        return problem_lines(exc), 2
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return [f"{where}{exc.strerror}" if exc.strerror else str(exc) or type(exc).__name__], 2
    if isinstance(exc, MemoryError):
        return ["out of memory"], 1
    if isinstance(exc, UnicodeDecodeError):
        return [f"a file that should be text (UTF-8) is not: {exc.reason} at byte {exc.start}"], 2
    if isinstance(exc, FictionWorldError):
        return str(exc).splitlines() or [type(exc).__name__], exc.exit_code
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
            fail(empty)
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
            error_lines(e.format_message().splitlines() or [type(e).__name__])
            if getattr(e, "ctx", None) is not None:
                err.print(f"Try '{e.ctx.command_path} --help' for help.", highlight=False, soft_wrap=True)
            sys.exit(e.exit_code)
        except typer.Abort:
            error_lines(["aborted"])
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except _CLI_SIGNALS:
            raise
        except BaseException as exc:  # (a Rust extension's panic is no Exception, but an error all the same)
            from fictionworld.errors import is_native_panic

            debug = os.environ.get(DEBUG_ENV, "") not in ("", "0")
            if debug or not (isinstance(exc, Exception) or is_native_panic(exc)):
                raise
            lines, code = explain_error(exc)
            error_lines(lines)
            raise typer.Exit(code) from None


def new_app() -> typer.Typer:
    """An app with no commands yet, whose every error is an ``error:`` line (see :class:`_Guarded`)."""
    return typer.Typer(
        cls=_Guarded,
        add_completion=False,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        help="Invent consistent fictional worlds and turn them into training grounds for search agents.",
        epilog="Servers have one option each: --world-model-url (the sglang world model's SGLang server: search, "
        "open, fidelity, rollout), --agent-url (the openai agent's: rollout), --judge-url (the compat judge's: "
        "score).",
    )


MIN_ENTITIES, MAX_ENTITIES = 50, 10_000_000  # every command that makes a world; the spec's floors give >= 161
MAX_K = MAX_PAGE = 100  # Web.search's limits on results per page and on the page number
MAX_TASKS = 100_000  # tasks a command makes at once


def entities_option(what: str) -> typer.models.OptionInfo:
    return typer.Option(help=f"{what} ({MIN_ENTITIES:,} to {MAX_ENTITIES:,}).", min=MIN_ENTITIES, max=MAX_ENTITIES)


def workers_option(doing: str) -> typer.models.OptionInfo:
    """``--workers``: how many local processes (or Ray CPUs) do the work."""
    return typer.Option(help=f"Processes (or Ray CPUs) {doing}, 1 to 1024; default: every core.", min=1, max=1024)


def ray_option(doing: str) -> typer.models.OptionInfo:
    return typer.Option("--ray", help=f"{doing} as Ray tasks (a local cluster unless --address).")


def address_option(doing: str, sees: str) -> typer.models.OptionInfo:
    return typer.Option(help=f"Ray cluster to {doing} on, e.g. 'auto' (implies --ray); every node must see {sees}.")


def positive(value: float | None) -> float | None:
    """Typer callback: a number of seconds (or a rate) that must be above zero."""
    if value is not None and not value > 0:
        raise typer.BadParameter(f"must be > 0, not {value:g}")
    return value


def http_url(value: str | None) -> str | None:
    """Typer callback: an http(s) endpoint."""
    if value is not None and not value.startswith(("http://", "https://")):
        raise typer.BadParameter(f"must be an http:// or https:// URL, not {value!r}")
    return value


def probability(value: float | None) -> float | None:
    """Typer callback: a share in (0, 1]."""
    if value is not None and not 0 < value <= 1:
        raise typer.BadParameter(f"must be > 0 and <= 1, not {value:g}")
    return value


def check_output(path: Path, option: str = "--out", *, directory: bool = False) -> None:
    """Refuses, before any work, an output path of the wrong kind (a directory where a file is
    written, or the other way round) or one below a file."""
    if directory and path.exists() and not path.is_dir():
        fail(f"{option} {path}: is a file, not a directory")
    if not directory and path.is_dir():
        fail(f"{option} {path}: is a directory; give a file name")
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if parent.exists() and not parent.is_dir():
        fail(f"{option} {path}: {parent} is a file, not a directory")


def load_world_dir(path: Path, verify: bool = True):
    from fictionworld.storage import WorldFormatError, load_world

    try:
        return load_world(path, verify=verify)
    except WorldFormatError as exc:
        fail(str(exc))


def saved_web(path: Path):
    """A saved world's web; built and saved into the directory the first time."""
    from fictionworld.web import Web, WebError

    world = load_world_dir(path)
    if not (path / "web.json").exists():
        err.print(f"{path} has no web yet: rendering pages and indexing (once)…", highlight=False)
        web = Web.build(world)
        web.save(path)
        world.web = web
    try:
        return world.web
    except WebError as exc:
        fail(f"{exc} (rebuild with `fictionworld index {path} --force`)")


def parse_knobs(items: list[str] | None):
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
            fail(f"--knob {item!r}: expected NAME=VALUE, e.g. conflict_rate=0.3; valid knobs: {valid}")
        key, value = key.strip(), value.strip()
        values[key] = tuple(v.strip() for v in value.split(",") if v.strip()) if key == "fault_kinds" else value
    try:
        return Knobs.model_validate(values)
    except ValidationError as exc:
        fail("\n".join(problem_lines(exc, what="knob", model=Knobs)))


KnobOption = Annotated[
    list[str] | None,
    typer.Option(
        "--knob",
        help="Perturbation knob NAME=VALUE (repeatable), e.g. --knob conflict_rate=0.3; "
        "fault_kinds takes a comma-separated list.",
    ),
]


# One option, one server. The sglang world model's server is --world-model-url everywhere; the
# openai agent's is --agent-url (rollout), the compat judge's --judge-url (score).
WorldModelOption = Annotated[
    str,
    typer.Option(
        "--world-model",
        help="Who writes pages and snippets: template, or sglang (an LLM on an SGLang server, verified).",
    ),
]
WorldModelUrlOption = Annotated[
    str | None,
    typer.Option(
        "--world-model-url",
        help="sglang world model: its SGLang server, e.g. http://127.0.0.1:30000/v1 (never the agent's or judge's).",
        callback=http_url,
    ),
]
WorldModelNameOption = Annotated[
    str | None, typer.Option("--world-model-name", help="sglang world model: served model name (default: default).")
]
WorldModelApiOption = Annotated[
    str | None,
    typer.Option("--world-model-api", help="sglang world model: chat (/v1/chat/completions, the default) or generate."),
]


def world_model_config(kind: str, url: str | None, name: str | None, api: str | None, **extra):
    """A WorldModelConfig from the --world-model options, or a clear error (a --world-model-*
    option given with the template world model would be silently ignored: it is an error)."""
    from pydantic import ValidationError

    from fictionworld.errors import problem_lines
    from fictionworld.worldmodel.config import WorldModelConfig

    if kind not in ("template", "sglang"):
        fail(f"--world-model must be template or sglang, not {kind!r}")
    if kind == "template":
        given = [flag for flag, v in (("--world-model-url", url), ("--world-model-name", name),
                                      ("--world-model-api", api)) if v is not None]  # fmt: skip
        if given:
            fail(f"{', '.join(given)}: only for --world-model sglang")
    if kind == "sglang" and not url:
        fail("--world-model sglang needs --world-model-url (its SGLang server, e.g. http://127.0.0.1:30000/v1)")
    try:
        return WorldModelConfig(kind=kind, base_url=url, model=name or "default", api=api or "chat", **extra)
    except ValidationError as exc:
        fail("\n".join(problem_lines(exc, what="world model setting", model=WorldModelConfig)))


def served_web(path: Path, config):
    """A saved world's web, served by ``config``'s world model."""
    web = saved_web(path)
    serve_with(web, config)
    return web


def serve_with(web, config) -> None:
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
