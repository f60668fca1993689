"""Page URLs made unique over a whole web, by one rule that any split of the pages agrees on."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["unique_urls", "with_urls"]


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
