"""A world generated straight to its files, holding a few blocks of it at a time.

:func:`generators.generate_world` gathers every block task's output in one process and joins
them into a :class:`~fictionworld.World`: at 10M entities that process holds the whole world
(10 GiB). Here each block task spools what it made (its type's data, its facts) to a file of
its own and hands the run only what the next round reads (hand-offs, name hashes) and where
its data lies. The graph is then written from the spools a block at a time, in the order in
which :func:`~generators.blocks.generate_blocks` joins them, with the same finishing steps
(namesakes, websites and ISBNs unique over the world). So the world is the same, file for
file: ``entities.parquet`` and ``facts.parquet`` are those that
``save_world(generate_world(spec, seed), web=False)`` writes, and the content hash is computed
from the written files (:func:`fictionworld.streaming.stream_world_hash`).

What the writing process holds: the spools' index, one block of one type, a few attribute
columns' facts of it, and one slice of ``FACT_SLICE`` facts on their way to Parquet.
"""

from __future__ import annotations

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

from fictionworld.schema import ENTITY_TYPES, PREDICATES
from fictionworld.spec import WorldSpec
from fictionworld.tables import TYPE_CODE, EntityTable, FactTable
from generators.base import Block, GenContext, _attribute_facts, apply_namesakes

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
    beside: Callable[[Path], Callable[[], object]] | None = None,
) -> dict:
    """Generate the world of ``spec`` and ``seed`` into directory ``graph`` (a world without
    web, as :func:`fictionworld.storage.save_world` writes with ``web=False``), its block
    tasks on ``tasks`` (as :func:`generators.generate_world`), never holding it whole. The
    spools lie beside ``graph`` (``<graph>.spool``) until the end; the directory appears
    whole, its manifest written last. ``beside(directory)``, if given, is called once the
    data files are written (their manifest lacks the hash yet) and may start work that reads
    them beside the hash; what it returns is called (to wait for that work) before the
    directory takes its name. Returns seconds per step."""
    from fictionworld.storage import file_digests, write_manifest
    from fictionworld.streaming import stream_world_hash

    graph = Path(graph)
    spool, tmp = graph.with_name(graph.name + SPOOL_SUFFIX), graph.with_name(graph.name + ".writing")
    for d in (spool, tmp, graph):
        shutil.rmtree(d, ignore_errors=True)
    spool.mkdir(parents=True)
    tmp.mkdir()
    t0 = time.perf_counter()
    try:
        from generators.blocks import run_blocks

        gc_was_enabled = gc.isenabled()
        gc.disable()  # as generate_world: millions of small objects, no cycles
        try:
            steps, main, people = run_blocks(spec, seed, tasks, progress, spool=str(spool))
        finally:
            if gc_was_enabled:
                gc.enable()
        t1 = time.perf_counter()
        if progress:
            progress("write")
        counts = _write(spec, seed, steps, main, people, tmp, spool)
        shutil.rmtree(spool)
        t2 = time.perf_counter()
        manifest = {
            "seed": seed,
            "spec": spec,
            "generators": {g.id: g.id.rsplit("-v", 1)[-1] for g in steps},
            **counts,
        }
        write_manifest(tmp, **manifest, world_hash="", files={})  # what the hash reader needs
        wait = beside(tmp) if beside is not None else None
        world_hash = stream_world_hash(tmp)
        t3 = time.perf_counter()
        if wait is not None:
            wait()
        write_manifest(tmp, **manifest, world_hash=world_hash, files=file_digests(tmp))
    except BaseException:
        for d in (spool, tmp):
            shutil.rmtree(d, ignore_errors=True)
        raise
    os.replace(tmp, graph)
    return {"generate_s": t1 - t0, "write_s": t2 - t1, "hash_s": t3 - t2, "beside_wait_s": time.perf_counter() - t3}


