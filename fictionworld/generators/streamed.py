"""A world generated straight to its files, holding a few blocks of it at a time.

:func:`generators.generate_world` gathers every block task's output in one process and joins
them into a :class:`~fictionworld.World`: at 10M entities that process holds the whole world
(10 GiB). Here each block task spools what it made (its type's data, its facts) to a file of
its own and hands the run only what the next round reads (hand-offs, name hashes) and where
its data lies. The graph is then written from the spools a block at a time, in the order in
which :func:`~fictionworld.generators.blocks.generate_blocks` joins them, with the same finishing steps
(namesakes, websites and ISBNs unique over the world). So the world is the same, file for
file: ``entities.parquet`` and ``facts.parquet`` are those that
``save_world(generate_world(spec, seed), web=False)`` writes, and the content hash is computed
from the written files (:func:`fictionworld.streaming.stream_world_hash`).

What the writing process holds: the spools' index, one block of one type, a few attribute
columns' facts of it, and one slice of ``FACT_SLICE`` facts on their way to Parquet.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import pickle
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from fictionworld.generators.base import attribute_facts
from fictionworld.generators.blocks import Finish, entity_part
from fictionworld.schema import ENTITY_TYPES, PREDICATES
from fictionworld.spec import WorldSpec
from fictionworld.tables import EntityTable, FactTable

__all__ = ["Spooled", "TypeInfo", "spool_block", "write_graph_files", "SPOOL_SUFFIX"]

SPOOL_SUFFIX = ".spool"


@dataclass(frozen=True)
class Spooled:
    """One pickled object in a spool file: where it lies, and how many rows it has."""

    path: str
    offset: int
    size: int
    rows: int

    def load(self):
        with open(self.path, "rb") as fh:
            fh.seek(self.offset)
            data = fh.read(self.size)
        if len(data) != self.size:
            raise OSError(f"{self.path}: spool file cut short ({len(data)} of {self.size} bytes at {self.offset})")
        return pickle.loads(data)


@dataclass(frozen=True)
class TypeInfo:
    """What the writer knows of one block's type data before it reads it."""

    n: int
    start: int
    offset: int
    source: str
    attrs: tuple[str, ...]
    cultures: frozenset[str]
    named: bool
    data: Spooled


def _spool(path: Path, items: list[tuple[object, int]]) -> list[Spooled]:
    """Pickle each (object, rows) of ``items`` into file ``path`` (written whole, then renamed:
    a task run twice leaves one complete file)."""
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    refs, offset = [], 0
    with open(tmp, "wb") as fh:
        for obj, rows in items:
            data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
            fh.write(data)
            refs.append(Spooled(str(path), offset, len(data), rows))
            offset += len(data)
    os.replace(tmp, path)
    return refs


def spool_block(spool: str, name: str, types: dict, records: list) -> tuple[dict[str, TypeInfo], list]:
    """A block task's types (type -> TypeData) and fact records ((call, relation, after,
    source, facts)) written to ``spool/name.pkl``: the same, with TypeInfo and Spooled in
    place of the data."""
    refs = _spool(
        Path(spool) / f"{name}.pkl", [(d, d.n) for d in types.values()] + [(r[4], len(r[4])) for r in records]
    )
    infos = {
        t: TypeInfo(
            n=d.n,
            start=d.start,
            offset=d.offset,
            source=d.source,
            attrs=tuple(d.attrs),
            cultures=frozenset(d.culture.tolist()) if d.culture is not None else frozenset(),
            named=d.names is not None,
            data=ref,
        )
        for (t, d), ref in zip(types.items(), refs)
    }
    return infos, [(*r[:4], ref) for r, ref in zip(records, refs[len(types) :])]


