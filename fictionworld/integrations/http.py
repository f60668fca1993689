"""The HTTP face of a world: a FastAPI app over :class:`~fictionworld.env.service.WorldService`.

Routes (OpenAPI at ``/docs``):

- ``POST /retrieve``: Search-R1's protocol, ``{"queries": [str], "topk": int?, "return_scores":
  bool}`` → ``{"result": [[{"document": {"id", "contents", "url", "title", "date"}, "score"}]]}``
  (bare documents when ``return_scores`` is false, upstream's default). SkyRL's single
  ``{"query": str, …}`` is answered in the same shape, one inner list.
- ``POST /search``, ``POST /open``: the env's tools (``text`` as the env shows it, plus JSON);
  ``session`` / ``seed`` / ``call`` make faults replay (see the service). ``POST /sessions/end``.
- ``GET /health`` (200 once the world is open, 503 before and while draining), ``GET /info``,
  ``GET /metrics`` (Prometheus text, this worker's counters).

Every refusal is JSON ``{"error": "<one line>"}`` with a 4xx status (413 over a size limit, 422
a wrong shape or type, 400 malformed JSON), 503 with ``Retry-After`` when the worker already
holds ``max_in_flight`` requests, 504 past the time limit; never a traceback. Handlers run on
the event loop (a search takes about a millisecond: a thread hop would cost more than it saves),
so a worker answers one request at a time and queued ones wait, bounded by ``max_in_flight``.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections import Counter
from typing import Annotated

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, model_validator
from starlette.exceptions import HTTPException

from fictionworld.env.service import Deadline, Limits, RequestError, WorldService

__all__ = ["create_app", "RetrieveRequest", "SearchRequest", "OpenRequest", "EndSessionRequest"]

Seed = Annotated[StrictInt, Field(ge=0, lt=2**63, description="Fault seed of the session (default: from its id).")]


class RetrieveRequest(BaseModel):
    """Search-R1's request (``queries``), or SkyRL's (``query``); other keys are ignored, as
    upstream's server ignores them."""

    model_config = ConfigDict(extra="ignore")

    queries: list[StrictStr] | None = Field(None, description="Search-R1: the batch of queries.")
    query: StrictStr | None = Field(None, description="SkyRL: one query (answered as a batch of one).")
    topk: StrictInt | None = Field(None, description="Passages per query (null or 0: the server's default).")
    return_scores: StrictBool = Field(False, description="Wrap each document as {document, score}.")

    @model_validator(mode="after")
    def _one_form(self) -> RetrieveRequest:
        if (self.queries is None) == (self.query is None):
            raise ValueError("give either queries (a list of strings) or query (one string)")
        return self


class _Session(BaseModel):
    model_config = ConfigDict(extra="forbid")

    session: StrictStr | None = Field(None, description="Episode id: faults are drawn per session, in call order.")
    seed: Seed | None = None
    call: Annotated[StrictInt, Field(ge=0)] | None = Field(
        None, description="0-based number of this call in the session; given, no server state is used."
    )
    knobs: dict | None = Field(None, description="Knob overrides for this call (see GET /info for the defaults).")


class SearchRequest(_Session):
    query: StrictStr
    page: Annotated[StrictInt, Field(ge=1, le=100)] = 1
    k: StrictInt | None = Field(None, description="Results per page (default: the knobs' results_per_page).")


class OpenRequest(_Session):
    url: StrictStr


class EndSessionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    session: StrictStr
    seed: Seed | None = None


class _Stats:
    def __init__(self) -> None:
        self.requests: Counter[tuple[str, int]] = Counter()
        self.seconds: Counter[str] = Counter()
        self.queries = 0
        self.rejected: Counter[str] = Counter()
        self.in_flight = 0
        self.draining = False


def _json(status: int, content, headers: dict | None = None) -> Response:
    body = json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode()
    return Response(body, status_code=status, media_type="application/json", headers=headers)


def _error(status: int, message: str, headers: dict | None = None) -> Response:
    return _json(status, {"error": message}, headers)


