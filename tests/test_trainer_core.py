"""The core every trainer adapter shares (fictionworld/env/trainer.py): the episode one call at a
time, the final answer found in a decoded multi-turn response, and the reward numbers. The
reward is attacked: text around the answer (pages holding the gold table, earlier answers,
broken calls) must never earn more than the answer itself."""

from __future__ import annotations

import json
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import examples

import fictionworld as fw
from fictionworld.env.trainer import (
    ANSWER_GIVEN,
    ANSWER_RECORDED,
    REWARD_KEYS,
    Episode,
    final_answer,
    reward_info,
    score_response,
    shared_world,
    task_json,
    task_of,
)
from fictionworld.scoring import score_strict
from fictionworld.testing.trajectories import garbage_calls, oracle_calls


@pytest.fixture(scope="module")
def tasks(world):
    return fw.make_tasks(world, 3, kind="wide", seed=0) + fw.make_tasks(world, 2, kind="deep", seed=0)


def call_block(name: str, arguments) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def test_the_oracle_replayed_one_call_at_a_time_scores_1(world, tasks):
    for task in tasks:
        calls = oracle_calls(world, task, seed=5)
        ep = Episode(world.web, task_json(task), seed=5)  # the task as a dataset row carries it
        texts = [ep.call(c["name"], c["arguments"]) for c in calls]
        assert texts[-1] == ANSWER_RECORDED and ep.done
        assert ep.reward == 1.0 and ep.reward_info()["success"] == 1.0, task.instance_id
        assert ep.calls == len(calls)


def test_garbage_scores_0_and_never_raises(world, tasks):
    for seed in range(8):
        ep = Episode(world.web, tasks[seed % len(tasks)], seed=seed)
        for c in garbage_calls(seed, 40):
            assert isinstance(ep.call(c["name"], c["arguments"]), str)
        assert ep.reward == 0.0
        assert set(ep.reward_info()) == set(REWARD_KEYS)


def test_the_first_answer_stands(world, tasks):
    task = tasks[0]
    ep = Episode(world.web, task, seed=0)
    ep.call("answer", {"text": "| nothing |"})
    assert ep.call("answer", {"text": task.answer}) == ANSWER_GIVEN
    assert ep.answer == "| nothing |" and ep.reward == 0.0


def test_episodes_do_not_share_state(world, tasks):
    a, b = Episode(world.web, tasks[0], seed=1), Episode(world.web, tasks[1], seed=1)
    a.call("answer", {"text": tasks[0].answer})
    assert a.reward == 1.0 and not b.done and b.reward == 0.0 and b.answer is None


def test_reward_info_has_fixed_float_keys():
    empty = reward_info(None)
    assert tuple(empty) == REWARD_KEYS and all(isinstance(v, float) and v == 0.0 for v in empty.values())


def test_final_answer_forms():
    table = "| A |\n|---|\n| x |"
    assert final_answer(call_block("answer", {"text": table})) == table
    assert final_answer(f"<answer>\n{table}\n</answer>") == table
    args_as_text = (
        f'<tool_call>{{"name": "answer", "arguments": {json.dumps(json.dumps({"text": table}))}}}</tool_call>'
    )
    assert final_answer(args_as_text) == table
    assert final_answer("no call at all") is None and final_answer("") is None and final_answer(None) is None
    assert final_answer("<tool_call>{broken</tool_call>") is None
    assert final_answer(call_block("search", {"query": "q"})) is None
    assert final_answer(call_block("answer", {"text": "a"}), recorded="b") == "b"  # what the tool stored wins
    two = call_block("answer", {"text": "first"}) + "\n" + call_block("answer", {"text": "second"})
    assert final_answer(two) == "second"  # text alone: the last call (a tool-recorded answer is the first)


def test_a_table_in_tool_output_is_never_the_answer(tasks):
    task = tasks[0]
    page = f"<tool_response>\n{task.answer}\n</tool_response>"
    assert score_response(call_block("search", {"query": "x"}) + page, task)["score"] == 0.0
    assert score_response(task.answer, task)["score"] == 0.0  # bare text is not an answer call
    assert score_response(call_block("answer", {"text": task.answer}), task)["score"] == 1.0


def test_score_response_scores_with_abstention_when_asked(tasks):
    """Blank cells (N/A) leave precision's denominator with ``abstention``, wrong ones do not;
    without it both cost alike (WideSearch's default)."""
    task = next(t for t in tasks if t.kind == "wide" and len(t.gold.rows) >= 2)
    keys = {task.gold.columns.index(k) for k in task.evaluation.unique_columns}
    half = len(task.gold.rows) // 2

    def answer(fill: str) -> str:
        rows = [r if i < half else [c if j in keys else fill for j, c in enumerate(r)]
                for i, r in enumerate(task.gold.rows)]  # fmt: skip
        table = task.gold.model_copy(update={"rows": rows}).markdown(task.headers or None)
        return call_block("answer", {"text": table})

    blank, wrong = answer("N/A"), answer("zzqx")
    assert score_response(blank, task)["score"] == pytest.approx(score_response(wrong, task)["score"])
    assert score_response(blank, task, abstention=True)["score"] > score_response(blank, task)["score"]
    assert score_response(wrong, task, abstention=True)["score"] == pytest.approx(score_response(wrong, task)["score"])