def write_graph_files(
    spec: WorldSpec,
    seed: int,
    graph: str | Path,
    tasks=None,
    progress: Callable[[str], None] | None = None,
    beside: Callable[[Path, str], Callable[[], object]] | None = None,
) -> dict:
    """Generate the world of ``spec`` and ``seed`` into directory ``graph`` (a world without
    web, as :func:`fictionworld.storage.save_world` writes with ``web=False``), its block
    tasks on ``tasks`` (as :func:`generators.generate_world`), never holding it whole. The
    spools lie beside ``graph`` (``<graph>.spool``) until the end; the directory appears
    whole, its manifest written last. ``beside(directory, part)``, if given, may start work
    that reads the files written so far: it is called with ``"entities"`` as soon as
    ``entities.parquet`` is whole (the facts are still being written), and with ``"facts"``
    once ``facts.parquet`` is too and the manifest has its counts (not the hash yet: that
    work runs beside the hash), and with ``"hashed"`` once the hash is taken, before the wait
    for the work started beside it (this process would only wait: the call may work here). What
    each call returns is called (to wait for that work) before the directory takes its name.
    Returns seconds per step."""
    graph = Path(graph)
    spool, tmp = graph.with_name(graph.name + SPOOL_SUFFIX), graph.with_name(graph.name + ".writing")
    for d in (spool, tmp, graph):
        shutil.rmtree(d, ignore_errors=True)
    spool.mkdir(parents=True)
    tmp.mkdir()
    times = {"start": time.perf_counter()}
    try:
        steps, main, people = _run_blocks(spec, seed, tasks, progress, spool)
        times["generate_s"] = time.perf_counter()
        if progress:
            progress("write")
        waits: list[Callable[[], object]] = []

        def start(part: str) -> None:
            if beside is not None:
                waits.append(beside(tmp, part))

        counts = _write(_Layout.of(spec, steps, main, people), spec, seed, tmp, spool, lambda: start("entities"))
        shutil.rmtree(spool)
        times["write_s"] = time.perf_counter()
        generators = {g.id: g.id.rsplit("-v", 1)[-1] for g in steps}
        times.update(_hash(tmp, dict(seed=seed, spec=spec, generators=generators, **counts), start, waits))
    except BaseException:
        for d in (spool, tmp):
            shutil.rmtree(d, ignore_errors=True)
        raise
    os.replace(tmp, graph)
    marks = list(times.items())
    return {name: t - marks[i][1] for i, (name, t) in enumerate(marks[1:])}


def _run_blocks(spec: WorldSpec, seed: int, tasks, progress, spool: Path):
    from fictionworld.generators.blocks import run_blocks

    gc_was_enabled = gc.isenabled()
    gc.disable()  # as generate_world: millions of small objects, no cycles
    try:
        return run_blocks(spec, seed, tasks, progress, spool=str(spool))
    finally:
        if gc_was_enabled:
            gc.enable()


def _hash(directory: Path, manifest: dict, start: Callable[[str], None], waits: list) -> dict[str, float]:
    """Hash the files written to ``directory``, with the work ``start("facts")`` starts beside
    it, wait for all that was started (``waits``), and write the manifest: the time each step
    ended."""
    from fictionworld.storage import file_digests, write_manifest
    from fictionworld.streaming import stream_world_hash

    write_manifest(directory, **manifest, world_hash="", files={})  # what the hash reader needs
    start("facts")
    world_hash = stream_world_hash(directory)
    out = {"hash_s": time.perf_counter()}
    start("hashed")
    for wait in waits:
        wait()
    write_manifest(directory, **manifest, world_hash=world_hash, files=file_digests(directory))
    out["beside_wait_s"] = time.perf_counter()
    return out


