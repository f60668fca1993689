"""Reference trajectories for trainer adapters: the oracle's tool calls on a task (replayed
through an adapter with the same seed they must score 1.0) and seeded garbage (which must score
0 and never raise). Used by ``tests/test_verl.py``, ``tests/test_trl.py`` and
``benchmarks/bench_rollout.py --adapters``."""

from __future__ import annotations

import json
import random

from fictionworld.env import EnvConfig, SearchEnv
from fictionworld.env.trainer import TRAINER_ENV

__all__ = ["oracle_calls", "garbage_calls"]


def oracle_calls(world, task, *, seed: int = 0, knobs=None, tools: str = "basic") -> list[dict]:
    """``[{"name", "arguments"}, …]``: every call the oracle made in a :class:`SearchEnv`
    episode of ``task`` with ``seed``, its ``answer`` last. Faults are drawn from the seed and
    the call's position, so an adapter episode with the same seed and knobs sees the same
    observations. Raises if the oracle did not reach reward 1 (the world would be broken)."""
    from fictionworld.rollouts.agents.oracle import OracleAgent
    from fictionworld.rollouts.episode import run_episode

    env = SearchEnv(world.web, EnvConfig(tools=tools, knobs=knobs, **TRAINER_ENV))
    episode = run_episode(env, OracleAgent(world), task, seed=seed)
    if episode.scores is None or episode.scores.f1_by_item != 1.0:
        raise RuntimeError(f"the oracle did not solve {task.instance_id}: {episode.reason} {episode.scores}")
    calls = []
    for m in episode.messages:
        for tc in m.get("tool_calls") or ():
            calls.append({"name": tc["function"]["name"], "arguments": json.loads(tc["function"]["arguments"])})
    return calls


_JUNK = ("", " ", "null", "[]", "{", "<tool_call>", "\x00", "\ud800", "https://", "a" * 5000, "|a|b|\n|-|-|\n|x|y|")


def garbage_calls(seed: int, n: int = 25) -> list[dict]:
    """``n`` seeded calls that are wrong in every way a model gets them wrong: unknown tools,
    missing or mistyped arguments, broken JSON as arguments, absurd values, and answers that
    are not the table (an empty one, the question back, junk). None may earn reward."""
    rng = random.Random(seed)
    names = ("search", "open", "answer", "web_search", "nope", "", "SEARCH", "answer ")
    out = []
    for _ in range(n):
        name = rng.choice(names)
        junk = rng.choice(_JUNK)
        shape = rng.randrange(6)
        if shape == 0:
            args = {}
        elif shape == 1:
            args = {"query": rng.choice([None, 3, 2.5, ["x"], {"a": 1}, junk])}
        elif shape == 2:
            args = {"url": rng.choice([junk, 7, "ftp://x", "https://nowhere.invalid/" + junk[:20]])}
        elif shape == 3:
            args = {"text": rng.choice([junk, "", "I don't know", "| Name |\n|---|\n| ? |"])}
        elif shape == 4:
            args = junk  # arguments that are not a JSON object
        else:
            args = {"page": rng.choice(["two", -1, 10**30]), "query": junk}
        out.append({"name": name, "arguments": args})
    return out
