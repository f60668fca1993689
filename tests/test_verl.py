"""The verl adapter against verl 0.9.1 itself, on CPU: its tool loader, reward loader and reward
manager, its dataset class, its Hydra config, and its ``ToolAgentLoop`` run with a scripted stand-in
for the LLM server (the oracle's calls as Hermes ``<tool_call>`` text, tokenized by a local
tokenizer)."""

from __future__ import annotations

import asyncio
import gc
import json
import shlex
from pathlib import Path

import pytest
from conftest import require  # noqa: E402

require("verl")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

import fictionworld as fw  # noqa: E402
from fictionworld.env.tools import TOOL_SETS  # noqa: E402
from fictionworld.env.trainer import REWARD_KEYS, Episode, task_json  # noqa: E402
from fictionworld.integrations import verl as fv  # noqa: E402
from fictionworld.tasks import TaskKnobs  # noqa: E402
from fictionworld.testing.tiny_lm import build_tokenizer  # noqa: E402
from fictionworld.testing.trajectories import garbage_calls, oracle_calls  # noqa: E402

VERL_CONFIG_DIR = Path(__import__("verl").__file__).parent / "trainer" / "config"


# -- fixtures -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tasks(world):
    # at most 10 rows: the oracle's calls fit the export's 30 assistant turns
    wide = fw.make_tasks(world, 2, kind="wide", seed=3, knobs=TaskKnobs(rows_max=10))
    return wide + fw.make_tasks(world, 1, kind="deep", seed=3)


@pytest.fixture(scope="module")
def export(tasks, saved_world, tmp_path_factory):
    return fv.export_verl(tasks, saved_world, tmp_path_factory.mktemp("verl"), val_fraction=0.34, seed=5)


@pytest.fixture(scope="module")
def rows(export):
    import pandas as pd

    frames = [pd.read_parquet(export[s]) for s in ("train", "val")]
    return [r for f in frames for r in f.to_dict("records")]


@pytest.fixture(scope="module")
def script_overrides(export) -> list[str]:
    """The Hydra overrides of the exported ``train.sh``, as bash would pass them."""
    text = Path(export["script"]).read_text().replace("\\\n", " ")
    command = next(line for line in text.splitlines() if "verl.trainer.main_ppo" in line)
    args = shlex.split(command.replace('"$HERE"', shlex.quote(export["out"])))
    return args[args.index("verl.trainer.main_ppo") + 1 : -1]  # the last is "$@"


@pytest.fixture(scope="module")
def trainer_config(script_overrides):
    """verl's ppo_trainer config composed with the script's overrides (a renamed key fails)."""
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(VERL_CONFIG_DIR), version_base=None):
        config = compose(config_name="ppo_trainer", overrides=script_overrides)
    config.actor_rollout_ref.rollout.prompt_length = 4096
    config.actor_rollout_ref.rollout.response_length = 60_000
    return config


@pytest.fixture(scope="module")
def tokenizer(world, tasks, export):
    corpus = [json.dumps(fv.verl_tool_schema(n)) for n in TOOL_SETS["basic"]]
    for task in tasks:
        corpus.append(task.query)
        ep = Episode(world.web, task, seed=0)
        for call in oracle_calls(world, task, seed=0):
            corpus.append(json.dumps(call))
            corpus.append(ep.call(call["name"], call["arguments"]))
    corpus.append(Path(export["tools"]).read_text())
    return build_tokenizer(corpus * 2, vocab_size=1024)


class ScriptedServerManager:
    """A stand-in for verl's LLM server manager, **not a model**: each ``generate`` returns the next
    scripted reply (a Hermes ``<tool_call>{json}</tool_call>``, or plain text) encoded with the
    local tokenizer and ended with ``<|im_end|>``, as a server's sampled tokens would be; after the
    script, a plain "Done." reply."""

    def __init__(self, tokenizer, replies: list[str]):
        self.tokenizer, self.replies, self.calls = tokenizer, list(replies), 0

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        from verl.workers.rollout.replica import TokenOutput

        text = self.replies[self.calls] if self.calls < len(self.replies) else "Done."
        self.calls += 1
        ids = self.tokenizer.encode(text, add_special_tokens=False) + [self.tokenizer.eos_token_id]
        return TokenOutput(token_ids=ids, log_probs=[0.0] * len(ids), stop_reason="completed")


