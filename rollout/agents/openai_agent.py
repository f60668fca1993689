"""An LLM agent over any OpenAI-compatible chat endpoint (SGLang first, also vLLM or OpenAI).

Native tool calling sends the env's tool schemas as ``tools``; SGLang parses the model's calls
when launched with ``--tool-call-parser`` (``qwen25``/``qwen3_coder`` for Qwen, ``llama3``,
``mistral``, …). Without a parser, ``tool_mode="tags"`` describes ``<search>``/``<open>``/
``<answer>`` tags in the system prompt and sends no ``tools``; Hermes-style
``<tool_call>{json}</tool_call>`` text is read in either mode. Sampling: ``temperature``,
``top_p`` and SGLang's ``top_k``/``min_p``/``repetition_penalty`` (``extra_body`` fields, sent
in the request body). Every call has a timeout and bounded retries; the env enforces the turn
and context budgets.
"""

from __future__ import annotations

from typing import Literal

from fictionworld.llm import ChatClient
from rollout.agents.base import Agent, register

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
    ):
        if tool_mode not in ("native", "tags"):
            raise ValueError(f"tool_mode must be native or tags, not {tool_mode!r}")
        self.base_url, self.model, self.tool_mode = base_url, model, tool_mode
        self.sampling = {"temperature": temperature, "top_p": top_p, "top_k": top_k, "max_tokens": max_tokens}
        self.sampling = {k: v for k, v in self.sampling.items() if v is not None} | (extra_body or {})
        self.timeout, self.retries = float(timeout), int(retries)
        self.client = ChatClient(base_url, model, api_key=api_key, timeout=timeout, retries=retries)
        self.env_defaults = {"max_turns": int(max_turns), "text_tags": tool_mode == "tags"}
        self.calls = 0

    def config(self) -> dict:
        return {"name": self.name, "base_url": self.base_url, "model": self.model, "tool_mode": self.tool_mode,
                "sampling": self.sampling, "timeout": self.timeout, "retries": self.retries}  # fmt: skip

    def policy(self, messages, tools, task=None):
        history = [dict(m) for m in messages]
        params = dict(self.sampling)
        if self.tool_mode == "native":
            params |= {"tools": tools, "tool_choice": "auto"}
        while True:
            reply = self.client.complete(history, **params)
            self.calls += 1
            action = {"role": "assistant", "content": reply.get("content")}
            if reply.get("tool_calls"):
                action["tool_calls"] = reply["tool_calls"]
            obs = yield action
            history.append(action)
            history += obs
