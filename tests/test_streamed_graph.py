"""A world generated straight to its files (fictionworld/generators/streamed.py) is the world generate_world
makes and save_world writes, byte for byte, whatever the blocks, slices and runners; the
writer leaves nothing behind, and a broken spool says so."""

import filecmp
import pickle

import pytest

import fictionworld.generators.base as gbase
import fictionworld.generators.blocks as gblocks
import fictionworld.generators.streamed as gs
import fictionworld.storage as storage
from fictionworld.executors import LocalTasks
from fictionworld.generators import generate_world
from fictionworld.generators.streamed import Spooled, write_graph_files
from fictionworld.spec import default_spec
from fictionworld.storage import load_world, save_world
from fictionworld.streaming import stream_world_hash

pytestmark = pytest.mark.big

FILES = ("entities.parquet", "facts.parquet", "manifest.json")


def blocked(entities: int, block: int, namesakes: float = 0.0):
    spec = default_spec(entities)
    if namesakes:  # (only people have namesakes by default; the other types' are drawn per block here)
        types = {t: c.model_copy(update={"namesake_rate": namesakes}) for t, c in spec.types.items()}
        spec = spec.model_copy(update={"types": types})
    return spec.model_copy(update={"generation_block": block})


def same_files(a, b) -> None:
    for name in FILES:
        assert filecmp.cmp(a / name, b / name, shallow=False), name
    assert sorted(p.name for p in b.iterdir()) == sorted(FILES)


def in_memory(spec, seed, path):
    return save_world(generate_world(spec, seed), path, web=False)


@pytest.mark.parametrize(
    ("entities", "block", "seed", "namesakes"),
    [(3_000, 1 << 16, 1, 0), (12_000, 100, 3, 0), (6_000, 64, 5, 0), (6_000, 256, 11, 0.05)],
)
def test_the_streamed_world_is_the_saved_world_file_for_file(tmp_path, entities, block, seed, namesakes):
    spec = blocked(entities, block, namesakes)
    in_memory(spec, seed, tmp_path / "a")
    write_graph_files(spec, seed, tmp_path / "b")
    same_files(tmp_path / "a", tmp_path / "b")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]  # no spool, no half-written directory


def test_websites_and_isbns_taken_by_earlier_blocks_are_redrawn_as_in_memory():
    # Names are distinct across blocks, so websites (made from names) and ISBNs rarely meet in
    # a generated world (none at 1M): planted ones, made unique over all blocks at once (the
    # rule) and block by block, as both writers do (Finish).
    import numpy as np

    from fictionworld.generators.base import TypeData
    from fictionworld.generators.blocks import Finish, _make_unique, _website_again, isbn_rng
    from fictionworld.generators.works import isbn13

    def parts():
        sites = [["https://a.com", "https://b.com", None], ["https://b.com", "https://a.com", "https://a-2.com"]]
        isbns = [["978-1", "978-2", None], ["978-2", "978-1", "978-3"], ["978-3", None, "978-1"]]
        out = []
        for i, isbn in enumerate(isbns):
            attrs = {"isbn": np.array(isbn, object)}
            if i < len(sites):
                attrs["website"] = np.array(sites[i], object)
            out.append(TypeData("book", 3, 0, start=3 * i, attrs=attrs))
        return out

    whole = parts()
    _make_unique(whole, "website", _website_again)
    rng = isbn_rng(7)
    _make_unique(whole, "isbn", lambda _first, _k: isbn13(rng, 1)[0])
    one_by_one = parts()
    finish = Finish(default_spec(3_000), 7, book_blocks=len(one_by_one))
    for i, d in enumerate(one_by_one):
        finish.block("book", i, d)
    for a, b in zip(whole, one_by_one):
        assert {k: v.tolist() for k, v in a.attrs.items()} == {k: v.tolist() for k, v in b.attrs.items()}
    sites = [x for d in whole for x in d.attrs.get("website", np.array([])).tolist() if x]
    assert sites == ["https://a.com", "https://b.com", "https://b-2.com", "https://a-2.com", "https://a-2-2.com"]
    books = [x for d in whole for x in d.attrs["isbn"].tolist() if x]
    assert len(set(books)) == len(books) and "978-1" in books


def test_slices_and_row_groups_cut_the_same_way(tmp_path, monkeypatch):
    # Small Arrow slices and row groups, so that both files have many, cut mid-block.
    monkeypatch.setattr(storage, "FACT_SLICE", 3 * 1000)
    monkeypatch.setattr(storage, "FACT_ROW_GROUP", 1000)
    monkeypatch.setattr(storage, "ENTITY_ROW_GROUP", 700)
    spec = blocked(5_000, 300)
    in_memory(spec, 5, tmp_path / "a")
    write_graph_files(spec, 5, tmp_path / "b")
    same_files(tmp_path / "a", tmp_path / "b")
    import pyarrow.parquet as pq

    assert pq.ParquetFile(tmp_path / "b" / "entities.parquet").num_row_groups > 5
    assert pq.ParquetFile(tmp_path / "b" / "facts.parquet").num_row_groups > 10


