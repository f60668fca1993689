"""Pages and search results: the records agents see, and the columnar page store behind them."""

from __future__ import annotations

import datetime as dt
import os
from bisect import bisect_left
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
from pydantic import BaseModel, ConfigDict

from fictionworld.dates import from_days
from fictionworld.errors import FictionWorldError
from fictionworld.web.arrow import MappedArrow, map_array, numpy_of, save_array
from fictionworld.web.pagetext import TextCodec, Texts, codec_of, sample_rows, stored_schema
from fictionworld.web.strings import Strings

__all__ = [
    "Page",
    "PageNotFound",
    "PAGE_SCHEMA",
    "PAGE_COLUMNS",
    "SearchResult",
    "PageTable",
    "PAGE_KINDS",
    "LAYERS",
    "UNDATED_KINDS",
    "AGENTWORLD_RESULTS",
    "WebError",
]

PAGE_KINDS = (
    "article",  # encyclopedia article about one entity
    "org_about",
    "org_leadership",
    "org_history",
    "org_people",
    "news",
    "list",  # directory / category page, paginated when opened
    "forum",
    "blog",
    "profile",  # low-credibility aggregator profile
)
LAYERS = ("", "distractor", "confusable", "conflict")  # "" = the authoritative web
# Reference pages (encyclopedia, directories, official sites, aggregator profiles): the result
# lists of real engines, and AgentWorld's ``web_search``, show them as ``Date: N/A``.
UNDATED_KINDS = ("article", "list", "org_about", "org_leadership", "org_history", "org_people", "profile")
# How a saved web's pages file is mapped (:class:`~fictionworld.web.arrow.MappedArrow`): "auto"
# maps it for random reads when the page cache cannot hold it. With the file evicted from the
# page cache, a fresh process's first 600 searches took, at 10M (18.1 GiB of pages), p50
# 8.6-12.0 ms mapped for random reads against 19.6-25.2 ms with the kernel's default read-ahead,
# which read 14 MiB per search; at 1M (1.8 GiB) 4.4-5.0 ms against 1.4-1.8 ms: there read-ahead
# brings the file into the cache within those searches (``bench_search.py --world DIR --cold``).
PAGES_ACCESS = "auto"
PAGE_BATCH = 65_536  # rows per record batch of a saved pages file
# The fixed-width columns a PageTable reads by row, as NumPy arrays of these types
# (``published``: days since 1970-01-01). Saved beside the pages as one (3, pages) int32 array
# (:func:`columns_path`; ``u`` as its float32 bits) that :meth:`PageTable.load` maps: no copy
# per process, and nothing read until a row is. A file saved without it has them copied
# from the table, which :meth:`PageTable.load` then asks for at once.
_READ_WHOLE = {"u": np.float32, "entity": np.int32, "published": np.int32}
AGENTWORLD_RESULTS = 10  # results per query of web_search, as Qwen-AgentWorld's search domain gives


class WebError(FictionWorldError, ValueError):
    """A malformed request (not a URL, an empty query): the caller's mistake, said plainly."""


class Page(BaseModel):
    """One page as an agent would open it. ``fact_ids`` are the graph facts it states;
    ``contradicts`` the facts a low-credibility page states wrongly."""

    model_config = ConfigDict(frozen=True)

    url: str
    site: str
    title: str
    kind: str
    credibility: Literal["high", "low"]
    published: dt.date
    text: str
    entity_ids: tuple[str, ...] = ()
    fact_ids: tuple[int, ...] = ()
    contradicts: tuple[int, ...] = ()
    page_number: int = 1
    page_count: int = 1

    def markdown(self) -> str:
        """The page as the ``open`` tool shows it."""
        head = f"# {self.title}\n\nURL: {self.url}\nSite: {self.site}\nDate: {self.published.isoformat()}\n"
        return f"{head}\n{self.text.rstrip()}\n"


