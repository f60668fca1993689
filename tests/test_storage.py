"""Format fictionworld/1: round trip, and a clear one-line error for every kind of bad directory."""

import json
import re
import shutil

import numpy as np
import pytest
import xxhash

import fictionworld as fw
from fictionworld.storage import WorldFormatError, load_world


def test_round_trip_is_equal_and_same_hash(world, saved_world):
    loaded = load_world(saved_world)
    assert loaded.world_hash == world.world_hash
    assert loaded == world
    for col in ("type_code", "local", "namesake_group"):
        assert np.array_equal(getattr(loaded.entities, col), getattr(world.entities, col))
    assert loaded.entities.name.tolist() == world.entities.name.tolist()
    assert loaded.entities.aliases.tolist() == world.entities.aliases.tolist()
    for col in ("id", "subject", "predicate", "object", "v_int", "v_date", "start", "end"):
        assert np.array_equal(getattr(loaded.facts, col), getattr(world.facts, col)), col
    assert np.array_equal(loaded.facts.v_float, world.facts.v_float, equal_nan=True)
    assert loaded.facts.v_text.tolist() == world.facts.v_text.tolist()
    assert [loaded.fact(i) for i in range(0, len(world.facts), 997)] == [
        world.fact(i) for i in range(0, len(world.facts), 997)
    ]
    assert loaded.spec == world.spec and loaded.seed == world.seed


def test_layout_and_manifest(saved_world, world):
    # renders.sqlite (the LLM world model's cache) appears once a test has rendered with it
    assert {p.name for p in saved_world.iterdir()} - {"renders.sqlite"} == {
        "manifest.json",
        "entities.parquet",
        "facts.parquet",
        "pages.arrow",
        "pages.url-order.npy",
        "pages.codes.npy",
        "pages.articles.npy",
        "pages.columns.npy",
        "index",
        "lexicon",
        "web.json",
    }
    m = json.loads((saved_world / "manifest.json").read_text())
    assert m["format"] == "fictionworld/1"
    for name in ("entities.parquet", "facts.parquet"):
        data = (saved_world / name).read_bytes()
        assert m["files"][name] == {"bytes": len(data), "xxh3_128": xxhash.xxh3_128(data).hexdigest()}
    assert m["world_hash"] == world.world_hash
    assert m["counts"]["entities"] == len(world.entities)
    assert "people-v0" in m["generators"]


def test_parquet_is_readable_without_fictionworld(saved_world):
    import pyarrow.parquet as pq

    facts = pq.read_table(saved_world / "facts.parquet").to_pylist()
    born = [f for f in facts if f["predicate"] == "born_in"]
    assert born and born[0]["subject"].startswith("person:") and born[0]["object"].startswith("city:")
    pop = next(f for f in facts if f["predicate"] == "population")
    assert pop["unit"] == "people" and isinstance(pop["value_int"], int)


def test_refuses_to_overwrite(world, saved_world):
    with pytest.raises(FileExistsError):
        world.save(saved_world)


def _copy(src, tmp_path):
    dst = tmp_path / "copy"
    shutil.copytree(src, dst)
    return dst


def _break_truncate(d):
    p = d / "facts.parquet"
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


def _break_manifest_json(d):
    p = d / "manifest.json"
    p.write_text(p.read_text()[:40])


def _break_newer(d):
    m = json.loads((d / "manifest.json").read_text())
    m["format"] = "fictionworld/2"
    (d / "manifest.json").write_text(json.dumps(m))


def _break_foreign(d):
    (d / "manifest.json").write_text(json.dumps({"format": "croissant/1.0", "name": "x"}))


def _break_no_manifest(d):
    (d / "manifest.json").unlink()


def _break_missing_facts(d):
    (d / "facts.parquet").unlink()


def _break_hash(d):
    m = json.loads((d / "manifest.json").read_text())
    m["world_hash"] = "0" * 40
    (d / "manifest.json").write_text(json.dumps(m))


def _break_garbage(d):
    (d / "entities.parquet").write_bytes(b"PAR1 this is not parquet at all PAR1")