def tool_call(call: dict) -> str:
    return "<tool_call>" + json.dumps({"name": call["name"], "arguments": call["arguments"]}) + "</tool_call>"


async def trajectory(cls, trainer_config, tokenizer, replies, row):
    """One trajectory of agent loop ``cls`` on ``row``, as verl runs it: a fresh loop instance made
    inside the running event loop, its ``run`` given the row's fields."""
    loop = make_loop(cls, trainer_config, tokenizer, replies)
    return loop, await loop.run({}, **row_kwargs(row))


def make_loop(cls, trainer_config, tokenizer, replies):
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap
    from verl.tools.tool_registry import initialize_tools_from_config
    from verl.utils.dataset.rl_dataset import RLHFDataset

    tools = initialize_tools_from_config(trainer_config.actor_rollout_ref.rollout.multi_turn.tool_config_path)
    return cls(trainer_config=DictConfigWrap(trainer_config), server_manager=ScriptedServerManager(tokenizer, replies),
               tokenizer=tokenizer, processor=None, dataset_cls=RLHFDataset,
               data_config=DictConfigWrap(trainer_config.data), hf_model_type="qwen3", tools=ToolListWrap(tools))  # fmt: skip


def row_kwargs(row) -> dict:
    """What verl's agent loop worker passes to ``run`` for a row read by RLHFDataset."""
    return {"raw_prompt": [dict(m) for m in row["prompt"]], "tools_kwargs": row["extra_info"]["tools_kwargs"],
            "reward_model": row["reward_model"], "extra_info": row["extra_info"], "data_source": row["data_source"]}  # fmt: skip


def oracle_replies(world, row) -> list[str]:
    ck = row["extra_info"]["tools_kwargs"]["search"]["create_kwargs"]
    return [tool_call(c) for c in oracle_calls(world, fw.Task.model_validate_json(ck["task"]), seed=int(ck["seed"]))]


def run(coro):
    return asyncio.run(coro)


# -- export, tools, reward loader, dataset, Hydra -------------------------------------------------
def test_export_rows_and_split(export, rows, tasks, saved_world, tmp_path):
    assert (export["train_rows"], export["val_rows"]) == (2, 1)
    assert sorted(r["extra_info"]["index"] for r in rows) == [0, 1, 2]
    row = rows[0]
    assert row["agent_name"] == fv.AGENT_NAME and row["data_source"] == fv.DATA_SOURCE
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    assert row["reward_model"]["ground_truth"] == task_json(tasks[row["extra_info"]["index"]])
    assert set(row["extra_info"]["tools_kwargs"]) == {"search", "open", "answer"}
    again = fv.export_verl(tasks, saved_world, tmp_path / "again", val_fraction=0.34, seed=5)
    assert Path(again["val"]).read_bytes() == Path(export["val"]).read_bytes()  # the split is the seed's
    other = tasks[0].model_copy(update={"world_hash": "0" * 64})
    with pytest.raises(ValueError, match="another world"):
        fv.export_verl([other], saved_world, tmp_path / "bad")


def test_tools_yaml_loads_through_verls_loader(export):
    from verl.tools.tool_registry import initialize_tools_from_config

    tools = initialize_tools_from_config(export["tools"])
    assert [type(t) for t in tools] == [fv.FictionWorldTool] * 3
    assert [t.name for t in tools] == ["search", "open", "answer"]
    page = tools[0].tool_schema.model_dump(exclude_unset=True, exclude_none=True)["function"]["parameters"]
    assert page["properties"]["page"]["type"] == "integer" and "at least 1" in page["properties"]["page"]["description"]
    assert page["required"] == ["query"]


