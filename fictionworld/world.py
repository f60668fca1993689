"""The World: a spec, a seed, and columnar entities + facts, with a graph view on demand."""

from __future__ import annotations

import hashlib
import json
from functools import cached_property
from pathlib import Path

import numpy as np

from fictionworld.dates import NA_DATE, from_days
from fictionworld.records import Entity, Fact
from fictionworld.schema import ENTITY_TYPES, PREDICATE_CODE, PREDICATES, RELATIONS, UNITS
from fictionworld.spec import WorldSpec, graph_spec
from fictionworld.tables import TYPE_NAMES, EntityTable, FactTable, LazyColumns

__all__ = ["World", "FORMAT"]

FORMAT = "fictionworld/1"


class World:
    """A generated world. Columnar tables are the truth; ``graph`` is a networkx view."""

    def __init__(
        self,
        *,
        spec: WorldSpec,
        seed: int,
        entities: EntityTable,
        facts: FactTable,
        generators: dict[str, str] | None = None,
    ):
        self.spec = spec
        self.seed = int(seed)
        self.entities = entities
        self.facts = _canonical_sources(facts)
        self.generators = dict(generators or {})
        self.path: Path | None = None  # the directory it was loaded from, if any

    # -- identity ------------------------------------------------------------------------
    @cached_property
    def world_hash(self) -> str:
        """Hash of the canonical content: same seed and spec give the same hash on any machine."""
        h = hashlib.blake2b(digest_size=20)
        # The web spec shapes pages, not the graph: it stays out of the graph's hash.
        head = {"format": FORMAT, "seed": self.seed, "spec": graph_spec(self.spec)}
        h.update(json.dumps(head, sort_keys=True).encode())
        e, f = self.entities, self.facts
        for arr, dt in ((e.type_code, "<i2"), (e.local, "<i4"), (e.namesake_group, "<i4")):
            _update(h, arr, dt)
        _update_strings(h, e.name.tolist())
        _update_strings(h, e.culture.tolist())
        _update_strings(h, ["\x1e".join(a) for a in e.aliases.tolist()])
        for name, dt in (
            ("id", "<i8"),
            ("subject", "<i4"),
            ("predicate", "<i2"),
            ("object", "<i4"),
            ("v_int", "<i8"),
            ("v_float", "<f8"),
            ("v_date", "<i4"),
            ("start", "<i4"),
            ("end", "<i4"),
            ("source", "<i2"),
        ):
            _update(h, getattr(f, name), dt)
        text_rows = np.flatnonzero(f.v_text != None)  # noqa: E711  (elementwise)
        _update(h, text_rows, "<i8")
        _update_strings(h, f.v_text[text_rows].tolist())
        _update_strings(h, list(f.sources))
        return h.hexdigest()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, World) and self.world_hash == other.world_hash

    def __hash__(self) -> int:
        return hash(self.world_hash)

    def __repr__(self) -> str:
        return f"World(seed={self.seed}, entities={len(self.entities)}, facts={len(self.facts)}, hash={self.world_hash[:12]})"

    def replace(
        self, *, entities: EntityTable | None = None, facts: FactTable | None = None, spec: WorldSpec | None = None
    ) -> World:
        return World(
            spec=spec if spec is not None else self.spec,
            seed=self.seed,
            entities=entities if entities is not None else self.entities,
            facts=facts if facts is not None else self.facts,
            generators=self.generators,
        )

    # -- summaries -----------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        c = np.bincount(self.entities.type_code, minlength=len(TYPE_NAMES))
        return {t: int(c[i]) for i, t in enumerate(TYPE_NAMES) if c[i]}

    def predicate_counts(self) -> dict[str, int]:
        c = np.bincount(self.facts.predicate, minlength=len(PREDICATES))
        return {p: int(c[i]) for i, p in enumerate(PREDICATES) if c[i]}

    # -- records -------------------------------------------------------------------------
    def row(self, entity_id: str) -> int:
        try:
            return self.entities.row_of_id(entity_id)
        except KeyError:
            raise KeyError(f"no entity {entity_id!r}") from None

    def entity(self, entity_id: str | int) -> Entity:
        e = self.entities
        r = entity_id if isinstance(entity_id, int | np.integer) else self.row(entity_id)
        g = int(e.namesake_group[r])
        return Entity(
            id=e.ids[r],
            type=e.type_of(r),
            name=e.name[r],
            aliases=tuple(e.aliases[r]),
            culture=e.culture[r],
            namesake_group=None if g < 0 else g,
        )

    def find(self, name: str, type: str | None = None) -> list[Entity]:
        """Entities called exactly ``name`` (namesakes give several)."""
        rows = [i for i in self._name_index.get(name, ()) if type is None or self.entities.type_of(i) == type]
        return [self.entity(i) for i in rows]

    @cached_property
    def _name_index(self) -> dict[str, list[int]]:
        idx: dict[str, list[int]] = {}
        for i, n in enumerate(self.entities.name.tolist()):
            idx.setdefault(n, []).append(i)
        return idx

    def fact(self, row: int) -> Fact:
        f, ids = self.facts, self.entities.ids
        p = PREDICATES[int(f.predicate[row])]
        value = f.value(row)
        obj = int(f.object[row])
        return Fact(
            id=int(f.id[row]),
            subject=ids[f.subject[row]],
            predicate=p,
            object=ids[obj] if obj >= 0 else None,
            value=value,
            unit=None if p in RELATIONS else UNITS.get(p),
            start=None if f.start[row] == NA_DATE else from_days(f.start[row]),
            end=None if f.end[row] == NA_DATE else from_days(f.end[row]),
            source=f.sources[f.source[row]] if f.sources else "",
        )

    def facts_about(self, entity_id: str, *, incoming: bool = True) -> list[Fact]:
        r = self.row(entity_id)
        mask = self.facts.subject == r
        if incoming:
            mask |= self.facts.object == r
        return [self.fact(i) for i in np.flatnonzero(mask)]

    def attribute(self, type_name: str, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(entity rows, values) of one attribute over one type, vectorised."""
        f = self.facts
        m = (f.predicate == PREDICATE_CODE[name]) & (self.entities.type_code[f.subject] == TYPE_NAMES.index(type_name))
        return f.subject[m], f.column(ENTITY_TYPES[type_name].attribute(name).dtype)[m]

    # -- views ---------------------------------------------------------------------------
    @cached_property
    def graph(self):
        """A networkx MultiDiGraph of entities (nodes, with type and name) and relation facts
        (edges keyed by fact id). Built on first use; large worlds take a while."""
        import networkx as nx

        g = nx.MultiDiGraph()
        e, f, ids = self.entities, self.facts, self.entities.ids
        g.add_nodes_from(
            (ids[i], {"type": TYPE_NAMES[t], "name": n})
            for i, (t, n) in enumerate(zip(e.type_code.tolist(), e.name.tolist()))
        )
        rel = np.flatnonzero(f.object >= 0)
        g.add_edges_from(
            (ids[s], ids[o], int(k), {"predicate": PREDICATES[p]})
            for s, o, k, p in zip(
                f.subject[rel].tolist(), f.object[rel].tolist(), f.id[rel].tolist(), f.predicate[rel].tolist()
            )
        )
        return g

    def degree_summary(self) -> dict[str, dict[str, float]]:
        """Per entity type: mean / median / max number of relation facts touching an entity."""
        f, e = self.facts, self.entities
        rel = f.object >= 0
        deg = np.bincount(f.subject[rel], minlength=len(e)) + np.bincount(f.object[rel], minlength=len(e))
        out = {}
        for i, t in enumerate(TYPE_NAMES):
            d = deg[e.type_code == i]
            if len(d):
                out[t] = {"mean": float(d.mean()), "median": float(np.median(d)), "max": int(d.max())}
        return out

    # -- the web -------------------------------------------------------------------------
    @cached_property
    def web(self):
        """The rendered web (pages, index, world model): opened from the world directory if it
        was saved with one, else built now (seconds per 10k entities). The web is a higher
        layer: it is made by registry id, not imported."""
        from fictionworld.registry import make

        return make("fictionworld/Web-v0", world=self)

    def search(self, query: str, k: int | None = None, page: int = 1, knobs=None):
        """Ranked :class:`SearchResult` list for ``query`` (see :meth:`Web.search`)."""
        return self.web.search(query, k, page, knobs)

    def open(self, url: str, knobs=None):
        """The :class:`Page` at ``url``, or :class:`PageNotFound` (see :meth:`Web.open`)."""
        return self.web.open(url, knobs)

    # -- persistence ---------------------------------------------------------------------
    def save(self, path: str | Path, *, overwrite: bool = False, web: bool = True) -> Path:
        """Write the world (and, unless ``web=False``, its pages and search index)."""
        from fictionworld.storage import save_world

        return save_world(self, path, overwrite=overwrite, web=web)

    @classmethod
    def load(cls, path: str | Path, *, verify: bool | str = True) -> World:
        from fictionworld.storage import load_world

        return load_world(path, verify=verify)


def _update(h, arr: np.ndarray, dtype: str) -> None:
    hash_column(h, len(arr), [arr], dtype)


def _update_strings(h, items: list[str]) -> None:
    hash_strings(h, len(items), [items])


def hash_column(h, n: int, parts, dtype: str) -> int:
    """Hash a column of ``n`` values given as the arrays ``parts`` (whole, or a row group at a
    time: the same digest), as ``dtype``; returns how many values the parts held."""
    h.update(int(n).to_bytes(8, "little"))
    seen = 0
    for a in parts:
        a = np.ascontiguousarray(a, dtype=np.dtype(dtype))
        seen += len(a)
        h.update(a.tobytes())
    return seen


def hash_strings(h, n: int, parts) -> int:
    """Hash ``n`` strings given as the lists ``parts`` (joined by U+001F, whole or in pieces);
    returns how many strings the parts held."""
    h.update(int(n).to_bytes(8, "little"))
    seen = 0
    for items in parts:
        if items:
            h.update(("\x1f" if seen else "").encode() + "\x1f".join(items).encode("utf-8", "surrogatepass"))
        seen += len(items)
    return seen


def _canonical_sources(facts: FactTable) -> FactTable:
    """Sort the source-name table so its codes never depend on generation order (a table read
    lazily from disk is sorted as it loads)."""
    if isinstance(facts, LazyColumns) or not facts.sources:
        return facts
    order = sorted(range(len(facts.sources)), key=lambda i: facts.sources[i])
    if order == list(range(len(order))):
        return facts
    remap = np.empty(len(order), np.int16)
    remap[order] = np.arange(len(order), dtype=np.int16)
    from dataclasses import replace

    return replace(facts, source=remap[facts.source], sources=tuple(facts.sources[i] for i in order))
