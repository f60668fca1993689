"""The suite's own ending (conftest.py, "the end of a run"): a pytest run of this project exits
with pytest's status after every atexit handler, without finalizing the interpreter."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.cli  # pytest in subprocesses

TESTS = Path(__file__).resolve().parent

BODY = """
import atexit, pathlib

OUT = pathlib.Path({out!r})

class Finalized:
    def __init__(self, path):
        self.path, self.open = path, open  # (builtins are gone by then)

    def __del__(self):  # runs in the interpreter's teardown, as module globals are cleared
        with self.open(self.path, "w") as f:
            f.write("yes")

KEEP = Finalized(str(OUT / "finalized"))
atexit.register(lambda: (OUT / "atexit").write_text("yes"))

def test_one():
    assert {verdict}
"""


def run(tmp_path: Path, verdict: str, **env) -> tuple[int, set[str]]:
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "test_probe.py").write_text(BODY.format(out=str(out), verdict=verdict))
    e = {k: v for k, v in os.environ.items() if k not in ("PYTEST_XDIST_WORKER", "FICTIONWORLD_TEST_FINALIZE")}
    e["PYTHONPATH"] = os.pathsep.join([str(TESTS), e.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "conftest", "-p", "no:cacheprovider",
                        "--rootdir", str(tmp_path), "-c", os.devnull, str(tmp_path / "test_probe.py")],
                       cwd=tmp_path, env=e | env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert ("1 passed" if verdict == "True" else "1 failed") in r.stdout, r.stdout + r.stderr
    return r.returncode, {p.name for p in out.iterdir()}


@pytest.mark.parametrize("verdict, status", [("True", 0), ("False", 1)])
def test_a_run_ends_with_pytests_status_after_the_atexit_handlers_without_teardown(tmp_path, verdict, status):
    assert run(tmp_path, verdict) == (status, {"atexit"})


def test_the_normal_teardown_when_asked(tmp_path):
    assert run(tmp_path, "False", FICTIONWORLD_TEST_FINALIZE="1") == (1, {"atexit", "finalized"})