def test_schemas_survive_verls_model():
    from verl.tools.schemas import OpenAIFunctionToolSchema

    for name in TOOL_SETS["all"]:
        ours = fv.verl_tool_schema(name)
        assert OpenAIFunctionToolSchema.model_validate(ours).model_dump(exclude_unset=True, exclude_none=True) == ours
    queries = fv.verl_tool_schema("web_search")["function"]["parameters"]["properties"]["queries"]
    assert "a list of strings" in queries["description"] and "1 to 5 items" in queries["description"]


def test_reward_loads_through_verls_loader(trainer_config, rows, world):
    from verl.trainer.ppo.reward import get_custom_reward_fn

    fn = get_custom_reward_fn(trainer_config)
    row = rows[0]
    gt = row["reward_model"]["ground_truth"]
    answer = oracle_calls(world, fw.Task.model_validate_json(gt))[-1]
    good = fn(data_source="fictionworld", solution_str=tool_call(answer), ground_truth=gt)
    assert set(good) == set(REWARD_KEYS) and good["score"] == 1.0
    assert fn(data_source="fictionworld", solution_str="no idea", ground_truth=gt)["score"] == 0


def test_parquet_loads_through_rlhf_dataset(export, tokenizer, trainer_config):
    from verl.utils.dataset.rl_dataset import RLHFDataset

    data = OmegaConf.create(OmegaConf.to_container(trainer_config.data, resolve=True))
    data.cache_dir = str(Path(export["out"]) / "cache")
    ds = RLHFDataset(data_files=export["train"], tokenizer=tokenizer, config=data)
    item = ds[0]
    assert item["agent_name"] == fv.AGENT_NAME and item["raw_prompt"][0]["role"] == "system"
    ck = item["tools_kwargs"]["answer"]["create_kwargs"]
    assert Path(ck["world_dir"]).is_dir() and fw.Task.model_validate_json(ck["task"])
    assert item["reward_model"]["ground_truth"] == ck["task"]


def test_script_overrides_compose(trainer_config, export):
    mt = trainer_config.actor_rollout_ref.rollout.multi_turn
    assert mt.enable and mt.format == fv.TOOL_FORMAT and mt.max_tool_response_length > 2000
    assert trainer_config.algorithm.adv_estimator == "grpo"
    assert trainer_config.actor_rollout_ref.rollout.agent.agent_loop_config_path == str(Path(export["agent_loop"]))
    assert OmegaConf.load(export["agent_loop"])[0]["_target_"] == "fictionworld.integrations.verl.FictionWorldAgentLoop"
    from hydra import compose, initialize_config_dir
    from hydra.errors import ConfigCompositionException

    with (
        initialize_config_dir(config_dir=str(VERL_CONFIG_DIR), version_base=None),
        pytest.raises(ConfigCompositionException),
    ):
        compose(config_name="ppo_trainer", overrides=["actor_rollout_ref.rollout.multi_turn.max_tool_chars=9"])


def compose_script(script: Path, *extra: str):
    """verl's ppo_trainer config composed with ``script``'s overrides, then ``extra`` (as given
    to the script: they come last)."""
    from hydra import compose, initialize_config_dir

    text = script.read_text().replace("\\\n", " ")
    command = next(line for line in text.splitlines() if "-m verl.trainer.main_ppo" in line)
    args = shlex.split(command.replace('"$HERE"', shlex.quote(str(script.parent))))
    with initialize_config_dir(config_dir=str(VERL_CONFIG_DIR), version_base=None):
        overrides = args[args.index("verl.trainer.main_ppo") + 1 : -1]
        return compose(config_name="ppo_trainer", overrides=[*overrides, *extra])


