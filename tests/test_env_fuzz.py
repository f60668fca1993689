"""The env never raises: property tests (hypothesis) over arbitrary actions, messages and tool
arguments, the regressions the fuzzing found, and a seeded run of the fuzzer behind
``benchmarks/fuzz_env.py``. Every step must give a reward in [0, 1], an ``Error: …``
observation where the input is bad, and records that can be written as UTF-8 JSON."""

from __future__ import annotations

import json
import re
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import examples

from fictionworld.env import EnvConfig, SearchEnv, parse_action
from fictionworld.env.env import EPISODE_OVER
from fictionworld.env.tools import _tags, _tool_call_blocks, short_repr
from fictionworld.tasks.generate import generate_tasks
from fictionworld.testing.env_fuzz import BAD_URLS, NASTY_PIECES, Case, check_step, run_fuzz
from fictionworld.testing.nasty_actions import valid_arguments
from fictionworld.web.pages import WebError
from fictionworld.web.text import first_surrogate

TOOL_NAMES = ("search", "open", "answer", "web_search", "web_extractor")
FIELDS = ("name", "arguments", "function", "tool_calls", "content", "role", "id", "type", "text", "query", "url")


def fuzz(ci: int) -> settings:
    """``ci`` examples in CI (the profile's share of them elsewhere), every health check off."""
    return settings(max_examples=examples(ci),
                    suppress_health_check=list(HealthCheck))  # fmt: skip


@pytest.fixture(scope="module")
def tasks(world):
    return generate_tasks(world, 4, kind="mixed", seed=4)


@pytest.fixture(scope="module")
def env(world):
    return SearchEnv(world.web, EnvConfig(tools="all", text_tags=True, max_turns=6, max_context_chars=50_000))


def step(env, task, action, *, bad: bool = False) -> list[dict]:
    """Steps ``action`` in a fresh episode, checks the step's contract, returns the observations."""
    env.reset(task, seed=0)
    n = len(env.messages)
    result = env.step(action)
    record = {"messages": env.messages[n:], "steps": [s.model_dump() for s in env.steps], "answer": env.answer}
    assert check_step(Case("test", action, bad), result, was_done=False, record=record) == []
    return result[0]


def _json(v) -> str:
    try:
        return json.dumps(v, default=str)
    except ValueError:  # an int of over 4,300 digits
        return "1e999999"


# -- strategies ----------------------------------------------------------------------------------
chars = st.characters() | st.characters(categories=["Cs"]) | st.sampled_from("\x00\t\n\r\x7f\ufeff\u202e\u00b2")
texts = st.text(chars, max_size=40) | st.sampled_from(NASTY_PIECES + BAD_URLS + TOOL_NAMES)
huge_int = st.builds(lambda: 10**5000)  # an int with no repr (sampled_from would repr it)
scalars = st.none() | st.booleans() | st.integers() | st.floats() | texts | huge_int | st.sampled_from([b"x", (1,)])
values = st.recursive(scalars, lambda v: st.lists(v, max_size=4) | st.dictionaries(st.sampled_from(FIELDS), v, max_size=4),
                      max_leaves=10)  # fmt: skip
json_texts = values.map(_json) | st.sampled_from(
    ["{bad", "[1, 2]", "null", "3", '"x"', "", "[" * 3000, '{"query": ' + "9" * 5000 + "}", '{"query": "\\ud800"}']
)
tool_arguments = st.fixed_dictionaries(
    {},
    optional={"query": texts | values, "url": st.sampled_from(BAD_URLS) | texts | values, "text": texts | values,
              "queries": st.lists(texts, max_size=7) | values, "page": st.integers() | values, "goal": values},
)  # fmt: skip
arguments = tool_arguments | tool_arguments.map(_json) | values | json_texts
tags = st.sampled_from(
    ["<search>", "</search>", "<open>", "</open>", "<answer>", "</answer>", "<tool_call>", "</tool_call>"]
)
tag_texts = st.lists(tags | texts | json_texts, max_size=8).map("".join)


urls = st.sampled_from(BAD_URLS) | st.builds(
    lambda a, b: a + b,
    st.sampled_from(["https://", "https://[::1", "https://en.fictopedia.org/wiki/", "http://x.org/?page="]),
    texts,
)
shaped = {  # each tool's own arguments, with nasty values
    "search": st.fixed_dictionaries({"query": texts}, optional={"page": st.integers() | texts | values}),
    "open": st.fixed_dictionaries({"url": urls}),
    "web_extractor": st.fixed_dictionaries({"url": urls}, optional={"goal": texts | values}),
    "answer": st.fixed_dictionaries({"text": texts | tag_texts}),
    "web_search": st.fixed_dictionaries({"queries": st.lists(texts, max_size=7) | texts | values}),
}


