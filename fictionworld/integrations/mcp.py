"""The MCP face of a world: the env's ``search`` and ``open`` tools on the official MCP SDK
(``mcp`` 2.x, :class:`~mcp.server.mcpserver.MCPServer`), over stdio or streamable HTTP.

>>> service = WorldService.open("worlds/demo")                          # doctest: +SKIP
>>> server = build_mcp_server(service)            # an MCPServer: mount it, or test it in process
>>> run_mcp(service, transport="streamable-http", port=8001)   # http://127.0.0.1:8001/mcp

- **Schemas**: each tool's ``inputSchema`` and description are the env's
  (:data:`fictionworld.env.tools.TOOLS`), so an agent trained on the env sees the same tools.
- **Results**: the content is one text block, exactly the text ``SearchEnv`` shows for the call;
  ``structuredContent`` is the service's JSON (``status``, ``text``, ``fault``, ``results`` or
  ``page``, ``session``, ``call``), with no ``outputSchema`` declared (mcp 2.0 would check an
  error result against it too). A page not found (``not_found``) and an injected fault
  (``fault``) are observations the agent reads and acts on, as in the env: normal results. A
  call the env refuses (``error``: a malformed URL, a blank query, a page out of range) and a
  request over a limit (:class:`~fictionworld.env.service.RequestError`) are error results
  (``isError``) whose one line says why.
- **Sessions**: faults are drawn per session, in call order, as the env's episode draws them
  (see :mod:`fictionworld.env.service`). A call names its session, most specific first:

  1. ``_meta`` ``{"fictionworld/session": id, "fictionworld/seed": n}`` on the request (the
     seed is optional: by default it comes from the id). Any client, any transport: the way
     to replay an episode, and the only per-client session on 2026-07-28 (stateless)
     connections, which carry no session of their own.
  2. The transport's session (``Mcp-Session-Id``, streamable HTTP on a handshake-era
     connection), seeded from its (random) id.
  3. Otherwise one session per server instance, seeded ``seed`` (default 0, as the env's
     episode ``reset(seed=0)``): over stdio that is the one client of the process, so a fresh
     server replays its faults exactly.

- **Transport sessions are bounded** (streamable HTTP, :class:`SessionCap`): the SDK keeps a
  handshake session until the client ends it, so clients that never do would fill the memory.
  ``run_mcp`` frees a session ``session_idle_s`` after its last request (the SDK's own idle
  timeout) and holds at most ``max_sessions`` at once: a request that would open one more is
  answered 503 with ``Retry-After`` and a JSON-RPC error saying why.
"""

from __future__ import annotations

import contextlib
import copy
import json
import signal
import sys
import threading
import time
import uuid
from collections import OrderedDict

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, TextContent

from fictionworld.env.service import RequestError, WorldService
from fictionworld.env.tools import TOOLS

__all__ = ["build_mcp_server", "run_mcp", "SessionCap", "SESSION_META", "SEED_META"]

SESSION_META = "fictionworld/session"
SEED_META = "fictionworld/seed"


def build_mcp_server(service: WorldService, *, name: str = "fictionworld", seed: int = 0) -> MCPServer:
    """An MCP server with the env's ``search`` and ``open`` tools over ``service``; ``seed``
    seeds the faults of the server's own session (used when a call names none)."""
    default_session = f"mcp-{uuid.uuid4().hex[:16]}"

    def session_of(ctx: Context) -> tuple[str, int | None]:
        meta = ctx.request_context.meta or {}
        if SESSION_META in meta:
            s, n = meta[SESSION_META], meta.get(SEED_META)
            if not isinstance(s, str) or n is not None and (type(n) is not int or not 0 <= n < 2**63):
                raise RequestError(
                    f"_meta {SESSION_META} must be a string and {SEED_META} an integer from 0 to 2**63-1"
                )
            return s, n
        headers = getattr(ctx.request_context.request, "headers", None) or {}  # HTTP only (mcp 2.0 has no ctx.headers)
        transport_session = headers.get("mcp-session-id")
        return (f"{default_session}/{transport_session}", None) if transport_session else (default_session, seed)

    def answer(call, ctx: Context, **args) -> CallToolResult:
        try:
            session, session_seed = session_of(ctx)
            res = call(**args, session=session, seed=session_seed)
        except RequestError as exc:
            return CallToolResult(content=[TextContent(type="text", text=f"Error: {exc}")], is_error=True)
        content = [TextContent(type="text", text=res["text"])]
        if res["status"] == "error":  # the env's one line, "Error: …"
            return CallToolResult(content=content, is_error=True)
        return CallToolResult(content=content, structured_content=res)

    def search(query: str, ctx: Context, page: int = 1) -> CallToolResult:
        return answer(service.search, ctx, query=query, page=page)

    def open_url(url: str, ctx: Context) -> CallToolResult:
        return answer(service.open_url, ctx, url=url)

    tools = []
    for name_, fn in (("search", search), ("open", open_url)):
        spec = TOOLS[name_]["function"]
        tool = Tool.from_function(fn, name=name_, description=spec["description"])
        # The env's schema, as is; the env's own checks (a page below 1, …) answer in its words.
        tools.append(tool.model_copy(update={"parameters": copy.deepcopy(spec["parameters"])}))
    return MCPServer(name, tools=tools, log_level="WARNING")


