"""SearchEnv: opening messages, tools in OpenAI format, malformed calls as observations,
budgets, per-episode knobs, and the strict-scored reward."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import examples

from fictionworld.env import TOOLS, EnvConfig, SearchEnv, parse_action
from fictionworld.knobs import Knobs, Schedule
from fictionworld.tasks.generate import generate_tasks


@pytest.fixture(scope="module")
def tasks(world):
    return generate_tasks(world, 6, kind="mixed", seed=4)


@pytest.fixture(scope="module")
def env(world):
    return SearchEnv(world.web, EnvConfig(tools="all", max_turns=50))


def call(name, **args):
    return {"name": name, "arguments": args}


def test_reset_gives_system_prompt_and_task(env, tasks):
    messages, info = env.reset(tasks[0], seed=1)
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[1]["content"] == tasks[0].query
    for name in ("search(", "open(", "web_search(", "web_extractor(", "answer("):
        assert name in messages[0]["content"]
    assert "```markdown" in messages[0]["content"]
    assert {t["function"]["name"] for t in info["tools"]} == {"search", "open", "web_search", "web_extractor",
                                                              "dict_memory", "answer"}  # fmt: skip


def test_tool_schemas_are_openai_functions():
    for name, t in TOOLS.items():
        assert t["type"] == "function" and t["function"]["name"] == name
        p = t["function"]["parameters"]
        assert p["type"] == "object" and set(p["required"]) <= set(p["properties"])
        json.dumps(t)
    assert TOOLS["web_search"]["function"]["parameters"]["properties"]["queries"]["type"] == "array"


def test_perfect_answer_ends_with_reward_one(env, tasks):
    env.reset(tasks[0], seed=0)
    obs, r, term, trunc, info = env.step(call("answer", text=tasks[0].answer))
    assert (obs, r, term, trunc) == ([], 1.0, True, False)
    assert info["scores"]["score"] == 1.0 and info["reason"] == "answer"
    # a step after the end is an error observation, not an exception; the episode stays as it was
    n = len(env.messages)
    obs, r, term, trunc, info = env.step(call("search", query="x"))
    assert obs[0]["content"].startswith("Error: the episode is over") and "reset()" in obs[0]["content"]
    assert (r, term, trunc, info["reason"], len(env.messages)) == (0.0, True, False, "answer", n)
    assert env.end("late") == 1.0 and env.reason == "answer"


def test_the_reward_config_chooses_abstention_aware_scoring(world):
    """RewardConfig(abstention=True): the env scores blank value cells as abstentions (out of item
    precision's denominator), so an answer that leaves what it did not read blank earns more than
    the same answer with a wrong guess there; the default (WideSearch's metric) pays both alike."""
    from fictionworld.scoring import RewardConfig

    task = generate_tasks(world, 1, kind="wide", seed=4)[0]
    lines = task.answer.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("|"))
    first = header + 2  # the first row, after the separator
    cells = lines[first].split("|")
    blank, wrong = list(cells), list(cells)
    for j in range(2, len(cells) - 1):  # every value cell of the row (the first column is its key)
        blank[j], wrong[j] = " N/A ", " Zzyzx Qwv 1234 "
    rewards = {}
    for abstention in (False, True):
        env = SearchEnv(world.web, EnvConfig(reward=RewardConfig(abstention=abstention)))
        for name, row in (("blank", blank), ("wrong", wrong)):
            env.reset(task, seed=0)
            text = "\n".join(lines[:first] + ["|".join(row)] + lines[first + 1 :])
            rewards[abstention, name] = env.step(call("answer", text=text))[1]
    assert rewards[False, "blank"] == rewards[False, "wrong"] < 1.0
    assert rewards[True, "wrong"] == rewards[False, "wrong"] < rewards[True, "blank"] < 1.0


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        (call("bogus", q=1), "unknown tool 'bogus'"),
        ({"name": "open", "arguments": "{bad json"}, "not valid JSON"),
        ({"name": "open", "arguments": "[1, 2]"}, "must be a JSON object"),
        (call("search"), "needs the argument 'query'"),
        (call("search", query=7), "must be a string"),
        (call("search", query="x" * 5000), "too long"),
        (call("web_search", queries=[]), "list of 1 to 5"),
        (call("web_search", queries=["a"] * 9), "list of 1 to 5"),
        (call("open", url="not a url"), "malformed URL"),
        (call("search", query="   "), "empty query"),
        (42, "unreadable action"),
        ({"tool_calls": [{"id": "x", "function": {}}], "content": None}, "without a function name"),
        ("<tool_call>{not json}</tool_call>", "<tool_call> is not valid JSON"),
    ],
)
def test_malformed_calls_become_error_observations(env, tasks, action, expected):
    env.reset(tasks[0], seed=0)
    obs, r, term, trunc, info = env.step(action)
    assert not term and not trunc and r == 0.0
    assert obs[0]["content"].startswith("Error:") and expected in obs[0]["content"]
    # the agent can go on after an error
    obs, *_ = env.step(call("search", query="company"))
    assert "[1] https://" in obs[0]["content"]


