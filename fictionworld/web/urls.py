"""Page URLs made unique over a whole web, by one rule that any split of the pages agrees on."""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fictionworld.web.pages import WebError

__all__ = ["unique_urls", "with_urls", "parse_url"]


def unique_urls(
    urls: pa.Array | pa.ChunkedArray, kinds: pa.Array | pa.ChunkedArray, order: np.ndarray | None = None
) -> dict[int, str]:
    """Settle URL clashes over all pages in page order: of the pages asking for one URL an
    article keeps it (articles' URLs are unique), else the first page does; the others get
    ``-2``, ``-3``, … in page order, skipping any URL a page asks for itself. Returns
    {page row: new URL} for the renamed pages. ``order``: the rows in URL order
    (:func:`~fictionworld.web.pages.url_order`), when the caller has it: a clash is then two
    neighbours in that order (15× cheaper than counting every URL in a hash table, which is
    the way without it). Python runs only over the clashing pages, so this stays cheap at tens
    of millions of pages."""
    if order is None:
        counts = pc.value_counts(urls)
        clash = pc.filter(counts.field("values"), pc.greater(counts.field("counts"), 1))
    else:
        ranked = pc.take(urls, pa.array(order))
        ranked = ranked.combine_chunks() if isinstance(ranked, pa.ChunkedArray) else ranked
        n = len(ranked)
        clash = pc.unique(pc.filter(ranked.slice(1), pc.equal(ranked.slice(1), ranked.slice(0, max(n - 1, 0)))))
    if not len(clash):
        return {}
    rows = np.flatnonzero(pc.is_in(urls, value_set=clash).to_numpy(zero_copy_only=False))
    at = pa.array(rows, pa.int64())
    row_urls = pc.take(urls, at).to_pylist()
    row_kinds = pc.take(kinds, at).to_pylist()
    suffixed = pc.filter(urls, pc.match_substring_regex(urls, r"-[0-9]+$"))
    taken = set(pc.unique(suffixed).to_pylist())
    first: dict[str, int] = {}  # URL -> the page that keeps it
    for r, u, k in zip(rows.tolist(), row_urls, row_kinds):
        if u not in first or k == "article":
            first[u] = r
    out: dict[int, str] = {}
    next_n: dict[str, int] = {}
    for r, u in zip(rows.tolist(), row_urls):
        if first[u] == r:
            continue
        n = next_n.get(u, 2)
        while f"{u}-{n}" in taken:
            n += 1
        out[r] = f"{u}-{n}"
        taken.add(out[r])
        next_n[u] = n + 1
    return out


def with_urls(table: pa.Table, renamed: dict[int, str], offset: int = 0) -> pa.Table:
    """``table`` (pages from row ``offset`` on) with the renamed pages' URLs replaced (in
    Arrow: a shard of hundreds of thousands of pages never passes through Python)."""
    rows = np.fromiter(renamed.keys(), np.int64, len(renamed)) - offset
    mine = np.flatnonzero((rows >= 0) & (rows < table.num_rows))
    if not len(mine):
        return table
    mine = mine[np.argsort(rows[mine], kind="stable")]
    new = list(renamed.values())
    mask = np.zeros(table.num_rows, bool)
    mask[rows[mine]] = True
    at = table.schema.get_field_index("url")
    urls = pc.replace_with_mask(table.column(at), pa.array(mask), pa.array([new[i] for i in mine], pa.string()))
    return table.set_column(at, "url", urls)


_URL_BAD_CHAR = re.compile(r"[\x00-\x20\x7f\ud800-\udfff]|\s")
_PAGE_NUMBER = re.compile(r"[0-9]{1,6}")
_HOST = re.compile(r"[\w-]+(?:\.[\w-]+)+(?::[0-9]{1,5})?")  # a dotted name, perhaps a port: no IP literal, no user@


def parse_url(url: str) -> tuple[str, int]:
    """(the page's address without its ``?page=``, the page number) of a URL a tool was given;
    WebError naming what is wrong where it is not one."""
    if not isinstance(url, str) or not url.strip():
        raise WebError("empty URL: give the full address of a page (https://…)")
    url = url.strip()
    if len(url) > 2_000 or _URL_BAD_CHAR.search(url):
        raise WebError(
            f"malformed URL {url[:80]!r}: no spaces, control characters or lone surrogates, at most 2,000 characters"
        )
    try:
        parts = urlsplit(url)
    except ValueError as e:  # "https://[::1": an unclosed IPv6 bracket, a netloc NFKC-normalising to "/", …
        raise WebError(f"malformed URL {url[:80]!r}: {str(e)[:80]}") from None
    if parts.scheme not in ("http", "https") or not _HOST.fullmatch(parts.netloc):
        raise WebError(f"malformed URL {url[:80]!r}: expected http(s)://host.name/path")
    number = 1
    if parts.query:
        q = dict(x.split("=", 1) for x in parts.query.split("&") if "=" in x)
        if "page" in q:
            if not _PAGE_NUMBER.fullmatch(q["page"]) or not 1 <= int(q["page"]) <= 100_000:
                raise WebError(f"malformed URL {url[:80]!r}: page must be a number from 1 to 100,000")
            number = int(q["page"])
    path = unquote(parts.path).rstrip("/")
    return f"https://{parts.netloc.lower()}{path}", number
