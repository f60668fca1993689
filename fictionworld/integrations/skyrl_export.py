"""SkyRL's training folder for fictionworld tasks (:func:`export_skyrl`), written without
skyrl-gym or SkyRL: the rows name the env that :mod:`fictionworld.integrations.skyrl` registers
(its module docstring gives SkyRL's contract), and the launch script makes that module SkyRL's
entrypoint. Only training needs them."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from fictionworld.env.tools import TOOL_SETS
from fictionworld.env.trainer import Episode, export_rows, knobs_json, shared_world, task_json
from fictionworld.integrations.launch import launch_script

__all__ = ["export_skyrl", "ENV_ID", "MODULE", "ENTRY_POINT", "DATA_SOURCE", "OVERRIDE_FLAG"]

ENV_ID = "fictionworld"
MODULE = "fictionworld.integrations.skyrl"  # the value of trainer.override_entrypoint
ENTRY_POINT = f"{MODULE}:FictionWorldTextEnv"
DATA_SOURCE = "fictionworld"
OVERRIDE_FLAG = "trainer.override_entrypoint="


# -- export -------------------------------------------------------------------------------------
def export_skyrl(tasks, world_dir, out, *, val_fraction: float = 0.1, seed: int = 0, knobs=None,
                 tools: str = "basic", model_path: str = "Qwen/Qwen3-4B-Instruct-2507", max_turns: int = 30,
                 max_prompt_length: int = 4096, max_input_length: int = 32768, max_generate_length: int = 2048,
                 n_samples_per_prompt: int = 8, train_batch_size: int = 32, logger: str = "console",
                 overrides: Iterable[str] = ()) -> dict:  # fmt: skip
    """Write SkyRL's training folder for ``tasks`` (Tasks, or a tasks JSONL path) over the world
    saved at ``world_dir`` into ``out``: ``train.parquet``, ``val.parquet`` and ``train.sh``.
    Returns ``{"out", "train", "val", "script", "train_rows", "val_rows", "world", "overrides"}``.

    A row: ``data_source``, ``prompt`` (the env's text-mode system message and the query),
    ``env_class`` (``fictionworld``), ``reward_spec`` (``method``, ``ground_truth`` = the task
    JSON) and ``extra_info`` (``index``, ``split``, ``instance_id``, ``world``, ``task``, ``seed``,
    ``knobs``, ``tools``). The split and each row's fault seed come from ``seed``
    (:func:`~fictionworld.env.trainer.export_rows`). ``logger``: SkyRL's ``trainer.logger`` (its
    default, wandb, fails without a login). Raises ValueError on tasks of another world.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    if tools not in TOOL_SETS:
        raise ValueError(f"unknown tool set {tools!r}: one of {sorted(TOOL_SETS)}")
    if not isinstance(logger, str) or not logger.isidentifier():
        raise ValueError(f"SkyRL's trainer.logger is one name (console, wandb, tensorboard, mlflow), not {logger!r}")
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
        f"trainer.logger={logger}",  # SkyRL's default is wandb
        *overrides,
    ]
    script = out / "train.sh"
    notes = [f"GRPO with SkyRL 0.4 on fictionworld tasks ({len(rows['train'])} train, {len(rows['val'])} val rows), written by",
             f"{MODULE}.export_skyrl. Extra overrides given to this script win, e.g.",
             "  bash train.sh trainer.placement.policy_num_gpus_per_node=4 generator.inference_engine.num_engines=4",
             "The world folder named in the Parquet rows must be readable where SkyRL's generator runs.",
             f"Logs go to the {logger} logger; give trainer.logger=wandb (with WANDB_API_KEY) to log to wandb."]  # fmt: skip
    script.write_text(launch_script(notes, "skyrl.train.entrypoints.main_base", args))
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
