"""``check_env``: what every adapter may rely on, checked on a live env (as Gymnasium's
``utils.env_checker.check_env``).

>>> import fictionworld as fw                                             # doctest: +SKIP
>>> fw.check_env(fw.make("search", world=world, tasks=tasks))
[]

Returns the problems found (empty when the env keeps its contract); ``strict=True`` raises
:class:`EnvCheckError` with all of them instead.
"""

from __future__ import annotations

import json
import math

from fictionworld.errors import FictionWorldError

__all__ = ["check_env", "EnvCheckError"]

_BAD_ACTIONS = (
    None,
    "",
    "<tool_call>{not json</tool_call>",
    {"name": "no_such_tool", "arguments": {}},
    {"name": "search", "arguments": {"query": 5}},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "x", "type": "function",
                                                           "function": {"name": "open", "arguments": "{]"}}]},
)  # fmt: skip


class EnvCheckError(FictionWorldError, AssertionError):
    exit_code = 1
    pass


def check_env(env, task=None, *, seed: int = 0, strict: bool = False) -> list[str]:
    """Checks ``env`` against the SearchEnv contract: Gymnasium's ``reset(seed=, options=)``
    and 5-tuple ``step``; JSON-able messages, info and tool schemas; the same seed giving the
    same episode; malformed actions and steps after the end answered, never raised; rewards in
    [0, 1]. ``task`` defaults to one the env draws itself (an env made with ``tasks``)."""
    problems: list[str] = []

    def expect(cond: bool, what: str) -> None:
        if not cond:
            problems.append(what)

    options = {"task": task} if task is not None else None
    try:
        first = _episode(env, seed, options)
        again = _episode(env, seed, options)
    except Exception as e:  # noqa: BLE001 — a raising env is the finding
        problems.append(f"a scripted episode raised {type(e).__name__}: {e}")
        return _done(problems, strict)
    expect(first == again, "the same seed and actions gave different observations or rewards")
    for name, value in first["json"].items():
        expect(value is None, f"{name} is not JSON-serialisable: {value}")
    expect(isinstance(env.tools, list) and all(t.get("type") == "function" for t in env.tools),
           "env.tools is not a list of OpenAI function schemas")  # fmt: skip
    for r in first["rewards"]:
        expect(isinstance(r, float) and not math.isnan(r) and 0.0 <= r <= 1.0, f"reward {r!r} is not in [0, 1]")
    expect(first["shapes"], "reset must return (messages, info) and step (obs, reward, terminated, truncated, info)")
    expect(first["ended"], "the episode did not end on an answer")
    expect(first["after_end"], "a step after the end must come back as an error observation with reward 0")
    expect(not first["raised"], f"step raised on a malformed action: {first['raised']}")
    return _done(problems, strict)


def _episode(env, seed: int, options: dict | None) -> dict:
    messages, info = env.reset(seed=seed, options=options)
    shapes = isinstance(messages, list) and isinstance(info, dict)
    log: list = [messages]
    rewards: list = []
    raised = ""
    for action in (*_BAD_ACTIONS, {"name": "search", "arguments": {"query": "list of"}}):
        try:
            out = env.step(action)
        except Exception as e:  # noqa: BLE001
            raised = f"{action!r}: {type(e).__name__}: {e}"
            break
        shapes = shapes and isinstance(out, tuple) and len(out) == 5
        log.append(out[0])
        rewards.append(out[1])
        if out[2] or out[3]:
            break
    obs, r, terminated, truncated, end_info = env.step({"name": "answer", "arguments": {"text": "| a |\n|---|\n| b |"}})
    rewards.append(r)
    ended = bool(terminated or truncated) and env.done
    obs2, r2, *_ = env.step({"name": "search", "arguments": {"query": "more"}})
    after_end = r2 == 0.0 and bool(obs2) and obs2[0]["content"].startswith("Error")
    return {
        "log": json.dumps([log, obs, obs2], sort_keys=True, default=str),
        "rewards": rewards,
        "json": {
            "reset messages/info": _not_json([messages, info]),
            "step info": _not_json(end_info),
            "tools": _not_json(env.tools),
        },  # fmt: skip
        "shapes": shapes,
        "ended": ended,
        "after_end": after_end,
        "raised": raised,
    }


def _not_json(obj) -> str | None:
    try:
        json.dumps(obj)
    except (TypeError, ValueError) as e:
        return str(e)
    return None


def _done(problems: list[str], strict: bool) -> list[str]:
    if strict and problems:
        raise EnvCheckError("; ".join(problems))
    return problems
