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
