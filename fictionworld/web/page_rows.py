"""Pages as a renderer writes them: row by row (:class:`PageRows`), or whole blocks of pages
made at once, in the page table's column layout (``PAGE_SCHEMA``)."""

from __future__ import annotations

from itertools import chain

import numpy as np
import pyarrow as pa

from fictionworld.web.pages import PAGE_COLUMNS, PAGE_SCHEMA

__all__ = ["PageRows", "sorted_sets", "sets_of"]


class PageRows:
    """Accumulates page rows in the PageTable column layout, as a renderer writes them. URLs are
    the ones each page asks for; the renderer settles clashes once all pages are known. The lists of entity
    rows, facts and contradicted facts are taken as given and made sorted sets in
    :meth:`batch`, for all pages at once."""

    def __init__(self) -> None:
        self.cols: dict[str, list] = {name: [] for name in PAGE_COLUMNS}
        self.head: list[pa.RecordBatch] = []  # pages made whole (:meth:`add_batch`), before the rows added

    def add_batch(self, batch: pa.RecordBatch) -> None:
        """Pages made whole, in ``PAGE_SCHEMA`` with their lists already sorted sets; they come
        before every page :meth:`add` adds, which must have added none yet."""
        if self.cols["url"]:
            raise RuntimeError("pages made whole come before the pages added one at a time")
        self.head.append(batch)

    def add(self, *, url, site, title, kind, published, text, entity=-1, entity_rows=(), facts=(), layer="", u=0.0,
            contradicts=()):  # fmt: skip
        c = self.cols
        c["url"].append(url)
        c["site"].append(site)
        c["title"].append(title)
        c["kind"].append(kind)
        c["layer"].append(layer)
        c["published"].append(int(published))
        c["text"].append(text)
        c["entity"].append(int(entity))
        c["entity_rows"].append(entity_rows)
        c["fact_ids"].append(facts)
        c["contradicts"].append(contradicts)
        c["u"].append(float(u))

    def batch(self) -> pa.RecordBatch:
        sets = ("entity_rows", "fact_ids", "contradicts")
        rows = pa.record_batch(
            [sorted_sets(v, PAGE_SCHEMA.field(k).type) if k in sets else pa.array(v, type=PAGE_SCHEMA.field(k).type)
             for k, v in self.cols.items()],
            schema=PAGE_SCHEMA,
        )  # fmt: skip
        if not self.head:
            return rows
        parts = [*self.head, rows]
        return pa.record_batch([pa.concat_arrays([b.column(i) for b in parts]) for i in range(len(PAGE_COLUMNS))],
                               schema=PAGE_SCHEMA)  # fmt: skip


def sorted_sets(lists: list, type_: pa.ListType) -> pa.ListArray:
    """Each list of ints as its sorted distinct values (``sorted(set(x))``), as one Arrow list
    array: one NumPy sort of every value, keyed by the list it is in."""
    n = len(lists)
    lengths = np.fromiter(map(len, lists), np.int64, n)
    values = np.fromiter(chain.from_iterable(lists), np.int64, int(lengths.sum()))
    return sets_of(np.repeat(np.arange(n), lengths), values, n, type_)


def sets_of(owner: np.ndarray, values: np.ndarray, n: int, type_: pa.ListType) -> pa.ListArray:
    """The sorted distinct ``values`` of each of ``n`` lists, ``owner`` saying whose each value
    is (in any order), as one Arrow list array."""
    owner, values = np.asarray(owner, np.int64), np.asarray(values, np.int64)
    order = np.lexsort((values, owner))
    values, owner = values[order], owner[order]
    keep = np.ones(len(values), bool)
    keep[1:] = (values[1:] != values[:-1]) | (owner[1:] != owner[:-1])
    values, owner = values[keep], owner[keep]
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(np.bincount(owner, minlength=n), out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(values, type_.value_type))
