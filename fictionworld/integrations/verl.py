"""verl (0.9.1) adapter: fictionworld tasks as multi-turn GRPO training data for verl's agent loop.

:func:`export_verl` writes everything a run needs into one folder: ``train.parquet`` and
``val.parquet`` (verl's row schema; each row carries its task JSON as the ground truth and as the
tools' ``create_kwargs``), ``tools.yaml`` (this module's :class:`FictionWorldTool` once per tool
schema), ``agent_loop.yaml`` and ``train.sh`` (``python3 -m verl.trainer.main_ppo`` with GRPO and
multi-turn overrides; extra Hydra overrides given to the script are passed on)::

    >>> export_verl(fw.load_tasks("tasks.jsonl"), "worlds/w", "runs/verl")   # doctest: +SKIP
    $ bash runs/verl/train.sh trainer.n_gpus_per_node=4

How an episode runs. verl's ``ToolAgentLoop`` calls ``create`` → ``execute`` → ``release`` around
every single tool call, so the tool instance is per call; the episode (task, web session, knobs,
fault draws, the answer) is kept per trajectory instead, keyed on verl's ``AgentData`` in a weak
dictionary: created on a trajectory's first call from its row's ``create_kwargs``, reused by the
later calls, dropped with the trajectory. Each call's observation is the env's text; malformed
calls come back as ``Error: …`` observations. The ``answer`` tool stores the answer in
``agent_data.extra_fields["fictionworld_answer"]``, which verl hands to the reward function as
``extra_info`` (``tool_extra_fields``). A second ``answer`` gets "the episode is over": the first
answer stands.

Two ways to end and score a trajectory (``export_verl(agent=…)`` picks one for the rows):

* ``agent_name="fictionworld_agent"`` (default): :class:`FictionWorldAgentLoop`, a
  ``ToolAgentLoop`` that stops after the turn that called ``answer`` and sets ``reward_score``
  (the strict item F1) and ``reward_extra_info`` (:data:`REWARD_KEYS`) on its output, so verl's
  reward workers skip it. It scores exactly what :func:`compute_score` would. It is registered with verl's ``@register`` when this module is imported (the
  tools YAML imports it) and is also declared in ``agent_loop.yaml``
  (``actor_rollout_ref.rollout.agent.agent_loop_config_path``).
* ``agent_name="tool_agent"``: verl's own ``ToolAgentLoop``. ``answer`` does not stop it (the
  model is told the episode is over and usually stops); the reward worker calls
  :func:`compute_score` (``reward.custom_reward_function``) on the decoded response and the
  recorded answer.

In both, only an ``answer`` call (or an ``<answer>`` tag) gives the answer; the rows' system
prompt (:func:`~fictionworld.env.trainer.system_message`) says so. A reply with no tool call ends
verl's loop and is scored like any other text: no answer in it, reward 0.

Needs ``verl`` (the ``[verl]`` extra), imported only by this module.
"""

from __future__ import annotations

import shlex
import weakref
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from verl.experimental.agent_loop.agent_loop import AgentLoopOutput, register
from verl.experimental.agent_loop.tool_agent_loop import AgentData, AgentState, ToolAgentLoop
from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

from fictionworld.env.tools import TOOL_SETS, TOOLS
from fictionworld.env.trainer import (
    Episode,
    export_rows,
    knobs_json,
    score_response,
    shared_world,
    system_message,
    task_json,
)

__all__ = ["FictionWorldTool", "FictionWorldAgentLoop", "compute_score", "export_verl", "verl_tool_schema",
           "ANSWER_KEY", "AGENT_NAME", "DATA_SOURCE"]  # fmt: skip

ANSWER_KEY = "fictionworld_answer"  # agent_data.extra_fields key of the recorded answer
AGENT_NAME = "fictionworld_agent"
DATA_SOURCE = "fictionworld"

# One episode per trajectory, keyed on verl's AgentData: gone when verl drops the trajectory.
_EPISODES: weakref.WeakKeyDictionary[AgentData, Episode] = weakref.WeakKeyDictionary()


