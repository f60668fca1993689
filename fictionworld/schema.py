"""The ontology: entity types, their typed attributes, and relation types.

Generators, the checker and (later) the page renderer all read this one table, so a
constraint is declared once (``functional=True``, ``min_age``…) and enforced everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from fictionworld.categories import (
    AWARD_FIELDS,
    BOOK_GENRES,
    EVENT_KINDS,
    FILM_GENRES,
    GENDERS,
    INDUSTRIES,
    MUSIC_GENRES,
    OCCUPATIONS,
    PRODUCT_CATEGORIES,
    SPORTS,
    UNIVERSITY_KINDS,
)

__all__ = [
    "DType",
    "AttributeSpec",
    "EntityTypeSchema",
    "RelationSpec",
    "ENTITY_TYPES",
    "RELATIONS",
    "ATTRIBUTES",
    "ATTRIBUTE_NAMES",
    "UNITS",
    "DTYPES",
    "TYPES_WITH",
    "PREDICATES",
    "PLACE_TYPES",
    "ORG_TYPES",
    "INVENTED_NAME_TYPES",
]


class DType(StrEnum):
    INT = "int"
    FLOAT = "float"
    DATE = "date"
    CATEGORY = "category"
    TEXT = "text"
    URL = "url"


@dataclass(frozen=True)
class AttributeSpec:
    """A typed, single-valued attribute of one entity type."""

    name: str
    dtype: DType
    unit: str | None = None
    required: bool = False
    lo: float | None = None  # realistic range (inclusive); dates as years, and a date
    #                            without ``hi`` may run up to the world's present
    hi: float | None = None
    unique: bool = False  # no two entities share the value (websites, ISBNs)
    categories: tuple[str, ...] = ()


@dataclass(frozen=True)
class EntityTypeSchema:
    name: str
    kind: str  # place | person | organisation | work | event | award
    attributes: tuple[AttributeSpec, ...]
    origin: str | None = None  # date attribute at which the entity comes to exist
    end: str | None = None  # date attribute at which it stops existing (death)
    invented_names: bool = False  # names must not collide with the real gazetteer

    def attribute(self, name: str) -> AttributeSpec:
        for a in self.attributes:
            if a.name == name:
                return a
        raise KeyError(f"{self.name} has no attribute {name!r}")


@dataclass(frozen=True)
class RelationSpec:
    """A binary relation between entities, with the constraints it must satisfy.

    ``pairs`` lists the allowed (subject type, object type) combinations.
    ``functional``: a subject has at most one such fact (exactly one if ``required``).
    ``exclusive``: intervals of facts sharing the subject (or object) must not overlap.
    ``coexist``: both ends must exist (be born / founded, be old enough, be alive) at the
    fact's time: its ``start`` if temporal, else the later of the two origins.
    """

    name: str
    pairs: tuple[tuple[str, str], ...]
    functional: bool = False
    required: bool = False
    temporal: bool = False  # facts carry a start date (and an end date unless instant)
    instant: bool = False  # a dated event (an award, an acquisition), never "ongoing"
    exclusive: str | None = None  # "subject" | "object"
    symmetric: bool = False
    inverse: str | None = None
    acyclic: bool = False
    coexist: bool = True
    min_age_subject: int = 0
    min_age_object: int = 0
    phrase: str = ""

    @property
    def domain(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s for s, _ in self.pairs))

    @property
    def range(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(o for _, o in self.pairs))


A = AttributeSpec
I, F, D, C, T, U = DType.INT, DType.FLOAT, DType.DATE, DType.CATEGORY, DType.TEXT, DType.URL  # noqa: E741

POP = dict(unit="people")

ENTITY_TYPES: dict[str, EntityTypeSchema] = {
    s.name: s
    for s in (
        EntityTypeSchema(
            "country",
            "place",
            (
                A("population", I, required=True, lo=10_000, hi=2_000_000_000, **POP),
                A("area_km2", F, unit="km2", required=True, lo=50, hi=20_000_000),
                A("established", D, required=True, lo=1200),
            ),
            origin="established",
            invented_names=True,
        ),
        EntityTypeSchema(
            "region",
            "place",
            (
                A("population", I, required=True, lo=1_000, hi=500_000_000, **POP),
                A("area_km2", F, unit="km2", required=True, lo=10, hi=5_000_000),
            ),
            invented_names=True,
        ),
        EntityTypeSchema(
            "city",
            "place",
            (
                A("population", I, required=True, lo=500, hi=40_000_000, **POP),
                A("area_km2", F, unit="km2", required=True, lo=0.5, hi=20_000),
                A("elevation_m", I, unit="m", lo=-100, hi=4_800),
            ),
            invented_names=True,
        ),
        EntityTypeSchema(
            "person",
            "person",
            (
                A("birth_date", D, required=True, lo=1850),
                A("death_date", D, lo=1850),
                A("gender", C, required=True, categories=GENDERS),
                A("occupation", C, required=True, categories=OCCUPATIONS),
                A("height_cm", I, unit="cm", lo=140, hi=215),
            ),
            origin="birth_date",
            end="death_date",
        ),
        EntityTypeSchema(
            "company",
            "organisation",
            (
                A("founded", D, required=True, lo=1800),
                A("industry", C, required=True, categories=INDUSTRIES),
                A("employees", I, required=True, lo=1, hi=600_000, **POP),
                A("revenue_usd", I, unit="USD", lo=10_000, hi=600_000_000_000),
                A("website", U, unique=True),
            ),
            origin="founded",
            invented_names=True,
        ),
        EntityTypeSchema(
            "university",
            "organisation",
            (
                A("founded", D, required=True, lo=1100),
                A("students", I, required=True, lo=100, hi=150_000, unit="students"),
                A("kind", C, required=True, categories=UNIVERSITY_KINDS),
                A("website", U, unique=True),
            ),
            origin="founded",
            invented_names=True,
        ),
        EntityTypeSchema(
            "publisher",
            "organisation",
            (
                A("founded", D, required=True, lo=1700),
                A("employees", I, lo=2, hi=20_000, **POP),
                A("website", U, unique=True),
            ),
            origin="founded",
            invented_names=True,
        ),
        EntityTypeSchema(
            "book",
            "work",
            (
                A("publication_date", D, required=True, lo=1850),
                A("page_count", I, required=True, unit="pages", lo=24, hi=1_600),
                A("genre", C, required=True, categories=BOOK_GENRES),
                A("isbn", T, unique=True),
            ),
            origin="publication_date",
        ),
        EntityTypeSchema(
            "film",
            "work",
            (
                A("release_date", D, required=True, lo=1900),
                A("runtime_min", I, required=True, unit="min", lo=40, hi=240),
                A("genre", C, required=True, categories=FILM_GENRES),
                A("box_office_usd", I, unit="USD", lo=1_000, hi=3_000_000_000),
            ),
            origin="release_date",
        ),
        EntityTypeSchema(
            "album",
            "work",
            (
                A("release_date", D, required=True, lo=1920),
                A("runtime_min", I, required=True, unit="min", lo=15, hi=120),
                A("genre", C, required=True, categories=MUSIC_GENRES),
                A("track_count", I, unit="tracks", lo=3, hi=40),
            ),
            origin="release_date",
        ),
        EntityTypeSchema(
            "product",
            "work",
            (
                A("launch_date", D, required=True, lo=1900),
                A("category", C, required=True, categories=PRODUCT_CATEGORIES),
                A("price_usd", F, unit="USD", lo=1, hi=500_000),
            ),
            origin="launch_date",
        ),
        EntityTypeSchema(
            "award",
            "award",
            (
                A("established", D, required=True, lo=1850),
                A("field", C, required=True, categories=AWARD_FIELDS),
            ),
            origin="established",
            invented_names=True,
        ),
        EntityTypeSchema(
            "event",
            "event",
            (
                A("start_date", D, required=True, lo=1900),
                A("end_date", D, required=True, lo=1900),
                A("kind", C, required=True, categories=EVENT_KINDS),
                A("attendance", I, lo=20, hi=3_000_000, **POP),
            ),
            origin="start_date",
        ),
        EntityTypeSchema(
            "sports_team",
            "organisation",
            (
                A("founded", D, required=True, lo=1850),
                A("sport", C, required=True, categories=SPORTS),
                A("stadium_capacity", I, unit="seats", lo=500, hi=120_000),
                A("website", U, unique=True),
            ),
            origin="founded",
            invented_names=True,
        ),
    )
}

# Date-valued attributes that must be ordered (first <= second) within one entity.
ORDERED_ATTRIBUTES: dict[str, tuple[str, str]] = {
    "person": ("birth_date", "death_date"),
    "event": ("start_date", "end_date"),
}

PLACE_TYPES = ("country", "region", "city")
ORG_TYPES = ("company", "university", "publisher", "sports_team")
INVENTED_NAME_TYPES = tuple(t for t, s in ENTITY_TYPES.items() if s.invented_names)
WORKS_BY_FIELD = {"literature": "book", "film": "film", "music": "album"}
R = RelationSpec

RELATIONS: dict[str, RelationSpec] = {
    r.name: r
    for r in (
        R(
            "located_in",
            (("region", "country"), ("city", "region"), ("university", "city")),
            functional=True,
            required=True,
            acyclic=True,
            coexist=False,
            phrase="is located in",
        ),
        R(
            "capital",
            (("country", "city"),),
            functional=True,
            required=True,
            coexist=False,
            phrase="has its capital at",
        ),
        R("born_in", (("person", "city"),), functional=True, required=True, coexist=False, phrase="was born in"),
        R("died_in", (("person", "city"),), functional=True, coexist=False, phrase="died in"),
        R(
            "citizen_of",
            (("person", "country"),),
            functional=True,
            required=True,
            coexist=False,
            phrase="is a citizen of",
        ),
        R(
            "married_to",
            (("person", "person"),),
            temporal=True,
            symmetric=True,
            exclusive="subject",
            min_age_subject=18,
            min_age_object=18,
            phrase="married",
        ),
        R(
            "parent_of",
            (("person", "person"),),
            inverse="child_of",
            acyclic=True,
            min_age_subject=16,
            phrase="is a parent of",
        ),
        R(
            "child_of",
            (("person", "person"),),
            inverse="parent_of",
            acyclic=True,
            min_age_object=16,
            phrase="is a child of",
        ),
        R("sibling_of", (("person", "person"),), symmetric=True, coexist=False, phrase="is a sibling of"),
        R("studied_at", (("person", "university"),), temporal=True, min_age_subject=15, phrase="studied at"),
        R("works_for", (("person", "company"),), temporal=True, min_age_subject=16, phrase="works for"),
        R(
            "ceo_of",
            (("person", "company"),),
            temporal=True,
            exclusive="object",
            min_age_subject=21,
            phrase="is chief executive of",
        ),
        R("founded_by", (("company", "person"),), min_age_object=18, phrase="was founded by"),
        R(
            "headquartered_in",
            (("company", "city"), ("publisher", "city")),
            functional=True,
            required=True,
            coexist=False,
            phrase="is headquartered in",
        ),
        R(
            "acquired_by",
            (("company", "company"),),
            temporal=True,
            instant=True,
            functional=True,
            acyclic=True,
            phrase="was acquired by",
        ),
        R(
            "subsidiary_of",
            (("company", "company"),),
            temporal=True,
            exclusive="subject",
            acyclic=True,
            inverse="has_subsidiary",
            phrase="is a subsidiary of",
        ),
        R(
            "has_subsidiary",
            (("company", "company"),),
            temporal=True,
            acyclic=True,
            inverse="subsidiary_of",
            phrase="owns the subsidiary",
        ),
        R("author_of", (("person", "book"),), min_age_subject=14, phrase="wrote"),
        R("published_by", (("book", "publisher"),), functional=True, required=True, phrase="was published by"),
        R(
            "directed_by",
            (("film", "person"),),
            functional=True,
            required=True,
            min_age_object=18,
            phrase="was directed by",
        ),
        R("starred_in", (("person", "film"),), min_age_subject=5, phrase="starred in"),
        R("produced_by", (("film", "company"),), functional=True, phrase="was produced by"),
        R(
            "performed_by",
            (("album", "person"),),
            functional=True,
            required=True,
            min_age_object=14,
            phrase="was recorded by",
        ),
        R("released_by", (("album", "company"),), functional=True, phrase="was released on the label"),
        R("manufactured_by", (("product", "company"),), functional=True, required=True, phrase="is made by"),
        R(
            "presented_by",
            tuple(("award", o) for o in ("company", "university", "publisher")),
            functional=True,
            phrase="is presented by",
        ),
        R(
            "won",
            tuple((s, "award") for s in ("person", "book", "film", "album")),
            temporal=True,
            instant=True,
            min_age_subject=16,
            phrase="won",
        ),
        R("held_in", (("event", "city"),), functional=True, required=True, coexist=False, phrase="took place in"),
        R("organized_by", (("event", "company"), ("event", "university")), functional=True, phrase="was organised by"),
        R("participated_in", (("person", "event"),), min_age_subject=16, phrase="took part in"),
        R("based_in", (("sports_team", "city"),), functional=True, required=True, coexist=False, phrase="is based in"),
        R(
            "member_of",
            (("person", "sports_team"),),
            temporal=True,
            exclusive="subject",
            min_age_subject=16,
            phrase="played for",
        ),
    )
}


def _attribute_table() -> dict[str, AttributeSpec]:
    """Every attribute by name. An attribute several types share (``founded``) has one dtype,
    unit and uniqueness everywhere: the table refuses a schema where they differ."""
    table: dict[str, AttributeSpec] = {}
    for t in ENTITY_TYPES.values():
        for a in t.attributes:
            first = table.setdefault(a.name, a)
            if (first.dtype, first.unit, first.unique) != (a.dtype, a.unit, a.unique):
                raise ValueError(f"attribute {a.name!r} differs between entity types: {first} vs {a}")
    return table


ATTRIBUTES: dict[str, AttributeSpec] = _attribute_table()
"""The one attribute table: name → spec (dtype, unit, uniqueness). Adding an attribute to an
entity type above is the only edit needed for the world, its checks, pages and tasks."""
ATTRIBUTE_NAMES: tuple[str, ...] = tuple(ATTRIBUTES)
UNITS: dict[str, str | None] = {n: a.unit for n, a in ATTRIBUTES.items()}
DTYPES: dict[str, DType] = {n: a.dtype for n, a in ATTRIBUTES.items()}
TYPES_WITH: dict[str, frozenset[str]] = {
    n: frozenset(t for t, s in ENTITY_TYPES.items() if any(a.name == n for a in s.attributes)) for n in ATTRIBUTES
}
# Every predicate (relation or attribute name) gets a stable small integer code.
PREDICATES: tuple[str, ...] = tuple(RELATIONS) + ATTRIBUTE_NAMES
PREDICATE_CODE: dict[str, int] = {p: i for i, p in enumerate(PREDICATES)}
