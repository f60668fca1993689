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