def test_native_calls_answer_as_tool_messages(env, tasks, world):
    env.reset(tasks[0], seed=0)
    url = world.web.article_url_of(world.entities.ids[0])
    action = {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [
            {"id": "a1", "type": "function", "function": {"name": "search", "arguments": '{"query": "company"}'}},
            {
                "id": "a2",
                "type": "function",
                "function": {"name": "web_extractor", "arguments": json.dumps({"url": url})},
            },
        ],
    }
    obs, *_ = env.step(action)
    assert [(m["role"], m["tool_call_id"]) for m in obs] == [("tool", "a1"), ("tool", "a2")]
    assert obs[1]["content"].startswith("# " + world.entity(world.entities.ids[0]).name)
    assert env.messages[2] == {"role": "assistant", "content": "Let me look.", "tool_calls": action["tool_calls"]}


def test_text_tags_and_web_search(env, tasks):
    env.reset(tasks[0], seed=0)
    obs, *_ = env.step("I will search. <search>company founded</search>")
    assert obs[0]["role"] == "user" and "[1] https://" in obs[0]["content"]
    obs, *_ = env.step(call("web_search", queries=["company", "city"]))
    assert "## Results for 'company'" in obs[0]["content"] and "## Results for 'city'" in obs[0]["content"]
    obs, r, term, *_ = env.step("<answer>" + tasks[0].answer + "</answer>")
    assert term and r == 1.0


def test_too_many_calls_in_one_turn(world, tasks):
    env = SearchEnv(world.web, EnvConfig(max_calls_per_turn=2))
    env.reset(tasks[0], seed=0)
    obs, *_ = env.step({"tool_calls": [call("search", query=f"q{i}") for i in range(3)], "content": None})
    assert len(obs) == 3 and "too many tool calls" in obs[2]["content"]


def test_turn_budget_truncates_and_scores_the_last_text(world, tasks):
    env = SearchEnv(world.web, EnvConfig(max_turns=3))
    env.reset(tasks[0], seed=0)
    env.step(call("search", query="a"))
    obs, *_ = env.step({"role": "assistant", "content": tasks[0].answer, "tool_calls": [call("search", query="b")]})
    assert "one turn left" in obs[0]["content"]
    obs, r, term, trunc, info = env.step(call("search", query="c"))
    assert trunc and not term and info["reason"] == "turn budget"
    assert r == 1.0  # the table the agent wrote counts as what it answered
    env.reset(tasks[0], seed=0)
    for q in "abc":
        *_, trunc, info = env.step(call("search", query=q))
    assert trunc and info["scores"]["msg"] == "no answer" and env.reward == 0.0


def test_context_budget(world, tasks):
    env = SearchEnv(world.web, EnvConfig(max_context_chars=3_000))
    env.reset(tasks[0], seed=0)
    truncated = False
    for _ in range(10):
        *_, truncated, info = env.step(call("search", query="company city"))
        if truncated:
            break
    assert truncated and info["reason"] == "context budget"


def test_observation_cap(world, tasks):
    env = SearchEnv(world.web, EnvConfig(max_observation_chars=300))
    env.reset(tasks[0], seed=0)
    obs, *_ = env.step(call("search", query="company"))
    assert len(obs[0]["content"]) < 400 and "cut at 300" in obs[0]["content"]


