"""Plant one violation of every kind into a valid world; each must be caught, by kind."""

import datetime as dt

import numpy as np
import pytest
from helpers import add_fact, drop_facts, fact_row, first_dead_person, rename, rows, set_column

import fictionworld as fw
from fictionworld.dates import from_days
from fictionworld.records import ViolationKind as K
from fictionworld.schema import PREDICATE_CODE, PREDICATES


def ids_of(world, predicate, k=0, side="subject"):
    r = rows(world, predicate)[k]
    col = world.facts.subject if side == "subject" else world.facts.object
    return world.entities.ids[col[r]]


def two_countries(w):
    cities = w.entities.rows_of_type("city")
    c_rows = rows(w, "capital")
    country_a, capital_a = w.facts.subject[c_rows[0]], w.facts.object[c_rows[0]]
    capital_b = w.facts.object[c_rows[1]]
    return w.entities.ids[country_a], w.entities.ids[capital_a], w.entities.ids[capital_b], cities


def plant_dangling(w):
    return add_fact(w, "person:0", "born_in", "city:0", subject_row=len(w.entities) + 5)


def plant_unknown_predicate(w):
    return add_fact(w, "person:0", "born_in", "city:0", predicate_code=len(PREDICATES) + 3)


def plant_domain_range(w):
    return add_fact(w, "person:1", "author_of", "company:0")


def plant_attribute_type(w):
    return set_column(w, "v_text", fact_row(w, "company:0", "website"), "ftp//not a url")


def plant_missing_value(w):
    return drop_facts(w, [fact_row(w, "person:3", "birth_date")])


def plant_cardinality(w):
    return add_fact(w, "person:4", "born_in", "city:1")


def plant_overlap(w):
    r = rows(w, "ceo_of")[0]
    company = w.entities.ids[w.facts.object[r]]
    start = from_days(w.facts.start[r]) + dt.timedelta(days=1)
    ceo = w.entities.ids[w.facts.subject[r]]
    other = next(p for p in (f"person:{i}" for i in range(50, 500)) if p != ceo)
    # the intruder is old enough, alive and employed, so only the overlap is wrong
    b = w.facts.v_date[fact_row(w, other, "birth_date")]
    start = max(start, from_days(b) + dt.timedelta(days=365 * 30))
    w = add_fact(w, other, "works_for", company, start=start, end=start + dt.timedelta(days=60))
    return add_fact(w, other, "ceo_of", company, start=start, end=start + dt.timedelta(days=30))


def plant_interval_order(w):
    r = next(r for r in rows(w, "works_for") if w.facts.end[r] != fw_na())
    return set_column(w, "end", r, w.facts.start[r] - 10)


def fw_na():
    from fictionworld.dates import NA_DATE

    return NA_DATE


def plant_future_date(w):
    return set_column(w, "v_date", fact_row(w, "book:0", "publication_date"), dt.date(2031, 5, 1))


def plant_lifespan(w):
    dead = first_dead_person(w)
    death = from_days(w.facts.v_date[fact_row(w, dead, "death_date")])
    return (
        add_fact(w, dead, "participated_in", "event:0")
        if False
        else add_fact(w, dead, "married_to", "person:0", start=death + dt.timedelta(days=400))
    )


def plant_containment(w):
    country_a, _, capital_b, _ = two_countries(w)
    r = fact_row(w, country_a, "capital")
    return set_column(w, "object", r, w.row(capital_b))


def plant_symmetry(w):
    return drop_facts(w, [rows(w, "married_to")[0]])


def plant_inverse(w):
    return drop_facts(w, [rows(w, "child_of")[0]])


def plant_cycle(w):
    return add_fact(add_fact(w, "company:1", "subsidiary_of", "company:2"), "company:2", "subsidiary_of", "company:1")


def plant_self_reference(w):
    return add_fact(w, "company:3", "acquired_by", "company:3", start=dt.date(2020, 1, 1))


def plant_range(w):
    return set_column(w, "v_int", fact_row(w, "city:0", "elevation_m"), 9_000)


def plant_quantity(w):
    r = fact_row(w, "country:0", "population")
    return set_column(w, "v_int", r, w.facts.v_int[r] + 1)


def plant_duplicate_name(w):
    return rename(w, "company:5", w.entities.name[w.row("company:6")])


def plant_namesake_record(w):
    g = w.entities.namesake_group.copy()
    solo = next(i for i in w.entities.rows_of_type("company"))
    g[solo] = w.entities.local[solo]
    return w.replace(entities=w.entities.with_values(namesake_group=g))


def plant_unique_value(w):
    return set_column(
        w, "v_text", fact_row(w, "company:7", "website"), w.facts.v_text[fact_row(w, "company:8", "website")]
    )


def plant_gazetteer(w):
    return rename(w, "city:2", "Lyon")


def plant_famous(w):
    return rename(w, "person:5", "Marie Curie")


def plant_duplicate_fact(w):
    r = rows(w, "works_for")[3]
    f = w.facts
    extra = f.take(np.array([r]))
    return w.replace(facts=f.append(extra))


def plant_consistency(w):
    country_a, _, _, _ = two_countries(w)
    r = rows(w, "citizen_of")[0]
    other = next(c for c in w.entities.rows_of_type("country") if c != w.facts.object[r])
    return set_column(w, "object", r, other)


