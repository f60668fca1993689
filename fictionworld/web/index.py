"""Full-text search backends behind one small contract.

:class:`TantivyIndex` is the default (chosen by ``benchmarks/bench_search.py``: it builds fastest,
opens from disk in milliseconds by memory-mapping, and meets the latency targets at 100k
entities). Scoring is BM25 over two fields, the title boosted; ties break on the page id so the
same query always gives the same ranking.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Protocol

import numpy as np

from fictionworld.folding import fold_phrase

__all__ = ["SearchBackend", "TantivyIndex", "TITLE_BOOST", "COMMON_SHARE"]

TITLE_BOOST = 3.0
# A query word in more than this share of pages is dropped when rarer words remain: it would
# match most of the index and cost most of the time, yet barely changes the ranking.
COMMON_SHARE = 0.1


class SearchBackend(Protocol):
    """What a search index must do for :class:`~fictionworld.web.Web`; pages are identified by
    their row in the PageTable. Any object with these members plugs in (``Web(world, pages,
    backend)``, or ``Web.build(world, backend=factory)``); :class:`TantivyIndex` is the default.
    A backend that can be saved with its world also has ``path``: the directory holding it."""

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


def _analyzer():
    import tantivy

    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


def _schema():
    import tantivy

    b = tantivy.SchemaBuilder()
    b.add_integer_field("pid", stored=False, indexed=False, fast=True)  # signed: see ARCHITECTURE pitfalls
    b.add_text_field("title", stored=False, tokenizer_name="fw", index_option="freq")
    b.add_text_field("body", stored=False, tokenizer_name="fw", index_option="freq")
    # The folded title (case, accents and spacing aside) as one term: exact-title lookups
    # without a table of every title in memory.
    b.add_text_field("title_key", stored=False, tokenizer_name="raw", index_option="basic")
    return b.build()


def _document(pid: int, title: str, body: str):
    """The tantivy document of page ``pid`` (``body`` as plain text)."""
    import tantivy

    return tantivy.Document(pid=pid, title=title, body=body, title_key=fold_phrase(title))


class TantivyIndex:
    name = "tantivy"

    def __init__(self, index, path: Path | None):
        import tantivy

        self._t = tantivy
        self.index = index
        self.path = path
        self.index.register_tokenizer("fw", _analyzer())
        self._analyzer = _analyzer()
        self.schema = self.index.schema
        self.searcher = self.index.searcher()
        self.num_docs = self.searcher.num_docs
        self._df: dict[str, int] = {}

    @classmethod
    def build(
        cls,
        docs: Iterable[tuple[str, str]],
        path: str | Path,
        *,
        threads: int = 1,
        heap: int = 512_000_000,
        progress: Callable[[int], None] | None = None,
        first_id: int = 0,
    ) -> TantivyIndex:
        """Index (title, body) pairs; the i-th pair becomes page id ``first_id + i`` (a shard of a
        web starts at its first page's id). Writes to ``path``."""
        import tantivy

        path = Path(path)
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        index = tantivy.Index(_schema(), path=str(path))
        index.register_tokenizer("fw", _analyzer())
        writer = index.writer(heap_size=heap * threads, num_threads=threads)
        for i, (title, body) in enumerate(docs):
            writer.add_document(_document(first_id + i, title, body))
            if progress and i % 10_000 == 0:
                progress(i)
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        return cls(index, path)

    @classmethod
    def open(cls, path: str | Path) -> TantivyIndex:
        import tantivy

        path = Path(path)
        if not (path / "meta.json").exists():
            raise FileNotFoundError(f"no search index in {path}")
        return cls(tantivy.Index.open(str(path)), path)

    @property
    def version(self) -> str:
        return self._t.__version__

    def analyze(self, text: str) -> list[str]:
        return self._analyzer.analyze(text)

    def doc_freq(self, token: str) -> int:
        df = self._df.get(token)
        if df is None:
            df = self.searcher.doc_freq("body", token) + self.searcher.doc_freq("title", token)
            if len(self._df) > 100_000:
                self._df.clear()
            self._df[token] = df
        return df

    def exact_titles(self, title: str, n: int = 10_000) -> list[int]:
        """Ids (ascending) of the pages titled ``title``, case, accents and spacing aside."""
        key = fold_phrase(title)
        if not key:
            return []
        query = self._t.Query.term_query(self.schema, "title_key", key)
        hits = self.searcher.search(query, limit=n, count=False).hits
        return sorted(self.searcher.fast_field_values("pid", [h[1] for h in hits])) if hits else []

    def search(self, tokens: list[str], n: int) -> tuple[np.ndarray, np.ndarray]:
        t = self._t
        tokens = list(dict.fromkeys(tokens))
        if len(tokens) > 1:
            rare = [x for x in tokens if self.doc_freq(x) <= COMMON_SHARE * self.num_docs]
            tokens = rare or tokens
        if not tokens or n <= 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        should = t.Occur.Should
        clauses = []
        for tok in tokens:
            clauses.append(
                (should, t.Query.boost_query(t.Query.term_query(self.schema, "title", tok, "freq"), TITLE_BOOST))
            )
            clauses.append((should, t.Query.term_query(self.schema, "body", tok, "freq")))
        hits = self.searcher.search(t.Query.boolean_query(clauses), limit=n, count=False).hits
        if not hits:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        scores = np.array([h[0] for h in hits], np.float32)
        pids = np.array(self.searcher.fast_field_values("pid", [h[1] for h in hits]), np.int64)
        order = np.lexsort((pids, -np.round(scores, 4)))
        return pids[order], scores[order]
