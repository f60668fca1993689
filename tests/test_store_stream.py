"""The render store written from a saved world a row group at a time (``write_store_from_graph``)
is the one ``write_store`` writes from the world in memory, byte for byte."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from build_helpers import small_spec

from fictionworld.reading import WorldFormatError
from fictionworld.spec import default_spec
from fictionworld.storage import load_world, save_world
from fictionworld.web import store, store_stream
from fictionworld.web.store import RenderStore, write_store
from fictionworld.web.store_stream import write_store_from_graph

FILES = ["by-object.arrow", "by-subject.arrow", "entities.arrow", "lists.arrow", "names.arrow", "store.json"]


def saved(tmp: Path, spec, seed: int, row_group: int | None = None):
    """A generated world, and its directory (facts in row groups of ``row_group`` rows)."""
    from fictionworld.generators import generate_world

    world = generate_world(spec, seed)
    graph = save_world(world, tmp / "graph", web=False)
    if row_group:
        facts = graph / "facts.parquet"
        pq.write_table(pq.read_table(facts), facts, row_group_size=row_group, compression="zstd")
        assert pq.ParquetFile(facts).num_row_groups > 2
    return world, graph


def assert_same_files(a: Path, b: Path) -> None:
    assert sorted(p.name for p in a.iterdir()) == FILES
    assert sorted(p.name for p in b.iterdir()) == FILES  # the spools are gone
    for name in FILES:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


CASES = {
    # spec, seed, facts per bucket, pool share, facts per row group
    "default": (lambda: default_spec(9000), 1, store_stream.FACTS_PER_BUCKET, None, None),
    # URL clashes (seed 4), many blocks, a bucket per few blocks, no perturbation pool
    "clashes": (lambda: small_spec(3000, block=100), 4, 2000, 0, 4000),
    # a block size dividing nothing, a spool per block and a bucket per spool
    "tiny-buckets": (lambda: small_spec(2000, block=37), 2, 1, 0.6, 3000),
}


@pytest.mark.parametrize("case", CASES)
def test_the_streamed_store_is_the_store_byte_for_byte(tmp_path, case):
    spec, seed, per_bucket, pool, row_group = CASES[case]
    world, graph = saved(tmp_path, spec(), seed, row_group)
    write_store(world, tmp_path / "a", pool=pool)
    write_store_from_graph(graph, tmp_path / "b", pool=pool, facts_per_bucket=per_bucket)
    assert_same_files(tmp_path / "a", tmp_path / "b")
    s = RenderStore.open(tmp_path / "b")
    # one batch per entity block, in both fact tables, empty ones included
    assert len(s.by_subject.column(0).chunks) == len(s.by_object.column(0).chunks) == s.entity_blocks > 1
    if case != "default":
        assert s.entity_blocks > 15 and any(s.facts("by-object", b).num_rows == 0 for b in range(s.entity_blocks))


def test_it_is_the_store_of_the_world_loaded_lazily(tmp_path):
    _, graph = saved(tmp_path, small_spec(1500, block=64), 5, 2500)
    write_store(load_world(graph, verify=False), tmp_path / "a", pool=0.1)
    write_store_from_graph(graph, tmp_path / "b", pool=0.1, facts_per_bucket=3000)
    assert_same_files(tmp_path / "a", tmp_path / "b")


def test_buckets_without_facts_and_entity_batches_across_blocks(tmp_path, monkeypatch):
    """Entities in batches of 256 (crossing the 64-entity blocks), facts sorted a bucket of at
    most 50 at a time: buckets whose blocks have no incoming facts still give their batches."""
    monkeypatch.setattr(store, "ENTITY_BATCH", 256)
    seen: list[int] = []
    bucket = store_stream._Spools._bucket

    def spy(self, s, e, starts):
        seen.append(int(self.counts[s:e].sum()))
        yield from bucket(self, s, e, starts)

    monkeypatch.setattr(store_stream._Spools, "_bucket", spy)
    world, graph = saved(tmp_path, small_spec(1500, block=64), 3)
    write_store(world, tmp_path / "a")
    write_store_from_graph(graph, tmp_path / "b", facts_per_bucket=50)
    assert_same_files(tmp_path / "a", tmp_path / "b")
    assert len(RenderStore.open(tmp_path / "b").entities.column(0).chunks) == 6
    assert 0 in seen and max(seen) > 50 and len(seen) > 20  # a block with more than a bucket's facts is one bucket


def test_the_spools_are_removed_when_writing_fails(tmp_path, monkeypatch):
    _, graph = saved(tmp_path, small_spec(1500, block=64), 3)

    def fail(*_):
        raise RuntimeError("stop")

    monkeypatch.setattr(store_stream, "list_table", fail)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "store.json").write_text("{}")  # a store written before
    with pytest.raises(RuntimeError, match="stop"):
        write_store_from_graph(graph, tmp_path / "b", facts_per_bucket=100)
    assert [p.name for p in (tmp_path / "b").iterdir()] == []  # no spools; no store.json of another store


@pytest.mark.parametrize("damage", ["missing", "truncated", "scribbled"])
def test_a_bad_facts_file_is_a_world_format_error(tmp_path, damage):
    _, graph = saved(tmp_path, small_spec(1500, block=64), 3, 2000)
    facts = graph / "facts.parquet"
    data = facts.read_bytes()
    if damage == "missing":
        facts.unlink()
    elif damage == "truncated":
        facts.write_bytes(data[: len(data) // 2])
    else:  # the footer reads; a row group's pages do not
        facts.write_bytes(data[:4] + bytes(len(data) // 2) + data[4 + len(data) // 2 :])
    words = {"missing": "facts.parquet is missing", "truncated": "unreadable", "scribbled": "facts.parquet"}[damage]
    with pytest.raises(WorldFormatError, match=words):
        write_store_from_graph(graph, tmp_path / "b")
    assert not (tmp_path / "b" / "store.json").exists()
    assert not any(p.name.startswith(".spool") for p in (tmp_path / "b").glob(".*"))


def test_facts_per_bucket_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match="facts_per_bucket"):
        write_store_from_graph(tmp_path, tmp_path / "b", facts_per_bucket=0)


def test_the_row_column_is_the_fact_row_in_the_world(tmp_path):
    """Across row groups: the spools carry each fact's row in the world, not in its row group."""
    world, graph = saved(tmp_path, small_spec(1500, block=64), 3, 2000)
    write_store_from_graph(graph, tmp_path / "b")
    t = RenderStore.open(tmp_path / "b").by_subject
    rows = t.column("row").to_numpy()
    assert sorted(rows.tolist()) == list(range(len(world.facts)))
    assert (t.column("id").to_numpy() == world.facts.id[rows]).all()
    assert pc.all(pc.equal(t.column("subject"), pa.array(world.facts.subject[rows]))).as_py()