# -- tools ------------------------------------------------------------------------------------
def verl_tool_schema(name: str) -> dict:
    """The OpenAI schema of env tool ``name`` in the form verl's pydantic model keeps: per
    argument only ``type``, ``description`` and ``enum`` survive, so the constraints it would drop
    (``minimum``, ``items``, ``minItems`` …) are said in the description instead."""
    fn = TOOLS[name]["function"]
    props = {}
    for arg, spec in fn["parameters"]["properties"].items():
        notes = []
        if "items" in spec:
            notes.append(f"a list of {spec['items'].get('type', 'value')}s")
        if "minItems" in spec or "maxItems" in spec:
            notes.append(f"{spec.get('minItems', 0)} to {spec.get('maxItems', 'any number of')} items")
        if "minimum" in spec:
            notes.append(f"at least {spec['minimum']}")
        if "maximum" in spec:
            notes.append(f"at most {spec['maximum']}")
        description = spec.get("description", "")
        if notes:
            description = f"{description.rstrip('.')}; {', '.join(notes)}."
        props[arg] = {"type": spec["type"], "description": description}
        if "enum" in spec:
            props[arg]["enum"] = list(spec["enum"])
    params = {"type": "object", "properties": props, "required": list(fn["parameters"].get("required", []))}
    return {"type": "function", "function": {"name": name, "description": fn["description"], "parameters": params}}


def _episode(agent_data, create_kwargs: Mapping) -> Episode:
    """The trajectory's episode, made from its row's ``create_kwargs`` on its first call."""
    episode = _EPISODES.get(agent_data)
    if episode is None:
        if not create_kwargs.get("world_dir") or not create_kwargs.get("task"):
            raise ValueError("fictionworld tools need create_kwargs with world_dir and task (rows from export_verl)")
        world = shared_world(create_kwargs["world_dir"])
        episode = Episode(world.web, create_kwargs["task"], seed=int(create_kwargs.get("seed") or 0),
                          knobs=create_kwargs.get("knobs") or None, tools=create_kwargs.get("tools") or "basic")  # fmt: skip
        _EPISODES[agent_data] = episode
    return episode


class FictionWorldTool(BaseTool):
    """One env tool (``search``, ``open``, ``answer``, …) as a verl ``BaseTool``: its name is its
    schema's. The YAML may leave ``tool_schema`` out and give ``config.name`` instead."""

    def __init__(self, config: dict, tool_schema: OpenAIFunctionToolSchema | None = None):
        self._calls: dict[str, dict] = {}  # instance id -> create_kwargs, for the one call
        super().__init__(config, tool_schema)

    def get_openai_tool_schema(self) -> OpenAIFunctionToolSchema:
        return OpenAIFunctionToolSchema.model_validate(verl_tool_schema(self.config["name"]))

    async def create(self, instance_id: str | None = None, create_kwargs: dict | None = None, **kwargs):
        instance_id, response = await super().create(instance_id, **kwargs)
        self._calls[instance_id] = dict(create_kwargs or {})
        return instance_id, response

    async def execute(self, instance_id: str, parameters: Any, **kwargs) -> tuple[ToolResponse, float, dict]:
        agent_data = kwargs.get("agent_data")
        if agent_data is None:
            return ToolResponse(text="Error: fictionworld tools run inside verl's ToolAgentLoop."), 0.0, {}
        episode = _episode(agent_data, self._calls.get(instance_id, {}))
        text = episode.call(self.name, parameters)
        if episode.answer is not None:
            agent_data.extra_fields[ANSWER_KEY] = episode.answer
        return ToolResponse(text=text), 0.0, {}

    async def release(self, instance_id: str, **kwargs) -> None:
        self._calls.pop(instance_id, None)


# -- reward -----------------------------------------------------------------------------------
def compute_score(data_source=None, solution_str=None, ground_truth=None, extra_info=None, **kwargs) -> dict:
    """verl's custom reward function: :data:`REWARD_KEYS` (``score`` = strict item F1) of the
    answer recorded by the ``answer`` tool (``extra_info["fictionworld_answer"]``), else of the
    last ``answer`` call or ``<answer>`` tag in ``solution_str``; tool output is never scored.
    ``ground_truth`` is the task JSON (a bad one raises ValueError); nothing else raises."""
    recorded = extra_info.get(ANSWER_KEY) if isinstance(extra_info, Mapping) else None
    return score_response(solution_str if isinstance(solution_str, str) else None, ground_truth, recorded=recorded)


# -- agent loop -------------------------------------------------------------------------------
@register(AGENT_NAME)
class FictionWorldAgentLoop(ToolAgentLoop):
    """verl's ``ToolAgentLoop`` that ends a trajectory at its ``answer`` and scores it itself."""

    async def run(self, sampling_params: dict[str, Any], priority: int = 0, **kwargs) -> AgentLoopOutput:
        output = await super().run(sampling_params, priority, **kwargs)
        # what verl's reward manager would score: the decoded response (an <answer> tag counts
        # there too) and the answer the tool recorded
        text = self.tokenizer.decode(output.response_ids, skip_special_tokens=True)
        info = score_response(text, _row_task(kwargs), recorded=output.extra_fields.get(ANSWER_KEY))
        output.reward_score = info["score"]
        output.extra_fields["reward_extra_info"] = info
        return output

    async def _handle_processing_tools_state(self, agent_data: AgentData) -> AgentState:
        state = await super()._handle_processing_tools_state(agent_data)
        return AgentState.TERMINATED if ANSWER_KEY in agent_data.extra_fields else state