@st.composite
def calls(draw) -> dict:
    roll = draw(st.integers(0, 4))  # mostly a tool's name
    name = draw(st.sampled_from(TOOL_NAMES) if roll < 3 else texts if roll == 3 else values)
    known = isinstance(name, str) and name in shaped
    args = draw(shaped[name] | arguments) if known else draw(arguments)
    if isinstance(args, dict) and draw(st.booleans()):
        args = _json(args)
    call = {"name": name, "arguments": args}
    return call if draw(st.booleans()) else {"id": draw(values), "type": "function", "function": call}


parts = st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": values}) | values, max_size=4)
messages = st.fixed_dictionaries(
    {"role": st.just("assistant") | values},
    optional={
        "content": texts | tag_texts | parts | values,
        "tool_calls": st.lists(calls() | values, max_size=3) | values,
    },
)
actions = st.one_of(calls(), calls(), messages, messages, tag_texts, values)


# -- the property --------------------------------------------------------------------------------
@fuzz(2500)
@given(action=actions)
def test_step_keeps_its_contract_on_any_action(env, tasks, action):
    step(env, tasks[1], action)


@fuzz(1000)
@given(action=actions, turn=st.integers(1, 50))
def test_parse_action_reads_anything(action, turn):
    message, calls_ = parse_action(action, allowed=TOOL_NAMES, max_arg_chars=2_000, turn=turn)
    assert message["role"] == "assistant" and calls_
    assert message["content"] is None or isinstance(message["content"], str)
    json.dumps(message, ensure_ascii=False).encode("utf-8")  # valid text: no lone surrogate left
    for c in calls_:
        assert c.error is not None or (c.name in TOOL_NAMES and isinstance(c.arguments, dict))


# -- bad input gives an error observation ------------------------------------------------------------
def forms(name: str, args) -> list:
    """The same call as each form the env reads."""
    raw = args if isinstance(args, str) else _json(args)
    return [
        {"name": name, "arguments": args},
        {"function": {"name": name, "arguments": raw}},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "x", "function": {"name": name, "arguments": raw}}],
        },
        f'<tool_call>{{"name": {json.dumps(name)}, "arguments": {raw}}}</tool_call>',
    ]


@fuzz(300)
@given(name=st.sampled_from(TOOL_NAMES), args=values | json_texts, form=st.integers(0, 3))
def test_arguments_that_are_no_object_are_errors(env, tasks, name, args, form):
    decoded = args
    if isinstance(args, str):
        try:
            decoded = json.loads(args) if args.strip() else {}
        except (ValueError, RecursionError):
            decoded = None
    if isinstance(decoded, dict) or (form == 3 and not isinstance(args, str)):
        return  # an object may be a good call; a <tool_call> needs the arguments as JSON text
    obs = step(env, tasks[0], forms(name, args)[form], bad=True)
    assert "arguments" in obs[0]["content"] or "JSON" in obs[0]["content"]


@fuzz(300)
@given(name=texts.filter(lambda s: s not in TOOL_NAMES), args=arguments, form=st.integers(0, 2))
def test_unknown_tools_are_errors(env, tasks, name, args, form):
    action = forms(name, args if isinstance(args, dict | str) else {})[form]
    obs = step(env, tasks[0], action, bad=True)
    assert obs[0]["content"].startswith("Error:")


@fuzz(300)
@given(url=st.sampled_from(BAD_URLS) | st.builds(lambda a, b: a + b, st.sampled_from(BAD_URLS[:3]), texts),
       tool=st.sampled_from(["open", "web_extractor"]), form=st.integers(0, 4))  # fmt: skip
def test_bad_urls_are_errors(env, tasks, url, tool, form):
    action = f"<open>{url}</open>" if form == 4 else forms(tool, {"url": url})[form]
    if form == 4 and ("</open>" in url or url.strip() != url or not url.strip()):
        return  # the tag's text is stripped, or ends early
    obs = step(env, tasks[0], action, bad=True)
    if "<" not in url:  # else a tag in the URL may end a <tool_call> early: another error
        assert any(w in obs[0]["content"] for w in ("malformed URL", "empty URL", "too long"))


@fuzz(200)
@given(query=st.builds(lambda a, s, b: a + s + b, texts, st.characters(categories=["Cs"]), texts),
       tool=st.sampled_from(["search", "web_search", "tag"]))  # fmt: skip
