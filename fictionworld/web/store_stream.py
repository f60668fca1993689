"""The render store of a saved world, written without holding the world: :func:`write_store_from_graph`.

:func:`~fictionworld.web.store.write_store` reads a world in memory (at 10M entities, ~10 GiB).
This writes the same files, byte for byte, from a world directory (``save_world(..., web=False)``)
read a Parquet row group at a time:

- one pass over ``facts.parquet`` decodes each row group (entity ids to rows, as
  :class:`~fictionworld.streaming.SavedWorld` does) and scatters its facts, in the render
  store's own fact layout, into spool files (Arrow IPC, in a temporary directory inside the
  store) by the range of entity blocks their subject falls in, and the ``INCOMING`` facts by
  their object; the same pass keeps what the directories read of the ``LIST_BY_*`` facts
  (subject, object, id; the values of the attribute facts only);
- the directories (``lists.arrow``) are then made from those facts alone, and the names of
  the entities their relations point at;
- ``by-subject.arrow`` and ``by-object.arrow``: the spools are read back a few at a time (about
  ``facts_per_bucket`` facts), sorted by key (stable: a spool holds its facts in row order, so
  the order is (key, row), as :func:`~fictionworld.web.store.write_store` gives), and written
  one record batch per entity block; then deleted;
- ``entities.arrow`` and ``names.arrow`` from the entity names and aliases (read as Arrow);
- ``store.json`` last.

At 10M entities (87.8M facts) that is a peak RSS of 2.65 GiB, the most of it in
``list_table`` (the directories); the spools take as much disk as ``by-subject.arrow``.
Every record batch is made by the same helpers :func:`write_store` uses (fed a partial fact
table, or a small world-like object), so the files cannot drift apart.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from fictionworld.reading import WorldFormatError, lazy_tables, unreadable
from fictionworld.schema import ENTITY_TYPES, PREDICATE_CODE, PREDICATES, DType
from fictionworld.streaming import FACT_READ, SavedWorld
from fictionworld.tables import NA_DATE, NA_INT, TYPE_NAMES, FactTable
from fictionworld.web.arrow import write_arrow
from fictionworld.web.phrasing import INCOMING, LIST_BY_ATTRIBUTE, LIST_BY_RELATION, LIST_BY_YEAR
from fictionworld.web.store import (
    ENTITY_SCHEMA,
    FACT_SCHEMA,
    LIST_SCHEMA,
    TABLES,
    entity_batches,
    fact_batch,
    list_table,
    store_meta,
    unique_sorted,
)

__all__ = ["write_store_from_graph", "write_store_facts", "write_store_entities", "seal_store", "FACTS_PER_BUCKET"]

FACTS_PER_BUCKET = 8_000_000  # facts sorted at a time (~0.6 GiB)
SPOOLS_PER_BUCKET = 4  # spool files per bucket's worth of facts: facts per block are uneven
MAX_SPOOLS = 256  # spool files open at once, per table

_INCOMING = [PREDICATES.index(p) for p in INCOMING]
# The facts the directories are made of, and the value columns they read.
_LIST_ATTRS = [*LIST_BY_ATTRIBUTE, *LIST_BY_YEAR]
_LIST_CODES = sorted({PREDICATES.index(p) for p, _ in LIST_BY_RELATION} | {PREDICATES.index(a) for _, a in _LIST_ATTRS})
_VALUE_COLUMN = {DType.INT: "v_int", DType.FLOAT: "v_float", DType.DATE: "v_date"}  # else v_text (FactTable.column)


def _value_columns() -> dict[str, list[int]]:
    """Value column (as :meth:`FactTable.column` picks it): the predicates of the directories that read it."""
    out: dict[str, list[int]] = {}
    for t, a in _LIST_ATTRS:
        out.setdefault(_VALUE_COLUMN.get(ENTITY_TYPES[t].attribute(a).dtype, "v_text"), []).append(PREDICATE_CODE[a])
    return out


_LIST_VALUES = _value_columns()


def write_store_from_graph(
    graph: str | Path, path: str | Path, *, pool: float | None = None, facts_per_bucket: int = FACTS_PER_BUCKET
) -> None:
    """Write the render store of the world saved in directory ``graph`` to directory ``path``:
    the files ``write_store(load_world(graph), path, pool=pool)`` writes, byte for byte, in
    the memory of about ``facts_per_bucket`` facts, the directories' facts and the entity
    names (not of the whole world). A world directory that cannot be read raises
    :class:`~fictionworld.reading.WorldFormatError`.

    It is three steps, which a build runs apart (:func:`~fictionworld.web.shard_tasks.make_graph`):
    :func:`write_store_facts` and :func:`write_store_entities` (each alone on its files, so the
    two may run side by side, the second as soon as ``entities.parquet`` is written), then
    :func:`seal_store`."""
    if facts_per_bucket < 1:
        raise ValueError(f"facts_per_bucket must be positive, not {facts_per_bucket}")
    w = SavedWorld(graph)  # (the manifest and the files' row counts checked before anything is written)
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    (path / "store.json").unlink(missing_ok=True)  # a store is whole once store.json is there
    write_store_facts(graph, path, facts_per_bucket=facts_per_bucket)
    write_store_entities(graph, path, int(w.manifest["seed"]), _share(w.spec, pool))
    seal_store(graph, path, pool=pool)


def _share(spec, pool: float | None) -> float:
    return spec.web.perturbation_pool if pool is None else pool


def write_store_facts(graph: str | Path, path: str | Path, *, facts_per_bucket: int = FACTS_PER_BUCKET) -> None:
    """The store's fact files (``lists.arrow``, ``by-subject.arrow``, ``by-object.arrow``) of
    the world saved in ``graph``, into directory ``path``: one pass over ``facts.parquet``."""
    if facts_per_bucket < 1:
        raise ValueError(f"facts_per_bucket must be positive, not {facts_per_bucket}")
    w = SavedWorld(graph)
    w._rows_by_id  # noqa: B018  (read the entity ids, and let go of what reading them took)
    _release()
    spec, seed, n = w.spec, int(w.manifest["seed"]), len(w.entities)
    block = spec.web.block
    starts = np.arange(0, n + block, block).clip(max=n)
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    spool_dir = Path(tempfile.mkdtemp(prefix=".spool-", dir=path))
    try:
        spools, list_facts, values = _scatter(w, spool_dir, block, starts, facts_per_bucket)
        world_dir, type_code = w.path, w.entities.type_code
        del w  # and its maps of entity ids to rows
        _release()
        # The directories name only the objects of their relations: those names, not all.
        named = _relation_objects(list_facts, n)
        names = _Column(_entity_column(world_dir, "name", named), named)
        lists = list_table(_World(seed, _Entities(type_code, names), list_facts, values))
        del list_facts, values, names
        _write_batches(path / "lists.arrow", LIST_SCHEMA, lists.to_batches())
        del lists
        _release()
        for name, spool in spools.items():
            _write_batches(path / f"{name}.arrow", FACT_SCHEMA, spool.batches(starts, facts_per_bucket))
            spool.delete()
            _release()
    finally:
        shutil.rmtree(spool_dir, ignore_errors=True)


def write_store_entities(graph: str | Path, path: str | Path, seed: int, share: float) -> None:
    """The store's entity files (``entities.arrow``, ``names.arrow``) into directory ``path``,
    from ``entities.parquet`` in ``graph`` alone: it needs no manifest nor facts yet, so a
    build starts it while the facts are still being written. ``seed`` and ``share`` (the
    perturbation pool) are the world's."""
    from fictionworld.storage import ENTITY_SCHEMA as GRAPH_ENTITIES
    from fictionworld.storage import footer_rows

    world_dir = Path(graph)
    rows = footer_rows(world_dir, "entities.parquet", tuple(GRAPH_ENTITIES.names))
    type_code = lazy_tables(world_dir, rows, 0)[0].type_code
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    names = _entity_column(world_dir, "name")
    aliases = _Column(_entity_column(world_dir, "aliases"), arrow=True)
    entities = _Entities(type_code, _Column(names), aliases)
    _write_batches(path / "entities.arrow", ENTITY_SCHEMA, entity_batches(_World(int(seed), entities), share))
    del entities, aliases
    _release()
    write_arrow(path / "names.arrow", pa.table({"name": unique_sorted(names)}))


