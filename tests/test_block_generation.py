"""Generation as block tasks (fictionworld/generators/blocks.py): any runner, the same world; blocks that
fit one type whole change nothing; names, namesakes, websites and ISBNs stay right across blocks."""

from collections import Counter

import numpy as np
import pytest

import fictionworld.generators.blocks as gb
from fictionworld.check import check_world
from fictionworld.executors import LocalTasks, RayTasks
from fictionworld.generators import generate_world
from fictionworld.generators.naming import Taken, name_hashes
from fictionworld.schema import PREDICATE_CODE
from fictionworld.spec import GENERATION_BLOCK, default_spec

pytestmark = pytest.mark.big


def blocked(entities: int, block: int, **counts):
    spec = default_spec(entities)
    if counts:
        types = {t: c.model_copy(update={"count": counts[t]}) if t in counts else c for t, c in spec.types.items()}
        spec = spec.model_copy(update={"types": types})
    return spec.model_copy(update={"generation_block": block})


def same(a, b) -> None:
    """Two worlds with the same entities and facts (their hash heads may name other blocks)."""
    for col in ("type_code", "local", "namesake_group", "name", "aliases", "culture"):
        assert getattr(a.entities, col).tolist() == getattr(b.entities, col).tolist(), col
    for col in ("subject", "predicate", "object", "v_int", "v_date", "start", "end", "source", "v_text"):
        assert getattr(a.facts, col).tolist() == getattr(b.facts, col).tolist(), col
    assert np.array_equal(a.facts.v_float, b.facts.v_float, equal_nan=True)
    assert a.facts.sources == b.facts.sources


@pytest.fixture(scope="module")
def small_blocks():
    return generate_world(blocked(12_000, 100), 3)


def test_a_world_whose_types_fit_one_block_is_the_world_without_blocks():
    spec = default_spec(3_000)
    assert max(spec.counts().values()) < GENERATION_BLOCK
    same(generate_world(spec, 2), generate_world(spec.model_copy(update={"generation_block": 1 << 20}), 2))


def test_the_block_size_enters_the_hash_only_away_from_its_default():
    spec = default_spec(800)
    base = generate_world(spec, 1)
    assert generate_world(spec.model_copy(update={"generation_block": 1 << 20}), 1).world_hash != base.world_hash
    assert (
        generate_world(spec.model_copy(update={"generation_block": GENERATION_BLOCK}), 1).world_hash == base.world_hash
    )


def test_a_world_in_small_blocks_breaks_no_constraint(small_blocks):
    assert small_blocks.counts()["person"] > 50 * 100  # many blocks of every large type
    assert check_world(small_blocks) == []


def test_small_blocks_make_another_world_than_one_block(small_blocks):
    assert small_blocks.world_hash != generate_world(blocked(12_000, GENERATION_BLOCK), 3).world_hash


def test_no_two_entities_share_a_name_unless_namesakes(small_blocks):
    e = small_blocks.entities
    for t in small_blocks.counts():
        rows = e.rows_of_type(t)
        group = e.namesake_group[rows]
        counted = (group < 0) | (group == e.local[rows])
        shared = [n for n, k in Counter(e.name[rows][counted].tolist()).items() if k > 1]
        assert not shared, (t, shared[:5])


def test_namesakes_pair_entities_of_one_block(small_blocks):
    e = small_blocks.entities
    rows = np.flatnonzero((e.namesake_group >= 0) & (e.namesake_group != e.local))
    assert len(rows) > 10
    copies, originals = e.local[rows], e.namesake_group[rows]
    assert np.array_equal(copies // 100, originals // 100)
    row_of = {(int(t), int(i)): r for r, (t, i) in enumerate(zip(e.type_code.tolist(), e.local.tolist()))}
    for r, o in zip(rows.tolist(), originals.tolist()):
        assert e.name[r] == e.name[row_of[(int(e.type_code[r]), o)]]


@pytest.mark.parametrize("attr", ["website", "isbn"])
def test_unique_attributes_stay_unique_across_blocks(small_blocks, attr):
    values = small_blocks.facts.v_text[small_blocks.facts.predicate == PREDICATE_CODE[attr]].tolist()
    assert len(values) > 500 and len(set(values)) == len(values)


def test_names_taken_in_another_block_are_drawn_again(monkeypatch):
    """Titles from a small vocabulary clash across blocks of 64: those blocks run again, and
    the entity with the lower index keeps the name."""
    again: list[tuple[str, int]] = []
    real = gb.run_block

    def spy(spec, seed, gen_id, phase, block, flow, reopen, *spool):
        for t, rounds in reopen.items():
            again.append((t, sum(len(s) for s, _ in rounds)))
        return real(spec, seed, gen_id, phase, block, flow, reopen, *spool)

    monkeypatch.setattr(gb, "run_block", spy)
    spec = blocked(6_000, 64)
    world = generate_world(spec, 5)
    assert again and {t for t, _ in again} >= {"book"}
    monkeypatch.setattr(gb, "run_block", real)
    assert world.world_hash == generate_world(spec, 5).world_hash
    assert check_world(world) == []


def test_a_name_is_taken_when_any_block_has_it():
    """``Taken`` (what a block drawing names again tests them against): its own names, and
    every block's by hash, one name or a round's proposals at once."""
    real = ["Linnea Yeymo", "Ærøskøbing Hall", "Vesalena Exhibition 1998", ""]
    taken = Taken({"Own Name"}, np.sort(name_hashes(real)))
    assert all(x in taken for x in [*real, "Own Name"])
    others = ["Linnea Yeym", "linnea yeymo", "Zzz", " ", "Own Name"]
    assert not any(x in taken for x in others[:-1])
    assert taken.elsewhere([*others, *real]) == [False] * len(others) + [True] * len(real)
    assert "Zzz" not in Taken(set(), np.zeros(0, np.uint64))
    assert Taken(set(), np.zeros(0, np.uint64)).elsewhere(["a", "b"]) == [False, False]


def test_a_block_draws_the_same_whatever_comes_after_it():
    """The first block of people keeps its names and dates when more blocks are added (the
    lowest index keeps a shared name)."""
    small = generate_world(blocked(3_000, 256, person=256 * 2), 4)
    large = generate_world(blocked(3_000, 256, person=256 * 5), 4)

    def first_block(w):
        e = w.entities
        rows = e.rows_of_type("person")[:256]
        births = w.facts.v_date[(w.facts.predicate == PREDICATE_CODE["birth_date"])][:256]
        return e.name[rows].tolist(), births.tolist()

    assert first_block(small) == first_block(large)


def test_local_processes_and_ray_tasks_make_the_same_world(ray_cluster):
    spec = blocked(8_000, 128)
    here = generate_world(spec, 6)
    local = LocalTasks(2)
    local.start([])
    try:
        same(here, generate_world(spec, 6, tasks=local))
    finally:
        local.stop()
    same(here, generate_world(spec, 6, tasks=RayTasks(None, 2)))
