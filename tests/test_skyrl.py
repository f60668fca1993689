"""The SkyRL adapter against skyrl-gym 0.4.0 itself, on CPU: ``skyrl_gym.make`` on exported rows
read the way SkyRL's ``PromptDataset`` reads them, the oracle's calls as raw text in each format the
env reads (Hermes JSON, Qwen3-Coder XML, tags) scoring 1.0, garbage scoring 0 without raising, 32
threads stepping many envs over the one shared world as SkyRL's generator does, skyrl-gym's own
``search`` env against a real ``fictionworld serve``, and the entrypoint's wiring (SkyRL's trainer
itself needs Python 3.12 and GPUs: its modules are stand-ins here, named as in skyrl 0.4.0)."""

from __future__ import annotations

import asyncio
import copy
import importlib
import json
import random
import shlex
import subprocess
import sys
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import require  # noqa: E402

require("skyrl_gym")

import skyrl_gym  # noqa: E402
from skyrl_gym.envs.search.env import SearchEnvConfig  # noqa: E402

import fictionworld as fw  # noqa: E402
from fictionworld.env.trainer import REWARD_KEYS, task_json  # noqa: E402
from fictionworld.integrations import skyrl as fs  # noqa: E402
from fictionworld.testing.trajectories import garbage_calls, oracle_calls  # noqa: E402


# -- fixtures and helpers -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tasks(world):
    return fw.make_tasks(world, 2, kind="wide", seed=3) + fw.make_tasks(world, 2, kind="deep", seed=3)


@pytest.fixture(scope="module")
def export(tasks, saved_world, tmp_path_factory):
    fs.register_env()
    return fs.export_skyrl(tasks, saved_world, tmp_path_factory.mktemp("skyrl"), val_fraction=0.25, seed=5)


@pytest.fixture(scope="module")
def items(export):
    """(prompt, env_class, extras) of each row, as SkyRL's PromptDataset gives them: the Parquet
    loaded by ``datasets``, ``prompt`` and ``env_class`` popped, every other column an extra."""
    from datasets import load_dataset

    out = []
    for split in ("train", "val"):
        for row in load_dataset("parquet", data_files=export[split], keep_in_memory=True)["train"]:
            out.append((row.pop("prompt"), row.pop("env_class"), row))
    return out


def make(extras: dict, max_turns: int = 200, **info):
    """An env as SkyRL's generator makes one: ``extras`` copied, its ``max_turns`` added."""
    extras = copy.deepcopy(extras) | {"max_turns": max_turns}
    extras["extra_info"] |= info
    return skyrl_gym.make("fictionworld", env_config={}, extras=extras)


def hermes(call: dict) -> str:
    return "<tool_call>\n" + json.dumps({"name": call["name"], "arguments": call["arguments"]}) + "\n</tool_call>"


def xml(call: dict) -> str:
    params = "".join(f"<parameter={k}>\n{v if isinstance(v, str) else json.dumps(v)}\n</parameter>\n"
                     for k, v in call["arguments"].items())  # fmt: skip
    return f"<tool_call>\n<function={call['name']}>\n{params}</function>\n</tool_call>"


def tag(call: dict) -> str:
    """A ``<search>``/``<open>``/``<answer>`` tag; JSON where a tag cannot say it (a later page)."""
    args = call["arguments"]
    if call["name"] == "search" and args.get("page", 1) != 1:
        return hermes(call)
    name = call["name"]
    return f"<{name}>{args[{'search': 'query', 'open': 'url', 'answer': 'text'}[name]]}</{name}>"


def turns(calls: list[dict], render, per_turn: int = 1) -> list[str]:
    """The model's raw text, ``per_turn`` calls a turn, with prose around them."""
    return [f"I will call the tools.\n{chr(10).join(render(c) for c in calls[i : i + per_turn])}\n"
            for i in range(0, len(calls), per_turn)]  # fmt: skip


def oracle_texts(world, extras, render, per_turn=1) -> list[str]:
    task = fw.Task.model_validate_json(extras["extra_info"]["task"])
    return turns(oracle_calls(world, task, seed=int(extras["extra_info"]["seed"])), render, per_turn)


