"""Nasty actions for :class:`~fictionworld.env.SearchEnv`, drawn from a seed: the case generator
behind :mod:`fictionworld.testing.env_fuzz` (``benchmarks/fuzz_env.py``, ``tests/test_env_fuzz.py``).

Each :class:`Case` says whether its action is *bad* in every tool set (an unknown tool, a
wrong type, broken JSON, a malformed URL, a lone surrogate in a query, an argument too long,
a step after the episode ended, …): its first observation must then be an ``Error: …``.
"""

from __future__ import annotations

import json
import random
import string
from collections.abc import Callable
from dataclasses import dataclass

from fictionworld.env.tools import MAX_QUERIES

__all__ = ["Case", "NastyActions", "BAD_URLS", "NASTY_PIECES", "TOOL_NAMES", "valid_arguments"]

HUGE_INT = 10**5000  # has no repr (over 4,300 digits)
BAD_URLS = (
    "https://[::1",
    "http://[::1]x/",
    "http://[1.2.3.4]/",
    "https://]x.org/",
    "http://",
    "https://",
    "://x",
    "//en.fictopedia.org/wiki/X",
    "javascript:alert(1)",
    "data:text/html,hi",
    "ftp://en.fictopedia.org/wiki/X",
    "https://localhost/x",
    "https://a\uff03b.org/",  # NFKC turns the netloc's "＃" into "#": urlsplit refuses it
    "https://en.fictopedia.org/wiki/\ud800",
    "https://en.fictopedia.org/wiki/A B",
    "https://en.fictopedia.org/wiki/A\x00B",
    "https://en.fictopedia.org/wiki/A\tB",
    "https://en.fictopedia.org/wiki/X?page=0",
    "https://en.fictopedia.org/wiki/X?page=-1",
    "https://en.fictopedia.org/wiki/X?page=\u00b2",  # "²".isdigit() is True, int("²") raises
    "https://en.fictopedia.org/wiki/X?page=\u0661",
    "https://en.fictopedia.org/wiki/X?page=99999999999999999999",
    "https://en.fictopedia.org/wiki/" + "x" * 2_100,
    "not a url",
    "   ",
)
NASTY_PIECES = (
    "",
    " ",
    "\x00",
    "\ud800",
    "\udfff",
    "\udc80\ud800",
    "\ufeff",
    "\u202e",
    "\u200b",
    "\U0001f4a5",
    "\u00b2",
    "\u0661\u0662",
    "\r\n",
    "\t",
    "\x7f",
    "NaN",
    "null",
    "{",
    "}",
    "[",
    "]",
    '"',
    "\\",
    "\\u",
    "<tool_call>",
    "</tool_call>",
    "<search>",
    "</search>",
    "<open>",
    "</open>",
    "<answer>",
    "</answer>",
    "|",
    "---",
    "```markdown",
    "**",
    "%00",
    "%ff",
    "?page=0",
    "https://",
    "company",
    "founded 1974",
)
TOOL_NAMES = ("search", "open", "answer", "web_search", "web_extractor")


@dataclass(frozen=True)
class Case:
    """One action to step: ``bad`` when its first observation must be an error (in any tool
    set); ``after_end`` when it is to be sent to an episode that is over."""

    kind: str
    action: object
    bad: bool = False
    after_end: bool = False


