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
  extras=extras)`` (``generators/skyrl_gym_generator.py``, ``agent_loop``). Its typed config
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
  ``<function=…>`` XML. Every turn reaches the env, so the env's rule holds as it is: a reply
  with no tool call is the final answer.
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

Needs ``skyrl-gym`` (imported only by this module) and, to train, SkyRL (``skyrl[fsdp]``).
"""

from __future__ import annotations

import shlex
import sys
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path

import skyrl_gym
from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput

from fictionworld.env.tools import TOOL_SETS
from fictionworld.env.trainer import Episode, export_rows, knobs_json, reward_info, shared_world, task_json

__all__ = ["FictionWorldTextEnv", "register_env", "main", "run", "export_skyrl", "ENV_ID", "MODULE", "ENTRY_POINT",
           "DATA_SOURCE"]  # fmt: skip

ENV_ID = "fictionworld"
MODULE = "fictionworld.integrations.skyrl"  # the value of trainer.override_entrypoint
ENTRY_POINT = f"{MODULE}:FictionWorldTextEnv"
DATA_SOURCE = "fictionworld"
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
                               text_tags=True, max_turns=self.max_turns)  # fmt: skip

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
OVERRIDE_FLAG = "trainer.override_entrypoint="


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


# -- export -------------------------------------------------------------------------------------
def export_skyrl(tasks, world_dir, out, *, val_fraction: float = 0.1, seed: int = 0, knobs=None,
                 tools: str = "basic", model_path: str = "Qwen/Qwen3-4B-Instruct-2507", max_turns: int = 30,
                 max_prompt_length: int = 4096, max_input_length: int = 32768, max_generate_length: int = 2048,
                 n_samples_per_prompt: int = 8, train_batch_size: int = 32,
                 overrides: Iterable[str] = ()) -> dict:  # fmt: skip
    """Write SkyRL's training folder for ``tasks`` (Tasks, or a tasks JSONL path) over the world
    saved at ``world_dir`` into ``out``: ``train.parquet``, ``val.parquet`` and ``train.sh``.
    Returns ``{"out", "train", "val", "script", "train_rows", "val_rows", "world", "overrides"}``.

    A row: ``data_source``, ``prompt`` (the env's text-mode system message and the query),
    ``env_class`` (``fictionworld``), ``reward_spec`` (``method``, ``ground_truth`` = the task
    JSON) and ``extra_info`` (``index``, ``split``, ``instance_id``, ``world``, ``task``, ``seed``,
    ``knobs``, ``tools``). The split and each row's fault seed come from ``seed``
    (:func:`~fictionworld.env.trainer.export_rows`). Raises ValueError on tasks of another world.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    if tools not in TOOL_SETS:
        raise ValueError(f"unknown tool set {tools!r}: one of {sorted(TOOL_SETS)}")
    world_dir, plan = export_rows(tasks, world_dir, val_fraction=val_fraction, seed=seed)
    web, knobs = shared_world(world_dir).web, knobs_json(knobs)
    rows: dict[str, list[dict]] = {"train": [], "val": []}
    for r in plan:
        opening = Episode(web, r.task, tools=tools, text_tags=True).messages  # the env's own system message
        rows[r.split].append({
            "data_source": DATA_SOURCE,
            "prompt": [{"role": m["role"], "content": m["content"]} for m in opening],
            "env_class": ENV_ID,
            "reward_spec": {"method": "rule", "ground_truth": task_json(r.task)},
            "extra_info": {"index": r.index, "split": r.split, "instance_id": r.task.instance_id,
                           "world": str(world_dir), "task": task_json(r.task), "seed": r.seed, "knobs": knobs,
                           "tools": tools},
        })  # fmt: skip
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for split, part in rows.items():
        pq.write_table(pa.Table.from_pylist(part, schema=_schema()), out / f"{split}.parquet")
    batch = min(train_batch_size, len(rows["train"]))
    args = [
        f"{OVERRIDE_FLAG}{MODULE}",
        f"environment.env_class={ENV_ID}",
        "data.train_data=['$HERE/train.parquet']",
        *(["data.val_data=['$HERE/val.parquet']"] if rows["val"] else ["data.val_data=[]", "trainer.eval_interval=-1"]),
        "trainer.algorithm.advantage_estimator=grpo",
        f"trainer.policy.model.path={model_path}",
        f"trainer.max_prompt_length={max_prompt_length}",  # SkyRL's 512 tokens silently drops longer prompts
        f"trainer.train_batch_size={batch}",
        f"trainer.policy_mini_batch_size={batch}",
        f"generator.n_samples_per_prompt={n_samples_per_prompt}",
        f"generator.max_turns={max_turns}",  # SkyRL's default is 1; the env ends the episode there
        f"generator.max_input_length={max_input_length}",  # the whole conversation, tool output too
        f"generator.sampling_params.max_generate_length={max_generate_length}",  # per turn
        "generator.batched=false",
        "generator.use_conversation_multi_turn=true",
        "environment.skyrl_gym.max_env_workers=32",
        "trainer.project_name=fictionworld",
        "trainer.run_name=grpo",
        *overrides,
    ]
    script = out / "train.sh"
    script.write_text(_script(args, len(rows["train"]), len(rows["val"])))
    script.chmod(0o755)
    return {"out": str(out), "train": str(out / "train.parquet"), "val": str(out / "val.parquet"),
            "script": str(script), "train_rows": len(rows["train"]), "val_rows": len(rows["val"]),
            "world": str(world_dir), "overrides": args}  # fmt: skip


def _schema():
    import pyarrow as pa

    message = pa.struct([("role", pa.string()), ("content", pa.string())])
    extra = pa.struct([("index", pa.int64()), ("split", pa.string()), ("instance_id", pa.string()),
                       ("world", pa.string()), ("task", pa.string()), ("seed", pa.int64()), ("knobs", pa.string()),
                       ("tools", pa.string())])  # fmt: skip
    return pa.schema([("data_source", pa.string()), ("prompt", pa.list_(message)), ("env_class", pa.string()),
                      ("reward_spec", pa.struct([("method", pa.string()), ("ground_truth", pa.string())])),
                      ("extra_info", extra)])  # fmt: skip


def _script(args: list[str], train_rows: int, val_rows: int) -> str:
    def quote(arg: str) -> str:  # $HERE expands, nothing else does
        return '"$HERE"'.join(shlex.quote(part) if part else "" for part in arg.split("$HERE"))

    lines = "".join(f"    {quote(a)} \\\n" for a in args)
    return (
        "#!/usr/bin/env bash\n"
        f"# GRPO with SkyRL 0.4 on fictionworld tasks ({train_rows} train, {val_rows} val rows), written by\n"
        "# fictionworld.integrations.skyrl.export_skyrl. Extra overrides given to this script win, e.g.\n"
        "#   bash train.sh trainer.placement.policy_num_gpus_per_node=4 generator.inference_engine.num_engines=4\n"
        "# The world folder named in the Parquet rows must be readable where SkyRL's generator runs.\n"
        "# SkyRL logs to wandb (WANDB_API_KEY) unless given trainer.logger=console.\n"
        "set -euo pipefail\n"
        'HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"\n'
        "python3 -m skyrl.train.entrypoints.main_base \\\n"
        f'{lines}    "$@"\n'
    )


if __name__ == "__main__":  # python -m fictionworld.integrations.skyrl KEY=VALUE ...: as SkyRL's main_base
    from fictionworld.integrations import skyrl as _module  # the importable module, so Ray pickles run by name

    _module.main()