class PageNotFound(BaseModel):
    """What ``open`` returns for a URL that is well formed but names no page."""

    model_config = ConfigDict(frozen=True)

    url: str
    reason: str = "404 Not Found"

    def markdown(self) -> str:
        return f"Error 404: no page at {self.url}. Check the address or search again."


class SearchResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    url: str
    title: str
    snippet: str
    date: dt.date
    score: float
    kind: str = ""  # the page's kind (PAGE_KINDS), "" where the maker did not say

    def text(self, n: int, *, undated: tuple[str, ...] = ()) -> str:
        """``[n] URL\\nTitle: …\\nSnippet: …\\nDate: Mon D, YYYY``, the layout agents know;
        ``Date: N/A`` for a page of one of the ``undated`` kinds."""
        from fictionworld.surface import format_serp_date

        date = "N/A" if self.kind in undated else format_serp_date(self.date)
        return f"[{n}] {self.url}\nTitle: {self.title}\nSnippet: {self.snippet}\nDate: {date}"


PAGE_SCHEMA = pa.schema(
    [
        ("url", pa.string()),
        ("site", pa.string()),
        ("title", pa.string()),
        ("kind", pa.string()),
        ("layer", pa.string()),
        ("published", pa.date32()),
        ("text", pa.large_string()),
        ("entity", pa.int32()),  # the page's main entity row, -1 when none
        ("entity_rows", pa.list_(pa.int32())),
        ("fact_ids", pa.list_(pa.int64())),
        ("contradicts", pa.list_(pa.int64())),
        ("u", pa.float32()),  # visibility draw of a perturbation page: shown when u < its rate
    ]
)


PAGE_COLUMNS: tuple[str, ...] = tuple(PAGE_SCHEMA.names)


