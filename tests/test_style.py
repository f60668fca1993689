"""The code's style is checked, not hoped for (issue 75): `ruff format` is the formatter and
`ruff check` the linter, both configured in pyproject.toml, both run by the suite (so by CI)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.mark.cli  # (ruff in a subprocess)
@pytest.mark.parametrize("command", [["format", "--check"], ["check"]], ids=["format", "lint"])
def test_ruff_passes_on_the_repository(command):
    r = subprocess.run([sys.executable, "-m", "ruff", *command, "."], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)  # fmt: skip
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
