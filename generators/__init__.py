"""World generators: registered, versioned, run in causal order.

>>> from generators import generate_world
>>> from fictionworld.spec import default_spec
>>> world = generate_world(default_spec(600), seed=7)
>>> world.counts()["person"]
294
"""

from __future__ import annotations

from collections.abc import Callable

from generators import events, orgs, people, places, works  # noqa: F401  (registration)
from generators.base import GenContext, WorldGenerator, apply_namesakes, make, register, registered

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


def generate_world(spec, seed: int, progress: Callable[[str], None] | None = None):
    """Generate a :class:`fictionworld.World` from a spec and a seed (same inputs, same world)."""
    import gc

    from fictionworld.world import World

    ctx = GenContext(spec, seed)
    steps = plan(ctx.counts)
    gc_was_enabled = gc.isenabled()
    gc.disable()  # bulk allocation of millions of small objects: the cyclic GC only costs here
    try:
        for g in steps:
            if progress:
                progress(g.id)
            g.run(ctx)
        for t in ctx.types:
            if t != "person":  # the people generator keeps namesakes out of families itself
                apply_namesakes(ctx, t)
        _unique_websites(ctx)
        if progress:
            progress("assemble")
        entities, facts = ctx.finalize()
    finally:
        if gc_was_enabled:
            gc.enable()
    return World(
        spec=spec, seed=seed, entities=entities, facts=facts, generators={g.id: g.id.rsplit("-v", 1)[-1] for g in steps}
    )


def _unique_websites(ctx: GenContext) -> None:
    seen: set[str] = set()
    for d in ctx.types.values():
        urls = d.attrs.get("website")
        if urls is None:
            continue
        for i, u in enumerate(urls.tolist()):
            if u is None:
                continue
            base, k = u, 2
            while u in seen:
                head, _, tld = base.rpartition(".")
                u = f"{head}-{k}.{tld}"
                k += 1
            seen.add(u)
            urls[i] = u
