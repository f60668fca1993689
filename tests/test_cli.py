"""The command line, run as a user would: a real subprocess, real files, exit codes."""

import json
import shutil
import subprocess
import sys

import pytest
from helpers import add_fact

pytestmark = pytest.mark.cli


def run(*args, check=False):
    return subprocess.run(
        [sys.executable, "-m", "fictionworld.cli", *map(str, args)], capture_output=True, text=True, check=check
    )


def test_generate_validate_stats(tmp_path):
    out = tmp_path / "w"
    r = run("generate", "--seed", "3", "--entities", "1500", "--out", out)
    assert r.returncode == 0, r.stderr
    assert (out / "manifest.json").exists()
    r = run("validate", out)
    assert r.returncode == 0 and "no violations" in r.stdout
    r = run("stats", out, "--json")
    stats = json.loads(r.stdout)
    assert stats["entities"] == sum(stats["by_type"].values()) and stats["by_type"]["person"] > 0
    assert stats["degree"]["person"]["mean"] > 1
    r = run("stats", out)
    assert r.returncode == 0 and "born_in" in r.stdout
    # generating again into the same directory is refused without --force
    r = run("generate", "--seed", "3", "--entities", "1500", "--out", out)
    assert r.returncode == 2 and "--force" in r.stderr


def test_validate_lists_violations_and_exits_1(world, tmp_path):
    bad = add_fact(world, "person:4", "born_in", "city:1")
    bad.save(tmp_path / "bad")
    r = run("validate", tmp_path / "bad")
    assert r.returncode == 1
    assert "[cardinality]" in r.stdout and "person:4" in r.stdout
    r = run("validate", tmp_path / "bad", "--json")
    data = json.loads(r.stdout)
    assert data["ok"] is False and data["violations"][0]["kind"] == "cardinality"


@pytest.mark.parametrize("command", ["validate", "stats"])
def test_bad_directory_is_one_line_not_a_traceback(saved_world, tmp_path, command):
    d = tmp_path / "broken"
    shutil.copytree(saved_world, d)
    (d / "facts.parquet").write_bytes(b"\x00" * 100)
    r = run(command, d)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "error:" in r.stderr


def test_spec_file_and_bad_spec(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(run("spec", check=True).stdout)
    r = run("generate", "--spec", spec, "--entities", "800", "--out", tmp_path / "w", "--seed", "1")
    assert r.returncode == 0, r.stderr
    spec.write_text("types: {dragon: {weight: 1}}\n")
    r = run("generate", "--spec", spec, "--out", tmp_path / "w2")
    assert r.returncode == 2 and "dragon" in r.stderr and "Traceback" not in r.stderr


def test_validate_a_hand_edited_world(saved_world, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    d = tmp_path / "edited"
    shutil.copytree(saved_world, d)
    t = pq.read_table(d / "entities.parquet")
    names = t.column("name").to_pylist()
    names[names.index(next(n for n, ty in zip(names, t.column("type").to_pylist()) if ty == "city"))] = "Lyon"
    pq.write_table(t.set_column(2, "name", pa.array(names)), d / "entities.parquet")
    r = run("validate", d)
    assert r.returncode == 2 and "world_hash" in r.stderr
    r = run("validate", d, "--no-verify-hash")
    assert r.returncode == 1 and "gazetteer_collision" in r.stdout and "Lyon" in r.stdout


def test_python_dash_m_fictionworld_is_the_cli():
    for module in ("fictionworld", "fictionworld.cli"):
        r = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True)
        assert r.returncode == 0 and "generate" in r.stdout and "serve" in r.stdout, (module, r.stderr)
