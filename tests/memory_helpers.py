"""Helpers of the dict_memory and context-budget tests."""

from __future__ import annotations

from fictionworld.env import EnvConfig, SearchEnv


def make_env(world, task, **config) -> SearchEnv:
    """An env with the memory tool set, reset on ``task``."""
    env = SearchEnv(world.web, EnvConfig(**({"tools": "memory", "max_turns": 1_000} | config)))
    env.reset(task, seed=0)
    return env