@dataclass
class _Layout:
    """Where everything goes, known from the spools' index before any data is read: each
    type's blocks (in type order), the attributes written of it, the relation fact parts in
    order, the source names and cultures (sorted, as the world keeps them), and the first row
    and size of each type."""

    parts: dict[str, list[TypeInfo]]
    attrs: dict[str, list[str]]
    relations: list[tuple[str, Spooled]]
    sources: tuple[str, ...]
    cultures: list[str]
    firsts: np.ndarray
    sizes: np.ndarray

    @classmethod
    def of(cls, spec: WorldSpec, steps: list, main: dict, people: dict) -> _Layout:
        from fictionworld.generators.blocks import by_type, fact_order

        parts: dict[str, list[TypeInfo]] = by_type(spec, steps, main)
        for t, ds in parts.items():
            if not all(d.named for d in ds):
                raise RuntimeError(f"no generator produced names for {t}")
        attrs = {t: [a for a in spec.attributes(t) if a in ds[0].attrs] for t, ds in parts.items()}
        relations = [(src, ref) for g in steps for _key, src, ref in fact_order(main[g.id], people.get(g.id, []))]
        firsts = np.array([ds[0].offset for ds in parts.values()], np.int64)
        sizes = np.array([sum(d.n for d in ds) for ds in parts.values()], np.int64)
        if len(firsts) and not (firsts == np.concatenate([[0], np.cumsum(sizes)[:-1]])).all():
            raise RuntimeError("types' rows are not laid end to end in type order")
        return cls(
            parts=parts,
            attrs=attrs,
            relations=relations,
            # generate_world codes sources as it meets them; World sorts them
            sources=tuple(sorted({src for src, _ in relations} | {parts[t][0].source for t in parts if attrs[t]})),
            cultures=sorted(set().union(*(d.cultures for ds in parts.values() for d in ds))),
            firsts=firsts,
            sizes=sizes,
        )

    def ids_of(self, rows: pa.Array) -> pa.Array:
        """The entity ids (``type:local``) of entity ``rows``, as Arrow strings."""
        r = rows.to_numpy(zero_copy_only=False).astype(np.int64)
        k = np.searchsorted(self.firsts, r, side="right") - 1
        prefixes = pa.array([f"{t}:" for t in self.parts], pa.string())
        return pc.binary_join_element_wise(prefixes.take(pa.array(k)), pa.array(r - self.firsts[k]).cast(pa.string()), "")  # fmt: skip


def _write(layout: _Layout, spec: WorldSpec, seed: int, out: Path, spool: Path, entities_written=None) -> dict:
    """entities.parquet and facts.parquet from the spools; returns the manifest's counts.
    ``entities_written()`` is called once entities.parquet is closed, before the relations'
    facts (52 % of the facts at 1M entities) are written."""
    from fictionworld.storage import ENTITY_ROW_GROUP, ENTITY_SCHEMA, entity_rows_table

    facts = _Facts(layout)
    no_entities = EntityTable(*(np.zeros(0, t) for t in (np.int16, np.int32, object, object, object, np.int32)))
    entities = _Rows(ENTITY_ROW_GROUP, lambda e: entity_rows_table(e, layout.cultures), ENTITY_ROW_GROUP, _concat_entities, None, no_entities)  # fmt: skip
    finish = Finish(spec, seed, book_blocks=len(layout.parts.get("book", [])))
    code = {s: i for i, s in enumerate(layout.sources)}
    with facts.rows.open(out / "facts.parquet"):
        attributes = []
        with entities.open(out / "entities.parquet", ENTITY_SCHEMA):
            for t, ds in layout.parts.items():
                src = code.get(ds[0].source, 0)
                attributes.append((t, len(ds), src, _write_type(t, ds, layout.attrs[t], src, spool, entities, finish)))
        if entities_written is not None:
            entities_written()
        for t, blocks, src, spooled in attributes:  # (in the world's order: by type, then attribute)
            for refs in spooled.values():
                for ref in refs:
                    facts.add(ref.load(), src)
            for i in range(blocks):
                (spool / f"attributes.{t}.{i}.pkl").unlink()
        for src, ref in layout.relations:
            facts.add(ref.load(), code[src])
    by_type = {t: int(layout.sizes[i]) for i, t in enumerate(layout.parts)}
    return {
        "entities": int(layout.sizes.sum()),
        "facts": facts.next_id,
        "by_type": {t: by_type[t] for t in ENTITY_TYPES if by_type.get(t)},
        "by_predicate": {p: int(facts.by_predicate[i]) for i, p in enumerate(PREDICATES) if facts.by_predicate[i]},
    }


