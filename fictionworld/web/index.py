"""Full-text search backends behind one small contract.

:class:`TantivyIndex` is the default (chosen by ``benchmarks/bench_search.py``: it builds fastest,
opens from disk in milliseconds by memory-mapping, and meets the latency targets at 100k
entities). Scoring is BM25 over two fields, the title boosted; ties break on the page id so the
same query always gives the same ranking (segments are listed by page id, so tantivy's own
tie-break, the lower document address, agrees; README, "One index, the same ranking", gives
the one case where tantivy's merge of segments does not keep it).
"""

from __future__ import annotations

import functools
import shutil
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

import numpy as np

from fictionworld.errors import FictionWorldError, is_native_panic
from fictionworld.folding import fold_phrase
from fictionworld.web.common_clauses import ANY_SCORE, CommonClauses
from fictionworld.web.index_files import (
    COMMON_BEST,
    COMMON_TERMS,
    PID_RUNS,
    frequent_terms,
    join_common_terms,
    open_runs,
    order_segments,
    write_common_best,
    write_json,
    write_pid_runs,
)
from fictionworld.web.index_schema import build_analyzer, build_schema, page_document

__all__ = [
    "SearchBackend",
    "TantivyIndex",
    "DamagedIndexError",
    "TITLE_BOOST",
    "COMMON_SHARE",
    "COMMON_CLAUSE",
    "COMMON_POSTINGS",
    "common_limit",
    "PID_RUNS",
    "COMMON_BEST",
    "COMMON_TERMS",
    "order_segments",
    "frequent_terms",
    "write_common_best",
    "join_common_terms",
]

TITLE_BOOST = 3.0
# A query word in more than this share of pages is dropped when rarer words remain: it would
# match most of the index and cost most of the time, yet barely changes the ranking.
COMMON_SHARE = 0.1
# A clause (a word in the title or body field) on more than this share of pages is scored only
# where it can change the top n (:meth:`TantivyIndex.search`); the answer stays exact.
COMMON_CLAUSE = 0.005
# ... or on more than this many pages, whichever is fewer: a clause's cost grows with its pages,
# not with its share of them. At 10M entities a first name ("janina", on 63,000 pages) is under
# 0.5 % of the 25.6M pages, yet scoring it whole took most of a search; routed the common way
# (its best pages found once per process, cached), queries asked before took the engine p50
# 0.93 ms instead of 3.57 ms; a fresh process's first queries pay in the tail (p99 45.6 ms
# against 18.3 ms). `benchmarks/BIG_WORLDS.md`, "Common words are scored only where they can change the answer".
COMMON_POSTINGS = 5_000
# The rare-first query adds at most this many common clauses one at a time (:meth:`_added`);
# past it, their union. Each link is a scorer over the one below it, and a long chain costs far
# more per page of the rare clauses than its seeks: long queries of common words took seconds. At 10M,
# over the 2,400 latency queries and 231 made of random words, a chain of at most 8 was never
# slower than the union on average, whatever the pages led (0.26-0.44 against 0.42-0.89 ms where
# the rare clauses hold few pages), and chains of 17 or more were 1.6-57 times slower.
_MAX_ADDED = 8


def common_limit(num_docs: int) -> float:
    """Pages a clause may be on and still be rare (scored whole) in an index of ``num_docs``."""
    return min(COMMON_CLAUSE * num_docs, COMMON_POSTINGS)


class SearchBackend(Protocol):
    """What a search index must do for :class:`~fictionworld.web.Web`; pages are identified by
    their row in the PageTable. Any object with these members plugs in (``Web(world, pages,
    backend)``, or ``Web.build(world, backend=factory)``); :class:`TantivyIndex` is the default.
    A backend that can be saved with its world also has ``path``: the directory holding it.
    One whose ``search`` also takes ``hide`` (perturbation layers whose pages to leave out,
    each page's score unchanged) says so with ``hides_layers = True``; its build factory, to
    be given (title, body, layer) triples, has ``layered = True`` (``TantivyIndex`` does both)."""

    name: str

    def analyze(self, text: str) -> list[str]:
        """The index terms of ``text`` (what ``search`` and ``doc_freq`` take)."""
        ...

    def doc_freq(self, token: str) -> int:
        """How many pages hold ``token`` (0: a word the index does not know)."""
        ...

    def search(self, tokens: list[str], n: int) -> tuple[np.ndarray, np.ndarray]:
        """Best ``n`` page ids and their scores, best first, ties by page id."""
        ...


