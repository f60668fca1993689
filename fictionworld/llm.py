"""A minimal client for OpenAI-compatible chat endpoints (SGLang, vLLM, OpenAI): every call has
a timeout and a bounded number of retries with backoff, and failures raise one clear error."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

from fictionworld.errors import FictionWorldError

__all__ = ["ChatClient", "LLMError"]


class LLMError(FictionWorldError, RuntimeError):
    """The endpoint could not be reached or answered with something unusable."""

    exit_code = 1


class ChatClient:
    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        retries: int = 3,
        backoff: float = 0.5,
    ):
        self.url = base_url.rstrip("/") + (
            "/chat/completions" if base_url.rstrip("/").endswith("/v1") else "/v1/chat/completions"
        )
        self.model = model
        self.api_key = api_key
        self.timeout = float(timeout)
        self.retries = int(retries)
        self.backoff = float(backoff)

    def chat(self, messages: list[dict], **params) -> str:
        """The assistant's text for ``messages``; raises :class:`LLMError` after the retries."""
        return self.complete(messages, **params).get("content") or ""

    def complete(self, messages: list[dict], **params) -> dict:
        """The assistant message (``content``, ``tool_calls``, ``reasoning_content`` when the
        server sends them) for ``messages``. ``params`` go into the request body as they are:
        ``tools``, ``temperature``, ``top_p`` and server extensions such as SGLang's ``top_k``
        (what the OpenAI client sends as ``extra_body``)."""
        body = json.dumps({"model": self.model, "messages": messages, **params}).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last = "no attempt"
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            req = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    data = json.loads(resp.read().decode("utf-8"))
                message = data["choices"][0]["message"]
                if not isinstance(message, dict):
                    raise TypeError("message is not an object")
                return message
            except urllib.error.HTTPError as e:
                last = f"HTTP {e.code}"
                if e.code < 500 and e.code != 429:
                    break  # a client error will not fix itself
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as e:
                last = f"{type(e).__name__}: {getattr(e, 'reason', e)}"
            except (ValueError, KeyError, IndexError, TypeError) as e:
                last = f"malformed reply ({type(e).__name__}: {e})"
        raise LLMError(f"{self.url} (model {self.model}): {last} after {attempt + 1} attempt(s)")
