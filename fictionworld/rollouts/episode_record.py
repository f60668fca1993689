"""The episode record: what one episode leaves behind, the rollout pipeline's main output.

One :class:`Episode` per episode, built by :func:`fictionworld.rollouts.episode.run_episode` (or by the pool
for an episode that never finished: a dead actor, a stuck one), appended to
``RUN/episodes.jsonl`` as one JSON line (:meth:`Episode.line`), read back by
:func:`fictionworld.rollouts.records.read_episodes`, summarised, grouped for GRPO and exported to Parquet,
whose columns derive from these fields. A field added here reaches all of them.

Construction is strict (every field the runner knows is required, unknown names refused);
reading a file is lenient (:meth:`Episode.read`: keys this version does not know are ignored,
fields added later get their defaults, so run files of earlier versions still load).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from fictionworld.env import StepRecord
from fictionworld.scoring import Scores

__all__ = ["Episode", "EpisodeStatus", "Timing", "as_episodes"]

EpisodeStatus = Literal["done", "truncated", "timeout", "error"]
"""``done``: the agent answered; ``truncated``: a turn, context or time budget ended it;
``timeout``: the episode's wall-clock deadline (or a stuck actor) ended it; ``error``: the agent
or the infrastructure failed (run again on resume)."""


class Timing(BaseModel):
    """Where an episode's seconds went (None: not measured, e.g. an episode whose actor died)."""

    model_config = ConfigDict(extra="forbid")

    total_s: float | None = None
    agent_s: float | None = None  # in the agent's policy (an LLM's latency)
    web_s: float | None = None  # in the web's search and open


class Episode(BaseModel):
    """One episode. Field names are the JSON Lines keys (other tools read ``episode``,
    ``task_id``, ``sample``, ``answer``): rename none."""

    model_config = ConfigDict(extra="forbid")

    episode: str  # "<task_id>#<sample>", unique in a run
    task_id: str
    task_kind: str
    sample: int  # index within the task's group
    seed: int
    step: int  # the training step (curriculum schedules read it)
    world_hash: str | None
    agent: str
    agent_config: dict[str, Any]
    knobs: dict[str, Any] | None = None  # the web's knobs for this episode (None: never started)
    world_model: str | None = None  # "template" or "sglang:<model>"
    status: EpisodeStatus
    error: str | None
    reason: str  # why it ended: "answer", "turn budget", …
    turns: int
    reward: float
    scores: Scores | None
    answer: str | None
    messages: list[dict[str, Any]]  # OpenAI chat format
    steps: list[StepRecord]
    timing: Timing
    difficulty: dict[str, float] = Field(default_factory=dict)
    attempt: int = 1  # 2, 3: its actor died before and it ran again
    worker_pid: int | None = None

    @classmethod
    def read(cls, record: Mapping[str, Any]) -> Episode:
        """An episode from a JSON record of any version: unknown keys are ignored, step records
        written before ``StepRecord.status`` get one from ``ok``/``fault``. Raises
        ``pydantic.ValidationError`` for a record that is not an episode."""
        data = {k: v for k, v in record.items() if k in cls.model_fields}
        steps = data.get("steps")
        if isinstance(steps, list):
            data["steps"] = [_with_status(s) for s in steps]
        return cls.model_validate(data)

    def line(self) -> str:
        """The episode as one JSON line (no newline), as ``episodes.jsonl`` holds it."""
        return json.dumps(self.model_dump(), ensure_ascii=False, default=str)

    # -- read access by key, for code written against the dict records ------------------------
    def __getitem__(self, key: str) -> Any:
        """``ep["reward"]``, ``ep["scores"]["score"]``: a field in its JSON form (nested models as dicts)."""
        if key not in type(self).model_fields:
            raise KeyError(key)
        return _plain(getattr(self, key))

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in type(self).model_fields else default

    def __contains__(self, key: object) -> bool:
        return key in type(self).model_fields


def as_episodes(records: Iterable[Episode | Mapping[str, Any]]) -> list[Episode]:
    """Episodes as they are, JSON records read with :meth:`Episode.read`."""
    return [r if isinstance(r, Episode) else Episode.read(r) for r in records]


def _with_status(step):
    if not isinstance(step, dict) or "status" in step:
        return step
    return step | {"status": "ok" if step.get("ok") else "fault" if step.get("fault") else "error"}


def _plain(value):
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list) and value and isinstance(value[0], BaseModel):
        return [v.model_dump(mode="json") for v in value]
    return value
