"""A trainer's folder is exported without the trainer installed: data is often prepared on a
machine that will never train (verl alone takes seconds to import and needs torch). The
exports run in a subprocess where importing any trainer package, or what only the trainers
bring (omegaconf, hydra), fails."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

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
    said = {}
    for target in ("verl", "skyrl", "trl"):
        for extra in ([], ["--val-fraction", "0"]):
            name = target + ("_all" if extra else "")
            r = CliRunner().invoke(app, ["export", target, tasks, "--world", world, "--out", f"{out}/{name}", *extra])
            if r.exit_code:
                sys.exit(f"export {name}: exit {r.exit_code}\\n{r.output}\\n{r.exception!r}")
            said[name] = r.stderr
    print(json.dumps({"said": said, "imported": sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)}))
    """
)


@pytest.fixture(scope="module")
def task_file(world, saved_world, tmp_path_factory):
    path = tmp_path_factory.mktemp("tasks") / "tasks.jsonl"
    write_tasks(fw.make_tasks(world, 3, kind="mixed", seed=2), path)
    return path


def script_args(script: Path, module: str) -> list[str]:
    """The arguments ``train.sh`` gives ``python3 -m module``, as bash would pass them."""
    text = script.read_text().replace("\\\n", " ")
    line = next(x for x in text.splitlines() if f"-m {module}" in x)
    args = shlex.split(line.replace('"$HERE"', shlex.quote(str(script.parent))))
    return args[args.index(module) + 1 : -1]


@pytest.fixture(scope="module")
def exported(task_file, saved_world, tmp_path_factory):
    """Each trainer's folder exported where no trainer package can be imported: with the
    defaults, and with ``--val-fraction 0`` (``NAME_all``)."""
    out = tmp_path_factory.mktemp("exports")
    r = subprocess.run([sys.executable, "-c", _RUN, json.dumps(BLOCKED), str(task_file), str(saved_world), str(out)],
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:] + r.stdout[-2000:]
    return out, json.loads(r.stdout.strip().splitlines()[-1])


def test_exports_need_no_trainer_package(exported):
    tmp_path, result = exported
    assert result["imported"] == []  # none was imported
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


def test_launch_scripts_log_to_the_console_unless_told(exported):
    """wandb without a login fails a run at its start: both scripts default to the console
    logger, and the script's own arguments still win (they come last)."""
    tmp_path, _ = exported
    verl = script_args(tmp_path / "verl" / "train.sh", "verl.trainer.main_ppo")
    assert 'trainer.logger=["console"]' in verl and not any("wandb" in a for a in verl)
    skyrl = script_args(tmp_path / "skyrl" / "train.sh", "skyrl.train.entrypoints.main_base")
    assert "trainer.logger=console" in skyrl


def test_export_verl_says_what_its_trainer_needs(exported):
    """Here transfer_queue and vllm cannot be imported: ``export verl`` still exits 0, with one
    warning line naming them and the install for the GPU machine; the other exports say nothing."""
    _, result = exported
    lines = [x for x in result["said"]["verl"].splitlines() if x.startswith("warning:")]
    assert len(lines) == 1 and "transfer_queue and vllm" in lines[0] and 'pip install "verl[vllm]==0.9.1"' in lines[0]
    assert not any("warning" in result["said"][t] for t in ("skyrl", "trl"))


def test_train_sh_warns_before_starting_verl_without_its_packages(exported, tmp_path):
    """The script itself looks the packages up (without importing them) and goes on: a stand-in
    ``python3`` on PATH runs the lookup with this interpreter and prints what ``-m`` receives."""
    from fictionworld.integrations.verl_export import missing_trainer_packages

    out, _ = exported
    stub = tmp_path / "bin" / "python3"
    stub.parent.mkdir()
    stub.write_text(f'#!/usr/bin/env bash\nif [ "$1" = -m ]; then shift; printf "%s\\n" "$@"; exit 0; fi\n'
                    f'exec {shlex.quote(sys.executable)} "$@"\n')  # fmt: skip
    stub.chmod(0o755)
    env = dict(os.environ, PATH=f"{stub.parent}{os.pathsep}{os.environ['PATH']}")
    r = subprocess.run(["bash", str(out / "verl" / "train.sh"), "trainer.logger=[wandb]"], capture_output=True,
                       text=True, env=env, timeout=60)  # fmt: skip
    assert r.returncode == 0, r.stderr
    args = r.stdout.splitlines()
    assert args[0] == "verl.trainer.main_ppo" and args[-1] == "trainer.logger=[wandb]"  # given last: it wins
    assert args[1:-1] == script_args(out / "verl" / "train.sh", "verl.trainer.main_ppo")
    warned = [x for x in r.stderr.splitlines() if "warning" in x]
    assert missing_trainer_packages(), "this test needs a Python without transfer_queue or vllm"
    assert len(warned) == 1 and 'pip install "verl[vllm]==0.9.1"' in warned[0]


def test_val_fraction_zero_trains_on_every_task(exported):
    """``--val-fraction 0``: every task trains. verl builds a validation set whatever happens
    (an empty file is a zero batch size), so its script names the training file there and turns
    validation off; SkyRL's and TRL's folders keep an empty val.parquet."""
    import pyarrow.parquet as pq

    out, _ = exported
    verl = out / "verl_all"
    assert pq.read_table(verl / "train.parquet").num_rows == 3 and not (verl / "val.parquet").exists()
    args = script_args(verl / "train.sh", "verl.trainer.main_ppo")
    assert f"data.val_files={verl / 'train.parquet'}" in args and "trainer.val_before_train=False" in args
    for target in ("skyrl_all", "trl_all"):
        assert pq.read_table(out / target / "train.parquet").num_rows == 3
        assert pq.read_table(out / target / "val.parquet").num_rows == 0


def test_the_refusal_itself_works(tmp_path):
    """The subprocess's finder does refuse: a script importing verl under it fails."""
    code = _RUN.split("from typer")[0] + "import verl\n"
    r = subprocess.run([sys.executable, "-c", code, json.dumps(BLOCKED)], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "not installed here" in r.stderr