def test_each_row_group_carries_only_the_ids_its_rows_use(tmp_path, monkeypatch):
    # A reader decodes a row group's dictionary whole: one over a slice of several row groups
    # made a 10M world's subjects 3-4 times the ids of the rows read, and their reads 9x slower.
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    monkeypatch.setattr(storage, "FACT_SLICE", 3 * 1000)
    monkeypatch.setattr(storage, "FACT_ROW_GROUP", 1000)
    spec = blocked(4_000, 300)
    in_memory(spec, 3, tmp_path / "a")
    write_graph_files(spec, 3, tmp_path / "b")
    for world in ("a", "b"):
        pf = pq.ParquetFile(tmp_path / world / "facts.parquet")
        assert pf.num_row_groups > 10
        for g in range(pf.num_row_groups):
            for name in ("subject", "object"):
                (chunk,) = pf.read_row_group(g, columns=[name]).column(name).chunks
                used = pc.unique(chunk.indices.drop_null()).to_numpy()
                assert sorted(used.tolist()) == list(range(len(chunk.dictionary))), (world, g, name)


def test_block_tasks_in_worker_processes_write_the_same_files(tmp_path):
    spec = blocked(8_000, 200)
    in_memory(spec, 2, tmp_path / "a")
    tasks = LocalTasks(2)
    tasks.start([])
    try:
        write_graph_files(spec, 2, tmp_path / "b", tasks=tasks)
    finally:
        tasks.stop()
    same_files(tmp_path / "a", tmp_path / "b")


def test_the_streamed_world_loads_checked_and_hashes_as_generated(tmp_path):
    spec = blocked(4_000, 128)
    write_graph_files(spec, 9, tmp_path / "w")
    world = load_world(tmp_path / "w", verify=True)  # recomputes the hash from every column
    assert world.world_hash == generate_world(spec, 9).world_hash == stream_world_hash(tmp_path / "w")


def test_a_failed_write_leaves_no_world_and_no_spool(tmp_path, monkeypatch):
    spec = blocked(3_000, 128)
    write_graph_files(spec, 1, tmp_path / "w")  # an older world in the way goes
    calls = {"n": 0}
    real = gbase.apply_namesakes

    def failing(ctx, t):
        calls["n"] += 1
        if calls["n"] == 4:
            raise RuntimeError("disk on fire")
        real(ctx, t)

    monkeypatch.setattr(gblocks, "apply_namesakes", failing)
    with pytest.raises(RuntimeError, match="disk on fire"):
        write_graph_files(spec, 1, tmp_path / "w")
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no world, no spool, no half-written files
    monkeypatch.undo()
    write_graph_files(spec, 1, tmp_path / "w")  # and the next run writes it whole
    assert load_world(tmp_path / "w").world_hash == generate_world(spec, 1).world_hash


def test_a_spool_cut_short_is_an_error_that_names_it(tmp_path):
    path = tmp_path / "block.pkl"
    data = pickle.dumps(list(range(1000)))
    path.write_bytes(data[:-10])
    with pytest.raises(OSError, match="block.pkl: spool file cut short"):
        Spooled(str(path), 0, len(data), 1000).load()


def test_what_a_killed_run_left_behind_is_cleared_and_the_world_written_whole(tmp_path):
    # A run killed with SIGKILL cleans nothing: its spool and half-written directory stay.
    spec = blocked(3_000, 128)
    (tmp_path / f"w{gs.SPOOL_SUFFIX}").mkdir()
    (tmp_path / f"w{gs.SPOOL_SUFFIX}" / "people-v0.main.3.0.pkl").write_bytes(b"\x80half")
    (tmp_path / "w.writing").mkdir()
    (tmp_path / "w.writing" / "facts.parquet").write_bytes(b"PAR1 cut short")
    write_graph_files(spec, 4, tmp_path / "w")
    in_memory(spec, 4, tmp_path / "a")
    same_files(tmp_path / "a", tmp_path / "w")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "w"]


def test_work_beside_starts_on_the_entities_before_any_fact_is_written(tmp_path, monkeypatch):
    """``beside(directory, "entities")`` comes once entities.parquet is whole and before any
    fact is written: the render store's entity half starts there (make_graph). ``"facts"``
    comes once the facts and the manifest's counts are written, ``"hashed"`` once the hash is
    taken (make_graph writes the lexicon there); every wait is called after the last of
    them, before the directory takes its name."""
    import json

    import pyarrow.parquet as pq

    import fictionworld.streaming

    spec = blocked(6_000, 256)
    in_memory(spec, 7, tmp_path / "a")
    added = {"facts": 0}
    add = gs._Facts.add

    def counted(self, f, source):
        added["facts"] += len(f)
        add(self, f, source)

    monkeypatch.setattr(gs._Facts, "add", counted)
    seen: list[tuple] = []
    stream_world_hash = fictionworld.streaming.stream_world_hash
    monkeypatch.setattr(
        fictionworld.streaming, "stream_world_hash", lambda d: seen.append(("hash",)) or stream_world_hash(d)
    )

    def beside(directory, part):
        entities = pq.ParquetFile(directory / "entities.parquet").metadata.num_rows  # whole: its footer reads
        manifest = directory / "manifest.json"
        counts = json.loads(manifest.read_text())["counts"] if manifest.exists() else None
        seen.append((part, entities, added["facts"], counts))
        return lambda: seen.append(("wait", part, directory.exists(), (tmp_path / "b").exists()))

    write_graph_files(spec, 7, tmp_path / "b", beside=beside)
    same_files(tmp_path / "a", tmp_path / "b")
    world = load_world(tmp_path / "b")
    assert seen[0] == ("entities", len(world.entities), 0, None)
    assert seen[1][:3] == ("facts", len(world.entities), len(world.facts))
    assert seen[1][3]["facts"] == len(world.facts) == pq.ParquetFile(tmp_path / "b" / "facts.parquet").metadata.num_rows
    assert seen[2] == ("hash",)
    assert seen[3] == ("hashed", len(world.entities), len(world.facts), seen[1][3])
    assert seen[4:] == [("wait", p, True, False) for p in ("entities", "facts", "hashed")]
