"""``fictionworld serve`` (HTTP: Search-R1 ``/retrieve``, ``/search``, ``/open``; or on Ray Serve)
and ``fictionworld mcp`` (the MCP tools over stdio or streamable HTTP), added by :func:`register`."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Annotated, Literal

import typer

from fictionworld.cli.common import KnobOption, fail, parse_knobs, warn
from fictionworld.extras import require

__all__ = ["register"]

DirArgument = Annotated[Path, typer.Argument(help="World directory (saved with its web).")]


def seconds_option(help: str) -> typer.models.OptionInfo:
    """A server's time limit in seconds: above 0, at most an hour."""
    return typer.Option(help=help, min=0.001, max=3600)


def held_option(help: str, least: int) -> typer.models.OptionInfo:
    """How many of something (connections, sessions) a server holds at once: ``least`` to a million."""
    return typer.Option(help=help, min=least, max=1_000_000)


HostOption = Annotated[
    str, typer.Option(help="Address to bind: loopback by default; anything else is reachable from outside (warned).")
]


PreloadOption = Annotated[
    bool,
    typer.Option(
        help="Each serving process maps the world's files into its page tables in the background once it "
        "starts (only what the page cache holds: nothing is read from disk), so searches stop paying a "
        "page fault per new part of the files (serve: GET /info says how it went).",
    ),
]


def _service(directory: Path, knobs: list[str] | None, limits=None, *, warm: bool = True, preload: bool = False):
    """The world service for ``directory``, or one ``error:`` line saying why it cannot open."""
    from fictionworld.env.service import WorldService
    from fictionworld.storage import WorldFormatError
    from fictionworld.web import WebError

    knob_values = parse_knobs(knobs) if knobs else None
    try:
        return WorldService.open(directory, knobs=knob_values, limits=limits, warm=warm, preload=preload)
    except (WorldFormatError, WebError, FileNotFoundError) as exc:
        fail(f"cannot serve {directory}: {exc}", code=1)


def _check_host(host: str) -> None:
    if not host.strip():
        fail("--host is empty: give an address to bind, e.g. 127.0.0.1")
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback:
        warn(f"binding {host}: the world is reachable from other machines (no authentication); "
             "bind 127.0.0.1 unless you mean it")  # fmt: skip


