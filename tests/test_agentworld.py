"""AgentWorld parity: the ``agentworld`` tool set takes exactly what Qwen-AgentWorld's search
domain sends (``web_search`` with ``queries`` or ``query``, ``web_extractor`` with only a URL),
gives 10 results a query numbered ``[n]`` with ``Date: N/A`` for undated (reference) pages, and
reads calls in the text forms Qwen models write: Hermes ``<tool_call>`` JSON (``qwen25`` parser)
and Qwen3-Coder XML (``qwen3_coder`` parser)."""

from __future__ import annotations

import json
import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples

from fictionworld.env import EnvConfig, SearchEnv
from fictionworld.env.env import AGENTWORLD_RESULTS
from fictionworld.env.tools import TOOL_SETS, parse_action
from fictionworld.tasks.generate import generate_tasks
from fictionworld.testing.trajectories import garbage_calls, oracle_calls
from fictionworld.web.pages import UNDATED_KINDS

RESULT = re.compile(r"^\[(\d+)\] (\S+)\nTitle: .*\nSnippet: .*\nDate: (.+)$", re.M)


@pytest.fixture(scope="module")
def tasks(world):
    return generate_tasks(world, 3, kind="wide", seed=4)


def _env(world, **config) -> SearchEnv:
    return SearchEnv(world.web, EnvConfig(**({"tools": "agentworld", "max_turns": 400} | config)))


def _step(env: SearchEnv, name: str, arguments) -> tuple[str, dict]:
    obs, _, _, _, info = env.step({"name": name, "arguments": arguments})
    return obs[0]["content"], info["calls"][0]


def test_web_search_takes_queries_or_query_and_lists_ten_numbered_results(world, tasks):
    env = _env(world)
    env.reset(tasks[0], seed=1)
    one, rec = _step(env, "web_search", {"query": "company"})
    assert rec["status"] == "ok" and rec["arguments"] == {"queries": ["company"]}
    batch, _ = _step(env, "web_search", {"queries": ["company"]})
    assert one == batch  # the two forms are one call
    found = RESULT.findall(one)
    assert [int(n) for n, _, _ in found] == list(range(1, AGENTWORLD_RESULTS + 1))
    env.reset(tasks[0], seed=1, knobs={"results_per_page": 3})  # the basic tool's page size is not web_search's
    assert len(RESULT.findall(_step(env, "web_search", {"query": "company"})[0])) == AGENTWORLD_RESULTS == 10
    two, _ = _step(env, "web_search", {"queries": ["company", "river"]})
    sections = two.split("## Results for ")[1:]
    assert len(sections) == 2 and all(len(RESULT.findall(s)) == AGENTWORLD_RESULTS for s in sections)


def test_only_reference_pages_are_undated(world, tasks):
    env = _env(world)
    env.reset(tasks[0], seed=2, knobs={"distractor_rate": 1.0, "confusable_rate": 1.0, "conflict_rate": 1.0})
    kinds_seen: dict[str, set[str]] = {"N/A": set(), "dated": set()}
    pages = world.web.pages
    by_kind: dict[str, list[str]] = {}
    for i in range(len(pages.titles)):
        by_kind.setdefault(str(pages.kind[i]), []).append(pages.titles[i])
    for q in sorted(t for titles in by_kind.values() for t in titles[:3]):  # the first 3 pages of each kind
        text, _ = _step(env, "web_search", {"query": q})
        for _, url, date in RESULT.findall(text):
            kind = world.web.open(url, env.knobs).kind
            kinds_seen["N/A" if date == "N/A" else "dated"].add(kind)
            assert (date == "N/A") == (kind in UNDATED_KINDS), (url, kind, date)
    assert kinds_seen["N/A"] == set(UNDATED_KINDS)  # every kind of page was met
    assert kinds_seen["dated"] == {"news", "forum", "blog"}
    basic = SearchEnv(world.web, EnvConfig(tools="basic"))
    basic.reset(tasks[0], seed=2)
    text, _ = _step(basic, "search", {"query": "company"})
    assert "Date: N/A" not in text  # the basic search tool keeps its dates