def test_lone_surrogates_in_queries_are_errors(env, tasks, query, tool):
    if tool == "tag":
        if "</search>" in query or "<tool_call>" in query:
            return
        action = f"<search>{query}</search>"
    else:
        args = json.dumps({"query": query} if tool == "search" else {"queries": [query]})
        decoded = json.loads(args)
        if first_surrogate(decoded["query"] if tool == "search" else decoded["queries"][0]) is None:
            return  # "\\ud800\\udc00" in JSON is a surrogate pair: one valid character
        action = {"name": tool, "arguments": args}
    obs = step(env, tasks[0], action, bad=True)
    assert obs[0]["content"].startswith("Error:")


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        ({"role": "assistant", "content": [{"type": "text", "text": 5}]}, "content must be a string or a list of text"),
        ({"role": "assistant", "content": [{"type": "text", "text": None}]}, "with text of type NoneType"),
        ({"role": "assistant", "content": [["nested"], "x"]}, "a part of type list"),
        ({"role": "assistant", "content": {"a": 1}}, "not dict"),
        ({"role": "assistant", "content": None}, "empty action"),
        ({"role": "assistant", "content": None, "tool_calls": []}, "empty action"),
        ({"name": "open", "arguments": {"url": "https://[::1"}}, "Invalid IPv6 URL"),
        ({"name": "web_extractor", "arguments": '{"url": "https://[::1"}'}, "Invalid IPv6 URL"),
        ("<open>https://[::1</open>", "Invalid IPv6 URL"),
        ('<tool_call>{"name": "open", "arguments": {"url": "https://[::1"}}</tool_call>', "Invalid IPv6 URL"),
        ({"name": "open", "arguments": {"url": "https://[::1].org/"}}, "expected http(s)://host.name/path"),
        ({"name": "open", "arguments": {"url": "https://en.fictopedia.org/x?page=\u00b2"}}, "page must be a number"),
        ({"name": "open", "arguments": {"url": "https://en.fictopedia.org/\ud800"}}, "lone surrogates"),
        ({"name": "search", "arguments": '{"query": "\\ud800"}'}, "lone surrogate U+D800"),
        ({"name": "search", "arguments": {"query": "x", "page": "\u00b2"}}, "must be an integer"),
        ({"name": "search", "arguments": {"query": "x", "page": 10**5000}}, "not a number that large"),
        ({"name": "search", "arguments": '{"query": "x", "page": ' + "9" * 5000 + "}"}, "a number too long"),
        ({"name": "search", "arguments": "[" * 100_000}, "nested too deeply"),
        ({"name": "search", "arguments": {"query": "x", "z": {1, 2}}, "id": 10**5000}, None),
        (10**5000, "unreadable action of type int"),
        ({"name": "\ud800", "arguments": {}}, "unknown tool '\ufffd'"),
        ({"name": "web_search", "arguments": {"role": "x", None: None, "queries": ["company"]}}, "named by strings"),
        ({"function": {"name": "search", "arguments": {"query": "company", (1, "a"): 2}}}, "not by tuple"),
    ],
    ids=lambda v: ascii(short_repr(v))[1:41],
)
def test_regressions(env, tasks, action, expected):
    obs = step(env, tasks[0], action, bad=expected is not None)
    if expected is not None:
        assert expected in obs[0]["content"]


def test_steps_after_the_end_and_before_the_start(world, tasks):
    env = SearchEnv(world.web)
    obs, r, term, trunc, info = env.step({"name": "search", "arguments": {"query": "x"}})
    assert obs == [{"role": "user", "content": EPISODE_OVER}] and (r, term, trunc) == (0.0, False, True)
    env.reset(tasks[0], seed=0)
    env.step("<answer>nothing</answer>")
    for action in ("more", {"name": "answer", "arguments": {"text": tasks[0].answer}}, None):
        obs, r, term, trunc, info = env.step(action)
        assert obs[0]["content"] == EPISODE_OVER and (r, term, trunc, info["reason"]) == (0.0, True, False, "answer")
    assert env.end("late") == env.reward and env.reason == "answer"


def test_records_are_valid_text(world, tasks):
    env = SearchEnv(world.web, EnvConfig(max_turns=2))
    env.reset(tasks[0], seed=0)
    env.step({"role": "assistant", "content": "a\ud800", "tool_calls": [
        {"id": "\udfff", "function": {"name": "search\ud800", "arguments": '{"query": "\\ud800"}'}}]})  # fmt: skip
    env.step({"name": "search", "arguments": {"query": "q\udc00" * 200, "deep": [[[[[[1]]]]]] * 50, 7: 10**5000}})
    record = {"messages": env.messages, "steps": [s.model_dump() for s in env.steps], "answer": env.answer}
    json.dumps(record, ensure_ascii=False).encode("utf-8")
    assert env.steps[0].error.startswith("unknown tool") and "\ufffd" in env.messages[2]["content"]


