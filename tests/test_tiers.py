"""The suite's tiers (tests/conftest.py, CONTRIBUTING.md): what a test does marks it slow, a test
that starts Ray unmarked fails, the Hypothesis profile follows the tier, and the fast tier still
touches every package."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.cli  # pytest in subprocesses

TESTS = Path(__file__).resolve().parent

PROBE = """
import pytest
from hypothesis import settings


def test_plain():
    assert settings.get_current_profile_name() == {profile!r}
    if {profile!r} == "ci":  # a failure in CI reproduces: the same examples, no database
        assert settings.default.derandomize and settings.default.database is None


@pytest.mark.big
def test_big():
    pass


@pytest.mark.trainers
def test_trainers():
    pass


def test_starts_ray_unmarked():
    import ray

    ray.init(num_cpus=1, include_dashboard=False, logging_level="ERROR")
    ray.shutdown()
"""

# What the fast tier must still run: a module for each part of the package.
FAST_TIER_TOUCHES = {
    "generate": "tests/test_generate.py",
    "checks": "tests/test_check.py",
    "web": "tests/test_web_search.py",
    "pages": "tests/test_web_pages.py",
    "tasks": "tests/test_tasks.py",
    "strict scorer": "tests/test_scoring_strict.py",
    "compat scorer": "tests/test_scoring_compat.py",
    "env": "tests/test_env.py",
    "a rollout (episodes in process)": "tests/test_agents.py",
    "an adapter round trip (SkyRL's BaseTextEnv)": "tests/test_skyrl.py",
}


def probe(tmp_path: Path, *args: str, profile: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_probe.py").write_text(PROBE.format(profile=profile))
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_TESTRUNUID", "RAY_TMPDIR")
    }
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "conftest", "-p", "no:cacheprovider",
                           "--rootdir", str(tmp_path), "-c", os.devnull, "-W", "ignore::pytest.PytestUnknownMarkWarning",
                           *args, str(tmp_path / "test_probe.py")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)  # fmt: skip


@pytest.mark.ray  # the probe starts Ray (in a subprocess)
def test_the_fast_tier_leaves_out_what_is_marked_and_fails_a_test_that_starts_ray_unmarked(tmp_path):
    r = probe(tmp_path, "-m", "not slow", profile="dev")
    out = r.stdout + r.stderr
    assert "2 passed, 2 deselected, 1 error" in out, out  # (its call passed; its teardown failed)
    assert "test_starts_ray_unmarked" in out and "this test started Ray: mark it `ray`" in out, out
    assert r.returncode == 1


def test_the_whole_suite_runs_the_ci_profile(tmp_path):
    r = probe(tmp_path, "-k", "plain or big or trainers", profile="ci")
    assert "3 passed" in r.stdout, r.stdout + r.stderr


def test_the_fast_tier_touches_every_package():
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "not slow", "-n", "0",
                        "-p", "no:cacheprovider", *sorted(set(FAST_TIER_TOUCHES.values()))],
                       cwd=TESTS.parent, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    modules = {line.split("::")[0] for line in r.stdout.splitlines() if "::" in line}
    missing = {part: m for part, m in FAST_TIER_TOUCHES.items() if m not in modules}
    assert not missing, f"the fast tier no longer runs {missing}"
    counted = re.search(r"(\d+)/(\d+) tests collected \((\d+) deselected\)", r.stdout)
    assert counted, r.stdout[-500:]
    fast, total, slow = map(int, counted.groups())
    assert fast + slow == total and 0 < slow  # (test_tasks.py runs the CLI in a subprocess too)
