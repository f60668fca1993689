"""Difficulty presets: a curriculum from tiny tables to WideSearch's published scale.

WideSearch (arXiv 2508.07999) gold tables average 938.6 cells for its English tasks and 2001.2
for its Chinese ones; a human annotator needed about 2.3 hours and 44+ pages per task.
``widesearch`` matches the English shape (mean cells ≥ 900: tens to several hundred rows, 6–10
columns) on a world of :data:`WORLD_ENTITIES` ``["widesearch"]`` entities or more.
"""

from __future__ import annotations

from fictionworld.tasks.families import WIDE_FAMILIES
from fictionworld.tasks.wide import TaskKnobs

__all__ = ["PRESETS", "WORLD_ENTITIES", "WIDESEARCH_PUBLISHED", "ENV_BUDGETS", "preset_knobs"]

PRESETS: dict[str, TaskKnobs] = {
    "tiny": TaskKnobs(rows_min=3, rows_max=8, columns=3, hops=1, families=WIDE_FAMILIES, preset="tiny"),
    "small": TaskKnobs(rows_min=3, rows_max=30, columns=4, hops=2, families=WIDE_FAMILIES, preset="small"),
    "medium": TaskKnobs(
        rows_min=20, rows_max=120, columns=5, columns_max=7, hops=2, families=WIDE_FAMILIES, preset="medium"
    ),  # fmt: skip
    "widesearch": TaskKnobs(
        rows_min=40, rows_max=400, columns=6, columns_max=10, hops=2, families=WIDE_FAMILIES, preset="widesearch"
    ),  # fmt: skip
}
# The smallest world (entities, default spec) whose directories hold groups big enough for the
# preset's row range; smaller worlds give fewer tasks per draw or none.
WORLD_ENTITIES = {"tiny": 1_000, "small": 2_000, "medium": 10_000, "widesearch": 30_000}

# Episode budgets (EnvConfig fields) that make a preset's tasks feasible for an LLM agent: the
# memory tool, turns for the explorer's largest measured call count at 5 calls per turn (it
# needed up to ~2,100 calls on widesearch tasks), and a context that counts only the last 20
# observations (older page text is elided; rows live in dict_memory).
ENV_BUDGETS: dict[str, dict] = {
    "tiny": {"tools": "memory", "max_turns": 30},
    "small": {"tools": "memory", "max_turns": 60},
    "medium": {"tools": "memory", "max_turns": 200, "keep_observations": 20},
    "widesearch": {"tools": "memory", "max_turns": 600, "keep_observations": 20, "max_context_chars": 1_000_000},
}

# WideSearch's published figures (paper and project page), printed by ``tasks --stats``.
WIDESEARCH_PUBLISHED = {
    "tasks": "200 (100 English, 100 Chinese)",
    "domains": "18",
    "mean cells per task": "938.6 (English), 2001.2 (Chinese)",
    "human time per task": "about 2.3 h",
    "pages consulted per task": "44+",
}


def preset_knobs(name: str, **overrides) -> TaskKnobs:
    """A preset's knobs with some fields changed (validated again)."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; presets: {', '.join(PRESETS)}")
    return TaskKnobs.model_validate(PRESETS[name].model_dump() | overrides)
