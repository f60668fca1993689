"""The HTTP face of a world: a FastAPI app over :class:`~fictionworld.env.service.WorldService`.

Routes (OpenAPI at ``/docs``):

- ``POST /retrieve``: Search-R1's protocol, ``{"queries": [str], "topk": int?, "return_scores":
  bool}`` → ``{"result": [[{"document": {"id", "contents", "url", "title", "date"}, "score"}]]}``
  (bare documents when ``return_scores`` is false, upstream's default). SkyRL's single
  ``{"query": str, …}`` is answered in the same shape, one inner list.
- ``POST /search``, ``POST /open``: the env's tools (``text`` as the env shows it, plus JSON);
  ``session`` / ``seed`` / ``call`` make faults replay (see the service). ``POST /sessions/end``.
- ``GET /health`` (200 once the world is open, 503 before and while draining), ``GET /info``,
  ``GET /metrics`` (Prometheus text: the whole server's counters, every worker's summed; on Ray
  Serve, the answering replica's, its pid in ``fictionworld_process``).

Every refusal is JSON ``{"error": "<one line>"}`` with a 4xx status (413 over a size limit, 422
a wrong shape or type, 400 malformed JSON, 408 a body not all sent within ``body_timeout_s``),
503 with ``Retry-After`` when the worker already holds ``max_in_flight`` requests, 504 past the
time limit or a request's share of work (``max_work_s``); never a traceback. A request counts
towards ``max_in_flight``, and its time limit starts, once its body has arrived: clients that
send part of a body hold no place. Searches and pages are made on a bounded pool of threads
(``search_threads``), never on the event loop, so ``/health`` and the reading of other requests
go on while a batch of slow queries (unknown words, each corrected) is answered; a batch checks
its ``max_work_s`` between queries and between the words of each, and stops there.
"""

from __future__ import annotations

import asyncio
import json
import mmap
import os
import time
from typing import Annotated

import anyio
import numpy as np
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, model_validator
from starlette.exceptions import HTTPException

from fictionworld.env.service import Deadline, Limits, RequestError, WorldService

__all__ = ["create_app", "ServerStats", "RetrieveRequest", "SearchRequest", "OpenRequest", "EndSessionRequest"]

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


_ROUTES = ("/retrieve", "/search", "/open", "/sessions/end", "/health", "/info", "/metrics")
_PATHS = (*_ROUTES, "other")
REJECTIONS = ("busy", "too_large", "body_timeout", "header_timeout", "connections")


class ServerStats:
    """The app's counters, in memory that workers forked after it share (an anonymous shared
    map): each worker counts in its own row (:meth:`take_row`; one writer per row, so no lock)
    and ``/metrics`` sums the rows, so whichever worker answers shows the whole server. A worker
    started in place of one that died takes over its row: the counters only grow."""

    def __init__(self, workers: int = 1):
        self.workers = workers
        shapes = {"requests": (workers, len(_PATHS), 600), "seconds": (workers, len(_PATHS)),
                  "rejected": (workers, len(REJECTIONS)), "queries": (workers,), "in_flight": (workers,)}  # fmt: skip
        self._map = mmap.mmap(-1, 8 * sum(int(np.prod(s)) for s in shapes.values()))
        offset, self._counts = 0, {}
        for name, shape in shapes.items():
            n = int(np.prod(shape))
            dtype = np.float64 if name == "seconds" else np.int64
            self._counts[name] = np.frombuffer(self._map, dtype, n, offset).reshape(shape)
            offset += 8 * n
        self.row = 0
        self.draining = False  # this process's: /health says "draining" while it stops

    def take_row(self, row: int) -> None:
        """This process counts in ``row`` from now on (a worker's index); a predecessor's
        requests in flight there died with it."""
        self.row = row
        self._counts["in_flight"][row] = 0

    @property
    def in_flight(self) -> int:
        """Requests this worker holds now."""
        return int(self._counts["in_flight"][self.row])

    def enter(self, n: int = 1) -> None:
        self._counts["in_flight"][self.row] += n

    def answered(self, path: str, status: int, seconds: float) -> None:
        p = _PATHS.index(path) if path in _ROUTES else len(_ROUTES)
        self._counts["requests"][self.row, p, min(max(status, 0), 599)] += 1
        self._counts["seconds"][self.row, p] += seconds

    def reject(self, reason: str) -> None:
        self._counts["rejected"][self.row, REJECTIONS.index(reason)] += 1

    def add_queries(self, n: int) -> None:
        self._counts["queries"][self.row] += n

    def prometheus(self) -> str:
        """The counters as Prometheus text, summed over the workers."""
        c = {name: a.sum(axis=0) for name, a in self._counts.items()}
        whole = f"the whole server's, its {self.workers} workers summed" if self.workers > 1 else "this process's"
        lines = [f"# HELP fictionworld_requests_total Requests answered, by path and status ({whole}).",
                 "# TYPE fictionworld_requests_total counter"]  # fmt: skip
        for p, s in zip(*np.nonzero(c["requests"])):
            lines.append(f'fictionworld_requests_total{{path="{_PATHS[p]}",status="{s}"}} {c["requests"][p, s]}')
        lines.append("# TYPE fictionworld_request_seconds_total counter")
        for p in np.flatnonzero(c["seconds"]):
            lines.append(f'fictionworld_request_seconds_total{{path="{_PATHS[p]}"}} {c["seconds"][p]:.6f}')
        lines.append("# TYPE fictionworld_rejected_total counter")
        lines += [f'fictionworld_rejected_total{{reason="{r}"}} {c["rejected"][i]}' for i, r in enumerate(REJECTIONS)]
        lines += ["# TYPE fictionworld_queries_total counter", f"fictionworld_queries_total {c['queries']}",
                  "# TYPE fictionworld_in_flight gauge", f"fictionworld_in_flight {c['in_flight']}",
                  "# HELP fictionworld_process The process that answered, and how many workers the counters cover.",
                  "# TYPE fictionworld_process gauge",
                  f'fictionworld_process{{pid="{os.getpid()}",workers="{self.workers}"}} 1']  # fmt: skip
        return "\n".join(lines) + "\n"


