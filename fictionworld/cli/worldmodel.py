"""``fictionworld fidelity`` and ``render-cache`` (added to the app by :func:`register`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from fictionworld.cli.common import (
    WorldModelApiOption,
    WorldModelNameOption,
    WorldModelOption,
    WorldModelUrlOption,
    err,
    fail,
    out,
    positive,
    saved_web,
    serve_with,
    world_model_config,
)

__all__ = ["register"]

_LABELS = {
    "rendered": "renderings (pages + snippets)",
    "first_try_pass_rate": "first-try pass rate",
    "pass_rate_after_retries": "pass rate after retries",
    "fallbacks": "template fallbacks",
    "unreachable": "server unreachable (template served)",
    "facts_covered": "required facts stated (first tries)",
    "contradictions": "contradictions found",
    "unsupported_values": "unsupported values found",
    "namesakes": "invented namesakes found",
    "call_latency_p50_s": "call latency p50 (s)",
    "call_latency_p95_s": "call latency p95 (s)",
    "render_latency_p50_s": "render latency p50 (s)",
    "render_latency_p95_s": "render latency p95 (s)",
}


def fidelity(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="World directory.")],
    world_model: WorldModelOption = "template",
    world_model_url: WorldModelUrlOption = None,
    world_model_name: WorldModelNameOption = None,
    world_model_api: WorldModelApiOption = None,
    n: Annotated[
        int, typer.Option("--n", help="Pages to render (a seeded sample of the authored kinds).", min=1)
    ] = 200,
    searches: Annotated[int | None, typer.Option(help="Result lists to render (default n/4).", min=0)] = None,
    seed: Annotated[int, typer.Option(help="Sample seed (>= 0).", min=0)] = 0,
    timeout: Annotated[float, typer.Option(help="Seconds per LLM call (> 0).", callback=positive)] = 60.0,
    concurrency: Annotated[int, typer.Option(help="LLM requests in flight at most.", min=1)] = 8,
    write_cache: Annotated[bool, typer.Option(help="Keep the renders in the world's cache.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    heldout: Annotated[
        Path | None,
        typer.Option("--heldout", help="A held-out LWM set (an `export lwm` OUT, or *_test.jsonl): score on it."),
    ] = None,
    predictions: Annotated[
        Path | None,
        typer.Option(help="With --heldout: predictions ({id, prediction} JSONL, or eval.py's predictions.jsonl)."),
    ] = None,
) -> None:
    """Render sampled pages and result lists and check them against the graph: first-try pass
    rate, facts covered, contradictions, fallbacks, latency. `--world-model template` checks
    the template renderer itself (it must pass 100 %). With `--heldout DIR --predictions FILE`:
    score a world model's predictions on a held-out LWM set (facts stated, contradictions,
    format); with `--heldout DIR` alone, the --world-model's own renderings."""
    from fictionworld.worldmodel.fidelity import fidelity as run

    if predictions is not None and heldout is None:
        fail("--predictions needs --heldout (the held-out set the predictions are for)")
    config = world_model_config(world_model, world_model_url, world_model_name, world_model_api,
                                 timeout=timeout, max_concurrency=concurrency)  # fmt: skip
    if heldout is not None:
        given = [f"--{k.replace('_', '-')}" for k in ("n", "searches", "seed", "write_cache")
                 if getattr(ctx.get_parameter_source(k), "name", "") == "COMMANDLINE"]  # fmt: skip
        if given:
            fail(f"{', '.join(given)}: only for sampled pages, not with --heldout (it scores every held-out example)")
        _heldout(path, heldout, predictions, config, as_json)
        return
    web = saved_web(path)
    if config.kind == "sglang":
        serve_with(web, config)
    with Progress(TextColumn("fidelity"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err,
                  disable=as_json) as bar:  # fmt: skip
        task = bar.add_task("pages", total=min(n, len(web.pages)))
        summary = run(web, config, n=n, searches=searches, seed=seed, write_cache=write_cache,
                      progress=lambda k: bar.advance(task, k))  # fmt: skip
    if config.kind == "sglang" and not summary.get("rendered"):
        fail(f"nothing was rendered: the world model server at {config.base_url} never answered "
              f"({summary.get('unreachable', 0)} renderings fell back to templates); is it running?", 1)  # fmt: skip
    if as_json:
        print(json.dumps(summary, indent=2))
        return
    t = Table(title=f"world model {config.kind}" + (f" ({config.model})" if config.kind == "sglang" else "") +
              f": {summary['pages']} pages, {summary['searches']} searches, {summary['seconds']} s",
              title_justify="left")  # fmt: skip
    t.add_column("measure")
    t.add_column("value", justify="right")
    for k, label in _LABELS.items():
        v = summary.get(k)
        if v is None:
            continue
        t.add_row(label, f"{v:.1%}" if isinstance(v, float) and ("rate" in k or k == "facts_covered") else str(v))
    if summary.get("problems"):
        t.add_row("problems by kind", ", ".join(f"{k} {v}" for k, v in summary["problems"].items()))
    out.print(t)


_HELDOUT_LABELS = {
    "examples": "held-out examples",
    "missing_predictions": "without a prediction",
    "unknown_ids": "predictions for no example",
    "facts": "facts stated (recall)",
    "contradictions": "contradictions",
    "errors": "all errors",
    "examples_with_errors": "examples with errors",
    "format": "layout right",
    "pass_rate": "passed (all facts, no error)",
}


def _heldout(path: Path, heldout: Path, predictions: Path | None, config, as_json: bool) -> None:
    """``fidelity WORLD --heldout DIR [--predictions FILE]``: predictions (or the world model's
    own renderings) scored against the graph on a held-out LWM set."""
    from fictionworld.worldmodel.config import with_world_model
    from fictionworld.worldmodel.lwm import LwmError
    from fictionworld.worldmodel.lwm_score import model_predictions, read_heldout, read_predictions, score_predictions

    if predictions is not None and config.kind != "template":
        fail("--predictions are scored as they are; --world-model renders its own (give one of them)")
    try:
        rows = read_heldout(heldout)
        preds = read_predictions(predictions) if predictions is not None else None
    except LwmError as exc:
        fail(str(exc))
    web = saved_web(path)
    with Progress(TextColumn("scoring"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err,
                  disable=as_json or not err.is_interactive) as bar:  # fmt: skip
        try:
            if preds is None:
                view = with_world_model(web, config)
                if config.kind == "sglang":
                    serve_with(view, config)
                task = bar.add_task("rendering", total=len(rows))
                preds = model_predictions(view, rows, progress=lambda k: bar.advance(task, k))
            task = bar.add_task("scoring", total=len(rows))
            summary = score_predictions(web, rows, preds, progress=lambda k: bar.advance(task, k))
        except LwmError as exc:
            fail(str(exc))
    if as_json:
        print(json.dumps(summary, indent=2, default=str))
        return
    what = str(predictions) if predictions is not None else f"world model {config.kind}"
    t = Table(title=f"{what} on {heldout}: {summary['examples']} held-out examples", title_justify="left")
    t.add_column("measure")
    t.add_column("value", justify="right")
    for k, label in _HELDOUT_LABELS.items():
        v = summary[k]
        t.add_row(label, f"{v:.1%}" if isinstance(v, float) else str(v))
    if summary["problems"]:
        t.add_row("problems by kind", ", ".join(f"{k} {v}" for k, v in summary["problems"].items()))
    out.print(t)
    kinds = Table(title="by page kind", title_justify="left")
    for col in ("page kind", "examples", "facts", "passed"):
        kinds.add_column(col, justify="left" if col == "page kind" else "right")
    for kind, v in summary["by_kind"].items():
        kinds.add_row(kind, str(v["examples"]), f"{v['facts']:.1%}", f"{v['pass_rate']:.1%}")
    out.print(kinds)


def render_cache(
    path: Annotated[Path, typer.Argument(help="World directory.")],
    clear: Annotated[
        str | None, typer.Option(help="Forget stored renderings: fallback (give the LLM another try) or all.")
    ] = None,
) -> None:
    """Show (or clear) the LLM world model's stored renderings in a world (renders.sqlite)."""
    from fictionworld.storage import read_manifest
    from fictionworld.worldmodel.cache import CACHE_FILE, CacheError, RenderCache

    if clear is not None and clear not in ("fallback", "all"):
        fail(f"--clear must be fallback or all, not {clear!r}")
    read_manifest(path)  # a world directory (or a clear error)
    if not (path / CACHE_FILE).exists():
        fail(f"{path} has no render cache ({CACHE_FILE}): nothing was rendered by an LLM world model here")
    try:
        cache = RenderCache(path / CACHE_FILE)
    except CacheError as e:
        fail(str(e))
    if clear is not None:
        gone = cache.clear(source=None if clear == "all" else "fallback")
        out.print(f"forgot {gone} stored renderings")
    out.print(json.dumps(cache.counts()))


def register(app: typer.Typer) -> None:
    """Adds ``fidelity`` and ``render-cache`` to ``app``."""
    app.command()(fidelity)
    app.command("render-cache")(render_cache)
