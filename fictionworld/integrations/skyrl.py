"""SkyRL (skyrl-gym 0.4.0, SkyRL's trainer ``skyrl`` 0.4.0): fictionworld tasks as a ``BaseTextEnv``.

:func:`export_skyrl` writes ``train.parquet``, ``val.parquet`` (SkyRL's row schema) and
``train.sh`` (SkyRL's ``main_base`` with this module as its entrypoint)::

    >>> export_skyrl(fw.load_tasks("tasks.jsonl"), "worlds/w", "runs/skyrl")   # doctest: +SKIP
    $ bash runs/skyrl/train.sh trainer.placement.policy_num_gpus_per_node=4

**The contract, as SkyRL 0.4.0 implements it** (``skyrl/train/...``, read from its source):

- A row's ``prompt`` and ``env_class`` columns are taken out; *every other column* is the env's
  ``extras`` (``dataset/dataset.py``, ``PromptDataset.__getitem__``). The generator adds
  ``extras["max_turns"] = generator.max_turns`` and builds one env per trajectory with
  ``skyrl_gym.make(env_class, env_config=getattr(environment.skyrl_gym, env_class, {}),
  extras=extras)`` (``fictionworld/generators/skyrl_gym_generator.py``, ``agent_loop``). Its typed config
  rejects unknown keys (``environment.skyrl_gym.fictionworld.*`` fails), so ``env_config`` is
  ``{}`` here and the world folder, task, fault seed, knobs and tool set come from the row's
  ``extra_info`` column (the task also from ``reward_spec.ground_truth``).
- ``init(prompt)`` returns the chat the model starts from; ``step(text)`` gets the raw decoded
  text of each turn. ``init``, ``step`` and ``close`` run in a thread pool of
  ``environment.skyrl_gym.max_env_workers`` (32) threads; every env of a process shares the one
  world opened by :func:`~fictionworld.env.trainer.shared_world`, read-only.
- The chat template gets no ``tools``: the model learns the tools from the system message. The
  rows carry the env's own text-mode prompt (``EnvConfig(text_tags=True)``): ``<search>``,
  ``<open>``, ``<answer>`` tags, or JSON ``<tool_call>`` blocks; the env also reads Qwen3-Coder's
  ``<function=…>`` XML. Every turn reaches the env, so the env's rules hold as they are: a
  reply with no tool call is the final answer; reasoning (``<think>…</think>``) is never read as
  a call or the answer, and a reply of reasoning only, or one cut off inside a call (an unclosed
  ``<tool_call>`` or tag), is a malformed call: an error observation, and the episode goes on.
- The loop stops only on ``done`` or when the conversation exceeds
  ``generator.max_input_length`` (then no step is taken: reward 0). The env ends the episode
  at ``extras["max_turns"]`` (``generator.max_turns``, default **1**) and scores it as the env
  does on a truncation: the last text the agent wrote.
- Observations are ``user`` messages, SkyRL's convention. The reward is the env's (the
  strict item F1), given on the last step and 0 before; ``get_metrics()`` returns
  :data:`~fictionworld.env.trainer.REWARD_KEYS`, averaged by SkyRL as ``environment/<key>``.
- Envs are made in the process that runs SkyRL's Ray task, so the env must be registered
  there: ``trainer.override_entrypoint=fictionworld.integrations.skyrl`` makes SkyRL's
  ``main_base.main`` call this module's :func:`main`, which parses the config (without that
  flag, which its strict parse would reject) and runs ``BasePPOExp`` in a Ray task that calls
  :func:`register_env` first. ``python -m fictionworld.integrations.skyrl`` does the same.

Needs ``skyrl-gym`` (imported only by this module) and, to train, SkyRL (``skyrl[fsdp]``); the
export itself (:mod:`fictionworld.integrations.skyrl_export`, re-exported here) needs neither.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Mapping

import skyrl_gym
from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput

from fictionworld.env.trainer import Episode, reward_info, shared_world
from fictionworld.integrations.skyrl_export import (
    DATA_SOURCE,
    ENTRY_POINT,
    ENV_ID,
    MODULE,
    OVERRIDE_FLAG,
    export_skyrl,
)

__all__ = ["FictionWorldTextEnv", "register_env", "main", "run", "export_skyrl", "ENV_ID", "MODULE", "ENTRY_POINT",
           "DATA_SOURCE"]  # fmt: skip

_REGISTER_LOCK = threading.Lock()


class FictionWorldTextEnv(BaseTextEnv):
    """One trajectory: an :class:`~fictionworld.env.trainer.Episode` in the env's text mode,
    stepped with the model's raw text. ``extras`` is a row of :func:`export_skyrl` less its
    ``prompt`` and ``env_class`` (as SkyRL passes it); ``env_config`` (a mapping) may give
    defaults for ``extra_info``'s keys. Raises ValueError on a row with no world or task; a
    step never raises."""

    def __init__(self, env_config: Mapping | None = None, extras: Mapping | None = None):
        super().__init__()
        extras = dict(extras or {})
        info = {**dict(env_config or {}), **dict(extras.get("extra_info") or {})}
        task = info.get("task") or dict(extras.get("reward_spec") or {}).get("ground_truth")
        if not info.get("world") or not task:
            raise ValueError("a fictionworld row needs extra_info.world and the task (rows from export_skyrl)")
        self.max_turns = int(extras.get("max_turns") or info.get("max_turns") or 30)
        self.episode = Episode(shared_world(info["world"]).web, task, seed=int(info.get("seed") or 0),
                               knobs=info.get("knobs") or None, tools=info.get("tools") or "basic",
                               text_tags=True, max_turns=self.max_turns,
                               **({"reward": info["reward"]} if info.get("reward") else {}))  # fmt: skip

    def init(self, prompt):
        """The row's prompt as given, after the env's system message if it has none."""
        prompt = [dict(m) for m in prompt or ()]
        if not any(m.get("role") == "system" for m in prompt):
            prompt = [dict(self.episode.messages[0]), *(prompt or [dict(self.episode.messages[1])])]
        env = self.episode.env
        return prompt, {"task_id": env.task.instance_id, "seed": env.seed, "tools": list(env.tool_names)}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """One turn: every call in ``action`` runs (the env reads them); ``done`` on the answer,
        at ``max_turns``, or on a step after the end."""
        obs, reward, terminated, truncated, info = self.episode.env.step(action)
        self.turns = self.episode.env.turn  # a step after the end is no turn
        done = bool(terminated or truncated)
        if done:
            info["reward_info"] = self.reward_info()
        return BaseTextEnvStepOutput(observations=obs, reward=float(reward), done=done, metadata=info,
                                     postprocessed_action=None)  # fmt: skip

    def reward_info(self) -> dict[str, float]:
        """:data:`REWARD_KEYS` of the episode so far (all 0 until it ends)."""
        env = self.episode.env
        return reward_info(env.scores if env.done else None, answered=env.reason == "answer")

    def get_metrics(self) -> dict[str, float]:
        return self.reward_info() | {"turns": float(self.turns), "tool_calls": float(len(self.episode.env.steps))}


def register_env(env_id: str = ENV_ID) -> None:
    """Registers :class:`FictionWorldTextEnv` with skyrl-gym as ``env_id`` (once; safe to call
    again, from any thread). Raises ValueError if ``env_id`` names another env."""
    with _REGISTER_LOCK:
        spec = skyrl_gym.registry.get(env_id)
        if spec is None:
            skyrl_gym.register(id=env_id, entry_point=ENTRY_POINT)
        elif spec.entry_point not in (ENTRY_POINT, FictionWorldTextEnv):
            raise ValueError(f"skyrl-gym env {env_id!r} is already registered as {spec.entry_point!r}")


# -- SkyRL's entrypoint -------------------------------------------------------------------------
def run(cfg) -> None:
    """What SkyRL's Ray task runs: the env registered, then ``BasePPOExp(cfg).run()``."""
    from skyrl.train.entrypoints.main_base import BasePPOExp

    register_env()
    BasePPOExp(cfg).run()


def main(argv: list[str] | None = None) -> None:
    """SkyRL's ``main_base.main`` with the fictionworld env registered in its Ray task: what
    ``trainer.override_entrypoint=fictionworld.integrations.skyrl`` dispatches to (it calls
    ``import_module(value).main()``). ``argv`` defaults to ``sys.argv[1:]``, less that flag."""
    import ray
    from skyrl.train.config import SkyRLTrainConfig
    from skyrl.train.utils import validate_cfg
    from skyrl.train.utils.utils import initialize_ray

    args = [a for a in (sys.argv[1:] if argv is None else argv) if not a.startswith(OVERRIDE_FLAG)]
    cfg = SkyRLTrainConfig.from_cli_overrides(args)
    validate_cfg(cfg)
    initialize_ray(cfg)
    ray.get(ray.remote(num_cpus=1)(run).remote(cfg))


if __name__ == "__main__":  # python -m fictionworld.integrations.skyrl KEY=VALUE ...: as SkyRL's main_base
    from fictionworld.integrations import skyrl as _module  # the importable module, so Ray pickles run by name

    _module.main()
