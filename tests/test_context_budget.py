"""The context budget for wide tasks (``EnvConfig.keep_observations``): the budget's count, and
the OpenAI agent eliding old tool outputs in the requests it sends."""

from __future__ import annotations

import json

import pytest
from memory_helpers import make_env

from fictionworld.env import EnvConfig, SearchEnv
from fictionworld.env.env import ELIDED_OBSERVATION
from fictionworld.rollouts.agents import make_agent
from fictionworld.rollouts.episode import run_episode
from fictionworld.testing.scripted_openai import Reply, ScriptedOpenAIServer


# -- the context budget ----------------------------------------------------------------------------
def budget_run(world, task, calls, **config) -> SearchEnv:
    """Steps ``calls`` (dict_memory arguments) until the episode ends; returns the env."""
    env = make_env(world, task, **config)
    for args in calls:
        *_, truncated, info = env.step({"name": "dict_memory", "arguments": args})
        if truncated:
            break
    return env


def counted(env: SearchEnv, k: int | None) -> int:
    """The context budget's count, recomputed from the messages (see EnvConfig)."""
    observations = [m for m in env.messages[2:] if m["role"] in ("tool", "user")]
    others = [m for m in env.messages if not any(m is o for o in observations)]
    n = sum(len(m.get("content") or "") for m in others)
    n += sum(
        len(c["function"]["arguments"]) + len(c["function"]["name"]) for m in others for c in m.get("tool_calls", ())
    )
    older = observations[:-k] if k is not None and len(observations) > k else []
    kept = observations[len(older) :]
    return n + sum(len(m["content"]) for m in kept) + len(older) * len(ELIDED_OBSERVATION)


def test_keep_observations_spares_the_context_budget(small_world, task):
    reads = [{"action": "add", "key": "page", "value": "p" * 4_000}] + [{"action": "retrieve", "key": "page"}] * 12
    full = budget_run(small_world, task, reads, max_context_chars=25_000)
    assert full.done and full.reason == "context budget" and full.turn < len(reads)
    assert full.context_chars == counted(full, None)
    kept = budget_run(small_world, task, reads, max_context_chars=25_000, keep_observations=2)
    assert not kept.done and kept.turn == len(reads) and kept.context_chars == counted(kept, 2) < 25_000
    # the env keeps every message whole: only the budget's count changes
    assert sum((m.get("content") or "").endswith("p" * 4_000) for m in kept.messages) == 12
    # non-observation messages (here, the agent's call arguments) always count whole
    writes = [{"action": "add", "key": f"row {i}", "value": "w" * 4_000} for i in range(12)]
    heavy = budget_run(small_world, task, writes, max_context_chars=25_000, keep_observations=1)
    assert heavy.done and heavy.reason == "context budget" and heavy.context_chars == counted(heavy, 1)


def test_keep_observations_count_with_text_tags_and_notes(small_world, task):
    """Observations are user messages in text-tag mode; the last-turn note counts with its one."""
    env = make_env(small_world, task, text_tags=True, keep_observations=3, max_turns=8)
    for i in range(7):
        obs, *_ = env.step(f"<search>company {i}</search> then <open>https://nowhere.example/{i}</open>")
        assert len(obs) == 2 and all(m["role"] == "user" for m in obs)
        assert env.context_chars == counted(env, 3)
    assert "one turn left" in env.messages[-1]["content"]


# -- the OpenAI agent ------------------------------------------------------------------------------
def _call(i: int, name: str, **args) -> dict:
    return {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def test_openai_agent_elides_old_tool_outputs(small_world, task):
    script = [Reply(tool_calls=[_call(0, "dict_memory", action="add", key="row", value="A | 1")])]
    script += [Reply(tool_calls=[_call(i, "search", query=f"company {i}")]) for i in range(1, 5)]
    script += [Reply(tool_calls=[_call(5, "dict_memory", action="retrieve_all"),
                                 _call(6, "search", query="city")])]  # fmt: skip
    script += [Reply(content=task.answer)]
    with ScriptedOpenAIServer(list(script)) as srv:
        agent = make_agent("openai", base_url=srv.base_url, model="scripted", keep_observations=2)
        assert agent.env_defaults["keep_observations"] == 2 and agent.config()["keep_observations"] == 2
        env = SearchEnv(small_world.web, EnvConfig(**(agent.env_defaults | {"tools": "memory"})))
        rec = run_episode(env, agent, task, seed=0)
        reqs = srv.requests
    assert rec["status"] == "done" and rec["reward"] == 1.0 and env.config.keep_observations == 2
    assert len(reqs) == 7 and "dict_memory" in {t["function"]["name"] for t in reqs[0]["tools"]}
    for n, req in enumerate(reqs):
        tools = [m for m in req["messages"] if m["role"] == "tool"]
        assert len(tools) == (n + 1 if n == 6 else n)  # the sixth reply called two tools
        kept = tools[-2:]
        assert all(m["content"] == ELIDED_OBSERVATION for m in tools[:-2])
        assert all(m["content"] != ELIDED_OBSERVATION for m in kept)
        assert [m["role"] for m in req["messages"][:2]] == ["system", "user"]
        assert req["messages"][1]["content"] == task.query
    last = reqs[-1]["messages"]
    assert last[-2]["tool_call_id"] == "c5" and last[-2]["content"].startswith("Memory: 1 entry")
    assert last[-1]["tool_call_id"] == "c6"
    # the env's own record keeps every output whole
    assert not any(m["content"] == ELIDED_OBSERVATION for m in rec["messages"] if m.get("content"))
    # without keep_observations the agent sends everything, as before
    with ScriptedOpenAIServer(list(script)) as srv:
        agent = make_agent("openai", base_url=srv.base_url)
        assert "keep_observations" not in agent.env_defaults and "keep_observations" not in agent.config()
        run_episode(SearchEnv(small_world.web, EnvConfig(**(agent.env_defaults | {"tools": "memory"}))), agent, task,
                    seed=0)  # fmt: skip
        assert not any(m["content"] == ELIDED_OBSERVATION for r in srv.requests for m in r["messages"])


def test_openai_agent_elides_in_tag_mode(small_world, task):
    script = [f"<search>company {i}</search>" for i in range(4)] + [f"<answer>{task.answer}</answer>"]
    with ScriptedOpenAIServer(script) as srv:
        agent = make_agent("openai", base_url=srv.base_url, tool_mode="tags", keep_observations=1)
        env = SearchEnv(small_world.web, EnvConfig(**agent.env_defaults))
        rec = run_episode(env, agent, task, seed=0)
        reqs = srv.requests
    assert rec["reward"] == 1.0
    users = [m["content"] for m in reqs[-1]["messages"] if m["role"] == "user"]
    assert users[0] == task.query and users[1:4] == [ELIDED_OBSERVATION] * 3 and users[4].startswith("[1] https://")


def test_openai_agent_checks_keep_observations():
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="keep_observations"):
            make_agent("openai", keep_observations=bad)