@dataclass(eq=False)
class PageTable:
    """All pages of a web, columnar (Arrow). Row number = page id used by the index.

    Nothing is built per page in Python: ``urls`` and ``titles`` read the Arrow columns (which
    :meth:`load` memory-maps), and ``row_of_url`` is a binary search over the URLs' sort order
    (saved beside the pages, else sorted on the first lookup)."""

    table: pa.Table
    url_order: np.ndarray | None = None  # page rows by URL (bytewise order), when known
    codes: np.ndarray | None = None  # :func:`page_codes` of the table, when known
    mapped: MappedArrow | None = None  # the file the table is mapped from (:meth:`load`)
    # how ``table``'s text column is compressed (a table loaded from a file: zstd frames,
    # :mod:`~fictionworld.web.pagetext`); None: plain strings (rendered, or an older file)
    codec: TextCodec | None = None
    # entity row -> article row (:func:`article_map`), as :meth:`load` read it; None: not saved
    articles: np.ndarray | None = None
    # :func:`page_columns` of the table, as :meth:`load` mapped it; None: read from the table
    columns: np.ndarray | None = None

    def __post_init__(self) -> None:
        t = self.table
        self._file = self.mapped.path.name if self.mapped is not None else "the pages"
        self.urls = Strings(t.column("url"), what=f"{self._file} column 'url'")
        self.titles = Strings(t.column("title"), what=f"{self._file} column 'title'")
        self._cols: dict[str, Strings] = {"url": self.urls, "title": self.titles}  # (_values)
        if self.codec is None:
            self.texts = Strings(t.column("text"), what=f"{self._file} column 'text'")
        else:
            self.texts = Texts(t.column("text"), self.codec, self._file)
        codes = page_codes(t) if self.codes is None else self.codes
        self.kind_code, self.layer = codes[0], codes[1]  # int8: PAGE_KINDS and LAYERS positions
        columns = page_columns(t) if self.columns is None else self.columns
        self.u, self.entity, self.published = columns[0].view(np.float32), columns[1], columns[2]
        self.row_of_url = UrlIndex(self.urls, self.url_order)

    def __len__(self) -> int:
        return self.table.num_rows

    @cached_property
    def kind(self) -> np.ndarray:
        """Every page's kind, as an object array of str (built on first use; searching and
        opening pages read :attr:`kind_code` or :meth:`kind_of` instead)."""
        return np.array(PAGE_KINDS, dtype=object)[self.kind_code]

    def kind_of(self, row: int) -> str:
        return PAGE_KINDS[self.kind_code[row]]

    @classmethod
    def from_rows(cls, rows: dict[str, list]) -> PageTable:
        return cls(pa.table(rows, schema=PAGE_SCHEMA))

    def text(self, row: int) -> str:
        return self.texts[row]

    def head(self, row: int, lines: int) -> str:
        """The first ``lines`` lines of page ``row``'s text (all of it if it has fewer). A saved
        page is decompressed only as far as they go: at 10M entities the biggest directory is
        6.4M characters, 17 ms to decompress whole against 0.1-0.3 ms for its first lines."""
        texts = self.texts
        if isinstance(texts, Texts):
            return texts.head(row, lines)
        return "\n".join(texts[row].split("\n", lines)[:lines])

    def entries(self, row: int) -> int:
        """How many entities directory ``row`` lists, one per line (:meth:`Renderer.lists
        <fictionworld.web.render.Renderer.lists>`): its ``entity_rows`` less the entity it is
        about, which a directory never lists. Read from the column's offsets, where counting
        the lines of the text meant decompressing all of it."""
        rows = self._values("entity_rows").scalar(row)
        return (len(rows.values) if rows.is_valid else 0) - int(self.entity[row] >= 0)

    def scanning(self) -> AbstractContextManager:
        """A block that reads the pages in order (every page's text, a whole column): the file
        is read ahead while it runs (:meth:`MappedArrow.scanning`), then read as :meth:`load`
        mapped it (for random reads when it is too large to cache); a table not loaded from a
        file is unaffected."""
        return self.mapped.scanning() if self.mapped is not None else nullcontext()

    def column(self, name: str, row: int):
        return self._values(name)[row]

    def _values(self, name: str) -> Strings:
        """Column ``name`` as values read from checked chunks (:class:`Strings`: a damaged
        file's offsets are one error, not an aborted process), made on first use."""
        got = self._cols.get(name)
        if got is None:
            got = self._cols[name] = Strings(self.table.column(name), what=f"{self._file} column {name!r}")
        return got

    def visible(self, rows: np.ndarray, rates: np.ndarray) -> np.ndarray:
        """Mask of pages shown under per-layer rates (``rates[0]`` is the authoritative web, 1)."""
        return self.u[rows] < rates[self.layer[rows]]

    def page(self, row: int, entity_ids: np.ndarray, *, entities: bool = True) -> Page:
        """Page ``row`` (``entities=False``: without its entity ids, which a directory of
        thousands would format one by one, to be set by the caller)."""
        get = lambda c: self._values(c)[row]  # noqa: E731
        return Page(
            url=get("url"),
            site=get("site"),
            title=get("title"),
            kind=get("kind"),
            credibility="low" if get("layer") or get("kind") in ("forum", "blog", "profile") else "high",
            published=from_days(int(self.published[row])),
            text=self.texts[row],
            entity_ids=tuple(entity_ids[get("entity_rows")].tolist()) if entities and get("entity_rows") else (),
            fact_ids=tuple(get("fact_ids")),
            contradicts=tuple(get("contradicts")),
        )

    # -- disk ----------------------------------------------------------------------------
    def save(self, path: Path) -> None:
        """``path`` (Arrow IPC, batches of 65,536 rows, each page's text a zstd frame) and,
        beside it, the URL order and the pages' kind and layer codes. Each file is written
        beside its place and then moved there: a table mapped from ``path`` (:meth:`load`)
        saves over it without reading a truncated file."""
        path = Path(path)
        codec = self.codec or TextCodec.train(self.texts.take(sample_rows(len(self))))
        tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
        with pa.OSFile(str(tmp), "wb") as sink, ipc.new_file(sink, stored_schema(PAGE_SCHEMA, codec)) as writer:
            for lo in range(0, len(self), PAGE_BATCH):
                batch = self.table.slice(lo, PAGE_BATCH)
                writer.write_table(batch if self.codec is not None else compress_text(batch, codec))
        columns = np.stack([self.u.view(np.int32), self.entity, self.published])
        for target, array in ((url_order_path(path), self.row_of_url.order),
                              (codes_path(path), np.stack([self.kind_code, self.layer])),
                              (columns_path(path), columns)):  # fmt: skip
            save_array(target, array)
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: Path, access: str | None = None) -> PageTable:
        """Memory-maps the Arrow file (and the URL order and codes saved beside it; a file
        saved without them has them computed): opening is O(1) in the text size. ``access``:
        how the kernel is told the file will be read (:class:`MappedArrow`; default
        :data:`PAGES_ACCESS`)."""
        columns = map_array(columns_path(path)) if columns_path(path).exists() else None
        will_need = () if columns is not None else _READ_WHOLE  # (copied from the table: read at once)
        mapped = MappedArrow(path, PAGES_ACCESS if access is None else access, will_need=will_need)
        table = mapped.table
        codec = codec_of(table.schema, path.name)
        if table.schema != (PAGE_SCHEMA if codec is None else stored_schema(PAGE_SCHEMA, codec)):
            raise ValueError(f"{path.name}: unexpected columns {table.schema.names}")
        order = codes = None
        if url_order_path(path).exists():
            order = map_array(url_order_path(path))
            if order.shape != (table.num_rows,) or order.dtype.kind != "i":
                raise ValueError(f"{url_order_path(path).name}: not the URL order of {table.num_rows:,} pages")
        if codes_path(path).exists():
            codes = map_array(codes_path(path))
            if not _codes_fit(codes, table.num_rows):
                raise ValueError(f"{codes_path(path).name}: not the kind and layer codes of {table.num_rows:,} pages")
        articles = None
        if articles_path(path).exists():
            articles = map_array(articles_path(path))
            if articles.ndim != 1 or articles.dtype.kind != "i":
                raise ValueError(f"{articles_path(path).name}: not a map of entities to article rows")
        if columns is not None and not _columns_fit(columns, table):
            raise ValueError(
                f"{columns_path(path).name}: not the u, entity and published columns of {table.num_rows:,} pages"
            )
        return cls(table, order, codes, mapped, codec, articles, columns)