PLANTS = {
    K.DANGLING_REFERENCE: plant_dangling,
    K.UNKNOWN_PREDICATE: plant_unknown_predicate,
    K.DOMAIN_RANGE: plant_domain_range,
    K.ATTRIBUTE_TYPE: plant_attribute_type,
    K.MISSING_VALUE: plant_missing_value,
    K.CARDINALITY: plant_cardinality,
    K.OVERLAP: plant_overlap,
    K.INTERVAL_ORDER: plant_interval_order,
    K.FUTURE_DATE: plant_future_date,
    K.LIFESPAN: plant_lifespan,
    K.CONTAINMENT: plant_containment,
    K.SYMMETRY: plant_symmetry,
    K.INVERSE: plant_inverse,
    K.CYCLE: plant_cycle,
    K.SELF_REFERENCE: plant_self_reference,
    K.RANGE: plant_range,
    K.QUANTITY_AGREEMENT: plant_quantity,
    K.DUPLICATE_NAME: plant_duplicate_name,
    K.NAMESAKE_RECORD: plant_namesake_record,
    K.UNIQUE_VALUE: plant_unique_value,
    K.GAZETTEER_COLLISION: plant_gazetteer,
    K.FAMOUS_NAME: plant_famous,
    K.DUPLICATE_FACT: plant_duplicate_fact,
    K.CONSISTENCY: plant_consistency,
}


def test_valid_world_is_clean(world):
    assert fw.check_world(world) == []


def test_every_kind_has_a_plant():
    assert set(PLANTS) == set(K)
    assert len(K) >= 15


@pytest.mark.parametrize("kind", list(PLANTS), ids=lambda k: k.value)
def test_planted_violation_is_caught(world, kind):
    planted = PLANTS[kind](world)
    found = fw.check_world(planted)
    kinds = {v.kind for v in found}
    assert kind in kinds, f"{kind.value} not detected; found {sorted(k.value for k in kinds)}"
    assert all(isinstance(v.message, str) and v.message for v in found)


def test_violation_points_at_the_planted_fact(world):
    planted = plant_cardinality(world)
    hits = [v for v in fw.check_world(planted) if v.kind == K.CARDINALITY]
    assert hits[0].entities == ("person:4",)
    assert int(planted.facts.id[-1]) in hits[0].facts


def test_lifespan_catches_too_young(world):
    r = fact_row(world, "person:9", "birth_date")
    born = from_days(world.facts.v_date[r])
    company = "company:0"
    planted = add_fact(
        world,
        "person:9",
        "works_for",
        company,
        start=born + dt.timedelta(days=365 * 5),
        end=born + dt.timedelta(days=365 * 6),
    )
    msgs = [v.message for v in fw.check_world(planted) if v.kind == K.LIFESPAN]
    assert msgs and any("too young" in m or "before it existed" in m for m in msgs)


def test_list_is_capped_per_kind(world):
    w = world
    for i in range(12):
        w = add_fact(w, f"person:{i}", "born_in", "city:3")
    found = fw.check_world(w, limit_per_kind=5)
    card = [v for v in found if v.kind == K.CARDINALITY]
    assert len(card) == 6 and card[-1].message.startswith("... and 7 more")


def test_predicate_codes_are_stable():
    # saved worlds store predicate names, but in-memory codes are used by tools: keep the order.
    assert PREDICATES[:3] == ("located_in", "capital", "born_in")
    assert PREDICATE_CODE["born_in"] == 2


OPTIONAL_ATTRIBUTES = [
    (t, a.name)
    for t, s in __import__("fictionworld").schema.ENTITY_TYPES.items()
    for a in s.attributes
    if not a.required
]


@pytest.mark.parametrize("relation", list(__import__("fictionworld").schema.RELATIONS))
def test_excluding_any_relation_leaves_a_clean_world(relation):
    """Cross-fact rules only apply among the relations the spec generates."""
    spec = fw.default_spec(800).model_copy(update={"exclude_relations": (relation,)})
    world = fw.generate(seed=1, spec=spec)
    assert relation not in world.predicate_counts()
    assert fw.check_world(world) == []


@pytest.mark.parametrize("type_name, attribute", OPTIONAL_ATTRIBUTES, ids=lambda x: x)
def test_excluding_any_optional_attribute_leaves_a_clean_world(type_name, attribute):
    from fictionworld.spec import EntityTypeConfig

    base = fw.default_spec(800)
    types = dict(base.types)
    types[type_name] = EntityTypeConfig(**{**types[type_name].model_dump(), "exclude_attributes": (attribute,)})
    world = fw.generate(seed=1, spec=base.model_copy(update={"types": types}))
    rows, _ = world.attribute(type_name, attribute)
    assert len(rows) == 0
    assert fw.check_world(world) == []


@pytest.mark.parametrize("seed", range(20))
def test_row_matching_and_joins_agree_with_sets_and_loops(seed):
    """The sort-based helpers the checks use instead of Python sets and dicts of lists, against
    those literal versions on generated columns (repeats, empty sides, negative values)."""
    from fictionworld.check.base import equal_pairs, rows_in

    rng = np.random.default_rng(seed)
    na, nb, hi = int(rng.integers(0, 40)), int(rng.integers(0, 40)), int(rng.integers(1, 6))
    a = tuple(rng.integers(-2, hi, na).astype(np.int32) for _ in range(3))
    b = tuple(rng.integers(-2, hi, nb).astype(np.int32) for _ in range(3))
    in_b = set(zip(*(x.tolist() for x in b)))
    assert rows_in(a, b).tolist() == [row in in_b for row in zip(*(x.tolist() for x in a))]
    keys, queries = b[0].astype(np.int64), a[0].astype(np.int64)
    q, k = equal_pairs(keys, queries)
    assert sorted(zip(q.tolist(), k.tolist())) == [
        (i, j) for i in range(na) for j in range(nb) if queries[i] == keys[j]
    ]
