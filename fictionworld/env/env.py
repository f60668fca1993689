"""``SearchEnv``: one episode of an agent searching a world's web for one task.

>>> env = SearchEnv(world.web)                                          # doctest: +SKIP
>>> messages, info = env.reset(task, seed=0)
>>> obs, reward, terminated, truncated, info = env.step({"name": "search", "arguments": {"query": "…"}})

Actions are tool calls in any of the forms :func:`fictionworld.env.tools.parse_action` reads;
observations are the new messages (``tool`` messages for native calls, ``user`` messages for
text-tag calls). ``dict_memory`` (in the ``memory``, ``agentworld`` and ``all`` tool sets) is a
key-value working memory kept for the episode. The episode ends on ``answer`` (scored with the
strict scorer: reward from :class:`RewardConfig`), or is truncated by the turn, context or time
budget (scored on the last text the agent wrote, else 0). Reasoning blocks (``<think>…</think>``)
are never read as calls or answers (:mod:`fictionworld.env.reasoning`). ``step`` never raises
on an action: a malformed one, or one after the episode is over, comes back as an ``Error: …``
observation.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from fictionworld.env.prompts import system_prompt
from fictionworld.env.reasoning import last_words, without_reasoning
from fictionworld.env.tools import (
    TOOL_SETS,
    DictMemory,
    ToolCall,
    arg_limit,
    parse_action,
    short_repr,
    to_json,
    tool_schemas,
)
from fictionworld.knobs import Knobs, Schedule
from fictionworld.scoring import RewardConfig, Scores, reward, score_strict
from fictionworld.seeding import mix64_int
from fictionworld.web import ToolStatus
from fictionworld.web.pages import AGENTWORLD_RESULTS
from fictionworld.web.text import valid_text
from fictionworld.web.web import SearchCall
from fictionworld.worldmodel.config import TEMPLATE, WorldModelConfig, with_world_model

__all__ = ["SearchEnv", "EnvConfig", "StepRecord", "EPISODE_OVER", "ELIDED_OBSERVATION", "AGENTWORLD_RESULTS"]

EPISODE_OVER = "Error: the episode is over; call reset() to start the next one."
# What an agent harness shows in place of a tool output older than its last ``keep_observations``.
ELIDED_OBSERVATION = "[older tool output elided; use dict_memory to keep what you need]"


class EnvConfig(BaseModel):
    """Budgets, tools and difficulty of episodes. ``knobs`` (or ``schedule`` at the step given to
    :meth:`SearchEnv.reset`) override the world's default knobs.

    The episode is truncated ("context budget") once the conversation's characters exceed
    ``max_context_chars``. ``keep_observations=k`` models an agent harness that shows the model
    only its last ``k`` tool outputs (observations) and a short placeholder
    (:data:`ELIDED_OBSERVATION`) for each older one: the budget then counts every other message
    (system, task, the agent's own messages and call arguments) whole, the last ``k``
    observations whole, and older observations as the placeholder. The agent must keep what it
    needs from old pages in ``dict_memory``. None (the default) counts everything.

    ``memory_*`` cap the ``dict_memory`` store: keys held, characters of one key, of one value,
    and of all keys and values together. A call over a cap is refused with an error and
    changes nothing. A ``dict_memory`` call's JSON arguments may be 6 × (key cap + value cap) +
    200 characters long (a key and a value at their caps with every character escaped as
    ``\\uXXXX``), or ``max_arg_chars`` where that is more."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tools: Literal["basic", "agentworld", "memory", "all"] = "basic"
    text_tags: bool = False  # describe <search>/<answer> tags instead of native function calls
    max_turns: int = Field(30, ge=1)
    max_context_chars: int = Field(400_000, ge=1_000)  # ≈ 100k tokens
    max_observation_chars: int = Field(20_000, ge=200)
    max_arg_chars: int = Field(2_000, ge=10)
    max_calls_per_turn: int = Field(5, ge=1)
    keep_observations: int | None = Field(None, ge=1)  # count only the last k tool outputs whole (see above)
    memory_max_keys: int = Field(5_000, ge=1)
    memory_max_key_chars: int = Field(200, ge=1)
    memory_max_value_chars: int = Field(4_000, ge=1)
    memory_max_total_chars: int = Field(1_000_000, ge=1)
    time_budget_s: float | None = Field(None, gt=0)
    knobs: Knobs | None = None
    schedule: Schedule | None = None
    reward: RewardConfig = RewardConfig()
    world_model: WorldModelConfig = WorldModelConfig()  # who writes pages: templates, or an LLM on SGLang


class StepRecord(BaseModel):
    """One tool call as the env ran it. ``status`` is what programs read (agents, trainers,
    summaries); the observation text is for the model."""

    turn: int
    tool: str
    arguments: dict = Field(default_factory=dict)
    status: ToolStatus = "ok"
    ok: bool
    error: str | None = None
    fault: str | None = None
    seconds: float = 0.0  # time spent in the web for this call
    chars: int = 0  # observation length


class SearchEnv:
    """Gymnasium-style episodes over a :class:`~fictionworld.web.Web`. One env runs one episode
    at a time; ``reset`` starts the next. The web (and the world under it) is shared, never
    copied."""

    def __init__(self, web, config: EnvConfig | None = None, *, tasks: Sequence | None = None):
        self.config = config or EnvConfig()
        # A world model other than the default gets its own view of the web: the web given is
        # shared (other envs, other threads) and is never changed. The default leaves a model
        # set on the web alone.
        default = self.config.world_model.entry_id == TEMPLATE
        self.web = web if default else with_world_model(web, self.config.world_model)
        self.tasks = list(tasks) if tasks is not None else []
        self._task_by_id = {t.instance_id: t for t in self.tasks}
        self._episodes = 0
        names = TOOL_SETS[self.config.tools]
        self.tool_names = names
        self.tools = tool_schemas(self.config.tools)
        self._allowed = tuple(dict.fromkeys(names + (("search", "open", "answer") if self.config.text_tags else ())))
        self._system = system_prompt(names, text_tags=self.config.text_tags,
                                     keep_observations=self.config.keep_observations)  # fmt: skip
        c = self.config
        self.memory = DictMemory(c.memory_max_keys, c.memory_max_key_chars, c.memory_max_value_chars,
                                 c.memory_max_total_chars)  # fmt: skip
        # dict_memory's arguments must fit a key and a value at their caps, even with every
        # character JSON-escaped (\uXXXX).
        self._arg_limits = {"dict_memory": max(arg_limit("dict_memory", c.max_arg_chars),
                                               6 * (c.memory_max_key_chars + c.memory_max_value_chars) + 200)}  # fmt: skip
        self._other_chars = 0  # the context budget's count of every message but tool outputs
        self._obs_chars: deque[int] = deque()  # the characters of each tool output counted whole
        self._obs_counted = 0  # their sum, plus a placeholder for each older tool output
        self.task = None
        self.done = True
        self.turn, self.reason, self.reward = 0, "", 0.0
        self.answer: str | None = None
        self.scores: Scores | None = None

    @classmethod
    def from_config(cls, *, world=None, web=None, tasks: Sequence | None = None, **config) -> SearchEnv:
        """The env ``fictionworld.make("fictionworld/Search-v0", world=…, **config)`` builds:
        over ``web`` (default: ``world.web``), with :class:`EnvConfig` fields as keywords and
        optionally the ``tasks`` that :meth:`reset` draws from when it is given none."""
        if web is None:
            if world is None:
                raise TypeError("SearchEnv needs world= (or web=)")
            web = world.web
        return cls(web, EnvConfig.model_validate(config), tasks=tasks)

    # -- episode ------------------------------------------------------------------------
    def reset(self, task=None, *, seed: int | None = None, options: dict | None = None, step: int = 0,
              knobs: Knobs | None = None) -> tuple[list[dict], dict]:  # fmt: skip
        """Start an episode. Gymnasium's form works: ``reset(seed=3, options={"task": t})``;
        ``task`` (or ``options["task"]``) is a :class:`Task`, a task dict, or the instance id of
        one of the env's ``tasks``; with none, the env draws one of its ``tasks`` from ``seed``.
        ``seed`` fixes the episode's injected faults; None takes the next of 0, 1, 2, … (never
        the clock). ``options`` may also hold ``step`` (for a knob schedule) and ``knobs``."""
        options = dict(options or {})
        unknown = set(options) - {"task", "step", "knobs"}
        if unknown:
            raise ValueError(f"unknown reset option(s) {sorted(unknown)}: use task, step, knobs")
        seed = self._episodes if seed is None else int(seed)
        self._episodes += 1
        task = self._task(options.get("task", task), seed)
        step = int(options.get("step", step))
        knobs = options.get("knobs", knobs)
        if isinstance(knobs, dict):
            knobs = Knobs.model_validate(knobs)
        c = self.config
        if knobs is None:
            knobs = c.schedule.at(step) if c.schedule is not None else (c.knobs or self.web.knobs)
        self.task, self.seed, self.knobs = task, seed, knobs
        self.session = self.web.session(knobs, seed)
        self.messages: list[dict] = [
            {"role": "system", "content": self._system},
            {"role": "user", "content": task.query},
        ]
        self.steps: list[StepRecord] = []
        self.turn = 0
        self._other_chars = sum(len(m["content"]) for m in self.messages)
        self._obs_chars.clear()
        self._obs_counted = 0
        self.memory.clear()
        self.started = time.perf_counter()
        self.web_seconds = 0.0
        self.answer: str | None = None
        self.scores: Scores | None = None
        self.reward = 0.0
        self.reason = ""
        self.done = False
        info = {"task_id": task.instance_id, "seed": seed, "knobs": knobs.model_dump(mode="json"),
                "tools": self.tools, "max_turns": c.max_turns}  # fmt: skip
        return list(self.messages), info

    def step(self, action) -> tuple[list[dict], float, bool, bool, dict]:
        if self.done:
            return self._over()
        c = self.config
        self.turn += 1
        message, calls = parse_action(action, allowed=self._allowed, max_arg_chars=c.max_arg_chars, turn=self.turn,
                                      arg_limits=self._arg_limits)  # fmt: skip
        self._append(message)
        native = "tool_calls" in message
        first_step = len(self.steps)
        obs: list[dict] = []
        answered = False
        for i, call in enumerate(calls):
            if i >= c.max_calls_per_turn:
                call.error = f"too many tool calls in one turn (at most {c.max_calls_per_turn}); this one was skipped"
            text = self._run(call)
            if call.name == "answer" and call.error is None:
                answered = True
                self.answer = without_reasoning(valid_text(call.arguments["text"]))
                break
            obs.append(self._observation(call, text, native))
        terminated = answered
        truncated = False
        if not terminated:
            if self.turn >= c.max_turns:
                truncated, self.reason = True, "turn budget"
            elif self.context_chars > c.max_context_chars:
                truncated, self.reason = True, "context budget"
            elif c.time_budget_s is not None and time.perf_counter() - self.started > c.time_budget_s:
                truncated, self.reason = True, "time budget"
            elif self.turn == c.max_turns - 1 and obs:
                note = "\n\n[Note: one turn left. Give your final answer now.]"
                obs[-1]["content"] += note  # the same dict as the last message
                self._count_observation(len(note), more=True)
        else:
            self.reason = "answer"
        r = 0.0
        if terminated or truncated:
            r = self._finish()
        info = {"turn": self.turn, "calls": [s.model_dump() for s in self.steps[first_step:]]}
        if self.done:
            info |= {"reason": self.reason, "scores": self.scores.model_dump(), "answer": self.answer}
        return obs, r, terminated, truncated, info

    def _task(self, task, seed: int):
        if task is None:
            if not self.tasks:
                raise ValueError("reset needs a task (task=…, or options={'task': …}), or an env made with tasks=[…]")
            return self.tasks[int(mix64_int(seed, 0x7A5C) % len(self.tasks))]
        if isinstance(task, str):
            if task not in self._task_by_id:
                raise ValueError(f"no task {task!r} among this env's {len(self.tasks)} tasks")
            return self._task_by_id[task]
        if isinstance(task, dict):
            from fictionworld.tasks.model import Task

            return Task.model_validate(task)
        return task

    def end(self, reason: str) -> float:
        """Ends the episode from outside (a wall-clock deadline, a failed agent): scored like a
        truncation, on the last text the agent wrote. Returns the reward (an episode already
        over keeps its reason and reward)."""
        if self.done:
            return self.reward
        self.reason = reason
        return self._finish()

    def close(self) -> None:
        self.done = True

    # -- internals ----------------------------------------------------------------------
    def _over(self) -> tuple[list[dict], float, bool, bool, dict]:
        """A step after the episode ended (or before the first reset): an error observation, no
        reward, the episode's end repeated, and nothing added to its messages."""
        terminated = self.reason == "answer"
        info = {"turn": self.turn, "calls": [], "error": EPISODE_OVER, "reason": self.reason,
                "scores": self.scores.model_dump() if self.scores else None, "answer": self.answer}  # fmt: skip
        return [{"role": "user", "content": EPISODE_OVER}], 0.0, terminated, not terminated, info

    def _append(self, message: dict) -> None:
        self.messages.append(message)
        n = len(message.get("content") or "")
        for tc in message.get("tool_calls") or ():
            n += len(tc["function"]["arguments"]) + len(tc["function"]["name"])
        self._other_chars += n

    @property
    def context_chars(self) -> int:
        """The characters the context budget counts now (see :class:`EnvConfig`)."""
        return self._other_chars + self._obs_counted

    def _count_observation(self, n: int, *, more: bool = False) -> None:
        """Counts a new tool output of ``n`` characters (``more``: ``n`` more of the last one);
        with ``keep_observations``, the one that leaves the last k counts as the placeholder."""
        self._obs_counted += n
        if more and self._obs_chars:
            self._obs_chars[-1] += n
            return
        self._obs_chars.append(n)
        k = self.config.keep_observations
        if k is not None and len(self._obs_chars) > k:
            self._obs_counted -= self._obs_chars.popleft() - len(ELIDED_OBSERVATION)

    def _run(self, call: ToolCall) -> str:
        t0 = time.perf_counter()
        status: ToolStatus = "error"
        fault, error = None, call.error
        if call.error is not None:
            text = f"Error: {call.error}."
        elif call.name == "answer":
            text, status = "", "ok"
        elif call.name == "dict_memory":
            text, ok = self.memory.run(call.arguments, max_chars=self.config.max_observation_chars)
            status = "ok" if ok else "error"
            error = None if ok else text.removeprefix("Error: ").rstrip(".")
        elif call.name in ("search", "web_search"):
            search = SearchCall.of(call.name, call.arguments)
            parts = [(q, search.run(self.session, q)) for q in search.queries]
            fault = next((r.fault for _, r in parts if r.fault), None)
            text, status = SearchCall.join(parts)
        else:
            res = self.session.open(call.arguments["url"])
            status, fault, text = res.status, res.fault, res.text
        dt = time.perf_counter() - t0
        self.web_seconds += dt
        limit = self.config.max_observation_chars
        if len(text) > limit:
            text = text[:limit] + f"\n\n[… cut at {limit:,} characters]"
        args = _record_arguments(call.arguments)
        self.steps.append(StepRecord(turn=self.turn, tool=call.name, arguments=args, status=status, ok=status == "ok",
                                     error=error, fault=fault, seconds=dt, chars=len(text)))  # fmt: skip
        return text

    def _observation(self, call: ToolCall, text: str, native: bool) -> dict:
        m = {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": text} if native else {
            "role": "user", "content": text}  # fmt: skip
        self.messages.append(m)
        self._count_observation(len(text))
        return m

    def _finish(self) -> float:
        self.done = True
        text = self.answer
        if text is None:  # truncated: what the agent last wrote (outside reasoning) counts as its answer
            self.answer = text = last_words(m["content"] for m in reversed(self.messages) if m["role"] == "assistant")
        limit = arg_limit("answer", self.config.max_arg_chars)
        if text and len(text) > limit:  # as the answer tool would refuse it (and scoring stays cheap)
            self.scores = Scores(instance_id=self.task.instance_id, msg=f"the answer is over {limit:,} characters")
        elif text:
            self.scores = score_strict(text, self.task, abstention=self.config.reward.abstention)
        else:
            self.scores = Scores(instance_id=self.task.instance_id, msg="no answer")
        self.reward = reward(self.scores, self.config.reward)
        return self.reward

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.started


def _record_arguments(arguments: dict) -> dict:
    """A call's arguments as a step records them: JSON-able, valid UTF-8, strings over 300
    characters cut (an action may hold any value; the record must still be written)."""
    return {valid_text(k) if isinstance(k, str) else short_repr(k): _record_value(v) for k, v in arguments.items()}


def _record_value(v):
    if isinstance(v, str):
        return valid_text(v if len(v) <= 300 else v[:300] + "…")
    if v is None or isinstance(v, bool | float) or (isinstance(v, int) and abs(v) < 10**18):
        return v
    if isinstance(v, list) and len(v) <= 20 and all(isinstance(x, str) for x in v):
        return [_record_value(x) for x in v]
    return _record_value(to_json(v))