class DamagedIndexError(FictionWorldError, RuntimeError):
    """tantivy failed on the index's files (a panic inside it): they are damaged."""

    exit_code = 1


def _damaged(path: Path | None, exc: BaseException) -> DamagedIndexError:
    what = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
    return DamagedIndexError(
        f"{path or 'the search index'}: the search index is damaged (tantivy failed: {what}); "
        "rebuild it with `fictionworld index --force`"
    )


@contextmanager
def _panics_as_damage(path: Path | None):
    """A tantivy panic inside (a ``BaseException`` every ``except Exception`` misses: a CLI
    traceback, a server's plain-text 500) comes out as a :class:`DamagedIndexError`."""
    try:
        yield
    except BaseException as exc:
        if is_native_panic(exc):
            raise _damaged(path, exc) from None
        raise


def _native(method):
    """A method run in :func:`_panics_as_damage`."""

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        with _panics_as_damage(self.path):
            return method(self, *args, **kwargs)

    return call


class TantivyIndex:
    name = "tantivy"

    def __init__(self, index, path: Path | None):
        import tantivy

        self._t = tantivy
        self.index = index
        self.path = path
        self.index.register_tokenizer("fw", build_analyzer())
        self._analyzer = build_analyzer()
        self.schema = self.index.schema
        self.searcher = self.index.searcher()
        self.num_docs = self.searcher.num_docs
        self._df: dict[tuple[str, str], int] = {}  # document frequency per clause (field, token)
        self._outside: dict[tuple[str, tuple[str, ...]], int] = {}  # freq_outside per (token, layers)
        self.common = CommonClauses(self)  # what the search knows of the common clauses, cached
        self._runs = open_runs(self.searcher, path) if path is not None else None
        try:  # an index built before pages had their layer indexed cannot leave layers out
            self.searcher.doc_freq("layer", "")
            self.hides_layers = True
        except ValueError:
            self.hides_layers = False

    @classmethod
    def build(
        cls,
        docs: Iterable[tuple[str, str] | tuple[str, str, str]],
        path: str | Path,
        *,
        threads: int = 1,
        heap: int = 512_000_000,
        progress: Callable[[int], None] | None = None,
        first_id: int = 0,
        terms_above: float | None = None,
    ) -> TantivyIndex:
        """Index (title, body) pairs, or (title, body, layer) triples (``build.layered``); the
        i-th becomes page id ``first_id + i`` (a shard of a web starts at its first page's id).
        Writes to ``path``, with :data:`COMMON_BEST`; a shard of an index passes
        ``terms_above`` and gets its :data:`COMMON_TERMS` instead (the terms on more than that
        many of its pages)."""
        import tantivy

        path = Path(path)
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        index = tantivy.Index(build_schema(), path=str(path))
        index.register_tokenizer("fw", build_analyzer())
        writer = index.writer(heap_size=heap * threads, num_threads=threads)
        for i, doc in enumerate(docs):
            writer.add_document(page_document(first_id + i, *doc))
            if progress and i % 10_000 == 0:
                progress(i)
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        write_pid_runs(index.searcher(), path)
        if order_segments(path):
            index = tantivy.Index.open(str(path))
        built = cls(index, path)
        if terms_above is None:
            write_common_best(built)
        else:
            write_json(path / COMMON_TERMS, frequent_terms(built.searcher, terms_above))
        return built

    @classmethod
    def open(cls, path: str | Path) -> TantivyIndex:
        import tantivy

        path = Path(path)
        if not (path / "meta.json").exists():
            raise FileNotFoundError(f"no search index in {path}")
        with _panics_as_damage(path):
            return cls(tantivy.Index.open(str(path)), path)

    @property
    def version(self) -> str:
        return self._t.__version__

    def analyze(self, text: str) -> list[str]:
        return self._analyzer.analyze(text)

    @_native
    def doc_freq(self, token: str) -> int:
        return self._field_df("body", token) + self._field_df("title", token)

    @_native
    def freq_outside(self, token: str, layers: Iterable[str]) -> int:
        """Pages holding ``token`` (title or body) outside the perturbation layers ``layers`` (an
        index that ``hides_layers``). One count over the token's pages, each sought in the
        layers' postings: it costs about what ``token``'s pages do, so a caller asks it of
        rare words. Cached."""
        t = self._t
        layers = tuple(h for h in layers if self._field_df("layer", h))
        key = (token, layers)
        total = self._outside.get(key)
        if total is None:
            held = [(t.Occur.Should, t.Query.term_query(self.schema, f, token, "basic")) for f in ("title", "body") if self._field_df(f, token)]  # fmt: skip
            total = 0
            if held:
                out = [(t.Occur.MustNot, t.Query.term_query(self.schema, "layer", h, "basic")) for h in layers]
                query = t.Query.boolean_query([(t.Occur.Must, t.Query.boolean_query(held)), *out])
                total = self.searcher.search(query, limit=1, count=True).count
            if len(self._outside) > 200_000:
                self._outside.clear()
            self._outside[key] = total
        return total

    @_native
    def exact_titles(self, title: str, n: int = 10_000) -> list[int]:
        """Ids (ascending) of the pages titled ``title``, case, accents and spacing aside."""
        key = fold_phrase(title)
        # Most queries are no page's title: a term's document count (a dictionary lookup per
        # segment) says so in a tenth of the time of a search for it.
        if not key or not self.searcher.doc_freq("title_key", key):
            return []
        query = self._t.Query.term_query(self.schema, "title_key", key)
        hits = self.searcher.search(query, limit=n, count=False).hits
        return sorted(self._pids([h[1] for h in hits]).tolist()) if hits else []

    def _pids(self, addresses: list) -> np.ndarray:
        """Page ids of tantivy document addresses."""
        if self._runs is None:
            return np.array(self.searcher.fast_field_values("pid", addresses), np.int64)
        return self._runs.pids(
            np.fromiter((a.segment_ord for a in addresses), np.int64, len(addresses)),
            np.fromiter((a.doc for a in addresses), np.int64, len(addresses)),
        )

    @_native
    def search(self, tokens: list[str], n: int, hide: Iterable[str] = ()) -> tuple[np.ndarray, np.ndarray]:
        """BM25 over the title (boosted) and body clauses of ``tokens``: best ``n`` page ids and
        scores, best first, ties by page id, leaving out the pages of the perturbation layers
        ``hide`` (an index that ``hides_layers``; else ``hide`` must be empty). A page's score
        does not depend on ``hide``: the same pages in the same order as a search that hides
        nothing, less those of ``hide``.

        Clauses on more pages than :func:`common_limit` allows (the body clause of "born",
        "film", "founded"; at 10M entities, of a first name) would cost most of the time. So
        the pages holding a rarer clause are ranked first, their common clauses added to their
        score one at a time (:meth:`_added`). A page with common clauses only scores at most the
        sum of those clauses' best scores (written by the build, :data:`COMMON_BEST`; else found
        once per clause and cached): when the n-th page already beats that bound, the answer is
        final. Else the
        pages with common clauses only are ranked too, and the two lists merged: those that can
        reach a floor (the n-th page's score, or a common clause's own n-th best, which n pages
        of the union reach) by the covers of :meth:`CommonClauses.above`, else all of them by a plain
        union. The result is the exact top ``n`` of the whole query
        (``tests/test_search_exactness.py`` compares it with one unpruned query): a page scores
        its clauses' scores added left to right either way, the rare clauses' union first
        (``((rare + c1) + c2) ...``; a page with common clauses only, ``(c1 + c2) ...``), and
        each list keeps tied pages as one query over the whole index does (past
        :data:`_MAX_ADDED` common clauses, a page holding a rare one scores ``rare + (c1 + c2
        ...)``)."""
        t = self._t
        hide = tuple(sorted(set(hide)))
        if hide and not self.hides_layers:
            raise ValueError(
                f"{self.path}: this index does not know the pages' layers (built before they were indexed)"
            )
        hide = tuple(h for h in hide if self._field_df("layer", h))  # (a layer with no page costs nothing)
        tokens = list(dict.fromkeys(tokens))
        if len(tokens) > 1:
            rare = [x for x in tokens if self.doc_freq(x) <= COMMON_SHARE * self.num_docs]
            tokens = rare or tokens
        if not tokens or n <= 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        # A clause on no page scores nothing: dropped, it costs nothing either (most words of a
        # query are in no title).
        df = {(field, tok): self._field_df(field, tok) for tok in tokens for field in ("title", "body")}
        clauses = [c for c, d in df.items() if d]
        if not clauses:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        limit = common_limit(self.num_docs)
        common = [c for c in clauses if df[c] > limit]
        rare = [c for c in clauses if c not in common]
        if not common or not rare:
            hits = self._top(self._union(clauses), n, hide)
        else:
            if len(common) <= _MAX_ADDED:
                query = self._added(self._union(rare), common)
            else:
                query = t.Query.boolean_query(
                    [(t.Occur.Must, self._union(rare)), (t.Occur.Should, self._union(common))]
                )
            hits = self._top(query, n, hide)
            if len(hits) < n or hits[-1][0] <= self.common.bound(common):
                # The best n pages by the common clauses alone (a plain union, every posting
                # read: tantivy-py does not prune), less those already in ``hits``. Enough: each page dropped
                # outranks every common-only page below the n; a page with a rare clause not in
                # ``hits`` scores below the n-th of ``hits`` (its common part lower still).
                # Only pages reaching a floor can matter: the n-th of ``hits``, and the n-th
                # best score of a common clause alone (n pages of the union score at least
                # that); above a floor, the covers find them (:meth:`CommonClauses.above`).
                mine = {(h[1].segment_ord, h[1].doc) for h in hits}
                floor = hits[-1][0] if len(hits) == n else 0.0
                if not hide:  # (a clause's n-th over every page may be above its n-th shown one)
                    floor = max(floor, self.common.floor(common, n))
                more = self.common.tops.get((*common, n, hide))  # (the union's best n, asked before)
                if more is None:  # (no floor: every page of a clause scores above 0, BM25's idf being positive)
                    more = self.common.above(common, max(floor, ANY_SCORE), n, hide)
                if more is None:
                    more = self.common.union_top(common, self._union(common), n, hide)
                hits += [h for h in more if (h[1].segment_ord, h[1].doc) not in mine]
        if not hits:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        scores = np.array([h[0] for h in hits], np.float32)
        pids = self._pids([h[1] for h in hits])
        best = np.lexsort((pids, -scores))[:n]  # (a merge of two lists keeps the best n)
        pids, scores = pids[best], scores[best]
        order = np.lexsort((pids, -np.round(scores, 4)))
        return pids[order], scores[order]

    def _clause(self, field: str, token: str):
        q = self._t.Query.term_query(self.schema, field, token, "freq")
        return self._t.Query.boost_query(q, TITLE_BOOST) if field == "title" else q

    def _union(self, clauses: list[tuple[str, str]]):
        should = self._t.Occur.Should
        return self._t.Query.boolean_query([(should, self._clause(*c)) for c in clauses])

    def _added(self, query, clauses: list[tuple[str, str]], required: set = frozenset()):
        """``query``'s pages, each scored ``query``'s score plus those of ``clauses`` it holds,
        added one at a time in order: ``((q + c1) + c2) ...``, each step a query of two parts,
        the chain so far (required) and the next clause (optional; required if in ``required``,
        as :meth:`CommonClauses.cover_top` asks).

        Not ``query`` required and the union of ``clauses`` optional: tantivy seeks that union to
        each page of ``query`` by refilling a window of 4,096 documents ahead, every posting of
        every clause in it scored (``BufferedUnionScorer``), so a rare clause's pages spread over
        the index made it read most of the common clauses' postings. A single clause seeks
        through its skip list instead. On the 1,058 of bench_search.py's first 1,200 latency
        queries at 10M that have both kinds of clause: 0.67-0.91 -> 0.42-0.45 ms a query (the
        same pages in the same order; floats differ in the last bit, the sum being added in
        another order)."""
        must, should = self._t.Occur.Must, self._t.Occur.Should
        for c in clauses:
            query = self._t.Query.boolean_query([(must, query), (must if c in required else should, self._clause(*c))])
        return query

    def _top(self, query, n: int, hide: tuple[str, ...] = ()) -> list:
        """The best ``n`` (score, address) of ``query`` less the pages of layers ``hide``, best
        first; ties by the lowest address, except among exact ties at the n-th place when three
        or more segments match (README). Leaving pages out does not change the others' scores."""
        if hide:
            t = self._t
            out = [(t.Occur.MustNot, t.Query.term_query(self.schema, "layer", h, "basic")) for h in hide]
            query = t.Query.boolean_query([(t.Occur.Must, query), *out])
        return self.searcher.search(query, limit=n, count=False).hits

    def _field_df(self, field: str, token: str) -> int:
        df = self._df.get((field, token))
        if df is None:
            if len(self._df) > 200_000:
                self._df.clear()
            df = self._df[field, token] = self.searcher.doc_freq(field, token)
        return df


# ``TantivyIndex.build`` takes (title, body, layer) triples: a backend factory marked ``layered``
# gets each page's layer (:meth:`Web.build <fictionworld.web.Web.build>`); others get pairs.
TantivyIndex.build.__func__.layered = True  # type: ignore[attr-defined]
