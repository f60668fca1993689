"""The streamed check of a saved world (``check_world_dir``) against the whole-world check, and
the streamed content hash against ``World.world_hash``."""

import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import add_fact, rows, set_column
from test_check import PLANTS

import fictionworld as fw
from fictionworld.check.stream import TOGETHER, check_world_dir, plan_units, predicate_groups
from fictionworld.reading import WorldFormatError
from fictionworld.records import ViolationKind as K
from fictionworld.schema import PREDICATE_CODE, PREDICATES
from fictionworld.streaming import SavedWorld, stream_world_hash

pytestmark = pytest.mark.big

ON_DISK = [k for k in PLANTS if k not in (K.DANGLING_REFERENCE, K.UNKNOWN_PREDICATE)]  # the loader refuses these


def as_set(violations):
    return sorted((v.kind.value, v.message, v.entities, v.facts) for v in violations)


def saved(world, tmp_path, name="w"):
    path = tmp_path / name
    world.save(path, web=False)
    return path


@pytest.mark.parametrize("kind", ON_DISK, ids=lambda k: k.value)
def test_each_planted_violation_is_found_as_the_whole_check_finds_it(world, tmp_path, kind):
    """Units of one predicate group each (the smallest they can be): the same violations, with
    the same messages, entities and facts, as checking the world whole."""
    planted = PLANTS[kind](world)
    path = saved(planted, tmp_path)
    streamed = check_world_dir(path, workers=1, max_facts=1)
    assert kind in {v.kind for v in streamed}
    assert as_set(streamed) == as_set(fw.check_world(planted))


def test_a_valid_world_is_clean_in_units_of_any_size(world, saved_world):
    """No rule reports a false violation for lack of facts another unit holds."""
    for max_facts in (1, 5_000, 10**9):
        assert check_world_dir(saved_world, workers=1, max_facts=max_facts) == []


def test_many_violations_across_units_are_capped_per_kind_as_a_whole_check_caps_them(world, tmp_path):
    w = world
    for i in range(12):  # cardinality: 12 people born twice
        w = add_fact(w, f"person:{i}", "born_in", "city:3")
    for r in rows(w, "page_count")[:9].tolist():  # range: 9 books of a million pages
        w = set_column(w, "v_int", r, 1_000_000)
    path = saved(w, tmp_path)
    streamed = check_world_dir(path, workers=1, max_facts=1, limit_per_kind=5)
    whole = fw.check_world(w, limit_per_kind=5)
    for kind, total in ((K.CARDINALITY, 12), (K.RANGE, 9)):
        got = [v for v in streamed if v.kind == kind]
        assert len(got) == 6 and got[-1].message == f"... and {total - 5} more {kind.value} violations"
        assert len([v for v in whole if v.kind == kind]) == 6
    assert as_set(check_world_dir(path, workers=1, limit_per_kind=100)) == as_set(fw.check_world(w, limit_per_kind=100))


def test_the_result_does_not_depend_on_the_workers(world, tmp_path):
    w = PLANTS[K.CARDINALITY](PLANTS[K.INVERSE](PLANTS[K.GAZETTEER_COLLISION](world)))
    path = saved(w, tmp_path)
    one = check_world_dir(path, workers=1, max_facts=20_000)
    assert check_world_dir(path, workers=2, max_facts=20_000) == one  # same order, too
    assert {v.kind for v in one} >= {K.CARDINALITY, K.INVERSE, K.GAZETTEER_COLLISION}


_DYING = {}  # what a unit task does before its real work, set before the workers fork


def _dying_unit(path, work, unit, limit):
    """A unit task whose process dies (as by the OOM killer) the first ``times`` times it runs."""
    import os

    from fictionworld.check import stream

    deaths = _DYING["dir"] / f"{os.getpid()}.died"
    if len(list(_DYING["dir"].iterdir())) < _DYING["times"]:
        deaths.touch()
        os._exit(9)
    return stream._real_check_unit(path, work, unit, limit)


@pytest.mark.parametrize("dies", ["once", "always"])
def test_a_killed_check_worker_is_replaced_and_the_result_is_the_same(world, tmp_path, monkeypatch, dies):
    """A worker that dies mid-unit breaks the whole local pool: the units not done yet run again
    in a new one, at most POOL_RESTARTS times, then a CheckError says so."""
    from fictionworld.check import stream
    from fictionworld.executors import POOL_RESTARTS

    w = PLANTS[K.CARDINALITY](PLANTS[K.INVERSE](world))
    path = saved(w, tmp_path)
    one = check_world_dir(path, workers=1, max_facts=20_000)
    (tmp_path / "deaths").mkdir()
    _DYING.update(dir=tmp_path / "deaths", times=1 if dies == "once" else 10**6)
    monkeypatch.setattr(stream, "_real_check_unit", stream.check_unit, raising=False)
    monkeypatch.setattr(stream, "check_unit", _dying_unit)
    deaths = lambda: len(list((tmp_path / "deaths").iterdir()))  # noqa: E731
    if dies == "once":
        assert check_world_dir(path, workers=2, max_facts=20_000) == one
        assert 1 <= deaths() <= 2  # (both workers may start a unit before either has died)
    else:
        with pytest.raises(stream.CheckError, match=f"died {POOL_RESTARTS + 1} times"):
            check_world_dir(path, workers=2, max_facts=20_000)
        assert deaths() >= POOL_RESTARTS + 1


