"""What the web returns for one agent action, with the structure behind the text.

:func:`observe` runs one ``search``/``web_search``/``open``/``web_extractor`` call through a
:class:`~fictionworld.web.WebSession` as the env does, and keeps what the observation text was
made from: the result pages (and whether each snippet may show values), or the opened page and
the graph facts it states. :mod:`.lwm_check` judges texts against it; :mod:`.lwm_corrupt`
corrupts it for negatives.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fictionworld.web.pages import LAYERS, Page
from fictionworld.web.urls import parse_url
from fictionworld.web.web import FAULT_TEXT, SearchCall, ToolResult, WebSession

__all__ = ["Observed", "Part", "Result", "observe", "page_kind", "WEB_TOOLS"]

WEB_TOOLS = ("search", "web_search", "open", "web_extractor")


@dataclass(frozen=True)
class Result:
    number: int  # the [n] an agent reads
    url: str
    title: str
    row: int  # page row of the result
    leak: bool  # whether its snippet may show values
    undated: bool = False  # shown as "Date: N/A" (web_search lists reference pages undated)


@dataclass
class Part:
    """One query's answer within a search observation."""

    query: str
    status: str
    text: str
    results: list[Result] = field(default_factory=list)
    fault: str | None = None


@dataclass
class Observed:
    """One web call and what it returned: the text an agent reads and the structure behind it."""

    tool: str
    arguments: dict
    kind: str  # page_kind(): article, …, directory, year_list, forum, blog, profile, search, not_found, fault, error
    status: str
    text: str
    parts: list[Part] = field(default_factory=list)  # searches
    page: Page | None = None  # an opened page
    row: int = -1
    layer: str = ""
    fault: str | None = None  # an opened page's injected fault

    @property
    def faults(self) -> list[str]:
        """Per web call, the injected fault ("" for none), as an example row stores it."""
        return [p.fault or "" for p in self.parts] if self.parts else [self.fault or ""]

    @property
    def fact_ids(self) -> list[int]:
        return list(self.page.fact_ids) if self.page is not None else []

    @property
    def urls(self) -> list[str]:
        if self.page is not None:
            return [self.page.url]
        return [r.url for p in self.parts for r in p.results]


def page_kind(web, row: int) -> str:
    """The kind an example reports for page ``row``: its store kind, with directories split into
    ``directory`` (members of a relation or attribute value) and ``year_list`` (by year)."""
    kind = str(web.pages.kind[row])
    if kind == "list":
        return "directory" if len(web.pages.column("fact_ids", row)) else "year_list"
    return kind


def observe(session: WebSession, tool: str, arguments: dict, faults: list[str] | None = None) -> Observed:
    """Runs one call as the env does (``search`` one query with an optional ``page``,
    ``web_search`` up to five queries with a ``## Results for`` head each, ``open`` and
    ``web_extractor`` one URL). ``faults`` (one per web call, "" for none) replays recorded
    faults instead of drawing them from the session."""
    web, knobs = session.web, session.knobs
    forced = list(faults) if faults is not None else None

    def fault() -> str:
        return forced.pop(0) if forced else ""

    if tool in ("open", "web_extractor"):
        url = arguments["url"]
        kind_of_fault = fault()
        res = _fault_result(kind_of_fault) if kind_of_fault else session.open(url)
        obs = Observed(tool, arguments, res.status, res.status, res.text, page=res.page, fault=res.fault)
        if res.status == "ok":
            obs.row = web.pages.row_of_url[parse_url(res.page.url)[0]]
            obs.kind, obs.layer = page_kind(web, obs.row), _layer(web, obs.row)
        return obs
    search = SearchCall.of(tool, arguments)  # as the env runs it
    offset = (search.page - 1) * (search.k or knobs.results_per_page)
    ran = []
    for q in search.queries:
        kind_of_fault = fault()
        ran.append((q, _fault_result(kind_of_fault) if kind_of_fault else search.run(session, q)))
    parts = []
    for q, res in ran:
        results = []
        for i, r in enumerate(res.results):
            row = web.pages.row_of_url[r.url]
            results.append(Result(offset + i + 1, r.url, r.title, row, web.leaks(q, row, knobs.snippet_leak_rate),
                                  undated=r.kind in search.undated))  # fmt: skip
        parts.append(Part(q, res.status, res.text, results, res.fault))
    text, status = SearchCall.join(ran)
    kind = "search" if len(parts) > 1 or status == "ok" else ("fault" if status == "fault" else "error")
    return Observed(tool, arguments, kind, status, text, parts=parts)


def _fault_result(kind: str) -> ToolResult:
    return ToolResult(status="fault", text=FAULT_TEXT[kind], fault=kind)


def _layer(web, row: int) -> str:
    return LAYERS[int(web.pages.layer[row])]
