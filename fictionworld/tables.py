"""Columnar storage of entities and facts: numpy arrays are the source of truth.

A million entities with several million facts fit in a few hundred MB this way, and every
check is a vectorised pass. A networkx view is built on demand (``World.graph``).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import MISSING, dataclass, fields, replace
from functools import cached_property
from typing import Literal

import numpy as np

from fictionworld.dates import NA_DATE, from_days
from fictionworld.schema import ENTITY_TYPES, DType

__all__ = [
    "EntityTable",
    "EntityIds",
    "FactTable",
    "LazyColumns",
    "object_array",
    "runs",
    "NA_INT",
    "NA_DATE",
    "TYPE_NAMES",
    "TYPE_CODE",
]

NA_INT = np.int64(np.iinfo(np.int64).min)
TYPE_NAMES: tuple[str, ...] = tuple(ENTITY_TYPES)
TYPE_CODE: dict[str, int] = {t: i for i, t in enumerate(TYPE_NAMES)}


def object_array(values) -> np.ndarray:
    """A 1-d numpy object array (strings, tuples) from any sequence."""
    out = np.empty(len(values), dtype=object)
    out[:] = list(values) if not isinstance(values, np.ndarray) else values
    return out


def runs(lo: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Runs ``lo[i] : lo[i] + n[i]`` laid end to end: for every element, its run ``i`` and its
    position ``lo[i] + k``. The vectorised form of a loop over runs (postings, ranges, groups)."""
    which = np.repeat(np.arange(len(n)), n)
    return which, np.repeat(np.asarray(lo) - (np.cumsum(n) - n), n) + np.arange(len(which))


@dataclass(frozen=True, eq=False)
class EntityTable:
    type_code: np.ndarray  # int16, index into TYPE_NAMES
    local: np.ndarray  # int32, index within the type (stable id part)
    name: np.ndarray  # object: str
    aliases: np.ndarray  # object: tuple[str, ...]
    culture: np.ndarray  # object: str ("" when none)
    namesake_group: np.ndarray  # int32, -1 when not a deliberate namesake

    def __len__(self) -> int:
        return len(self.type_code)

    @cached_property
    def ids(self) -> np.ndarray:
        return object_array([f"{TYPE_NAMES[t]}:{i}" for t, i in zip(self.type_code.tolist(), self.local.tolist())])

    @cached_property
    def row_of(self) -> dict[str, int]:
        return {e: i for i, e in enumerate(self.ids.tolist())}

    @cached_property
    def _rows_by_local(self) -> tuple[np.ndarray, ...]:
        """Per type: local number -> row (-1 for none)."""
        out = []
        for code in range(len(TYPE_NAMES)):
            rows = np.flatnonzero(self.type_code == code)
            local = self.local[rows]
            table = np.full(int(local.max()) + 1 if len(rows) else 0, -1, np.int64)
            table[local] = rows
            out.append(table)
        return tuple(out)

    def row_of_id(self, entity_id: str) -> int:
        """The row of ``entity_id`` ("person:42"), KeyError if none, from the numeric columns
        (no table of every id is built)."""
        m = _ID.fullmatch(entity_id) if isinstance(entity_id, str) else None
        code = TYPE_CODE.get(m.group(1)) if m else None
        if code is None or len(m.group(2)) > 9:
            raise KeyError(entity_id)
        table, local = self._rows_by_local[code], int(m.group(2))
        if local >= len(table) or table[local] < 0:
            raise KeyError(entity_id)
        return int(table[local])

    def id_of(self, row: int) -> str:
        return f"{TYPE_NAMES[int(self.type_code[row])]}:{int(self.local[row])}"

    @property
    def id_view(self) -> EntityIds:
        """``ids`` without building a string per entity: ``view[row]``, ``view[rows]``."""
        return EntityIds(self)

    def type_of(self, row: int) -> str:
        return TYPE_NAMES[int(self.type_code[row])]

    def rows_of_type(self, type_name: str) -> np.ndarray:
        return np.flatnonzero(self.type_code == TYPE_CODE[type_name])

    def concat(self, other: EntityTable) -> EntityTable:
        return EntityTable(*(np.concatenate([getattr(self, f.name), getattr(other, f.name)]) for f in fields(self)))

    def with_values(self, **columns: np.ndarray) -> EntityTable:
        return replace(self, **columns)


