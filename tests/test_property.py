"""Property test: worlds from many seeds and sizes validate clean."""

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from profiles import examples

import fictionworld as fw


@settings(max_examples=examples(14), suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**63 - 1), entities=st.integers(150, 6_000))
@example(seed=0, entities=6_000)
@example(seed=2**62 + 7, entities=12_000)
@example(seed=99, entities=50)
@example(seed=7, entities=20_000)  # the README's world; once named a company "Gubad AG" (~ Gubadag)
def test_generated_worlds_validate_clean(seed, entities):
    world = fw.generate(seed=seed, entities=entities)
    assert fw.check_world(world) == []
    assert len(world.facts) >= 5 * len(world.entities) * 0.8


@settings(max_examples=examples(6))
@given(seed=st.integers(0, 2**32), year=st.integers(1950, 2100))
@example(seed=1, year=1950)
def test_worlds_with_another_present_validate_clean(seed, year):
    """The world's present comes from the spec (never the clock); every date bound follows it."""
    import datetime as dt

    spec = fw.default_spec(1_500).model_copy(update={"present": dt.date(year, 6, 30)})
    world = fw.generate(seed=seed, spec=spec)
    assert fw.check_world(world) == []
    _, births = world.attribute("person", "birth_date")
    latest = fw.dates.from_days(int(births.max())).year
    assert year - 19 - 25 <= latest <= year - 18  # the living include young adults in any era
