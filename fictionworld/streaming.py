"""A saved world read a row group at a time: for checks and hashes that must not hold it whole.

Facts refer to entities by id string (``person:42``). Loading a whole world maps them onto rows
with one hash table of every id; here each row group's ids are parsed into (type, number) and
looked up in the per-type arrays of :class:`~fictionworld.tables.EntityTable`, so a process
holds a few integers per entity and one row group of facts at a time.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from fictionworld.dates import NA_DATE
from fictionworld.reading import (
    WorldFormatError,
    int_column,
    lazy_tables,
    predicate_codes,
    text_column,
    unreadable,
)
from fictionworld.schema import PREDICATES
from fictionworld.tables import NA_INT, TYPE_NAMES, FactTable
from fictionworld.world import hash_column, hash_strings

__all__ = ["SavedWorld", "stream_world_hash"]

_TYPES = pa.array(TYPE_NAMES, pa.string())
_ID = r"^(?P<t>[a-z_]+):(?P<n>0|[1-9][0-9]{0,8})$"
FACT_READ = ("id", "subject", "predicate", "object", "value_int", "value_float", "value_date", "value_text", "start", "end")  # fmt: skip


class SavedWorld:
    """A world directory opened for streaming: the manifest and spec, the entity table read
    lazily (a column on first use), and the facts a row group at a time."""

    def __init__(self, path: str | Path):
        from fictionworld.spec import WorldSpec
        from fictionworld.storage import ENTITY_SCHEMA, FACT_COLUMNS, check_counts, footer_rows, read_manifest

        self.path = Path(path)
        self.manifest = read_manifest(self.path)
        self.spec = WorldSpec.model_validate(self.manifest["spec"])
        n_ent = footer_rows(self.path, "entities.parquet", tuple(ENTITY_SCHEMA.names))
        n_facts = footer_rows(self.path, "facts.parquet", FACT_COLUMNS)
        check_counts(self.path, n_ent, n_facts, self.manifest["counts"])
        self.entities, _ = lazy_tables(self.path, n_ent, n_facts)
        self.n_facts = n_facts
        self.file = self.path / "facts.parquet"

    @cached_property
    def _facts(self) -> pq.ParquetFile:
        try:
            return pq.ParquetFile(self.file)
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise unreadable(self.file, exc) from None

    @property
    def row_groups(self) -> int:
        return self._facts.num_row_groups

    def read(self, group: int, columns) -> pa.Table:
        try:
            return self._facts.read_row_group(group, columns=list(columns))
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise unreadable(self.file, exc) from None

    def predicate_counts(self) -> np.ndarray:
        """Facts per (row group, predicate code), from the predicate column alone."""
        out = np.zeros((self.row_groups, len(PREDICATES)), np.int64)
        for g in range(self.row_groups):
            p = predicate_codes(self.read(g, ["predicate"]).column("predicate"), str(self.file))
            out[g] = np.bincount(p, minlength=len(PREDICATES))
        return out

    def column(self, name: str, groups=None) -> Iterator[np.ndarray]:
        """One decoded integer column (``id``, ``start``, ...), a row group at a time."""
        for g in range(self.row_groups) if groups is None else groups:
            yield int_column(self.read(g, [name]).column(name), 0, np.int64)

    def facts(self, groups, codes, columns=FACT_READ) -> FactTable:
        """Every fact whose predicate code is in ``codes``, from row groups ``groups`` (in file
        order), as a :class:`FactTable`. Only ``columns`` (and the predicate) are read; the
        others hold their empty value, and ``source`` is never read (no check uses it)."""
        want = np.zeros(len(PREDICATES), bool)
        want[list(codes)] = True
        columns = tuple(dict.fromkeys(("predicate", *columns)))
        parts = []
        for g in groups:
            t = self.read(g, columns)
            keep = want[predicate_codes(t.column("predicate"), str(self.file))]
            if keep.all():  # (a filter keeping every row still copies them all)
                parts.append(self._decode(t))
            elif keep.any():
                parts.append(self._decode(t.filter(pa.array(keep))))
        if not parts:
            return FactTable.empty()
        return FactTable.concat_all(parts, ())

    def _decode(self, t: pa.Table) -> FactTable:
        def col(name, decode, fill, dtype):
            return decode(t.column(name)) if name in t.column_names else np.full(t.num_rows, fill, dtype)

        def ints(name, na, dtype):
            return col(name, lambda c: int_column(c, na, dtype), na, dtype)

        def ids(c, allow_null=False):
            return self.entity_rows(c, "entity id", allow_null).astype(np.int32)

        return FactTable(
            id=ints("id", 0, np.int64),
            subject=col("subject", ids, 0, np.int32),
            predicate=predicate_codes(t.column("predicate"), str(self.file)),
            object=col("object", lambda c: ids(c, True), -1, np.int32),
            v_int=ints("value_int", NA_INT, np.int64),
            v_float=col("value_float", lambda c: c.fill_null(np.nan).to_numpy().astype(np.float64), np.nan, np.float64),
            v_date=ints("value_date", int(NA_DATE), np.int32),
            v_text=col("value_text", text_column, None, object),
            start=ints("start", int(NA_DATE), np.int32),
            end=ints("end", int(NA_DATE), np.int32),
            source=np.zeros(t.num_rows, np.int16),
        )

    @cached_property
    def _rows_by_id(self) -> tuple[np.ndarray, np.ndarray]:
        """(rows of every type's local numbers, one after another; where each type starts)."""
        tables = self.entities._rows_by_local
        base = np.r_[0, np.cumsum([len(t) for t in tables])]
        return np.concatenate(tables) if tables else np.zeros(0, np.int64), base

    def entity_rows(self, col: pa.ChunkedArray, what: str, allow_null: bool = False) -> np.ndarray:
        """The entity rows of an id column (-1 for a null cell where ``allow_null``). Of a
        dictionary column, only the ids its cells use are parsed."""
        out = []
        for chunk in col.chunks:
            valid = chunk.is_valid().to_numpy(zero_copy_only=False)
            if not allow_null and not valid.all():
                raise WorldFormatError(f"{self.file}: {what} column has empty cells (corrupt)")
            if pa.types.is_dictionary(chunk.type):
                idx = chunk.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)[valid]
                # The dictionary entries in use, ascending, and each cell's place among them: a
                # mask over the dictionary, not a sort of the cells (np.unique), which took a
                # seventh of a check unit.
                mask = np.zeros(len(chunk.dictionary), bool)
                if len(idx) and (idx.min() < 0 or idx.max() >= len(mask)):
                    raise WorldFormatError(f"{self.file}: {what} column points outside its dictionary (corrupt)")
                mask[idx] = True
                used = np.flatnonzero(mask)
                rows = np.full(len(chunk), -1, np.int64)
                rows[valid] = self._parse(chunk.dictionary.take(pa.array(used)), what)[(np.cumsum(mask) - 1)[idx]]
            else:
                rows = np.full(len(chunk), -1, np.int64)
                rows[valid] = self._parse(chunk.filter(pa.array(valid)), what)
            out.append(rows)
        return np.concatenate(out) if out else np.zeros(0, np.int64)

    def _parse(self, words: pa.Array, what: str) -> np.ndarray:
        """The rows of the ids ``words`` (no nulls among them); an id of no entity is an error."""
        flat, base = self._rows_by_id
        words = words.cast(pa.string())
        parts = pc.extract_regex(words, _ID)
        t = pc.index_in(pc.struct_field(parts, "t"), value_set=_TYPES).fill_null(-1)
        t = t.to_numpy(zero_copy_only=False).astype(np.int64)
        n = pc.struct_field(parts, "n").cast(pa.int64()).fill_null(-1).to_numpy(zero_copy_only=False)
        ok = (n >= 0) & (t >= 0)
        ok[ok] = n[ok] < base[t[ok] + 1] - base[t[ok]]
        rows = np.full(len(words), -1, np.int64)
        rows[ok] = flat[base[t[ok]] + n[ok]]
        bad = np.flatnonzero(rows < 0)
        if len(bad):
            raise WorldFormatError(f"{self.file}: unknown {what} {words[int(bad[0])].as_py()!r} (corrupt or foreign file)")  # fmt: skip
        return rows


