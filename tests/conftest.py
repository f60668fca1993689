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


# -- the end of a run ---------------------------------------------------------------------------
# After the last test this process still holds what its Ray sessions (seven, one after another),
# torch, gRPC and tantivy leave behind: about 50 native threads, Ray's GCS-client and gRPC
# event-engine threads among them, alive after ray.shutdown() (counted from /proc/self/task at
# the end of a full run). Tearing the interpreter down under them (module teardown, C++ static
# destructors) crashed a CI run after "1099 passed" (exit 139, no traceback: pytest's fault
# handler is off by then). So, as a forked worker does, the run ends once every atexit handler
# has run (Ray's shutdown, weakref finalizers such as the world model's loop stopper, pytest's
# own, logging's) and the streams are flushed, with pytest's exit status, without finalizing the
# interpreter. FICTIONWORLD_TEST_FINALIZE=1 keeps the normal teardown (to look for the crash).
_ENDING: dict = {}


def pytest_sessionstart(session):
    _ENDING["session"] = session


def _main_pytest_process() -> bool:
    argv0 = sys.argv[0] if sys.argv else ""
    return (
        "PYTEST_XDIST_WORKER" not in os.environ
        and os.environ.get("FICTIONWORLD_TEST_FINALIZE", "") in ("", "0")
        and os.path.basename(argv0) in ("pytest", "py.test", "__main__.py")
        and "pytest" in argv0
    )


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    if _main_pytest_process() and "session" in _ENDING:
        import atexit

        atexit.register(_exit_without_finalizing)  # registered last, so it runs first


def _exit_without_finalizing() -> None:
    import atexit

    session = _ENDING["session"]
    status = int(session.exitstatus)
    if status == 0 and getattr(sys, "last_value", None) is not None:  # an error after the tests, printed
        status = 1
    atexit.unregister(_exit_without_finalizing)
    atexit._run_exitfuncs()  # every other handler (logging's shutdown among them), in Python's order
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)