def _row_task(row: Mapping):
    """The task of a dataset row as verl passes it to ``run``: its ground truth, else the task
    in its tools' ``create_kwargs``."""
    reward_model = row.get("reward_model")
    if isinstance(reward_model, Mapping) and reward_model.get("ground_truth"):
        return reward_model["ground_truth"]
    for kwargs in (row.get("tools_kwargs") or {}).values():
        if (kwargs.get("create_kwargs") or {}).get("task"):
            return kwargs["create_kwargs"]["task"]
    raise ValueError("a fictionworld row needs reward_model.ground_truth (the task JSON)")


# -- export -----------------------------------------------------------------------------------
def export_verl(tasks, world_dir, out, *, val_fraction: float = 0.1, seed: int = 0, knobs=None,
                tools: str = "basic", agent: str = AGENT_NAME, model_path: str = "Qwen/Qwen3-4B-Instruct-2507",
                max_prompt_length: int = 4096, max_response_length: int = 16384,
                max_tool_response_length: int = 8000, max_parallel_calls: int = 5, max_assistant_turns: int = 30,
                n: int = 8, train_batch_size: int = 32, n_gpus_per_node: int = 8,
                overrides: Iterable[str] = ()) -> dict:  # fmt: skip
    """Write verl's training folder for ``tasks`` (Tasks, or a tasks JSONL path) over the world
    saved at ``world_dir`` into ``out``; returns ``{"out", "train", "val", "tools", "agent_loop",
    "script", "train_rows", "val_rows", "overrides"}``.

    The split is drawn from ``seed`` (``val_fraction`` of the tasks, at least one when there are
    two or more); each row's episode seed (fault draws) comes from ``seed`` and its task, so the
    ``n`` rollouts of a row see the same web (:func:`~fictionworld.env.trainer.export_rows`). ``max_tool_response_length`` is in characters
    (verl's default, 256, would cut every page). Raises ValueError on tasks made for another world.
    """
    import pandas as pd

    if tools not in TOOL_SETS:
        raise ValueError(f"unknown tool set {tools!r}: one of {sorted(TOOL_SETS)}")
    if agent not in (AGENT_NAME, "tool_agent"):
        raise ValueError(f"agent must be {AGENT_NAME!r} or 'tool_agent', not {agent!r}")
    world_dir, plan = export_rows(tasks, world_dir, val_fraction=val_fraction, seed=seed)
    knobs = knobs_json(knobs)
    system = system_message(tools)
    rows: dict[str, list[dict]] = {"train": [], "val": []}
    for r in plan:
        i, split, task = r.index, r.split, r.task
        gt = task_json(task)
        create = {"world_dir": str(world_dir), "task": gt, "seed": r.seed, "knobs": knobs, "tools": tools}
        rows[split].append({
            "data_source": DATA_SOURCE,
            "agent_name": agent,
            "prompt": [{"role": "system", "content": system}, {"role": "user", "content": task.query}],
            "ability": "search",
            "reward_model": {"style": "rule", "ground_truth": gt},
            "extra_info": {"index": i, "split": split, "instance_id": task.instance_id, "need_tools_kwargs": True,
                           "tools_kwargs": {name: {"create_kwargs": create} for name in TOOL_SETS[tools]}},
        })  # fmt: skip

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for split, split_rows in rows.items():
        pd.DataFrame(split_rows).to_parquet(out / f"{split}.parquet", index=False)
    tools_yaml = {"tools": [{"class_name": f"{__name__}.FictionWorldTool", "config": {"type": "native", "name": name},
                             "tool_schema": verl_tool_schema(name)} for name in TOOL_SETS[tools]]}  # fmt: skip
    (out / "tools.yaml").write_text(_yaml(tools_yaml))
    (out / "agent_loop.yaml").write_text(_yaml([{"name": AGENT_NAME, "_target_": f"{__name__}.FictionWorldAgentLoop"}]))
    args = _overrides(model_path=model_path, max_prompt_length=max_prompt_length,
                      max_response_length=max_response_length, max_tool_response_length=max_tool_response_length,
                      max_parallel_calls=max_parallel_calls, max_assistant_turns=max_assistant_turns, n=n,
                      train_batch_size=min(train_batch_size, len(rows["train"])), n_gpus_per_node=n_gpus_per_node,
                      agent=agent, has_val=bool(rows["val"])) + list(overrides)  # fmt: skip
    script = out / "train.sh"
    script.write_text(_script(args, len(rows["train"]), len(rows["val"])))
    script.chmod(0o755)
    return {"out": str(out), "train": str(out / "train.parquet"), "val": str(out / "val.parquet"),
            "tools": str(out / "tools.yaml"), "agent_loop": str(out / "agent_loop.yaml"), "script": str(script),
            "train_rows": len(rows["train"]), "val_rows": len(rows["val"]), "overrides": args}  # fmt: skip


