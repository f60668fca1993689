"""What every trainer adapter shares (``fictionworld/integrations/verl.py``, ``trl.py``, …): one
trajectory's episode driven one tool call at a time, the task carried by a dataset row, the
final answer found in a decoded multi-turn response, and the reward as a fixed set of numbers.

Trainers call tools one by one and keep the conversation themselves, so an adapter needs less
than :class:`SearchEnv`'s whole loop: :class:`Episode` wraps one, with budgets left to the
trainer (its context and turn limits bite first), and returns each call's observation text.

>>> ep = Episode(world.web, task, seed=0)                                # doctest: +SKIP
>>> ep.call("search", {"query": "Rumal Shipyards"})[:40]
>>> ep.call("answer", {"text": "| Name | … |"}); ep.reward_info()["score"]
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

from fictionworld.env.env import EPISODE_OVER, EnvConfig, SearchEnv
from fictionworld.env.prompts import system_prompt
from fictionworld.env.reasoning import without_reasoning
from fictionworld.env.tools import json_value
from fictionworld.knobs import Knobs
from fictionworld.scoring import Scores, score_strict
from fictionworld.seeding import hash_text, mix64_int

__all__ = ["Episode", "REWARD_KEYS", "reward_info", "final_answer", "score_response", "task_of", "task_json",
           "shared_world", "shared_world_async", "ANSWER_RECORDED", "ANSWER_GIVEN", "system_message", "ExportRow",
           "export_rows", "knobs_json"]  # fmt: skip

ANSWER_RECORDED = "Answer recorded. The episode is over."
ANSWER_GIVEN = "Error: the answer was already given; the episode is over (no more tool calls)."

# The reward a trainer logs, always these keys (verl stacks them into arrays per batch, so every
# trajectory must give the same ones): ``score`` is the strict item F1 (the RL reward), ``success``
# the official all-or-nothing score, then the six WideSearch precision/recall/F1 values.
REWARD_KEYS = ("score", "success", "precision_by_item", "recall_by_item", "f1_by_item", "precision_by_row",
               "recall_by_row", "f1_by_row", "answered", "parsed", "predicted_rows", "gold_rows")  # fmt: skip

# Budgets a trainer enforces itself (response length, turns): the env's own stay out of the way.
TRAINER_ENV = {"max_turns": 1_000_000, "max_context_chars": 2_000_000_000}


def system_message(tools: str = "basic") -> str:
    """The system prompt of a trainer's rows: the env's, except that only an ``answer`` call (or
    an ``<answer>`` tag) gives the answer. Trainer loops end a rollout on a reply without a tool
    call and never show it to the env, so that reply cannot count (in every adapter alike)."""
    from fictionworld.env.tools import TOOL_SETS

    return system_prompt(TOOL_SETS[tools], reply_is_answer=False)


def reward_info(scores: Scores | None, *, answered: bool | None = None) -> dict[str, float]:
    """The :data:`REWARD_KEYS` of one trajectory, all floats; no scores (no answer) is all 0."""
    s = scores or Scores()
    out = {k: float(getattr(s, k)) for k in REWARD_KEYS if k in Scores.model_fields}
    out["score"] = float(s.f1_by_item)
    out["success"] = float(s.score)
    out["answered"] = float(bool(answered if answered is not None else scores is not None and s.msg != "no answer"))
    out["parsed"] = float(s.parsed)
    return {k: out[k] for k in REWARD_KEYS}


def final_answer(text: str | None, recorded: str | None = None) -> str | None:
    """The agent's final answer: ``recorded`` (what an answer tool stored) if given, else the
    last answer in ``text`` (a whole decoded multi-turn response), whichever form it takes: a
    well-formed Hermes/Qwen ``<tool_call>{"name": "answer", "arguments": {"text": …}}</tool_call>``
    block or an ``<answer>…</answer>`` tag. A call left unclosed does not swallow the next one.
    None when there is none: the rest of a response holds tool output (pages with tables in
    them), which must never be scored as the agent's answer. Reasoning blocks (``<think>…</think>``,
    :mod:`~fictionworld.env.reasoning`) are never read, in ``text`` or ``recorded``. Linear in
    the text's length."""
    if isinstance(recorded, str) and (recorded := without_reasoning(recorded)).strip():
        return recorded
    if not isinstance(text, str) or not text:
        return None
    text = without_reasoning(text)
    best: tuple[int, str] | None = None
    for end, inside in _spans(text, "<tool_call>", "</tool_call>"):
        obj, error = json_value(inside.strip())
        if error is None and isinstance(obj, dict) and obj.get("name") == "answer":
            args = obj.get("arguments", obj.get("parameters"))
            if isinstance(args, str):
                args, _ = json_value(args)
            if isinstance(args, dict) and isinstance(args.get("text"), str):
                best = (end, args["text"])
    tags = _spans(text, "<answer>", "</answer>")
    if tags and (best is None or tags[-1][0] > best[0]):
        return tags[-1][1].strip()
    return best[1] if best else None