@pytest.mark.parametrize(
    "breaker, match",
    [
        (_break_truncate, "unreadable"),
        (_break_manifest_json, "not valid JSON"),
        (_break_newer, "newer"),
        (_break_foreign, "foreign format"),
        (_break_no_manifest, "no manifest.json"),
        (_break_missing_facts, "facts.parquet is missing"),
        (_break_hash, "world_hash"),
        (_break_garbage, "unreadable"),
    ],
)
def test_bad_directories_give_one_clear_line(saved_world, tmp_path, breaker, match):
    d = _copy(saved_world, tmp_path)
    breaker(d)
    with pytest.raises(WorldFormatError, match=match) as info:
        load_world(d)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "field, value, says",
    [
        ("counts", [1, 2], "field 'counts': must be an object"),
        ("counts", {"entities": "many", "facts": 3}, "field 'counts.entities': must be a whole number"),
        ("seed", "three", "field 'seed': must be a whole number, not 'three'"),
        ("seed", True, "field 'seed': must be a whole number"),
        ("generators", 5, "field 'generators': must be an object"),
        ("world_hash", 7, "field 'world_hash': must be text"),
        ("format", "fictionworld/²", "unknown format version"),  # ("²".isdigit() is true)
    ],
)
def test_manifest_fields_of_the_wrong_type_are_one_line_naming_the_manifest(saved_world, tmp_path, field, value, says):
    """Before: a bare AttributeError, TypeError or ValueError wherever the field was first used."""
    d = _copy(saved_world, tmp_path)
    m = json.loads((d / "manifest.json").read_text())
    (d / "manifest.json").write_text(json.dumps(m | {field: value}))
    for verify in (True, "on-read"):
        with pytest.raises(WorldFormatError, match=re.escape(says)) as info:
            load_world(d, verify=verify)
        assert "\n" not in str(info.value) and ("manifest.json" in str(info.value) or field == "format")


def test_missing_directory(tmp_path):
    with pytest.raises(WorldFormatError, match="no such directory"):
        fw.World.load(tmp_path / "nope")


def test_string_lists_of_tuples_and_of_arrow_lists_are_the_plain_column():
    import pyarrow as pa

    from fictionworld.storage import string_lists

    rows = [(), ("a", "b"), (), ("ü",), ("c",)]
    plain = pa.array([list(r) for r in rows], pa.list_(pa.string()))
    assert string_lists(rows).equals(plain) and string_lists([]).equals(pa.array([], pa.list_(pa.string())))
    read = pa.chunked_array([pa.array([[], ["a", "b"]]), pa.array([None, ["ü"], ["c"]])])  # a null row: no aliases
    assert string_lists(read).equals(plain)
    assert string_lists(read.slice(1, 3)).equals(plain.slice(1, 3))  # a slice, as the store's batches take them


def test_entity_numbers_are_read_type_by_type_as_the_regex_reads_them():
    """``_locals`` (type by type, sliced where a type's rows are contiguous, else taken)
    equals the one-regex reading of every id, and sends any id the regex refuses to it, so the
    same one-line error names it."""
    import numpy as np
    import pyarrow as pa

    from fictionworld.reading import _locals, _parsed_locals
    from fictionworld.tables import TYPE_NAMES

    rng = np.random.default_rng(7)
    codes = np.sort(rng.integers(0, len(TYPE_NAMES), 3_000)).astype(np.int16)
    ids = [f"{TYPE_NAMES[c]}:{int(n)}" for c, n in zip(codes.tolist(), rng.integers(0, 10**9, len(codes)).tolist())]
    ids[5] = ids[5].split(":")[0] + ":007"  # leading zeros are digits
    for order in (np.arange(len(ids)), rng.permutation(len(ids))):  # contiguous types, then mixed
        col = pa.chunked_array([pa.array([ids[i] for i in order[:1000]]), pa.array([ids[i] for i in order[1000:]])])
        got = _locals(col, codes[order], "f")
        assert got.dtype == np.int32 and np.array_equal(got, _parsed_locals(col, codes[order], "f"))
    other = TYPE_NAMES[(int(codes[9]) + 1) % len(TYPE_NAMES)]
    bad = ["", ":5", "x", f"{TYPE_NAMES[codes[9]]}:", f"{TYPE_NAMES[codes[9]]}:+5",
           f"{TYPE_NAMES[codes[9]]}:-5", f"{TYPE_NAMES[codes[9]]}:1234567890", f"{TYPE_NAMES[codes[9]]}:٣",
           f"{TYPE_NAMES[codes[9]]}: 5", f"{TYPE_NAMES[codes[9]]}:5 ", f"{other}:5", f"{TYPE_NAMES[codes[9]]}x:5"]  # fmt: skip
    for wrong in bad:
        broken = list(ids)
        broken[9] = wrong
        col = pa.chunked_array([pa.array(broken)])
        with pytest.raises(WorldFormatError) as info:
            _locals(col, codes, "f")
        msg = str(info.value)  # (an unknown type is named alone)
        assert (repr(wrong) in msg or repr(wrong.split(":")[0]) in msg) and "\n" not in msg
    with pytest.raises(WorldFormatError, match="malformed entity id None"):
        _locals(pa.chunked_array([pa.array([None, *ids[1:]], pa.string())]), codes, "f")
