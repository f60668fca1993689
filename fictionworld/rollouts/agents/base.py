"""The agent contract and registry.

An agent's :meth:`Agent.policy` is a generator: it yields actions (tool calls in any form
:class:`~fictionworld.env.SearchEnv` reads) and is sent each step's :class:`Observation`: the
step's new messages (a ``list`` of OpenAI-format message dicts, as ``SearchEnv.step`` returns
them) that also carries ``.calls``, the env's :class:`~fictionworld.env.StepRecord` of each tool
call of that step, in order. A program decides on ``calls[i].status`` (``ok``; ``not_found``: a
well-formed URL with no page; ``error``: a malformed call; ``fault``: an injected timeout or
server error, worth retrying) and never on the text, which is for a model to read.
:func:`fictionworld.rollouts.episode.run_episode` drives the policy against the env. Only agents marked
``privileged`` (the oracle) are given the task's provenance and the world; the others see the
opening messages and the tool schemas, as an LLM would.
"""

from __future__ import annotations

import difflib
import re
import time
from collections.abc import Callable, Generator, Iterable, Mapping
from typing import Any

from fictionworld.env import StepRecord
from fictionworld.web import ToolStatus

__all__ = [
    "Agent",
    "ToolAgent",
    "Observation",
    "call_status",
    "AGENTS",
    "make_agent",
    "register",
    "read_results",
    "read_links",
    "title_of",
]

Action = Any
AGENTS: dict[str, Callable[..., Agent]] = {}


class Observation(list):
    """One step's observation: its new messages (this is a list of them, so an agent that only
    reads messages treats it as one) and ``calls``, the :class:`~fictionworld.env.StepRecord`
    of each tool call the step ran, in order (``status``, ``fault``, ``error``, …)."""

    def __init__(self, messages: Iterable[dict] = (), calls: Iterable[StepRecord | Mapping] = ()):
        super().__init__(messages)
        self.calls: list[StepRecord] = [c if isinstance(c, StepRecord) else StepRecord.model_validate(c) for c in calls]

    @classmethod
    def from_step(cls, obs: list[dict], info: Mapping) -> Observation:
        """From ``SearchEnv.step``'s observation and info (whose ``calls`` are the step records)."""
        return cls(obs, info.get("calls") or ())

    def __repr__(self) -> str:
        return f"Observation({list.__repr__(self)}, calls={self.calls!r})"


class Agent:
    name = "agent"
    privileged = False
    # Budgets this agent is meant to run under unless the run sets them (EnvConfig fields).
    env_defaults: dict = {}

    def config(self) -> dict:
        """JSON-able settings, stored with every episode."""
        return {"name": self.name}

    def policy(self, messages: list[dict], tools: list[dict], task=None) -> Generator[Action, Observation, None]:
        """Yields actions; receives an :class:`Observation` after each (see the module docstring).
        ``messages`` are the opening system and user messages, ``tools`` the OpenAI tool schemas,
        ``task`` the task itself for ``privileged`` agents only (else None)."""
        raise NotImplementedError


class ToolAgent(Agent):
    """Helpers for scripted agents: a call retried on injected faults, and pages opened once per
    episode (``self.pages`` is reset by the policy). Use with ``yield from``. They read each
    call's status from the :class:`Observation`, never its text."""

    retries = 3  # tries in all of a call that meets injected faults
    delay = 0.0  # seconds slept before each call (an LLM's latency, for benchmarks)

    def _call(self, name: str, **args):
        """The text of a call that worked (status ``ok``), else None: ``not_found``, ``error``,
        or a fault on every try."""
        text, _ = yield from self._tool(name, **args)
        return text

    def _tool(self, name: str, **args):
        """(text or None, status) of a call, tried again while the env reports a fault."""
        status: ToolStatus = "fault"
        for _ in range(max(1, self.retries)):
            if self.delay:
                time.sleep(self.delay)
            obs = yield {"name": name, "arguments": args}
            status = call_status(obs)
            if status != "fault":
                break
        return (obs[0]["content"] if status == "ok" and obs else None), status

    def _open(self, url: str):
        """The page's text, or None when there is no such page (``not_found``) or the call is
        refused (``error``); both are remembered, so the page is asked for once. A fault on
        every try is not remembered: a later open may work."""
        if url not in self.pages:
            text, status = yield from self._tool("open", url=url)
            if status == "fault":
                return None
            self.pages[url] = text
            if text is not None:
                self._read(text)
        return self.pages[url]

    def _read(self, text: str) -> None:
        """Called once for every page opened (override to note links)."""


def call_status(obs) -> ToolStatus:
    """The status of the (first) tool call of a step, from its :class:`Observation`."""
    calls = getattr(obs, "calls", None)
    if calls is None:
        raise TypeError("a ToolAgent reads each call's status from an Observation (run_episode sends one); "
                        "wrap SearchEnv.step's output with Observation.from_step(obs, info)")  # fmt: skip
    return calls[0].status if calls else "error"


def register(name: str):
    def deco(cls):
        AGENTS[name] = cls
        return cls

    return deco


def agent_class(name: str):
    """The class (or factory) an agent name means: an id or alias in
    :mod:`fictionworld.registry` (``oracle``, ``fictionworld/Baseline-v0``, …), a name given to
    :func:`register`, or ``module:Class``. Raises ValueError saying what is wrong."""
    from fictionworld.registry import RegistryError, registered, spec

    if ":" not in name:
        try:
            return spec(name, "agent").load()
        except RegistryError:
            if name in AGENTS:
                return AGENTS[name]
            known = sorted({a for i in registered("agent") for a in spec(i).aliases} | set(AGENTS))
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise ValueError(
                f"unknown agent {name!r}; known agents: {', '.join(known)} (or module:Class){hint}"
            ) from None
    import importlib

    module, _, attr = name.partition(":")
    if not module or not attr:
        raise ValueError(f"agent {name!r}: expected module:Class, e.g. my_agents:MyAgent")
    try:
        factory = getattr(importlib.import_module(module), attr, None)
    except Exception as e:  # noqa: BLE001 — any import failure is the user's module
        raise ValueError(f"agent {name!r}: cannot import module {module!r} ({e})") from None
    if factory is None:
        raise ValueError(f"agent {name!r}: module {module!r} has no {attr!r}")
    if not callable(factory) or (isinstance(factory, type) and not callable(getattr(factory, "policy", None))):
        raise ValueError(f"agent {name!r}: {attr!r} is not an agent class (one with a policy method)")
    return factory


def make_agent(name: str, *, world=None, **config) -> Agent:
    """An agent by name (see :func:`agent_class`) with ``config``; privileged agents (the
    oracle) are given ``world``."""
    factory = agent_class(name)
    if getattr(factory, "privileged", False):
        config["world"] = world
    return factory(**config)


_RESULT = re.compile(r"^\[(\d+)\] (\S+)\nTitle: (.*)$", re.M)
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^\s()]+(?:\([^\s()]*\)[^\s()]*)*)\)")  # URLs may hold (…)


def read_results(text: str) -> list[tuple[str, str]]:
    """(url, title) of each result in a result list's text."""
    return [(m.group(2), m.group(3)) for m in _RESULT.finditer(text)]


def read_links(text: str) -> list[tuple[str, str]]:
    """(anchor text, url) of every Markdown link in a page's text."""
    return [(m.group(1), m.group(2)) for m in _LINK.finditer(text)]


def title_of(text: str) -> str | None:
    """The title of a page (its first ``# `` line)."""
    first = text.split("\n", 1)[0]
    return first[2:].strip() if first.startswith("# ") else None
