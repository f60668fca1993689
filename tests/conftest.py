from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import fictionworld as fw  # noqa: E402


@pytest.fixture(scope="session")
def world() -> fw.World:
    """A valid default-spec world, shared read-only by many tests."""
    return fw.generate(seed=11, entities=2_000)


@pytest.fixture(scope="session")
def saved_world(world, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("worlds") / "w"
    world.save(path)
    return path


REQUIRE_EXTRAS = "FICTIONWORLD_REQUIRE_EXTRAS"  # .ci/run sets it: the [test] extra installs verl, trl, torch


def require(module: str):
    """The optional package ``module`` a test file needs: skipped without it on a machine that
    installed only the core, but an import error where ``FICTIONWORLD_REQUIRE_EXTRAS=1`` (CI,
    whose install includes every extra the tests use), so CI can never pass by skipping."""
    import importlib
    import os

    if os.environ.get(REQUIRE_EXTRAS, "") not in ("", "0"):
        return importlib.import_module(module)
    return pytest.importorskip(module)