def test_knobs_per_episode_and_schedule(world, tasks):
    env = SearchEnv(world.web, EnvConfig(knobs=Knobs(fault_rate=1.0, fault_kinds=("rate_limited",))))
    env.reset(tasks[0], seed=0)
    obs, *_ = env.step(call("search", query="company"))
    assert "429" in obs[0]["content"] and env.steps[-1].fault == "rate_limited"
    # an explicit knob set for one episode overrides the config
    env.reset(tasks[0], seed=0, knobs=Knobs())
    obs, *_ = env.step(call("search", query="company"))
    assert obs[0]["content"].startswith("[1]")
    sched = Schedule(start=Knobs(), end=Knobs(fault_rate=1.0), steps=10)
    env = SearchEnv(world.web, EnvConfig(schedule=sched))
    _, info = env.reset(tasks[0], seed=0, step=0)
    assert info["knobs"]["fault_rate"] == 0.0
    _, info = env.reset(tasks[0], seed=0, step=10)
    assert info["knobs"]["fault_rate"] == 1.0


def test_same_seed_same_faults(world, tasks):
    def faults(seed):
        env = SearchEnv(world.web, EnvConfig(knobs=Knobs(fault_rate=0.5)))
        env.reset(tasks[0], seed=seed)
        return [env.step(call("search", query=f"q{i}"))[0][0]["content"][:20] for i in range(12)]

    assert faults(3) == faults(3)
    assert faults(3) != faults(4)


actions = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=200),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.sampled_from(["name", "arguments", "function", "tool_calls", "content", "role", "id", "query", "url"]),
        children, max_size=4),
    max_leaves=12,
)  # fmt: skip


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(action=actions)
def test_no_action_raises(env, tasks, action):
    env.reset(tasks[1], seed=0)
    obs, r, term, trunc, info = env.step(action)
    assert isinstance(obs, list) and all(isinstance(m["content"], str) for m in obs)
    assert 0.0 <= r <= 1.0


def test_parse_action_forms():
    msg, calls = parse_action({"function": {"name": "open", "arguments": {"url": "u"}}}, allowed=("open",),
                              max_arg_chars=100, turn=1)  # fmt: skip
    assert calls[0].arguments == {"url": "u"} and msg["tool_calls"][0]["function"]["arguments"] == '{"url": "u"}'
    _, calls = parse_action("no tools here", allowed=("answer",), max_arg_chars=100, turn=1)
    assert calls[0].name == "answer" and calls[0].arguments == {"text": "no tools here"}
    _, calls = parse_action('<tool_call>{"name": "search", "arguments": {"query": "x"}}</tool_call>',
                            allowed=("search",), max_arg_chars=100, turn=1)  # fmt: skip
    assert calls[0].name == "search" and calls[0].error is None


@pytest.mark.parametrize(
    "text",
    ['<tool_call>{"name": "answer", "arguments": {"text": "| a |', "<answer>| Name |\n|---|\n| x |", "<search>company",
     'I will open it.\n<tool_call>\n{"name": "open", "arguments": {"url": "https://'],
)  # fmt: skip
@pytest.mark.parametrize("native", [False, True])
def test_a_call_left_open_is_a_malformed_call_not_the_answer(world, tasks, text, native):
    """A reply cut off inside a call (a trainer's token limit) is an error the agent reads, and
    the episode goes on: taken as the final answer, it would end the episode with 0."""
    env = SearchEnv(world.web, EnvConfig(text_tags=not native))
    env.reset(tasks[0], seed=0)
    obs, r, term, trunc, info = env.step({"role": "assistant", "content": text} if native else text)
    assert not term and not trunc and r == 0.0 and env.answer is None
    assert obs[-1]["content"].startswith("Error: a <") and "cut off or left open" in obs[-1]["content"]
    # a closed call before the open one still runs, and the open one is an error after it
    env.reset(tasks[0], seed=0)
    block = "<tool_call>" + json.dumps(call("search", query="company")) + "</tool_call>"
    closed = block if "<tool_call>" in text else "<search>company</search>"
    env.step(closed + text if not native else {"role": "assistant", "content": closed + text})
    assert [s.status for s in env.steps] == ["ok", "error"]