def _encoded(content) -> bytes:
    return json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode()


def _json(status: int, content, headers: dict | None = None) -> Response:
    body = content if isinstance(content, bytes) else _encoded(content)
    return Response(body, status_code=status, media_type="application/json", headers=headers)


def _error(status: int, message: str, headers: dict | None = None) -> Response:
    return _json(status, {"error": message}, headers)


class _Guard:
    """ASGI middleware: reads each POST's body whole first (413 over the size limit, by
    Content-Length or while reading; 408 when it is not all sent within ``body_timeout_s``),
    then caps the requests in flight (503 + Retry-After beyond), starts each request's
    deadline, counts."""

    def __init__(self, app, stats: ServerStats, limits: Limits):
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

        try:
            if scope["method"] == "POST":
                body = await _read_body(scope, receive, lim, stats)
                if body is None:  # the client left before it sent its body
                    return
                if isinstance(body, Response):
                    return await body(scope, receive, send_counted)
                if stats.in_flight >= lim.max_in_flight:
                    stats.reject("busy")
                    message = f"server busy: {stats.in_flight} requests in flight, the most this worker holds; retry"
                    return await _error(503, message, {"Retry-After": "1"})(scope, receive, send_counted)
                # Every POST body is JSON, whatever the client says (curl -d sends a form type).
                scope["headers"] = [(k, v) for k, v in scope["headers"] if k != b"content-type"] + [
                    (b"content-type", b"application/json")]  # fmt: skip
                receive = _replay(body, receive)
            scope.setdefault("state", {})["deadline"] = Deadline(lim.request_timeout_s)
            stats.enter()
            try:
                await self.app(scope, receive, send_counted)
            finally:
                stats.enter(-1)
        finally:
            stats.answered(path, status[0], time.perf_counter() - t0)


def _content_length(scope) -> int | None:
    for k, v in scope.get("headers", ()):
        if k == b"content-length":
            try:
                return int(v)
            except ValueError:
                return None
    return None


async def _read_body(scope, receive, lim: Limits, stats: ServerStats) -> bytes | Response | None:
    """The whole body; or the refusal to send (413 over the size limit, e.g. a chunked body
    growing past it; 408 not all sent within ``body_timeout_s``); None if the client left."""
    size = _content_length(scope)
    if size is not None and size > lim.max_body_bytes:
        stats.reject("too_large")
        return _error(413, f"request body of {size:,} bytes is over the limit of {lim.max_body_bytes:,}")
    chunks, seen = [], 0
    try:
        async with asyncio.timeout(lim.body_timeout_s):
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return None
                chunks.append(message.get("body", b""))
                seen += len(chunks[-1])
                if seen > lim.max_body_bytes:
                    stats.reject("too_large")
                    return _error(413, f"request body is over the limit of {lim.max_body_bytes:,} bytes")
                if not message.get("more_body", False):
                    return b"".join(chunks)
    except TimeoutError:
        stats.reject("body_timeout")
        return _error(408, f"request body not all received within {lim.body_timeout_s:g} s of its headers")