def well_formed(out) -> None:
    assert set(out) >= {"observations", "reward", "done", "metadata"}
    assert isinstance(out["reward"], float) and isinstance(out["done"], bool) and isinstance(out["metadata"], dict)
    assert all(set(m) == {"role", "content"} and m["role"] == "user" and isinstance(m["content"], str)
               for m in out["observations"])  # fmt: skip


def replay(env, prompt, texts: list[str]) -> list:
    """``init`` then one ``step`` per text until done; every output, timings left out."""
    outs = [env.init(prompt)]
    for text in texts:
        out = env.step(text)
        well_formed(out)
        for call in out["metadata"].get("calls", ()):
            call.pop("seconds")
        outs.append(out)
        if out["done"]:
            break
    return outs + [env.get_metrics()]


# -- (a) the oracle's trajectory as raw text, and garbage --------------------------------------------
@pytest.mark.parametrize("render, per_turn", [(hermes, 1), (xml, 1), (tag, 1), (hermes, 5), (xml, 3)],
                         ids=["hermes", "qwen3-coder-xml", "tags", "hermes-5-a-turn", "xml-3-a-turn"])  # fmt: skip
def test_oracle_text_scores_one(world, items, render, per_turn):
    for prompt, env_class, extras in items:
        assert env_class == fs.ENV_ID
        env = make(extras)
        texts = oracle_texts(world, extras, render, per_turn)
        outs = replay(env, prompt, texts)
        first, *steps, metrics = outs
        assert first[0] == prompt and first[1]["tools"] == ["search", "open", "answer"]
        assert len(steps) == len(texts) and steps[-1]["done"] and not any(s["done"] for s in steps[:-1])
        assert [s["reward"] for s in steps] == [0.0] * (len(steps) - 1) + [1.0]
        assert steps[-1]["metadata"]["reward_info"] == {k: metrics[k] for k in REWARD_KEYS} and metrics["answered"]
        assert set(metrics) == set(REWARD_KEYS) | {"turns", "tool_calls"} and metrics["turns"] == len(texts)
        after = env.step(texts[-1])  # SkyRL stops at done; a step after it changes nothing
        assert after["done"] and after["reward"] == 0.0 and "episode is over" in after["observations"][0]["content"]
        assert env.get_metrics() == metrics


def test_a_reply_without_a_call_is_the_answer_and_the_turn_budget_ends_it(world, items):
    prompt, _, extras = items[0]
    texts = oracle_texts(world, extras, hermes)
    answer = json.loads(texts[-1].split("<tool_call>")[1].split("</tool_call>")[0])["arguments"]["text"]
    env = make(extras)
    *_, last, metrics = replay(env, prompt, texts[:-1] + [f"Here it is:\n{answer}"])
    assert last["done"] and last["reward"] == 1.0 and metrics["answered"] == 1.0
    env = make(extras, max_turns=2)  # SkyRL's generator.max_turns: the env ends the episode there
    _, first, second, metrics = replay(env, prompt, texts)
    assert not first["done"] and "one turn left" in first["observations"][-1]["content"]
    assert second["done"] and second["reward"] == 0.0 and second["metadata"]["reason"] == "turn budget"
    assert metrics["answered"] == 0.0 and metrics["turns"] == 2.0


def garbage(seed: int) -> list[str]:
    """Raw text a model gets wrong: random bytes, half-closed tags, huge strings, JSON of the
    wrong types, wrong XML, and the seeded garbage calls as Hermes blocks."""
    rng = random.Random(seed)
    noise = bytes(rng.randrange(256) for _ in range(3000)).decode("utf-8", "surrogateescape")
    texts = [
        '<tool_call>{"name": "search", "arguments": {"query": 3}}</tool_call>',
        '<tool_call>{"name": ["answer"], "arguments": 1}</tool_call><tool_call>null</tool_call>',
        '<tool_call>{"name": "open", "arguments": "not json"}</tool_call><tool_call>[1, 2]</tool_call>',
        '<tool_call>{"name": "answer", "arguments": {"text": 5}}</tool_call>',
        '<tool_call>{"name": "search", "arguments": {"query": "x", "page": "two"}}</tool_call>',
        "<tool_call><function=answer><parameter=txt>| a |</parameter></function></tool_call>",
        "<tool_call><function=><parameter=query>x</parameter></function></tool_call>",
        "<search></search><open>ftp://nowhere</open><open>" + "x" * 100_000 + "</open>",
        "<tool_call>" * 20_000 + "</tool_call>",
        *(hermes(c) for c in garbage_calls(seed, 30) if c["name"] != "answer" or rng.random() < 0.1),
    ]
    rng.shuffle(texts)
    ends = [noise, '<tool_call>{"name": "answer", "arguments": {"text": "| a |"', "<answer>| Name |\n|---|\n| ? |",
            "a" * 2_000_000, "<function=answer><parameter=text>I don't know", "", "\ud800 \x00"]  # fmt: skip
    return texts + [rng.choice(ends), "I don't know."]  # an over-long answer is refused: the episode goes on


