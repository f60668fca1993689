"""The fictional web: pages rendered from the graph, a search engine over them, the world-model
contract, perturbation knobs and per-episode sessions."""

from __future__ import annotations

from fictionworld.knobs import Knobs, Schedule, WebSpec
from fictionworld.web.model import Hit, TemplateWorldModel, WorldModel, make_snippet
from fictionworld.web.pages import Page, PageNotFound, PageTable, SearchResult, WebError
from fictionworld.web.render import RENDERER, coverage, render_pages
from fictionworld.web.web import ToolResult, ToolStatus, Web, WebSession, format_results

__all__ = [
    "Web",
    "WebSession",
    "ToolResult",
    "ToolStatus",
    "Page",
    "PageNotFound",
    "PageTable",
    "SearchResult",
    "WebError",
    "Knobs",
    "Schedule",
    "WebSpec",
    "Hit",
    "WorldModel",
    "TemplateWorldModel",
    "make_snippet",
    "render_pages",
    "coverage",
    "format_results",
    "RENDERER",
]