class NastyActions:
    """A seeded source of :class:`Case`\\ s. ``urls`` are pages that exist, ``names`` words
    that find something, ``tables`` (header, rows) of the tasks' gold tables, ``answer_limit``
    the env's longest ``answer`` arguments (50 × ``max_arg_chars``)."""

    def __init__(self, seed: int, *, urls: list[str], names: list[str], tables: list[tuple[list[str], list[list[str]]]],
                 answer_limit: int = 100_000):  # fmt: skip
        self.rng = random.Random(seed)
        self.urls, self.names, self.tables = urls, names, tables
        self.answer_limit = answer_limit
        self.current = 0  # the table of the task the next case goes to (answers for it can score)
        self.families: list[tuple[str, int, Callable[[], Case]]] = [
            ("valid call", 10, self.valid_call),
            ("wrong field types", 14, self.wrong_types),
            ("bad arguments", 12, self.bad_arguments),
            ("argument not named by a string", 2, self.unnamed_argument),
            ("content parts", 8, self.content_parts),
            ("bad URL", 8, self.bad_url),
            ("surrogate query", 5, self.surrogate_query),
            ("text tags", 10, self.text_tags),
            ("reasoning only", 3, self.reasoning_only),
            ("broken <tool_call>", 7, self.broken_tool_call),
            ("unknown tool", 5, self.unknown_tool),
            ("huge string", 4, self.huge_string),
            ("answer table", 5, self.answer_table),
            ("random value", 6, self.random_value),
            ("after the end", 3, self.after_end),
        ]
        self._weights = [w for _, w, _ in self.families]

    def case(self) -> Case:
        _, _, make = self.rng.choices(self.families, weights=self._weights)[0]
        return make()

    # -- values ------------------------------------------------------------------------------
    def text(self, pieces: int = 4) -> str:
        """A short string of nasty pieces, random code points (lone surrogates included) and words."""
        r = self.rng
        out = []
        for _ in range(r.randint(1, pieces)):
            roll = r.random()
            if roll < 0.5:
                out.append(r.choice(NASTY_PIECES))
            elif roll < 0.7:
                out.append("".join(chr(r.randrange(0x110000)) for _ in range(r.randint(1, 4))))
            elif roll < 0.85:
                out.append(r.choice(self.names))
            else:
                out.append("".join(r.choices(string.printable, k=r.randint(1, 12))))
        return "".join(out)

    def junk(self, depth: int = 2) -> object:
        """Any value an action could hold: JSON values of every type, and a few Python ones."""
        r = self.rng
        roll = r.randrange(20)
        if roll == 0:
            return None
        if roll == 1:
            return r.choice((True, False))
        if roll == 2:
            return r.choice((0, -1, 1, 7, 2**63, -(2**70), HUGE_INT))
        if roll == 3:
            return r.choice((0.0, -0.5, 1.5, 1e308, float("nan"), float("inf"), float("-inf")))
        if roll == 4:
            return r.choice((b"bytes", (1, "a"), {1, 2}, frozenset(), object(), 1j))
        if roll == 5:
            return self.deep(r.choice((3, 50, 5_000)))
        if roll in (6, 7) and depth > 0:
            return [self.junk(depth - 1) for _ in range(r.randint(0, 4))]
        if roll in (8, 9) and depth > 0:
            keys = ("name", "arguments", "function", "tool_calls", "content", "role", "id", "text", "type", "query")
            return {r.choice(keys + (1, None, "")): self.junk(depth - 1) for _ in range(r.randint(0, 4))}
        return self.text()

    def deep(self, n: int) -> object:
        out: object = self.rng.choice(([], {}, "x", 1))
        for _ in range(n):
            out = [out] if self.rng.random() < 0.5 else {"text": out}
        return out

    def json_text(self) -> str:
        """Arguments as text: JSON of a wrong type, or not JSON at all."""
        r = self.rng
        return r.choice((
            "[1, 2]", "3", "null", "true", '"query"', "{bad json", "{'query': 'x'}", "{", "}", "",
            '{"query": "x"', '{"query": NaN}', "[" * 5_000 + "]" * 5_000, '{"page": ' + "9" * 5_000 + "}",
            '{"a": "\\ud800"', "\x00", json.dumps(self.text()), "{" + self.text() + "}",
        ))  # fmt: skip

    def huge(self) -> str:
        """2,000 characters to a megabyte: a short nasty string repeated."""
        n = self.rng.choice((2_000, 20_000, 200_000, 1_000_000))
        chunk = self.text(3) or "x"
        return (chunk * (n // len(chunk) + 1))[:n]

    # -- well-formed calls, in every form -----------------------------------------------------
    def valid_args(self, name: str) -> dict:
        r = self.rng
        if name == "search":
            args: dict = {"query": r.choice(self.names)}
            if r.random() < 0.3:
                args["page"] = r.choice((1, 2, "2", " 3 "))
            return args
        if name == "web_search":
            return {"queries": r.sample(self.names, r.randint(1, MAX_QUERIES))}
        if name in ("open", "web_extractor"):
            url = r.choice(self.urls)
            return {"url": url + r.choice(("", "", "?page=2", "/", "#top"))}
        return {"text": r.choice(self.tables)[0][0]}

    def form(self, name: str, args, *, content=None):
        """A call of ``name`` with ``args`` (a dict, or anything) as one of the forms the env reads."""
        r = self.rng
        raw = args if r.random() < 0.5 or not isinstance(args, dict) else _dumps(args, args)
        roll = r.randrange(4)
        if roll == 0:
            return {"name": name, "arguments": raw}
        if roll == 1:
            return {"function": {"name": name, "arguments": raw}}
        call = {"id": f"c{r.randrange(100)}", "type": "function", "function": {"name": name, "arguments": raw}}
        return {"role": "assistant", "content": content, "tool_calls": [call]}

    def valid_call(self) -> Case:
        name = self.rng.choice(("search", "open", "web_search", "web_extractor"))
        return Case("valid call", self.form(name, self.valid_args(name), content=self.rng.choice((None, "", "ok"))))

    # -- bad calls ----------------------------------------------------------------------------
    def wrong_types(self) -> Case:
        """A well-formed call with one field of the wrong type (bad unless it is a harmless one)."""
        r = self.rng
        name = r.choice(TOOL_NAMES)
        field = r.choice(("name", "arguments", "function", "tool_calls", "content", "id", "role"))
        wrong = self.junk()
        if field == "name":
            return Case("wrong field types", {"name": wrong, "arguments": self.valid_args(name)}, not _tool_name(wrong))
        if field == "arguments":
            return Case("wrong field types", {"name": name, "arguments": wrong}, not valid_arguments(name, wrong))
        if field == "function":  # junk never names a tool: no name, or an unknown one
            return Case(
                "wrong field types",
                {"function": wrong},
                not (isinstance(wrong, dict) and _tool_name(wrong.get("name"))),
            )
        if field == "tool_calls":  # junk calls, or none (and no content): an error either way
            return Case("wrong field types", {"role": "assistant", "content": None, "tool_calls": wrong}, True)
        if field == "content":
            return Case("wrong field types", {"role": "assistant", "content": wrong}, _bad_content(wrong))
        if field == "id":
            call = {"id": wrong, "function": {"name": "search", "arguments": {"query": r.choice(self.names)}}}
            return Case("wrong field types", {"role": "assistant", "content": None, "tool_calls": [call]})
        return Case("wrong field types", {"role": wrong, "content": self.text()}, not _is(wrong, "assistant"))

    def bad_arguments(self) -> Case:
        """A known tool with a required argument missing, of the wrong type, or out of range."""
        r = self.rng
        name = r.choice(TOOL_NAMES)
        required = {"search": "query", "open": "url", "answer": "text", "web_search": "queries",
                    "web_extractor": "url"}[name]  # fmt: skip
        args = self.valid_args(name)
        roll = r.randrange(5)
        if roll == 0:
            del args[required]
        elif roll == 4:
            args = self.json_text()
        elif roll == 1 or name != "search":
            args[required] = _wrong_type(self.junk(), list if name == "web_search" else str)
            if name == "web_search" and r.random() < 0.5:
                args[required] = r.choice(([], [1], ["a"] * (MAX_QUERIES + 1), [None, "x"], [["x"]]))
        elif roll == 2:
            args["page"] = r.choice((0, -1, 101, True, 1.5, "x", "\u00b2", "9" * 50, HUGE_INT, None, [1]))
        else:
            args["query"] = r.choice(("", "   ", "\t\n", "x" * 3_000))
        return Case("bad arguments", self.form(name, args), True)

    def unnamed_argument(self) -> Case:
        """A Python dict of arguments (never JSON text, whose names are strings) holding a name
        that is no string, beside good arguments or junk: an error, whatever else it holds."""
        r = self.rng
        name = r.choice(TOOL_NAMES)
        args = self.valid_args(name) if r.random() < 0.7 else {r.choice(("role", "query", "queries")): self.junk()}
        args[r.choice((None, 1, 0.5, True, (1, "a"), b"k", frozenset()))] = self.junk()
        roll = r.randrange(3)
        if roll == 0:
            return Case("argument not named by a string", {"name": name, "arguments": args}, True)
        if roll == 1:
            return Case("argument not named by a string", {"function": {"name": name, "arguments": args}}, True)
        call = {"id": "u", "type": "function", "function": {"name": name, "arguments": args}}
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return Case("argument not named by a string", message, True)

    def content_parts(self) -> Case:
        """Assistant content as a list of parts, some with text that is not a string."""
        r = self.rng
        parts = []
        for _ in range(r.randint(1, 4)):
            roll = r.randrange(6)
            if roll == 0:
                parts.append({"type": "text", "text": self.text()})
            elif roll == 1:
                parts.append({"type": "text", "text": r.choice((None, 5, 1.5, ["a"], [["b"]], {"t": 1}, True))})
            elif roll == 2:
                parts.append({"type": "image_url", "image_url": {"url": "https://x.org/a.png"}})
            elif roll == 3:
                parts.append(r.choice((None, 3, ["nested", ["list"]], self.text())))
            else:
                parts.append({"type": "text", "text": r.choice(("<search>", "<answer>")) + self.text()})
        action = {"role": "assistant", "content": parts}
        if r.random() < 0.3:  # tool calls beside the parts: the calls are what counts
            action["tool_calls"] = [{"id": "p", "function": {"name": "search", "arguments": {"query": "company"}}}]
            return Case("content parts", action)
        return Case("content parts", action, _bad_content(parts))

    def bad_url(self) -> Case:
        r = self.rng
        url = r.choice(BAD_URLS)
        if r.random() < 0.3:
            url = r.choice(BAD_URLS[:4]) + self.text(2)
            url = url if not url.startswith("https://[") or "]" not in url else "https://[::1"
        name = r.choice(("open", "web_extractor"))
        roll = r.randrange(4)
        if roll == 0:
            return Case("bad URL", f"<open>{url}</open>", True)
        if roll == 1:
            return Case(
                "bad URL", f"<tool_call>{json.dumps({'name': name, 'arguments': {'url': url}})}</tool_call>", True
            )
        return Case("bad URL", self.form(name, {"url": url}), True)

    def surrogate_query(self) -> Case:
        r = self.rng
        q = r.choice(self.names) + r.choice(("\ud800", " \udfff", "\udc80x", "\ud83d"))
        roll = r.randrange(4)
        if roll == 0:  # JSON with an escaped lone surrogate: valid JSON, not valid text
            return Case("surrogate query", {"name": "search", "arguments": json.dumps({"query": q})}, True)
        if roll == 1:
            return Case("surrogate query", f"<search>{q}</search>", True)
        if roll == 2:
            return Case("surrogate query", self.form("web_search", {"queries": [q]}), True)
        return Case("surrogate query", self.form("search", {"query": q}), True)

    def text_tags(self) -> Case:
        """Text with ``<search>``/``<open>``/``<answer>`` tags, closed or not, nested, repeated."""
        r = self.rng
        out = []
        for _ in range(r.randint(1, 5)):
            tag = r.choice(("search", "open", "answer", "tool_call"))
            inner = r.choice((r.choice(self.names), r.choice(self.urls), self.text()))
            close = r.choice((f"</{tag}>", f"</{tag}>", "", "</search>", f"</{tag.upper()}>"))
            out.append(f"{self.text(2) if r.random() < 0.3 else ''}<{tag}>{inner}{close}")
        return Case("text tags", "".join(out))

    def reasoning_only(self) -> Case:
        """A reply that only thinks: calls, answers and gold tables inside a ``<think>`` block
        (closed, left open, or closed with no opening: a template opened it). Never a call, never
        the answer: an error."""
        r = self.rng
        header, gold = r.choice(self.tables)
        table = "\n".join(["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
                          + ["| " + " | ".join(row) + " |" for row in gold[:3]])  # fmt: skip
        call = json.dumps({"name": "answer", "arguments": {"text": table}})
        thoughts = (f"<answer>{table}</answer>", f"maybe {table}", f"<tool_call>{call}</tool_call>")
        inner = "".join(r.choice((*thoughts, f"<search>{r.choice(self.names)}</search>", self.text(2)))
                        for _ in range(r.randint(1, 3)))  # fmt: skip
        tag = r.choice(("think", "thinking"))
        shape = r.choice((f"<{tag}>{inner}</{tag}>", f"<{tag}>{inner}", f"{inner}</{tag}>"))
        text = shape + r.choice(("", "\n\n", " "))
        action = text if r.random() < 0.5 else {"role": "assistant", "content": text}
        return Case("reasoning only", action, True)

    def broken_tool_call(self) -> Case:
        r = self.rng
        body = r.choice((
            self.json_text(), '{"name": "search", "arguments": {"query": "x"}', '{"name": "search"', "[]", "1",
            'null', '{"function": 1}', '{"name": 7, "arguments": {}}', '{"name": "search", "arguments": "{bad"}',
            '{"name": "search", "arguments": [1]}',
        ))  # fmt: skip
        return Case("broken <tool_call>", self.text(2) + f"<tool_call>{body}</tool_call>", _bad_json_call(body))

    def unknown_tool(self) -> Case:
        r = self.rng
        name = r.choice(("bogus", "Search", "SEARCH", "search ", "python", "?", "\ud800", "x" * 10_000, "open\x00"))
        return Case("unknown tool", self.form(name, self.valid_args(r.choice(TOOL_NAMES))), True)

    def huge_string(self) -> Case:
        """A huge string as an action, a content, a query, a URL, or a whole unclosed tag run."""
        r = self.rng
        s = self.huge()
        roll = r.randrange(6)
        if roll == 0:
            return Case("huge string", s)
        if roll == 1:
            return Case("huge string", r.choice(("<tool_call>", "<search>", "<open>")) + " " * len(s))
        if roll == 2:
            return Case("huge string", r.choice(("<tool_call>", "<search>", "<answer>")) * (len(s) // 10 + 1))
        if roll == 3:
            return Case("huge string", self.form("search", {"query": s}), True)
        if roll == 4:
            return Case("huge string", self.form("open", {"url": "https://en.fictopedia.org/wiki/" + s}), True)
        return Case("huge string", {"role": "assistant", "content": s,
                                    "tool_calls": [{"function": {"name": "search", "arguments": {"query": "a"}}}]})  # fmt: skip

    def answer_table(self) -> Case:
        """An answer as a Markdown table: gold rows, mangled ones and junk, up to thousands of rows."""
        r = self.rng
        header, gold = self.tables[self.current] if r.random() < 0.8 else r.choice(self.tables)
        n = r.choice((1, 3, 5, 30, 500, 3_000))
        rows = [self._row(header, gold) for _ in range(n)]
        cols = header if r.random() < 0.8 else r.sample(header, len(header)) + [self.text(1)]
        lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        table = "\n".join(lines)
        table = f"```markdown\n{table}\n```" if r.random() < 0.5 else table
        too_long = len(_dumps({"text": table.strip()}, "")) > self.answer_limit
        roll = r.randrange(3)
        if roll == 0:  # arguments as given: the text is taken whole
            return Case("answer table", {"name": "answer", "arguments": {"text": table.strip()}}, too_long)
        if roll == 1:  # tags in the cells would make other calls: checked only without them
            return Case("answer table", f"Done.\n<answer>{table}</answer>", too_long and "<" not in table)
        # a table in a message that also searches: scored if the turn or context budget ends the episode
        call = {"function": {"name": "search", "arguments": {"query": r.choice(self.names)}}}
        return Case("answer table", {"role": "assistant", "content": table, "tool_calls": [call]})

    def _row(self, header: list[str], gold: list[list[str]]) -> list[str]:
        r = self.rng
        row = list(r.choice(gold)) if gold and r.random() < 0.5 else [self.text(2) for _ in header]
        if r.random() < 0.3:
            row[r.randrange(len(row))] = self.text(2)
        if r.random() < 0.1:
            row = row[: r.randrange(len(row) + 1)] + [self.text(1)] * r.randrange(3)
        return [c.replace("\n", " ") for c in row]

    def random_value(self) -> Case:
        """Anything at all; bad when the env can read no call and no text in it."""
        v = self.junk(3)
        return Case("random value", v, _bad_action(v))

    def after_end(self) -> Case:
        r = self.rng
        name = r.choice(TOOL_NAMES)
        return Case("after the end", self.form(name, self.valid_args(name)), True, after_end=True)


# -- what makes an action bad, for the families that mix good and bad -----------------------------
REQUIRED = {"search": ("query", str), "open": ("url", str), "answer": ("text", str), "web_search": ("queries", list),
            "web_extractor": ("url", str)}  # fmt: skip


def _is(v, text: str) -> bool:
    return isinstance(v, str) and v == text


def _tool_name(v) -> bool:
    return isinstance(v, str) and v in TOOL_NAMES


def _dumps(v, default) -> str:
    try:
        return json.dumps(v, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return default


def _wrong_type(v, kind: type):
    """``v``, unless the env would take it as a ``kind`` (a string is a one-query list)."""
    fits = isinstance(v, str) or (kind is list and isinstance(v, list))
    return 12345 if fits else v


def valid_arguments(name: str, args) -> bool:
    """Whether ``args`` could be a good call of ``name``: an object (or its JSON) whose names are
    strings, with the required argument of the right type (``web_search``: ``queries``, or one
    ``query``); whatever else is wrong is not predicted."""
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except (ValueError, RecursionError):
            return False
    if not isinstance(args, dict) or not all(isinstance(k, str) for k in args):
        return False
    key, kind = REQUIRED[name]
    if name == "web_search" and key not in args:  # AgentWorld's other form: one query
        return isinstance(args.get("query"), str)
    return isinstance(args.get(key), kind) or (kind is list and isinstance(args.get(key), str))


def _bad_content(v) -> bool:
    """Content without tool calls: bad unless text (an answer, tags) or text parts."""
    if v is None:
        return True
    if isinstance(v, str):
        return False
    if isinstance(v, list):
        return not all(isinstance(p, str) or (isinstance(p, dict) and isinstance(p.get("text", ""), str)) for p in v)
    return True


def _bad_json_call(body: str) -> bool:
    try:
        v = json.loads(body)
    except (ValueError, RecursionError):
        return True
    if not isinstance(v, dict):
        return True
    fn = v.get("function", v)
    return not (
        isinstance(fn, dict) and _tool_name(fn.get("name")) and valid_arguments(fn["name"], fn.get("arguments", {}))
    )


def _bad_action(v) -> bool:
    """Any value: bad unless text, or an assistant message (which may hold text or a good call)."""
    if isinstance(v, str):
        return False
    if not isinstance(v, dict):
        return True
    return not ("tool_calls" in v or _is(v.get("role"), "assistant"))