def run_mcp(service: WorldService, *, transport: str, host: str = "127.0.0.1", port: int = 8001,
            seed: int = 0, max_sessions: int = 1024, session_idle_s: float = 600.0) -> None:  # fmt: skip
    """Serves ``service`` over MCP until the client leaves (stdio) or SIGTERM / Ctrl-C
    (streamable HTTP at ``http://host:port/mcp``; port 0: any free port; the address is printed
    on stderr; at most ``max_sessions`` transport sessions, each freed ``session_idle_s`` after
    its last request; the connections guarded as ``fictionworld serve``'s, by the service's
    limits). Raises OSError when the port cannot be bound."""
    server = build_mcp_server(service, seed=seed)
    if transport == "stdio":
        with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C: stop, without a traceback
            server.run("stdio")
        return
    if transport != "streamable-http":
        raise ValueError(f"transport must be stdio or streamable-http, not {transport!r}")
    import anyio
    import uvicorn

    from fictionworld.integrations.server import bind, uvicorn_config

    try:
        sock = bind(host, port)
    except OSError as exc:
        raise OSError(exc.errno, f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    shown = f"[{host}]" if ":" in host else host
    print(f"fictionworld mcp: http://{shown}:{sock.getsockname()[1]}/mcp serving {service.directory} "
          f"(world {service.web.world.world_hash[:12]})", file=sys.stderr, flush=True)  # fmt: skip
    app = server.streamable_http_app(host=host)
    server.session_manager.session_idle_timeout = session_idle_s  # read as each session starts
    app = SessionCap(app, max_sessions=max_sessions, idle_s=session_idle_s)
    # uvicorn stops gracefully on SIGTERM / SIGINT, then sends the signal again to the handler it
    # found: make that one a no-op, so the process ends with 0 (as `serve` does), not killed.
    main = threading.current_thread() is threading.main_thread()
    found = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGTERM, signal.SIGINT)} if main else {}
    try:
        anyio.run(uvicorn.Server(uvicorn_config(app, service.limits, lifespan="auto")).serve, [sock])
    finally:
        for sig, handler in found.items():
            signal.signal(sig, handler)


class SessionCap:
    """ASGI middleware over the SDK's streamable-HTTP app: counts the handshake-era sessions it
    opens (the ``Mcp-Session-Id`` of a response to a request that named none) and refuses a
    request that would open one past ``max_sessions`` (503, ``Retry-After``, a JSON-RPC error).
    A session stops counting when the client ends it (DELETE) or ``idle_s`` after its last
    request, when the SDK's idle timeout (which the caller sets to ``idle_s``) frees it."""

    def __init__(self, app, *, max_sessions: int, idle_s: float):
        self.app, self.max_sessions, self.idle_s = app, max_sessions, idle_s
        self.sessions: OrderedDict[str, float] = OrderedDict()  # id -> its last request's start, oldest first

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
        from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
        from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        now = time.monotonic()
        while self.sessions and next(iter(self.sessions.values())) < now - self.idle_s:
            self.sessions.popitem(last=False)  # (the SDK has freed it)
        session = headers.get(MCP_SESSION_ID_HEADER.lower())
        if session is not None:
            if session in self.sessions:
                self.sessions[session] = now
                self.sessions.move_to_end(session)
            status = [0]

            async def watch_end(message):
                if message["type"] == "http.response.start":
                    status[0] = message["status"]
                await send(message)

            await self.app(scope, receive, watch_end)
            if (scope["method"] == "DELETE" and 200 <= status[0] < 300) or status[0] == 404:
                self.sessions.pop(session, None)
            return
        version = headers.get(MCP_PROTOCOL_VERSION_HEADER.lower())
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:  # the stateless protocol
            return await self.app(scope, receive, send)
        if len(self.sessions) >= self.max_sessions:
            return await _refuse(send, f"too many MCP sessions open ({len(self.sessions):,}, the most this server "
                                       f"holds): end one (DELETE), or retry once idle ones expire "
                                       f"({self.idle_s:g} s after their last request)")  # fmt: skip

        async def watch_new(message):
            if message["type"] == "http.response.start":
                for k, v in message.get("headers", ()):
                    if k.decode("latin-1").lower() == MCP_SESSION_ID_HEADER.lower():
                        self.sessions[v.decode("latin-1")] = time.monotonic()
            await send(message)

        await self.app(scope, receive, watch_new)


async def _refuse(send, message: str) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": message}}).encode()
    await send({"type": "http.response.start", "status": 503, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), (b"retry-after", b"1")]})  # fmt: skip
    await send({"type": "http.response.body", "body": body})
