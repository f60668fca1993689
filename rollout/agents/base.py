"""The agent contract and registry.

An agent's :meth:`Agent.policy` is a generator: it yields actions (tool calls in any form
:class:`~fictionworld.env.SearchEnv` reads) and receives each step's observation messages.
:func:`rollout.episode.run_episode` drives it against the env. Only agents marked
``privileged`` (the oracle) are given the task's provenance and the world; the others see the
opening messages and the tool schemas, as an LLM would.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Generator
from typing import Any

__all__ = [
    "Agent",
    "ToolAgent",
    "AGENTS",
    "make_agent",
    "register",
    "read_results",
    "read_links",
    "title_of",
    "FAULT_MARKERS",
]

Action = Any
Observation = list[dict]
AGENTS: dict[str, Callable[..., Agent]] = {}

# What an injected tool fault looks like to an agent (see fictionworld.web.web.FAULT_TEXT).
FAULT_MARKERS = ("timed out", "503 Service Unavailable", "429 Too Many Requests")


class Agent:
    name = "agent"
    privileged = False
    # Budgets this agent is meant to run under unless the run sets them (EnvConfig fields).
    env_defaults: dict = {}

    def config(self) -> dict:
        """JSON-able settings, stored with every episode."""
        return {"name": self.name}

    def policy(self, messages: list[dict], tools: list[dict], task=None) -> Generator[Action, Observation, None]:
        raise NotImplementedError


class ToolAgent(Agent):
    """Helpers for scripted agents: a call retried on injected faults, and pages opened once per
    episode (``self.pages`` is reset by the policy). Use with ``yield from``."""

    retries = 3
    delay = 0.0  # seconds slept before each call (an LLM's latency, for benchmarks)

    def _call(self, name: str, **args):
        text = ""
        for _ in range(self.retries):
            if self.delay:
                time.sleep(self.delay)
            obs = yield {"name": name, "arguments": args}
            text = obs[0]["content"] if obs else ""
            if not is_fault(text):
                break
        return text

    def _open(self, url: str):
        """The page's text, or None when it cannot be opened."""
        if url not in self.pages:
            text = yield from self._call("open", url=url)
            self.pages[url] = None if text.startswith(("Error:", "Page not found")) else text
            if self.pages[url] is not None:
                self._read(text)
        return self.pages[url]

    def _read(self, text: str) -> None:
        """Called once for every page opened (override to note links)."""


def register(name: str):
    def deco(cls):
        AGENTS[name] = cls
        return cls

    return deco


def make_agent(name: str, *, world=None, **config) -> Agent:
    """An agent by registry name (``oracle``, ``baseline``, ``openai``) or ``module:Class``."""
    if ":" in name:
        import importlib

        mod, _, cls = name.partition(":")
        factory = getattr(importlib.import_module(mod), cls)
    else:
        import rollout.agents  # noqa: F401  (registers the built-in agents)

        if name not in AGENTS:
            raise ValueError(f"unknown agent {name!r}; known: {', '.join(sorted(AGENTS))} (or module:Class)")
        factory = AGENTS[name]
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


def is_fault(text: str) -> bool:
    return text.startswith("Error:") and any(k in text for k in FAULT_MARKERS)
