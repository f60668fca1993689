"""The trainer extras install what was tested: ``pip install -e ".[trl]"`` with an open range
took the newest torch and transformers (gigabytes of CUDA wheels, never run here). Each extra
pins the trainer, torch and transformers exactly, to the releases this suite runs against
and the README names."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
PINNED = {"verl": ("verl", "torch", "transformers"), "trl": ("trl", "torch", "transformers")}


def extra(name: str) -> dict[str, Requirement]:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"][name]
    return {r.name: r for r in map(Requirement, deps)}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_trainer_extras_pin_the_tested_releases(name):
    reqs = extra(name)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for package in PINNED[name]:
        spec = list(reqs[package].specifier)
        assert len(spec) == 1 and spec[0].operator == "==", f"[{name}] {package}: {reqs[package]} is not one release"
        pinned = Version(spec[0].version)
        try:
            installed = Version(version(package))
        except PackageNotFoundError:
            pytest.skip(f"{package} is not installed here")
        assert installed.public == pinned.public, f"[{name}] pins {package} {pinned}, the tests run {installed}"
        assert re.search(rf"\b{package} {re.escape(str(pinned))}\b", readme), f"README does not name {package} {pinned}"


def test_the_test_install_takes_torch_as_the_extras_do():
    assert extra("test")["torch"].specifier == extra("trl")["torch"].specifier == extra("verl")["torch"].specifier


# -- the lean core (issue 75): what `pip install fictionworld` brings, and what says it is missing --
OPTIONAL = {"fastapi", "uvicorn", "mcp", "pandas", "dateparser", "matplotlib"}


def test_the_core_install_leaves_serving_compat_and_plots_to_extras():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = {Requirement(r).name for r in project["dependencies"]}
    assert not core & OPTIONAL, core & OPTIONAL
    from fictionworld.extras import EXTRAS

    def installs(name: str) -> set[str]:  # what an extra installs, through the extras it names
        out = set()
        for r in extra(name).values():
            out |= set().union(*(installs(x) for x in r.extras)) if r.name == "fictionworld" else {r.name}
        return out

    for name, modules in EXTRAS.items():
        assert set(modules) <= installs(name), (name, modules, installs(name))
    assert OPTIONAL <= installs("all") and OPTIONAL <= installs("test")


_LEAN = r"""
import importlib.abc, sys
BLOCKED = set(sys.argv[2].split(","))

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (not installed here)", name=name)

sys.meta_path.insert(0, Refuse())
import pathlib
import fictionworld as fw
from fictionworld.env import EnvConfig, SearchEnv
from fictionworld.extras import MissingExtra
from fictionworld.rollouts.agents.oracle import OracleAgent
from fictionworld.rollouts.episode import run_episode
from fictionworld.tasks.model import write_tasks

d = pathlib.Path(sys.argv[1])
world = fw.generate(seed=3, entities=400)
world.save(d / "w")
tasks = fw.make_tasks(world, 2, kind="deep", seed=1)
write_tasks(tasks, d / "tasks.jsonl")
ep = run_episode(SearchEnv(world.web, EnvConfig()), OracleAgent(world), tasks[0], seed=0)
assert ep.scores.score == 1.0, ep
assert fw.score(tasks[0].gold.markdown(), tasks[0]).score == 1.0
try:
    fw.score(tasks[0].gold.markdown(), tasks[0], mode="compat")
    raise SystemExit("the compat scorer ran without pandas")
except MissingExtra as e:
    print("API:", e)
from fictionworld.integrations.verl_export import export_verl
export_verl(tasks, d / "w", d / "verl")
from typer.testing import CliRunner
from fictionworld.cli import app
(d / "resp.jsonl").write_text("")
for args in (["serve", str(d / "w")], ["mcp", str(d / "w")], ["train-demo", "--dir", str(d / "td")],
             ["score", "--responses", str(d / "resp.jsonl"), "--tasks", str(d / "tasks.jsonl"), "--mode", "compat"]):
    r = CliRunner().invoke(app, args)
    print("CLI", args[0], r.exit_code, repr(r.output))
"""


@pytest.mark.cli  # (a Python process with the optional packages refused)
def test_without_the_extras_the_core_runs_and_each_part_names_its_extra(tmp_path):
    """With fastapi, uvicorn, mcp, pandas, dateparser and matplotlib refused at import: a world,
    its web, tasks, an episode, strict scores and the verl export all work; `serve`, `mcp`,
    `score --mode compat`, `train-demo` and the compat scorer's API each stop before any work with
    one line naming the extra to install."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", _LEAN, str(tmp_path), ",".join(sorted(OPTIONAL))],
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    lines = r.stdout.splitlines()
    assert any(x.startswith("API:") and "pip install 'fictionworld[compat]'" in x for x in lines), lines
    want = {"serve": "serve", "mcp": "serve", "train-demo": "plots", "score": "compat"}
    for command, name in want.items():
        (line,) = [x for x in lines if x.startswith(f"CLI {command} ")]
        code, output = line.split(" ", 3)[2:]
        assert code == "2" and f"pip install 'fictionworld[{name}]'" in output, line
        assert output.count("\\n") <= 1, line  # one line
    assert (tmp_path / "verl" / "train.parquet").is_file()