@pytest.mark.parametrize(("max_arg_chars", "reward"), [(10, 0.0), (2_000, 1.0)])
def test_a_truncated_episode_over_the_answer_limit_scores_zero(world, tasks, max_arg_chars, reward):
    env = SearchEnv(world.web, EnvConfig(max_turns=1, max_arg_chars=max_arg_chars))
    env.reset(tasks[0], seed=0)
    table = tasks[0].answer + " " * 600  # over 50 × 10 characters, as the answer tool would refuse
    *_, trunc, info = env.step({"role": "assistant", "content": table, "tool_calls": [
        {"function": {"name": "search", "arguments": {"query": "x"}}}]})  # fmt: skip
    assert trunc and env.reward == reward
    assert ("over 500 characters" in info["scores"]["msg"]) == (reward == 0.0)


def test_web_refuses_bad_input_with_web_errors(world):
    for url in (
        "https://[::1",
        "http://[1.2.3.4]/",
        "https://a\uff03b.org/",
        "https://en.fictopedia.org/wiki/X?page=\u00b2",
    ):
        with pytest.raises(WebError, match="malformed URL"):
            world.web.open(url)
    with pytest.raises(WebError, match="lone surrogate"):
        world.web.search("company \ud800")
    with pytest.raises(WebError, match="page must be"):
        world.web.search("company", page=10**5000)


# -- text tags: linear time, the same calls as the regular expressions they replace ------------------
_TAG = re.compile(r"<(search|open|answer)>(.*?)</\1>", re.S)
_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)


@fuzz(1500)
@given(
    text=st.lists(tags | st.sampled_from(["x", " ", "\n", "<", ">", "/", "search", "\u2003", "\x1c"]), max_size=30).map(
        "".join
    )
)
def test_tag_scanners_match_the_regular_expressions(text):
    assert _tags(text) == _TAG.findall(text)
    assert _tool_call_blocks(text) == _TOOL_CALL.findall(text)


@pytest.mark.parametrize("text", ["<tool_call>" + " " * 300_000, "<search>" * 100_000, "<tool_call>" * 100_000,
                                  "<answer>" + "<open>x" * 50_000, "<open>" * 50_000 + "</open>",
                                  "<function=search>" + "<parameter=q>x" * 50_000, "<function=" * 100_000,
                                  "<tool_call><function=open>" + "<parameter=url>" * 50_000 + "</tool_call>",
                                  "<tool_call><function=a>" * 50_000 + "</tool_call>"])  # fmt: skip
def test_unclosed_tags_parse_in_linear_time(text):
    t = time.perf_counter()
    parse_action(text, allowed=TOOL_NAMES, max_arg_chars=2_000, turn=1)
    assert time.perf_counter() - t < 1.0  # the regular expressions took minutes


# -- the seeded fuzzer -------------------------------------------------------------------------------
def test_seeded_fuzz_run(world, tasks):
    cases = examples(3_000)
    report = run_fuzz(cases, 0, world, tasks)
    assert report.ok, "\n".join(report.examples)
    assert (report.exceptions, report.out_of_range) == (0, 0)
    assert report.bad > cases // 3 and report.steps_after_end > 0 and report.outcomes["search results"] > 0
    assert report.kinds["argument not named by a string"] > 0 and report.kinds["reasoning only"] > 0
    assert run_fuzz(300, 7, world, tasks).digest == run_fuzz(300, 7, world, tasks).digest


def test_the_fuzzers_finding_web_search_with_an_argument_named_none(env, tasks):
    """100k cases found ``web_search`` with ``{'role': …, None: None, 'queries': [...]}`` (printed
    after the env had turned the action's ``query`` into ``queries``, in the action itself) and no
    error: a name that is no string is now an error, the env leaves the caller's arguments as
    they were, and the generator knows web_search's one-``query`` form."""
    for args in ({"role": "x", None: None, "query": "company"}, {"role": "x", "query": "company"},
                 {"role": "x", None: None, "queries": ["company"]}, {"query": "company", 7: 1}):  # fmt: skip
        given = dict(args)
        action = {"name": "web_search", "arguments": args}
        obs = step(env, tasks[0], action, bad=not valid_arguments("web_search", args))
        assert args == given  # (the env reads a copy)
        assert obs[0]["content"].startswith("Error:") == any(not isinstance(k, str) for k in args)