def test_web_extractor_needs_only_the_url(world, tasks):
    env = _env(world)
    env.reset(tasks[0], seed=3)
    text, _ = _step(env, "web_search", {"query": "company"})
    url = RESULT.findall(text)[0][1]
    page, rec = _step(env, "web_extractor", {"url": url})
    assert rec["status"] == "ok" and page == world.web.open(url).markdown()
    with_goal, _ = _step(env, "web_extractor", {"url": url, "goal": "who leads it"})
    assert with_goal == page


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({}, "needs the argument 'queries' (a list of queries) or 'query'"),
        ({"query": "a", "queries": ["b"]}, "not both"),
        ({"queries": []}, "list of 1 to 5 strings"),
        ({"queries": ["a"] * 6}, "list of 1 to 5 strings"),
        ({"query": ["a"]}, "must be a string"),
        ({"queries": [1, 2]}, "list of 1 to 5 strings"),
    ],
)
def test_bad_web_search_calls_are_errors_the_agent_reads(world, tasks, arguments, error):
    env = _env(world)
    env.reset(tasks[0], seed=4)
    text, rec = _step(env, "web_search", arguments)
    assert rec["status"] == "error" and error in text and not env.done


# -- text forms: what a Qwen model writes, parsed by the env ----------------------------------
def _agentworld(calls: list[dict]) -> list[dict]:
    """The oracle's basic-tool calls in AgentWorld's tools (web_search has no result pages, so
    a later page's search becomes the plain query)."""
    out = []
    for c in calls:
        if c["name"] == "search":
            out.append({"name": "web_search", "arguments": {"query": c["arguments"]["query"]}})
        elif c["name"] == "open":
            out.append({"name": "web_extractor", "arguments": {"url": c["arguments"]["url"]}})
        else:
            out.append(c)
    return out


def _xml(call: dict) -> str:
    params = "".join(
        f"<parameter={k}>\n{v if isinstance(v, str) else json.dumps(v)}\n</parameter>\n"
        for k, v in call["arguments"].items()
    )
    return f"<tool_call>\n<function={call['name']}>\n{params}</function>\n</tool_call>"


def _hermes(call: dict) -> str:
    return f"<tool_call>\n{json.dumps(call)}\n</tool_call>"


@pytest.mark.parametrize("form", [_xml, _hermes], ids=["qwen3_coder_xml", "hermes_json"])
def test_the_oracle_written_as_text_scores_one(world, tasks, form):
    for i, task in enumerate(tasks[:2]):
        calls = _agentworld(oracle_calls(world, task, seed=i))
        env = _env(world)
        env.reset(task, seed=i)
        reward = 0.0
        for call in calls:
            _, reward, terminated, truncated, _ = env.step("Let me look.\n" + form(call))
            if terminated or truncated:
                break
        assert env.reason == "answer" and reward == 1.0, (task.instance_id, env.scores)


def test_several_xml_calls_in_one_turn_and_bare_functions(world, tasks):
    env = _env(world)
    env.reset(tasks[0], seed=5)
    text = _xml({"name": "web_search", "arguments": {"queries": ["company"]}}) + _xml(
        {"name": "dict_memory", "arguments": {"action": "add", "key": "k", "value": "v"}}
    )
    obs, _, _, _, info = env.step(text)
    assert [c["tool"] for c in info["calls"]] == ["web_search", "dict_memory"]
    assert all(c["status"] == "ok" for c in info["calls"]) and len(obs) == 2
    obs, _, _, _, info = env.step("<function=web_extractor><parameter=url>https://nowhere.invalid/x")
    assert info["calls"][0]["tool"] == "web_extractor" and info["calls"][0]["status"] in ("not_found", "error")


def _garbage_xml(seed: int) -> list[str]:
    """XML calls broken every way: no name, unclosed tags, wrong types, junk, nesting."""
    rng = random.Random(seed)
    out = [_xml(c) if isinstance(c.get("arguments"), dict) else _hermes(c) for c in garbage_calls(seed, 12)]
    out += [
        "<tool_call><function=>x</function></tool_call>",
        "<tool_call><function=web_search><parameter=queries>[1, 2",
        "<function=web_search><parameter=queries>not a list</parameter><parameter=queries>",
        "<tool_call><function=answer></function></tool_call>",
        "<tool_call><function=dict_memory><parameter=action>explode</parameter></function></tool_call>",
        "<function=" * 500,
        "<tool_call><function=web_search\n><parameter=query>a</parameter></function></tool_call>",
        "<tool_call><function=answer><parameter=text>| Name |\n|---|\n| ? |</parameter></function></tool_call>",
    ]
    rng.shuffle(out)
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_garbage_text_scores_zero_and_never_raises(world, tasks, seed):
    env = _env(world, max_turns=30)
    env.reset(tasks[seed % len(tasks)], seed=seed)
    reward = 0.0
    for text in _garbage_xml(seed):
        obs, reward, terminated, truncated, info = env.step(text)
        assert isinstance(obs, list) and all(isinstance(m["content"], str) for m in obs)
        if terminated or truncated:
            break
    if not env.done:
        reward = env.end("test over")
    assert reward == 0.0


