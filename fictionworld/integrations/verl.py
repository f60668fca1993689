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
later calls, dropped with the trajectory. The world is opened on a worker's first call, once, in
a thread: concurrent first calls await that one load and the event loop serves on meanwhile.
Each call's observation is the env's text; malformed calls come back as ``Error: …``
observations. The ``answer`` tool stores the answer in
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
verl's loop and is scored like any other text: no answer in it, reward 0. Reasoning blocks
(``<think>…</think>``) are never read as answers or calls: :func:`compute_score` and the loop's
score leave them out, and :class:`FictionWorldAgentLoop` parses calls outside them
(:class:`HermesOutsideReasoning`, which the exported script names as ``multi_turn.format`` for
verl's ``tool_agent`` loop too; verl's own Hermes parser runs a call written inside one).

Needs ``verl`` (the ``[verl]`` extra), imported only by this module; the export itself
(:mod:`fictionworld.integrations.verl_export`, re-exported here) does not.
"""

from __future__ import annotations

import asyncio
import functools
import weakref
from collections.abc import Mapping
from typing import Any

from verl.experimental.agent_loop.agent_loop import AgentLoopOutput, register
from verl.experimental.agent_loop.tool_agent_loop import AgentData, AgentState, ToolAgentLoop
from verl.experimental.agent_loop.tool_parser import HermesToolParser, ToolParser
from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

from fictionworld.env.reasoning import without_reasoning
from fictionworld.env.trainer import Episode, score_response, shared_world_async
from fictionworld.integrations.verl_export import (
    AGENT_NAME,
    ANSWER_KEY,
    DATA_SOURCE,
    TOOL_FORMAT,
    export_verl,
    verl_tool_schema,
)

__all__ = ["FictionWorldTool", "FictionWorldAgentLoop", "HermesOutsideReasoning", "compute_score", "export_verl",
           "verl_tool_schema", "ANSWER_KEY", "AGENT_NAME", "DATA_SOURCE", "TOOL_FORMAT"]  # fmt: skip


# One episode per trajectory, keyed on verl's AgentData: gone when verl drops the trajectory.
_EPISODES: weakref.WeakKeyDictionary[AgentData, Episode] = weakref.WeakKeyDictionary()


# -- tools ------------------------------------------------------------------------------------
async def _episode(agent_data, create_kwargs: Mapping) -> Episode:
    """The trajectory's episode, made from its row's ``create_kwargs`` on its first call. The
    world is opened once per worker, off the event loop (the other trajectories go on)."""
    episode = _EPISODES.get(agent_data)
    if episode is None:
        if not create_kwargs.get("world_dir") or not create_kwargs.get("task"):
            raise ValueError("fictionworld tools need create_kwargs with world_dir and task (rows from export_verl)")
        world = await shared_world_async(create_kwargs["world_dir"])
        episode = _EPISODES.get(agent_data)  # a call of the same turn may have made it meanwhile
        if episode is None:
            episode = _EPISODES[agent_data] = Episode(
                world.web, create_kwargs["task"], seed=int(create_kwargs.get("seed") or 0),
                knobs=create_kwargs.get("knobs") or None, tools=create_kwargs.get("tools") or "basic")  # fmt: skip
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
        episode = await _episode(agent_data, self._calls.get(instance_id, {}))
        text = episode.call(self.name, parameters)
        if episode.answer is not None:
            agent_data.extra_fields[ANSWER_KEY] = episode.answer
        return ToolResponse(text=text), 0.0, {}

    async def release(self, instance_id: str, **kwargs) -> None:
        self._calls.pop(instance_id, None)


# -- reward -----------------------------------------------------------------------------------
def compute_score(data_source=None, solution_str=None, ground_truth=None, extra_info=None, *,
                  abstention: bool = False, **kwargs) -> dict:  # fmt: skip
    """verl's custom reward function: :data:`REWARD_KEYS` (``score`` = strict item F1) of the
    answer recorded by the ``answer`` tool (``extra_info["fictionworld_answer"]``), else of the
    last ``answer`` call or ``<answer>`` tag in ``solution_str``; tool output is never scored.
    ``abstention`` (``reward.custom_reward_function.reward_kwargs.abstention=True``, which
    :class:`FictionWorldAgentLoop` reads too): the abstention-aware strict score. ``ground_truth`` is the task JSON (a bad one raises
    ValueError); nothing else raises."""
    recorded = extra_info.get(ANSWER_KEY) if isinstance(extra_info, Mapping) else None
    text = solution_str if isinstance(solution_str, str) else None
    return score_response(text, ground_truth, recorded=recorded, abstention=bool(abstention))


# -- agent loop -------------------------------------------------------------------------------
@ToolParser.register(TOOL_FORMAT)
class HermesOutsideReasoning(HermesToolParser):
    """verl's Hermes parser, reading ``<tool_call>`` blocks only outside reasoning blocks (the
    env's rule, :mod:`fictionworld.env.reasoning`): verl's own runs every block of the reply,
    so an ``answer`` call written while thinking ("maybe …, let me search more") would be
    taken. :class:`FictionWorldAgentLoop` uses it in place of verl's; the exported script sets
    ``actor_rollout_ref.rollout.multi_turn.format=fictionworld_hermes`` for verl's ``tool_agent``
    loop too."""

    async def extract_tool_calls(self, responses_ids: list[int], tools=None):
        loop = asyncio.get_running_loop()
        text = await loop.run_in_executor(None, self.tokenizer.decode, responses_ids)
        said = without_reasoning(text)
        if said != text:
            encode = functools.partial(self.tokenizer.encode, said, add_special_tokens=False)
            responses_ids = await loop.run_in_executor(None, encode)
        return await super().extract_tool_calls(responses_ids, tools)


@register(AGENT_NAME)
class FictionWorldAgentLoop(ToolAgentLoop):
    """verl's ``ToolAgentLoop`` that ends a trajectory at its ``answer`` and scores it itself;
    calls are read outside reasoning blocks (:class:`HermesOutsideReasoning`)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if type(self.tool_parser) is HermesToolParser:
            self.tool_parser = HermesOutsideReasoning(self.tokenizer)
        self.abstention = _abstention(self.config)

    async def run(self, sampling_params: dict[str, Any], priority: int = 0, **kwargs) -> AgentLoopOutput:
        output = await super().run(sampling_params, priority, **kwargs)
        # what verl's reward manager would score: the decoded response (an <answer> tag counts
        # there too) and the answer the tool recorded
        text = self.tokenizer.decode(output.response_ids, skip_special_tokens=True)
        info = score_response(text, _row_task(kwargs), recorded=output.extra_fields.get(ANSWER_KEY),
                              abstention=self.abstention)  # fmt: skip
        output.reward_score = info["score"]
        output.extra_fields["reward_extra_info"] = info
        return output

    async def _handle_processing_tools_state(self, agent_data: AgentData) -> AgentState:
        state = await super()._handle_processing_tools_state(agent_data)
        return AgentState.TERMINATED if ANSWER_KEY in agent_data.extra_fields else state


def _abstention(config) -> bool:
    """``reward.custom_reward_function.reward_kwargs.abstention`` of a verl config (what
    :func:`compute_score` is called with), False where unset."""
    try:
        return bool(config.reward.custom_reward_function.reward_kwargs.get("abstention", False))
    except AttributeError:  # (no such section: a config without a custom reward function)
        return False


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