def compress_text(pages: pa.Table | pa.RecordBatch, codec: TextCodec, threads: int = 1) -> pa.Table:
    """``pages`` (PAGE_SCHEMA) with each page's text a zstd frame of ``codec``, the schema a
    saved pages file has (:func:`~fictionworld.web.pagetext.stored_schema`)."""
    if isinstance(pages, pa.RecordBatch):
        pages = pa.Table.from_batches([pages])
    i = pages.schema.get_field_index("text")
    columns = [codec.compress(c, threads) if j == i else c for j, c in enumerate(pages.columns)]
    return pa.Table.from_arrays(columns, schema=stored_schema(pages.schema, codec))


def _beside(pages_file: Path, what: str) -> Path:
    return Path(pages_file).with_name(f"{Path(pages_file).stem}.{what}.npy")


def url_order_path(pages_file: Path) -> Path:
    """Where the URL sort order of ``pages.arrow`` lives: ``pages.url-order.npy`` beside it."""
    return _beside(pages_file, "url-order")


def codes_path(pages_file: Path) -> Path:
    """Where the kind and layer codes of ``pages.arrow`` live: ``pages.codes.npy`` beside it."""
    return _beside(pages_file, "codes")


def articles_path(pages_file: Path) -> Path:
    """Where each entity's article row lives (:func:`article_map`): ``pages.articles.npy`` beside
    ``pages.arrow``."""
    return _beside(pages_file, "articles")


def columns_path(pages_file: Path) -> Path:
    """Where the pages' ``u``, ``entity`` and ``published`` columns live (:func:`page_columns`):
    ``pages.columns.npy`` beside ``pages.arrow``."""
    return _beside(pages_file, "columns")


