"""A scripted OpenAI-compatible HTTP server on 127.0.0.1, for tests.

It is not a model: it answers ``POST /v1/chat/completions`` (and SGLang's native ``POST
/generate``, with ``{"text", "meta_info"}``) with replies a test scripts in advance (text, an HTTP status, a delay, or a function of the request), and records every
request it received. A chat request with ``"stream": true`` gets the reply as a server-sent
event stream: the whole message in one chunk, then the usage, then ``[DONE]``. LLM code paths are tested against it because no LLM runs on CI machines.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["ScriptedOpenAIServer", "Reply"]


@dataclass
class Reply:
    content: str = ""
    status: int = 200
    delay: float = 0.0
    raw: str | None = None  # a body sent verbatim (malformed JSON and the like)
    tool_calls: list[dict] | None = None  # OpenAI-format tool calls (content may then be empty)


class ScriptedOpenAIServer:
    """``with ScriptedOpenAIServer(replies) as srv: ... srv.base_url``. ``replies`` is a list
    consumed in order (the last one repeats) or a function ``request_json -> Reply | str``."""

    def __init__(self, replies: list[Reply | str] | Callable[[dict], Reply | str]):
        self.replies = replies
        self.requests: list[dict] = []
        self.paths: list[str] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def _next(self, request: dict) -> Reply:
        with self._lock:
            self.requests.append(request)
            if callable(self.replies):
                r = self.replies(request)
            else:
                r = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        return Reply(r) if isinstance(r, str) else r

    def __enter__(self) -> ScriptedOpenAIServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_GET(self):  # health and model list, as SGLang serves them
                body = b"{}" if self.path.startswith("/health") else json.dumps(
                    {"object": "list", "data": [{"id": "scripted", "object": "model"}]}).encode()  # fmt: skip
                self.send_response(200 if self.path in ("/health", "/v1/models") else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                try:
                    req = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    req = {}
                owner.paths.append(self.path)
                reply = owner._next(req)
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.raw is not None:
                    body = reply.raw.encode()
                elif self.path.rstrip("/").endswith("/generate"):
                    meta = {"id": "scripted", "finish_reason": {"type": "stop"}, "prompt_tokens": 0,
                            "completion_tokens": 0, "cached_tokens": 0}  # fmt: skip
                    body = json.dumps({"text": reply.content, "meta_info": meta}).encode()
                elif req.get("stream"):
                    body = _stream(reply, req.get("model", ""))
                else:
                    body = json.dumps(
                        {
                            "id": "scripted",
                            "object": "chat.completion",
                            "model": req.get("model", ""),
                            "choices": [
                                {
                                    "index": 0,
                                    "message": {"role": "assistant", "content": reply.content or None}
                                    | ({"tool_calls": reply.tool_calls} if reply.tool_calls else {}),
                                    "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                                }
                            ],
                            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
                        }
                    ).encode()
                try:
                    self.send_response(reply.status)
                    stream = req.get("stream") and reply.raw is None
                    self.send_header("Content-Type", "text/event-stream" if stream else "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()


def _stream(reply: Reply, model: str) -> bytes:
    """``reply`` as an OpenAI chat-completion event stream."""
    calls = [{"index": i, **c} for i, c in enumerate(reply.tool_calls or ())]
    delta = {"role": "assistant", "content": reply.content or None} | ({"tool_calls": calls} if calls else {})
    head = {"id": "scripted", "object": "chat.completion.chunk", "created": 0, "model": model}
    events = [head | {"choices": [{"index": 0, "delta": delta, "finish_reason": "tool_calls" if calls else "stop"}]},
              head | {"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}]  # fmt: skip
    return b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events) + b"data: [DONE]\n\n"