def test_script_logs_to_the_console_and_knows_verls_loggers(export, tasks, saved_world, tmp_path):
    """verl's own default, ["console", "wandb"], fails without a wandb login: the script's is
    the console; an override given to the script wins; the names are verl's own."""
    from verl.utils.tracking import Tracking

    from fictionworld.integrations import verl_export

    assert list(compose_script(Path(export["script"])).trainer.logger) == ["console"]
    given = compose_script(Path(export["script"]), 'trainer.logger=["console","wandb"]')
    assert list(given.trainer.logger) == ["console", "wandb"]
    assert tuple(Tracking.supported_backend) == verl_export.LOGGERS
    both = fv.export_verl(tasks, saved_world, tmp_path / "tb", logger=["console", "tensorboard"])
    assert list(compose_script(Path(both["script"])).trainer.logger) == ["console", "tensorboard"]
    with pytest.raises(ValueError, match="unknown verl logger 'stdout'"):
        fv.export_verl(tasks, saved_world, tmp_path / "bad", logger=["stdout"])


def test_what_verls_default_trainer_imports(export):
    """verl 0.9.1's main_ppo imports transfer_queue in its v1 task runner (the default,
    trainer.use_v1=True) and the script rolls out with vLLM: the packages export verl checks."""
    from fictionworld.integrations import verl_export

    main_ppo = (VERL_CONFIG_DIR.parent / "main_ppo.py").read_text()
    assert "import transfer_queue as tq" in main_ppo
    config = compose_script(Path(export["script"]))
    assert config.trainer.use_v1 and config.actor_rollout_ref.rollout.name == "vllm"
    assert verl_export.TRAINER_PACKAGES == ("transfer_queue", "vllm")


def test_no_validation_rows_compose_with_validation_off(tasks, saved_world, tmp_path):
    """val_fraction=0: no val.parquet (verl's val loader takes the whole set as one batch, and
    an empty set is a batch size of 0), the training file named in its place, validation off."""
    out = fv.export_verl(tasks, saved_world, tmp_path / "all", val_fraction=0)
    assert (out["train_rows"], out["val_rows"], out["val"]) == (3, 0, None)
    assert not (tmp_path / "all" / "val.parquet").exists()
    config = compose_script(Path(out["script"]))
    assert config.data.val_files == str(tmp_path / "all" / "train.parquet")
    assert config.trainer.val_before_train is False and config.trainer.test_freq == -1


# -- agent loops ------------------------------------------------------------------------------
def test_fictionworld_loop_reaches_reward_1(world, rows, trainer_config, tokenizer):
    replies = oracle_replies(world, rows[0]) + ["extra"]
    loop, out = run(trajectory(fv.FictionWorldAgentLoop, trainer_config, tokenizer, replies, rows[0]))
    assert out.reward_score == 1.0 and out.extra_fields["reward_extra_info"]["success"] == 1.0
    assert loop.server_manager.calls == len(oracle_replies(world, rows[0]))  # stopped at the answer
    assert sum(out.response_mask) < len(out.response_mask)  # tool output is in, masked out


def test_registered_and_yaml_loaded_loop(trainer_config, export):
    import hydra
    from verl.experimental.agent_loop.agent_loop import _agent_loop_registry

    assert _agent_loop_registry[fv.AGENT_NAME]["_target_"].endswith("FictionWorldAgentLoop")
    cfg = OmegaConf.load(export["agent_loop"])[0]
    assert hydra.utils.get_class(cfg["_target_"]) is fv.FictionWorldAgentLoop


def test_plain_tool_agent_loop_scored_by_verls_reward_manager(world, rows, trainer_config, tokenizer):
    from verl import DataProto
    from verl.experimental.agent_loop.tool_agent_loop import ToolAgentLoop
    from verl.trainer.ppo.reward import load_reward_manager

    row = rows[1]
    loop, out = run(trajectory(ToolAgentLoop, trainer_config, tokenizer, oracle_replies(world, row), row))
    assert out.reward_score is None and fv.ANSWER_KEY in out.extra_fields
    assert loop.server_manager.calls == len(oracle_replies(world, row)) + 1  # answer does not stop verl's loop
    # as AgentLoopWorker._compute_score hands one trajectory to the reward loop worker
    prompts, responses = torch.tensor([out.prompt_ids]), torch.tensor([out.response_ids])
    batch = {
        "prompts": prompts,
        "responses": responses,
        "attention_mask": torch.ones(1, prompts.size(1) + responses.size(1), dtype=torch.int64),
    }
    non_tensor = {k: np.array([v]) for k, v in row_kwargs(row).items() if k not in ("raw_prompt", "tools_kwargs")}
    non_tensor["tool_extra_fields"] = np.array([out.extra_fields], dtype=object)

    async def score():
        manager = load_reward_manager(trainer_config, tokenizer)
        return await manager.run_single(DataProto.from_dict(tensors=batch, non_tensors=non_tensor))

    result = run(score())
    assert result["reward_score"] == 1.0 and set(REWARD_KEYS) <= set(result["reward_extra_info"])
    # the decoded response alone (no recorded answer) scores the same
    text = tokenizer.decode(out.response_ids, skip_special_tokens=True)
    assert fv.compute_score("fictionworld", text, row["reward_model"]["ground_truth"])["score"] == 1.0


def test_abstention_comes_from_verls_reward_kwargs_in_compute_score_and_our_loop(rows, trainer_config):
    """``reward.custom_reward_function.reward_kwargs.abstention=True`` (what verl's
    get_custom_reward_fn binds to compute_score) switches both compute_score and
    FictionWorldAgentLoop, which scores trajectories itself, to the abstention-aware score."""
    import copy

    from omegaconf import open_dict
    from verl.trainer.ppo.reward import get_custom_reward_fn

    from fictionworld.env.trainer import task_of

    task = task_of(rows[0]["reward_model"]["ground_truth"])
    keys = {task.gold.columns.index(k) for k in task.evaluation.unique_columns}
    blank = [
        r if i == 0 else [c if j in keys else "N/A" for j, c in enumerate(r)] for i, r in enumerate(task.gold.rows)
    ]
    text = "<answer>\n" + task.gold.model_copy(update={"rows": blank}).markdown(task.headers or None) + "\n</answer>"
    config = copy.deepcopy(trainer_config)  # as `+reward.custom_reward_function.reward_kwargs.abstention=True`
    with open_dict(config):
        config.reward.custom_reward_function.path = fv.__file__
        config.reward.custom_reward_function.name = "compute_score"
        config.reward.custom_reward_function.reward_kwargs = {"abstention": True}
    assert fv._abstention(config) and not fv._abstention(trainer_config)
    bound = get_custom_reward_fn(config)
    plain = fv.compute_score("fictionworld", text, rows[0]["reward_model"]["ground_truth"])["score"]
    assert bound(data_source="fictionworld", solution_str=text, ground_truth=rows[0]["reward_model"]["ground_truth"],
                 extra_info={})["score"] > plain  # fmt: skip


def test_concurrent_trajectories_keep_their_own_episode(world, rows, trainer_config, tokenizer):
    async def both():
        cls = fv.FictionWorldAgentLoop
        return await asyncio.gather(*(trajectory(cls, trainer_config, tokenizer, oracle_replies(world, r), r)
                                      for r in rows[:2]))  # fmt: skip

    assert [out.reward_score for _, out in run(both())] == [1.0, 1.0]


def test_malformed_calls_are_observations(rows, trainer_config, tokenizer):
    replies = [tool_call(c) for c in garbage_calls(7, 20) if c["name"] != "answer"]
    replies += ['<tool_call>{"name": "search", "arguments": "{broken"}</tool_call>', tool_call({"name": "nope", "arguments": {}})]  # fmt: skip
    _, out = run(trajectory(fv.FictionWorldAgentLoop, trainer_config, tokenizer, replies, rows[0]))
    assert out.reward_score == 0.0 and out.num_turns >= 2 * len(replies)
    text = tokenizer.decode(out.response_ids, skip_special_tokens=True)
    assert "Unknown function 'nope'" in text and "Error:" in text
    # a <tool_call> block that is not JSON: verl's Hermes parser finds no call and the trajectory
    # ends; a reply without an answer call is no answer (the rows' system prompt says so)
    _, out = run(trajectory(fv.FictionWorldAgentLoop, trainer_config, tokenizer, ["<tool_call>{not json</tool_call>"],
                            rows[0]))  # fmt: skip
    assert out.reward_score == 0.0 and out.extra_fields["reward_extra_info"]["answered"] == 0.0
    # an <answer> tag in a reply counts, in our loop as in compute_score
    gt = fw.Task.model_validate_json(rows[0]["reward_model"]["ground_truth"])
    _, out = run(trajectory(fv.FictionWorldAgentLoop, trainer_config, tokenizer, [f"<answer>{gt.answer}</answer>"],
                            rows[0]))  # fmt: skip
    assert out.reward_score == 1.0


def test_episodes_dropped_when_trajectories_end(world, rows, trainer_config, tokenizer):
    for _ in range(6):
        replies = oracle_replies(world, rows[2])[:3]
        loop, out = run(trajectory(fv.FictionWorldAgentLoop, trainer_config, tokenizer, replies, rows[2]))
        assert out.reward_score == 0.0
        del loop, out
    gc.collect()
    assert len(fv._EPISODES) == 0


# -- compute_score, adversarial ------------------------------------------------------------------
def test_compute_score_adversarial(world, rows):
    gt = rows[0]["reward_model"]["ground_truth"]
    table = oracle_calls(world, fw.Task.model_validate_json(gt))[-1]["arguments"]["text"]
    in_page = f"<tool_call>{{\"name\": \"search\", \"arguments\": {{\"query\": \"x\"}}}}</tool_call>\nuser\n<tool_response>\n{table}\n</tool_response>"  # fmt: skip
    assert fv.compute_score("fictionworld", in_page, gt)["score"] == 0.0  # a page is not an answer
    assert fv.compute_score("fictionworld", table, gt)["score"] == 0.0  # nor is untagged text
    two = "".join(tool_call({"name": "answer", "arguments": {"text": t}}) for t in ("nothing", table))
    assert fv.compute_score("fictionworld", two, gt)["score"] == 1.0  # from text: the last answer call
    recorded = {fv.ANSWER_KEY: "nothing"}  # from the tool: the first answer stands
    assert fv.compute_score("fictionworld", two, gt, extra_info=recorded)["score"] == 0.0
    for junk in (None, "", "<tool_call>{", "\ud800" * 3, 7, b"x", "<answer>" * 1000):
        for info in (None, {}, {fv.ANSWER_KEY: 3}, "junk", {fv.ANSWER_KEY: None}):
            assert fv.compute_score("fictionworld", junk, gt, extra_info=info)["score"] == 0.0
    with pytest.raises(ValueError, match="not a fictionworld task"):
        fv.compute_score("fictionworld", table, "{}")


# -- reasoning is never an answer, nor a call ------------------------------------------------------
def test_reasoning_is_never_read_as_the_answer(world, rows, trainer_config, tokenizer):
    """A hedge while thinking ("maybe <answer>X</answer>, let me search more"), an answer call
    written inside the block, or reasoning the template opened: none of it is the answer, in our
    loop, in compute_score, and in verl's own loop given our parser; after the block it is."""
    row = rows[0]
    gt = row["reward_model"]["ground_truth"]
    gold = fw.Task.model_validate_json(gt).answer
    answer_call = tool_call({"name": "answer", "arguments": {"text": gold}})
    search = tool_call({"name": "search", "arguments": {"query": "company"}})
    hedges = [[f"<think>maybe <answer>{gold}</answer>, let me search more</think>"],
              [f"reasoning the template opened: <answer>{gold}</answer></think>I will look further."],
              [f"<think>maybe {answer_call}, let me search more</think>{search}", "I don't know."]]  # fmt: skip
    for replies in hedges:
        _, out = run(trajectory(fv.FictionWorldAgentLoop, trainer_config, tokenizer, replies, row))
        assert out.reward_score == 0.0 and fv.ANSWER_KEY not in out.extra_fields, replies
        text = tokenizer.decode(out.response_ids, skip_special_tokens=True)
        assert fv.compute_score("fictionworld", text, gt, extra_info=out.extra_fields)["score"] == 0.0
    _, out = run(trajectory(fv.FictionWorldAgentLoop, trainer_config, tokenizer,
                            [f"<think>I have it.</think>{answer_call}"], row))  # fmt: skip
    assert out.reward_score == 1.0
    # verl's own loop with its Hermes parser runs a call written while thinking; the exported
    # script names our parser as multi_turn.format, which verl's tool_agent loop then uses too
    from verl.experimental.agent_loop.tool_agent_loop import ToolAgentLoop

    replies = hedges[2]
    plain = OmegaConf.create(OmegaConf.to_container(trainer_config))
    plain.actor_rollout_ref.rollout.multi_turn.format = "hermes"
    _, out = run(trajectory(ToolAgentLoop, plain, tokenizer, replies, row))
    assert fv.ANSWER_KEY in out.extra_fields  # (verl's Hermes parser)
    assert trainer_config.actor_rollout_ref.rollout.multi_turn.format == fv.TOOL_FORMAT
    _, out = run(trajectory(ToolAgentLoop, trainer_config, tokenizer, replies, row))
    assert fv.ANSWER_KEY not in out.extra_fields and "Unknown" not in tokenizer.decode(out.response_ids)


# -- the world: loaded once per worker, off the event loop -------------------------------------------
def test_the_world_loads_once_off_the_event_loop(world, rows, saved_world, tmp_path, monkeypatch):
    """Eight trajectories' first calls at once on a worker that has not opened the world yet: one
    load, in a thread; the event loop keeps ticking meanwhile; a first caller cancelled while it
    waits leaves the load to the others."""
    import shutil
    import threading
    import time

    from verl.experimental.agent_loop.tool_agent_loop import AgentData

    from fictionworld.world import World

    folder = tmp_path / "w"  # a folder no test opened before: this process has not loaded it
    shutil.copytree(saved_world, folder)
    real, loads = World.load.__func__, []

    def slow_load(cls, *args, **kwargs):  # the real load, made slow enough to see a stall
        loads.append(threading.current_thread().name)
        time.sleep(1.0)
        return real(cls, *args, **kwargs)

    monkeypatch.setattr(World, "load", classmethod(slow_load))
    ck = dict(rows[0]["extra_info"]["tools_kwargs"]["search"]["create_kwargs"]) | {"world_dir": str(folder)}
    tool = fv.FictionWorldTool({"name": "search"})

    def agent() -> AgentData:
        return AgentData(messages=[], image_data=None, video_data=None, audio_data=None, mm_processor_kwargs=None,
                         metrics={}, request_id="r", tools_kwargs={})  # fmt: skip

    async def first_call(agent_data) -> str:
        instance, _ = await tool.create(create_kwargs=ck)
        response, _, _ = await tool.execute(instance, {"query": "company"}, agent_data=agent_data)
        return response.text

    async def main():
        gaps, done = [], asyncio.Event()

        async def tick():
            last = time.perf_counter()
            while not done.is_set():
                await asyncio.sleep(0.01)
                gaps.append(time.perf_counter() - last)
                last = time.perf_counter()

        ticker = asyncio.create_task(tick())
        agents = [agent() for _ in range(8)]
        cancelled = asyncio.create_task(first_call(agent()))
        await asyncio.sleep(0.2)
        cancelled.cancel()
        texts = await asyncio.gather(*(first_call(a) for a in agents))
        done.set()
        await ticker
        return texts, gaps, cancelled

    texts, gaps, cancelled = run(main())
    assert max(gaps) < 0.3, f"the event loop stalled {max(gaps):.2f} s while the world loaded"
    assert len(loads) == 1 and loads[0] != threading.main_thread().name
    assert cancelled.cancelled() and all(t.startswith("[1] ") for t in texts)  # the others got their results
