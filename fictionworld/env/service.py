"""A world as a service: what every network protocol (Search-R1 ``/retrieve``, the HTTP tools,
MCP, Ray Serve) answers, in one place, so the adapters in ``fictionworld.integrations`` only map
their wire format onto it.

>>> service = WorldService.open("worlds/demo")                          # doctest: +SKIP
>>> service.retrieve(["Nagen Books"], topk=3, return_scores=True)     # Search-R1's shape
>>> service.search("Nagen Books", session="episode-7", seed=7)        # the env's ``search``

Two kinds of call:

- **retrieve**: Search-R1's protocol. Stateless; each query gets ``topk`` passages, each a whole
  page as plain text (``"Title"\\nText``), cut at :attr:`Limits.passage_chars`. The protocol has
  no ``open``, so the passage *is* the page: our pages are short (median about 1,000
  characters, 99 % under 2,300), so the default of 2,000 characters carries all of nearly every
  page, where a 100-word Wikipedia chunk would hide most facts behind a tool the agent lacks.
- **search / open**: the env's two tools, the same text ``SearchEnv`` shows, plus JSON of what
  that text shows (:data:`PAGE_FIELDS`, :data:`RESULT_FIELDS`: no graph labels, unless the
  service is opened with ``eval_labels`` for an evaluation). With a
  ``session`` id, faults are drawn from the session's seed in call order, exactly as the env's
  :class:`~fictionworld.web.WebSession` draws them, so an episode replays exactly. The call
  number is kept in a :class:`SessionTable` that forked workers share, or given by the client
  (``call``), which needs no server state at all (any worker, any replica).

Every limit a request could exceed is in :class:`Limits`; a request over one gets a
:class:`RequestError` naming it, never a partial answer.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import tempfile
import threading
import time
from collections import OrderedDict
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from fictionworld.errors import FictionWorldError
from fictionworld.knobs import Knobs
from fictionworld.seeding import hash_text, mix64_int
from fictionworld.web import Web, WebError, WebSession
from fictionworld.web.pages import Page, SearchResult
from fictionworld.web.speller import DeadlinePassed
from fictionworld.web.text import plain_text
from fictionworld.web.web import MAX_QUERY_CHARS

__all__ = ["WorldService", "Limits", "RequestError", "SessionTable", "Deadline", "passage_text", "page_payload",
           "result_payload", "PAGE_FIELDS", "RESULT_FIELDS", "LABEL_FIELDS"]  # fmt: skip

# What a client is sent of a page and of a search result: what an agent reads, no more. The
# graph's labels of a page (its kind, credibility, entities, the facts it states and those it
# states wrongly) would let a one-line rule drop every lying, confusable and distractor page and
# resolve namesakes without reading; they go out only to a service opened with ``eval_labels``,
# under ``labels``.
PAGE_FIELDS = ("url", "title", "site", "date", "text", "page_number", "page_count")
RESULT_FIELDS = ("rank", "url", "title", "snippet", "date", "score")
LABEL_FIELDS = ("kind", "credibility", "entity_ids", "fact_ids", "contradicts")


def page_payload(page: Page, *, labels: bool = False) -> dict:
    """A page as a client is sent it: :data:`PAGE_FIELDS`, plus its graph labels
    (:data:`LABEL_FIELDS`, under ``labels``) for an evaluation only."""
    out = {"url": page.url, "title": page.title, "site": page.site, "date": page.published.isoformat(),
           "text": page.text, "page_number": page.page_number, "page_count": page.page_count}  # fmt: skip
    if labels:
        out["labels"] = {"kind": page.kind, "credibility": page.credibility, "entity_ids": list(page.entity_ids),
                         "fact_ids": list(page.fact_ids), "contradicts": list(page.contradicts)}  # fmt: skip
    return out


def result_payload(result: SearchResult, rank: int, *, labels: bool = False) -> dict:
    """A search result as a client is sent it: :data:`RESULT_FIELDS`, plus the page's kind
    (under ``labels``) for an evaluation only."""
    out = {"rank": rank, "url": result.url, "title": result.title, "snippet": result.snippet,
           "date": result.date.isoformat(), "score": result.score}  # fmt: skip
    if labels:
        out["labels"] = {"kind": result.kind}
    return out


class Limits(BaseModel):
    """What one request may ask for, and how much work a worker takes on at once."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_body_bytes: int = Field(4 << 20, ge=1_024)  # a Search-R1 batch of 1,024 long queries fits
    max_queries: int = Field(1_024, ge=1)  # queries in one /retrieve batch
    default_topk: int = Field(3, ge=1)  # Search-R1's retriever default
    max_topk: int = Field(50, ge=1)
    max_query_chars: int = Field(MAX_QUERY_CHARS, ge=1)
    max_url_chars: int = Field(2_000, ge=10)
    max_session_chars: int = Field(200, ge=1)
    max_session_calls: int = Field(10_000, ge=1)  # calls one session may make
    max_sessions: int = Field(65_536, ge=1)  # sessions remembered at once (least recently used go)
    max_in_flight: int = Field(64, ge=1)  # requests a worker holds at once (counted once read whole); more get 503
    request_timeout_s: float = Field(30.0, gt=0)
    passage_chars: int = Field(2_000, ge=100)
    # The HTTP server's (fictionworld.integrations.http and .server; Ray Serve's proxy has its own
    # connection limits, its replicas apply the rest):
    max_work_s: float = Field(10.0, gt=0)  # search work one request may use, checked between queries and words (504)
    search_threads: int = Field(4, ge=1)  # threads a worker searches on: its event loop stays free
    body_timeout_s: float = Field(10.0, gt=0)  # a request's body must arrive within this of its headers (408)
    header_timeout_s: float = Field(10.0, gt=0)  # a connection's request headers must arrive within this (408)
    max_connections: int = Field(512, ge=2)  # connections a worker holds (idle ones are closed to make room)