def _write(spec: WorldSpec, seed: int, steps: list, main: dict, people: dict, out: Path, spool: Path) -> dict:
    """entities.parquet and facts.parquet from the spools; returns the manifest's counts."""
    from fictionworld.storage import (
        ENTITY_ROW_GROUP,
        ENTITY_SCHEMA,
        FACT_ROW_GROUP,
        FACT_SLICE,
        entity_rows_table,
        fact_rows_table,
    )
    from generators.blocks import _fact_order, _website_again, isbn_rng

    made: dict[str, list[TypeInfo]] = {}
    for g in steps:
        for o in main[g.id]:
            for t, info in o.types.items():
                made.setdefault(t, []).append(info)
    parts = {t: made[t] for t in spec.counts() if t in made}
    for t, ds in parts.items():
        if not all(d.named for d in ds):
            raise RuntimeError(f"no generator produced names for {t}")
    attrs = {t: [a for a in spec.attributes(t) if a in ds[0].attrs] for t, ds in parts.items()}
    relations = [(src, ref) for g in steps for _key, src, ref in _fact_order(main[g.id], people.get(g.id, []))]
    # The source names sorted, as World keeps them (generate_world codes them as it meets them)
    sources = tuple(sorted({src for src, _ in relations} | {parts[t][0].source for t in parts if attrs[t]}))
    code = {s: i for i, s in enumerate(sources)}
    cultures = sorted(set().union(*(d.cultures for ds in parts.values() for d in ds)))

    firsts = np.array([ds[0].offset for ds in parts.values()], np.int64)
    sizes = np.array([sum(d.n for d in ds) for ds in parts.values()], np.int64)
    if len(firsts) and not (firsts == np.concatenate([[0], np.cumsum(sizes)[:-1]])).all():
        raise RuntimeError("types' rows are not laid end to end in type order")
    prefixes = pa.array([f"{t}:" for t in parts], pa.string())

    def ids_of(rows: pa.Array) -> pa.Array:
        r = rows.to_numpy(zero_copy_only=False).astype(np.int64)
        k = np.searchsorted(firsts, r, side="right") - 1
        return pc.binary_join_element_wise(prefixes.take(pa.array(k)), pa.array(r - firsts[k]).cast(pa.string()), "")

    facts = _Rows(FACT_SLICE, lambda f: fact_rows_table(f, ids_of, sources), FACT_ROW_GROUP, FactTable.concat_all, sources, FactTable.empty())  # fmt: skip
    entities = _Rows(ENTITY_ROW_GROUP, lambda e: entity_rows_table(e, cultures), ENTITY_ROW_GROUP, _concat_entities, None, None)  # fmt: skip
    by_predicate = np.zeros(len(PREDICATES), np.int64)
    next_id = 0

    def add_facts(f: FactTable, source: int) -> None:
        nonlocal next_id
        f = f.with_values(id=np.arange(next_id, next_id + len(f), dtype=np.int64), source=np.full(len(f), source, np.int16))  # fmt: skip
        next_id += len(f)
        by_predicate[:] += np.bincount(f.predicate, minlength=len(PREDICATES))
        facts.add(f)

    websites: set[str] = set()
    isbns: set[str] = set()
    again = isbn_rng(seed)
    with facts.open(out / "facts.parquet"), entities.open(out / "entities.parquet", ENTITY_SCHEMA):
        for t, ds in parts.items():
            # One type's blocks: finished as generate_blocks finishes them, written as
            # entities; their attribute facts spooled, to go out attribute by attribute.
            spooled: dict[str, list[Spooled]] = {a: [] for a in attrs[t]}
            src = code.get(ds[0].source, 0)
            for i, info in enumerate(ds):
                d = info.data.load()
                if t != "person":  # the people generator keeps namesakes out of families itself
                    ctx = GenContext(spec, seed, block=Block(t, i, d.start, d.n))
                    ctx.types[t] = d
                    apply_namesakes(ctx, t)
                _finish_unique(d, websites, isbns, again, len(parts.get("book", ())) >= 2, _website_again)
                entities.add(
                    EntityTable(
                        type_code=np.full(d.n, TYPE_CODE[t], np.int16),
                        local=np.arange(d.start, d.start + d.n, dtype=np.int32),
                        name=d.names,
                        aliases=d.aliases,
                        culture=d.culture,
                        namesake_group=d.namesake_group,
                    )
                )
                per_attr = [
                    _attribute_facts(d, ENTITY_TYPES[t].attribute(a).dtype, a, d.attrs[a], src) for a in attrs[t]
                ]
                refs = _spool(spool / f"attributes.{t}.{i}.pkl", [(f, len(f)) for f in per_attr])
                for a, ref in zip(attrs[t], refs):
                    spooled[a].append(ref)
                del d, per_attr
            for a in attrs[t]:
                for ref in spooled[a]:
                    add_facts(ref.load(), src)
            for i in range(len(ds)):
                (spool / f"attributes.{t}.{i}.pkl").unlink()
        for src_name, ref in relations:
            add_facts(ref.load(), code[src_name])
    by_type = {t: int(sizes[i]) for i, t in enumerate(parts)}
    return {
        "entities": int(sizes.sum()),
        "facts": next_id,
        "by_type": {t: by_type[t] for t in ENTITY_TYPES if by_type.get(t)},
        "by_predicate": {p: int(by_predicate[i]) for i, p in enumerate(PREDICATES) if by_predicate[i]},
    }


def _finish_unique(d, websites: set[str], isbns: set[str], rng, isbn_again: bool, website_again) -> None:
    """Websites unique over the world (in type, then block order), and ISBNs where a type has
    more than one block, as :func:`generators.blocks._type_parts` makes them."""
    from generators.blocks import _make_unique
    from generators.works import _isbn13

    _make_unique([d], "website", website_again, websites)
    if isbn_again:
        _make_unique([d], "isbn", lambda _first, _k: _isbn13(rng, 1)[0], isbns)


def _concat_entities(parts: list[EntityTable], _sources) -> EntityTable:
    out = parts[0]
    for p in parts[1:]:
        out = out.concat(p)
    return out


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