@pytest.mark.parametrize("seed", range(6))
def test_garbage_scores_zero_and_never_raises(items, seed):
    prompt, _, extras = items[seed % len(items)]
    env = make(extras)
    first, *steps, metrics = replay(env, prompt, garbage(seed))
    assert steps[-1]["done"] and [s["reward"] for s in steps] == [0.0] * len(steps)
    assert metrics["score"] == 0.0 and metrics["success"] == 0.0 and metrics["turns"] == len(steps)
    assert any("Error:" in m["content"] for s in steps for m in s["observations"])
    well_formed(env.step("<answer>again</answer>"))


def test_the_gold_table_outside_an_answer_earns_nothing(world, items):
    """The right table in a wrong argument, an unknown tool, a search, a thought, or a call left
    open before another: no answer, so the closing "I don't know." scores 0."""
    prompt, _, extras = items[0]
    gold = json.loads(oracle_texts(world, extras, hermes)[-1].split("<tool_call>")[1].split("</tool_call>")[0])
    table = gold["arguments"]["text"]
    for text in (hermes({"name": "answer", "arguments": {"txt": table}}), hermes({"name": "reply", "arguments": gold}),
                 xml({"name": "answr", "arguments": {"text": table}}), f"<search>{table}</search>",
                 f"<think>{table}</think><open>https://nowhere.invalid/</open>",
                 hermes(gold).removesuffix("\n</tool_call>") + hermes({"name": "search", "arguments": {"query": "x"}})):  # fmt: skip
        env = make(extras)
        *_, first, last, metrics = replay(env, prompt, [text, "I don't know."])
        assert not first["done"] and last["done"] and last["reward"] == 0.0 and metrics["score"] == 0.0
        assert all(isinstance(m["content"], str) for m in env.episode.env.messages)


def test_a_rows_reward_config_chooses_abstention_aware_scoring(items):
    """``extra_info.reward`` (or ``environment.skyrl_gym``'s env_config) is the env's
    RewardConfig: ``{"abstention": true}`` keeps blank cells out of precision's denominator."""
    from fictionworld.env.trainer import task_of

    prompt, _, extras = next(x for x in items if len(task_of(x[2]["extra_info"]["task"]).gold.rows) >= 2)
    task = task_of(extras["extra_info"]["task"])
    keys = {task.gold.columns.index(k) for k in task.evaluation.unique_columns}
    rows = [r if n == 0 else [c if j in keys else "N/A" for j, c in enumerate(r)] for n, r in enumerate(task.gold.rows)]
    reply = hermes({"name": "answer", "arguments": {"text": task.gold.model_copy(update={"rows": rows}).markdown()}})
    plain = replay(make(extras), prompt, [reply])[-2]["reward"]
    aware = replay(make(extras, reward={"abstention": True}), prompt, [reply])[-2]["reward"]
    assert aware > plain


def test_reasoning_is_never_the_answer(world, items):
    """A hedge while thinking, the gold table in a block the template opened, or an answer call
    written while thinking: an error observation, the episode goes on, and "I don't know." after
    it scores 0; the same answer after the block scores 1."""
    prompt, _, extras = items[0]
    texts = oracle_texts(world, extras, hermes)
    gold = json.loads(texts[-1].split("<tool_call>")[1].split("</tool_call>")[0])
    table = gold["arguments"]["text"]
    for thought in (f"<think>maybe <answer>{table}</answer>, let me search more</think>",
                    f"so it is\n{table}\n</think>\n", f"<think>maybe {hermes(gold)}, let me search more"):  # fmt: skip
        env = make(extras)
        *_, first, last, metrics = replay(env, prompt, texts[:-1] + [thought, "I don't know."])
        assert not first["done"] and "Error: " in first["observations"][0]["content"], thought
        assert last["done"] and last["reward"] == 0.0 and metrics["score"] == 0.0
    env = make(extras)
    *_, last, metrics = replay(env, prompt, texts[:-1] + [f"<think>I have every row.</think>\n{hermes(gold)}"])
    assert last["done"] and last["reward"] == 1.0