def _write_type(
    t: str, ds: list[TypeInfo], attrs: list[str], src: int, spool: Path, entities, finish
) -> dict[str, list[Spooled]]:
    """One type's blocks, finished as generate_blocks finishes them (``finish``: a
    :class:`~fictionworld.generators.blocks.Finish`) and written as entities; their attribute facts are
    spooled (attribute -> one part per block), to be written once every entity is."""
    spooled: dict[str, list[Spooled]] = {a: [] for a in attrs}
    for i, info in enumerate(ds):
        d = info.data.load()
        finish.block(t, i, d)
        entities.add(entity_part(t, d))
        per_attr = [attribute_facts(d, ENTITY_TYPES[t].attribute(a).dtype, a, d.attrs[a], src) for a in attrs]
        for a, ref in zip(attrs, _spool(spool / f"attributes.{t}.{i}.pkl", [(f, len(f)) for f in per_attr])):
            spooled[a].append(ref)
        del d, per_attr
    return spooled


class _Facts:
    """The facts on their way to Parquet: numbered in order, their source coded, counted."""

    def __init__(self, layout: _Layout):
        from fictionworld.storage import FACT_ROW_GROUP, FACT_SLICE, fact_rows_table

        self.rows = _Rows(FACT_SLICE, lambda f: fact_rows_table(f, layout.ids_of, layout.sources), FACT_ROW_GROUP, FactTable.concat_all, layout.sources, FactTable.empty())  # fmt: skip
        self.by_predicate = np.zeros(len(PREDICATES), np.int64)
        self.next_id = 0

    def add(self, f: FactTable, source: int) -> None:
        ids = np.arange(self.next_id, self.next_id + len(f), dtype=np.int64)
        self.rows.add(f.with_values(id=ids, source=np.full(len(f), source, np.int16)))
        self.next_id += len(f)
        self.by_predicate += np.bincount(f.predicate, minlength=len(PREDICATES))


def _concat_entities(parts: list[EntityTable], _sources) -> EntityTable:
    return EntityTable(*(np.concatenate([getattr(p, f.name) for p in parts]) for f in dataclasses.fields(EntityTable)))


class _Rows:
    """Rows gathered into tables of exactly ``size`` rows (the last one short) and written to
    one Parquet file, as the whole-world writer slices them; at least one table is written."""

    def __init__(self, size: int, to_arrow, row_group: int | None, concat, extra, empty):
        self.size, self.to_arrow, self.row_group, self.concat, self.extra = size, to_arrow, row_group, concat, extra
        self.empty = empty  # what an empty file is written from
        self.parts: list = []
        self.held = 0
        self.writer: pq.ParquetWriter | None = None

    def open(self, path: Path, schema: pa.Schema | None = None):
        self.path, self.schema = path, schema
        return self

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        try:
            if kind is None and (self.held or self.writer is None):
                self._flush(self.held)
        finally:
            if self.writer is not None:
                self.writer.close()

    def add(self, rows) -> None:
        if not len(rows):
            return
        self.parts.append(rows)
        self.held += len(rows)
        while self.held >= self.size:
            self._flush(self.size)

    def _flush(self, n: int) -> None:
        """Write the first ``n`` rows held (copied once: the parts are cut, not joined first)."""
        head, got = [], 0
        while got < n:
            part = self.parts[0]
            if len(part) <= n - got:
                head.append(self.parts.pop(0))
                got += len(part)
            else:
                first, self.parts[0] = _cut(part, n - got)
                head.append(first)
                got = n
        self.held -= n
        table = self.to_arrow(self.concat(head, self.extra) if head else self.empty)
        del head
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.path, self.schema or table.schema, compression="zstd")
        self.writer.write_table(table, row_group_size=self.row_group)


def _cut(rows, n: int):
    from dataclasses import fields, replace

    names = [f.name for f in fields(rows) if f.name != "sources"]
    return (
        replace(rows, **{c: getattr(rows, c)[:n] for c in names}),
        replace(rows, **{c: getattr(rows, c)[n:] for c in names}),
    )
