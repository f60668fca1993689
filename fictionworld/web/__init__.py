"""The fictional web: pages rendered from the graph, a search engine over them, the world-model
contract, perturbation knobs and per-episode sessions."""

from __future__ import annotations

from fictionworld.knobs import Knobs, Schedule, WebSpec
from fictionworld.web.model import Hit, TemplateWorldModel, WorldModel, make_snippet
from fictionworld.web.pages import Page, PageNotFound, PageTable, SearchResult, WebError
from fictionworld.web.render import RENDERER, coverage, render_pages
from fictionworld.web.web import ToolResult, ToolStatus, Web, WebSession, format_results

__all__ = [
    "web_for",
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


def web_for(world) -> Web:
    """``world``'s web: opened from the directory it was loaded from when that holds one,
    else built now (seconds per 10k entities). What ``World.web`` returns."""
    if world.path is not None and (world.path / "web.json").exists():
        return Web.load(world, world.path)
    return Web.build(world)
