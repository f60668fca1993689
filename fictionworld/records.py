"""Pydantic records: the typed edge of the library (one entity, one fact, one violation)."""

from __future__ import annotations

import datetime as dt
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

__all__ = ["Entity", "Fact", "Value", "Violation", "ViolationKind"]

Value = int | float | dt.date | str


class Entity(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    type: str
    name: str
    aliases: tuple[str, ...] = ()
    culture: str = ""
    namesake_group: int | None = None


class Fact(BaseModel):
    """One statement: ``subject predicate object`` (an entity id) or ``subject predicate value``."""

    model_config = ConfigDict(frozen=True)

    id: int
    subject: str
    predicate: str
    object: str | None = None
    value: Value | None = None
    unit: str | None = None
    start: dt.date | None = None
    end: dt.date | None = None
    source: str = ""


class ViolationKind(StrEnum):
    DANGLING_REFERENCE = "dangling_reference"  # a fact names an entity that does not exist
    UNKNOWN_PREDICATE = "unknown_predicate"  # predicate not in the ontology or the spec
    DOMAIN_RANGE = "domain_range"  # subject / object of the wrong entity type
    ATTRIBUTE_TYPE = "attribute_type"  # literal of the wrong kind, bad category or URL
    MISSING_VALUE = "missing_value"  # required attribute or relation absent
    CARDINALITY = "cardinality"  # more than one value where one is allowed
    OVERLAP = "overlap"  # two CEOs / spouses / teams at the same time
    INTERVAL_ORDER = "interval_order"  # start after end, death before birth
    FUTURE_DATE = "future_date"  # a date after the world's present
    LIFESPAN = "lifespan"  # an entity acts before it exists, too young, or after death
    CONTAINMENT = "containment"  # place nesting broken (capital outside its country)
    SYMMETRY = "symmetry"  # married_to / sibling_of without its mirror
    INVERSE = "inverse"  # parent_of without child_of and the like
    CYCLE = "cycle"  # subsidiary or ancestry loops
    SELF_REFERENCE = "self_reference"  # an entity related to itself
    RANGE = "range"  # a quantity or date outside its realistic range
    QUANTITY_AGREEMENT = "quantity_agreement"  # populations that do not add up, odd ratios
    DUPLICATE_NAME = "duplicate_name"  # two entities of a type share a name, unrecorded
    NAMESAKE_RECORD = "namesake_record"  # a recorded namesake group that is not one
    UNIQUE_VALUE = "unique_value"  # two entities share a website / ISBN
    GAZETTEER_COLLISION = "gazetteer_collision"  # an invented name that is a real place
    FAMOUS_NAME = "famous_name"  # a person named like a famous real person
    DUPLICATE_FACT = "duplicate_fact"  # the same statement twice, or a reused fact id
    CONSISTENCY = "consistency"  # CEO not employed, citizenship vs birthplace, siblings…


class Violation(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: ViolationKind
    message: str
    entities: tuple[str, ...] = ()
    facts: tuple[int, ...] = ()

    def __str__(self) -> str:
        return f"[{self.kind.value}] {self.message}"