def _replay(body: bytes, receive):
    """``receive`` that gives the body already read, then waits for the client to leave."""
    given = False

    async def replayed():
        nonlocal given
        if given:
            return await receive()
        given = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed


class _WorkBudget(Deadline):
    """The request's deadline, or the end of its share of search work (``max_work_s`` from when
    a thread took it up), whichever comes first; checked between queries, and inside each (its
    ``end`` passed down to the search, checked between the query's words)."""

    def __init__(self, request: Deadline, work_s: float):
        self.request, self.work_s, self.seconds = request, work_s, request.seconds
        self.end = min(request.end, time.monotonic() + work_s)

    def check(self) -> None:
        if time.monotonic() > self.end:
            self.request.check()
            raise RequestError(f"the request took over the {self.work_s:g} s of search work one request may use; "
                               "send fewer queries at a time", status=504)  # fmt: skip


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


def create_app(service: WorldService | None = None, *, limits: Limits | None = None, workers: int = 1) -> FastAPI:
    """The app. ``service`` may be attached later as ``app.state.service`` (a Ray Serve replica
    opens the world in its constructor): until then ``/health`` answers 503 and the tools 503.
    ``workers``: how many forked processes will serve it (each calls ``app.state.stats.take_row``)."""
    limits = limits or (service.limits if service is not None else Limits())
    stats = ServerStats(workers)
    app = FastAPI(
        title="fictionworld",
        summary="A fictional world's web: Search-R1 /retrieve, the env's search and open tools.",
        version=_version(),
    )
    app.state.service = service
    app.state.stats = stats
    app.add_middleware(_Guard, stats=stats, limits=limits)
    searchers = anyio.CapacityLimiter(limits.search_threads)

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

    async def off_loop(request: Request, work) -> bytes:
        """``work(budget)``, encoded as JSON, on one of the worker's search threads once one is
        free (504 if none is by the request's deadline): the event loop goes on meanwhile."""
        deadline = request.scope["state"]["deadline"]
        acquired = False
        with anyio.move_on_after(max(deadline.end - time.monotonic(), 0.0)):
            await searchers.acquire()
            acquired = True
        if not acquired:
            raise RequestError(f"the request waited past its time limit of {deadline.seconds:g} s for one of the "
                               f"worker's {limits.search_threads} search threads", status=504)  # fmt: skip
        try:
            budget = _WorkBudget(deadline, limits.max_work_s)
            return await anyio.to_thread.run_sync(lambda: _encoded(work(budget)))
        finally:
            searchers.release()

    @app.post("/retrieve", summary="Search-R1 retrieval (also SkyRL's single query)")
    async def retrieve(body: RetrieveRequest, request: Request):
        service = ready(request)
        queries = body.queries if body.queries is not None else [body.query]
        stats.add_queries(len(queries))
        return _json(200, await off_loop(request, lambda budget: {"result": service.retrieve(
            queries, body.topk or None, body.return_scores, budget)}))  # fmt: skip

    @app.post("/search", summary="The env's search tool")
    async def search(body: SearchRequest, request: Request):
        service = ready(request)
        stats.add_queries(1)
        return _json(200, await off_loop(request, lambda _: service.search(
            body.query, body.page, body.k, session=body.session, seed=body.seed, call=body.call, knobs=body.knobs)))  # fmt: skip

    @app.post("/open", summary="The env's open tool")
    async def open_(body: OpenRequest, request: Request):
        service = ready(request)
        return _json(200, await off_loop(request, lambda _: service.open_url(
            body.url, session=body.session, seed=body.seed, call=body.call, knobs=body.knobs)))  # fmt: skip

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

    @app.get("/metrics", summary="Prometheus text: the whole server's counters")
    async def metrics():
        return Response(stats.prometheus(), media_type="text/plain; version=0.0.4")

    return app


def _version() -> str:
    from fictionworld._version import __version__

    return __version__
