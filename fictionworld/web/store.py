"""What the template renderer reads, laid out by block: the render store.

The renderer works one block of ``spec.web.block`` entities at a time, and a block needs only
its own entities' facts, the facts pointing at them (cast, authors, recipients...), and the
names and article URLs of the entities those facts mention. The store keeps exactly that, as
Arrow tables with one record batch per entity block, so that a worker renders a block by
reading a few batches (memory-mapped, shared by every worker on a machine) instead of holding
the whole world:

- ``entities.arrow``: name, type code, aliases, article URL and perturbation-pool flag per row;
- ``by-subject.arrow``: each block's facts, by subject (then fact row);
- ``by-object.arrow``: the facts pointing at each block's entities (the ``INCOMING`` relations),
  by object (then fact row);
- ``lists.arrow``: every directory (title, members, fact ids, the entity it is about), by title;
- ``names.arrow``: the distinct entity names, sorted (what a confusable name must not be);
- ``store.json``: seed, present, block, counts; written last.

:func:`write_store` builds it from a world in memory, in one vectorised pass (no Python object
per fact); :class:`RenderStore` serves it from memory or from disk the same way, so a web
rendered in one process and one rendered by a hundred workers are the same web.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from fictionworld.dates import years_of
from fictionworld.schema import PREDICATES
from fictionworld.storage import string_lists
from fictionworld.tables import TYPE_NAMES, runs
from fictionworld.web.arrow import MappedArrow, write_arrow
from fictionworld.web.phrasing import INCOMING, LIST_BY_ATTRIBUTE, LIST_BY_RELATION, LIST_BY_YEAR
from fictionworld.web.strings import Strings
from fictionworld.web.text import article_slug

__all__ = ["RenderStore", "write_store", "STORE_FORMAT"]

STORE_FORMAT = "fictionworld-render-store/1"
ENCYCLOPEDIA_BASE = "https://en.fictopedia.org/wiki/"

FACT_SCHEMA = pa.schema(
    [
        ("row", pa.int64()),
        ("id", pa.int64()),
        ("subject", pa.int32()),
        ("predicate", pa.int16()),
        ("object", pa.int32()),
        ("start", pa.int32()),
        ("end", pa.int32()),
        ("v_int", pa.int64()),
        ("v_float", pa.float64()),
        ("v_date", pa.int32()),
        ("v_text", pa.string()),
    ]
)
ENTITY_SCHEMA = pa.schema(
    [
        ("name", pa.string()),
        ("type", pa.int16()),
        ("aliases", pa.list_(pa.string())),
        ("url", pa.string()),
        ("pool", pa.bool_()),
    ]
)
LIST_SCHEMA = pa.schema(
    [("title", pa.string()), ("about", pa.int32()), ("members", pa.list_(pa.int32())), ("facts", pa.list_(pa.int64()))]
)
TABLES = {"entities": ENTITY_SCHEMA, "by-subject": FACT_SCHEMA, "by-object": FACT_SCHEMA, "lists": LIST_SCHEMA}


class RenderStore:
    """The render store of one world (see the module docstring), in memory or memory-mapped."""

    def __init__(self, meta: dict, tables: dict[str, pa.Table], names: pa.Array | pa.ChunkedArray, maps: tuple = ()):
        self.meta = meta
        self._maps = maps  # the files the tables are mapped from (:meth:`open`), for :meth:`release`
        self.seed, self.present, self.block = int(meta["seed"]), int(meta["present"]), int(meta["block"])
        self.n_entities = int(meta["entities"])
        self.entities = tables["entities"]
        self.by_subject = tables["by-subject"]
        self.by_object = tables["by-object"]
        self.lists = tables["lists"]
        self._names = Strings(names)  # sorted: ``in`` is a binary search
        self._hashes: np.ndarray | None = None  # the names' hashes, sorted (:meth:`is_name`)
        self._batches = {name: _batch_starts(t) for name, t in tables.items() if name in ("by-subject", "by-object")}

    @classmethod
    def open(cls, path: str | Path) -> RenderStore:
        path = Path(path)
        meta = json.loads((path / "store.json").read_text())
        if meta.get("format") != STORE_FORMAT:
            raise ValueError(f"{path}: not a render store of format {STORE_FORMAT}")
        maps = {name: MappedArrow(path / f"{name}.arrow", "normal") for name in [*TABLES, "names"]}
        tables = {name: maps[name].table for name in TABLES}
        return cls(meta, tables, maps["names"].table.column(0), tuple(maps.values()))

    def release(self) -> None:
        """Let go of the pages of the mapped files that this process has read: they stay in the
        page cache, and are mapped again when next read. A worker's renderer outlives its
        tasks, and every block it renders reads other parts of the store: kept mapped, they
        added up to the store's size in every worker (at 10M, 6.8 GiB of files; 4 GiB of
        file-backed RSS per worker by the end of the rendering)."""
        for m in self._maps:
            m.release()

    @property
    def entity_blocks(self) -> int:
        return -(-self.n_entities // self.block)

    @property
    def blocks(self) -> int:
        """Entity blocks, then one directory block per eight entity blocks (at least one)."""
        return self.entity_blocks + max(1, self.entity_blocks // 8)

    def facts(self, table: str, b: int) -> pa.Table:
        """The facts of entity block ``b`` in ``table`` ("by-subject" or "by-object")."""
        t = self.by_subject if table == "by-subject" else self.by_object
        starts = self._batches[table]
        return t.slice(starts[b], starts[b + 1] - starts[b])

    def entity_rows(self, rows: np.ndarray) -> pa.Table:
        return self.entities.take(pa.array(rows, pa.int64()))

    def list_slice(self, j: int, parts: int) -> pa.Table:
        """The ``j``-th of ``parts`` even runs of directories."""
        g = self.lists.num_rows
        return self.lists.slice(j * g // parts, (j + 1) * g // parts - j * g // parts)

    def is_name(self, text: str) -> bool:
        """Whether ``text`` is the name of an entity. Nearly every text asked (a confusable
        name, one edit from a real one) is not: the names' hashes say so in a search of a
        sorted integer array (:meth:`name_hashes`), where the binary search over the sorted
        names reads a few strings (1.7 us against 15 us a text at 1M). A hash found is
        checked by that search."""
        hashes = self._hashes if self._hashes is not None else self.name_hashes()
        k = hash(text)
        i = hashes.searchsorted(k)
        if i == len(hashes) or hashes[i] != k:
            return False
        i = self._names.bisect_left(text)
        return i < len(self._names) and self._names[i] == text

    def name_hashes(self) -> np.ndarray:
        """Python's ``hash`` of every name, sorted (int64; this process's string hashes, so
        made here, on first use, and never saved: 8 bytes a name)."""
        if self._hashes is None:
            hashes = np.fromiter(map(hash, self._names), np.int64, len(self._names))
            hashes.sort()
            self._hashes = hashes
        return self._hashes


def _batch_starts(table: pa.Table) -> list[int]:
    """Row where each record batch (= entity block) of ``table`` starts, and the end."""
    chunks = table.column(0).chunks
    return np.concatenate([[0], np.cumsum([len(c) for c in chunks])]).astype(int).tolist()


# -- writing ----------------------------------------------------------------------------------
ENTITY_BATCH = 1 << 20  # rows per record batch of entities.arrow (a block's names are a take)


def write_store(world, path: str | Path | None = None, *, pool: float | None = None) -> RenderStore:
    """The render store of ``world``; written to directory ``path`` (store.json last) when
    given, else kept in memory. ``pool`` is the share of entities with perturbation pages
    (default: the web spec's). Written batch by batch: beside the world it needs about one
    sort of the facts, never a second copy of them."""

    e, f = world.entities, world.facts
    block = world.spec.web.block
    n = len(e)
    share = world.spec.web.perturbation_pool if pool is None else pool
    meta = store_meta(world.seed, world.spec, n, len(f), share)
    starts = np.arange(0, n + block, block).clip(max=n)
    incoming = np.flatnonzero(np.isin(f.predicate, [PREDICATES.index(p) for p in INCOMING]) & (f.object >= 0))
    parts = {
        "entities": (ENTITY_SCHEMA, lambda: entity_batches(world, share)),
        "by-subject": (FACT_SCHEMA, lambda: _fact_batches(f, f.subject, None, starts)),
        # what an entity's article says of those pointing at it (and an award's recipients)
        "by-object": (FACT_SCHEMA, lambda: _fact_batches(f, f.object, incoming, starts)),
        "lists": (LIST_SCHEMA, lambda: list_table(world).to_batches()),
    }
    names = unique_sorted(pa.array(e.name.tolist(), pa.string()))
    if path is None:
        tables = {
            name: pa.Table.from_batches(list(batches()), schema=schema) for name, (schema, batches) in parts.items()
        }
        return RenderStore(meta, tables, names)
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    for name, (schema, batches) in parts.items():
        with pa.OSFile(str(path / f"{name}.arrow"), "wb") as sink, ipc.new_file(sink, schema) as writer:
            for batch in batches():
                writer.write_batch(batch)
    write_arrow(path / "names.arrow", pa.table({"name": names}))
    (path / "store.json").write_text(json.dumps(meta))
    return RenderStore.open(path)


def store_meta(seed: int, spec, entities: int, facts: int, share: float) -> dict:
    """What ``store.json`` says: format, seed, the present (day number), block, counts, pool share."""
    from fictionworld.dates import to_days

    return {
        "format": STORE_FORMAT, "seed": int(seed), "present": int(to_days(spec.present)), "block": spec.web.block,
        "entities": entities, "facts": facts, "pool": share,
    }  # fmt: skip


def unique_sorted(strings: pa.Array) -> pa.Array:
    u = pc.unique(strings)
    return u.take(pc.sort_indices(u))


def _pool(seed: int, n: int, share: float) -> np.ndarray:
    """Which entities get perturbation pages: a seeded draw of ``share`` of them."""
    from fictionworld.seeding import rng

    out = np.zeros(n, bool)
    if n:
        out[rng(seed, "web-perturbations").choice(n, size=int(round(share * n)), replace=False)] = True
    return out


def entity_batches(world, share: float):
    """Name, type, aliases, article URL and pool flag, ``ENTITY_BATCH`` rows at a time.

    Article URL: the name's slug, and ``_(type)`` (then ``_(type_k)``) where two names share a
    slug. Only the shared slugs are kept in Python; a slug never holds "(", so a suffixed slug
    never meets a plain one."""
    e = world.entities
    n = len(e)
    cuts = list(range(0, n, ENTITY_BATCH)) + [n]
    slugs = pa.chunked_array(
        [pa.array([article_slug(x) for x in e.name[a:b].tolist()], pa.string()) for a, b in zip(cuts[:-1], cuts[1:])],
        pa.string(),
    )
    counts = pc.value_counts(slugs)
    shared = set(pc.filter(counts.field("values"), pc.greater(counts.field("counts"), 1)).to_pylist())
    del counts
    pool = _pool(world.seed, n, share)
    used: set[str] = set()
    for a, b in zip(cuts[:-1], cuts[1:]):
        urls = []
        for i, s in enumerate(slugs.slice(a, b - a).to_pylist(), a):
            if s in shared:
                t = TYPE_NAMES[e.type_code[i]]
                u, k = f"{s}_({t})", 2
                while u in used:
                    u = f"{s}_({t}_{k})"
                    k += 1
                used.add(u)
                s = u
            urls.append(ENCYCLOPEDIA_BASE + s)
        yield pa.record_batch(
            [
                pa.array(e.name[a:b].tolist(), pa.string()),
                pa.array(e.type_code[a:b], pa.int16()),
                string_lists(e.aliases[a:b]),
                pa.array(urls, pa.string()),
                pa.array(pool[a:b], pa.bool_()),
            ],
            schema=ENTITY_SCHEMA,
        )


def _fact_batches(f, key: np.ndarray, rows: np.ndarray | None, starts: np.ndarray):
    """Facts ``rows`` (default: all) ordered by ``key`` (then row), one record batch per entity block."""
    order = np.argsort(key if rows is None else key[rows], kind="stable")
    rows = order if rows is None else rows[order]
    del order
    cuts = np.searchsorted(key[rows], starts)
    for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
        yield fact_batch(f, rows[a:b])


def fact_batch(f, rows: np.ndarray) -> pa.RecordBatch:
    return pa.record_batch(
        [
            pa.array(rows, pa.int64()),
            pa.array(f.id[rows], pa.int64()),
            pa.array(f.subject[rows], pa.int32()),
            pa.array(f.predicate[rows], pa.int16()),
            pa.array(f.object[rows], pa.int32()),
            pa.array(f.start[rows], pa.int32()),
            pa.array(f.end[rows], pa.int32()),
            pa.array(f.v_int[rows], pa.int64()),
            pa.array(f.v_float[rows], pa.float64()),
            pa.array(f.v_date[rows], pa.int32()),
            pa.array(f.v_text[rows].tolist(), pa.string()),
        ],
        schema=FACT_SCHEMA,
    )


def list_table(world) -> pa.Table:
    """Every directory (the ``LIST_BY_*`` groupings), by title; where two groupings give the
    same title the later one wins. Members and fact ids are gathered with array operations,
    so a world of any size costs a few sorts, not a Python list per member."""
    f, e = world.facts, world.entities
    titles: list[str] = []
    about: list[int] = []
    members: list[np.ndarray] = []  # per grouping: member rows in group order
    member_sizes: list[np.ndarray] = []
    facts: list[np.ndarray] = []
    fact_sizes: list[np.ndarray] = []

    def add(group_titles, group_about, rows_sorted, sizes, fact_ids) -> None:
        titles.extend(group_titles)
        about.extend(group_about)
        members.append(rows_sorted)
        member_sizes.append(sizes)
        facts.append(fact_ids if fact_ids is not None else np.zeros(0, np.int64))
        fact_sizes.append(sizes if fact_ids is not None else np.zeros(len(sizes), np.int64))

    for (p, stype), title in LIST_BY_RELATION.items():
        m = (f.predicate == PREDICATES.index(p)) & (e.type_code[f.subject] == TYPE_NAMES.index(stype))
        rows = np.flatnonzero(m)
        rows = rows[np.argsort(f.object[rows], kind="stable")]
        objs, starts, sizes = np.unique(f.object[rows], return_index=True, return_counts=True)
        add([title.format(o=x) for x in e.name[objs].tolist()], objs.tolist(), f.subject[rows], sizes, f.id[rows])
    for (t, attr), title in LIST_BY_ATTRIBUTE.items():
        subj, vals = world.attribute(t, attr)
        ids = f.id[(f.predicate == PREDICATES.index(attr)) & (e.type_code[f.subject] == TYPE_NAMES.index(t))]
        if not len(vals):
            continue
        uniq, inverse, sizes = np.unique(vals, return_inverse=True, return_counts=True)
        order = np.argsort(inverse, kind="stable")
        add([title.format(v=v) for v in uniq.tolist()], [-1] * len(uniq), subj[order], sizes, ids[order])
    for (t, attr), title in LIST_BY_YEAR.items():
        subj, vals = world.attribute(t, attr)
        if not len(vals):
            continue
        years = years_of(vals.astype(np.int64))
        order = np.argsort(years, kind="stable")
        ys, sizes = np.unique(years[order], return_counts=True)
        add([title.format(v=y) for y in ys.tolist()], [-1] * len(ys), subj[order], sizes, None)

    # The last grouping with a title wins; the directories go out sorted by title.
    last = {title: g for g, title in enumerate(titles)}
    chosen = np.array([last[t] for t in sorted(last)], np.int64)
    m_sizes, f_sizes = np.concatenate(member_sizes or [[]]).astype(np.int64), np.concatenate(fact_sizes or [[]]).astype(np.int64)  # fmt: skip
    member_rows = _regroup(np.concatenate(members or [[]]).astype(np.int32), m_sizes, chosen)
    fact_ids = _regroup(np.concatenate(facts or [[]]).astype(np.int64), f_sizes, chosen)
    offsets = lambda sizes: pa.array(np.concatenate([[0], np.cumsum(sizes[chosen])]), pa.int32())  # noqa: E731
    return pa.table(
        {
            "title": pa.array([titles[g] for g in chosen.tolist()], pa.string()),
            "about": pa.array(np.array(about, np.int32)[chosen] if len(chosen) else [], pa.int32()),
            "members": pa.ListArray.from_arrays(offsets(m_sizes), pa.array(member_rows, pa.int32())),
            "facts": pa.ListArray.from_arrays(offsets(f_sizes), pa.array(fact_ids, pa.int64())),
        },
        schema=LIST_SCHEMA,
    )


def _regroup(values: np.ndarray, sizes: np.ndarray, chosen: np.ndarray) -> np.ndarray:
    """The runs of ``values`` (run ``g`` has ``sizes[g]`` items) of groups ``chosen``, in that order."""
    sizes = np.asarray(sizes, np.int64)
    return values[runs((np.cumsum(sizes) - sizes)[chosen], sizes[chosen])[1]]