def _spans(text: str, open_tag: str, close_tag: str) -> list[tuple[int, str]]:
    """(end, inside) of each ``open_tag…close_tag``, the opening taken as the last one before its
    closing (an earlier unclosed opening is left out), left to right, in linear time."""
    out, pos = [], 0
    while (j := text.find(close_tag, pos)) >= 0:
        i = text.rfind(open_tag, pos, j)
        if i >= 0:
            out.append((j, text[i + len(open_tag) : j]))
        pos = j + len(close_tag)
    return out


def task_of(value):
    """A :class:`~fictionworld.tasks.model.Task` from a Task, its dict, or its JSON text (a
    dataset cell). Raises ValueError naming what is wrong."""
    from fictionworld.tasks.model import Task

    if isinstance(value, Task):
        return value
    try:
        if isinstance(value, str | bytes):
            return Task.model_validate_json(value)
        if isinstance(value, dict):
            return Task.model_validate(value)
    except Exception as e:  # pydantic's ValidationError is a ValueError; keep one line
        raise ValueError(f"not a fictionworld task: {str(e).splitlines()[0]}") from None
    raise ValueError(f"not a fictionworld task: a value of type {type(value).__name__}")


def task_json(task) -> str:
    """A task as one JSON line (what a dataset row carries; :func:`task_of` reads it back)."""
    return task.model_dump_json(exclude_none=True)


def score_response(solution_str: str | None, task, *, recorded: str | None = None,
                   max_answer_chars: int = 100_000, abstention: bool = False) -> dict[str, float]:  # fmt: skip
    """:func:`reward_info` of a response: its :func:`final_answer` scored strictly against
    ``task`` (a Task or its JSON); ``abstention``: blank and N/A cells leave precision's
    denominator (:func:`~fictionworld.scoring.strict.score`). Never raises on the response."""
    task = task_of(task)
    text = final_answer(solution_str, recorded)
    if text is None:
        return reward_info(None, answered=False)
    if len(text) > max_answer_chars:
        return reward_info(Scores(instance_id=task.instance_id, msg="answer too long"), answered=True)
    return reward_info(score_strict(text, task, abstention=abstention), answered=True)


_WORLDS: dict[str, Future] = {}  # folder -> its world, loaded or loading
_WORLDS_LOCK = threading.Lock()


def shared_world(path, *, verify: bool = True):
    """The world saved at ``path``, opened once per process and shared by every episode (trainer
    workers build many envs; a world is read-only once loaded). Callers that come while it loads
    wait for that load; a load that failed is tried again by the next caller."""
    key, future, mine = _world_future(path)
    if mine:
        _load(key, future, verify)
    return future.result()


async def shared_world_async(path, *, verify: bool = True):
    """:func:`shared_world` for a caller on an event loop (verl's agent loop workers), with its
    web open: the load runs in a thread, once, and every coroutine (or thread) asking meanwhile
    awaits that one load, so the loop goes on serving the trajectories that have their world.
    A waiter that is cancelled leaves the load running for the others."""
    key, future, mine = _world_future(path)
    if mine:
        threading.Thread(target=_load, args=(key, future, verify, True), name="fictionworld-load", daemon=True).start()
    world = await asyncio.wrap_future(future)
    await asyncio.to_thread(getattr, world, "web")  # (a world another caller loaded without its web)
    return world


def _world_future(path) -> tuple[str, Future, bool]:
    """The folder, the future of its world, and whether the caller made it (and must load it)."""
    key = str(Path(path).expanduser().resolve())
    with _WORLDS_LOCK:
        future = _WORLDS.get(key)
        if future is not None:
            return key, future, False
        future = _WORLDS[key] = Future()
        future.set_running_or_notify_cancel()  # running: a waiter's cancellation cannot cancel it
        return key, future, True