def test_the_halves_written_apart_and_side_by_side_are_the_store(tmp_path):
    """A build writes the entity half from entities.parquet alone (no facts, no manifest yet),
    beside the fact half in another process; sealed, the store is write_store's."""
    from concurrent.futures import ProcessPoolExecutor

    world, graph = saved(tmp_path, small_spec(3000, block=100), 4, 4000)
    write_store(world, tmp_path / "a", pool=0.3)
    alone = tmp_path / "entities-only"
    alone.mkdir()
    (alone / "entities.parquet").write_bytes((graph / "entities.parquet").read_bytes())
    with ProcessPoolExecutor(2) as pool:
        halves = [
            pool.submit(store_stream.write_store_entities, alone, tmp_path / "b", world.seed, 0.3),
            pool.submit(store_stream.write_store_facts, graph, tmp_path / "b", facts_per_bucket=2000),
        ]
        for f in halves:
            f.result()
    assert not (tmp_path / "b" / "store.json").exists()
    store_stream.seal_store(graph, tmp_path / "b", pool=0.3)
    assert_same_files(tmp_path / "a", tmp_path / "b")


def test_a_store_missing_a_half_is_not_sealed(tmp_path):
    world, graph = saved(tmp_path, small_spec(1500, block=64), 3)
    store_stream.write_store_facts(graph, tmp_path / "b")
    with pytest.raises(RuntimeError, match="lacks entities.arrow, names.arrow; not sealed"):
        store_stream.seal_store(graph, tmp_path / "b")
    assert not (tmp_path / "b" / "store.json").exists()
    store_stream.write_store_entities(graph, tmp_path / "b", world.seed, world.spec.web.perturbation_pool)
    (tmp_path / "b" / "lists.arrow").unlink()
    with pytest.raises(RuntimeError, match="lacks lists.arrow; not sealed"):
        store_stream.seal_store(graph, tmp_path / "b")
