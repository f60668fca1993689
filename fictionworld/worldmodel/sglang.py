"""``SGLangWorldModel``: pages and result snippets written by an LLM served by SGLang, checked
against the graph before an agent sees them, stored once per URL for every worker and run.

For each page it renders, it asks the server for the page body (grounded in the page's facts),
verifies it (:mod:`fictionworld.worldmodel.verify`), asks again with the problems listed (at
most ``max_attempts`` in all), and otherwise serves the template page. Directory pages and the
perturbation layers (forums, blogs, fake profiles) stay template pages: their content is the
knobs' contract. Requests are async with bounded concurrency; a server that does not answer
(after the client's timeout and retries) is skipped for ``cooldown`` seconds with one clear
warning, and template pages are served meanwhile, never stored.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
import weakref
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
from pydantic import ValidationError

from fictionworld.knobs import Knobs
from fictionworld.web.model import Hit, TemplateWorldModel
from fictionworld.web.pages import Page, PageNotFound, SearchResult
from fictionworld.web.render import RENDERER
from fictionworld.worldmodel.cache import RenderCache
from fictionworld.worldmodel.client import ServerUnreachable, WorldModelClient
from fictionworld.worldmodel.config import QWEN_AGENTWORLD_SAMPLING
from fictionworld.worldmodel.prompts import (
    PROMPT_VERSION,
    RenderedResults,
    observation_of,
    page_messages,
    results_messages,
    retry_turn,
)
from fictionworld.worldmodel.verify import PROBLEM_KINDS, Problem, Verdict, Verifier, fold

__all__ = ["SGLangWorldModel", "FidelityStats", "AUTHORED_KINDS"]

log = logging.getLogger("fictionworld.worldmodel")
AUTHORED_KINDS = ("article", "org_about", "org_history", "org_leadership", "org_people", "news")
_SCHEMA = RenderedResults.model_json_schema()


@dataclass
class FidelityStats:
    """What happened to every rendering this model was asked for (pages and result snippets)."""

    rendered: int = 0  # pages and snippets rendered by the LLM (not from the cache)
    cache_hits: int = 0
    first_try: int = 0  # passed verification at the first attempt
    after_retry: int = 0  # passed after feedback
    fallbacks: int = 0  # failed every attempt: template served (and stored)
    unreachable: int = 0  # server down or too slow: template served (not stored)
    required: int = 0  # facts required at first attempts
    covered: int = 0  # ... and stated
    problems: Counter = field(default_factory=Counter)  # by kind, over all attempts
    calls: int = 0
    call_seconds: list = field(default_factory=list)
    render_seconds: list = field(default_factory=list)  # per LLM rendering, attempts included
    prompt_tokens: int = 0
    cached_tokens: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def record(self, v: Verdict, attempt: int) -> None:
        with self._lock:
            if attempt == 1:
                self.required += v.required
                self.covered += v.covered
            for p in v.problems:
                self.problems[p.kind] += 1

    def summary(self) -> dict:
        """Rates and counts, as ``fictionworld fidelity`` prints them."""
        n = self.rendered
        pct = lambda a, b: round(a / b, 4) if b else None  # noqa: E731
        q = lambda xs, p: round(float(np.percentile(xs, p)), 3) if xs else None  # noqa: E731
        return {
            "rendered": n,
            "first_try_pass_rate": pct(self.first_try, n),
            "pass_rate_after_retries": pct(self.first_try + self.after_retry, n),
            "fallbacks": self.fallbacks,
            "unreachable": self.unreachable,
            "cache_hits": self.cache_hits,
            "facts_required": self.required,
            "facts_covered": pct(self.covered, self.required),
            "contradictions": self.problems["contradiction"],
            "unsupported_values": self.problems["unsupported"],
            "namesakes": self.problems["namesake"],
            "problems": {k: self.problems[k] for k in PROBLEM_KINDS if self.problems[k]},
            "llm_calls": self.calls,
            "call_latency_p50_s": q(self.call_seconds, 50),
            "call_latency_p95_s": q(self.call_seconds, 95),
            "render_latency_p50_s": q(self.render_seconds, 50),
            "render_latency_p95_s": q(self.render_seconds, 95),
            "prompt_tokens": self.prompt_tokens,
            "cached_prompt_tokens": self.cached_tokens,
        }


class SGLangWorldModel:
    """The LLM world model, bound to one web. ``cache`` is a :class:`RenderCache` (by default
    ``renders.sqlite`` in the world directory, in memory for a world that has none)."""

    name = "sglang"

    def __init__(self, web, base_url: str, model: str = "default", *, api: str = "chat",
                 cache: RenderCache | None = None, timeout: float = 60.0, retries: int = 2,
                 max_attempts: int = 3, max_concurrency: int = 8, max_tokens: int = 4096,
                 sampling: dict | None = None, extra_body: dict | None = None, api_key: str | None = None,
                 kinds: Iterable[str] = AUTHORED_KINDS, cooldown: float = 30.0):  # fmt: skip
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.web = web
        self.template = TemplateWorldModel()
        self.client = WorldModelClient(base_url, model, api=api, api_key=api_key, timeout=timeout, retries=retries,
                                       max_concurrency=max_concurrency, extra_body=extra_body,
                                       sampling=QWEN_AGENTWORLD_SAMPLING if sampling is None else sampling)  # fmt: skip
        if cache is None:
            path = getattr(web.world, "path", None)
            cache = RenderCache(path / "renders.sqlite" if path is not None else None)
        self.cache = cache
        # what a stored page depends on: the world, the model, the prompts, and the template
        # renderer (a page that failed verification is stored as the template's)
        self.ns = f"{web.world.world_hash[:16]}|{model}|{PROMPT_VERSION}|{RENDERER}"
        self.max_attempts, self.max_tokens, self.cooldown = int(max_attempts), int(max_tokens), float(cooldown)
        self.kinds = frozenset(kinds)
        self.stats = FidelityStats()
        self.names: list[str] = web.world.entities.name.tolist()
        self._verifier: Verifier | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopper: weakref.finalize | None = None
        self._loop_lock = threading.Lock()
        self._inflight: dict[str, asyncio.Task] = {}
        self._down_until = 0.0
        # the longest a render can take: every attempt's retries timing out, plus backoff
        per_call = (retries + 1) * (timeout + 5.0) + 0.5 * 2 ** (retries + 1)
        self.hard_limit = self.max_attempts * per_call + 10.0

    @property
    def verifier(self) -> Verifier:
        if self._verifier is None:
            self._verifier = Verifier(self.web)
        return self._verifier

    # -- the world-model contract (sync) -------------------------------------------------
    def render_page(self, web, row: int, page_number: int, knobs: Knobs) -> Page | PageNotFound:
        base = self.template.render_page(web, row, page_number, knobs)
        if not isinstance(base, Page) or base.kind not in self.kinds:
            return base
        text = self._run(self.apage(row))
        return base if text is None else base.model_copy(update={"text": text})

    def render_results(self, web, query: str, hits: list[Hit], knobs: Knobs) -> list[SearchResult]:
        base = self.template.render_results(web, query, hits, knobs)
        todo = [(h.page, web.leaks(query, h.page, knobs.snippet_leak_rate)) for h in hits
                if web.pages.kind[h.page] in self.kinds]  # fmt: skip
        if not todo:
            return base
        snippets = self._run(self.aresults(query, todo)) or {}
        return [r.model_copy(update={"snippet": snippets[r.url]}) if r.url in snippets else r for r in base]

    # -- async ---------------------------------------------------------------------------
    async def apage(self, row: int) -> str | None:
        """The body of page ``row``: stored, or rendered, verified and stored; None when the
        server cannot be reached (serve the template page, store nothing)."""
        url = self.web.pages.urls[row]
        hit = self.cache.get(self.ns, url)
        if hit is not None:
            self.stats.cache_hits += 1
            return hit[0]
        task = self._inflight.get(url)
        if task is None:  # one rendering per URL in this process; the cache settles the others
            task = asyncio.ensure_future(self._render_page(row))
            self._inflight[url] = task
            task.add_done_callback(lambda _t: self._inflight.pop(url, None))
        return await asyncio.shield(task)

    async def _render_page(self, row: int) -> str | None:
        if self._is_down():
            return None
        v = self.verifier
        g = v.grounding(row)
        history = []
        for key, body in self.cache.about(self.ns, g.url):
            if key.startswith("r|"):
                query = key.split("|", 2)[1]
                history.append(({"tool": "search", "query": query}, json.loads(body)["snippet"]))
        msgs = page_messages(g, self.names, history)
        head = f"# {g.title}\n\nURL: {g.url}\nSite: {g.site}\nDate: {g.published.isoformat()}\n\n"
        t0 = time.perf_counter()
        for attempt in range(1, self.max_attempts + 1):
            reply = await self._complete(msgs)
            if reply is None:
                return None
            body = observation_of(reply)
            verdict = v.verify_page(g, head + body)
            if not body.strip():
                verdict.problems.append(Problem("format", "the page is empty"))
            self.stats.record(verdict, attempt)
            if verdict.ok:
                self._done(attempt, t0)
                return self.cache.put(self.ns, g.url, g.url, body, "llm", attempt)[0]
            msgs = [*msgs, {"role": "assistant", "content": reply}, retry_turn(verdict.feedback())]
        self._done(0, t0)
        return self.cache.put(self.ns, g.url, g.url, self.web.pages.text(row), "fallback", self.max_attempts)[0]

    async def aresults(self, query: str, items: list[tuple[int, bool]]) -> dict[str, str]:
        """Snippets (by URL) for hits ``items`` = [(page row, may show values)] of ``query``."""
        q = " ".join(fold(query).replace("|", " ").split())
        out: dict[str, str] = {}
        todo = []
        for row, leak in items:
            url = self.web.pages.urls[row]
            hit = self.cache.get(self.ns, _rkey(q, url, leak))
            if hit is not None:
                self.stats.cache_hits += 1
                out[url] = json.loads(hit[0])["snippet"]
            else:
                todo.append((row, leak))
        if todo and not self._is_down():
            out |= await self._render_results(query, q, todo)
        return out

    async def _render_results(self, query: str, q: str, todo: list[tuple[int, bool]]) -> dict[str, str]:
        v = self.verifier
        pending = {}
        for row, leak in todo:
            g = v.grounding(row)
            page = self.cache.get(self.ns, g.url)
            pending[g.url] = (row, g, leak, page[0] if page else None)
        out: dict[str, str] = {}
        feedback: list[dict] = []
        t0 = time.perf_counter()
        for attempt in range(1, self.max_attempts + 1):
            items = [(g, leak, text) for _, g, leak, text in pending.values()]
            reply = await self._complete(results_messages(query, items, self.names) + feedback, schema=_SCHEMA)
            if reply is None:
                return out
            try:
                got = {r.url: r for r in RenderedResults.model_validate_json(observation_of(reply)).results}
                bad_json = None
            except (ValidationError, ValueError) as e:
                got, bad_json = {}, str(e).splitlines()[0]
            notes = []
            for url, (_row, g, leak, _text) in list(pending.items()):
                r = got.get(url)
                if r is None:
                    verdict = Verdict(required=1, problems=[Problem("format", bad_json and f"not JSON of the schema "
                                      f"({bad_json})" or f"no result for {url}")])  # fmt: skip
                else:
                    verdict = v.verify_result(g, r.title, r.snippet, leak=leak)
                self.stats.record(verdict, attempt)
                if verdict.ok:
                    self._done(attempt, t0)
                    body = json.dumps({"title": g.title, "snippet": r.snippet})
                    stored = self.cache.put(self.ns, _rkey(q, url, leak), url, body, "llm", attempt)
                    out[url] = json.loads(stored[0])["snippet"]
                    del pending[url]
                else:
                    notes.append(f"[{url}]\n{verdict.feedback()}")
            if not pending:
                return out
            feedback = [{"role": "assistant", "content": reply}, retry_turn("\n".join(notes))]
        for url, (row, g, leak, _text) in pending.items():
            self._done(0, t0)
            knobs = Knobs(snippet_leak_rate=1.0 if leak else 0.0)
            snippet = self.template.render_results(self.web, query, [Hit(row, 0.0)], knobs)[0].snippet
            body = json.dumps({"title": g.title, "snippet": snippet})
            stored = self.cache.put(self.ns, _rkey(q, url, leak), url, body, "fallback", self.max_attempts)
            out[url] = json.loads(stored[0])["snippet"]
        return out

    async def _complete(self, msgs: list[dict], schema: dict | None = None) -> str | None:
        try:
            c = await self.client.complete(msgs, schema=schema, max_tokens=self.max_tokens)
        except ServerUnreachable as e:
            self._mark_down(e)
            return None
        s = self.stats
        with s._lock:
            s.calls += 1
            s.call_seconds.append(c.seconds)
            s.prompt_tokens += c.prompt_tokens
            s.cached_tokens += c.cached_tokens
        return c.text

    def _done(self, attempt: int, t0: float) -> None:
        s = self.stats
        with s._lock:
            s.rendered += 1
            s.render_seconds.append(time.perf_counter() - t0)
            if attempt == 1:
                s.first_try += 1
            elif attempt > 1:
                s.after_retry += 1
            else:
                s.fallbacks += 1

    def _is_down(self) -> bool:
        if time.monotonic() < self._down_until:
            self.stats.unreachable += 1
            return True
        return False

    def _mark_down(self, e: Exception) -> None:
        self.stats.unreachable += 1
        if time.monotonic() >= self._down_until:
            log.warning("world model server unreachable: %s; serving template pages for %g s, then trying again",
                        e, self.cooldown)  # fmt: skip
        self._down_until = time.monotonic() + self.cooldown

    # -- running from sync code ----------------------------------------------------------
    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._loop_lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="fictionworld-world-model", daemon=True)
                thread.start()
                # stopped when the model is closed, collected, or at the latest at interpreter exit
                # (weakref.finalize runs at exit), never left running into the interpreter's
                # finalization with its HTTP connections open
                self._loop, self._stopper = loop, weakref.finalize(self, _stop_loop, loop, thread, self.client)
            return self._loop

    def _run(self, coro):
        """Runs ``coro`` on the model's event loop; None (template served) if it fails or takes
        longer than ``hard_limit`` seconds."""
        fut = asyncio.run_coroutine_threadsafe(coro, self._ensure_loop())
        try:
            return fut.result(timeout=self.hard_limit)
        except TimeoutError:
            fut.cancel()
            self._mark_down(TimeoutError(f"no rendering within {self.hard_limit:g} s"))
        except Exception as e:  # a bug must not take an episode down: say it, serve the template
            log.warning("world model failed (%s: %s); serving the template page", type(e).__name__, e)
        return None

    def prerender(self, rows: Iterable[int], progress: Callable[[int], None] | None = None) -> list[str | None]:
        """Renders pages concurrently (at most ``max_concurrency`` requests in flight)."""

        async def one(row):
            out = await self.apage(row)
            if progress:
                progress(1)
            return out

        async def run():
            return await asyncio.gather(*(one(r) for r in rows))

        fut = asyncio.run_coroutine_threadsafe(run(), self._ensure_loop())
        return fut.result()

    def check(self, timeout: float = 5.0) -> None:
        """Raises :class:`ServerUnreachable` unless the server answers its health check."""
        import httpx

        for path in ("/health", "/v1/models"):
            try:
                r = httpx.get(self.client.root + path, timeout=timeout)
                if r.status_code < 500:
                    return
            except httpx.HTTPError as e:
                last = f"{type(e).__name__}: {e}"
                continue
            last = f"HTTP {r.status_code}"
        raise ServerUnreachable(f"no SGLang server answers at {self.client.root} ({last})")

    def close(self) -> None:
        """Closes the HTTP connections and stops the model's event-loop thread (it starts again
        on the next render). Also done when the model is collected, and at interpreter exit."""
        with self._loop_lock:
            if self._loop is not None:
                self._loop = None
                self._stopper()

    def __enter__(self) -> SGLangWorldModel:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _stop_loop(loop: asyncio.AbstractEventLoop, thread: threading.Thread, client, timeout: float = 5.0) -> None:
    """Closes ``client``'s connections on ``loop``, stops the loop, joins ``thread`` (its
    runner) and closes the loop; a loop that does not stop within ``timeout`` is left to the
    daemon thread."""
    if loop.is_closed():
        return
    if threading.current_thread() is thread:  # collected on its own loop: stop it, nothing to wait for
        loop.call_soon_threadsafe(loop.stop)
        return
    if thread.is_alive():
        try:
            asyncio.run_coroutine_threadsafe(client.aclose(), loop).result(timeout=timeout)
        except Exception as e:  # noqa: BLE001 (closing must not raise: the connections go with the loop)
            log.debug("world model: closing the HTTP client failed: %s", e)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)
    if not thread.is_alive():
        loop.close()


def _rkey(q: str, url: str, leak: bool) -> str:
    return f"r|{q}|{url}|{int(leak)}"