def serve(
    directory: DirArgument,
    host: HostOption = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port (0: any free port, printed at start).", min=0, max=65535)] = 8000,
    workers: Annotated[
        int, typer.Option(help="Worker processes, forked after the world is open (they share it).", min=1, max=256)
    ] = 1,  # fmt: skip
    knob: KnobOption = None,
    max_in_flight: Annotated[
        int,
        typer.Option(
            help="Requests a worker holds at once; more are answered 503 with Retry-After.", min=1, max=100_000
        ),
    ] = 64,  # fmt: skip
    max_queries: Annotated[int, typer.Option(help="Queries in one /retrieve batch.", min=1, max=100_000)] = 1024,
    max_topk: Annotated[int, typer.Option(help="Largest topk (and k) a request may ask for.", min=1, max=1000)] = 50,
    topk: Annotated[
        int, typer.Option(help="Passages per query when a /retrieve request gives no topk.", min=1, max=1000)
    ] = 3,  # fmt: skip
    timeout: Annotated[
        float,
        seconds_option(
            "Seconds a request may take before it is answered 504 (408 when its body was not all sent by then)."
        ),
    ] = 30.0,
    max_work: Annotated[
        float,
        seconds_option(
            "Seconds of search work one request may use (checked between queries and their words; 504 beyond)."
        ),
    ] = 10.0,
    search_threads: Annotated[
        int,
        typer.Option(help="Threads a worker searches on (its event loop stays free to read requests).", min=1, max=256),
    ] = 4,  # fmt: skip
    body_timeout: Annotated[
        float,
        seconds_option(
            "Seconds a request's body may take to arrive after its headers (408 beyond); a request counts "
            "towards --max-in-flight once its body has arrived."
        ),
    ] = 10.0,
    header_timeout: Annotated[
        float, seconds_option("Seconds a connection may take to send a request's headers (408 and closed beyond).")
    ] = 10.0,
    max_connections: Annotated[
        int,
        held_option(
            "Connections a worker holds (at most its open-file limit less 128); one more closes the one "
            "idle longest, or gets 503 when none is idle.",
            2,
        ),
    ] = 512,  # fmt: skip
    ray_serve: Annotated[
        bool,
        typer.Option(
            "--ray-serve",
            help="Deploy on Ray Serve instead (replicas on any node; the directory must be readable on every node).",
        ),
    ] = False,  # fmt: skip
    replicas: Annotated[int, typer.Option(help="--ray-serve: replicas of the deployment.", min=1, max=1024)] = 2,
    address: Annotated[
        str | None,
        typer.Option(help="--ray-serve: Ray cluster to join (auto: the running one; default: start a local one)."),
    ] = None,  # fmt: skip
    log_level: Annotated[
        Literal["critical", "error", "warning", "info", "debug"], typer.Option(help="uvicorn's log level.")
    ] = "warning",  # fmt: skip
    preload: PreloadOption = True,
) -> None:
    """Serve a world over HTTP: Search-R1's POST /retrieve (also SkyRL's single query), the env's
    POST /search and POST /open (with sessions that replay), GET /health, /info, /metrics, and
    OpenAPI docs at /docs. Stops cleanly on SIGTERM or Ctrl-C, answering what is in flight."""
    from fictionworld.env.service import Limits

    require("serve", "fictionworld serve")
    if replicas != 2 and not ray_serve or address is not None and not ray_serve:
        fail("--replicas and --address go with --ray-serve")
    _check_host(host)
    limits = Limits(max_in_flight=max_in_flight, max_queries=max_queries, max_topk=max_topk,
                    default_topk=min(topk, max_topk), request_timeout_s=timeout, max_work_s=max_work,
                    search_threads=search_threads, body_timeout_s=body_timeout, header_timeout_s=header_timeout,
                    max_connections=max_connections)  # fmt: skip
    if ray_serve:
        from fictionworld.integrations.ray_serve import run_ray_serve

        knob_values = parse_knobs(knob) if knob else None
        _service(directory, knob, limits, warm=False)  # fails here, with one line, before Ray starts
        raise typer.Exit(run_ray_serve(directory, host=host, port=port, replicas=replicas, address=address,
                                       knobs=knob_values, limits=limits, preload=preload))  # fmt: skip
    from fictionworld.integrations.server import run_server

    service = _service(directory, knob, limits, preload=preload)
    try:
        code = run_server(service, host=host, port=port, workers=workers, log_level=log_level)
    except OSError as exc:
        fail(str(exc), code=1)
    raise typer.Exit(code)


def mcp(
    directory: DirArgument,
    transport: Annotated[
        Literal["stdio", "streamable-http"], typer.Option(help="stdio, or streamable-http.")
    ] = "stdio",
    host: Annotated[
        str | None,
        typer.Option(
            help="streamable-http: address to bind (default 127.0.0.1; "
            "anything else is reachable from outside, warned)."
        ),
    ] = None,  # fmt: skip
    port: Annotated[
        int | None, typer.Option(help="streamable-http: TCP port (default 8001; 0: any free port).", min=0, max=65535)
    ] = None,  # fmt: skip
    seed: Annotated[
        int, typer.Option(help="Fault seed of the server's own session (calls naming no session in _meta).", min=0)
    ] = 0,
    knob: KnobOption = None,
    preload: PreloadOption = True,
    max_sessions: Annotated[
        int,
        held_option(
            "streamable-http: transport sessions held at once; a request that would open one more gets 503.", 1
        ),
    ] = 1024,  # fmt: skip
    session_idle: Annotated[
        float,
        typer.Option(
            help="streamable-http: seconds after its last request that a session is freed.", min=0.001, max=86_400
        ),
    ] = 600.0,  # fmt: skip
) -> None:
    """Serve a world's search and open tools over MCP (the official SDK), with the env's schemas."""
    require("serve", "fictionworld mcp")
    if transport == "stdio":
        if host is not None or port is not None:
            fail("--host and --port go with --transport streamable-http (stdio talks over stdin and stdout)")
    else:
        host = "127.0.0.1" if host is None else host
        _check_host(host)
    from fictionworld.integrations.mcp import run_mcp

    service = _service(directory, knob, preload=preload)
    service.start_preload()
    run_mcp(service, transport=transport, host=host or "127.0.0.1", port=8001 if port is None else port, seed=seed,
            max_sessions=max_sessions, session_idle_s=session_idle)  # fmt: skip


def register(app: typer.Typer) -> None:
    """Adds ``serve`` and ``mcp`` to ``app``."""
    app.command()(serve)
    app.command()(mcp)