def seal_store(graph: str | Path, path: str | Path, *, pool: float | None = None) -> None:
    """Write ``store.json`` (last: it marks the store whole) once :func:`write_store_facts` and
    :func:`write_store_entities` have written their files; ``graph``'s manifest gives the
    counts, seed and spec."""
    w = SavedWorld(graph)
    path = Path(path)
    missing = [f"{t}.arrow" for t in (*TABLES, "names") if not (path / f"{t}.arrow").exists()]
    if missing:
        raise RuntimeError(f"{path}: the store lacks {', '.join(missing)}; not sealed")
    meta = store_meta(int(w.manifest["seed"]), w.spec, len(w.entities), w.n_facts, _share(w.spec, pool))
    (path / "store.json").write_text(json.dumps(meta))


def _release() -> None:
    """Give the memory the last phase freed back to the system: Arrow's allocator and glibc's
    keep it for reuse, and it would add to the next phase's peak (at 10M entities, 0.5 GiB
    after the pass over the facts)."""
    from fictionworld.check import give_back_freed_memory

    pa.default_memory_pool().release_unused()
    give_back_freed_memory()


def _write_batches(file: Path, schema: pa.Schema, batches) -> None:
    with pa.OSFile(str(file), "wb") as sink, ipc.new_file(sink, schema) as writer:
        for batch in batches:
            writer.write_batch(batch)


