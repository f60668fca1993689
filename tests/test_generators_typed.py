"""Generators hand each other typed outputs (fictionworld/generators/flow.py), and stay short."""

import ast
import dataclasses
import pathlib

import numpy as np
import pytest

from fictionworld.generators import plan
from fictionworld.generators.base import GenContext, TypeData
from fictionworld.generators.flow import Cities, Companies, Flow, Founded, People, Released, need
from fictionworld.spec import default_spec

GENERATORS = pathlib.Path(__file__).resolve().parent.parent / "fictionworld" / "generators"


@pytest.fixture(scope="module")
def ctx():
    ctx = GenContext(default_spec(1_200), seed=3)
    for g in plan(ctx.counts):
        g.run(ctx)
    return ctx


def test_every_slot_is_filled_with_its_type(ctx):
    f = ctx.flow
    expected = {
        "cities": Cities,
        "people": People,
        "companies": Companies,
        "universities": Founded,
        "publishers": Founded,
        "books": Released,
        "films": Released,
        "albums": Released,
        "teams": Founded,
    }
    assert {s.name for s in dataclasses.fields(Flow)} == set(expected)
    for slot, cls in expected.items():
        assert isinstance(getattr(f, slot), cls), slot


def test_columns_have_the_declared_dtypes_and_lengths(ctx):
    f, n = ctx.flow, ctx.counts
    checks = [
        (f.cities.country, np.int64, "city"),
        (f.cities.culture, np.int64, "city"),
        (f.cities.population, np.int64, "city"),
        (f.cities.names, np.object_, "city"),
        (f.people.birth, np.int32, "person"),
        (f.people.death, np.int32, "person"),
        (f.people.occupation, np.int64, "person"),
        (f.people.culture, np.int64, "person"),
        (f.companies.founded, np.int32, "company"),
        (f.companies.stem, np.object_, "company"),
        (f.universities.founded, np.int32, "university"),
        (f.publishers.founded, np.int32, "publisher"),
        (f.teams.founded, np.int32, "sports_team"),
        (f.books.date, np.int64, "book"),
        (f.films.date, np.int64, "film"),
        (f.albums.date, np.int64, "album"),
    ]
    for col, dtype, t in checks:
        assert col.dtype == dtype and len(col) == n[t], t
    assert f.founded("company") is f.companies and f.released("film") is f.films


def test_handoffs_are_frozen(ctx):
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.flow.people.birth = ctx.flow.people.birth  # type: ignore[misc]


def test_missing_producer_is_a_clear_key_error():
    with pytest.raises(KeyError, match="publisher"):
        need(Flow().publishers, "publisher")
    with pytest.raises(KeyError, match="company"):
        Flow().founded("company")


def test_no_string_keyed_helper_bag():
    assert "extra" not in {f.name for f in dataclasses.fields(TypeData)}


def test_places_then_people_run_standalone():
    import fictionworld.generators.people as gp
    import fictionworld.generators.places as pl

    ctx = GenContext(default_spec(400), seed=1)
    pl.generate_places(ctx)
    gp.generate_people(ctx)
    assert len(ctx.flow.people.birth) == ctx.counts["person"]


def test_generator_functions_stay_short():
    long = []
    for p in sorted(GENERATORS.glob("*.py")):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.FunctionDef) and node.end_lineno - node.lineno + 1 > 50:
                long.append(f"{p.name}:{node.lineno} {node.name}")
    assert not long, long
