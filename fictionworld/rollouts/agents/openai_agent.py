"""An LLM agent over any OpenAI-compatible chat endpoint (SGLang first, also vLLM or OpenAI).

Native tool calling sends the env's tool schemas as ``tools``; SGLang parses the model's calls
when launched with ``--tool-call-parser`` (``qwen25``/``qwen3_coder`` for Qwen, ``llama3``,
``mistral``, …). Without a parser, ``tool_mode="tags"`` describes ``<search>``/``<open>``/
``<answer>`` tags in the system prompt and sends no ``tools``; Hermes-style
``<tool_call>{json}</tool_call>`` text is read in either mode. Sampling: ``temperature``,
``top_p`` and SGLang's ``top_k``/``min_p``/``repetition_penalty`` (``extra_body`` fields, sent
in the request body). Every call has a timeout and bounded retries; the env enforces the turn
and context budgets.

``keep_observations=k`` sends only the last ``k`` tool outputs whole: each older one is sent as
:data:`~fictionworld.env.env.ELIDED_OBSERVATION` (the model keeps what it needs in
``dict_memory``). The agent sets the env's ``keep_observations`` to the same ``k`` (its
``env_defaults``), so the env's context budget counts what the model is sent; a run that sets the
env's value itself should give both the same one.
"""

from __future__ import annotations

from typing import Literal

from fictionworld.env.env import ELIDED_OBSERVATION
from fictionworld.llm import ChatClient
from fictionworld.rollouts.agents.base import Agent, register

__all__ = ["OpenAIAgent"]


@register("openai")
class OpenAIAgent(Agent):
    name = "openai"

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:30000/v1",
        model: str = "default",
        *,
        api_key: str | None = None,
        tool_mode: Literal["native", "tags"] = "native",
        temperature: float | None = 0.6,
        top_p: float | None = 0.95,
        top_k: int | None = 20,
        max_tokens: int | None = 4096,
        timeout: float = 120.0,
        retries: int = 3,
        max_turns: int = 40,
        extra_body: dict | None = None,
        keep_observations: int | None = None,
    ):
        if tool_mode not in ("native", "tags"):
            raise ValueError(f"tool_mode must be native or tags, not {tool_mode!r}")
        if keep_observations is not None and (
            isinstance(keep_observations, bool) or not isinstance(keep_observations, int) or keep_observations < 1
        ):
            raise ValueError(f"keep_observations must be an integer >= 1 or None, not {keep_observations!r}")
        self.base_url, self.model, self.tool_mode = base_url, model, tool_mode
        self.sampling = {"temperature": temperature, "top_p": top_p, "top_k": top_k, "max_tokens": max_tokens}
        self.sampling = {k: v for k, v in self.sampling.items() if v is not None} | (extra_body or {})
        self.timeout, self.retries = float(timeout), int(retries)
        self.client = ChatClient(base_url, model, api_key=api_key, timeout=timeout, retries=retries)
        self.keep_observations = keep_observations
        self.env_defaults = {"max_turns": int(max_turns), "text_tags": tool_mode == "tags"}
        if keep_observations is not None:
            self.env_defaults["keep_observations"] = keep_observations
        self.calls = 0

    def config(self) -> dict:
        out = {"name": self.name, "base_url": self.base_url, "model": self.model, "tool_mode": self.tool_mode,
               "sampling": self.sampling, "timeout": self.timeout, "retries": self.retries}  # fmt: skip
        if self.keep_observations is not None:  # only when set: older records stay as they were
            out["keep_observations"] = self.keep_observations
        return out

    def policy(self, messages, tools, task=None):
        history = [dict(m) for m in messages]
        observations: list[int] = []  # where in history the tool outputs are, oldest first
        elided = 0  # how many of them have been replaced by the placeholder
        params = dict(self.sampling)
        if self.tool_mode == "native":
            params |= {"tools": tools, "tool_choice": "auto"}
        k = self.keep_observations
        while True:
            if k is not None:
                for i in observations[elided : max(len(observations) - k, elided)]:
                    history[i] = history[i] | {"content": ELIDED_OBSERVATION}
                elided = max(len(observations) - k, elided)
            reply = self.client.complete(history, **params)
            self.calls += 1
            action = {"role": "assistant", "content": reply.get("content")}
            if reply.get("tool_calls"):
                action["tool_calls"] = reply["tool_calls"]
            obs = yield action
            history.append(action)
            for m in obs:  # a step's observations are its tool outputs (user messages in tag mode)
                observations.append(len(history))
                history.append(dict(m))