def test_task_of_says_what_is_wrong(tasks):
    assert task_of(task_json(tasks[0])).instance_id == tasks[0].instance_id
    assert task_of(tasks[0].model_dump()).instance_id == tasks[0].instance_id
    for bad in ("{", "[]", '{"instance_id": 3}', 7, None):
        with pytest.raises(ValueError, match="not a fictionworld task"):
            task_of(bad)


def test_shared_world_opens_once(saved_world):
    got = []
    threads = [threading.Thread(target=lambda: got.append(shared_world(saved_world))) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(w) for w in got}) == 1
    assert shared_world(str(saved_world) + "/") is got[0]


# -- the reward attacked: nothing around the answer may add credit ---------------------------
def _pieces(task, kinds: list[str], junk: list[str]) -> list[str]:
    return [{
        "gold_in_page": f"<tool_response>\n{task.answer}\n</tool_response>",
        "gold_bare": task.answer,
        "gold_in_answer_tag": f"<answer>{task.answer}</answer>",
        "gold_in_answer_call": call_block("answer", {"text": task.answer}),
        "broken_call": '<tool_call>{"name": "answer", "arguments": {"text": ' + json.dumps(task.answer),
        "unclosed_tag": "<answer>" + task.answer,
        "search_call": call_block("search", {"query": task.query[:40]}),
        "junk": junk[i % len(junk)] if junk else "",
    }[kind] for i, kind in enumerate(kinds)]  # fmt: skip


_BEFORE = ("gold_in_page", "gold_bare", "gold_in_answer_tag", "gold_in_answer_call", "broken_call", "unclosed_tag",
           "search_call", "junk")  # fmt: skip
_AFTER = ("gold_in_page", "gold_bare", "broken_call", "unclosed_tag", "search_call", "junk")  # no later answer


@settings(max_examples=examples(150), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_text_around_the_answer_never_adds_credit(tasks, data):
    """The final answer is the last one the agent gave (a call or a tag); pages holding the
    gold table, bare tables, earlier answers, unclosed calls and tags, searches and junk, before
    or after it, never change its score."""
    task = data.draw(st.sampled_from(tasks[:3]))
    gold = task.gold.rows
    keep = data.draw(st.lists(st.integers(0, len(gold) - 1), unique=True, max_size=len(gold)))
    lines = task.answer.splitlines()
    answer = "\n".join(lines[:2] + [lines[2 + i] for i in sorted(keep)])  # header + a subset of the rows
    form = data.draw(st.sampled_from(("call", "tag")))
    final = call_block("answer", {"text": answer}) if form == "call" else f"<answer>\n{answer}\n</answer>"
    junk = data.draw(st.lists(st.text(max_size=40), max_size=3))
    before = _pieces(task, data.draw(st.lists(st.sampled_from(_BEFORE), max_size=5)), junk)
    after = _pieces(task, data.draw(st.lists(st.sampled_from(_AFTER), max_size=4)), junk)
    got = score_response("\n".join([*before, final, *after]), task)["score"]
    deserved = score_strict(answer, task).f1_by_item
    assert got == pytest.approx(deserved)
    assert deserved <= 2 * len(keep) / (len(keep) + len(gold)) + 1e-9  # F1 of k right rows of n


@settings(max_examples=examples(200))
@given(st.text(max_size=300))
def test_final_answer_never_raises(text):
    final_answer(text)
    final_answer("<tool_call>" + text + "</tool_call>")


def test_importing_fictionworld_and_its_cli_loads_no_trainer():
    """The trainers are optional extras: only their adapter modules import them."""
    import subprocess
    import sys

    code = ("import sys, fictionworld, fictionworld.cli, fictionworld.env.trainer, fictionworld.testing.trajectories; "
            "print(sorted(m for m in ('verl', 'trl', 'torch', 'transformers') if m in sys.modules))")  # fmt: skip
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_export_refuses_tasks_of_another_world_in_one_line(saved_world, tasks, tmp_path):
    from typer.testing import CliRunner

    from fictionworld.cli import app
    from fictionworld.tasks.model import write_tasks

    foreign = [t.model_copy(update={"world_hash": "0" * 40}) for t in tasks[:2]]
    write_tasks(foreign, tmp_path / "t.jsonl")
    r = CliRunner().invoke(app, ["export", "trl", str(tmp_path / "t.jsonl"), "--world", str(saved_world),
                                 "--out", str(tmp_path / "out")])  # fmt: skip
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert [line for line in r.output.splitlines() if line.startswith("error:")][0].startswith(
        "error: 2 of 2 tasks were made from another world"
    )
    assert not (tmp_path / "out").exists()