def _yaml(obj) -> str:
    from omegaconf import OmegaConf

    return OmegaConf.to_yaml(OmegaConf.create(obj))


def _overrides(*, model_path, max_prompt_length, max_response_length, max_tool_response_length, max_parallel_calls,
               max_assistant_turns, n, train_batch_size, n_gpus_per_node, agent, has_val) -> list[str]:  # fmt: skip
    """The Hydra overrides of ``train.sh``; ``$HERE`` is the export folder."""
    mt = "actor_rollout_ref.rollout.multi_turn"
    return [
        "algorithm.adv_estimator=grpo",
        "algorithm.use_kl_in_reward=False",
        "data.train_files=$HERE/train.parquet",
        f"data.val_files=$HERE/{'val' if has_val else 'train'}.parquet",
        "data.prompt_key=prompt",
        "data.return_raw_chat=True",
        f"data.train_batch_size={train_batch_size}",
        f"data.max_prompt_length={max_prompt_length}",
        f"data.max_response_length={max_response_length}",
        "data.filter_overlong_prompts=True",
        "data.truncation=error",
        f"actor_rollout_ref.model.path={model_path}",
        "actor_rollout_ref.actor.use_kl_loss=True",
        "actor_rollout_ref.actor.kl_loss_coef=0.001",
        "actor_rollout_ref.actor.kl_loss_type=low_var_kl",
        f"actor_rollout_ref.actor.ppo_mini_batch_size={train_batch_size}",
        "actor_rollout_ref.actor.use_dynamic_bsz=True",
        f"actor_rollout_ref.actor.ppo_max_token_len_per_gpu={max_prompt_length + max_response_length}",
        "actor_rollout_ref.rollout.name=vllm",
        "actor_rollout_ref.rollout.mode=async",
        f"actor_rollout_ref.rollout.n={n}",
        f"{mt}.enable=True",
        f"{mt}.format=hermes",
        f"{mt}.tool_config_path=$HERE/tools.yaml",
        f"{mt}.max_tool_response_length={max_tool_response_length}",
        f"{mt}.max_parallel_calls={max_parallel_calls}",
        f"{mt}.max_assistant_turns={max_assistant_turns}",
        "actor_rollout_ref.rollout.agent.agent_loop_config_path=$HERE/agent_loop.yaml",
        f"actor_rollout_ref.rollout.agent.default_agent_loop={agent}",
        "reward.custom_reward_function.path=pkg://fictionworld.integrations.verl",
        "reward.custom_reward_function.name=compute_score",
        "trainer.project_name=fictionworld",
        "trainer.experiment_name=grpo",
        f"trainer.n_gpus_per_node={n_gpus_per_node}",
        "trainer.nnodes=1",
    ]


def _quote(arg: str) -> str:
    """``arg`` for bash: ``$HERE`` expands, nothing else does."""
    return "$HERE".join(shlex.quote(part) if part else "" for part in arg.split("$HERE")).replace("$HERE", '"$HERE"')


def _script(args: list[str], train_rows: int, val_rows: int) -> str:
    lines = "".join(f"    {_quote(a)} \\\n" for a in args)
    return (
        "#!/usr/bin/env bash\n"
        f"# GRPO with verl 0.9.1 on fictionworld tasks ({train_rows} train, {val_rows} val rows), written by\n"
        "# fictionworld.integrations.verl.export_verl. Extra Hydra overrides given to this script win:\n"
        "#   bash train.sh trainer.n_gpus_per_node=4 actor_rollout_ref.model.path=/models/qwen\n"
        "# The world folder named in the Parquet rows must be readable on every rollout worker.\n"
        "set -euo pipefail\n"
        'HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"\n'
        "python3 -m verl.trainer.main_ppo \\\n"
        f'{lines}    "$@"\n'
    )