def _load(key: str, future: Future, verify: bool, warm: bool = False) -> None:
    """Loads the world into ``future``; ``warm``: its web opened and one search and one page read
    too (the first search builds the name linker and speller: work for the loading thread, not
    for the first caller's)."""
    from fictionworld.world import World

    try:
        world = World.load(key, verify=verify)
        if warm:
            web = world.web
            try:
                if len(web.pages) and (results := web.search(web.pages.titles[0])):
                    web.open(results[0].url)
            except ValueError:  # (a WebError: the warm-up is an optimisation, the world is loaded)
                pass
    except BaseException as exc:  # noqa: BLE001 (handed to every waiter)
        with _WORLDS_LOCK:
            _WORLDS.pop(key, None)
        future.set_exception(exc)
    else:
        future.set_result(world)


@dataclass(frozen=True)
class ExportRow:
    """One task of a trainer export: its position in the tasks given (``index``), its split and
    the fault seed of its episode (from the export seed and the task id, so every rollout of the
    row, and every export with that seed, sees the same web)."""

    index: int
    split: str  # "train" or "val"
    task: object
    seed: int


def knobs_json(knobs) -> str:
    """Knobs as a dataset cell: JSON of :class:`Knobs` (or of a dict), "" for the world's own."""
    if knobs is None or isinstance(knobs, str):
        return knobs or ""
    return json.dumps(knobs if isinstance(knobs, dict) else knobs.model_dump(mode="json"))


def export_rows(tasks, world_dir, *, val_fraction: float = 0.1, seed: int = 0) -> tuple[Path, list[ExportRow]]:
    """What every trainer export starts from: the world's absolute folder and ``tasks`` (Tasks,
    dicts, JSON, or a tasks file) as :class:`ExportRow`\\ s, in the order given. ``val_fraction``
    of them (at least one when it is above 0 and there are two or more) go to ``val``, drawn from
    ``seed``. Raises ValueError on no tasks, a bad fraction, or tasks made from another world."""
    if not 0 <= val_fraction < 1:
        raise ValueError(f"val_fraction must be in [0, 1), not {val_fraction}")
    if isinstance(tasks, str | Path):
        from fictionworld.scoring.io import load_tasks

        tasks = load_tasks(tasks)[0]
    tasks = [task_of(t) for t in tasks]
    if not tasks:
        raise ValueError("no tasks to export")
    world_dir = Path(world_dir).expanduser().resolve()
    from fictionworld.tasks.model import check_same_world

    world_hash = shared_world(world_dir).world_hash
    check_same_world(tasks, world_hash, world_dir)  # (a TaskError: a ValueError)
    order = list(range(len(tasks)))
    random.Random(seed).shuffle(order)
    n_val = min(max(round(len(tasks) * val_fraction), 1 if val_fraction > 0 else 0), len(tasks) - 1)
    val = set(order[:n_val])
    return world_dir, [ExportRow(i, "val" if i in val else "train", t, mix64_int(hash_text(t.instance_id), seed)
                                 & 0x7FFF_FFFF) for i, t in enumerate(tasks)]  # fmt: skip


class Episode:
    """One trajectory: a :class:`SearchEnv` episode over ``web`` for ``task``, stepped one tool
    call at a time. ``call`` never raises; after ``answer`` (or on a call after the end) the env
    says the episode is over and the first answer stands."""

    def __init__(self, web, task, *, seed: int = 0, knobs: Knobs | dict | None = None, tools: str = "basic",
                 **config):  # fmt: skip
        cfg = {**TRAINER_ENV, **config, "tools": tools}
        self.env = SearchEnv(web, EnvConfig.model_validate(cfg))
        if isinstance(knobs, str):
            knobs = json.loads(knobs) if knobs.strip() else None
        self.messages, self.info = self.env.reset(task_of(task), seed=int(seed), knobs=knobs or None)
        self.calls = 0

    @property
    def task(self):
        return self.env.task

    @property
    def done(self) -> bool:
        return self.env.done

    @property
    def answer(self) -> str | None:
        return self.env.answer if self.env.reason == "answer" else None

    def call(self, name: str, arguments) -> str:
        """The observation text of one call (``arguments``: a dict or its JSON text)."""
        self.calls += 1
        obs, _, terminated, _, info = self.env.step({"name": str(name), "arguments": arguments})
        if terminated and info.get("reason") == "answer" and not obs:
            return ANSWER_RECORDED
        if info.get("error") == EPISODE_OVER:
            return ANSWER_GIVEN if self.answer is not None else EPISODE_OVER
        return "\n\n".join(m["content"] for m in obs)

    def reward_info(self) -> dict[str, float]:
        """The trajectory's reward numbers; an episode that never answered scores 0."""
        if self.env.reason != "answer":
            return reward_info(None, answered=False)
        return reward_info(self.env.scores, answered=True)

    @property
    def reward(self) -> float:
        return self.reward_info()["score"]
