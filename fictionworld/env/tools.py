"""Agent-facing tools in OpenAI function-calling format, and parsing of whatever an agent sends
(native tool calls, Hermes/Qwen ``<tool_call>`` JSON, ``<search>``/``<open>``/``<answer>`` tags,
plain text) into tool calls. Parsing never raises: a bad call becomes a :class:`ToolCall` with
an ``error`` the agent reads as its observation."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from fictionworld.env.memory import MEMORY_ACTIONS, DictMemory, check_memory_arguments
from fictionworld.env.reasoning import without_reasoning
from fictionworld.web.text import short_repr, valid_text

__all__ = ["TOOLS", "TOOL_SETS", "ToolCall", "tool_schemas", "parse_action", "ToolSet", "MAX_QUERIES", "short_repr",
           "to_json", "json_value", "arg_limit", "DictMemory", "MEMORY_ACTIONS", "ONLY_REASONING"]  # fmt: skip


ToolSet = Literal["basic", "agentworld", "memory", "all"]
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
        "Search the web with one or more queries; returns 10 ranked results (URL, title, snippet, date) per "
        "query. Give queries (a list), or query (one).",
        {
            "queries": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "maxItems": MAX_QUERIES,
                "description": "The search queries.",
            },
            "query": {"type": "string", "description": "One search query (instead of queries)."},
        },
        [],
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
    "dict_memory": _fn(
        "dict_memory",
        "Your working memory for this task: text values stored by key, kept across turns (older tool "
        "output may leave your context; what you store here stays). Actions: add (a new key), update "
        "(replace an existing key's value), retrieve (one key's value), retrieve_all (every entry, oldest "
        "first, one page at a time: pass offset to read on), remove (one key), remove_all (clear it).",
        {
            "action": {"type": "string", "enum": list(MEMORY_ACTIONS), "description": "What to do."},
            "key": {"type": "string", "description": "The entry's key (add, update, retrieve, remove)."},
            "value": {"type": "string", "description": "The text to store (add, update)."},
            "offset": {
                "type": "integer",
                "minimum": 0,
                "description": "retrieve_all: the number of entries to skip, to read the next page (default 0).",
            },
            "dict": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "description": "add, update: several entries at once, {key: value, …} (instead of key and value).",
            },
            "key_list": {
                "type": "array",
                "items": {"type": "string"},
                "description": "retrieve, remove: several keys at once (instead of key).",
            },
        },
        ["action"],
    ),
}

TOOL_SETS: dict[str, tuple[str, ...]] = {
    "basic": ("search", "open", "answer"),
    "agentworld": ("web_search", "web_extractor", "dict_memory", "answer"),
    "memory": ("search", "open", "dict_memory", "answer"),
    "all": ("search", "open", "web_search", "web_extractor", "dict_memory", "answer"),
}

# name -> {argument: (type, required)}
_ARGS: dict[str, dict[str, tuple[type, bool]]] = {
    "search": {"query": (str, True), "page": (int, False)},
    "open": {"url": (str, True)},
    "answer": {"text": (str, True)},
    "web_search": {"queries": (list, False), "query": (str, False)},  # one of the two (see _check)
    "web_extractor": {"url": (str, True), "goal": (str, False)},
    "dict_memory": {
        "action": (str, True),
        "key": (str, False),
        "value": (str, False),
        "offset": (int, False),
        "dict": (dict, False),
        "key_list": (list, False),
    },  # dict, key_list: AgentWorld's batch forms
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
        args = valid_text(self.raw_arguments)
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": args}}


_KEYS = {"search": "query", "open": "url", "answer": "text"}  # the argument a text tag fills
_INT = re.compile(r"[0-9]{1,9}")


def parse_action(action, *, allowed: tuple[str, ...], max_arg_chars: int, turn: int,
                 arg_limits: Mapping[str, int] | None = None) -> tuple[dict, list[ToolCall]]:  # fmt: skip
    """The assistant message an action stands for (OpenAI format) and its tool calls.

    Accepted: an assistant message ``{"role": "assistant", "content": …, "tool_calls": […]}``;
    one tool call (``{"function": {"name", "arguments"}}`` or ``{"name", "arguments"}``); or a
    string. Text without tool calls is read for ``<tool_call>{json}</tool_call>`` blocks, then
    ``<search>``/``<open>``/``<answer>`` tags; text with none of them is the final answer. A
    ``<tool_call>`` block (or bare text) may also hold Qwen3-Coder's XML form,
    ``<function=NAME><parameter=ARG>value</parameter></function>``. Text is read outside its
    reasoning blocks (``<think>…</think>``, :mod:`~fictionworld.env.reasoning`); a text of
    reasoning only, or one whose call was left open (a reply cut off mid-call), is an error call.
    Content given as OpenAI content parts is joined into one string. A message without tool
    calls whose content is neither, or that has no content, is an error call. Never raises,
    and takes time linear in the action's size; the message's strings are valid UTF-8 text (a
    lone surrogate becomes U+FFFD there; the call's arguments keep it, for the tool to refuse).
    ``arg_limits`` gives tools a longest-arguments limit other than :func:`arg_limit`'s.
    """
    content, bad, raw_calls = None, None, []
    if isinstance(action, str):
        content = action
    elif isinstance(action, dict) and ("tool_calls" in action or _is_assistant(action)):
        (content, bad), raw_calls = _content(action.get("content")), _as_list(action.get("tool_calls"))
    elif isinstance(action, dict) and ("function" in action or "name" in action):
        raw_calls = [action]
    else:
        call = ToolCall(f"call_{turn}_0", "?", error=f"unreadable action of type {type(action).__name__}")
        return {"role": "assistant", "content": valid_text(short_repr(action))}, [call]
    calls = [_native(c, i, turn) for i, c in enumerate(raw_calls)]
    if not calls:
        calls = _from_text(content, turn) if content is not None and bad is None else [_no_call(turn, bad)]
    for c in calls:
        if c.error is None:
            c.error = _check(c, allowed, max_arg_chars, arg_limits)
    message: dict = {"role": "assistant", "content": None if content is None else valid_text(content)}
    if raw_calls:
        message["tool_calls"] = [c.message() for c in calls]
    return message, calls


def to_json(obj) -> str:
    """``obj`` as JSON text, else its short repr (not JSON-able, nested too deeply); never raises."""
    try:
        return json.dumps(obj, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return short_repr(obj)


def _is_assistant(action: dict) -> bool:
    role = action.get("role")
    return isinstance(role, str) and role == "assistant"


def _as_list(raw) -> list:
    """``tool_calls`` as a list: none for a missing or empty value, one for anything else."""
    if isinstance(raw, list):
        return raw
    if raw is None or (isinstance(raw, str | dict | tuple | int | float) and not raw):
        return []
    return list(raw) if isinstance(raw, tuple) else [raw]


def _content(content) -> tuple[str | None, str | None]:
    """A message's text, and why it is not text (None when it is): a string, or OpenAI content
    parts (``{"type": "text", "text": "…"}``; parts without ``text``, an image, add nothing)."""
    if content is None or isinstance(content, str):
        return content, None
    if isinstance(content, list):
        texts = [_part_text(p) for p in content]
        if all(t is not None for t in texts):
            return "".join(t for t in texts if t), None
    why = f"the message content must be a string or a list of text parts, not {_what(content)}"
    return to_json(content), why


def _part_text(part) -> str | None:
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return None
    text = part.get("text", "")
    return text if isinstance(text, str) else None


def _what(content) -> str:
    if not isinstance(content, list):
        return type(content).__name__
    bad = next(p for p in content if _part_text(p) is None)
    inner = f" with text of type {type(bad.get('text')).__name__}" if isinstance(bad, dict) else ""
    return f"a list holding a part of type {type(bad).__name__}{inner}"


def _no_call(turn: int, why: str | None) -> ToolCall:
    return ToolCall(f"call_{turn}_0", "?", error=why or "empty action: no tool call and no text")


def _native(raw, i: int, turn: int) -> ToolCall:
    cid = f"call_{turn}_{i}"
    if not isinstance(raw, dict):
        return ToolCall(cid, "?", error="a tool call must be an object with a function name and arguments")
    if isinstance(raw.get("id"), str) and raw["id"]:
        cid = valid_text(raw["id"])
    fn = raw.get("function", raw)
    name = fn.get("name") if isinstance(fn, dict) else None
    if not isinstance(name, str) or not name:
        return ToolCall(cid, "?", error="tool call without a function name")
    return _with_args(ToolCall(cid, valid_text(name)), fn.get("arguments", {}))


def _with_args(call: ToolCall, args) -> ToolCall:
    if isinstance(args, str):
        call.raw_arguments = args
        args, error = json_value(args) if args.strip() else ({}, None)
        if error is not None:
            call.error = f"the arguments of {call.name} are not valid JSON ({error})"
            return call
    else:
        call.raw_arguments = to_json(args)
    if not isinstance(args, dict):
        call.error = f"the arguments of {call.name} must be a JSON object, not {type(args).__name__}"
        return call
    call.arguments = dict(args)  # a copy: the checks normalise it, never the caller's action
    odd = [k for k in args if not isinstance(k, str)]  # a Python dict's (JSON names are strings)
    if odd:
        call.error = (f"the arguments of {call.name} must be named by strings, not by {type(odd[0]).__name__} "
                      f"({short_repr(odd[0])[:40]})")  # fmt: skip
    return call


def json_value(text: str) -> tuple[object, str | None]:
    """Parsed JSON and None, or None and why it is not JSON Python can read; never raises."""
    try:
        return json.loads(text), None
    except json.JSONDecodeError as e:
        return None, f"{e.msg} at character {e.pos}"
    except RecursionError:
        return None, "nested too deeply"
    except ValueError:  # an integer of over 4,300 digits
        return None, "a number too long"


def _from_text(text: str, turn: int) -> list[ToolCall]:
    """The calls of a text, read outside its reasoning blocks (:mod:`~fictionworld.env.reasoning`).
    A text of reasoning only, or whose last call was left open (cut off mid-call), is an error
    call: never the final answer."""
    said = without_reasoning(text)
    if not said.strip() and said != text:
        return [ToolCall(f"call_{turn}_0", "?", error=ONLY_REASONING)]
    text = said
    blocks = _tool_call_blocks(text)
    if not blocks and _XML_FUNCTION in text:  # Qwen3-Coder XML calls written without <tool_call>
        blocks = _xml_blocks(text)
    open_call = _left_open(text, "tool_call") and not (blocks and blocks[-1].startswith(_XML_FUNCTION))
    if blocks or open_call:
        out = []
        for i, block in enumerate(blocks):
            if block.startswith(_XML_FUNCTION):
                out.append(_xml_call(block, i, turn))
                continue
            obj, error = json_value(block)
            if error is not None:
                out.append(ToolCall(f"call_{turn}_{i}", "?", raw_arguments=block[:1000],
                                    error=f"<tool_call> is not valid JSON ({error})"))  # fmt: skip
                continue
            out.append(_native(obj, i, turn))
        if open_call:
            out.append(_open_call(len(out), turn, "tool_call"))
        return out
    tags = _tags(text)
    out = [_with_args(ToolCall(f"call_{turn}_{i}", n), {_KEYS[n]: v.strip()}) for i, (n, v) in enumerate(tags)]
    if opened := next((n for n in _KEYS if _left_open(text, n)), None):
        out.append(_open_call(len(out), turn, opened))
    if out:
        return out
    return [_with_args(ToolCall(f"call_{turn}_0", "answer"), {"text": text})]


ONLY_REASONING = "the reply holds only reasoning (<think>…</think>): no tool call and no answer"


def _left_open(text: str, tag: str) -> bool:
    """Whether the last ``<tag>`` of ``text`` has no ``</tag>`` after it."""
    i = text.rfind(f"<{tag}>")
    return i >= 0 and text.find(f"</{tag}>", i) < 0


def _open_call(i: int, turn: int, tag: str) -> ToolCall:
    return ToolCall(f"call_{turn}_{i}", "?", error=f"a <{tag}> with no </{tag}> after it: the call was cut off or "
                                                  f"left open; write it again, closed")  # fmt: skip


def _tool_call_blocks(text: str) -> list[str]:
    """The stripped insides of ``<tool_call>…</tool_call>`` blocks, in linear time (a regex
    ``<tool_call>\\s*(.*?)\\s*</tool_call>`` takes minutes on an unclosed tag and many spaces)."""
    out, pos = [], 0
    while (i := text.find("<tool_call>", pos)) >= 0:
        j = text.find("</tool_call>", i + 11)
        if j < 0:
            break
        out.append(text[i + 11 : j].strip())
        pos = j + 12
    return out


_XML_FUNCTION, _XML_PARAMETER = "<function=", "<parameter="


def _xml_blocks(text: str) -> list[str]:
    """Each ``<function=…>…</function>`` of a text with no ``<tool_call>`` block, in linear time
    (an unclosed last one runs to the end of the text)."""
    out, pos = [], 0
    while (i := text.find(_XML_FUNCTION, pos)) >= 0:
        j = text.find("</function>", i)
        out.append(text[i:] if j < 0 else text[i : j + 11])
        if j < 0:
            break
        pos = j + 11
    return out


def _xml_call(block: str, i: int, turn: int) -> ToolCall:
    """A Qwen3-Coder XML call (what SGLang's and vLLM's ``qwen3_coder`` parsers read):
    ``<function=NAME><parameter=ARG>value</parameter>…</function>``. A value loses one newline
    on each side and stays text, except for an argument the tool takes as a number (a whole
    number), a list (a JSON array, else one string) or an object (JSON), as those parsers convert by the tool's
    schema; an unclosed ``</parameter>`` runs to the next parameter or the function's end."""
    cid = f"call_{turn}_{i}"
    head_end = block.find(">")
    name = block[len(_XML_FUNCTION) : head_end].strip() if head_end >= 0 else ""
    if not name or "\n" in name or "<" in name or len(name) > 200:
        return ToolCall(cid, "?", raw_arguments=block[:1000], error="<function=…> without a tool name")
    body = block[head_end + 1 :]
    if (end := body.rfind("</function>")) >= 0:
        body = body[:end]
    spec = _ARGS.get(name, {})
    args: dict = {}
    pos, end_tag = 0, 0  # end_tag: the next "</parameter>" at or after pos (-1: none left)
    while (k := body.find(_XML_PARAMETER, pos)) >= 0:
        close = body.find(">", k)
        if close < 0:
            break
        arg = body[k + len(_XML_PARAMETER) : close].strip()
        if 0 <= end_tag < close:  # each search starts past the last, so the loop stays linear
            end_tag = body.find("</parameter>", close)
        nxt = body.find(_XML_PARAMETER, close)
        if end_tag < 0 or 0 <= nxt < end_tag:  # unclosed: up to the next parameter, or the end
            stop = pos = nxt if nxt >= 0 else len(body)
        else:
            stop, pos = end_tag, end_tag + 12
        args[arg] = _xml_value(body[close + 1 : stop], spec.get(arg, (str, False))[0])
    return _with_args(ToolCall(cid, valid_text(name)), args)


def _xml_value(raw: str, kind: type):
    value = raw[1:] if raw.startswith("\n") else raw
    value = value[:-1] if value.endswith("\n") else value
    if kind is int and _INT.fullmatch(value.strip()):
        return int(value.strip())
    if (kind is list and value.strip().startswith("[")) or (kind is dict and value.strip().startswith("{")):
        obj, error = json_value(value.strip())
        if error is None and isinstance(obj, kind):
            return obj
    return value


def _tags(text: str) -> list[tuple[str, str]]:
    """(tag, inside) of each ``<search>``/``<open>``/``<answer>`` tag closed by its own end tag,
    left to right and not nested, in linear time: what ``<(search|open|answer)>(.*?)</\\1>``
    finds, without its quadratic scans of unclosed tags."""
    out: list[tuple[str, str]] = []
    at = {n: text.find(f"<{n}>") for n in _KEYS}  # the next opening tag of each name, -1: none closes
    while any(i >= 0 for i in at.values()):
        i, n = min((i, n) for n, i in at.items() if i >= 0)
        start = i + len(n) + 2
        j = text.find(f"</{n}>", start)
        if j < 0:  # no end tag after this one, so none after any later one either
            at[n] = -1
            continue
        out.append((n, text[start:j]))
        end = j + len(n) + 3
        at = {m: (k if k < 0 or k >= end else text.find(f"<{m}>", end)) for m, k in at.items()}
    return out


def _check(call: ToolCall, allowed: tuple[str, ...], max_arg_chars: int,
           arg_limits: Mapping[str, int] | None = None) -> str | None:  # fmt: skip
    if call.name not in allowed:
        return f"unknown tool {call.name[:60]!r}; the tools are: {', '.join(allowed)}"
    spec = _ARGS[call.name]
    for arg, (kind, required) in spec.items():
        if arg not in call.arguments:
            if required:
                return f"{call.name} needs the argument {arg!r}"
            continue
        v = call.arguments[arg]
        if kind is int and isinstance(v, str) and _INT.fullmatch(v.strip()):
            call.arguments[arg] = v = int(v.strip())
        if kind is list and isinstance(v, str):
            call.arguments[arg] = v = [v]
        if not isinstance(v, kind) or (kind is int and isinstance(v, bool)):
            return f"argument {arg!r} of {call.name} must be {_NAMES[kind]}, not {type(v).__name__}"
        if kind is list and arg == "queries":
            if not v or len(v) > MAX_QUERIES or not all(isinstance(q, str) for q in v):
                return f"{arg!r} must be a list of 1 to {MAX_QUERIES} strings"
    limit = (arg_limits or {}).get(call.name) or arg_limit(call.name, max_arg_chars)
    if len(call.raw_arguments) > limit:
        return f"the arguments of {call.name} are too long ({len(call.raw_arguments):,} characters; at most {limit:,})"
    if call.name == "dict_memory":
        return check_memory_arguments(call.arguments)
    if call.name == "web_search":
        return _check_web_search(call.arguments)
    return None


def _check_web_search(args: dict) -> str | None:
    """AgentWorld's two forms: ``{"queries": [...]}`` or ``{"query": "..."}`` (made a list of one)."""
    if "queries" in args and "query" in args:
        return "web_search takes 'queries' (a list) or 'query' (one string), not both"
    if "query" in args:
        args["queries"] = [args.pop("query")]
    if "queries" not in args:
        return "web_search needs the argument 'queries' (a list of queries) or 'query' (one query)"
    return None


_NAMES = {str: "a string", int: "an integer", list: "a list of strings", dict: "an object"}


def arg_limit(name: str, max_arg_chars: int) -> int:
    """The longest arguments (as JSON text) a call of ``name`` may have: 50 × ``max_arg_chars``
    for ``answer`` (a whole table), ``max_arg_chars`` for the others."""
    return 50 * max_arg_chars if name == "answer" else max_arg_chars
