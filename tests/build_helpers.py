"""What the sharded-build tests share: a small world spec in many blocks, its seed and queries."""

from __future__ import annotations

from fictionworld.spec import default_spec

__all__ = ["QUERIES", "SEED", "small_spec"]

SEED = 4  # a world with URL clashes: the join renames pages and orders the new URLs
QUERIES = ("festival", "river city", "people born in", "Films released in 1998", "company founded", "award 2004")


def small_spec(entities: int = 3000, block: int = 128, generation_block: int = 256):
    """A small world in many render blocks and many generation blocks (people, books, …)."""
    spec = default_spec(entities)
    return spec.model_copy(
        update={"web": spec.web.model_copy(update={"block": block}), "generation_block": generation_block}
    )
