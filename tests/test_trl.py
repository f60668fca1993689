"""The TRL adapter against TRL 1.16 itself, on CPU: the env's tool schemas as TRL builds and
renders them, ``reset(**row)`` on pooled instances, the oracle's calls and garbage replayed through
the env's methods as TRL calls them, the exported Parquet in ``datasets``, and real
``GRPOTrainer`` runs (a tiny model built here and a tokenizer trained here, taught by
``SFTTrainer``) whose rollouts call the env and whose logged reward is the env's ``get_reward``."""

from __future__ import annotations

import inspect
import json
import os

import pytest
from conftest import require  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is downloaded: the model and tokenizer are built here
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
require("trl")

from datasets import load_dataset  # noqa: E402
from transformers.utils import get_json_schema  # noqa: E402
from trl import GRPOConfig  # noqa: E402
from trl.chat_template_utils import get_training_chat_template  # noqa: E402

import fictionworld as fw  # noqa: E402
from fictionworld.env.tools import TOOLS  # noqa: E402
from fictionworld.integrations import trl as ft  # noqa: E402
from fictionworld.integrations.trl import NO_EPISODE, FictionWorldEnv, dataset_row, export_trl  # noqa: E402
from fictionworld.integrations.trl_demo import REWARD_KEY, grpo_trainer, train_trl_demo, what_it_shows  # noqa: E402
from fictionworld.knobs import Knobs  # noqa: E402
from fictionworld.testing.tiny_lm import build_tokenizer, tiny_model  # noqa: E402
from fictionworld.testing.trajectories import garbage_calls, oracle_calls  # noqa: E402


@pytest.fixture(scope="module")
def tasks(world):
    return fw.make_tasks(world, 2, kind="deep", seed=5) + fw.make_tasks(world, 2, kind="wide", seed=5)


def _trl_tools(env) -> dict:
    """The env's tools as GRPOTrainer finds them (``inspect.getmembers`` on the class, public
    functions minus reset and get_reward), by name."""
    return {name: getattr(env, name) for name, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
            if name not in ("reset", "get_reward") and not name.startswith("_")}  # fmt: skip


# -- tools and schemas --------------------------------------------------------------------------
def test_tools_are_search_open_answer_with_the_envs_schemas(saved_world):
    env = FictionWorldEnv()
    tools = _trl_tools(env)
    assert sorted(tools) == ["answer", "open", "search"]
    for name, method in tools.items():
        schema = get_json_schema(method)["function"]  # what apply_chat_template(tools=[method]) renders
        ours = TOOLS[name]["function"]
        assert schema["name"] == name and schema["description"]
        assert schema["parameters"]["required"] == ours["parameters"]["required"]
        assert {k: v["type"] for k, v in schema["parameters"]["properties"].items()} == {
            k: v["type"] for k, v in ours["parameters"]["properties"].items()
        }


def test_grpo_trainer_takes_the_env(saved_world, tasks, tmp_path):
    """GRPOTrainer's own checks at init: a reset, tool schemas, get_reward as a reward column,
    a chat template it can parse tool calls with; the prompt renders with the tools in it."""
    row = dataset_row(tasks[0], saved_world)
    tok = build_tokenizer([row["prompt"][0]["content"], tasks[0].query], vocab_size=400)
    trainer = grpo_trainer(tiny_model(tok, hidden=16, layers=1), tok, [row], tmp_path, steps=1, num_generations=2,
                           progress=False)  # fmt: skip
    assert sorted(t.__name__ for t in trainer.tools) == ["answer", "open", "search"]
    assert trainer.reward_func_names == ["FictionWorldEnv"]
    assert tok.response_schema is not None  # add_response_schema recognised TRL's qwen3 template
    text = tok.apply_chat_template(row["prompt"], tools=trainer.tools, chat_template=get_training_chat_template(tok),
                                   add_generation_prompt=True, tokenize=False)  # fmt: skip
    assert '"name": "search"' in text and "What to search for." in text and text.endswith("<|im_start|>assistant\n")


