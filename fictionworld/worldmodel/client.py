"""An async client for an SGLang server: OpenAI-compatible ``/v1/chat/completions`` or the
native ``/generate``, with bounded concurrency, a timeout on every call and bounded retries."""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import dataclass

import httpx

from fictionworld.errors import FictionWorldError

__all__ = ["WorldModelClient", "Completion", "ServerUnreachable", "chatml"]

_THINK = re.compile(r"<think>.*?</think>\s*", re.S)


class ServerUnreachable(FictionWorldError, RuntimeError):
    """No usable answer after the retries: connection refused, timeouts, 5xx, or a client error."""

    exit_code = 1


@dataclass
class Completion:
    text: str
    seconds: float
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0


def chatml(messages: list[dict]) -> str:
    """Messages in the ChatML layout of Qwen models, ending with an open assistant turn: what the
    native ``/generate`` endpoint needs, since it takes text, not messages."""
    body = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return body + "<|im_start|>assistant\n"


class WorldModelClient:
    """``api="chat"``: OpenAI-compatible chat completions (``response_format`` carries a JSON
    schema); ``api="generate"``: SGLang's native endpoint (``sampling_params.json_schema``)."""

    def __init__(self, base_url: str, model: str, *, api: str = "chat", api_key: str | None = None,
                 timeout: float = 60.0, retries: int = 2, backoff: float = 0.5, max_concurrency: int = 8,
                 sampling: dict | None = None, extra_body: dict | None = None):  # fmt: skip
        if api not in ("chat", "generate"):
            raise ValueError(f"api must be 'chat' or 'generate', not {api!r}")
        root = base_url.rstrip("/")
        root = root[:-3] if root.endswith("/v1") else root
        self.root, self.model, self.api = root, model, api
        self.url = f"{root}/v1/chat/completions" if api == "chat" else f"{root}/generate"
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.timeout, self.retries, self.backoff = float(timeout), int(retries), float(backoff)
        self.max_concurrency = int(max_concurrency)
        self.sampling = dict(sampling or {})
        self.extra_body = dict(extra_body or {})
        self._sem: asyncio.Semaphore | None = None
        self._http: httpx.AsyncClient | None = None

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:  # created inside the running loop that uses it
            self._sem = asyncio.Semaphore(self.max_concurrency)
            self._http = httpx.AsyncClient(
                timeout=httpx.Timeout(self.timeout, connect=min(self.timeout, 5.0)),
                limits=httpx.Limits(max_connections=self.max_concurrency),
                headers=self.headers,
            )
        return self._http

    def body(self, messages: list[dict], schema: dict | None, max_tokens: int) -> dict:
        s = self.sampling
        if self.api == "chat":
            out = {"model": self.model, "messages": messages, "max_tokens": max_tokens, **s}
            if schema is not None:
                out["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": "observation", "schema": schema},
                }
            return out | self.extra_body
        params = {"max_new_tokens": max_tokens, **s}
        if schema is not None:
            params["json_schema"] = json.dumps(schema)
        return {"text": chatml(messages), "sampling_params": params, "stream": False} | self.extra_body

    def parse(self, data: dict) -> tuple[str, dict]:
        """(text, usage) of a reply; raises ValueError/KeyError/TypeError on a malformed one."""
        if self.api == "chat":
            msg = data["choices"][0]["message"]
            text, usage = msg.get("content") or "", data.get("usage") or {}
            details = usage.get("prompt_tokens_details") or {}
            usage = {**usage, "cached_tokens": details.get("cached_tokens", 0) if isinstance(details, dict) else 0}
        else:
            text, usage = data["text"], data.get("meta_info") or {}
        if not isinstance(text, str):
            raise TypeError("the reply text is not a string")
        return _THINK.sub("", text).strip(), usage

    async def complete(self, messages: list[dict], *, schema: dict | None = None, max_tokens: int = 4096) -> Completion:
        """One completion; :class:`ServerUnreachable` after ``retries`` failed attempts."""
        http = self._client()
        body = self.body(messages, schema, max_tokens)
        last = "no attempt"
        for attempt in range(self.retries + 1):
            if attempt:
                await asyncio.sleep(self.backoff * 2 ** (attempt - 1))
            t = time.perf_counter()
            try:
                async with self._sem:
                    r = await http.post(self.url, json=body)
                if r.status_code >= 400:
                    last = f"HTTP {r.status_code}"
                    if r.status_code < 500 and r.status_code != 429:
                        break  # a client error does not fix itself
                    continue
                text, usage = self.parse(r.json())
                return Completion(text, time.perf_counter() - t, int(usage.get("prompt_tokens") or 0),
                                  int(usage.get("completion_tokens") or 0), int(usage.get("cached_tokens") or 0))  # fmt: skip
            except httpx.TimeoutException:
                last = f"no reply within {self.timeout:g} s"
            except httpx.HTTPError as e:
                last = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
            except (ValueError, KeyError, IndexError, TypeError) as e:
                last = f"malformed reply ({type(e).__name__}: {e})"
        raise ServerUnreachable(f"{self.url} (model {self.model}): {last} after {attempt + 1} attempt(s)")

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None
