from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

sys.path.insert(0, str(Path(__file__).parent))

import profiles  # noqa: E402, F401  (registers the Hypothesis profiles)

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


# -- tiers: what a test does decides when it runs ----------------------------------------------
# `python -m pytest -q` (the README's command, which CI runs) runs every test, on pytest-xdist
# workers (pyproject.toml's addopts); `python -m pytest -q -m "not slow"` is the fast tier. Tests
# are marked by what they do (pyproject.toml describes each marker), and each of these makes a
# test `slow` as well; nothing is marked slow by name. CONTRIBUTING.md says which to run when.
SLOW_BECAUSE = ("ray", "trainers", "cli", "big")
FIRST = ("ray", "big", "trainers", "cli")  # under xdist, the heaviest work is handed out first
GROUPS = "FICTIONWORLD_TEST_GROUPS"  # under xdist: the file of each test's group

# Each pytest process (the main one, or each xdist worker) gives Ray a temporary directory of its
# own: Ray records its sessions there, which is how a test that starts Ray unmarked is caught
# (below), and a rollout in one process (``ray.init()`` with no address) never joins a cluster
# that another process started. (Set here, not inherited: xdist's workers are the main process's
# children.) The run's id keeps two test runs on one machine apart (worker gw0 of each would share
# a directory, and each would charge the other's sessions to its own tests).
_RUN = os.environ.get("PYTEST_XDIST_TESTRUNUID", f"p{os.getpid()}")[:8]
RAY_TMPDIR = os.environ["RAY_TMPDIR"] = os.path.join(
    tempfile.gettempdir(), f"ray-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-{_RUN}"
)
if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    # Beside another worker, torch's (and BLAS's) second thread only spins against it: the TRL
    # runs took 1.4x as long with two threads as with one. (Read when torch is imported, later.)
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def pytest_configure(config):
    fast = "not slow" in (config.option.markexpr or "")
    settings.load_profile(config.getoption("--hypothesis-profile", None) or ("dev" if fast else "ci"))
    if config.getoption("numprocesses", None) and not os.environ.get("PYTEST_XDIST_WORKER"):
        # (the workers, started after this, write their groups here for the scheduler below)
        path = Path(tempfile.gettempdir()) / f"fictionworld-test-groups-{os.getpid()}.json"
        os.environ[GROUPS] = str(path)
        config.add_cleanup(lambda: path.unlink(missing_ok=True))


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: a worker per core, at most 4 (past that the Ray group is the run's length, and
    each worker holds its own session worlds)."""
    return max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


@pytest.hookimpl(tryfirst=True)  # before the mark plugin deselects by `slow`
def pytest_collection_modifyitems(config, items):
    for item in items:
        if "ray_cluster" in item.fixturenames:
            item.add_marker("ray")
        if any(item.get_closest_marker(m) for m in SLOW_BECAUSE):
            item.add_marker("slow")
    if os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get(GROUPS):
        # Under xdist, one group runs every test that starts Ray, on one worker: two raylets
        # starting at once on two busy cores can miss the 30 s Ray gives a raylet to register.
        # Every other test goes with its module (its module fixtures are built once). The
        # heaviest groups go out first; within the Ray group, the run's cluster before clusters
        # of their own. (pytest-xdist's own `loadgroup` reads groups from node ids, which
        # pytest 9.2 no longer lets a plugin change: pytest-dev/pytest-xdist#1386.)
        def rank(item) -> tuple[int, bool]:
            first = next((i for i, m in enumerate(FIRST) if item.get_closest_marker(m)), len(FIRST))
            return first, "ray_cluster" not in item.fixturenames

        items.sort(key=rank)
        groups = {it.nodeid: "ray" if it.get_closest_marker("ray") else it.nodeid.split("::")[0] for it in items}
        written = Path(f"{os.environ[GROUPS]}.{os.environ['PYTEST_XDIST_WORKER']}")
        written.write_text(json.dumps(groups))
        written.replace(os.environ[GROUPS])  # (every worker collects the same tests: any one will do)


def pytest_xdist_make_scheduler(config, log):
    """Load-scope scheduling (a module's tests on one worker) whose scopes are the groups the
    workers wrote (above), read once they have all collected, handed out in the workers' order
    (not by their number of tests)."""
    if config.getvalue("dist") != "loadscope" or not os.environ.get(GROUPS):
        return None
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False

    path = Path(os.environ[GROUPS])

    class Grouped(LoadScopeScheduling):
        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:
                self.groups = json.loads(path.read_text()) if path.exists() else {}
            return self.groups.get(nodeid) or super()._split_scope(nodeid)

    return Grouped(config, log)


def ray_sessions() -> set[str]:
    """The Ray sessions started from this pytest process (or its children) so far."""
    try:
        return {n for n in os.listdir(os.path.join(RAY_TMPDIR, "ray")) if n.startswith("session_2")}
    except FileNotFoundError:
        return set()


_RAY_SEEN: set[str] = ray_sessions()  # (a session is charged to the test it ends: its fixtures' too)


@pytest.fixture(autouse=True)
def _ray_only_where_marked(request):
    """A test that starts Ray, in this process or in a command it runs, or whose fixtures do, must
    be marked `ray`: the fast tier leaves it out and, under xdist, it runs in the one group that
    starts Ray."""
    yield
    new = ray_sessions() - _RAY_SEEN
    _RAY_SEEN.update(new)
    if new and request.node.get_closest_marker("ray") is None:
        pytest.fail("this test started Ray: mark it `ray` (or give it the `ray_cluster` fixture)", pytrace=False)


def shared_ray():
    """The run's local Ray cluster (2 CPUs), for tests that need Ray but nothing of a cluster of
    their own: the first test that asks starts it, the run's end stops it. A test that needs its
    own cluster (its start-up, a size or several nodes) shuts this one down first; the next test
    that asks starts it again. Tests ask through the ``ray_cluster`` fixture (which marks them
    `ray`); a module-scoped fixture calls this, and its module is marked `ray`."""
    import ray

    from fictionworld.rollouts.pool import init_ray

    if not ray.is_initialized():
        init_ray(num_cpus=2)
    return ray


@pytest.fixture
def ray_cluster():
    return shared_ray()


def rollout_here(*args) -> str:
    """``fictionworld rollout ARGS`` through the command itself, in this process, on the run's Ray
    cluster: for a test whose subject is the run it writes (a subprocess would start a Ray cluster
    of its own; the README's commands run the command so). Its output; an error if it failed."""
    from typer.testing import CliRunner

    from fictionworld.cli import app

    shared_ray()
    r = CliRunner().invoke(app, ["rollout", *map(str, args)])
    assert r.exit_code == 0 and r.exception is None, r.output
    return r.output


REQUIRE_EXTRAS = "FICTIONWORLD_REQUIRE_EXTRAS"  # .ci/run sets it: the [test] extra installs verl, trl, torch


@pytest.fixture(scope="session")
def small_world() -> fw.World:
    """A 50-entity world (seed 5): enough for one wide task, fast to build."""
    return fw.generate(seed=5, entities=50)


@pytest.fixture(scope="session")
def task(small_world):
    """One wide task of ``small_world`` (for tools and agents, not rewards: 50 entities are too
    few for base rates to leave a column unguessable, so the guess cap is off)."""
    from fictionworld.tasks import TaskKnobs
    from fictionworld.tasks.generate import generate_tasks

    return generate_tasks(small_world, 1, kind="wide", seed=0, knobs=TaskKnobs(guess_gain=1.0))[0]


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
    from fictionworld.rollouts import pool

    def refuse(*a, **k):
        raise AssertionError("Ray was started")

    monkeypatch.setattr(pool, "init_ray", refuse)


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
# After the last test a process that ran Ray still holds what its Ray sessions, torch, gRPC and
# tantivy leave behind: about 50 native threads, Ray's GCS-client and gRPC event-engine threads
# among them, alive after ray.shutdown() (counted from /proc/self/task at the end of a full run).
# Tearing the interpreter down under them (module teardown, C++ static destructors) crashed a CI
# run after "1099 passed" (exit 139, no traceback: pytest's fault handler is off by then). So, as
# a forked worker does, the main pytest process and each xdist worker (whose results are sent by
# then) end once every atexit handler has run (Ray's shutdown, weakref finalizers such as the
# world model's loop stopper, pytest's own, logging's) and the streams are flushed, with pytest's
# exit status, without finalizing the interpreter. FICTIONWORLD_TEST_FINALIZE=1 keeps the normal
# teardown (to look for the crash).
_ENDING: dict = {}


def pytest_sessionstart(session):
    _ENDING["session"] = session


def _ends_without_teardown() -> bool:
    if os.environ.get("FICTIONWORLD_TEST_FINALIZE", "") not in ("", "0"):
        return False
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return True
    argv0 = sys.argv[0] if sys.argv else ""
    return os.path.basename(argv0) in ("pytest", "py.test", "__main__.py") and "pytest" in argv0


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    if _ends_without_teardown() and "session" in _ENDING:
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