# -- reset and replay ---------------------------------------------------------------------------
def test_reset_takes_the_task_from_the_row_and_clears_the_episode(saved_world, tasks):
    a, b = (dataset_row(t, saved_world, seed=s) for t, s in ((tasks[0], 1), (tasks[1], 2)))
    env = FictionWorldEnv()
    assert env.search(query="x") == NO_EPISODE and env.get_reward() == 0.0
    assert env.reset(**a, extra_column="ignored") is None  # None: nothing appended to the prompt
    assert env.episode.task.instance_id == tasks[0].instance_id
    env.search(query=tasks[0].query[:40])
    env.answer(text="| Answer |\n|---|\n| nobody |")
    first = env.episode
    assert first.calls == 2 and first.answer is not None and first.done
    env.reset(**b)  # TRL pools instances: the same one, reset for another row
    ep = env.episode
    assert ep.task.instance_id == tasks[1].instance_id != tasks[0].instance_id
    assert (ep.calls, ep.answer, ep.done, env.get_reward()) == (0, None, False, 0.0)
    assert ep.env.session is not first.env.session
    fresh = FictionWorldEnv()
    fresh.reset(**b)
    query = tasks[1].query[:40]
    assert env.search(query=query) == fresh.search(query=query)  # nothing of the first episode leaks


def test_the_envs_reward_config_chooses_abstention_aware_scoring(saved_world, tasks):
    """``environment_factory``'s config takes the env's RewardConfig: ``reward={"abstention":
    True}`` keeps blank cells out of precision's denominator."""
    task = next(t for t in tasks if t.kind == "wide" and len(t.gold.rows) >= 2)
    keys = {task.gold.columns.index(k) for k in task.evaluation.unique_columns}
    rows = [r if n == 0 else [c if j in keys else "N/A" for j, c in enumerate(r)] for n, r in enumerate(task.gold.rows)]
    table = task.gold.model_copy(update={"rows": rows}).markdown()
    got = []
    for env in (FictionWorldEnv(), FictionWorldEnv(reward={"abstention": True})):
        env.reset(**dataset_row(task, saved_world))
        env.answer(text=table)
        got.append(env.get_reward())
    assert got[1] > got[0]


def test_reset_refuses_a_row_without_task_or_world(saved_world, tasks):
    row = dataset_row(tasks[0], saved_world)
    with pytest.raises(ValueError, match="task"):
        FictionWorldEnv().reset(prompt=row["prompt"], world=row["world"])
    with pytest.raises(ValueError, match="world"):
        FictionWorldEnv().reset(task=row["task"])
    env = ft.env_factory(saved_world)()  # the factory's world serves rows without one
    env.reset(task=row["task"])
    assert env.episode.task.instance_id == tasks[0].instance_id


@pytest.mark.parametrize("i", range(4))
def test_oracle_calls_replayed_through_the_methods_score_one(world, saved_world, tasks, i):
    task, seed = tasks[i], 7 + i
    env = FictionWorldEnv()
    env.reset(**dataset_row(task, saved_world, seed=seed))
    tools = _trl_tools(env)
    calls = oracle_calls(world, task, seed=seed)
    for call in calls:
        assert isinstance(tools[call["name"]](**call["arguments"]), str)  # as TRL calls it
    assert env.get_reward() == 1.0 and env.episode.reward_info()["success"] == 1.0
    assert env.episode.calls == len(calls)


