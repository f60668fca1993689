"""What agents get from a web: one episode's session (knobs, injected faults), tool results
and their text, and the search calls the env and the LWM export run through it."""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

from fictionworld.knobs import Knobs
from fictionworld.web.pages import AGENTWORLD_RESULTS, UNDATED_KINDS, Page, PageNotFound, SearchResult, WebError

if TYPE_CHECKING:
    from fictionworld.web.web import Web

__all__ = [
    "WebSession", "SearchCall", "ToolResult", "ToolStatus", "SearchResults", "KeptPages", "format_results", "FAULT_TEXT",
]  # fmt: skip

FAULT_TEXT = {
    "timeout": "Error: the request timed out after 30 seconds. Please try again.",
    "server_error": "Error: 503 Service Unavailable. The server could not handle the request; please try again.",
    "rate_limited": "Error: 429 Too Many Requests. Wait a moment, then try again.",
}


class SearchResults(list):
    """One page of results (a list of :class:`SearchResult`, as ``Web.search`` returns it) that
    also knows where it lies: its ``page`` number and, when the ranking ran out before or on
    this page, the ``last_page`` holding results (0: the query finds nothing)."""

    def __init__(self, results: Iterable[SearchResult] = (), *, page: int = 1, last_page: int | None = None):
        super().__init__(results)
        self.page = page
        self.last_page = last_page


class KeptPages:
    """Result pages of :meth:`Web.search <fictionworld.web.Web.search>` kept by key: the rollouts
    of one GRPO group, and the turns of one agent, ask the same query again and again. At most
    ``limit`` results in all (0: none kept); past it, the cache starts again. A page kept is a
    tuple of frozen results; each answer made from it is a list of its own."""

    def __init__(self, limit: int):
        self.limit = limit
        self.pages: dict[tuple, tuple[tuple[SearchResult, ...], int | None]] = {}
        self.held = 0  # results in ``pages``

    def get(self, key: tuple, page: int) -> SearchResults | None:
        kept = self.pages.get(key)
        return None if kept is None else SearchResults(kept[0], page=page, last_page=kept[1])

    def keep(self, key: tuple, results: list[SearchResult], last_page: int | None) -> None:
        if self.held + len(results) > self.limit:
            self.pages.clear()
            self.held = 0
        if key not in self.pages:
            self.held += len(results)
        self.pages[key] = (tuple(results), last_page)


def format_results(
    query: str,
    results: list[SearchResult],
    offset: int = 0,
    *,
    page: int | None = None,
    last_page: int | None = None,
    undated: tuple[str, ...] = (),
) -> str:
    """Results as agents read them: ``[n] URL / Title / Snippet / Date`` blocks (``Date: N/A``
    for pages of the ``undated`` kinds). ``page`` and ``last_page`` (by default those of a
    :class:`SearchResults`) tell an empty page past the last one from a query that finds nothing."""
    if not results:
        page = getattr(results, "page", None) if page is None else page
        last_page = getattr(results, "last_page", None) if last_page is None else last_page
        if page is not None and last_page and page > last_page:
            return f"No more results for '{query}': page {page} is past the last page ({last_page})."
        return f"No results found for '{query}'. Try different words."
    return "\n\n".join(r.text(offset + i + 1, undated=undated) for i, r in enumerate(results))


class SearchCall(BaseModel):
    """A search tool call as the env runs it: ``search`` is one query and a result page;
    ``web_search`` (Qwen-AgentWorld's) is up to five queries of 10 results each, no pages, with
    reference pages undated. The env and the LWM export both run calls through this."""

    model_config = ConfigDict(frozen=True)

    queries: list[str]
    page: int = 1
    k: int | None = None  # None: the knobs' results_per_page
    undated: tuple[str, ...] = ()

    @classmethod
    def of(cls, tool: str, arguments: dict) -> SearchCall:
        """The call of ``tool`` (``search`` or ``web_search``) with checked ``arguments``."""
        if tool == "web_search":
            return cls(queries=list(arguments["queries"]), k=AGENTWORLD_RESULTS, undated=UNDATED_KINDS)
        return cls(queries=[arguments["query"]], page=arguments.get("page", 1))

    def run(self, session: WebSession, query: str) -> ToolResult:
        return session.search(query, self.k, self.page, undated=self.undated)

    @staticmethod
    def join(parts: list[tuple[str, ToolResult]]) -> tuple[str, ToolStatus]:
        """The observation of (query, result) parts: one query's text as it is, several each
        under a ``## Results for '…'`` heading; ok if any query worked."""
        text = (
            parts[0][1].text if len(parts) == 1 else "\n\n".join(f"## Results for {q!r}\n\n{r.text}" for q, r in parts)
        )
        statuses = [r.status for _, r in parts]
        return text, ("ok" if "ok" in statuses else statuses[0])


ToolStatus = Literal["ok", "not_found", "error", "fault"]
"""How a tool call went: ``ok``; ``not_found`` (a well-formed URL that names no page); ``error``
(a malformed call or argument: the agent should change it); ``fault`` (an injected timeout or
server error: the same call may work when retried)."""


class ToolResult(BaseModel):
    """One tool call's observation: the text an agent reads, its :data:`ToolStatus` (what
    programs read; never parse the text), plus the structured result."""

    model_config = ConfigDict(frozen=True)

    status: ToolStatus
    text: str
    fault: str | None = None
    results: tuple[SearchResult, ...] = ()
    page: Page | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class WebSession:
    """One episode's view of the web: fixed knobs, and injected faults drawn from ``seed`` in
    call order (same seed and calls, same faults)."""

    def __init__(self, web: Web, knobs: Knobs, seed: int, *, calls: int = 0):
        """``calls`` > 0 resumes the session after that many calls: the next call draws its
        fault as the ``calls``-th call of a session started fresh would (a server answering
        one episode's calls from several processes uses this)."""
        self.web, self.knobs = web, knobs
        self._rng = random.Random(seed)
        self.calls = 0
        self.faults = 0
        for _ in range(calls):
            self._fault()

    def _fault(self) -> str | None:
        self.calls += 1
        draw, kind = self._rng.random(), self._rng.randrange(len(self.knobs.fault_kinds))
        if draw < self.knobs.fault_rate:
            self.faults += 1
            return self.knobs.fault_kinds[kind]
        return None

    def search(self, query: str, k: int | None = None, page: int = 1, *, undated: tuple[str, ...] = ()) -> ToolResult:
        """One search call (faults injected first); ``undated``: page kinds listed as ``Date: N/A``."""
        if fault := self._fault():
            return ToolResult(status="fault", text=FAULT_TEXT[fault], fault=fault)
        try:
            results = self.web.search(query, k, page, self.knobs)
        except WebError as e:
            return ToolResult(status="error", text=f"Error: {e}")
        k = self.knobs.results_per_page if k is None else k
        text = format_results(query, results, (page - 1) * k, undated=undated)
        return ToolResult(status="ok", text=text, results=tuple(results))

    def open(self, url: str) -> ToolResult:
        if fault := self._fault():
            return ToolResult(status="fault", text=FAULT_TEXT[fault], fault=fault)
        try:
            page = self.web.open(url, self.knobs)
        except WebError as e:
            return ToolResult(status="error", text=f"Error: {e}")
        if isinstance(page, PageNotFound):
            return ToolResult(status="not_found", text=page.markdown())
        return ToolResult(status="ok", text=page.markdown(), page=page)
