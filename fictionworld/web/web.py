"""The web of a world: pages, search index, entity linker and world model, with the ``search``
and ``open`` tools, per-episode knobs, and sessions that inject tool faults."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterable
from functools import cached_property
from pathlib import Path

import numpy as np

from fictionworld.folding import fold_phrase
from fictionworld.knobs import Knobs
from fictionworld.seeding import mix64
from fictionworld.web.arrow import save_array
from fictionworld.web.index import DamagedIndexError, SearchBackend, TantivyIndex
from fictionworld.web.lexicon import (
    LEXICON_DIR,
    Lexicon,
    entity_forms,
    finish_lexicon,
    list_titles,
    web_speller,
    write_lexicon,
)
from fictionworld.web.linker import EntityLinker, Link, words
from fictionworld.web.model import Hit, TemplateWorldModel, WorldModel
from fictionworld.web.pages import (
    LAYERS,
    PAGE_KINDS,
    Page,
    PageNotFound,
    PageTable,
    SearchResult,
    WebError,
    article_map,
    articles_path,
)
from fictionworld.web.render import RENDERER, plain_text, render_pages
from fictionworld.web.session import (  # noqa: F401  (FAULT_TEXT: importable from here too)
    FAULT_TEXT,
    KeptPages,
    SearchCall,
    SearchResults,
    ToolResult,
    ToolStatus,
    WebSession,
    format_results,
)
from fictionworld.web.speller import Speller, check_deadline
from fictionworld.web.text import first_surrogate, short_repr
from fictionworld.web.urls import parse_url
from fictionworld.web.web_files import WEB_FORMAT, check_web_files, read_web_json, web_manifest, write_web_json

__all__ = [
    "Web",
    "WebSession",
    "SearchCall",
    "ToolResult",
    "ToolStatus",
    "SearchResults",
    "format_results",
    "WEB_FORMAT",
    "MAX_QUERY_CHARS",
]

MAX_QUERY_CHARS = 1_000
MAX_PAGE = 100
COMMON_WORD_PAGES = 25  # pages of the authoritative web a word is on to be a real word (:meth:`Web._known`)
# ... counted on words on at most this share of the pages; above, a real word. The most common planted
# misspelling, of the most common long word of titles ("lettres"), is on 0.027-0.031 % of them.
KNOWN_OUTRIGHT = 0.001
RESULTS_KEPT = 20_000  # results a Web keeps (KeptPages): 1.7 KB each at most, measured at 1M


ARTICLES_FILE = articles_path(Path("pages.arrow")).name
_ARTICLE = PAGE_KINDS.index("article")


class Web:
    """Search and open over a world's rendered pages. Built from the world (``Web.build``) or
    opened from a saved world directory (``Web.load``, memory-mapped, in well under 2 s)."""

    def __init__(self, world, pages: PageTable, index: SearchBackend, model: WorldModel | None = None,
                 knobs: Knobs | None = None, tmp: tempfile.TemporaryDirectory | None = None,
                 lexicon: Lexicon | None = None):  # fmt: skip
        """``index`` is any :class:`~fictionworld.web.index.SearchBackend` over ``pages`` (page
        id = row); ``build`` and ``load`` make the default, :class:`TantivyIndex`. ``lexicon``:
        the linker, speller and entity names saved with the web (else built on first use)."""
        self.world = world
        self.pages = pages
        self.index = index
        self.model: WorldModel = model or TemplateWorldModel()
        self.knobs = knobs if knobs is not None else world.spec.web.knobs
        self.entity_ids = world.entities.id_view
        self.lexicon = lexicon
        self._tmp = tmp  # keeps an in-memory build's index directory alive
        self.directory: Path | None = None  # the saved world directory it was loaded from
        # Result pages of the template model, by (query, k, page, knobs): ``search`` is a function
        # of those alone (the web never changes). Benchmarks of the engine set ``kept.limit = 0``.
        self.kept = KeptPages(RESULTS_KEPT)

    # -- building and persistence --------------------------------------------------------
    @classmethod
    def build(
        cls,
        world,
        path: str | Path | None = None,
        *,
        progress: Callable[[str], None] | None = None,
        backend: Callable[[Iterable[tuple[str, str]], Path], SearchBackend] | str = TantivyIndex.build,
    ) -> Web:
        """Render every page and index it. With ``path`` the index is written there (a world
        directory's ``index/``), else to a temporary directory that lives as long as the Web.
        ``backend(docs, directory)`` indexes the (title, plain text) pairs, page id = position
        (triples with the page's layer where ``backend.layered``, as ``TantivyIndex.build``);
        a string names a registered search backend (``"tantivy"``)."""
        if isinstance(backend, str):
            from fictionworld.registry import spec

            backend = spec(backend, "search_backend").load()
        pages = render_pages(world, pool=world.spec.web.perturbation_pool, progress=progress)
        tmp = None
        if path is None:
            tmp = tempfile.TemporaryDirectory(prefix="fictionworld-index-")
            index_dir = Path(tmp.name)
        else:
            index_dir = Path(path)
        if progress:
            progress("index")
        text = pages.table.column("text")
        if getattr(backend, "layered", False):  # (title, body, layer): hidden layers left out in the engine
            layer = pages.layer.tolist()
            docs = ((pages.titles[i], plain_text(text[i].as_py()), LAYERS[layer[i]]) for i in range(len(pages)))
        else:
            docs = ((pages.titles[i], plain_text(text[i].as_py())) for i in range(len(pages)))
        index = backend(docs, index_dir)
        return cls(world, pages, index, tmp=tmp)

    def save(self, directory: str | Path) -> None:
        """Writes ``pages.arrow``, ``index/`` and ``web.json`` (last) into a world directory."""
        d = Path(directory)
        target = d / "index"
        if not isinstance(self.index, TantivyIndex) or self.index.path is None:
            raise WebError(f"a web searched by {self.index.name!r} cannot be saved (only a tantivy index is)")
        if self.index.path.resolve() != target.resolve():
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(self.index.path, target)
        self.pages.save(d / "pages.arrow")
        save_array(articles_path(d / "pages.arrow"), self._article_of)
        forms = self.lexicon.forms if self.lexicon is not None else entity_forms(self.world.entities)
        write_lexicon(d / LEXICON_DIR, self.linker, forms)
        finish_lexicon(d / LEXICON_DIR, self._speller, self.world.world_hash)
        write_web_json(d, self.manifest())

    def manifest(self) -> dict:
        web = self.world.spec.web
        spec = {"perturbation_pool": web.perturbation_pool, "block": web.block}
        return web_manifest(self.world.world_hash, spec, len(self.pages), self.index)

    @classmethod
    def load(cls, world, directory: str | Path) -> Web:
        d = Path(directory)
        meta = read_web_json(d)
        if meta.get("format") != WEB_FORMAT or meta.get("renderer") != RENDERER:
            raise WebError(f"{d}: web built by {meta.get('renderer')!r}, this is {RENDERER}; rebuild it")
        if meta.get("world_hash") != world.world_hash:
            raise WebError(
                f"{d}: web.json's world_hash is not the manifest's: the web was built for another world "
                "(rebuild it), or one of the two files was changed (`fictionworld validate` tells which)"
            )
        check_web_files(d, meta)  # (their sizes: `fictionworld validate` reads them whole)
        try:
            pages = PageTable.load(d / "pages.arrow")
        except (OSError, ValueError) as e:
            raise WebError(f"{d / 'pages.arrow'}: unreadable ({e})") from None
        if len(pages) != meta.get("pages"):
            raise WebError(f"{d / 'pages.arrow'}: {len(pages)} pages, manifest says {meta.get('pages')}")
        try:
            index = TantivyIndex.open(d / "index")
        except (OSError, ValueError) as e:
            raise WebError(f"{d / 'index'}: unreadable search index ({e})") from None
        except DamagedIndexError as e:
            raise WebError(str(e)) from None
        if index.num_docs != len(pages):
            raise WebError(f"{d / 'index'}: {index.num_docs} documents for {len(pages)} pages; rebuild it")
        try:
            lexicon = Lexicon.open(d / LEXICON_DIR, world.world_hash, len(world.entities))
        except ValueError as e:
            raise WebError(f"{e}; rebuild it") from None
        web = cls(world, pages, index, lexicon=lexicon)
        web.directory = d
        return web

    def preload(self, *, resident_only: bool = True, stop=None):
        """Map this process's maps of the saved web's files into its page tables now, so its
        searches do not fault them in one by one (:func:`fictionworld.web.preload.preload`:
        by default only what the page cache holds, nothing read from disk). A web not loaded
        from a directory has nothing to map."""
        from fictionworld.web.preload import Preloaded, preload

        if self.directory is None:
            return Preloaded(True, reason="not loaded from a directory")
        return preload(self.directory, resident_only=resident_only, stop=stop)

    # -- lookups -------------------------------------------------------------------------
    @cached_property
    def linker(self) -> EntityLinker:
        if self.lexicon is not None:
            return self.lexicon.linker
        e = self.world.entities
        return EntityLinker(e.name.tolist(), e.aliases.tolist())

    def subject_forms(self, row: int) -> tuple[str, ...]:
        """Entity ``row``'s name and aliases."""
        if self.lexicon is not None:
            return self.lexicon.subject_forms(row)
        e = self.world.entities
        return (e.name[row], *e.aliases[row])

    @cached_property
    def _article_of(self) -> np.ndarray:
        """Entity row -> page row of its encyclopedia article (-1: none): the map saved beside
        the pages (memory-mapped), else made from every page's kind (:func:`article_map`).
        Read through :meth:`articles_of`, which checks what it reads."""
        saved = self.pages.articles
        if saved is None:
            return article_map(self.pages.kind_code, self.pages.entity, len(self.world.entities))
        if len(saved) != len(self.world.entities):
            raise WebError(
                f"{ARTICLES_FILE}: a map of {len(saved):,} entities, the world has {len(self.world.entities):,}; rebuild it"
            )
        return saved

    def articles_of(self, rows: list[int]) -> list[int]:
        """The article page rows of entity ``rows`` (-1: none). A saved map is read, not
        trusted: each row it gives must be an article about that entity (WebError if not)."""
        m, kind, entity, n = self._article_of, self.pages.kind_code, self.pages.entity, len(self.pages)
        out = []
        for r in rows:
            a = int(m[r])
            if a != -1 and not (0 <= a < n and kind[a] == _ARTICLE and entity[a] == r):
                raise WebError(f"{ARTICLES_FILE}: entity row {r}'s article is not page {a} (corrupt); rebuild it")
            out.append(a)
        return out

    @cached_property
    def _speller(self) -> Speller:
        """Spellings a misspelt query word may stand for: words of entity names and of
        directory titles ("Films released in 1998", "Companies in the glassmaking industry")."""
        if self.lexicon is not None:
            return self.lexicon.speller
        return web_speller(
            self.linker.speller, list_titles(self.pages.table.column("kind"), self.pages.table.column("title"))
        )

    @cached_property
    def _title_rows(self) -> dict[str, list[int]]:
        """Title (folded: case, accents and spacing aside) -> page rows, for backends without
        ``exact_titles`` (tantivy indexes the folded titles instead)."""
        out: dict[str, list[int]] = {}
        for row, title in enumerate(self.pages.titles):
            out.setdefault(fold_phrase(title), []).append(row)
        return out

    def _known(self, word: str) -> bool:
        """Whether ``word`` (no word of a name) is spelt right, so that entity linking leaves it
        as it is: some term of it is on :data:`COMMON_WORD_PAGES` pages of the authoritative web
        ("founded", "companies"). Pages of the perturbation layers do not count: a confusable
        page names its entity with one edit of its longest word, a misspelling by design, and
        as a world grows the same misspelling comes back on more of them ("lettres" on 802 pages
        at 1M, 7,024 at 10M, none of them authoritative). Counted (once per process) where
        the word is on at most :data:`KNOWN_OUTRIGHT` of the index's pages, more than any planted
        misspelling is; above, a real word (``benchmarks/BIG_WORLDS.md``, "Misspelt names")."""
        ix = self.index
        for t in ix.analyze(word):
            df = ix.doc_freq(t)
            if df < COMMON_WORD_PAGES:
                continue
            if df > KNOWN_OUTRIGHT * len(self.pages) or not getattr(ix, "hides_layers", False):
                return True
            if ix.freq_outside(t, LAYERS[1:]) >= COMMON_WORD_PAGES:
                return True
        return False

    def respell(self, query: str, deadline: float | None = None) -> str:
        """The query with each word the index does not hold replaced by its closest spellings
        (ties all kept); "" when no word needs or finds one. ``deadline``: as :meth:`hits`'."""
        ix, out, changed = self.index, [], False
        for w in words(query):
            check_deadline(deadline)
            tokens = ix.analyze(w)
            fixes = self._speller.correct(w, deadline) if tokens and not any(ix.doc_freq(t) for t in tokens) else []
            changed |= bool(fixes)
            out += fixes or [w]
        return " ".join(out) if changed else ""

    def article_url_of(self, entity_id: str) -> str:
        """The URL of ``entity_id``'s encyclopedia article (WebError where it has none: a
        generated web gives every entity one)."""
        row = self.articles_of([self.world.row(entity_id)])[0]
        if row < 0:
            raise WebError(f"{entity_id} has no article page in this web")
        return self.pages.urls[row]

    def rates(self, knobs: Knobs) -> np.ndarray:
        return np.array([knobs.rate_of(layer) for layer in LAYERS], np.float32)

    def leaks(self, query: str, page: int, rate: float) -> bool:
        """Whether this result's snippet shows values: a fixed draw per (query, page)."""
        return self.leaks_of(query, [page], rate)[0]

    def leaks_of(self, query: str, pages: list[int], rate: float) -> list[bool]:
        """:meth:`leaks` for several pages, in one vectorised draw."""
        if rate <= 0 or not pages:
            return [False] * len(pages)
        key = int.from_bytes(" ".join(words(query)).encode()[:8].ljust(8, b"\0"), "little") ^ len(query)
        return (mix64(np.array(pages), key).astype(np.float64) / 2**64 < rate).tolist()

    # -- the tools -----------------------------------------------------------------------
    def hits(self, query: str, n: int, knobs: Knobs | None = None, deadline: float | None = None) -> list[Hit]:
        """The best ``n`` visible pages for ``query``: pages titled exactly the query first,
        then linked entities' articles, then BM25 (title boosted); ties by page row. Misspelt
        words are corrected against the linked names, or with no link against the words of
        entity names and directory titles.

        ``deadline``: a ``time.monotonic()`` time the search's work must end by (None: none).
        Checked between the query's words (each corrected in a few ms at most) and between
        fetches; past it, :class:`~fictionworld.web.speller.DeadlinePassed` and no hits, never
        a ranking of part of the query. Without one, the same hits as ever."""
        knobs = knobs or self.knobs
        _check_query(query)
        ix = self.index
        tokens = ix.analyze(query)
        links: list[Link] = self.linker.link(query, known=self._known, deadline=deadline)
        fixed = " ".join(links[0].corrected) if links else self.respell(query, deadline)
        if fixed:
            tokens += [t for t in ix.analyze(fixed) if t not in tokens]
        rates = self.rates(knobs)
        # Pages of hidden layers drop out after ranking: 2n is enough for about 97 % of queries
        # under the default knobs (29 % of the pages hidden at 1M). The rest fetch again, with
        # the layers the knobs show none of left out in the engine (an index that
        # ``hides_layers``), then four times longer while layers shown in part leave too few.
        # The same answer as striking them out after ranking, except where that stopped at
        # MAX_FETCH short of n shown pages: the pages left out do not count against it, so the
        # search reaches further down the ranking and finds more (the old answer a prefix of
        # the new one).
        # Not from the first fetch: a clause that leaves pages out costs every query (each page
        # matched is sought in the layer's postings; `benchmarks/BIG_WORLDS.md`, "Hidden layers left out in the
        # engine"). (A fetch's length changes the top n only where scores tied to four
        # decimals, ordered by page id, straddle its end.)
        fetch = max(20, 2 * n)
        hide = _hidden(rates) if getattr(ix, "hides_layers", False) else ()
        hiding = False
        while True:
            check_deadline(deadline)
            pids, scores = ix.search(tokens, fetch, hide=hide) if hiding else ix.search(tokens, fetch)
            keep = self.pages.visible(pids, rates)
            if keep.sum() >= n or len(pids) < fetch:
                break
            if hide and not hiding:
                hiding = True
            elif fetch >= MAX_FETCH:
                break
            else:
                fetch *= 4
        pids, scores = pids[keep], scores[keep]
        top = float(scores[0]) if len(scores) else 0.0
        out: list[Hit] = []
        seen: set[int] = set()
        arts = self.articles_of([link.row for link in links])
        for link, art in zip(links, arts):
            if art >= 0 and art not in seen:
                out.append(Hit(art, top + link.score / 100))
                seen.add(art)
        out += [Hit(p, s) for p, s in zip(pids.tolist(), scores.tolist()) if p not in seen]
        return _titled_first(out, self._exact_titles(query, rates))[:n]

    def _exact_titles(self, query: str, rates: np.ndarray) -> list[int]:
        """Visible pages whose title is the query (case, accents and spacing aside), by row."""
        exact = getattr(self.index, "exact_titles", None)  # tantivy: one term lookup
        rows = exact(query) if exact is not None else self._title_rows.get(fold_phrase(query))
        if not rows:
            return []
        rows_ = np.array(rows, np.int64)
        return rows_[self.pages.visible(rows_, rates)].tolist()

    def search(self, query: str, k: int | None = None, page: int = 1, knobs: Knobs | None = None,
               deadline: float | None = None) -> list[SearchResult]:  # fmt: skip
        """Ranked results ``page`` (1-based) of ``k`` each (default: the knobs' results_per_page).
        ``deadline``: as :meth:`hits`' (DeadlinePassed past it)."""
        knobs = knobs or self.knobs
        k = knobs.results_per_page if k is None else k
        if not _int_in(k, 1, 100):
            raise WebError(f"k must be between 1 and 100, not {short_repr(k)}")
        if not _int_in(page, 1, MAX_PAGE):
            raise WebError(f"page must be between 1 and {MAX_PAGE}, not {short_repr(page)}")
        # Kept only for the template model: an LLM world model's pages are its own to write.
        key = None
        if self.kept.limit > 0 and type(self.model) is TemplateWorldModel:
            key = (query, k, page, *(getattr(knobs, f) for f in type(knobs).model_fields))
            kept = self.kept.get(key, page)
            if kept is not None:
                return kept
        hits = self.hits(query, k * page, knobs, deadline)
        last_page = -(-len(hits) // k) if len(hits) < k * page else None  # the ranking ran out
        results = self.model.render_results(self, query, hits[(page - 1) * k :], knobs)
        if key is not None:
            self.kept.keep(key, results, last_page)
        return SearchResults(results, page=page, last_page=last_page)

    def open(self, url: str, knobs: Knobs | None = None) -> Page | PageNotFound:
        """The page at ``url`` (``?page=N`` selects a directory page), or PageNotFound for a
        well-formed URL that names nothing in this episode's web; WebError if not a URL."""
        knobs = knobs or self.knobs
        base, number = parse_url(url)
        row = self.pages.row_of_url.get(base)
        if row is None or not self.pages.visible(np.array([row]), self.rates(knobs))[0]:
            return PageNotFound(url=url)
        page = self.model.render_page(self, row, number, knobs)
        if isinstance(page, Page) and page.page_count > 1:
            page = page.model_copy(update={"fact_ids": self._facts_about(row, page.fact_ids, page.entity_ids)})
        return page

    def _facts_about(self, row: int, fact_ids: tuple[int, ...], entity_ids: tuple[str, ...]) -> tuple[int, ...]:
        """Of directory ``row``'s facts, those whose subject is one of ``entity_ids`` (the
        members on one of its pages). A directory's facts have a member as subject and the
        directory's own entity, if any, as object; a fact is on its subject's article and, if
        it is an incoming relation, on its object's. So the facts on the members' articles are
        the answer, read off a few pages, unless the directory's entity is itself listed: then
        off the fact table (its subject column, read whole on first use)."""
        subjects = {self.world.row(e) for e in entity_ids}
        if int(self.pages.entity[row]) not in subjects:
            arts = self.articles_of(sorted(subjects))
            if all(a >= 0 for a in arts):
                on = {i for a in arts for i in self.pages.column("fact_ids", a)}
                return tuple(i for i in fact_ids if i in on)
        f = self.world.facts
        rows = np.searchsorted(f.id, np.array(fact_ids, np.int64))
        return tuple(int(i) for i, r in zip(fact_ids, rows.tolist()) if int(f.subject[r]) in subjects)

    def session(self, knobs: Knobs | None = None, seed: int = 0) -> WebSession:
        return WebSession(self, knobs or self.knobs, seed)


# The longest fetch a search makes (pages, before those not shown are struck out).
MAX_FETCH = 100_000


def _hidden(rates: np.ndarray) -> tuple[str, ...]:
    """The layers no page of which is shown under ``rates`` (a page shows when its draw
    ``u``, in [0, 1), is below its layer's rate)."""
    return tuple(LAYERS[i] for i in range(1, len(LAYERS)) if rates[i] <= 0)


def _titled_first(hits: list[Hit], rows: list[int]) -> list[Hit]:
    """``hits`` with the pages ``rows`` moved to the front (in ranking order, then by row),
    scored above the rest; unchanged when they already lead."""
    if not rows:
        return hits
    rank = {h.page: i for i, h in enumerate(hits)}
    rows = sorted(rows, key=lambda r: (rank.get(r, len(hits)), r))
    if [h.page for h in hits[: len(rows)]] == rows:
        return hits
    top = hits[0].score + 1.0 if hits else 1.0
    chosen = set(rows)
    return [Hit(r, top) for r in rows] + [h for h in hits if h.page not in chosen]


def _check_query(query: str) -> None:
    """WebError unless ``query`` is a non-blank string of at most MAX_QUERY_CHARS valid characters."""
    if not isinstance(query, str) or not query.strip():
        raise WebError("empty query: give some words to search for")
    if len(query) > MAX_QUERY_CHARS:
        raise WebError(f"query too long ({len(query)} characters; at most {MAX_QUERY_CHARS})")
    at = first_surrogate(query)
    if at is not None:
        raise WebError(f"the query is not valid text (a lone surrogate U+{ord(query[at]):04X} at character {at})")


def _int_in(v, lo: int, hi: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi
