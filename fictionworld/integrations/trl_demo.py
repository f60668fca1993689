"""A real GRPO run with TRL on a CPU, in a minute or two: what ``fictionworld train-trl`` runs.

A tiny Qwen3-architecture model (built from a config, a few hundred thousand parameters) and a
byte-level BPE tokenizer trained here on the world's text (:mod:`fictionworld.testing.tiny_lm`:
**not a real model's tokenizer**, and nothing is downloaded) first learn, with 60 epochs of
TRL's ``SFTTrainer``, to do what the oracle does on a handful of deep tasks: call ``search``,
then ``answer`` in Qwen3's ``<tool_call>`` format. ``GRPOTrainer`` then trains it on the same
tasks with :class:`~fictionworld.integrations.trl.FictionWorldEnv` as its ``environment_factory``:
its rollouts call the env's tools and their reward is the env's ``get_reward()``. The point is
the plumbing, not a capable agent: the rewards are those of a memorising toy.

Needs the ``[trl]`` extra (``trl``, ``torch``, ``transformers``); imported only here.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from fictionworld.env.trainer import shared_world
from fictionworld.integrations.trl import TOOLS, FictionWorldEnv, dataset_row

__all__ = [
    "train_trl_demo",
    "demo_data",
    "sft_examples",
    "teach",
    "grpo_trainer",
    "reward_log",
    "plot_rewards",
    "what_it_shows",
    "REWARD_KEY",
    "OBSERVATION_CHARS",
]

REWARD_KEY = f"rewards/{FictionWorldEnv.__name__}/mean"  # TRL logs get_reward() under the env class's name
OBSERVATION_CHARS = 300  # tool output cut to this: a rollout then fits TRL's default 512-token completion


def tool_schemas() -> list[dict]:
    """The JSON schemas TRL renders for the env's tools (transformers' ``get_json_schema``)."""
    from transformers.utils import get_json_schema

    env = FictionWorldEnv()
    return [get_json_schema(getattr(env, name)) for name in sorted(TOOLS)]  # TRL lists methods by name


def _call(name: str, arguments: dict) -> dict:
    # arguments as JSON text (the template prints it as is): a dataset column of dicts would unify
    # the keys of every call's arguments, filling in nulls (search(…, text=None))
    call = {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}
    return {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": call}]}


def sft_examples(world, rows: list[dict], **env_config) -> list[dict]:
    """One conversation per row (``messages`` and ``tools``, SFTTrainer's format): the row's
    prompt, the oracle's first search with what :class:`FictionWorldEnv` (``env_config``)
    returns for it, then the oracle's answer."""
    from fictionworld.env.trainer import task_of
    from fictionworld.testing.trajectories import oracle_calls

    tools = json.dumps(tool_schemas())
    env = FictionWorldEnv(**env_config)
    out = []
    for row in rows:
        calls = oracle_calls(world, task_of(row["task"]), seed=row["seed"])
        search = next(c["arguments"] for c in calls if c["name"] == "search")
        answer = calls[-1]["arguments"]
        env.reset(**row)
        result = env.search(**search)
        messages = [*row["prompt"], _call("search", search), {"role": "tool", "name": "search", "content": result},
                    _call("answer", answer)]  # fmt: skip
        out.append({"messages": messages, "tools": tools})
    return out


def _common(out_dir: Path, seed: int) -> dict:
    return {"output_dir": str(out_dir), "use_cpu": True, "bf16": False, "fp16": False, "report_to": [],
            "save_strategy": "no", "seed": seed, "data_seed": seed, "logging_steps": 1,
            "dataloader_num_workers": 0, "gradient_checkpointing": False}  # fmt: skip


def teach(model, tokenizer, examples: list[dict], out_dir, *, epochs: int = 60, batch: int = 1, lr: float = 1e-2,
          warmup_steps: int = 10, seed: int = 0, progress: bool = True):  # fmt: skip
    """SFT warm-up with TRL's ``SFTTrainer`` on ``examples`` (loss on the assistant turns only,
    with TRL's training chat template, the one GRPO renders with): ``epochs`` passes, ``batch``
    examples per optimizer step, the rate rising over ``warmup_steps`` to ``lr``, then constant.
    Returns the trainer.

    One example a step by default, not four: on a CPU a step's cost grows with the batch (TRL
    1.16, this tiny model: 0.06–0.10 s a step at 1, 0.33–0.37 s at 4), and four times the updates
    per pass teach the format in fewer passes (six sets of 4 deep tasks on four worlds: loss
    0.0004–0.005 after 60 epochs, 240 steps; 150 steps of 4 reached 0.0006–0.0009, and GRPO's
    rewards after either warm-up were alike). ``benchmarks/bench_trl_warmup.py`` runs the two
    side by side: the old warm-up took 2.4× and 3.2× the new one's time on two worlds."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    args = SFTConfig(**_common(Path(out_dir), seed), num_train_epochs=epochs, learning_rate=lr,
                     per_device_train_batch_size=min(batch, len(examples)), assistant_only_loss=True,
                     lr_scheduler_type="constant_with_warmup", warmup_steps=warmup_steps, max_length=None,
                     disable_tqdm=not progress)  # fmt: skip
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(examples), processing_class=tokenizer)
    trainer.train()
    return trainer


def grpo_trainer(model, tokenizer, rows: list[dict], out_dir, *, steps: int = 4, num_generations: int = 4,
                 max_completion_length: int = 512, lr: float = 1e-3, seed: int = 0, progress: bool = True,
                 environment_factory=FictionWorldEnv, **config):  # fmt: skip
    """A ``GRPOTrainer`` over ``rows`` (from :func:`~fictionworld.integrations.trl.dataset_row`)
    with :class:`FictionWorldEnv` as its environment: one group of ``num_generations`` rollouts
    per optimizer step, ``steps`` steps. ``config``: more ``GRPOConfig`` fields."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is experimental in TRL 1.16
    args = GRPOConfig(**_common(Path(out_dir), seed), max_steps=steps, learning_rate=lr, lr_scheduler_type="constant",
                      num_generations=num_generations, per_device_train_batch_size=num_generations,
                      max_completion_length=max_completion_length, max_tool_calling_iterations=4, beta=0.0,
                      temperature=1.0, disable_tqdm=not progress, **config)  # fmt: skip
    return GRPOTrainer(model=model, processing_class=tokenizer, args=args, train_dataset=Dataset.from_list(rows),
                       environment_factory=environment_factory)  # fmt: skip


def reward_log(log_history: list[dict]) -> list[dict]:
    """One row per optimizer step of a GRPO run's ``trainer.state.log_history``: the env's mean
    reward (``get_reward``), its spread, the share of groups whose rollouts all scored alike
    (``frac_reward_zero_std``: their advantages are 0, so they give no gradient), the step's
    gradient norm, tool calls per rollout, and completion length."""
    keys = {"reward": REWARD_KEY, "reward_std": f"rewards/{FictionWorldEnv.__name__}/std",
            "groups_alike": "frac_reward_zero_std", "grad_norm": "grad_norm",
            "tool_calls_per_rollout": "tools/call_frequency", "tool_failures": "tools/failure_frequency",
            "completion_tokens": "completions/mean_length"}  # fmt: skip
    return [{"step": int(e["step"]), **{k: e.get(v) for k, v in keys.items()}} for e in log_history if REWARD_KEY in e]


def what_it_shows(rows: list[dict]) -> str:
    """What a GRPO run's :func:`reward_log` shows, in words. A step changes the model only when
    its group's rewards differ: GRPO's advantage is a rollout's reward against its group's mean,
    so a group that scored alike (all 1.0: a task the warm-up taught by heart; all 0.0) has
    advantages of 0 and, with ``beta=0``, a gradient of 0."""
    moved = [r for r in rows if (r["grad_norm"] or 0) > 0]
    alike = [r for r in rows if not (r["grad_norm"] or 0) > 0]
    if not moved:
        scores = sorted({f"{r['reward']:.2f}" for r in rows})
        return (f"No GRPO step changed the model: in each of the {len(rows)} steps every rollout of the group "
                f"scored the same ({', '.join(scores)}), so every advantage, and the gradient, was 0.")  # fmt: skip
    which = [str(r["step"]) for r in moved]
    steps = f"steps {', '.join(which[:-1])} and {which[-1]}" if len(which) > 1 else f"step {which[0]}"
    return (f"{len(moved)} of {len(rows)} GRPO steps changed the model ({steps}: rollouts that scored "
            f"differently, a gradient); {len(alike)} scored alike and changed nothing.")  # fmt: skip


def plot_rewards(rows: list[dict], path) -> Path:
    """A PNG of the env's mean reward per GRPO step."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.plot([r["step"] for r in rows], [r["reward"] for r in rows], marker="o")
    ax.set(xlabel="GRPO step", ylabel="mean reward (strict item F1)", ylim=(-0.05, 1.05),
           title="FictionWorldEnv.get_reward() per step")  # fmt: skip
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _world(out_dir: Path, world_dir, seed: int, entities: int):
    import fictionworld as fw

    if world_dir is not None:
        return shared_world(world_dir), Path(world_dir)
    path = out_dir / "world"
    if not path.is_dir():
        fw.generate(seed=seed, entities=entities).save(path)
    return shared_world(path), path


def demo_data(
    out_dir,
    *,
    world_dir=None,
    seed: int = 0,
    tasks: int = 4,
    entities: int = 1500,
    observation_chars: int = OBSERVATION_CHARS,
) -> tuple[Path, list[dict], list[dict], object]:
    """What the demo trains on: the world's directory (``world_dir``, else ``out_dir/world``,
    made if missing), ``tasks`` deep tasks as dataset rows, their SFT examples (tool output cut
    to ``observation_chars``) and a tokenizer trained on them."""
    import fictionworld as fw
    from fictionworld.testing.tiny_lm import build_tokenizer

    world, world_dir = _world(Path(out_dir), world_dir, seed, entities)
    deep = fw.make_tasks(world, tasks, kind="deep", seed=seed)  # one-cell answers: a tiny model can learn them
    rows = [dataset_row(t, world_dir, seed=seed + i) for i, t in enumerate(deep)]
    examples = sft_examples(world, rows, max_observation_chars=observation_chars)
    corpus = [m["content"] or json.dumps(m.get("tool_calls")) for e in examples for m in e["messages"]]
    tokenizer = build_tokenizer(corpus + [examples[0]["tools"]], vocab_size=1024)
    return world_dir, rows, examples, tokenizer


def train_trl_demo(out_dir, *, world_dir=None, steps: int = 4, seed: int = 0, tasks: int = 4, entities: int = 1500,
                   num_generations: int = 4, sft_epochs: int = 60, observation_chars: int = OBSERVATION_CHARS,
                   max_completion_length: int = 512, progress: bool = True) -> dict:  # fmt: skip
    """The whole demo: a world (``world_dir``, else ``out_dir/world``: reused if there, else a new one of ``entities``),
    ``tasks`` deep tasks, tokenizer and tiny model, ``sft_epochs`` of SFT warm-up, then ``steps``
    GRPO steps. Tool output is cut to ``observation_chars`` (the env's ``max_observation_chars``)
    so that a rollout fits TRL's default ``max_completion_length`` and a CPU's patience.
    Writes ``rewards.jsonl`` (one line per step, :func:`reward_log`), ``rewards.png`` and the
    trained ``model/`` under ``out_dir``; returns a summary (with the env instances' last
    rollouts: their tool calls and rewards)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from fictionworld.testing.tiny_lm import tiny_model

    started = time.perf_counter()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    world_dir, rows, examples, tokenizer = demo_data(out_dir, world_dir=world_dir, seed=seed, tasks=tasks,
                                                     entities=entities, observation_chars=observation_chars)  # fmt: skip
    env_config = {"max_observation_chars": observation_chars}
    model = tiny_model(tokenizer, seed=seed, rope_theta=20.0)
    sft = teach(model, tokenizer, examples, out_dir / "sft", epochs=sft_epochs, seed=seed, progress=progress)

    made: list[FictionWorldEnv] = []  # the env instances TRL pools (their last rollouts are kept)

    def factory() -> FictionWorldEnv:
        made.append(FictionWorldEnv(**env_config))
        return made[-1]

    trainer = grpo_trainer(sft.model, tokenizer, rows, out_dir / "grpo", steps=steps,
                           num_generations=num_generations, max_completion_length=max_completion_length, seed=seed,
                           progress=progress, environment_factory=factory)  # fmt: skip
    trainer.train()
    log = reward_log(trainer.state.log_history)
    (out_dir / "rewards.jsonl").write_text("".join(json.dumps(r) + "\n" for r in log))
    png = plot_rewards(log, out_dir / "rewards.png")
    trainer.save_model(str(out_dir / "model"))
    used = [e for e in made if e.episode is not None]
    return {
        "world": str(world_dir),
        "tasks": [r["instance_id"] for r in rows],
        "sft_loss": [e["loss"] for e in sft.state.log_history if "loss" in e],
        "steps": trainer.state.global_step,
        "rewards": log,
        "last_rollouts": [
            {
                "task": e.episode.task.instance_id,
                "calls": e.episode.calls,
                "answer": e.episode.answer,
                "reward": e.get_reward(),
            }
            for e in used
        ],
        "rewards_jsonl": str(out_dir / "rewards.jsonl"),
        "plot": str(png),
        "model": str(out_dir / "model"),
        "seconds": round(time.perf_counter() - started, 1),
    }
