"""The TRL demo's SFT warm-up, one example a step against four, in one process.

    python benchmarks/bench_trl_warmup.py [--worlds 0:1500 3:1500] [--grpo-steps 4]

For each world (``seed:entities``), the demo's data (:func:`~fictionworld.integrations.trl_demo.demo_data`:
4 deep tasks, their SFT examples, the tokenizer) is made once; then each warm-up teaches a fresh
tiny model (same seed) and ``GRPOTrainer`` runs ``--grpo-steps`` steps on it, as
``fictionworld train-trl`` does:

- ``1 × 60 epochs``: the default (:func:`~fictionworld.integrations.trl_demo.teach`: one example a
  step, 10 warm-up steps to lr 1e-2);
- ``4 × 150 steps``: the warm-up before 10dee6e (four examples a step, lr 1e-2 constant).

It prints each warm-up's seconds, seconds a step, first and last loss and GRPO's rewards per
step, and the time of the old warm-up over the new one on the same world. The two run in
alternating order from world to world, so that a drift in the machine's speed falls on both.
A warm-up that works leaves rewards above 0: GRPO's rollouts then call ``search`` and answer.
Needs the ``[trl]`` extra. CPU only; about 90 s a world.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import line  # noqa: E402
from record import Record, add_options  # noqa: E402

WARMUPS = {"1 × 60 epochs": {"epochs": 60, "batch": 1, "warmup_steps": 10},
           "4 × 150 steps": {"epochs": 150, "batch": 4, "warmup_steps": 0}}  # fmt: skip


def run(name: str, data, out: Path, grpo_steps: int, seed: int = 0) -> dict:
    from fictionworld.integrations.trl import FictionWorldEnv
    from fictionworld.integrations.trl_demo import OBSERVATION_CHARS, grpo_trainer, reward_log, teach
    from fictionworld.testing.tiny_lm import tiny_model

    _, rows, examples, tokenizer = data
    model = tiny_model(tokenizer, seed=seed, rope_theta=20.0)
    t = time.perf_counter()
    sft = teach(model, tokenizer, examples, out / "sft", seed=seed, progress=False, **WARMUPS[name])
    seconds = time.perf_counter() - t
    loss = [e["loss"] for e in sft.state.log_history if "loss" in e]
    trainer = grpo_trainer(sft.model, tokenizer, rows, out / "grpo", steps=grpo_steps, seed=seed, progress=False,
                           environment_factory=lambda: FictionWorldEnv(max_observation_chars=OBSERVATION_CHARS))  # fmt: skip
    trainer.train()
    rewards = [r["reward"] for r in reward_log(trainer.state.log_history)]
    return {"seconds": seconds, "steps": len(loss), "first": loss[0], "last": loss[-1], "rewards": rewards}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--worlds", nargs="+", default=["0:1500", "3:1500"], help="seed:entities of each world")
    p.add_argument("--grpo-steps", type=int, default=4, help="GRPO steps after each warm-up (1 or more)")
    add_options(p)
    a = p.parse_args()
    if a.grpo_steps < 1:
        p.error("--grpo-steps must be 1 or more")
    with Record("trl_warmup", a) as rec:
        warmups(a, rec)


def warmups(a: argparse.Namespace, rec: Record) -> None:
    """Each world's two warm-ups, in alternating order, printed and recorded."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from fictionworld.integrations.trl_demo import demo_data

    print(line())
    base = Path(tempfile.mkdtemp(prefix="bench_trl_"))
    for i, spec in enumerate(a.worlds):
        seed, entities = (int(x) for x in spec.split(":"))
        data = demo_data(base / spec, seed=seed, entities=entities)
        order = list(WARMUPS) if i % 2 == 0 else list(reversed(WARMUPS))
        got = {name: run(name, data, base / spec / name.replace(" ", ""), a.grpo_steps) for name in order}
        for name in WARMUPS:
            r = got[name]
            print(f"world {spec:>10}  {name}: {r['seconds']:5.1f} s ({r['seconds'] / r['steps']:.3f} s a step, "
                  f"{r['steps']} steps)  loss {r['first']:.2f} → {r['last']:.4f}  "
                  f"GRPO rewards {' '.join(f'{x:.2f}' for x in r['rewards'])}", flush=True)  # fmt: skip
            at = {"world": spec, "warmup": name, "grpo_steps": a.grpo_steps}
            rec.figure("warm-up", r["seconds"], "s", **at)
            rec.figure("warm-up per step", r["seconds"] / r["steps"], "s", **at)
            rec.figure("warm-up steps", r["steps"], "", **at)
            rec.figure("loss", r["first"], "", **at, step="first")
            rec.figure("loss", r["last"], "", **at, step="last")
            for i, x in enumerate(r["rewards"], 1):
                rec.figure("GRPO reward", x, "", **at, step=i)
        old, new = got["4 × 150 steps"]["seconds"], got["1 × 60 epochs"]["seconds"]
        print(f"world {spec:>10}  old / new warm-up time: {old / new:.2f}×", flush=True)
        rec.ratio("warm-up time, 4 × 150 steps / 1 × 60 epochs", old, new, world=spec, grpo_steps=a.grpo_steps,
                  against="the default warm-up (1 × 60 epochs) on the same world and data, in the same process")  # fmt: skip
    print(line())


if __name__ == "__main__":
    main()