# -- the facts: one pass, scattered by block range ------------------------------------------
def _scatter(w, spool_dir: Path, block: int, starts: np.ndarray, facts_per_bucket: int) -> tuple:
    """Every fact into the by-subject spools, the ``INCOMING`` ones into the by-object spools,
    and the directories' facts kept (see :func:`_list_facts`): one pass over the row groups."""
    blocks = len(starts) - 1
    per = -(-w.n_facts // facts_per_bucket) * SPOOLS_PER_BUCKET
    k = max(1, min(blocks, per, MAX_SPOOLS)) if blocks else 0
    spools = {name: _Spools(spool_dir / name, key, blocks, k, block) for name, key in (("by-subject", "subject"), ("by-object", "object"))}  # fmt: skip
    columns = [c for c in FACT_READ if c != "value_text"]  # the texts stay in Arrow
    parts: list[dict] = []
    texts: dict[str, str] = {}  # one str object per distinct text (category values repeat)
    meta = w._facts.metadata
    first = 0
    try:
        for g in range(w.row_groups):
            # SavedWorld.facts would copy every row through a filter (0.09 s a row group); the
            # texts are read apart, kept in Arrow (no str object per fact).
            f = w._decode(w.read(g, columns))
            text = w.read(g, ["value_text"]).column(0).combine_chunks()
            if len(f) != meta.row_group(g).num_rows or len(text) != len(f):
                raise WorldFormatError(f"{w.file}: row group {g} does not decode to its {meta.row_group(g).num_rows} facts")  # fmt: skip
            rows = np.arange(first, first + len(f), dtype=np.int64)
            first += len(f)
            spools["by-subject"].add(f, text, rows, f.subject)
            incoming = np.flatnonzero(np.isin(f.predicate, _INCOMING) & (f.object >= 0))
            spools["by-object"].add(f, text, rows, f.object, incoming)
            m = np.isin(f.predicate, _LIST_CODES)
            part = {c: getattr(f, c)[m] for c in ("id", "subject", "predicate", "object")}
            for c, codes in _LIST_VALUES.items():
                m = np.isin(f.predicate, codes)
                part[c] = _interned(text.filter(pa.array(m)).to_pylist(), texts) if c == "v_text" else getattr(f, c)[m]
            parts.append(part)
            del f, text, part
    finally:
        for s in spools.values():
            s.close()
    facts, values = _list_facts(parts)
    _release()
    return spools, facts, values


def _interned(values: list, seen: dict[str, str]) -> np.ndarray:
    out = np.empty(len(values), object)
    out[:] = [v if v is None else seen.setdefault(v, v) for v in values]
    return out


def _list_facts(parts: list[dict]) -> tuple[FactTable, dict[str, np.ndarray]]:
    """The directories' facts (in file order) as a :class:`FactTable` of the columns they read
    (the others hold their empty value, without memory), and apart, the values of the
    attribute facts, by value column (of the facts of the predicates ``_LIST_VALUES`` gives
    it, in order): a value column of every fact was a fifth of the memory at 10M."""
    cols = {}
    for c in list(parts[0]) if parts else ():  # a column at a time: one column's copy at once
        cols[c] = np.concatenate([p.pop(c) for p in parts])
    n = len(cols["id"]) if cols else 0
    empty = FactTable.empty()

    def col(name, fill):
        if name in cols and name not in _LIST_VALUES:
            return cols[name]
        return np.broadcast_to(np.array(fill, getattr(empty, name).dtype), (n,))

    facts = FactTable(
        id=col("id", 0), subject=col("subject", 0), predicate=col("predicate", 0), object=col("object", -1),
        v_int=col("v_int", NA_INT), v_float=col("v_float", np.nan), v_date=col("v_date", NA_DATE),
        v_text=col("v_text", None), start=col("start", NA_DATE), end=col("end", NA_DATE), source=col("source", 0),
    )  # fmt: skip
    return facts, {c: cols.get(c, getattr(empty, c)) for c in _LIST_VALUES}


class _Spools:
    """Spool files of one fact table, each for a run of entity blocks; facts go in as record
    batches of ``FACT_SCHEMA`` (the ``row`` column: the fact's row in the world)."""

    def __init__(self, directory: Path, key: str, blocks: int, k: int, block: int):
        directory.mkdir()
        self.key, self.block = key, block
        self.bounds = [s * blocks // k for s in range(k + 1)]  # spool s: blocks bounds[s]:bounds[s+1]
        self.of_block = np.repeat(np.arange(k), np.diff(self.bounds))
        self.files = [directory / f"{s:05d}.arrow" for s in range(k)]
        self.counts = np.zeros(k, np.int64)
        self._sinks = [pa.OSFile(str(f), "wb") for f in self.files]
        self._writers = [ipc.new_file(s, FACT_SCHEMA) for s in self._sinks]

    def add(
        self, f: FactTable, text: pa.Array, rows: np.ndarray, key: np.ndarray, which: np.ndarray | None = None
    ) -> None:
        """Facts ``which`` (default: all) of ``f`` (texts ``text``), whose rows in the world are
        ``rows``, by ``key``."""
        which = np.arange(len(f)) if which is None else which
        if not len(which):
            return
        spool = self.of_block[key[which] // self.block]
        o = np.argsort(spool, kind="stable")
        order, spool = which[o], spool[o]
        del o
        batch = pa.record_batch(
            [pa.array(rows[order], pa.int64())]
            + [pa.array(getattr(f, c.name)[order], c.type) for c in list(FACT_SCHEMA)[1:-1]]
            + [text.take(pa.array(order, pa.int64()))],
            schema=FACT_SCHEMA,
        )
        cuts = np.searchsorted(spool, np.arange(len(self.files) + 1))
        for s in np.flatnonzero(np.diff(cuts)).tolist():
            a, b = int(cuts[s]), int(cuts[s + 1])
            self._writers[s].write_batch(batch.slice(a, b - a))
            self.counts[s] += b - a

    def close(self) -> None:
        for w, s in zip(self._writers, self._sinks):
            if not s.closed:
                w.close()
                s.close()

    def delete(self) -> None:
        for f in self.files:
            f.unlink(missing_ok=True)

    def batches(self, starts: np.ndarray, facts_per_bucket: int):
        """The facts of every entity block in turn, ordered by key then row, as record batches:
        consecutive spools read and sorted together, about ``facts_per_bucket`` facts at a time."""
        k = len(self.files)
        s = 0
        while s < k:
            e, total = s + 1, int(self.counts[s])
            while e < k and total + self.counts[e] <= facts_per_bucket:
                total += int(self.counts[e])
                e += 1
            yield from self._bucket(s, e, starts[self.bounds[s] : self.bounds[e] + 1])
            s = e

    def _bucket(self, s: int, e: int, starts: np.ndarray):
        f = _Facts(self.files[s:e], int(self.counts[s:e].sum()))
        key = getattr(f, self.key)
        order = np.argsort(key, kind="stable")  # within a spool rows ascend: (key, row) order
        cuts = np.searchsorted(key[order], starts)
        for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
            local = order[a:b]
            yield _with_rows(fact_batch(f, local), f.row[local])


def _with_rows(batch: pa.RecordBatch, rows: np.ndarray) -> pa.RecordBatch:
    """``batch`` (from :func:`fact_batch` of a part of the facts) with their rows in the world."""
    return pa.record_batch([pa.array(rows, pa.int64()), *batch.columns[1:]], schema=FACT_SCHEMA)


class _Facts:
    """The facts of spool ``files`` (``n`` in all) as :func:`fact_batch` reads them: numbers
    as NumPy arrays, filled a record batch at a time (one spool's batches in memory beside
    them, not a second copy of the bucket); the texts in Arrow, taken a block at a time."""

    def __init__(self, files: list[Path], n: int):
        numbers = [c for c in FACT_SCHEMA if c.name != "v_text"]
        for c in numbers:
            setattr(self, c.name, np.empty(n, c.type.to_pandas_dtype()))
        texts, at = [], 0
        for file in files:
            with pa.OSFile(str(file), "rb") as source:
                reader = ipc.open_file(source)
                batches = [reader.get_batch(i) for i in range(reader.num_record_batches)]
            for b in batches:
                for c in numbers:
                    getattr(self, c.name)[at : at + b.num_rows] = b.column(c.name).to_numpy()
                at += b.num_rows
            if batches:  # a copy: a batch's columns share one buffer, the spool's
                texts.append(pa.concat_arrays([b.column("v_text") for b in batches]))
            del batches
        if at != n:
            raise RuntimeError(f"spools {files[0]}..: {at} facts, {n} written")
        self.v_text = _Column(pa.concat_arrays(texts) if texts else pa.array([], pa.string()))


# -- the entities ------------------------------------------------------------------------------
class _Values(list):
    """A list with ``tolist``, as numpy indexing of an object column gives."""

    def tolist(self) -> list:
        return list(self)


class _Column:
    """An Arrow column read as an object column is: ``col[a:b]`` or ``col[rows]`` (NumPy
    indices, negative from the end), as Python values, or as Arrow with ``arrow`` (the
    aliases, which :func:`~fictionworld.storage.string_lists` takes as they are). With
    ``rows`` (sorted), the values are those of these rows only, of ``n`` rows."""

    def __init__(self, values: pa.Array | pa.ChunkedArray, rows: np.ndarray | None = None, *, arrow: bool = False):
        self.values, self.rows, self.arrow = values, rows, arrow

    def __getitem__(self, key):
        if isinstance(key, slice):
            a, b, _ = key.indices(len(self.values))
            part = self.values.slice(a, max(b - a, 0))
        else:
            key = np.asarray(key, np.int64)
            if self.rows is None:
                key = np.where(key < 0, key + len(self.values), key)
            else:
                key = self.rows.searchsorted(key)
            part = self.values.take(pa.array(key, pa.int64()))
        return part if self.arrow else _Values(part.to_pylist())


class _Entities:
    """What :func:`list_table` and :func:`entity_batches` read of the entities: type codes,
    names, aliases (where read)."""

    def __init__(self, type_code: np.ndarray, name: _Column, aliases: _Column | None = None):
        self.type_code, self.name, self.aliases = type_code, name, aliases

    def __len__(self) -> int:
        return len(self.type_code)


def _relation_objects(f: FactTable, n: int) -> np.ndarray:
    """The entity rows the directories by relation are about (as ``list_table`` indexes names)."""
    codes = [PREDICATES.index(p) for p, _ in LIST_BY_RELATION]
    objects = f.object[np.isin(f.predicate, codes)]
    return np.unique(np.where(objects < 0, objects + n, objects))


def _entity_column(path: Path, column: str, rows: np.ndarray | None = None) -> pa.ChunkedArray:
    """A column of ``entities.parquet`` (only rows ``rows``, sorted, where given), read a row
    group at a time; an entity without a name is an error."""
    file = path / "entities.parquet"
    parts = []
    try:
        pf = pq.ParquetFile(file)
        first = 0
        for g in range(pf.metadata.num_row_groups):
            size = pf.metadata.row_group(g).num_rows
            if rows is None:
                parts.append(pf.read_row_group(g, columns=[column]).column(0))
            else:
                a, b = np.searchsorted(rows, [first, first + size])
                if b > a:
                    col = pf.read_row_group(g, columns=[column]).column(0)
                    parts.append(col.take(pa.array(rows[a:b] - first, pa.int64())))
            first += size
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise unreadable(file, exc) from None
    if rows is not None and len(rows) and (rows[0] < 0 or rows[-1] >= first):
        raise WorldFormatError(f"{file}: no entity row {rows[-1] if rows[-1] >= first else rows[0]}")
    out = pa.chunked_array([c for p in parts for c in p.chunks], pf.schema_arrow.field(column).type)
    if column == "name" and out.null_count:
        raise WorldFormatError(f"{file}: entity without a name")
    return out


class _World:
    """What the store's helpers read of a world: seed, entities, facts, attributes (the values
    kept apart: see :func:`_list_facts`)."""

    def __init__(self, seed: int, entities: _Entities, facts: FactTable | None = None, values: dict | None = None):
        self.seed, self.entities, self.facts, self.values = seed, entities, facts, values

    def attribute(self, type_name: str, name: str) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`World.attribute`: (entity rows, values) of one attribute over one type."""
        f, code = self.facts, PREDICATE_CODE[name]
        column = _VALUE_COLUMN.get(ENTITY_TYPES[type_name].attribute(name).dtype, "v_text")
        m = (f.predicate == code) & (self.entities.type_code[f.subject] == TYPE_NAMES.index(type_name))
        has_value = np.isin(f.predicate, _LIST_VALUES[column])
        return f.subject[m], self.values[column][m[has_value]]