def page_columns(table: pa.Table | pa.RecordBatch) -> np.ndarray:
    """The ``u`` (as its float32 bits), ``entity`` and ``published`` (days) columns of the
    pages in ``table``, as one (3, pages) int32 array: what :func:`columns_path` holds."""
    if len(table) == 0:
        return np.zeros((3, 0), np.int32)
    return np.stack([numpy_of(table.column(c), dtype).view(np.int32) for c, dtype in _READ_WHOLE.items()])


def _columns_fit(columns: np.ndarray, table: pa.Table, probes: int = 17) -> bool:
    """Whether ``columns`` has the shape and type of :func:`page_columns` of ``table`` and
    agrees with it on its first and last rows and ``probes`` rows between (a file left from
    another web of as many pages, or rows out of order, is refused; a few reads)."""
    n = table.num_rows
    if columns.shape != (3, n) or columns.dtype != np.int32:
        return False
    rows = np.unique(np.linspace(0, n - 1, probes).astype(np.int64)).tolist() if n else []
    read = [page_columns(table.slice(r, 1).select(list(_READ_WHOLE))) for r in rows]  # (a slice reads one row)
    return all(np.array_equal(columns[:, r], x[:, 0]) for r, x in zip(rows, read))


def article_map(kind_code: np.ndarray, entity: np.ndarray, entities: int) -> np.ndarray:
    """Entity row -> the page row of its encyclopedia article (-1: none), from every page's
    kind code and entity. Saved beside the pages (:func:`articles_path`): made on first use it
    read every page's kind, 0.4 s of a 10M-entity world's first search."""
    out = np.full(entities, -1, np.int32 if len(kind_code) < 2**31 else np.int64)
    rows = np.flatnonzero(kind_code == PAGE_KINDS.index("article"))
    out[entity[rows]] = rows
    return out


def page_codes(table: pa.Table) -> np.ndarray:
    """The positions of every page's kind in PAGE_KINDS and its layer in LAYERS, as a
    (2, pages) int8 array; ValueError on a kind or layer not known."""
    kind, layer = table.column("kind"), table.column("layer")
    return np.stack([_codes(kind, PAGE_KINDS, "page kind"), _codes(layer, LAYERS, "layer")]).astype(np.int8)


def _codes_fit(codes: np.ndarray, pages: int) -> bool:
    if codes.shape != (2, pages) or codes.dtype != np.int8:
        return False
    return not pages or (codes.min() >= 0 and codes[0].max() < len(PAGE_KINDS) and codes[1].max() < len(LAYERS))


def url_order(urls: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Rows of ``urls`` in bytewise (= code point) order of the URLs."""
    return pc.sort_indices(urls).to_numpy().astype(np.int32 if len(urls) < 2**31 else np.int64)


class UrlIndex(Mapping):
    """URL -> page row, by binary search over the URLs in sorted order (no dict of every URL)."""

    def __init__(self, urls: Strings, order: np.ndarray | None = None):
        self._urls = urls
        self._order = order

    @property
    def order(self) -> np.ndarray:
        if self._order is None:
            self._order = url_order(self._urls.arr)
        return self._order

    def __getitem__(self, url: str) -> int:
        if not isinstance(url, str):
            raise KeyError(url)
        order, urls = self.order, self._urls
        i = bisect_left(order, url, key=lambda row: urls[row])
        if i < len(order) and urls[order[i]] == url:
            return int(order[i])
        raise KeyError(url)

    def __contains__(self, url: object) -> bool:
        return isinstance(url, str) and self.get(url) is not None

    def __iter__(self):
        return iter(self._urls)

    def __len__(self) -> int:
        return len(self._urls)


def _codes(column: pa.ChunkedArray, values: tuple[str, ...], what: str) -> np.ndarray:
    idx = pc.index_in(column, value_set=pa.array(values, pa.string()))
    if idx.null_count:
        bad = pc.filter(column, pc.is_null(idx))[0].as_py()
        raise ValueError(f"unknown {what} {bad!r}")
    return idx.to_numpy()
