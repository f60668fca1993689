"""``fictionworld train-trl``: a real GRPO run with TRL on a CPU (added to the app by :func:`register`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from fictionworld.cli.common import check_output, entities_option, fail, load_world_dir, out

__all__ = ["register"]

MAX_STEPS = 1_000  # GRPO steps on a CPU: beyond is a typo


def train_trl(
    directory: Annotated[Path, typer.Option("--out", help="Where the world, reward log, plot and model go.")],
    steps: Annotated[int, typer.Option(help=f"GRPO steps, 1 to {MAX_STEPS:,}.", min=1, max=MAX_STEPS)] = 4,
    seed: Annotated[int, typer.Option(help="Seed of the world, tasks, model and training (>= 0).", min=0)] = 0,
    world: Annotated[
        Path | None, typer.Option("--world", help="A saved world to use (default: generate one under --out).")
    ] = None,
    tasks: Annotated[int, typer.Option(help="Deep tasks to train on, 1 to 64.", min=1, max=64)] = 4,
    entities: Annotated[int, entities_option("Size of the generated world")] = 1500,
    generations: Annotated[int, typer.Option(help="Rollouts per task (GRPO group), 2 to 16.", min=2, max=16)] = 4,
) -> None:
    """Train a tiny model (built here, not downloaded) with TRL's GRPOTrainer on FictionWorldEnv; plot its reward."""
    try:
        import trl  # noqa: F401
    except ImportError:
        fail("train-trl needs TRL: pip install 'fictionworld[trl]'")
    from fictionworld.integrations.trl_demo import train_trl_demo, what_it_shows

    check_output(directory, "--out", directory=True)
    if world is not None:
        load_world_dir(world)  # a bad --world fails here, in one line
    out.print(f"SFT warm-up, then {steps} GRPO steps × {generations} rollouts on {tasks} deep tasks "
              "(a tiny Qwen3-shaped model and a tokenizer trained here: not a real model)")  # fmt: skip
    s = train_trl_demo(directory, world_dir=world, steps=steps, seed=seed, tasks=tasks, entities=entities,
                       num_generations=generations)  # fmt: skip
    loss = s["sft_loss"]
    out.print(f"world: {s['world']}; SFT loss {loss[0]:.3f} → {loss[-1]:.3f} in {len(loss)} steps")
    t = Table(title="GRPO (reward: FictionWorldEnv.get_reward, strict item F1)", title_justify="left")
    for c in ("step", "mean reward", "reward spread", "gradient norm", "tool calls / rollout", "completion tokens"):
        t.add_column(c, justify="right")
    for r in s["rewards"]:
        t.add_row(str(r["step"]), f"{r['reward']:.3f}", f"{r['reward_std']:.3f}", f"{r['grad_norm'] or 0:.3g}",
                  f"{r['tool_calls_per_rollout']:.2f}", f"{r['completion_tokens']:.0f}")  # fmt: skip
    out.print(t)
    out.print(what_it_shows(s["rewards"]), highlight=False)
    out.print(f"rewards → {s['rewards_jsonl']}; plot → {s['plot']}; model → {s['model']} ({s['seconds']:.0f} s)")


def register(app: typer.Typer) -> None:
    """Adds ``train-trl`` to ``app``."""
    app.command("train-trl")(train_trl)
