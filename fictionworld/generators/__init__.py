"""World generators: registered, versioned, run in causal order.

>>> from generators import generate_world
>>> from fictionworld.spec import default_spec
>>> world = generate_world(default_spec(600), seed=7)
>>> world.counts()["person"]
294
"""

from __future__ import annotations

from collections.abc import Callable

from fictionworld.generators import events, orgs, people, places, works  # noqa: F401  (registration)
from fictionworld.generators.base import GenContext, WorldGenerator, make, register, registered

__all__ = ["generate_world", "plan", "make", "register", "registered", "GenContext", "WorldGenerator"]


def plan(types: set[str] | dict) -> list[WorldGenerator]:
    """Generators needed for ``types``, in causal order (stable: registry order breaks ties)."""
    todo = [g for g in registered() if any(t in types for t in g.produces)]
    done: set[str] = set()
    ordered: list[WorldGenerator] = []
    while todo:
        for g in todo:
            waits = [t for t in g.after if t in types and t not in done and t not in g.produces]
            if not waits:
                ordered.append(g)
                done.update(g.produces)
                todo.remove(g)
                break
        else:
            raise RuntimeError(f"circular generator dependencies among {[g.id for g in todo]}")
    return ordered


def generate_world(spec, seed: int, progress: Callable[[str], None] | None = None, tasks=None):
    """Generate a :class:`fictionworld.World` from a spec and a seed (same inputs, same world).

    The generators run as tasks over blocks of entities (fictionworld/generators/blocks.py): here, one
    after the other, or on ``tasks`` (a :class:`fictionworld.executors.LocalTasks` or
    ``RayTasks`` that has been started); the world is the same either way."""
    import gc

    from fictionworld.generators.blocks import generate_blocks
    from fictionworld.world import World

    gc_was_enabled = gc.isenabled()
    gc.disable()  # bulk allocation of millions of small objects: the cyclic GC only costs here
    try:
        entities, facts, steps = generate_blocks(spec, seed, tasks=tasks, progress=progress)
    finally:
        if gc_was_enabled:
            gc.enable()
    return World(
        spec=spec, seed=seed, entities=entities, facts=facts, generators={g.id: g.id.rsplit("-v", 1)[-1] for g in steps}
    )