def test_fact_ids_used_twice_are_found_across_row_groups(world, tmp_path):
    from fictionworld import storage

    f = world.facts
    ids = f.id.copy()
    ids[-1] = ids[0]  # the first and the last fact share an id
    w = world.replace(facts=f.with_values(id=ids))
    old = storage.FACT_ROW_GROUP
    storage.FACT_ROW_GROUP = 1_000  # many row groups, the repeat in the first and the last
    try:
        path = saved(w, tmp_path)
    finally:
        storage.FACT_ROW_GROUP = old
    assert SavedWorld(path).row_groups > 5
    found = [v.message for v in check_world_dir(path, workers=1) if v.kind == K.DUPLICATE_FACT]
    assert found == [f"fact id {ids[0]} is used 2 times"]
    assert found == [v.message for v in fw.check_world(w) if v.kind == K.DUPLICATE_FACT]


def test_units_keep_every_rule_s_predicates_together_and_respect_their_size(saved_world):
    groups = predicate_groups()
    assert sorted(c for g in groups for c in g) == list(range(len(PREDICATES)))
    group_of = {c: i for i, g in enumerate(groups) for c in g}
    for names in TOGETHER:
        assert len({group_of[PREDICATE_CODE[n]] for n in names}) == 1, names
    counts = SavedWorld(saved_world).predicate_counts()
    per_group = {g: int(counts[:, list(g)].sum()) for g in groups}
    for max_facts in (1, 3_000, 10**9):
        units = plan_units(counts, max_facts)
        assert sorted(c for u in units for c in u["codes"]) == list(range(len(PREDICATES)))
        for u in units:
            assert u["facts"] == int(counts[:, u["codes"]].sum())
            assert u["facts"] <= max(max_facts, max(per_group[g] for g in groups if g[0] in u["codes"]))
            # a unit reads only the row groups holding its predicates
            assert u["groups"] == np.flatnonzero(counts[:, u["codes"]].sum(axis=1)).tolist()
    assert len(plan_units(counts, 1)) == len(groups)


def test_a_unit_holds_only_its_predicates_facts(saved_world, world):
    w = SavedWorld(saved_world)
    code = PREDICATE_CODE["works_for"]
    f = w.facts(range(w.row_groups), [code])
    mine = world.facts.predicate == code
    assert len(f) == int(mine.sum()) < len(world.facts) / 10
    assert np.array_equal(f.id, world.facts.id[mine])
    assert np.array_equal(f.subject, world.facts.subject[mine]) and np.array_equal(f.object, world.facts.object[mine])
    assert np.array_equal(f.start, world.facts.start[mine]) and np.array_equal(f.end, world.facts.end[mine])


def test_the_streamed_hash_is_the_world_hash(world, saved_world, tmp_path):
    assert stream_world_hash(saved_world) == world.world_hash == fw.World.load(saved_world).world_hash
    other = fw.generate(seed=3, entities=300)  # namesakes, aliases and texts of another seed
    assert stream_world_hash(saved(other, tmp_path)) == other.world_hash
    edited = tmp_path / "edited"
    shutil.copytree(saved_world, edited)
    t = pq.read_table(edited / "facts.parquet")
    v = t.column("value_int").to_pylist()
    i = next(i for i, x in enumerate(v) if x is not None)
    v[i] += 1
    pq.write_table(t.set_column(t.schema.get_field_index("value_int"), "value_int", pa.array(v, pa.int64())), edited / "facts.parquet")  # fmt: skip
    assert stream_world_hash(edited) != world.world_hash


@pytest.mark.parametrize("column, value, words", [("subject", "person:999999", "unknown entity id 'person:999999'"),
                                                  ("object", "dragon:1", "unknown entity id 'dragon:1'"),
                                                  ("predicate", "eats", "unknown predicate 'eats'")])  # fmt: skip
def test_a_corrupt_fact_file_is_a_clear_error(saved_world, tmp_path, column, value, words):
    d = tmp_path / "bad"
    shutil.copytree(saved_world, d)
    t = pq.read_table(d / "facts.parquet")
    cells = t.column(column).cast(pa.string()).to_pylist()
    i = next(i for i, x in enumerate(cells) if x is not None)
    cells[i] = value
    pq.write_table(t.set_column(t.schema.get_field_index(column), column, pa.array(cells, pa.string())), d / "facts.parquet")  # fmt: skip
    with pytest.raises(WorldFormatError, match=words.replace("'", ".")):
        check_world_dir(d, workers=1, max_facts=1)
    with pytest.raises(WorldFormatError, match=words.replace("'", ".")):
        stream_world_hash(d)


def test_ray_tasks_check_as_local_processes_do(world, tmp_path, ray_cluster):
    path = saved(PLANTS[K.SYMMETRY](world), tmp_path)
    local = check_world_dir(path, workers=1, max_facts=20_000)
    assert check_world_dir(path, use_ray=True, workers=2, max_facts=20_000) == local
