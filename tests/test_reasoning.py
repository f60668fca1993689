"""Reasoning blocks are never read as calls or answers (fictionworld/env/reasoning.py), by the env
(native content, text tags, the last words of a truncated episode, the answer call) and by the
trainer core every adapter scores with (``final_answer``). The reward is attacked: a hedge, the
gold table or a list of candidates inside ``<think>`` must never earn anything."""

from __future__ import annotations

import json
import re
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import examples

from fictionworld.env import EnvConfig, SearchEnv, parse_action
from fictionworld.env.reasoning import last_words, without_reasoning
from fictionworld.env.tools import ONLY_REASONING
from fictionworld.env.trainer import TRAINER_ENV, final_answer, score_response
from fictionworld.scoring import score_strict
from fictionworld.tasks.generate import generate_tasks

TOOLS = ("search", "open", "answer")


@pytest.fixture(scope="module")
def tasks(world):
    return generate_tasks(world, 4, kind="wide", seed=2)


def call_block(name: str, arguments) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


# -- the rule -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("<think>maybe <answer>X</answer>, let me search more</think>", ""),
        ("<think>a</think><search>q</search>", "<search>q</search>"),
        ("<thinking>a</thinking>b", "b"),
        ("prefilled reasoning <answer>X</answer></think>\n<search>q</search>", "\n<search>q</search>"),
        ("<answer>Y</answer><think>or <answer>X</answer>", "<answer>Y</answer>"),  # cut off mid-thought
        ("a<think>x</think>b<think>y</think>c", "a b c"),
        ("<think><think>x</think>y</think>z", "z"),  # a nested opening is inside the block
        ("<think>x</thinking>y", ""),  # only its own closing tag ends a block
        ("no reasoning at all", "no reasoning at all"),
        ("<Think>x</Think>", "<Think>x</Think>"),  # the tags as models write them, exactly
    ],
)
def test_what_counts_as_reasoning(text, said):
    assert without_reasoning(text) == said


pieces = st.sampled_from(["<think>", "</think>", "<thinking>", "</thinking>", "<th", "ink>", "</", "x", " ", "\n"])


@settings(max_examples=examples(500))
@given(st.lists(pieces, max_size=30).map("".join))
def test_the_rule_is_idempotent_and_leaves_no_tag(text):
    said = without_reasoning(text)
    assert without_reasoning(said) == said
    assert not re.search(r"</?think(ing)?>", said)


def test_the_rule_runs_in_linear_time():
    for text in ("<think>" * 200_000, "</think>" * 200_000, "<think>x</think>" * 100_000, "x" * 2_000_000):
        t = time.perf_counter()
        without_reasoning(text)
        assert time.perf_counter() - t < 1.0


def test_last_words_skip_replies_of_reasoning_only():
    texts = ["<think>only</think>  ", None, "</think>", "<think>a</think>the answer", "older"]
    assert last_words(texts) == "the answer"
    assert last_words(["<think>x", "", None]) is None


# -- the env: native content, text tags, truncation, the answer call ---------------------------------
def test_a_reply_of_reasoning_only_is_an_error_not_the_answer(world, tasks):
    env = SearchEnv(world.web, EnvConfig(text_tags=True))
    for text in (f"<think>maybe <answer>{tasks[0].answer}</answer>, let me search more</think>",
                 f"<think>{tasks[0].answer}", f"{tasks[0].answer}</think>\n"):  # fmt: skip
        env.reset(tasks[0], seed=0)
        obs, r, term, trunc, info = env.step(text)
        assert not term and r == 0.0 and obs[0]["content"] == f"Error: {ONLY_REASONING}."
    env.reset(tasks[0], seed=0)
    obs, r, term, *_ = env.step({"role": "assistant", "content": f"<think>{tasks[0].answer}</think>"})
    assert not term and obs[0]["content"].startswith("Error: the reply holds only reasoning")


