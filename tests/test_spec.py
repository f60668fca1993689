import datetime as dt

import pytest
from pydantic import ValidationError

from fictionworld.schema import ENTITY_TYPES, RELATIONS, DType
from fictionworld.spec import EntityTypeConfig, WorldSpec, default_spec


def test_default_spec_is_rich():
    spec = default_spec()
    assert len(spec.types) >= 10
    assert len(spec.relations()) >= 20
    kinds = {a.dtype for t in spec.types for a in ENTITY_TYPES[t].attributes}
    assert {DType.DATE, DType.INT, DType.FLOAT, DType.CATEGORY, DType.URL} <= kinds
    units = {a.unit for t in spec.types for a in ENTITY_TYPES[t].attributes if a.unit}
    assert {"people", "USD", "pages", "min", "km2"} <= units
    assert sum(spec.counts().values()) == pytest.approx(spec.entities, rel=0.01)


def test_yaml_round_trip(tmp_path):
    spec = default_spec(5_000)
    p = tmp_path / "spec.yaml"
    p.write_text(spec.to_yaml())
    assert WorldSpec.from_yaml(p) == spec


@pytest.mark.parametrize(
    "bad, match",
    [
        ({"types": {"dragon": {}}}, "unknown entity types"),
        ({"types": {"book": {"weight": 1}}}, "needs"),
        ({"exclude_relations": ["teleported_to"]}, "unknown relations"),
        ({"types_patch": {"person": {"exclude_attributes": ["birth_date"]}}}, "required"),
        ({"types_patch": {"person": {"exclude_attributes": ["wingspan"]}}}, "no attribute"),
        ({"present": "1700-01-01"}, "present"),
        ({"types_patch": {"album": {"weight": 0, "min": 0}}}, "no entities"),
    ],
)
def test_invalid_specs_explain_themselves(bad, match):
    data = default_spec().model_dump()
    patch = bad.pop("types_patch", None)
    data.update(bad)
    if patch:
        for t, cfg in patch.items():
            data["types"][t] = {**data["types"][t], **cfg}
    with pytest.raises(ValidationError, match=match):
        WorldSpec.model_validate(data)


def test_counts_do_not_depend_on_other_types():
    base = default_spec(10_000)
    types = dict(base.types)
    del types["sports_team"]
    smaller = base.model_copy(update={"types": types})
    for t, n in smaller.counts().items():
        assert base.counts()[t] == n


def test_relations_follow_present_types():
    spec = default_spec()
    types = {t: c for t, c in spec.types.items() if t not in ("sports_team", "award")}
    small = WorldSpec(types=types, present=dt.date(2025, 12, 31))
    assert "member_of" not in small.relations() and "won" not in small.relations()
    assert set(small.relations()) < set(RELATIONS)


def test_excluded_optional_attribute_is_not_generated():
    import fictionworld as fw

    spec = default_spec(600)
    types = dict(spec.types)
    types["company"] = EntityTypeConfig(**{**types["company"].model_dump(), "exclude_attributes": ("revenue_usd",)})
    w = fw.generate(seed=1, spec=spec.model_copy(update={"types": types}), entities=600)
    assert "revenue_usd" not in w.predicate_counts()
    assert fw.check_world(w) == []
