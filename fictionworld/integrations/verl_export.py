"""verl's training folder for fictionworld tasks (:func:`export_verl`), written without verl.

The rows, tool YAML, agent-loop YAML and launch script name the adapter that runs them,
:mod:`fictionworld.integrations.verl` (its module docstring says how an episode runs). Only
training imports verl: a folder can be exported on a machine without it (the ``[verl]`` extra)
and trained on one with it.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from fictionworld.env.tools import TOOL_SETS, TOOLS
from fictionworld.env.trainer import export_rows, knobs_json, system_message, task_json
from fictionworld.integrations.launch import launch_script

__all__ = ["export_verl", "verl_tool_schema", "missing_trainer_packages", "ADAPTER", "ANSWER_KEY", "AGENT_NAME",
           "DATA_SOURCE", "LOGGERS", "TRAINER_PACKAGES", "GPU_INSTALL", "GPU_INSTALL_NOTE"]  # fmt: skip

ADAPTER = "fictionworld.integrations.verl"  # the module of the tool and agent-loop classes verl loads
ANSWER_KEY = "fictionworld_answer"  # agent_data.extra_fields key of the recorded answer
AGENT_NAME = "fictionworld_agent"
DATA_SOURCE = "fictionworld"
# multi_turn.format: verl's Hermes parser reading calls outside reasoning blocks, registered when
# verl imports ADAPTER (agent_loop.yaml names it, whichever loop is the default)
TOOL_FORMAT = "fictionworld_hermes"
# verl 0.9.1's ``Tracking.supported_backend`` (verl/utils/tracking.py): what trainer.logger may list.
LOGGERS = ("wandb", "mlflow", "swanlab", "vemlp_wandb", "tensorboard", "console", "clearml", "trackio", "file",
           "rl_insight")  # fmt: skip
# What verl 0.9.1's default trainer imports beyond ``pip install verl``: its v1 trainer
# (trainer.use_v1=True) ``import transfer_queue`` in main_ppo's TaskRunnerV1, and the rollout
# (actor_rollout_ref.rollout.name=vllm) needs vLLM. verl's ``[vllm]`` extra brings both, with the
# torch and transformers that vLLM is built for; fictionworld's ``[verl]`` extra does not (it
# pins the CPU releases the adapter is tested on).
TRAINER_PACKAGES = ("transfer_queue", "vllm")
GPU_INSTALL = 'pip install "verl[vllm]==0.9.1"'
GPU_INSTALL_NOTE = (f"on the GPU machine, {GPU_INSTALL} (TransferQueue, vLLM 0.24.0, torch 2.11.0, transformers "
                    "5.9.0), then fictionworld without its [verl] extra")  # fmt: skip


def missing_trainer_packages() -> list[str]:
    """Which of :data:`TRAINER_PACKAGES` this Python cannot import (found, never imported)."""
    missing = []
    for name in TRAINER_PACKAGES:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(name)
    return missing


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


# -- export -----------------------------------------------------------------------------------
def export_verl(tasks, world_dir, out, *, val_fraction: float = 0.1, seed: int = 0, knobs=None,
                tools: str = "basic", agent: str = AGENT_NAME, model_path: str = "Qwen/Qwen3-4B-Instruct-2507",
                max_prompt_length: int = 4096, max_response_length: int = 16384,
                max_tool_response_length: int = 8000, max_parallel_calls: int = 5, max_assistant_turns: int = 30,
                n: int = 8, train_batch_size: int = 32, n_gpus_per_node: int = 8,
                logger: Sequence[str] = ("console",), overrides: Iterable[str] = ()) -> dict:  # fmt: skip
    """Write verl's training folder for ``tasks`` (Tasks, or a tasks JSONL path) over the world
    saved at ``world_dir`` into ``out``; returns ``{"out", "train", "val", "tools", "agent_loop",
    "script", "train_rows", "val_rows", "overrides"}``.

    The split is drawn from ``seed`` (``val_fraction`` of the tasks, at least one when there are
    two or more); each row's episode seed (fault draws) comes from ``seed`` and its task, so the
    ``n`` rollouts of a row see the same web (:func:`~fictionworld.env.trainer.export_rows`). ``max_tool_response_length`` is in characters
    (verl's default, 256, would cut every page). ``logger``: verl's ``trainer.logger`` backends
    (:data:`LOGGERS`; verl's own default adds wandb, which fails without a login). With no
    validation rows (``val_fraction=0``) there is no ``val.parquet``: verl builds a validation
    set whatever happens (an empty one is a zero batch size), so ``train.sh`` names the training
    file there and turns validation off (``trainer.val_before_train=False``, ``test_freq=-1``).
    Raises ValueError on tasks made for another world or an unknown logger.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    if tools not in TOOL_SETS:
        raise ValueError(f"unknown tool set {tools!r}: one of {sorted(TOOL_SETS)}")
    if agent not in (AGENT_NAME, "tool_agent"):
        raise ValueError(f"agent must be {AGENT_NAME!r} or 'tool_agent', not {agent!r}")
    logger = [logger] if isinstance(logger, str) else list(logger)
    unknown = [x for x in logger if x not in LOGGERS]
    if unknown or not logger:
        raise ValueError(f"unknown verl logger {unknown[0] if unknown else ''!r}: give some of {', '.join(LOGGERS)}")
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
        if split_rows:
            pq.write_table(pa.Table.from_pylist(split_rows), out / f"{split}.parquet")
        else:  # no validation rows: no file (one left by an earlier export would mislead)
            (out / f"{split}.parquet").unlink(missing_ok=True)
    tools_yaml = {"tools": [{"class_name": f"{ADAPTER}.FictionWorldTool", "config": {"type": "native", "name": name},
                             "tool_schema": verl_tool_schema(name)} for name in TOOL_SETS[tools]]}  # fmt: skip
    (out / "tools.yaml").write_text(_yaml(tools_yaml))
    (out / "agent_loop.yaml").write_text(_yaml([{"name": AGENT_NAME, "_target_": f"{ADAPTER}.FictionWorldAgentLoop"}]))
    args = _overrides(model_path=model_path, max_prompt_length=max_prompt_length,
                      max_response_length=max_response_length, max_tool_response_length=max_tool_response_length,
                      max_parallel_calls=max_parallel_calls, max_assistant_turns=max_assistant_turns, n=n,
                      train_batch_size=min(train_batch_size, len(rows["train"])), n_gpus_per_node=n_gpus_per_node,
                      agent=agent, has_val=bool(rows["val"]), logger=logger) + list(overrides)  # fmt: skip
    script = out / "train.sh"
    notes = [f"GRPO with verl 0.9.1 on fictionworld tasks ({len(rows['train'])} train, {len(rows['val'])} val rows), written by",
             f"{ADAPTER}.export_verl. Extra Hydra overrides given to this script win:",
             "  bash train.sh trainer.n_gpus_per_node=4 actor_rollout_ref.model.path=/models/qwen",
             "  bash train.sh 'trainer.logger=[\"console\",\"wandb\"]'   # logs to the console only by default",
             "The world folder named in the Parquet rows must be readable on every rollout worker.",
             "verl's default trainer imports transfer_queue and rolls out with vLLM, which `pip install verl`",
             f"leaves out: {GPU_INSTALL_NOTE}."]  # fmt: skip
    warning = (f"train.sh: warning: verl 0.9.1's trainer needs {' and '.join(TRAINER_PACKAGES)}, which this python3 "
               f"cannot import; {GPU_INSTALL_NOTE}")  # fmt: skip
    script.write_text(launch_script(notes, "verl.trainer.main_ppo", args, needs=(TRAINER_PACKAGES, warning)))
    script.chmod(0o755)
    return {"out": str(out), "train": str(out / "train.parquet"),
            "val": str(out / "val.parquet") if rows["val"] else None, "tools": str(out / "tools.yaml"), "agent_loop": str(out / "agent_loop.yaml"), "script": str(script),
            "train_rows": len(rows["train"]), "val_rows": len(rows["val"]), "overrides": args}  # fmt: skip


def _yaml(obj) -> str:
    """``obj`` as YAML, written as ``OmegaConf.to_yaml`` writes it (the same bytes for every
    tool set) with PyYAML: omegaconf comes with verl, not with fictionworld."""
    import yaml

    return yaml.safe_dump(obj, sort_keys=False, default_flow_style=False, allow_unicode=True)


def _overrides(*, model_path, max_prompt_length, max_response_length, max_tool_response_length, max_parallel_calls,
               max_assistant_turns, n, train_batch_size, n_gpus_per_node, agent, has_val, logger) -> list[str]:  # fmt: skip
    """The Hydra overrides of ``train.sh``; ``$HERE`` is the export folder."""
    mt = "actor_rollout_ref.rollout.multi_turn"
    return [
        "algorithm.adv_estimator=grpo",
        "algorithm.use_kl_in_reward=False",
        "data.train_files=$HERE/train.parquet",
        f"data.val_files=$HERE/{'val' if has_val else 'train'}.parquet",  # verl always builds a validation set
        *([] if has_val else ["trainer.val_before_train=False", "trainer.test_freq=-1"]),
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
        f"{mt}.format={TOOL_FORMAT}",
        f"{mt}.tool_config_path=$HERE/tools.yaml",
        f"{mt}.max_tool_response_length={max_tool_response_length}",
        f"{mt}.max_parallel_calls={max_parallel_calls}",
        f"{mt}.max_assistant_turns={max_assistant_turns}",
        "actor_rollout_ref.rollout.agent.agent_loop_config_path=$HERE/agent_loop.yaml",
        f"actor_rollout_ref.rollout.agent.default_agent_loop={agent}",
        f"reward.custom_reward_function.path=pkg://{ADAPTER}",
        "reward.custom_reward_function.name=compute_score",
        "trainer.project_name=fictionworld",
        "trainer.experiment_name=grpo",
        f"trainer.logger={json.dumps(list(logger), separators=(',', ':'))}",  # verl's default adds wandb
        f"trainer.n_gpus_per_node={n_gpus_per_node}",
        "trainer.nnodes=1",
    ]
