"""The notebooks' code runs (cells executed in order, in one namespace)."""

import json
import tempfile
from pathlib import Path

import pytest

import fictionworld as fw

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))


def marked(path: Path):
    """A notebook that trains (its code calls a trainer demo) is marked `trainers`."""
    code = "".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code")
    return pytest.param(path, id=path.name, marks=[pytest.mark.trainers] if "integrations.trl_demo" in code else [])


@pytest.mark.parametrize("path", [marked(p) for p in NOTEBOOKS])
def test_notebook_code_runs(path, capsys, tmp_path, monkeypatch):
    # A notebook's temporary directories (a world, a training run) go under pytest's, which
    # it cleans, not the system's, where each run of the suite left 4.6 MB behind.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    cells = json.loads(path.read_text())["cells"]
    ns: dict = {}
    for cell in cells:
        if cell["cell_type"] == "code":
            exec(compile("".join(cell["source"]), f"{path.name}", "exec"), ns)
    assert isinstance(ns["world"], fw.World)
    if "again" in ns:  # the tour saves and reloads its world
        assert ns["again"].world_hash == ns["world"].world_hash


def test_there_is_a_notebook():
    assert NOTEBOOKS