def test_a_reply_cut_off_mid_call_is_a_malformed_call_not_the_answer(world, items):
    """SkyRL stops a turn at its token limit: a call cut off there (an unclosed ``<tool_call>``
    or tag) is a malformed call, answered with an error; the episode goes on, and the whole
    answer in the next turn scores 1."""
    prompt, _, extras = items[0]
    texts = oracle_texts(world, extras, hermes)
    for cut in (texts[-1][: len(texts[-1]) // 2], texts[-1].rstrip().removesuffix("</tool_call>"),
                oracle_texts(world, extras, tag)[-1].rstrip().removesuffix("</answer>"),
                texts[0] + "\n<tool_call>\n{\"name\": \"open\", \"arguments\": {\"url\": \"https://"):  # fmt: skip
        env = make(extras)
        *_, cut_off, last, metrics = replay(env, prompt, texts[:-1] + [cut, texts[-1]])
        assert not cut_off["done"] and "was cut off or left open" in cut_off["observations"][-1]["content"], cut
        assert last["done"] and last["reward"] == 1.0 and metrics["answered"] == 1.0


def test_a_row_without_world_or_task_is_refused(items):
    _, _, extras = items[0]
    with pytest.raises(ValueError, match="extra_info.world"):
        skyrl_gym.make("fictionworld", env_config={}, extras={"reward_spec": extras["reward_spec"]})
    info = {k: v for k, v in extras["extra_info"].items() if k != "task"}
    env = skyrl_gym.make("fictionworld", env_config={}, extras={**extras, "extra_info": info})  # ground truth serves
    assert env.episode.task.instance_id == extras["extra_info"]["instance_id"]


# -- (b) 32 threads, one shared world ----------------------------------------------------------------
def test_32_threads_step_like_serial(world, items):
    """SkyRL's agent loop: envs made on the event loop, their init/step/close in a pool of 32
    threads (``environment.skyrl_gym.max_env_workers``), trajectories interleaved. The outputs
    equal a serial run's, for oracle replays (with and without injected faults) and garbage."""
    plan = []
    for i, (prompt, _, extras) in enumerate(items):
        calls = oracle_texts(world, extras, hermes, per_turn=2)
        for seed_shift in range(5):  # five rollouts of a row, as GRPO's n samples
            info = {"seed": int(extras["extra_info"]["seed"]) + seed_shift}
            plan.append((prompt, extras, {}, calls))
            plan.append((prompt, extras, info | {"knobs": json.dumps({"fault_rate": 0.4})}, calls))
            plan.append((prompt, extras, info, garbage(10 * i + seed_shift)[:12]))
    serial = [replay(make(extras, **info), prompt, texts) for prompt, extras, info, texts in plan]

    async def trajectory(pool, prompt, extras, info, texts):
        loop = asyncio.get_running_loop()
        env = make(extras, **info)
        outs = [await loop.run_in_executor(pool, env.init, copy.deepcopy(prompt))]
        for text in texts:
            out = await loop.run_in_executor(pool, env.step, text)
            for call in out["metadata"].get("calls", ()):
                call.pop("seconds")
            outs.append(out)
            if out["done"]:
                break
        await loop.run_in_executor(pool, env.close)
        return outs + [env.get_metrics()]

    async def all_at_once():
        with ThreadPoolExecutor(max_workers=32, thread_name_prefix="skyrl-gym-env-") as pool:
            return await asyncio.gather(*(trajectory(pool, *p) for p in plan))

    threaded = asyncio.run(all_at_once())
    assert len(plan) == 60 and threaded == serial
    assert [s[-1]["score"] for s, p in zip(serial, plan) if not p[2]] == [1.0] * 5 * len(items)


# -- (c) skyrl-gym's own search env against `fictionworld serve` ----------------------------------------
@pytest.mark.cli
def test_skyrl_search_env_against_the_server(saved_world, world):
    from test_serve import running

    name = world.entities.name[12]
    extras = {"reward_spec": {"method": "rule", "ground_truth": {"target": [name]}}, "max_turns": 3}
    with running(saved_world, "--workers", "1") as server:
        config = SearchEnvConfig(search_url=server.url + "/retrieve", topk=3, log_requests=False)
        env = skyrl_gym.make("search", env_config=config, extras=copy.deepcopy(extras))
        prompt, _ = env.init([{"role": "user", "content": "Who?"}])
        out = env.step(f"I should search. <search>{name}</search>")
        text = out["observations"][0]["content"]
        assert not out["done"] and out["reward"] == 0 and text.startswith("\n<information>")
        result = json.loads(text.strip().removeprefix("<information>").removesuffix("</information>"))["result"]
        assert result.startswith("Doc 1: ") and "Doc 3: " in result and name in result
        found = result.split('"')[1]  # the first passage's title: our page about it
        assert env.step(f"<answer>{found}</answer>") == {"observations": [], "reward": 1.0, "done": True,
                                                          "metadata": {}}  # fmt: skip
        env = skyrl_gym.make("search", env_config=config, extras=copy.deepcopy(extras))
        env.step("<search>nothing at all zzqx</search>")
        assert env.step("<answer>Nobody</answer>")["reward"] == 0


# -- (d) the exported Parquet and script -----------------------------------------------------------------
def test_export_rows_in_skyrls_schema(export, items, tasks, saved_world):
    assert (export["train_rows"], export["val_rows"]) == (3, 1) and export["world"] == str(saved_world.resolve())
    by_index = {extras["extra_info"]["index"]: (prompt, extras) for prompt, _, extras in items}
    assert sorted(by_index) == [0, 1, 2, 3]
    for i, (prompt, extras) in by_index.items():
        assert set(extras) == {"data_source", "reward_spec", "extra_info"} and extras["data_source"] == "fictionworld"
        assert [m["role"] for m in prompt] == ["system", "user"] and prompt[1]["content"] == tasks[i].query
        assert "<search>" in prompt[0]["content"] and "<tool_call>" in prompt[0]["content"]
        assert extras["reward_spec"] == {"method": "rule", "ground_truth": task_json(tasks[i])}
        info = extras["extra_info"]
        assert info["task"] == task_json(tasks[i]) and info["world"] == export["world"] and info["tools"] == "basic"
        assert isinstance(info["seed"], int) and info["knobs"] == ""
        env = make(extras)
        assert env.init([prompt[1]])[0] == prompt  # a prompt without a system message gets the env's


def test_export_script_and_refusals(export, tasks, saved_world, tmp_path):
    text = Path(export["script"]).read_text().replace("\\\n", " ")
    line = next(x for x in text.splitlines() if "skyrl.train.entrypoints.main_base" in x)
    args = shlex.split(line.replace('"$HERE"', shlex.quote(export["out"])))
    args = args[args.index("skyrl.train.entrypoints.main_base") + 1 :]
    assert args[-1] == "$@" and args[:-1] == [a.replace("$HERE", export["out"]) for a in export["overrides"]]
    assert "trainer.override_entrypoint=fictionworld.integrations.skyrl" in args
    assert {"environment.env_class=fictionworld", f"data.train_data=['{export['train']}']", "generator.max_turns=30",
            "trainer.max_prompt_length=4096", "trainer.logger=console"} <= set(args)  # fmt: skip
    told = fs.export_skyrl(tasks, saved_world, tmp_path / "wandb", logger="wandb")["overrides"]
    assert "trainer.logger=wandb" in told and "trainer.logger=console" not in told
    with pytest.raises(ValueError, match="one name"):
        fs.export_skyrl(tasks, saved_world, tmp_path / "two", logger="console,wandb")
    assert importlib.import_module(fs.MODULE) is fs and callable(fs.main)  # main_base: import_module(value).main()
    alone = fs.export_skyrl(tasks[:1], saved_world, tmp_path / "one", val_fraction=0.0, tools="memory")
    assert alone["val_rows"] == 0 and {"data.val_data=[]", "trainer.eval_interval=-1"} <= set(alone["overrides"])
    with pytest.raises(ValueError, match="tool set"):
        fs.export_skyrl(tasks, saved_world, tmp_path / "bad", tools="nope")


@pytest.mark.cli
def test_export_skyrl_command(saved_world, tasks, tmp_path):
    from fictionworld.tasks.model import write_tasks

    write_tasks(tasks, tmp_path / "tasks.jsonl")
    cli = [sys.executable, "-m", "fictionworld.cli", "export", "skyrl", str(tmp_path / "tasks.jsonl"), "--world"]
    r = subprocess.run([*cli, str(saved_world), "--out", str(tmp_path / "o"), "--max-turns", "12", "--tools", "memory"],
                       capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "generator.max_turns=12" in (tmp_path / "o" / "train.sh").read_text() and "train_rows: 3" in r.stdout
    r = subprocess.run([*cli, str(tmp_path / "nope"), "--out", str(tmp_path / "o2")], capture_output=True, text=True)
    assert r.returncode == 2 and "error: --world" in r.stderr and not (tmp_path / "o2").exists()


# -- (e) registration and the entrypoint ---------------------------------------------------------------
def test_register_env_is_idempotent_and_refuses_another_env():
    fs.register_env()
    fs.register_env()
    assert skyrl_gym.registry[fs.ENV_ID].entry_point == fs.ENTRY_POINT
    skyrl_gym.register(id="fw-taken", entry_point="skyrl_gym.envs.gsm8k.env:GSM8kEnv")
    try:
        with pytest.raises(ValueError, match="already registered"):
            fs.register_env("fw-taken")
    finally:
        skyrl_gym.envs.registration.deregister("fw-taken")


def test_importing_fictionworld_never_imports_skyrl_gym():
    code = "import fictionworld, fictionworld.env.trainer, sys; print('skyrl_gym' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


def test_main_registers_the_env_inside_the_ray_task(items, monkeypatch):
    """``main`` as SkyRL's ``main_base`` calls it (``import_module(value).main()`` with its own
    argv): the flag left out of the strict parse, the config validated, Ray started, and the
    experiment run in a Ray task that registers the env first. Stand-ins for SkyRL's modules
    and Ray record the calls; the task runs in a process whose registry lacks the env."""
    seen: dict = {}
    _, _, extras = items[0]

    class Config:
        @staticmethod
        def from_cli_overrides(args):
            seen["args"] = args
            return {"cfg": args}

    class BasePPOExp:
        def __init__(self, cfg):
            seen["cfg"] = cfg

        def run(self):  # what SkyRL's generator does with each row
            seen["made"] = type(make(extras)).__name__

    def remote(**options):
        seen["options"] = options
        return lambda fn: types.SimpleNamespace(remote=lambda cfg: fn(cfg))

    modules = {"ray": types.SimpleNamespace(remote=remote, get=lambda x: x),
               "skyrl.train.config": types.SimpleNamespace(SkyRLTrainConfig=Config),
               "skyrl.train.utils": types.SimpleNamespace(validate_cfg=lambda cfg: seen.setdefault("valid", cfg)),
               "skyrl.train.utils.utils": types.SimpleNamespace(initialize_ray=lambda cfg: seen.setdefault("ray", cfg)),
               "skyrl.train.entrypoints.main_base": types.SimpleNamespace(BasePPOExp=BasePPOExp)}  # fmt: skip
    for name in ("skyrl", "skyrl.train", "skyrl.train.entrypoints"):
        modules[name] = types.ModuleType(name)
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    argv = ["main_base.py", "environment.env_class=fictionworld", f"{fs.OVERRIDE_FLAG}{fs.MODULE}", "trainer.seed=3"]
    monkeypatch.setattr(sys, "argv", argv)
    monkeypatch.delitem(skyrl_gym.registry, fs.ENV_ID)
    importlib.import_module(fs.MODULE).main()
    assert seen["args"] == ["environment.env_class=fictionworld", "trainer.seed=3"]
    assert seen["valid"] == seen["ray"] == seen["cfg"] == {"cfg": seen["args"]} and seen["options"] == {"num_cpus": 1}
    assert seen["made"] == "FictionWorldTextEnv" and fs.ENV_ID in skyrl_gym.registry