def test_garbage_scores_zero_and_never_raises(saved_world, tasks):
    env = FictionWorldEnv()
    row = dataset_row(tasks[2], saved_world)
    for seed in range(8):
        env.reset(**row)
        tools = _trl_tools(env)
        for call in garbage_calls(seed, 30):
            method = tools.get(call["name"])
            if method is None:  # an unknown name never reaches the env: TRL answers "Tool … not found"
                continue
            args = call["arguments"]
            obs = method(**args) if isinstance(args, dict) else method(args)  # positional: the env checks it
            assert isinstance(obs, str) and obs
        assert env.get_reward() == 0.0
    env.reset(**row)
    odd = [
        lambda: env.search(),
        lambda: env.search(query=None),
        lambda: env.search(query=["a"], page=None),
        lambda: env.search(query="x", page=True),
        lambda: env.search(query="x", page=-3),
        lambda: env.search(query="x" * 1_000_000),
        lambda: env.search(query="x", bogus=1),
        lambda: env.search("x", 2, 3),
        lambda: env.open(url=None),
        lambda: env.open(url="\ud800"),
        lambda: env.open(url="https://" + "a" * 100_000),
        lambda: env.answer(text=None),
        lambda: env.answer(text={"a": 1}),
        lambda: env.answer(text="| Answer |\n|---|\n" + "| x |\n" * 100_000),
    ]
    for call in odd:
        assert isinstance(call(), str)
    assert not env.episode.done and env.get_reward() == 0.0
    assert env.search(query="x", page="2") == env.search(query="x", page=2)  # "2" coerced by the env
    assert env.answer(text="I don't know") == "Answer recorded. The episode is over."
    assert env.get_reward() == 0.0 and isinstance(env.search(query="x"), str)


def test_reasoning_is_never_the_answer(saved_world, tasks):
    """TRL's own response parser leaves a call written while thinking in the reasoning, so it never
    reaches the env; and the ``answer`` tool's text is read outside its reasoning blocks: a hedge
    there earns nothing, the table after the block earns its score."""
    from trl.chat_template_utils import add_response_schema, parse_response

    task = tasks[2]
    call = "<tool_call>\n" + json.dumps({"name": "answer", "arguments": {"text": task.answer}}) + "\n</tool_call>"
    tok = add_response_schema(build_tokenizer([task.answer, call, "let me search more"], vocab_size=400))
    reply = f"<think>\nmaybe {call}, let me search more\n</think>\n\nI will search again.<|im_end|>"
    parsed = parse_response(tok, tok(reply, add_special_tokens=False)["input_ids"])
    assert not parsed.get("tool_calls") and call in parsed.get("reasoning_content", "")
    hedged, answered = FictionWorldEnv(), FictionWorldEnv()
    for env in (hedged, answered):
        env.reset(**dataset_row(task, saved_world))
    hedged.answer(text=f"<think>maybe\n{task.answer}\n</think>\nI don't know.")
    answered.answer(text=f"<think>I have every row.</think>\n{task.answer}")
    assert hedged.get_reward() == 0.0 and answered.get_reward() == 1.0


# -- export -------------------------------------------------------------------------------------
def test_export_trl_loads_in_datasets_and_resets_the_env(saved_world, tasks, tmp_path):
    knobs = Knobs(conflict_rate=0.2)
    summary = export_trl(tasks, saved_world, tmp_path / "a", val_fraction=0.25, seed=3, knobs=knobs)
    assert (summary["train_rows"], summary["val_rows"]) == (3, 1)
    data = load_dataset("parquet", data_files={"train": summary["train"], "validation": summary["val"]})
    rows = list(data["train"]) + list(data["validation"])
    assert sorted(r["instance_id"] for r in rows) == sorted(t.instance_id for t in tasks)
    assert set(rows[0]) == {"prompt", "task", "world", "seed", "knobs", "instance_id"}
    env = FictionWorldEnv()
    for r in rows:
        assert [m["role"] for m in r["prompt"]] == ["system", "user"]
        assert "no tool call ends the task with no answer" in r["prompt"][0]["content"]
        env.reset(**r)
        assert env.episode.task.instance_id == r["instance_id"] and r["prompt"][1]["content"] == env.episode.task.query
        assert env.episode.env.seed == r["seed"] and env.episode.env.knobs.conflict_rate == 0.2
    again = export_trl(tasks, saved_world, tmp_path / "b", val_fraction=0.25, seed=3, knobs=knobs)
    assert [load_dataset("parquet", data_files=again[s])["train"]["seed"] for s in ("train", "val")] == [
        data["train"]["seed"], data["validation"]["seed"]]  # fmt: skip
    other = export_trl(tasks, saved_world, tmp_path / "c", seed=4)
    assert load_dataset("parquet", data_files=other["train"])["train"]["seed"] != data["train"]["seed"]
    with pytest.raises(ValueError, match="val_fraction"):
        export_trl(tasks, saved_world, tmp_path / "d", val_fraction=1.0)


