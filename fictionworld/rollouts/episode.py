"""One episode: an agent's policy driven against a :class:`~fictionworld.env.SearchEnv`, and
the :class:`~fictionworld.rollouts.episode_record.Episode` kept of it (messages in OpenAI format, per-step
records and timing, scores, reward). The policy gets each step's messages as an
:class:`~fictionworld.rollouts.agents.base.Observation`, which carries the step's tool-call records too."""

from __future__ import annotations

import time
import traceback

from fictionworld.env import SearchEnv
from fictionworld.rollouts.agents.base import Observation
from fictionworld.rollouts.episode_record import Episode, Timing

__all__ = ["run_episode", "episode_key"]


def episode_key(task_id: str, sample: int) -> str:
    return f"{task_id}#{sample}"


def run_episode(env: SearchEnv, agent, task, *, seed: int, sample: int = 0, step: int = 0,
                deadline: float | None = None) -> Episode:  # fmt: skip
    """Runs one episode to its end and returns its record. An exception in
    the agent ends the episode with ``status="error"`` and the traceback's last line; a
    ``deadline`` (``time.monotonic()`` value) truncates it with ``status="timeout"``."""
    t0 = time.perf_counter()
    messages, info = env.reset(task, seed=seed, step=step)
    agent_s = 0.0
    status, error = "done", None
    policy = agent.policy(messages, env.tools, task if agent.privileged else None)
    try:
        a0 = time.perf_counter()
        action = next(policy)
        agent_s += time.perf_counter() - a0
        while True:
            obs, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                status = "done" if terminated else "truncated"
                break
            if deadline is not None and time.monotonic() > deadline:
                status = "timeout"
                env.end("episode timeout")
                break
            a0 = time.perf_counter()
            action = policy.send(Observation(obs, info["calls"]))
            agent_s += time.perf_counter() - a0
    except StopIteration:  # the policy gave up without answering
        env.step({"name": "answer", "arguments": {"text": ""}})
    except Exception as e:  # noqa: BLE001 — an agent failure is recorded, never lost
        status = "error"
        error = f"{type(e).__name__}: {e}"[:2000]
        if not env.done:
            env.end("agent error")
        tb = traceback.format_exc().strip().splitlines()
        error += " | " + tb[-3].strip() if len(tb) >= 3 else ""
    finally:
        policy.close()
    total = time.perf_counter() - t0
    return Episode(
        episode=episode_key(task.instance_id, sample),
        task_id=task.instance_id,
        task_kind=task.kind,
        sample=sample,
        seed=seed,
        step=step,
        world_hash=getattr(env.web.world, "world_hash", None),
        agent=agent.name,
        agent_config=agent.config(),
        knobs=env.knobs.model_dump(mode="json"),
        world_model=_world_model(env.web.model),
        status=status,
        error=error,
        reason=env.reason,
        turns=env.turn,
        reward=env.reward,
        scores=env.scores,
        answer=env.answer,
        messages=env.messages,
        steps=env.steps,
        timing=Timing(total_s=total, agent_s=agent_s, web_s=env.web_seconds),
        difficulty=task.difficulty,
    )


def _world_model(model) -> str:
    """Which world model wrote the pages: "template", or "sglang:<model name>"."""
    client = getattr(model, "client", None)
    return f"{model.name}:{client.model}" if client is not None else model.name