class _Guard:
    """ASGI middleware: caps in-flight requests (503 + Retry-After beyond), refuses bodies over
    the limit (413, by Content-Length or while reading), starts each request's deadline, counts."""

    def __init__(self, app, stats: _Stats, limits: Limits):
        self.app, self.stats, self.limits = app, stats, limits

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        stats, lim, path = self.stats, self.limits, scope["path"]
        t0 = time.perf_counter()
        status = [0]

        async def send_counted(message):
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        if scope["method"] == "POST":
            size = _content_length(scope)
            if size is not None and size > lim.max_body_bytes:
                stats.rejected["too_large"] += 1
                return await _error(413, _too_large(size, lim))(scope, receive, send_counted)
            if stats.in_flight >= lim.max_in_flight:
                stats.rejected["busy"] += 1
                message = f"server busy: {stats.in_flight} requests in flight, the most this worker holds; retry"
                return await _error(503, message, {"Retry-After": "1"})(scope, receive, send_counted)
            # Every POST body is JSON, whatever the client says (curl -d sends a form type).
            scope["headers"] = [(k, v) for k, v in scope["headers"] if k != b"content-type"] + [
                (b"content-type", b"application/json")]  # fmt: skip
        deadline = scope.setdefault("state", {})["deadline"] = Deadline(lim.request_timeout_s)
        stats.in_flight += 1
        try:
            # Let every request the worker has already read reach this count before any of them
            # works: handlers compute without awaiting, so without this yield the requests
            # waiting on the event loop would never be counted and the cap would never bite.
            await asyncio.sleep(0)
            await self.app(scope, _capped(receive, lim, deadline), send_counted)
        finally:
            stats.in_flight -= 1
            stats.requests[(path if path in _ROUTES else "other", status[0])] += 1
            stats.seconds[path if path in _ROUTES else "other"] += time.perf_counter() - t0


def _content_length(scope) -> int | None:
    for k, v in scope.get("headers", ()):
        if k == b"content-length":
            try:
                return int(v)
            except ValueError:
                return None
    return None


def _too_large(size: int, lim: Limits) -> str:
    return f"request body of {size:,} bytes is over the limit of {lim.max_body_bytes:,}"


def _capped(receive, lim: Limits, deadline: Deadline):
    """``receive`` that refuses (413) a body growing past the limit, e.g. one sent chunked, and
    (408) one not all received by the request's deadline: a client that sends part of a body and
    stalls would otherwise hold one of the worker's ``max_in_flight`` places for ever."""
    seen, whole = 0, False

    async def wrapped():
        nonlocal seen, whole
        if whole:  # (after the body: waiting for the client to disconnect, which has no deadline)
            return await receive()
        try:
            message = await asyncio.wait_for(receive(), max(deadline.end - time.monotonic(), 0.0))
        except TimeoutError:
            raise HTTPException(408, f"request body not received within the time limit of {lim.request_timeout_s:g} s") from None  # fmt: skip
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > lim.max_body_bytes:
                raise HTTPException(413, f"request body is over the limit of {lim.max_body_bytes:,} bytes")
            whole = not message.get("more_body", False)
        return message

    return wrapped


_ROUTES = ("/retrieve", "/search", "/open", "/sessions/end", "/health", "/info", "/metrics")


def _one_line(exc: RequestValidationError) -> tuple[int, str]:
    errors = exc.errors()
    if any(e.get("type") == "json_invalid" for e in errors):
        e = next(e for e in errors if e.get("type") == "json_invalid")
        why = (e.get("ctx") or {}).get("error", "")
        return 400, f"malformed JSON{': ' + str(why) if why else ''}"
    parts = []
    for e in errors[:3]:
        loc = ".".join(str(x) for x in e.get("loc", ()) if x != "body")
        msg = str(e.get("msg", "invalid")).removeprefix("Value error, ")
        if e.get("type") == "model_attributes_type" or (not loc and "dict" in msg.lower()):
            msg = "the body must be a JSON object"
        parts.append(f"{loc}: {msg}" if loc else msg)
    more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
    return 422, "; ".join(parts).replace("\n", " ") + more


