"""What the distribution installs: one import namespace, ``fictionworld`` (issue 75), built as a
wheel the way pip builds it, and nothing of the repository's own tooling."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.mark.cli  # (builds a wheel in a subprocess)
def test_the_wheel_installs_one_namespace(tmp_path):
    """Top-level modules of the built wheel: ``fictionworld`` and the verifiers taskset shim
    ``fictionworld_verifiers`` (verifiers imports a taskset id as a top-level module: it cannot
    name ``fictionworld.integrations.verifiers``). ``generators`` and ``rollout`` were top-level
    once, and are other people's distributions on PyPI."""
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                        "-w", str(tmp_path), str(ROOT)], capture_output=True, text=True, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    (wheel,) = tmp_path.glob("fictionworld-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith((".dist-info", ".data"))}
    assert top == {"fictionworld", "fictionworld_verifiers"}, top
    assert "fictionworld/generators/__init__.py" in names and "fictionworld/rollouts/pool.py" in names
    assert not any(n.startswith(("fictionworld/tests", "tests/", "benchmarks/")) for n in names)