_ID = re.compile(r"([a-z_]+):(0|[1-9][0-9]*)")


class EntityIds:
    """Entity ids by row, formatted on demand from the numeric columns: ``ids[row]`` is a str,
    ``ids[rows]`` an object array (as numpy indexing of ``EntityTable.ids`` gives)."""

    __slots__ = ("_table",)

    def __init__(self, table: EntityTable):
        self._table = table

    def __len__(self) -> int:
        return len(self._table)

    def __getitem__(self, key):
        if isinstance(key, int | np.integer):
            return self._table.id_of(int(key) if key >= 0 else len(self) + int(key))
        rows = np.arange(len(self))[key] if isinstance(key, slice) else np.asarray(key, np.int64)
        t = self._table
        codes, local = t.type_code[rows].tolist(), t.local[rows].tolist()
        return object_array([f"{TYPE_NAMES[c]}:{n}" for c, n in zip(codes, local)])


class _DefaultedField:
    """A field with a dataclass default, on a lazy table. The default is a class attribute, which
    attribute lookup finds before ``__getattr__`` is asked: without this, such a field read
    first was its default, not the file's (``FactTable.sources`` was ``()``, and saving the
    world failed). A non-data descriptor: once read, the instance's value wins."""

    def __init__(self, name: str, default):
        self.name, self.default = name, default

    def __get__(self, obj, owner=None):
        if obj is None or self.name not in (obj.__dict__.get("_loaders") or {}):
            return self.default
        return obj.__getattr__(self.name)