def create_app(service: WorldService | None = None, *, limits: Limits | None = None) -> FastAPI:
    """The app. ``service`` may be attached later as ``app.state.service`` (a Ray Serve replica
    opens the world in its constructor): until then ``/health`` answers 503 and the tools 503."""
    limits = limits or (service.limits if service is not None else Limits())
    stats = _Stats()
    app = FastAPI(
        title="fictionworld",
        summary="A fictional world's web: Search-R1 /retrieve, the env's search and open tools.",
        version=_version(),
    )
    app.state.service = service
    app.state.stats = stats
    app.add_middleware(_Guard, stats=stats, limits=limits)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        status, message = _one_line(exc)
        return _error(status, message)

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException):
        return _error(exc.status_code, str(exc.detail), getattr(exc, "headers", None))

    @app.exception_handler(RequestError)
    async def _refused(request: Request, exc: RequestError):
        return _error(exc.status, str(exc))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception):  # never a traceback in the reply
        return _error(500, f"internal error ({type(exc).__name__}); the server log has the details")

    def ready(request: Request) -> WorldService:
        service = request.app.state.service
        if service is None:
            raise HTTPException(503, "the world is still opening; retry", headers={"Retry-After": "1"})
        request.scope["state"]["deadline"].check()  # queued past the time limit: say so now
        return service

    @app.post("/retrieve", summary="Search-R1 retrieval (also SkyRL's single query)")
    async def retrieve(body: RetrieveRequest, request: Request):
        service = ready(request)
        queries = body.queries if body.queries is not None else [body.query]
        stats.queries += len(queries)
        result = service.retrieve(queries, body.topk or None, body.return_scores, request.scope["state"]["deadline"])
        return _json(200, {"result": result})

    @app.post("/search", summary="The env's search tool")
    async def search(body: SearchRequest, request: Request):
        service = ready(request)
        stats.queries += 1
        return _json(200, service.search(body.query, body.page, body.k, session=body.session, seed=body.seed,
                                         call=body.call, knobs=body.knobs))  # fmt: skip

    @app.post("/open", summary="The env's open tool")
    async def open_(body: OpenRequest, request: Request):
        service = ready(request)
        return _json(200, service.open_url(body.url, session=body.session, seed=body.seed, call=body.call,
                                           knobs=body.knobs))  # fmt: skip

    @app.post("/sessions/end", summary="Forget a session: its next call draws faults from the start")
    async def end_session(body: EndSessionRequest, request: Request):
        service = ready(request)
        return _json(200, {"session": body.session, "ended": service.end_session(body.session, body.seed)})

    @app.get("/health")
    async def health(request: Request):
        service = request.app.state.service
        if service is None or stats.draining:
            state = "draining" if stats.draining else "starting"
            return _json(503, {"status": state}, {"Retry-After": "1"})
        return _json(200, {"status": "ready", "world_hash": service.web.world.world_hash})

    @app.get("/info")
    async def info(request: Request):
        service = ready(request)
        return _json(200, service.info() | {"pid": os.getpid(), "version": _version()})

    @app.get("/metrics", summary="Prometheus text: this worker's counters")
    async def metrics():
        return Response(_prometheus(stats), media_type="text/plain; version=0.0.4")

    return app


def _prometheus(stats: _Stats) -> str:
    pid = os.getpid()
    lines = ["# TYPE fictionworld_requests_total counter"]
    for (path, status), n in sorted(stats.requests.items()):
        lines.append(f'fictionworld_requests_total{{worker="{pid}",path="{path}",status="{status}"}} {n}')
    lines.append("# TYPE fictionworld_request_seconds_total counter")
    for path, s in sorted(stats.seconds.items()):
        lines.append(f'fictionworld_request_seconds_total{{worker="{pid}",path="{path}"}} {s:.6f}')
    lines.append("# TYPE fictionworld_rejected_total counter")
    for reason in ("busy", "too_large"):
        lines.append(f'fictionworld_rejected_total{{worker="{pid}",reason="{reason}"}} {stats.rejected[reason]}')
    lines.append("# TYPE fictionworld_queries_total counter")
    lines.append(f'fictionworld_queries_total{{worker="{pid}"}} {stats.queries}')
    lines.append("# TYPE fictionworld_in_flight gauge")
    lines.append(f'fictionworld_in_flight{{worker="{pid}"}} {stats.in_flight}')
    return "\n".join(lines) + "\n"


def _version() -> str:
    from fictionworld._version import __version__

    return __version__