_XML_BITS = ["<tool_call>", "</tool_call>", "<function=", "</function>", "<parameter=", "</parameter>", ">", "\n",
             "web_search", "queries", "query", "url", "answer", "text", '["a"]', "[", "1", "x", " "]  # fmt: skip


@settings(max_examples=examples(1500))
@given(text=st.lists(st.sampled_from(_XML_BITS), max_size=40).map("".join))
def test_any_xml_like_text_parses_to_calls_or_errors(text):
    _, calls = parse_action(text, allowed=TOOL_SETS["all"], max_arg_chars=2_000, turn=1)
    assert calls
    for c in calls:
        assert c.error is None or isinstance(c.error, str)
        if c.error is None:
            assert c.name in TOOL_SETS["all"] and isinstance(c.arguments, dict)


# -- dict_memory: AgentWorld's batch forms ---------------------------------------------------------
def _memory(env: SearchEnv, **arguments) -> tuple[str, str]:
    text, rec = _step(env, "dict_memory", arguments)
    return text, rec["status"]


def test_dict_memory_takes_agentworlds_dict_and_key_list(world, tasks):
    env = _env(world)
    env.reset(tasks[0], seed=6)
    text, status = _memory(env, action="add", dict={"row:A": "A | 1990", "row:B": "B | 1991", "n": 3})
    assert status == "ok" and "Stored 3 entries" in text and env.memory.entries["n"] == "3"  # non-text as JSON
    text, status = _memory(env, action="update", dict={"row:A": "A | 1989"})
    assert status == "ok" and env.memory.entries["row:A"] == "A | 1989"
    text, status = _memory(env, action="retrieve", key_list=["row:A", "nope", "row:A", "row:B"])
    assert status == "ok" and json.loads(text[text.index("{") : text.rindex("}") + 1]) == {
        "row:A": "A | 1989", "row:B": "B | 1991"}  # fmt: skip
    assert 'Key not found: "nope"' in text
    before = dict(env.memory.entries)
    for arguments, error in [
        ({"action": "add", "dict": {"row:C": "C", "row:A": "again"}}, "already in memory"),  # whole batch refused
        ({"action": "update", "dict": {"row:A": "x", "new": "y"}}, "not in memory"),
        ({"action": "add", "dict": {"big": "x" * 5_000}}, "at most 4,000"),
        ({"action": "add", "dict": {}}, "is empty"),
        ({"action": "add", "dict": {"k": "v"}, "key": "k", "value": "v"}, "not both"),
        ({"action": "retrieve", "dict": {"k": "v"}}, "takes no 'dict'"),
        ({"action": "remove", "key_list": ["row:A", "nope"]}, "nothing was removed"),
        ({"action": "retrieve", "key_list": [1, 2]}, "list of strings"),
        ({"action": "retrieve", "key_list": ["nope"]}, "no key"),
        ({"action": "add", "dict": ["k", "v"]}, "must be an object"),
    ]:
        text, status = _memory(env, **arguments)
        assert status == "error" and error in text, (arguments, text)
        assert env.memory.entries == before and env.memory.chars == sum(len(k) + len(v) for k, v in before.items())
    text, status = _memory(env, action="remove", key_list=["row:A", "row:B"])
    assert status == "ok" and set(env.memory.entries) == {"n"} and env.memory.chars == 1 + 1


def test_a_batch_over_the_memory_caps_stores_nothing(world, tasks):
    env = _env(world, memory_max_keys=3, memory_max_total_chars=40)
    env.reset(tasks[0], seed=7)
    assert _memory(env, action="add", dict={"a": "1", "b": "2"})[1] == "ok"
    text, status = _memory(env, action="add", dict={"c": "3", "d": "4"})  # the 4th key is over the cap
    assert status == "error" and "full" in text and set(env.memory.entries) == {"a", "b"}
    text, status = _memory(env, action="add", dict={"c": "x" * 36})  # 4 + 1 + 36 characters
    assert status == "error" and "at most 40" in text and set(env.memory.entries) == {"a", "b"}
    xml = _xml({"name": "dict_memory", "arguments": {"action": "add", "dict": {"c": "3"}}})
    _, _, _, _, info = env.step(xml)  # Qwen3-Coder XML: the object parsed as JSON
    assert info["calls"][0]["status"] == "ok" and env.memory.entries["c"] == "3"
