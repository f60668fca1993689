"""Fidelity runs: render a seeded sample of pages and result lists with a world model and
report how often its output passes verification against the graph (``fictionworld fidelity``)."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from fictionworld.knobs import Knobs
from fictionworld.seeding import rng
from fictionworld.worldmodel.cache import RenderCache
from fictionworld.worldmodel.config import WorldModelConfig, make_world_model
from fictionworld.worldmodel.sglang import AUTHORED_KINDS, FidelityStats
from fictionworld.worldmodel.verify import Verifier

__all__ = ["sample_pages", "fidelity", "verify_template"]


def sample_pages(web, n: int, seed: int, kinds=AUTHORED_KINDS) -> list[int]:
    """``n`` page rows of the authored kinds, drawn with ``seed`` (all of them if fewer)."""
    rows = np.flatnonzero(np.isin(web.pages.kind, list(kinds)) & (web.pages.layer == 0))
    if n >= len(rows):
        return rows.tolist()
    return np.sort(rng(seed, "fidelity").choice(rows, size=n, replace=False)).tolist()


def verify_template(web, rows: list[int], queries: list[str], progress: Callable[[int], None] | None = None):
    """The template renderer's own pages and snippets through the same verification (they must
    all pass: it writes only graph facts)."""
    v = Verifier(web)
    stats = FidelityStats()
    knobs = [Knobs(), Knobs(snippet_leak_rate=1.0)]
    for row in rows:
        t = time.perf_counter()
        verdict = v.verify_page(v.grounding(row), web.pages.page(row, web.entity_ids).markdown())
        _count(stats, verdict, time.perf_counter() - t)
        if progress:
            progress(1)
    for q in queries:
        hits = [h for h in web.hits(q, 10) if web.pages.kind[h.page] in AUTHORED_KINDS]
        for k in knobs:
            for h, r in zip(hits, web.model.render_results(web, q, hits, k)):
                t = time.perf_counter()
                verdict = v.verify_result(v.grounding(h.page), r.title, r.snippet, leak=k.snippet_leak_rate > 0)
                _count(stats, verdict, time.perf_counter() - t)
    return stats


def _count(stats: FidelityStats, verdict, seconds: float) -> None:
    stats.record(verdict, 1)
    stats.rendered += 1
    stats.render_seconds.append(seconds)
    if verdict.ok:
        stats.first_try += 1
    else:
        stats.fallbacks += 1


def fidelity(web, config: WorldModelConfig, *, n: int = 200, searches: int | None = None, seed: int = 0,
             write_cache: bool = False, progress: Callable[[int], None] | None = None) -> dict:  # fmt: skip
    """Renders ``n`` sampled pages and ``searches`` result lists (queries: titles of sampled
    pages) and returns the fidelity summary. The LLM's renders go to a scratch cache unless
    ``write_cache`` (then they warm the world's cache)."""
    rows = sample_pages(web, n, seed)
    searches = max(1, n // 4) if searches is None else searches
    queries = [web.pages.titles[r] for r in sample_pages(web, searches, seed + 1)]
    t0 = time.perf_counter()
    if config.kind == "template":
        from fictionworld.web.model import TemplateWorldModel

        web.model = TemplateWorldModel()
        stats = verify_template(web, rows, queries, progress)
    else:
        model = make_world_model(config, web)
        if not write_cache:
            model.cache = RenderCache(None)
        web.model = model
        model.prerender(rows, progress)
        for q in queries:
            web.search(q, 10)
        stats = model.stats
    out = {"world_model": config.kind, "model": config.model if config.kind == "sglang" else None,
           "pages": len(rows), "searches": len(queries), "seconds": round(time.perf_counter() - t0, 2)}  # fmt: skip
    return out | stats.summary()
