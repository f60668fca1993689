"""A small learnable search policy trained with GRPO on rewards from Ray rollouts.

The policy is not an LLM: per task kind (wide / deep) it is one softmax per decision of the
heuristic agent's :class:`~fictionworld.rollouts.agents.baseline.Strategy` (what to search for, whether to
split a year range into one query per year, how many results to open, whether to follow a
directory's pages, how many articles to read, how many links to follow for a multi-hop
column). Each iteration samples ``group`` strategies per training task, runs them as episodes
on the actor pool, turns the rewards into GRPO group advantages (zero-variance groups dropped)
and takes a policy-gradient step on the logits. Held-out tasks measure the policy's mean
reward (strategies sampled from it) before, during and after training.

What this shows: the rollout → reward → advantage → update loop works end to end and a policy
improves from the world's rewards alone. What it does not: that an LLM learns to search; that
is the ``openai`` agent plus a trainer (verl, TRL, SkyRL) consuming the exported episodes.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fictionworld.rollouts.agents.baseline import STRATEGY_CHOICES
from fictionworld.rollouts.pool import Job, RolloutPool
from fictionworld.rollouts.records import group_advantages
from fictionworld.seeding import rng as seeded_rng

__all__ = ["SoftmaxPolicy", "TrainResult", "train_policy"]


class SoftmaxPolicy:
    """Independent softmax distributions over each strategy field, one set per context."""

    def __init__(self, contexts=("wide", "deep"), choices: dict[str, tuple] | None = None):
        self.choices = dict(choices or STRATEGY_CHOICES)
        self.logits = {c: {f: np.zeros(len(v)) for f, v in self.choices.items()} for c in contexts}

    def probs(self, context: str) -> dict[str, np.ndarray]:
        out = {}
        for f, z in self.logits[context].items():
            e = np.exp(z - z.max())
            out[f] = e / e.sum()
        return out

    def sample(self, context: str, rng: np.random.Generator) -> dict[str, int]:
        return {f: int(rng.choice(len(p), p=p)) for f, p in self.probs(context).items()}

    def greedy(self, context: str) -> dict[str, int]:
        return {f: int(np.argmax(z)) for f, z in self.logits[context].items()}

    def strategy(self, picks: dict[str, int]) -> dict:
        return {f: self.choices[f][i] for f, i in picks.items()}

    def update(self, batch: list[tuple[str, dict[str, int], float]], lr: float) -> None:
        """One REINFORCE step with advantages: ∇ log π = onehot − p for each field."""
        if not batch:
            return
        grads = {c: {f: np.zeros_like(z) for f, z in fs.items()} for c, fs in self.logits.items()}
        for context, picks, adv in batch:
            for f, p in self.probs(context).items():
                g = -p
                g[picks[f]] += 1.0
                grads[context][f] += adv * g
        for c, fs in grads.items():
            for f, g in fs.items():
                self.logits[c][f] += lr * g / len(batch)

    def to_json(self) -> dict:
        return {c: {f: dict(zip(map(str, self.choices[f]), np.round(p, 4).tolist())) for f, p in self.probs(c).items()}
                for c in self.logits}  # fmt: skip


@dataclass
class TrainResult:
    curve: list[dict] = field(default_factory=list)  # per iteration: train reward, held-out reward
    policy: dict = field(default_factory=dict)
    start: float = 0.0  # held-out mean reward before training
    end: float = 0.0  # after
    greedy_end: float = 0.0  # the final policy's most likely strategy on the held-out tasks
    episodes: int = 0
    seconds: float = 0.0


def train_policy(
    world_dir: str | Path,
    train_tasks: list,
    heldout_tasks: list,
    *,
    iterations: int = 12,
    group: int = 8,
    lr: float = 2.0,
    eval_samples: int = 4,
    eval_every: int = 3,
    workers: int = 2,
    seed: int = 0,
    address: str | None = None,
    progress=None,
) -> TrainResult:
    """GRPO on the baseline agent's strategy. ``progress(iteration, row)`` is called per iteration."""
    t0 = time.perf_counter()
    policy = SoftmaxPolicy()
    rng = seeded_rng(seed, "train-demo/policy")
    result = TrainResult()
    counter = {"sample": 0}

    def jobs_for(tasks, n, *, greedy=False, step=0):
        jobs, picks = [], {}
        for t in tasks:
            for _ in range(n):
                p = policy.greedy(t.kind) if greedy else policy.sample(t.kind, rng)
                k = counter["sample"]
                counter["sample"] += 1
                s = int(seeded_rng(seed, f"train-demo/episode/{k}").integers(2**31))
                job = Job(t, k, s, step, agent_config={"strategy": policy.strategy(p)})
                jobs.append(job)
                picks[job.key] = (t.kind, p)
        return jobs, picks

    with RolloutPool(world_dir, agent="baseline", workers=workers, address=address) as pool:

        def evaluate(greedy=False) -> float:
            jobs, _ = jobs_for(heldout_tasks, 1 if greedy else eval_samples, greedy=greedy)
            recs = pool.run(jobs)
            result.episodes += len(recs)
            return float(np.mean([r.reward for r in recs]))

        result.start = evaluate()
        result.curve.append({"iteration": 0, "train_reward": None, "heldout_reward": result.start, "kept_groups": 0})
        if progress:
            progress(0, result.curve[-1])
        for it in range(1, iterations + 1):
            jobs, picks = jobs_for(train_tasks, group, step=it)
            recs = pool.run(jobs)
            result.episodes += len(recs)
            adv = group_advantages(recs)
            batch = [(*picks[k], a.advantage) for k, a in adv.items() if a.advantage is not None]
            policy.update(batch, lr)
            kept = {k.split("#")[0] for k, a in adv.items() if a.advantage is not None}
            row = {"iteration": it, "train_reward": float(np.mean([r.reward for r in recs])),
                   "heldout_reward": None, "kept_groups": len(kept), "groups": len(train_tasks)}  # fmt: skip
            if it % eval_every == 0 or it == iterations:
                row["heldout_reward"] = evaluate()
            result.curve.append(row)
            if progress:
                progress(it, row)
        result.end = result.curve[-1]["heldout_reward"]
        result.greedy_end = evaluate(greedy=True)
    result.policy = policy.to_json()
    result.seconds = time.perf_counter() - t0
    return result


def plot_curve(result: TrainResult, path: str | Path, title: str = "") -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
    tr = [(r["iteration"], r["train_reward"]) for r in result.curve if r["train_reward"] is not None]
    ho = [(r["iteration"], r["heldout_reward"]) for r in result.curve if r["heldout_reward"] is not None]
    ax.plot(*zip(*tr), marker=".", label="training tasks (sampled policy)")
    ax.plot(*zip(*ho), marker="o", label="held-out tasks (sampled policy)")
    ax.axhline(result.greedy_end, ls="--", c="grey", label=f"held-out, final greedy policy ({result.greedy_end:.3f})")
    ax.set_xlabel("GRPO iteration")
    ax.set_ylabel("mean reward (item F1)")
    ax.set_title(title or "Search-strategy policy trained with GRPO on Ray rollouts")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path)
    plt.close(fig)
    return path


def save_result(result: TrainResult, directory: str | Path) -> None:
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    (d / "train.json").write_text(json.dumps(result.__dict__, indent=2) + "\n")