def stream_world_hash(path: str | Path) -> str:
    """:attr:`World.world_hash` of a saved world, computed a column and a row group at a time
    (the hash is column-major, and each column's length is known from the file footers): the
    same digest as loading it whole, in the memory of one row group."""
    from fictionworld.spec import graph_spec
    from fictionworld.world import FORMAT

    w = SavedWorld(path)
    h = hashlib.blake2b(digest_size=20)
    head = {"format": FORMAT, "seed": int(w.manifest["seed"]), "spec": graph_spec(w.spec)}
    h.update(json.dumps(head, sort_keys=True).encode())
    e = w.entities
    for arr, dt in ((e.type_code, "<i2"), (e.local, "<i4"), (e.namesake_group, "<i4")):
        _update(h, len(arr), [arr], dt)
    ent = _EntityColumns(w.path / "entities.parquet")
    _update_strings(h, len(e), ent.strings("name", lambda c: c.to_pylist()))
    _update_strings(h, len(e), ent.strings("culture", lambda c: c.cast(pa.string()).fill_null("").to_pylist()))
    # (each entity's aliases joined by U+001E, an entity without any "": joined by Arrow, not
    # a Python list per entity)
    _update_strings(h, len(e), ent.strings("aliases", lambda c: pc.binary_join(c, "\x1e").fill_null("").to_pylist()))
    file = str(w.file)
    decoders = (  # the fact columns in the hash's order: (file column, decoder, dtype)
        ("id", lambda c: int_column(c, 0, np.int64), "<i8"),
        ("subject", lambda c: w.entity_rows(c, "entity id"), "<i4"),
        ("predicate", lambda c: predicate_codes(c, file), "<i2"),
        ("object", lambda c: w.entity_rows(c, "entity id", allow_null=True), "<i4"),
        ("value_int", lambda c: int_column(c, NA_INT, np.int64), "<i8"),
        ("value_float", lambda c: c.fill_null(np.nan).to_numpy().astype(np.float64), "<f8"),
        ("value_date", lambda c: int_column(c, int(NA_DATE), np.int32), "<i4"),
        ("start", lambda c: int_column(c, int(NA_DATE), np.int32), "<i4"),
        ("end", lambda c: int_column(c, int(NA_DATE), np.int32), "<i4"),
    )
    groups = range(w.row_groups)
    for col, decode, dt in decoders:
        _update(h, w.n_facts, (decode(w.read(g, [col]).column(col)) for g in groups), dt)
    sources = sorted(set().union(*(pc.unique(w.read(g, ["source"]).column("source").cast(pa.string())).to_pylist() for g in groups)) - {None})  # fmt: skip
    names = pa.array(sources, pa.string())

    def source_codes(c):
        c = c.cast(pa.string())
        if c.null_count:
            raise WorldFormatError(f"{file}: source column has empty cells (corrupt)")
        # (every cell is one of the names: they are the column's own values)
        return pc.index_in(c, value_set=names).to_numpy(zero_copy_only=False).astype(np.int16)

    _update(h, w.n_facts, (source_codes(w.read(g, ["source"]).column("source")) for g in groups), "<i2")
    counts, offsets = [], [0]
    for g in groups:
        counts.append(w.read(g, ["value_text"]).column("value_text").is_valid())
        offsets.append(offsets[-1] + len(counts[-1]))
    n_text = sum(int(pc.sum(v).as_py() or 0) for v in counts)
    _update(h, n_text, (np.flatnonzero(v.to_numpy(zero_copy_only=False)) + off for v, off in zip(counts, offsets)), "<i8")  # fmt: skip
    del counts
    texts = (pc.drop_null(w.read(g, ["value_text"]).column("value_text")).to_pylist() for g in groups)
    _update_strings(h, n_text, texts)
    _update_strings(h, len(sources), iter([sources]))
    return h.hexdigest()


class _EntityColumns:
    def __init__(self, file: Path):
        self.file = file
        try:
            self.pf = pq.ParquetFile(file)
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise unreadable(file, exc) from None

    def strings(self, column: str, convert) -> Iterator[list[str]]:
        for g in range(self.pf.num_row_groups):
            try:
                col = self.pf.read_row_group(g, columns=[column]).column(column)
            except (pa.ArrowException, OSError, ValueError) as exc:
                raise unreadable(self.file, exc) from None
            yield convert(col)


def _update(h, n: int, parts, dtype: str) -> None:
    _expect(n, hash_column(h, n, parts, dtype))


def _update_strings(h, n: int, parts) -> None:
    _expect(n, hash_strings(h, n, parts))


def _expect(n: int, seen: int) -> None:
    if seen != n:
        raise WorldFormatError(f"{n} values expected, {seen} read (truncated or corrupt file)")
