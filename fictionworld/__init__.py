"""fictionworld: consistent fictional worlds as training grounds for search agents.

>>> import fictionworld as fw
>>> world = fw.generate(seed=7, entities=600)
>>> fw.check_world(world)
[]
"""

from __future__ import annotations

from fictionworld.check import check_world
from fictionworld.determinism import check_determinism
from fictionworld.knobs import Knobs, Schedule, WebSpec
from fictionworld.records import Entity, Fact, Violation, ViolationKind
from fictionworld.spec import EntityTypeConfig, WorldSpec, default_spec
from fictionworld.storage import WorldFormatError, load_world
from fictionworld.world import FORMAT, World

__all__ = [
    "generate",
    "check_world",
    "check_determinism",
    "World",
    "WorldSpec",
    "EntityTypeConfig",
    "default_spec",
    "Entity",
    "Fact",
    "Violation",
    "ViolationKind",
    "WorldFormatError",
    "load_world",
    "FORMAT",
    "Knobs",
    "Schedule",
    "WebSpec",
    "__version__",
]
__version__ = "0.1.0"


def generate(seed: int, entities: int | None = None, spec: WorldSpec | None = None, progress=None) -> World:
    """Generate a world from ``spec`` (default: :func:`default_spec`), scaled to ``entities``
    if given. Same seed and spec, same world (and ``world_hash``) on any machine."""
    from generators import generate_world

    if spec is None:
        spec = default_spec(entities or 10_000)
    elif entities is not None:
        spec = spec.scaled(entities)
    return generate_world(spec, seed, progress=progress)
