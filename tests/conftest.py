from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import fictionworld as fw  # noqa: E402
from fictionworld.cli import MIN_ENTITIES  # noqa: E402
from fictionworld.tasks.generate import generate_tasks  # noqa: E402
from fictionworld.tasks.model import write_tasks  # noqa: E402


@pytest.fixture(scope="session")
def world() -> fw.World:
    """A valid default-spec world, shared read-only by many tests."""
    return fw.generate(seed=11, entities=2_000)


@pytest.fixture(scope="session")
def saved_world(world, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("worlds") / "w"
    world.save(path)
    return path


# Under pytest-xdist each worker keeps its Ray clusters to itself: Ray finds "the cluster on this
# machine" through the newest session recorded in its temporary directory, so a rollout in one
# worker (``ray.init()`` with no address) would join, and load, a cluster another worker started.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("RAY_TMPDIR", os.path.join(tempfile.gettempdir(), f"ray-{os.environ['PYTEST_XDIST_WORKER']}"))

REQUIRE_EXTRAS = "FICTIONWORLD_REQUIRE_EXTRAS"  # .ci/run sets it: the [test] extra installs verl, trl, torch


@pytest.fixture(scope="session")
def small_world() -> fw.World:
    """A 50-entity world (seed 5): enough for one wide task, fast to build."""
    return fw.generate(seed=5, entities=50)


@pytest.fixture(scope="session")
def task(small_world):
    """One wide task of ``small_world``."""
    from fictionworld.tasks.generate import generate_tasks

    return generate_tasks(small_world, 1, kind="wide", seed=0)[0]


def require(module: str):
    """The optional package ``module`` a test file needs: skipped without it on a machine that
    installed only the core, but an import error where ``FICTIONWORLD_REQUIRE_EXTRAS=1`` (CI,
    whose install includes every extra the tests use), so CI can never pass by skipping."""
    import importlib
    import os

    if os.environ.get(REQUIRE_EXTRAS, "") not in ("", "0"):
        return importlib.import_module(module)
    return pytest.importorskip(module)


# -- the command-line bad-input tests (test_cli_bad_input.py, test_cli_walk.py) ---------------
@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """A smallest world (with its web), its tasks, responses, a run, and bad files of each kind."""
    d = tmp_path_factory.mktemp("cli_bad")
    world = fw.generate(seed=5, entities=MIN_ENTITIES)
    world.save(d / "world")
    tasks = generate_tasks(world, 3, kind="mixed", seed=0)
    write_tasks(tasks, d / "tasks.jsonl")
    (d / "responses.jsonl").write_text(
        "".join(json.dumps({"instance_id": t.instance_id, "response": t.answer}) + "\n" for t in tasks)
    )
    (d / "run").mkdir()
    (d / "run" / "episodes.jsonl").write_text(json.dumps({"episode": "t#0", "task_id": "t", "reward": 0.5}) + "\n")
    (d / "garbage").write_bytes(b"\x00\xffgarbage\x13" * 20)
    (d / "garbage.json").write_text('{"instance_id": 3, "gold": [1, 2')
    (d / "empty_dir").mkdir()
    (d / "bad_world").mkdir()
    (d / "bad_world" / "manifest.json").write_text("{not json")
    return {
        "dir": d,
        "world": d / "world",
        "tasks": d / "tasks.jsonl",
        "responses": d / "responses.jsonl",
        "run": d / "run",
        "url": world.web.pages.urls[0],
        "task_ids": [t.instance_id for t in tasks],
    }


@pytest.fixture
def no_ray(monkeypatch):
    """Fails the test if anything starts Ray."""
    import rollout.pool

    def refuse(*a, **k):
        raise AssertionError("Ray was started")

    monkeypatch.setattr(rollout.pool, "init_ray", refuse)


# -- rollout: everything checked in the driver, before Ray or the run directory ------------------


# -- the sharded builds (test_sharded_build.py, test_build_resume.py) -------------------------------
@pytest.fixture(scope="session")
def reference(tmp_path_factory):
    """The sharded-build tests' world (build_helpers), built in one process, one shard: its
    directory and :func:`~build_helpers.fingerprint`."""
    from build_helpers import SEED, fingerprint, small_spec

    from fictionworld.web.shards import build_world

    path = tmp_path_factory.mktemp("ref") / "w"
    summary = build_world(small_spec(), SEED, path, workers=1, shards=1)
    assert summary["shards"] == 1 and not summary["violations"]
    assert summary["renamed_urls"] > 0  # the join's rename path (URL order included) is exercised
    return path, fingerprint(path)