def test_calls_inside_reasoning_are_not_run(world, tasks):
    env = SearchEnv(world.web, EnvConfig(text_tags=True))
    env.reset(tasks[0], seed=0)
    text = f"<think>{call_block('answer', {'text': tasks[0].answer})}</think><search>company</search>"
    obs, r, term, *_ = env.step(text)
    assert not term and [s.tool for s in env.steps] == ["search"]
    # after the block, the reply's own answer counts
    obs, r, term, *_ = env.step(f"<think>I have it.</think>\n<answer>{tasks[0].answer}</answer>")
    assert term and r == 1.0


def test_a_truncated_episode_is_scored_on_words_outside_reasoning(world, tasks):
    task = tasks[0]
    env = SearchEnv(world.web, EnvConfig(max_turns=2))
    env.reset(task, seed=0)
    search = [{"function": {"name": "search", "arguments": {"query": "x"}}}]
    env.step({"role": "assistant", "content": "not sure yet", "tool_calls": search})
    *_, trunc, info = env.step({"role": "assistant", "content": f"<think>{task.answer}</think>", "tool_calls": search})
    assert trunc and env.reward == 0.0 and env.answer == "not sure yet"


def test_an_answer_call_is_read_outside_its_reasoning(world, tasks):
    task = tasks[0]
    env = SearchEnv(world.web, EnvConfig())
    env.reset(task, seed=0)
    *_, info = env.step({"name": "answer", "arguments": {"text": f"<think>{task.answer}</think>I don't know."}})
    assert env.reward == 0.0 and env.answer == "I don't know."


# -- the reward attacked: nothing inside reasoning may add credit -----------------------------------
def _table(task, rows) -> str:
    lines = task.answer.splitlines()
    return "\n".join(lines[:2] + [lines[2 + i] for i in rows])


@settings(max_examples=examples(150), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_hedges_inside_reasoning_never_add_credit(world, tasks, data):
    """A final answer of some gold rows, with reasoning around it that holds the whole gold table,
    candidate rows, earlier answers and answer calls: the score is the final answer's, through
    the trainers' scorer and through the env alike; with no final answer, 0."""
    task = data.draw(st.sampled_from(tasks))
    n = len(task.gold.rows)
    keep = sorted(data.draw(st.lists(st.integers(0, n - 1), unique=True, max_size=n)))
    answer = _table(task, keep)
    hedges = [f"maybe <answer>{task.answer}</answer>, let me search more", task.answer,
              call_block("answer", {"text": task.answer}), f"or:\n{task.answer}\n{answer}"]  # fmt: skip
    inside = "\n".join(data.draw(st.lists(st.sampled_from(hedges), min_size=1, max_size=3)))
    form = data.draw(st.sampled_from(["closed", "prefilled", "unclosed"]))
    thought = {"closed": f"<think>{inside}</think>", "prefilled": f"{inside}</think>", "unclosed": f"<think>{inside}"}
    final = data.draw(st.booleans()) and form != "unclosed"
    text = thought[form] + (f"\n<answer>\n{answer}\n</answer>" if final else "")
    deserved = score_strict(answer, task).f1_by_item if final else 0.0
    assert score_response(text, task)["score"] == pytest.approx(deserved)  # verl's decoded response
    assert score_response(None, task, recorded=text)["score"] == pytest.approx(  # a reply taken as the answer
        score_strict(without_reasoning(text), task).f1_by_item if without_reasoning(text).strip() else 0.0
    )
    env = SearchEnv(world.web, EnvConfig(text_tags=True, **TRAINER_ENV))
    env.reset(task, seed=0)
    env.step(text)
    env.end("stopped")
    assert env.reward == pytest.approx(deserved)
    if not final:
        assert final_answer(text) is None and env.reason == "stopped"


def test_parse_action_never_reads_a_call_in_reasoning():
    for text in ("<think><search>a</search></think>", "<search>a</search></think>", "<think><search>a</search>"):
        _, calls = parse_action(text, allowed=TOOLS, max_arg_chars=2_000, turn=1)
        assert [(c.name, c.error) for c in calls] == [("?", ONLY_REASONING)]
