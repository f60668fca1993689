"""The ``dict_memory`` tool (Qwen-AgentWorld's per-episode working memory): every action and
each of its errors, the caps, one store per episode and per env, step statuses, trainer
episodes, text-tag calls and paging ``retrieve_all``. A property test holds random action
sequences to a plain dict. (The context budget for wide tasks: test_context_budget.py.)"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memory_helpers import make_env
from profiles import examples

from fictionworld.env import TOOL_SETS, TOOLS, EnvConfig, SearchEnv, tool_schemas
from fictionworld.env.tools import MEMORY_ACTIONS, DictMemory
from fictionworld.env.trainer import Episode, system_message
from fictionworld.testing.env_fuzz import Case, check_step


def mem(env, **args) -> tuple[str, dict]:
    """The observation text and step record of one dict_memory call."""
    obs, r, terminated, truncated, info = env.step({"name": "dict_memory", "arguments": args})
    assert r == 0.0 and not terminated and len(obs) == 1 and len(info["calls"]) == 1
    return obs[0]["content"], info["calls"][0]


def read_page(text: str) -> tuple[dict[str, str], int | None]:
    """The entries a retrieve_all page shows, and the offset of the next page (None: last)."""
    lines = text.split("\n")
    assert lines[0].startswith("Memory: ") and lines[1] == "{"
    end = lines.index("}", 1)
    entries = json.loads("\n".join(lines[1 : end + 1]))
    nxt = None
    for line in lines[end + 1 :]:
        if "for the next page" in line:
            nxt = int(line.split("offset ")[1].split()[0])
    return entries, nxt


# -- the schema and the tool sets ----------------------------------------------------------------
def test_schema_and_tool_sets():
    fn = TOOLS["dict_memory"]["function"]
    params = fn["parameters"]
    assert fn["name"] == "dict_memory" and params["required"] == ["action"]
    assert params["properties"]["action"]["enum"] == list(MEMORY_ACTIONS) == [
        "add", "update", "retrieve", "retrieve_all", "remove", "remove_all"]  # fmt: skip
    assert {params["properties"][a]["type"] for a in ("key", "value")} == {"string"}
    assert params["properties"]["offset"] == {"type": "integer", "minimum": 0,
                                              "description": params["properties"]["offset"]["description"]}  # fmt: skip
    json.dumps(TOOLS["dict_memory"])
    assert TOOL_SETS["basic"] == ("search", "open", "answer")
    assert TOOL_SETS["agentworld"] == ("web_search", "web_extractor", "dict_memory", "answer")
    assert TOOL_SETS["memory"] == ("search", "open", "dict_memory", "answer")
    assert "dict_memory" in TOOL_SETS["all"]
    assert [t["function"]["name"] for t in tool_schemas("memory")] == list(TOOL_SETS["memory"])
    c = EnvConfig()
    assert (c.memory_max_keys, c.memory_max_key_chars, c.memory_max_value_chars, c.memory_max_total_chars,
            c.keep_observations) == (5_000, 200, 4_000, 1_000_000, None)  # fmt: skip
    with pytest.raises(ValueError):
        EnvConfig(keep_observations=0)
    with pytest.raises(ValueError):
        EnvConfig(tools="nope")


def test_system_prompts(small_world, task):
    for tools in ("memory", "agentworld", "all"):
        env = make_env(small_world, task, tools=tools)
        assert "dict_memory(" in env.messages[0]["content"]
        assert "dict_memory" in {t["function"]["name"] for t in env.tools}
    basic = make_env(small_world, task, tools="basic").messages[0]["content"]
    assert "dict_memory" not in basic and "in view" not in basic
    tags = make_env(small_world, task, text_tags=True).messages[0]["content"]
    assert '<tool_call>{"name": "dict_memory"' in tags  # no tag of its own: the JSON form
    keep = make_env(small_world, task, keep_observations=3).messages[0]["content"]
    assert "last 3 tool outputs" in keep and "dict_memory" in keep.split("in view")[1]


# -- every action ----------------------------------------------------------------------------------
def test_every_action(small_world, task):
    env = make_env(small_world, task)
    text, rec = mem(env, action="retrieve_all")
    assert text == "The memory is empty (0 entries)." and rec["status"] == "ok" and rec["ok"]
    text, rec = mem(env, action="add", key="Alpha Corp", value="founded 1901\nHQ: Rumal")
    assert text.startswith('Stored "Alpha Corp"') and (rec["status"], rec["error"]) == ("ok", None)
    assert rec["tool"] == "dict_memory" and rec["arguments"]["key"] == "Alpha Corp"
    mem(env, action="add", key="Beta", value="2")
    mem(env, action="add", key="Gamma", value="")
    text, rec = mem(env, action="update", key="Alpha Corp", value="founded 1902")
    assert text.startswith('Updated "Alpha Corp"') and rec["status"] == "ok"
    text, _ = mem(env, action="retrieve", key="Alpha Corp")
    assert text == 'Value of "Alpha Corp" (12 characters):\nfounded 1902'
    text, _ = mem(env, action="retrieve", key="Gamma")
    assert text.endswith("(0 characters):\n")
    text, rec = mem(env, action="retrieve_all")
    entries, nxt = read_page(text)
    assert list(entries.items()) == [("Alpha Corp", "founded 1902"), ("Beta", "2"), ("Gamma", "")]  # insertion order
    assert nxt is None and "3 entries" in text.split("\n")[0] and rec["status"] == "ok"
    text, _ = mem(env, action="remove", key="Beta")
    assert text == 'Removed "Beta"; 2 entries left.'
    assert list(env.memory.entries) == ["Alpha Corp", "Gamma"]
    text, _ = mem(env, action="remove_all")
    assert text == "Removed all 2 entries; the memory is empty."
    assert mem(env, action="remove_all")[0] == "The memory was already empty."
    assert env.memory.entries == {} and env.memory.chars == 0
    # an action in another case, a digit string for offset: read as meant
    assert mem(env, action=" ADD", key="k", value="v")[1]["status"] == "ok"
    assert mem(env, action="retrieve_all", offset="0")[1]["status"] == "ok"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"action": "add", "key": "a", "value": "again"}, 'the key "a" is already in memory; use update'),
        ({"action": "update", "key": "zz", "value": "x"}, 'no key "zz" in memory; use add'),
        ({"action": "retrieve", "key": "zz"}, 'no key "zz" in memory (1 entry; retrieve_all lists them)'),
        ({"action": "remove", "key": "zz"}, 'no key "zz" in memory'),
        ({"action": "retrieve_all", "offset": 1}, "offset past the last entry (1 entry"),
        ({"action": "retrieve_all", "offset": -1}, "'offset' of dict_memory must be 0 or more"),
        ({"action": "retrieve_all", "offset": 1.5}, "argument 'offset' of dict_memory must be an integer"),
        ({"action": "retrieve_all", "offset": True}, "must be an integer, not bool"),
        ({"action": "forget", "key": "a"}, "unknown dict_memory action 'forget'; the actions are: add, update"),
        ({"action": 3}, "argument 'action' of dict_memory must be a string, not int"),
        ({"key": "a"}, "dict_memory needs the argument 'action'"),
        ({}, "dict_memory needs the argument 'action'"),
        ({"action": "add", "value": "x"}, "dict_memory add needs the argument 'key'"),
        ({"action": "add", "key": "b"}, "dict_memory add needs the argument 'value'"),
        ({"action": "update", "key": "a"}, "dict_memory update needs the argument 'value'"),
        ({"action": "retrieve"}, "dict_memory retrieve needs the argument 'key'"),
        ({"action": "remove"}, "dict_memory remove needs the argument 'key'"),
        ({"action": "add", "key": 7, "value": "x"}, "argument 'key' of dict_memory must be a string, not int"),
        ({"action": "add", "key": "b", "value": ["x"]}, "argument 'value' of dict_memory must be a string, not list"),
        ({"action": "add", "key": "b", "value": None}, "must be a string, not NoneType"),
        ({"action": "add", "key": "  ", "value": "x"}, "the key is empty. Nothing was stored"),
        ({"action": "add", "key": "b\ud800", "value": "x"}, "the key holds a lone surrogate at character 1"),
        ({"action": "add", "key": "b", "value": "\udfffx"}, "the value holds a lone surrogate at character 0"),
        ({"action": "retrieve", "key": ""}, "the key is empty"),
    ],
)
def test_errors_are_observations(small_world, task, args, expected):
    env = make_env(small_world, task)
    mem(env, action="add", key="a", value="1")
    text, rec = mem(env, **args)
    assert text.startswith("Error:") and expected in text
    assert rec["status"] == "error" and not rec["ok"] and rec["error"] and expected.split(". ")[0] in rec["error"]
    assert env.memory.entries == {"a": "1"} and not env.done  # nothing lost, the episode goes on
    assert mem(env, action="retrieve", key="a")[0].endswith("\n1")


def test_bad_arguments_json_and_forms(small_world, task):
    env = make_env(small_world, task)
    obs, *_, info = env.step({"name": "dict_memory", "arguments": "{not json"})
    assert "not valid JSON" in obs[0]["content"] and info["calls"][0]["status"] == "error"
    obs, *_, info = env.step({"name": "dict_memory", "arguments": '["add"]'})
    assert "must be a JSON object" in obs[0]["content"]
    # a native call, and several in one turn: statuses in order
    calls = [{"id": f"m{i}", "type": "function", "function": {"name": "dict_memory", "arguments": json.dumps(a)}}
             for i, a in enumerate([{"action": "add", "key": "x", "value": "1"}, {"action": "add", "key": "x",
                                    "value": "2"}, {"action": "retrieve", "key": "x"}])]  # fmt: skip
    obs, *_, info = env.step({"role": "assistant", "content": None, "tool_calls": calls})
    assert [m["tool_call_id"] for m in obs] == ["m0", "m1", "m2"] and all(m["role"] == "tool" for m in obs)
    assert [c["status"] for c in info["calls"]] == ["ok", "error", "ok"] and obs[2]["content"].endswith("\n1")
    # the fuzzer's contract holds for memory steps, good and bad
    for action, bad in [({"name": "dict_memory", "arguments": {"action": "remove", "key": "nope"}}, True),
                        ({"name": "dict_memory", "arguments": {"action": "retrieve_all"}}, False)]:  # fmt: skip
        n, k = len(env.messages), len(env.steps)
        result = env.step(action)
        record = {"messages": env.messages[n:], "steps": [s.model_dump() for s in env.steps[k:]], "answer": None}
        assert check_step(Case("memory", action, bad), result, was_done=False, record=record) == []


def test_text_tag_mode_and_other_tool_sets(small_world, task):
    env = make_env(small_world, task, text_tags=True)
    obs, *_, info = env.step('Noting it. <tool_call>{"name": "dict_memory", "arguments": '
                             '{"action": "add", "key": "k", "value": "v"}}</tool_call>')  # fmt: skip
    assert (
        obs[0]["role"] == "user" and obs[0]["content"].startswith('Stored "k"') and info["calls"][0]["status"] == "ok"
    )
    basic = make_env(small_world, task, tools="basic")
    text, rec = mem(basic, action="add", key="k", value="v")
    assert "unknown tool 'dict_memory'" in text and rec["status"] == "error"
    aw = make_env(small_world, task, tools="agentworld")
    assert mem(aw, action="add", key="k", value="v")[1]["status"] == "ok"


# -- caps ------------------------------------------------------------------------------------------
def test_caps_refuse_and_lose_nothing(small_world, task):
    env = make_env(small_world, task, memory_max_keys=3, memory_max_key_chars=5, memory_max_value_chars=10,
                   memory_max_total_chars=20)  # fmt: skip
    mem(env, action="add", key="a", value="x" * 10)  # 11 characters of keys and values
    mem(env, action="add", key="b", value="y")  # 13
    before = dict(env.memory.entries)
    for args, expected in [
        ({"action": "add", "key": "cccccc", "value": "z"}, "the key is 6 characters long; at most 5"),
        ({"action": "add", "key": "c", "value": "z" * 11}, "the value is 11 characters long; at most 10"),
        ({"action": "update", "key": "b", "value": "z" * 11}, "the value is 11 characters long; at most 10"),
        ({"action": "add", "key": "c", "value": "z" * 10}, "that would bring the memory to 24 characters"),
        ({"action": "update", "key": "a", "value": "z" * 10 + "\u00e9"}, "the value is 11 characters"),
        ({"action": "update", "key": "b", "value": "z" * 9}, "bring the memory to 21 characters of keys and values"),
    ]:
        text, rec = mem(env, **args)
        assert text.startswith("Error:") and expected in text and "Nothing was stored" in text
        assert rec["status"] == "error" and env.memory.entries == before
    assert mem(env, action="update", key="b", value="y" * 7)[1]["status"] == "ok"  # 19: an update counts its change
    assert mem(env, action="add", key="c", value="")[1]["status"] == "ok"  # 20, at the cap
    before = dict(env.memory.entries)
    text, rec = mem(env, action="add", key="d", value="")
    assert "the memory is full (3 keys)" in text and rec["status"] == "error" and env.memory.entries == before
    assert env.memory.chars == 20 == sum(len(k) + len(v) for k, v in before.items())
    assert mem(env, action="update", key="b", value="")[1]["status"] == "ok"  # full, but updates still work
    mem(env, action="remove", key="a")
    assert mem(env, action="add", key="d", value="w")[1]["status"] == "ok"
    assert list(env.memory.entries.items()) == [("b", ""), ("c", ""), ("d", "w")] and env.memory.chars == 4


def test_a_value_at_its_cap_fits_the_argument_limit(small_world, task):
    env = make_env(small_world, task)  # max_arg_chars 2,000; a value may be 4,000 characters
    value = "é\x01" * 2_000  # every character escaped in JSON: 24,000+ characters of arguments
    raw = json.dumps({"action": "add", "key": "k" * 200, "value": value})
    assert len(raw) > 20_000
    obs, *_, info = env.step({"name": "dict_memory", "arguments": raw})
    assert info["calls"][0]["status"] == "ok", obs[0]["content"]
    obs, *_ = env.step({"name": "dict_memory", "arguments": raw + " " * 30_000})
    assert "the arguments of dict_memory are too long" in obs[0]["content"]
    assert env.memory.entries == {"k" * 200: value}


def test_default_caps():
    m = DictMemory()
    assert (m.max_keys, m.max_key_chars, m.max_value_chars, m.max_total_chars) == (5_000, 200, 4_000, 1_000_000)
    for i in range(5_000):
        assert m.run({"action": "add", "key": f"row {i}", "value": "v" * 190})[1]
    text, ok = m.run({"action": "add", "key": "one more", "value": ""})
    assert not ok and "the memory is full (5,000 keys)" in text and len(m.entries) == 5_000
    m.clear()
    for i in range(250):
        assert m.run({"action": "add", "key": f"{i:>200}", "value": "v" * 3_800})[1]  # 1,000,000 in all
    text, ok = m.run({"action": "add", "key": "x", "value": ""})
    assert not ok and "1,000,001 characters" in text and "at most 1,000,000" in text and m.chars == 1_000_000


# -- retrieve_all pages ----------------------------------------------------------------------------
@pytest.mark.parametrize("limit", [400, 1_000, 20_000])
def test_retrieve_all_pages_through_a_large_store(small_world, task, limit):
    env = make_env(small_world, task, max_observation_chars=limit)
    want = {f"row {i}": f'Name {i} | {"x" * (i % 37)} | "quoted" \n line two' for i in range(120)}
    for k, v in want.items():
        env.memory.run({"action": "add", "key": k, "value": v})
    got: dict[str, str] = {}
    offset, pages = 0, 0
    while offset is not None:
        text, rec = mem(env, action="retrieve_all", offset=offset)
        assert rec["status"] == "ok" and len(text) <= limit and "cut at" not in text
        entries, offset = read_page(text)
        assert entries and not set(entries) & set(got)
        got |= entries
        pages += 1
    assert list(got.items()) == list(want.items())
    assert (pages > 1) == (limit < 20_000)


def test_retrieve_all_cuts_an_entry_longer_than_a_page(small_world, task):
    env = make_env(small_world, task, max_observation_chars=500)
    mem(env, action="add", key="long", value="y" * 3_000)
    mem(env, action="add", key="short", value="z")
    text, rec = mem(env, action="retrieve_all")
    entries, nxt = read_page(text)
    assert len(text) <= 500 and rec["status"] == "ok" and nxt == 1
    assert entries["long"].endswith("…") and "was cut to fit: retrieve its key" in text
    assert read_page(mem(env, action="retrieve_all", offset=nxt)[0]) == ({"short": "z"}, None)


# -- one store per episode, per env ----------------------------------------------------------------
def test_reset_clears_and_envs_do_not_share(small_world, task):
    a, b = make_env(small_world, task), make_env(small_world, task)
    mem(a, action="add", key="k", value="a's")
    assert mem(b, action="retrieve", key="k")[1]["status"] == "error"
    mem(b, action="add", key="k", value="b's")
    assert mem(a, action="retrieve", key="k")[0].endswith("\na's")
    a.reset(task, seed=1)
    assert a.memory.entries == {} and mem(a, action="retrieve_all")[0] == "The memory is empty (0 entries)."
    assert mem(b, action="retrieve", key="k")[0].endswith("\nb's")


def test_memory_through_a_trainer_episode(small_world, task):
    ep = Episode(small_world.web, task, seed=0, tools="memory")
    assert "dict_memory" in ep.messages[0]["content"] and "dict_memory(" in system_message("memory")
    assert ep.call("dict_memory", {"action": "add", "key": "row 1", "value": "A | 1901"}).startswith('Stored "row 1"')
    assert ep.call("dict_memory", '{"action": "retrieve", "key": "row 1"}').endswith("\nA | 1901")
    assert ep.call("dict_memory", {"action": "add", "key": "row 1", "value": "B"}).startswith("Error:")
    assert "row 1" in ep.call("dict_memory", {"action": "retrieve_all"})
    assert [s.status for s in ep.env.steps] == ["ok", "ok", "error", "ok"]
    assert Episode(small_world.web, task, tools="basic").call("dict_memory", {"action": "remove_all"}).startswith(
        "Error: unknown tool")  # fmt: skip
    again = Episode(small_world.web, task, seed=0, tools="memory")
    assert again.call("dict_memory", {"action": "retrieve", "key": "row 1"}).startswith("Error: no key")


# -- property: random action sequences against a plain dict ----------------------------------------
CAPS = {"memory_max_keys": 4, "memory_max_key_chars": 6, "memory_max_value_chars": 10, "memory_max_total_chars": 40}
valid_keys = st.sampled_from(["a", "b", "c", "é"])
# add most, remove_all least: the store fills up, and its caps are met
weighted = st.sampled_from(("add",) * 5 + ("update", "retrieve") * 2 + ("retrieve_all", "remove") + MEMORY_ACTIONS)
keys = valid_keys | st.sampled_from([" ", "", "sevenxx", "b\ud800"]) | st.text(max_size=8) | st.integers()
values = st.text('xyzé\n"', max_size=9) | st.text(max_size=12) | st.sampled_from(["\udc00", "x" * 11]) | st.none()
# Mostly calls an agent would make (a valid action and key, a value), some of anything.
good_args = st.fixed_dictionaries(
    {"action": weighted, "key": valid_keys, "value": st.text('xyzé\n"', max_size=9)},
    optional={"offset": st.integers(0, 4)},
)
memory_args = st.one_of(
    good_args,
    good_args,
    good_args,
    st.fixed_dictionaries({"action": st.sampled_from(MEMORY_ACTIONS), "key": keys}, optional={"value": values}),
    st.fixed_dictionaries(
        {},
        optional={"action": st.sampled_from(MEMORY_ACTIONS + ("ADD", " remove ", "bogus")) | st.integers(),
                  "key": keys, "value": values, "offset": st.integers(-2, 6) | st.sampled_from(["3", "x", True])},
    ),
)  # fmt: skip


def model_step(d: dict[str, str], args: dict) -> bool:
    """What a plain dict with the caps above does with ``args``: whether the call works."""
    action = args.get("action")
    if not isinstance(action, str):
        return False
    for arg in ("key", "value"):
        if arg in args and not isinstance(args[arg], str):
            return False
    offset = args.get("offset", 0)
    if isinstance(offset, str) and offset.isdigit():
        offset = int(offset)
    if isinstance(offset, bool) or not isinstance(offset, int):
        return False
    action = action.strip().lower()
    if action not in MEMORY_ACTIONS or (action != "remove_all" and action != "retrieve_all" and "key" not in args):
        return False
    if action in ("add", "update") and "value" not in args:
        return False
    if action == "remove_all":
        d.clear()
        return True
    if action == "retrieve_all":
        return offset >= 0 and (not d or offset < len(d))
    key, value = args["key"], args.get("value", "")
    if not key.strip() or any(0xD800 <= ord(ch) <= 0xDFFF for ch in key):
        return False
    if action == "retrieve":
        return key in d
    if action == "remove":
        return d.pop(key, None) is not None
    if (action == "add") == (key in d) or any(0xD800 <= ord(ch) <= 0xDFFF for ch in value):
        return False
    if len(key) > CAPS["memory_max_key_chars"] or len(value) > CAPS["memory_max_value_chars"]:
        return False
    if key not in d and len(d) >= CAPS["memory_max_keys"]:
        return False
    after = {**d, key: value}
    if sum(len(k) + len(v) for k, v in after.items()) > CAPS["memory_max_total_chars"]:
        return False
    d[key] = value
    return True


@pytest.fixture(scope="module")
def capped_env(small_world):
    return SearchEnv(small_world.web, EnvConfig(tools="memory", max_turns=1_000, max_observation_chars=300, **CAPS))


@settings(max_examples=examples(300),
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(sequence=st.lists(memory_args, min_size=1, max_size=30) | st.lists(good_args, min_size=5, max_size=30))
def test_random_sequences_match_a_dict(capped_env, task, sequence):
    env = capped_env
    env.reset(task, seed=0)
    model: dict[str, str] = {}
    for args in sequence:
        before = dict(model)
        ok = model_step(model, args)
        obs, r, terminated, truncated, info = env.step({"name": "dict_memory", "arguments": args})
        status = info["calls"][0]["status"]
        assert status == ("ok" if ok else "error"), (args, obs[0]["content"])
        assert obs[0]["content"].startswith("Error:") != ok and not terminated and not truncated and r == 0.0
        json.dumps(obs, ensure_ascii=False).encode("utf-8")  # always writable text
        assert list(env.memory.entries.items()) == list(model.items())
        if not ok:
            assert model == before
        elif args["action"].strip().lower() == "retrieve":
            assert obs[0]["content"].endswith("\n" + model[args["key"]])
        elif args["action"].strip().lower() == "retrieve_all" and model:
            entries, _ = read_page(obs[0]["content"])
            offset = int(args.get("offset", 0))
            assert list(entries.items()) == list(model.items())[offset : offset + len(entries)]
    assert env.memory.chars == sum(len(k) + len(v) for k, v in model.items())
