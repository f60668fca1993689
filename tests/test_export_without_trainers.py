"""A trainer's folder is exported without the trainer installed: data is often prepared on a
machine that will never train (verl alone takes seconds to import and needs torch). The
exports run in a subprocess where importing any trainer package, or what only the trainers
bring (omegaconf, hydra), fails."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

import fictionworld as fw
from fictionworld.tasks.model import write_tasks

BLOCKED = ("verl", "skyrl_gym", "skyrl", "trl", "verifiers", "torch", "transformers", "vllm", "omegaconf", "hydra")

# A meta-path finder that refuses the trainer packages, then the CLI's exports.
_RUN = textwrap.dedent(
    """
    import importlib.abc, json, sys

    BLOCKED = set(json.loads(sys.argv[1]))

    class Refuse(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"{name} is not installed here (test)")
            return None

    sys.meta_path.insert(0, Refuse())
    from typer.testing import CliRunner
    from fictionworld.cli import app

    tasks, world, out = sys.argv[2:5]
    for target in ("verl", "skyrl", "trl"):
        r = CliRunner().invoke(app, ["export", target, tasks, "--world", world, "--out", f"{out}/{target}"])
        if r.exit_code:
            sys.exit(f"export {target}: exit {r.exit_code}\\n{r.output}\\n{r.exception!r}")
    print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)))
    """
)


@pytest.fixture(scope="module")
def task_file(world, saved_world, tmp_path_factory):
    path = tmp_path_factory.mktemp("tasks") / "tasks.jsonl"
    write_tasks(fw.make_tasks(world, 3, kind="mixed", seed=2), path)
    return path


def test_exports_need_no_trainer_package(task_file, saved_world, tmp_path):
    r = subprocess.run([sys.executable, "-c", _RUN, json.dumps(BLOCKED), str(task_file), str(saved_world), str(tmp_path)],
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:] + r.stdout[-2000:]
    assert json.loads(r.stdout.strip().splitlines()[-1]) == []  # none was imported
    verl, skyrl = tmp_path / "verl", tmp_path / "skyrl"
    for name in ("train.parquet", "val.parquet", "tools.yaml", "agent_loop.yaml", "train.sh"):
        assert (verl / name).stat().st_size > 0, name
    # the files name the adapters that import the trainers, where training runs
    assert "fictionworld.integrations.verl.FictionWorldTool" in (verl / "tools.yaml").read_text()
    assert "fictionworld.integrations.verl.FictionWorldAgentLoop" in (verl / "agent_loop.yaml").read_text()
    assert "pkg://fictionworld.integrations.verl" in (verl / "train.sh").read_text()
    script = (skyrl / "train.sh").read_text()
    assert "trainer.override_entrypoint=fictionworld.integrations.skyrl" in script
    assert "python3 -m skyrl.train.entrypoints.main_base" in script
    assert any((tmp_path / "trl").iterdir())


def test_the_refusal_itself_works(tmp_path):
    """The subprocess's finder does refuse: a script importing verl under it fails."""
    code = _RUN.split("from typer")[0] + "import verl\n"
    r = subprocess.run([sys.executable, "-c", code, json.dumps(BLOCKED)], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "not installed here" in r.stderr
