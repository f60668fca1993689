"""Page URLs made unique over a whole web, by one rule that any split of the pages agrees on."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["unique_urls", "with_urls"]


def unique_urls(urls: pa.Array | pa.ChunkedArray, kinds: pa.Array | pa.ChunkedArray) -> dict[int, str]:
    """Settle URL clashes over all pages in page order: of the pages asking for one URL an
    article keeps it (articles' URLs are unique), else the first page does; the others get
    ``-2``, ``-3``, … in page order, skipping any URL a page asks for itself. Returns
    {page row: new URL} for the renamed pages. Runs in Arrow's hash tables, with Python only
    over the clashing pages, so it stays cheap at tens of millions of pages."""
    counts = pc.value_counts(urls)
    clash = pc.filter(counts.field("values"), pc.greater(counts.field("counts"), 1))
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
    """``table`` (pages from row ``offset`` on) with the renamed pages' URLs replaced."""
    mine = {r - offset: u for r, u in renamed.items() if offset <= r < offset + table.num_rows}
    if not mine:
        return table
    urls = table.column("url").to_pylist()
    for r, u in mine.items():
        urls[r] = u
    return table.set_column(table.schema.get_field_index("url"), "url", pa.array(urls, pa.string()))