# -- budgets and pitfalls -----------------------------------------------------------------------
def test_documented_budgets_match_trl(tmp_path):
    doc = ft.__doc__
    for needle in ("max_completion_length", "default **512**", "max_tool_calling_iterations", "clipped_ratio",
                   "add_response_schema", "vllm_max_model_length", "remove_unused_columns", "get_reward"):  # fmt: skip
        assert needle in doc, needle
    default = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to=[])
    assert default.max_completion_length == 512 and default.max_tool_calling_iterations is None
    assert default.remove_unused_columns is False
    rec = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to=[], **ft.RECOMMENDED_GRPO)
    assert rec.max_completion_length >= 8 * 512 and rec.max_tool_calling_iterations >= 30


# -- real GRPO runs -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def demo(saved_world, tmp_path_factory):
    """The demo (SFT warm-up, then 2 GRPO steps × 4 rollouts) on the session's world."""
    return train_trl_demo(tmp_path_factory.mktemp("trl_demo"), world_dir=saved_world, steps=2, seed=0, progress=False)


@pytest.mark.trainers
def test_grpo_rollouts_call_the_env_and_its_reward_is_logged(demo):
    assert demo["sft_loss"][-1] < 0.1 * demo["sft_loss"][0]  # the warm-up taught the call format
    assert demo["steps"] == 2 and [r["step"] for r in demo["rewards"]] == [1, 2]
    assert all(r["tool_calls_per_rollout"] > 0 for r in demo["rewards"])
    last = demo["last_rollouts"]  # the pooled env instances, as the last step's rollouts left them
    assert len(last) == 4 and len({r["task"] for r in last}) == 1  # one group: one task
    assert sum(r["calls"] for r in last) > 0
    assert demo["rewards"][-1]["reward"] == pytest.approx(sum(r["reward"] for r in last) / len(last))
    assert any(r["reward"] > 0 for r in demo["rewards"])  # some rollout searched, then answered right
    logged = [json.loads(line) for line in open(demo["rewards_jsonl"])]
    assert logged == demo["rewards"]
    assert os.path.getsize(demo["plot"]) > 1000


@pytest.mark.trainers
def test_a_step_changes_the_model_exactly_when_its_rewards_differ(demo):
    """GRPO's advantage is a rollout's reward against its group's mean: a group that scored alike
    gives no gradient, one that did not gives one, and the demo says which steps were which.
    (On this world both steps' groups score alike; the README's default run, checked below,
    has steps that differ.)"""
    for r in demo["rewards"]:
        assert (r["reward_std"] > 0) == (r["grad_norm"] > 0) == (r["groups_alike"] == 0), r
    moved = sum(r["grad_norm"] > 0 for r in demo["rewards"])
    said = what_it_shows(demo["rewards"])
    assert said.startswith(f"{moved} of 2 GRPO steps changed") if moved else said.startswith("No GRPO step changed")


def test_what_it_shows_says_when_nothing_moved():
    alike = [{"step": k, "reward": 1.0, "reward_std": 0.0, "grad_norm": 0.0} for k in (1, 2, 3, 4)]
    assert what_it_shows(alike).startswith("No GRPO step changed the model") and "(1.00)" in what_it_shows(alike)
    mixed = [*alike[:2], {"step": 3, "reward": 0.5, "reward_std": 0.58, "grad_norm": 0.9}, alike[3]]
    assert what_it_shows(mixed) == ("1 of 4 GRPO steps changed the model (step 3: rollouts that scored differently, "
                                    "a gradient); 3 scored alike and changed nothing.")  # fmt: skip