class LazyColumns:
    """Fields of a columnar table read on first use (a world opened without reading it all).
    ``_loaders[name](table)`` returns that field, and any it computes along the way, as a dict;
    ``_rows`` is the row count. Pickling and copying give the plain table, read whole."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for f in fields(cls) if hasattr(cls, "__dataclass_fields__") else ():
            if f.default is not MISSING:
                setattr(cls, f.name, _DefaultedField(f.name, f.default))

    def __getattr__(self, name: str):
        loaders = self.__dict__.get("_loaders")
        if not loaders or name not in loaders:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        for key, value in loaders[name](self).items():
            object.__setattr__(self, key, value)
        return self.__dict__[name]

    def __len__(self) -> int:
        rows = self.__dict__.get("_rows")
        return rows if rows is not None else super().__len__()

    def __repr__(self) -> str:
        read = [f.name for f in fields(self) if f.name in self.__dict__]
        return f"{type(self).__name__}(rows={len(self):,}, read={read})"

    def __reduce__(self):
        plain = next(c for c in type(self).__mro__ if c is not LazyColumns and c.__dict__.get("__dataclass_fields__"))
        return plain, tuple(getattr(self, f.name) for f in fields(self))

    @classmethod
    def lazy(cls, rows: int, loaders: dict, **known):
        self = object.__new__(cls)
        object.__setattr__(self, "_rows", rows)
        object.__setattr__(self, "_loaders", loaders)
        for key, value in known.items():
            object.__setattr__(self, key, value)
        return self


@dataclass(frozen=True, eq=False)
class FactTable:
    """One row per fact. Literal columns hold a sentinel (NA_INT, NaN, NA_DATE, None) when unused."""

    id: np.ndarray  # int64
    subject: np.ndarray  # int32 entity row
    predicate: np.ndarray  # int16 index into PREDICATES
    object: np.ndarray  # int32 entity row, -1 for a literal
    v_int: np.ndarray  # int64
    v_float: np.ndarray  # float64
    v_date: np.ndarray  # int32 days
    v_text: np.ndarray  # object: str | None
    start: np.ndarray  # int32 days
    end: np.ndarray  # int32 days
    source: np.ndarray  # int16 index into ``sources``
    sources: tuple[str, ...] = ()

    @classmethod
    def build(
        cls,
        subject: np.ndarray,
        predicate: int,
        *,
        obj: np.ndarray | None = None,
        v_int: np.ndarray | None = None,
        v_float: np.ndarray | None = None,
        v_date: np.ndarray | None = None,
        v_text: np.ndarray | list | None = None,
        start: np.ndarray | None = None,
        end: np.ndarray | None = None,
        source: int = 0,
        sources: tuple[str, ...] = (),
    ) -> FactTable:
        n = len(subject)

        def col(value, dtype, fill):
            if value is None:
                return np.full(n, fill, dtype=dtype)
            arr = np.asarray(value, dtype=dtype)
            return np.full(n, arr, dtype=dtype) if arr.ndim == 0 else arr

        text = np.full(n, None, dtype=object) if v_text is None else object_array(v_text)
        return cls(
            id=np.zeros(n, np.int64),
            subject=np.asarray(subject, np.int32),
            predicate=np.full(n, predicate, np.int16),
            object=col(obj, np.int32, -1),
            v_int=col(v_int, np.int64, NA_INT),
            v_float=col(v_float, np.float64, np.nan),
            v_date=col(v_date, np.int32, NA_DATE),
            v_text=text,
            start=col(start, np.int32, NA_DATE),
            end=col(end, np.int32, NA_DATE),
            source=np.full(n, source, np.int16),
            sources=sources,
        )

    @classmethod
    def empty(cls) -> FactTable:
        return cls.build(np.zeros(0, np.int32), 0)

    @classmethod
    def concat_all(cls, parts: list[FactTable], sources: tuple[str, ...]) -> FactTable:
        if not parts:
            return replace(cls.empty(), sources=sources)
        cols = {f.name: np.concatenate([getattr(p, f.name) for p in parts]) for f in fields(cls) if f.name != "sources"}
        return cls(**cols, sources=sources)

    def __len__(self) -> int:
        return len(self.subject)

    def take(self, rows: np.ndarray) -> FactTable:
        cols = {f.name: getattr(self, f.name)[rows] for f in fields(self) if f.name != "sources"}
        return FactTable(**cols, sources=self.sources)

    def append(self, other: FactTable) -> FactTable:
        """Append ``other`` (its ids renumbered after ours, its sources merged into ours)."""
        sources = list(self.sources)
        remap = np.array([_index(sources, s) for s in other.sources] or [0], np.int16)
        other = replace(other, source=remap[other.source] if len(other.sources) else other.source)
        start_id = int(self.id.max()) + 1 if len(self) else 0
        other = replace(other, id=np.arange(start_id, start_id + len(other), dtype=np.int64))
        return FactTable.concat_all([self, other], tuple(sources))

    def with_values(self, **columns) -> FactTable:
        return replace(self, **columns)

    # -- the one value decoder -------------------------------------------------------------
    def value(self, row: int) -> int | float | dt.date | str | None:
        """Fact ``row``'s literal value (None for a relation): the first of ``v_int``,
        ``v_float``, ``v_date``, ``v_text`` that is set."""
        if self.v_int[row] != NA_INT:
            return int(self.v_int[row])
        if not np.isnan(self.v_float[row]):
            return float(self.v_float[row])
        if self.v_date[row] != NA_DATE:
            return from_days(self.v_date[row])
        return self.v_text[row]

    def column(self, dtype: DType) -> np.ndarray:
        """The value column that holds attributes of ``dtype`` (text-like dtypes: ``v_text``)."""
        return {DType.INT: self.v_int, DType.FLOAT: self.v_float, DType.DATE: self.v_date}.get(dtype, self.v_text)

    def values(self, *, dates: Literal["date", "days"] = "date") -> list:
        """Every fact's literal value by row, as :meth:`value` decodes it, in one vectorised
        pass; ``dates="days"`` leaves dates as day numbers (for callers that cache them)."""
        vals: list = self.v_text.tolist()
        idx = np.flatnonzero(self.v_date != NA_DATE)
        days = self.v_date[idx].tolist()
        for i, v in zip(idx.tolist(), days if dates == "days" else [from_days(d) for d in days]):
            vals[i] = v
        for col, set_ in ((self.v_float, ~np.isnan(self.v_float)), (self.v_int, self.v_int != NA_INT)):
            idx = np.flatnonzero(set_)
            for i, v in zip(idx.tolist(), col[idx].tolist()):
                vals[i] = v
        return vals


def _index(items: list[str], item: str) -> int:
    if item not in items:
        items.append(item)
    return items.index(item)
