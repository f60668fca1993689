"""Agent-facing tools in OpenAI function-calling format, and parsing of whatever an agent sends
(native tool calls, Hermes/Qwen ``<tool_call>`` JSON, ``<search>``/``<open>``/``<answer>`` tags,
plain text) into tool calls. Parsing never raises: a bad call becomes a :class:`ToolCall` with
an ``error`` the agent reads as its observation."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["TOOLS", "TOOL_SETS", "ToolCall", "tool_schemas", "parse_action", "ToolSet", "MAX_QUERIES"]

ToolSet = Literal["basic", "agentworld", "all"]
MAX_QUERIES = 5


def _fn(name: str, description: str, properties: dict, required: list[str]) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


TOOLS: dict[str, dict] = {
    "search": _fn(
        "search",
        "Search the web. Returns ranked results, each with its URL, title, snippet and date.",
        {
            "query": {"type": "string", "description": "What to search for."},
            "page": {"type": "integer", "minimum": 1, "description": "Result page (default 1)."},
        },
        ["query"],
    ),
    "open": _fn(
        "open",
        "Open a web page by its URL and read it as Markdown. Long directory pages are split: "
        "add ?page=N to the URL for page N.",
        {"url": {"type": "string", "description": "The full URL (https://…)."}},
        ["url"],
    ),
    "answer": _fn(
        "answer",
        "Give the final answer and end the task. Use the answer format the task asks for.",
        {"text": {"type": "string", "description": "The final answer."}},
        ["text"],
    ),
    "web_search": _fn(
        "web_search",
        "Search the web with one or more queries; returns ranked results (URL, title, snippet, date) per query.",
        {
            "queries": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "maxItems": MAX_QUERIES,
                "description": "The search queries.",
            }
        },
        ["queries"],
    ),
    "web_extractor": _fn(
        "web_extractor",
        "Fetch the content of a web page by URL (Markdown).",
        {
            "url": {"type": "string", "description": "The full URL (https://…)."},
            "goal": {"type": "string", "description": "What you are looking for on the page (optional)."},
        },
        ["url"],
    ),
}

TOOL_SETS: dict[str, tuple[str, ...]] = {
    "basic": ("search", "open", "answer"),
    "agentworld": ("web_search", "web_extractor", "answer"),
    "all": ("search", "open", "web_search", "web_extractor", "answer"),
}

# name -> {argument: (type, required)}
_ARGS: dict[str, dict[str, tuple[type, bool]]] = {
    "search": {"query": (str, True), "page": (int, False)},
    "open": {"url": (str, True)},
    "answer": {"text": (str, True)},
    "web_search": {"queries": (list, True)},
    "web_extractor": {"url": (str, True), "goal": (str, False)},
}


def tool_schemas(tools: ToolSet = "basic") -> list[dict]:
    return [TOOLS[n] for n in TOOL_SETS[tools]]


@dataclass
class ToolCall:
    """One call as parsed: ``error`` is set (and ``arguments`` may be empty) when it is unusable."""

    id: str
    name: str
    arguments: dict = field(default_factory=dict)
    raw_arguments: str = ""
    error: str | None = None

    def message(self) -> dict:
        """The OpenAI ``tool_calls`` entry for this call."""
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.raw_arguments}}


_TAG = re.compile(r"<(search|open|answer)>(.*?)</\1>", re.S)
_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)


def parse_action(action, *, allowed: tuple[str, ...], max_arg_chars: int, turn: int) -> tuple[dict, list[ToolCall]]:
    """The assistant message an action stands for (OpenAI format) and its tool calls.

    Accepted: an assistant message ``{"role": "assistant", "content": …, "tool_calls": […]}``;
    one tool call (``{"function": {"name", "arguments"}}`` or ``{"name", "arguments"}``); or a
    string. Text without tool calls is read for ``<tool_call>{json}</tool_call>`` blocks, then
    ``<search>``/``<open>``/``<answer>`` tags; text with none of them is the final answer.
    """
    content: str | None = None
    raw_calls: list = []
    if isinstance(action, str):
        content = action
    elif isinstance(action, dict) and ("tool_calls" in action or action.get("role") == "assistant"):
        content = action.get("content")
        raw_calls = action.get("tool_calls") or []
        if not isinstance(raw_calls, list):
            raw_calls = [raw_calls]
    elif isinstance(action, dict) and ("function" in action or "name" in action):
        raw_calls = [action]
    else:
        call = ToolCall(f"call_{turn}_0", "?", error=f"unreadable action of type {type(action).__name__}")
        return {"role": "assistant", "content": str(action)[:200]}, [call]
    if content is not None and not isinstance(content, str):
        content = json.dumps(content) if not isinstance(content, list) else _text_parts(content)
    calls = [_native(c, i, turn) for i, c in enumerate(raw_calls)]
    if not calls and content is not None:
        calls = _from_text(content, turn)
    for c in calls:
        if c.error is None:
            c.error = _check(c, allowed, max_arg_chars)
    message: dict = {"role": "assistant", "content": content}
    if raw_calls:
        message["tool_calls"] = [c.message() for c in calls]
    return message, calls


def _text_parts(parts: list) -> str:
    return "".join(p.get("text", "") for p in parts if isinstance(p, dict))


def _native(raw, i: int, turn: int) -> ToolCall:
    cid = f"call_{turn}_{i}"
    if not isinstance(raw, dict):
        return ToolCall(cid, "?", error="a tool call must be an object with a function name and arguments")
    cid = str(raw.get("id") or cid)
    fn = raw.get("function", raw)
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn.get("name"):
        return ToolCall(cid, "?", error="tool call without a function name")
    return _with_args(ToolCall(cid, fn["name"]), fn.get("arguments", {}))


def _with_args(call: ToolCall, args) -> ToolCall:
    if isinstance(args, str):
        call.raw_arguments = args
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError as e:
            call.error = f"the arguments of {call.name} are not valid JSON ({e.msg} at character {e.pos})"
            return call
    else:
        try:
            call.raw_arguments = json.dumps(args, ensure_ascii=False)
        except (TypeError, ValueError):
            call.raw_arguments = str(args)[:1000]
    if not isinstance(args, dict):
        call.error = f"the arguments of {call.name} must be a JSON object, not {type(args).__name__}"
        return call
    call.arguments = args
    return call


def _from_text(text: str, turn: int) -> list[ToolCall]:
    blocks = _TOOL_CALL.findall(text)
    if blocks:
        out = []
        for i, block in enumerate(blocks):
            try:
                obj = json.loads(block)
            except json.JSONDecodeError as e:
                out.append(ToolCall(f"call_{turn}_{i}", "?", raw_arguments=block[:1000],
                                    error=f"<tool_call> is not valid JSON ({e.msg})"))  # fmt: skip
                continue
            out.append(_native(obj, i, turn))
        return out
    tags = _TAG.findall(text)
    if tags:
        key = {"search": "query", "open": "url", "answer": "text"}
        return [_with_args(ToolCall(f"call_{turn}_{i}", n), {key[n]: v.strip()}) for i, (n, v) in enumerate(tags)]
    return [_with_args(ToolCall(f"call_{turn}_0", "answer"), {"text": text})]


def _check(call: ToolCall, allowed: tuple[str, ...], max_arg_chars: int) -> str | None:
    if call.name not in allowed:
        return f"unknown tool {call.name[:60]!r}; the tools are: {', '.join(allowed)}"
    spec = _ARGS[call.name]
    for arg, (kind, required) in spec.items():
        if arg not in call.arguments:
            if required:
                return f"{call.name} needs the argument {arg!r}"
            continue
        v = call.arguments[arg]
        if kind is int and isinstance(v, str) and v.strip().isdigit():
            call.arguments[arg] = v = int(v)
        if kind is list and isinstance(v, str):
            call.arguments[arg] = v = [v]
        if not isinstance(v, kind) or (kind is int and isinstance(v, bool)):
            return f"argument {arg!r} of {call.name} must be {_NAMES[kind]}, not {type(v).__name__}"
        if kind is list:
            if not v or len(v) > MAX_QUERIES or not all(isinstance(q, str) for q in v):
                return f"{arg!r} must be a list of 1 to {MAX_QUERIES} strings"
    limit = max_arg_chars if call.name != "answer" else 50 * max_arg_chars
    if len(call.raw_arguments) > limit:
        return f"the arguments of {call.name} are too long ({len(call.raw_arguments):,} characters; at most {limit:,})"
    return None


_NAMES = {str: "a string", int: "an integer", list: "a list of strings"}
