"""World specs: which entity types, relations and attributes to generate, and how many."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from fictionworld.knobs import WebSpec
from fictionworld.schema import ENTITY_TYPES, PLACE_TYPES, RELATIONS

__all__ = ["EntityTypeConfig", "WorldSpec", "default_spec", "graph_spec", "GENERATION_BLOCK", "HARD_REQUIREMENTS"]

# A type cannot be generated without these (e.g. every book has a publisher).
HARD_REQUIREMENTS: dict[str, tuple[str, ...]] = {
    "region": ("country",),
    "city": ("region",),
    "country": ("region", "city"),
    "person": PLACE_TYPES,
    "company": PLACE_TYPES,
    "university": PLACE_TYPES,
    "publisher": PLACE_TYPES,
    "book": ("publisher",),
    "film": ("person",),
    "album": ("person",),
    "product": ("company",),
    "award": (),
    "event": PLACE_TYPES,
    "sports_team": PLACE_TYPES,
}


GENERATION_BLOCK = 65_536


def graph_spec(spec: WorldSpec) -> dict:
    """The part of ``spec`` that shapes the graph, as the content hash reads it: without the
    web (it shapes pages), and without ``generation_block`` at its default, so the hash of a
    world made before blocks existed stays what it was."""
    out = spec.model_dump(mode="json", exclude={"web"})
    if out.get("generation_block") == GENERATION_BLOCK:
        del out["generation_block"]
    return out


class EntityTypeConfig(BaseModel):
    """Size and options of one entity type.

    ``count`` fixes the number; otherwise it is ``max(min, round(weight * spec.entities))``,
    so adding a type never changes the size of the others.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    weight: float = Field(0.0, ge=0)
    count: int | None = Field(None, ge=0)
    min: int = Field(1, ge=0)
    namesake_rate: float = Field(0.0, ge=0, le=0.2)
    exclude_attributes: tuple[str, ...] = ()


class WorldSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = "default"
    present: dt.date = dt.date(2025, 12, 31)
    entities: int = Field(10_000, ge=1)
    types: dict[str, EntityTypeConfig]
    exclude_relations: tuple[str, ...] = ()
    web: WebSpec = WebSpec()  # how the web is rendered, and the default episode knobs
    # Each type's entities are generated in blocks of this many, one task each
    # (fictionworld/generators/blocks.py): the block, not the number of workers, fixes every draw.
    generation_block: int = Field(GENERATION_BLOCK, ge=64, le=1 << 24)

    @field_validator("present")
    @classmethod
    def _present_in_range(cls, v: dt.date) -> dt.date:
        if not dt.date(1950, 1, 1) <= v <= dt.date(2100, 12, 31):
            raise ValueError("present must lie between 1950 and 2100")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> WorldSpec:
        unknown = sorted(set(self.types) - set(ENTITY_TYPES))
        if unknown:
            raise ValueError(f"unknown entity types {unknown}; known: {sorted(ENTITY_TYPES)}")
        for t, cfg in self.types.items():
            schema = ENTITY_TYPES[t]
            for a in cfg.exclude_attributes:
                attr = next((x for x in schema.attributes if x.name == a), None)
                if attr is None:
                    raise ValueError(f"{t} has no attribute {a!r} to exclude")
                if attr.required:
                    raise ValueError(f"{t}.{a} is required and cannot be excluded")
            missing = [r for r in HARD_REQUIREMENTS[t] if r not in self.types]
            if missing:
                raise ValueError(f"entity type {t!r} needs {missing} in the spec")
        bad = sorted(set(self.exclude_relations) - set(RELATIONS))
        if bad:
            raise ValueError(f"unknown relations {bad}; known: {sorted(RELATIONS)}")
        counts = self.counts()
        empty = sorted(t for t, n in counts.items() if n < 1)
        if empty:
            raise ValueError(f"entity types {empty} would have no entities; leave them out of the spec instead")
        if counts.get("region", 0) < counts.get("country", 0) or counts.get("city", 0) < counts.get("region", 0):
            raise ValueError("need at least one region per country and one city per region")
        return self

    # -- derived -------------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        """Entity count per type, in the ontology's canonical type order."""
        out = {}
        for t in ENTITY_TYPES:
            cfg = self.types.get(t)
            if cfg is not None:
                out[t] = cfg.count if cfg.count is not None else max(cfg.min, round(cfg.weight * self.entities))
        return out

    def relations(self) -> tuple[str, ...]:
        """Relations generated: not excluded, and with at least one (subject, object) pair present."""
        return tuple(
            name
            for name, r in RELATIONS.items()
            if name not in self.exclude_relations and any(s in self.types and o in self.types for s, o in r.pairs)
        )

    def attributes(self, type_name: str) -> tuple[str, ...]:
        excluded = set(self.types[type_name].exclude_attributes)
        return tuple(a.name for a in ENTITY_TYPES[type_name].attributes if a.name not in excluded)

    def scaled(self, entities: int) -> WorldSpec:
        return self.model_copy(update={"entities": entities})

    # -- YAML ----------------------------------------------------------------------------
    @classmethod
    def from_yaml(cls, path: str | Path) -> WorldSpec:
        data = yaml.safe_load(Path(path).read_text())
        return cls.model_validate(data)

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.model_dump(mode="json", exclude_defaults=False), sort_keys=False)


_DEFAULT_WEIGHTS = {
    # type: (weight, min, namesake_rate)
    "country": (0.0003, 3, 0.0),
    "region": (0.003, 8, 0.0),
    "city": (0.025, 24, 0.0),
    "person": (0.49, 60, 0.003),
    "company": (0.08, 12, 0.0),
    "university": (0.005, 4, 0.0),
    "publisher": (0.0097, 4, 0.0),
    "book": (0.12, 10, 0.0),
    "film": (0.06, 6, 0.0),
    "album": (0.06, 6, 0.0),
    "product": (0.08, 8, 0.0),
    "award": (0.005, 6, 0.0),
    "event": (0.05, 6, 0.0),
    "sports_team": (0.012, 4, 0.0),
}


def default_spec(entities: int = 10_000) -> WorldSpec:
    """The shipped spec: 14 entity types, 32 relations; weights sum to 1."""
    return WorldSpec(
        entities=entities,
        types={t: EntityTypeConfig(weight=w, min=m, namesake_rate=r) for t, (w, m, r) in _DEFAULT_WEIGHTS.items()},
    )