@pytest.mark.trainers
def test_tool_output_over_max_completion_length_is_dropped_silently(demo, saved_world, tmp_path):
    """At TRL's default budget a full results page does not fit: the search runs in the env, its
    result never reaches the model, the rollout ends unanswered, and nothing says so."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(demo["model"])
    model = AutoModelForCausalLM.from_pretrained(demo["model"])
    world = fw.World.load(saved_world)
    task = next(t for t in fw.make_tasks(world, 4, kind="deep", seed=0) if t.instance_id == demo["tasks"][0])
    made = []

    def factory():  # the env's own observation budget: a whole results page
        made.append(FictionWorldEnv())
        return made[-1]

    trainer = grpo_trainer(model, tok, [dataset_row(task, saved_world, seed=0)], tmp_path, steps=1, num_generations=2,
                           max_completion_length=512, progress=False, environment_factory=factory)  # fmt: skip
    trainer.train()
    log = next(e for e in trainer.state.log_history if REWARD_KEY in e)
    searched = [e for e in made if e.episode is not None and e.episode.calls]
    assert searched and log["tools/call_frequency"] > 0
    for env in searched:
        assert env.episode.calls == 1 and env.episode.answer is None and env.get_reward() == 0.0
    probe = FictionWorldEnv()
    probe.reset(**dataset_row(task, saved_world, seed=0))
    page = probe.search(query=task.query[:40])
    assert len(tok(page)["input_ids"]) > 512  # one results page alone is over the default budget
    assert log[REWARD_KEY] == 0.0 and log["completions/clipped_ratio"] == 0.0  # not even counted as clipped


@pytest.mark.trainers
def test_the_readme_shows_what_train_trl_prints(tmp_path):
    """README.md quotes the default run's table and last line (the tested releases, seed 0): the
    command, run as the README gives it, prints exactly those."""
    import re
    from pathlib import Path

    from typer.testing import CliRunner

    from fictionworld.cli import app

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    quoted = readme.split("<!-- train-trl:output", 1)[1].split("```text\n", 1)[1].split("```", 1)[0].splitlines()
    r = CliRunner().invoke(app, ["train-trl", "--out", str(tmp_path / "trl")])
    assert r.exit_code == 0, r.output
    log = [json.loads(line) for line in (tmp_path / "trl" / "rewards.jsonl").read_text().splitlines()]
    printed = [f"{x['step']} {x['reward']:.3f} {x['reward_std']:.3f} {x['grad_norm'] or 0:.3g}" for x in log]
    assert [" ".join(line.split()) for line in quoted[1:-1]] == printed
    for row in printed:  # the command's own table holds each row's figures in this order
        assert re.search(r"\s+│\s+".join(map(re.escape, row.split())), r.stdout), row
    assert quoted[-1] == what_it_shows(log) and quoted[-1] in " ".join(r.stdout.split())


@pytest.mark.trainers
def test_train_trl_command(saved_world, tmp_path):
    from typer.testing import CliRunner

    from fictionworld.cli import app

    r = CliRunner().invoke(app, ["train-trl", "--out", str(tmp_path / "run"), "--world", str(saved_world),
                                 "--steps", "1", "--tasks", "1", "--generations", "2"])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "GRPO" in r.output and "rewards" in r.output
    assert (tmp_path / "run" / "rewards.png").is_file() and (tmp_path / "run" / "model").is_dir()
    assert len((tmp_path / "run" / "rewards.jsonl").read_text().splitlines()) == 1
    bad = CliRunner().invoke(app, ["train-trl", "--out", str(tmp_path / "x"), "--world", str(tmp_path / "nope")])
    assert bad.exit_code != 0 and "error:" in bad.output and "Traceback" not in bad.output