class RequestError(FictionWorldError, ValueError):
    """A request the service refuses: ``status`` is the HTTP status that says why (400 bad
    value, 413 over a size limit, 422 wrong shape, 504 over the time limit)."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


class Deadline:
    """The time a request must be answered by; checked between units of work, so a batch stops
    (and says so) instead of running on after its client has given up."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def check(self) -> None:
        if time.monotonic() > self.end:
            raise RequestError(f"the request took over its time limit of {self.seconds:g} s", status=504)


class SessionTable:
    """How many calls each session has made, in memory that processes forked after it share:
    a fixed table of (session key, calls, last use); a full table forgets the least recently
    used session. Lookups are one vectorised scan (about 50 µs at 65,536 sessions)."""

    def __init__(self, size: int):
        self.size = size
        self._buf = mmap.mmap(-1, size * 24)  # anonymous and shared: forked workers see one table
        self.keys = np.frombuffer(self._buf, np.uint64, size, 0)
        self.calls = np.frombuffer(self._buf, np.uint64, size, size * 8)
        self.used = np.frombuffer(self._buf, np.uint64, size, size * 16)
        self._clock = np.frombuffer(mmap.mmap(-1, 8), np.uint64, 1)
        # A POSIX record lock on an unlinked file: exclusive between processes, and the kernel
        # releases it when its holder dies (a SIGKILLed worker cannot leave the others stuck).
        fd, name = tempfile.mkstemp(prefix="fictionworld-sessions-")
        os.unlink(name)
        self._fd = fd
        self._thread_lock = threading.Lock()  # record locks do not exclude threads of one process

    @contextmanager
    def _lock(self):
        with self._thread_lock:
            fcntl.lockf(self._fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.lockf(self._fd, fcntl.LOCK_UN)

    def next_call(self, key: int) -> int:
        """The number of calls ``key`` made before this one (0 for a new session)."""
        key = key or 1  # 0 marks an empty slot
        with self._lock():
            self._clock[0] += 1
            hit = np.flatnonzero(self.keys == key)
            if len(hit):
                slot = int(hit[0])
            else:
                free = np.flatnonzero(self.keys == 0)
                slot = int(free[0]) if len(free) else int(np.argmin(self.used))
                self.keys[slot], self.calls[slot] = key, 0
            n = int(self.calls[slot])
            self.calls[slot] += 1
            self.used[slot] = self._clock[0]
            return n

    def forget(self, key: int) -> bool:
        key = key or 1
        with self._lock():
            hit = np.flatnonzero(self.keys == key)
            self.keys[hit] = 0
            return bool(len(hit))

    def __len__(self) -> int:
        return int(np.count_nonzero(self.keys))


def passage_text(page: Page, limit: int) -> str:
    """A page as one Search-R1 passage: ``"Title"`` on the first line, then its plain text (no
    link targets), cut at ``limit`` characters on a word boundary."""
    text = "\n".join(line.strip() for line in plain_text(page.text).strip().splitlines())
    if len(text) > limit:
        cut = text.rfind(" ", 0, limit)
        text = text[: cut if cut > limit // 2 else limit].rstrip() + " …"
    return f'"{page.title}"\n{text}'


class WorldService:
    """A world's web answering protocol requests. Thread-safe for reads; one per process."""

    def __init__(self, web: Web, *, knobs: Knobs | None = None, limits: Limits | None = None,
                 sessions: SessionTable | None = None, directory: str | Path | None = None,
                 eval_labels: bool = False):  # fmt: skip
        """``eval_labels``: pages and results carry their graph labels (``labels``), for an
        evaluation harness, never for an agent; off by default."""
        self.web = web
        self.eval_labels = bool(eval_labels)
        self.knobs = knobs if knobs is not None else web.knobs
        self.limits = limits or Limits()
        self.sessions = sessions or SessionTable(self.limits.max_sessions)
        self.directory = str(directory) if directory is not None else None
        self._local: OrderedDict[int, WebSession] = OrderedDict()  # this process's sessions, by key
        self._local_lock = threading.Lock()
        self.preload = False  # map the web's files in after opening (start_preload), per process
        self.preloaded: dict = {"state": "off"}

    @classmethod
    def open(cls, directory: str | Path, *, knobs: Knobs | None = None, limits: Limits | None = None,
             warm: bool = True, preload: bool = False, eval_labels: bool = False) -> WorldService:  # fmt: skip
        """Opens a saved world and its web; ``warm`` runs one search now, so the first request is
        as fast as the rest. The world's data files are checked against the digests in its
        manifest, each before the first column read from it (``verify="on-read"``; recomputing
        the content hash reads every fact, about 9 s at a million entities): searches and pages
        read the web, not the graph, so the first answer does not wait for the graph's files
        (1 GB at 10M entities, seconds when they are not in the page cache). The tables are
        read column by column as requests need them, and the pages, index and lexicon are
        memory-mapped, so forked workers share them. ``preload``: the process that serves
        calls :meth:`start_preload` (not done here: a forked worker must, after the fork).
        ``eval_labels``: see the constructor. Raises WorldFormatError or WebError with one clear line."""
        from fictionworld.storage import load_world

        world = load_world(directory, verify="on-read")
        web = Web.load(world, directory)
        service = cls(web, knobs=knobs, limits=limits, directory=directory, eval_labels=eval_labels)
        service.preload = preload
        if warm:
            service.warm()
        return service

    def start_preload(self) -> threading.Thread | None:
        """In a background thread, map this process's maps of the web's files into its page
        tables (:meth:`Web.preload <fictionworld.web.Web.preload>`: what the page cache holds,
        nothing read from disk), so its searches stop faulting them in one by one; ``/info``
        says how it went. Call it in the process that serves, after any fork (page tables are
        not inherited for shared file maps). None when ``preload`` is off."""
        if not self.preload:
            return None

        def run() -> None:
            try:
                self.preloaded = self.web.preload().as_dict() | {"state": "done"}
            except Exception as exc:  # noqa: BLE001 (an optimisation: serving goes on without it)
                self.preloaded = {"state": "failed", "reason": f"{type(exc).__name__}: {exc}"}

        self.preloaded = {"state": "running"}
        thread = threading.Thread(target=run, name="fictionworld-preload", daemon=True)
        thread.start()
        return thread

    def warm(self) -> None:
        """One search and one page opened now, in the process that forks the workers (what it
        reads is theirs too): the first page opened in a process reads the entities' ids, 2.0 s
        at 10M entities (0.8 s reading the column, 0.9 s checking and parsing it), which every
        worker's first ``open`` paid. The spellers' letters are read too (35-38 ms each at 10M)."""
        web = self.web
        web.linker, web._speller, web._article_of  # noqa: B018 (built on first use)
        web.linker.speller._letters, web._speller._letters  # noqa: B018
        results = web.search(web.pages.titles[0], knobs=self.knobs)
        if results:
            web.open(results[0].url, knobs=self.knobs)

    def reopen_index(self) -> None:
        """Opens the search index anew (in a forked worker: the parent's index threads did not
        come along)."""
        from fictionworld.web.index import TantivyIndex

        if isinstance(self.web.index, TantivyIndex) and self.web.index.path is not None:
            self.web.index = TantivyIndex.open(self.web.index.path)

    # -- what the service is ---------------------------------------------------------------
    def info(self) -> dict:
        w, web = self.web.world, self.web.manifest()
        return {
            "world_hash": w.world_hash,
            "directory": self.directory,
            "counts": {"entities": len(w.entities), "facts": len(w.facts), "pages": len(self.web.pages)},
            "knobs": self.knobs.model_dump(mode="json"),
            "web": web,
            "renderer": web["renderer"],
            "world_model": type(self.web.model).__name__,
            "limits": self.limits.model_dump(),
            "preload": dict(self.preloaded),
            "tools": ["search", "open"],
            "eval_labels": self.eval_labels,
        }

    # -- Search-R1 -------------------------------------------------------------------------
    def retrieve(self, queries: list[str], topk: int | None = None, return_scores: bool = False,
                 deadline: Deadline | None = None) -> list[list[dict]]:  # fmt: skip
        """Search-R1's ``/retrieve``: per query, ``topk`` passages ``{"document": {"id",
        "contents", "url", "title", "date"}, "score"}`` (bare documents when not
        ``return_scores``). A blank query gets no passages, as a query matching nothing would."""
        lim = self.limits
        if not queries:
            raise RequestError("queries is empty: give at least one query", 422)
        if len(queries) > lim.max_queries:
            raise RequestError(f"{len(queries):,} queries in one request; at most {lim.max_queries:,}", 413)
        topk = lim.default_topk if topk is None else topk
        if not 1 <= topk <= lim.max_topk:
            raise RequestError(f"topk must be between 1 and {lim.max_topk}, not {topk}", 422)
        for i, q in enumerate(queries):
            if len(q) > lim.max_query_chars:
                raise RequestError(f"query {i} is {len(q):,} characters long; at most {lim.max_query_chars:,}", 413)
        # A directory page shows as many entries as the passage holds: there is no ?page=N here.
        knobs = self.knobs.model_copy(update={"list_page_size": 1000})
        out = []
        for q in queries:
            if deadline is not None:
                deadline.check()
            out.append(self._passages(q, topk, return_scores, knobs, deadline))
        return out

    def _passages(self, query: str, topk: int, return_scores: bool, knobs: Knobs,
                  deadline: Deadline | None = None) -> list[dict]:  # fmt: skip
        if not query.strip():
            return []
        try:  # the deadline is checked inside the query too: one query of many unknown words stops at it
            hits = self.web.hits(query, topk, self.knobs, deadline.end if deadline is not None else None)
        except WebError:  # a lone surrogate: nothing can match it
            return []
        except DeadlinePassed:
            deadline.check()  # past its end: the request's 504, saying which limit
            raise
        out = []
        for h in hits:
            page = self.web.model.render_page(self.web, h.page, 1, knobs)
            if not isinstance(page, Page):
                continue
            # the id is the URL: a page's row number tells the layers apart (they are rendered last)
            doc = {"id": page.url, "contents": passage_text(page, self.limits.passage_chars),
                   "url": page.url, "title": page.title, "date": page.published.isoformat()}  # fmt: skip
            out.append({"document": doc, "score": round(float(h.score), 6)} if return_scores else doc)
        return out

    # -- the env's tools -------------------------------------------------------------------
    def search(self, query: str, page: int = 1, k: int | None = None, *, session: str | None = None,
               seed: int | None = None, call: int | None = None, knobs: dict | None = None) -> dict:  # fmt: skip
        """The env's ``search``: ``text`` as the agent reads it, ``status``, and the results."""
        if len(query) > self.limits.max_query_chars:
            raise RequestError(f"query is {len(query):,} characters long; at most {self.limits.max_query_chars:,}", 413)
        if k is not None and not 1 <= k <= self.limits.max_topk:
            raise RequestError(f"k must be between 1 and {self.limits.max_topk}, not {k}", 422)
        ws = self._session(session, seed, call, knobs)
        res = ws.search(query, k, page)
        per_page = ws.knobs.results_per_page if k is None else k
        results = [result_payload(r, (page - 1) * per_page + i + 1, labels=self.eval_labels)
                   for i, r in enumerate(res.results)]  # fmt: skip
        return {"status": res.status, "text": res.text, "fault": res.fault, "results": results,
                **self._session_fields(session, ws)}  # fmt: skip

    def open_url(self, url: str, *, session: str | None = None, seed: int | None = None, call: int | None = None,
                 knobs: dict | None = None) -> dict:  # fmt: skip
        """The env's ``open``: ``text`` (the page as Markdown, or why not), ``status``, ``page``."""
        if len(url) > self.limits.max_url_chars:
            raise RequestError(f"url is {len(url):,} characters long; at most {self.limits.max_url_chars:,}", 413)
        ws = self._session(session, seed, call, knobs)
        res = ws.open(url)
        page = page_payload(res.page, labels=self.eval_labels) if res.page is not None else None
        return {"status": res.status, "text": res.text, "fault": res.fault, "page": page,
                **self._session_fields(session, ws)}  # fmt: skip

    def end_session(self, session: str, seed: int | None = None) -> bool:
        """Forgets a session: its next call starts its fault draws from the beginning."""
        key = self._key(session, self._seed(session, seed))
        with self._local_lock:
            self._local.pop(key, None)
        return self.sessions.forget(key)

    # -- sessions --------------------------------------------------------------------------
    def _knobs(self, overrides: dict | None) -> Knobs:
        if not overrides:
            return self.knobs
        from pydantic import ValidationError

        try:
            return Knobs.model_validate(self.knobs.model_dump() | overrides)
        except ValidationError as exc:
            from fictionworld.errors import problem_lines

            raise RequestError("; ".join(problem_lines(exc, what="knob", model=Knobs)), 422) from None

    def _seed(self, session: str | None, seed: int | None) -> int:
        if seed is not None:
            return seed
        return hash_text(session) if session else 0

    @staticmethod
    def _key(session: str, seed: int) -> int:
        return mix64_int(hash_text(session), seed & 0xFFFFFFFFFFFF) or 1

    def _session(self, session: str | None, seed: int | None, call: int | None, overrides: dict | None) -> WebSession:
        lim = self.limits
        knobs = self._knobs(overrides)
        if session is None:
            if call is not None:
                raise RequestError("call is given without a session: name the session it counts in", 422)
            # One call, no episode: faults drawn as the first call of a session seeded ``seed``.
            return WebSession(self.web, knobs, self._seed(None, seed))
        if len(session) > lim.max_session_chars:
            raise RequestError(f"session id is {len(session):,} characters long; at most {lim.max_session_chars}", 413)
        s = self._seed(session, seed)
        key = self._key(session, s)
        n = self.sessions.next_call(key) if call is None else call
        if not 0 <= n < lim.max_session_calls:
            raise RequestError(f"call must be between 0 and {lim.max_session_calls - 1:,}, not {n:,}", 422)
        with self._local_lock:
            ws = self._local.pop(key, None)
            if ws is None or ws.calls != n or ws.knobs != knobs:
                ws = WebSession(self.web, knobs, s, calls=n)  # resumes the draws at call n
            self._local[key] = ws
            while len(self._local) > 4_096:
                self._local.popitem(last=False)
        return ws

    @staticmethod
    def _session_fields(session: str | None, ws: WebSession) -> dict:
        return {} if session is None else {"session": session, "call": ws.calls - 1}
