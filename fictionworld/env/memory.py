"""``dict_memory``: Qwen-AgentWorld's per-episode working memory, the store behind the tool.

Keys map to text values in insertion order; every action returns the observation text and
whether it worked, and a call over a cap is refused whole (nothing stored).
"""

from __future__ import annotations

import itertools
import json

from fictionworld.web.text import first_surrogate

__all__ = ["DictMemory", "MEMORY_ACTIONS", "check_memory_arguments"]

MEMORY_ACTIONS = ("add", "update", "retrieve", "retrieve_all", "remove", "remove_all")
_KEYED = ("add", "update", "retrieve", "remove")  # the actions that need a key (or a batch of them)
# Qwen-AgentWorld's batch forms: add/update take {"dict": {key: value, …}}, retrieve/remove
# {"key_list": [key, …]}, in place of key (and value).
_BATCH = {"add": "dict", "update": "dict", "retrieve": "key_list", "remove": "key_list"}


def check_memory_arguments(args: dict) -> str | None:
    """What is wrong with a ``dict_memory`` call's arguments as such (the store's own rules,
    which depend on what it holds, are :class:`DictMemory`'s), after the tool's argument types
    were checked. An action written in another case or with spaces around it is taken as the
    action; a ``dict`` value that is not text is stored as its JSON."""
    action = args["action"].strip().lower()
    if action not in MEMORY_ACTIONS:
        return f"unknown dict_memory action {args['action'][:60]!r}; the actions are: {', '.join(MEMORY_ACTIONS)}"
    args["action"] = action
    batch = _BATCH.get(action)
    for other in ("dict", "key_list"):
        if other in args and other != batch:
            return f"dict_memory {action} takes no {other!r}" + (f" (it takes {batch!r})" if batch else "")
    if batch in args:
        if "key" in args or "value" in args:
            return f"dict_memory {action} takes 'key'{' and value' if batch == 'dict' else ''} or {batch!r}, not both"
        items = args[batch]
        if not items:
            return f"{batch!r} of dict_memory {action} is empty"
        if batch == "key_list":
            if not all(isinstance(k, str) for k in items):
                return "'key_list' of dict_memory must be a list of strings"
            args[batch] = list(dict.fromkeys(items))  # a key named twice is one key
        else:
            args[batch] = {k: v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for k, v in items.items()}
        return None
    if action in _KEYED and "key" not in args:
        return f"dict_memory {action} needs the argument 'key'" + (f" (or {batch!r})" if batch else "")
    if action in ("add", "update") and "value" not in args:
        return f"dict_memory {action} needs the argument 'value'"
    if action == "retrieve_all" and args.get("offset", 0) < 0:
        return "'offset' of dict_memory must be 0 or more"
    return None


class DictMemory:
    """The store behind the ``dict_memory`` tool: one per env, emptied at each episode's start.
    Keys keep the order they were first added in (``update`` keeps a key's place). Every cap is
    checked before anything changes, so a refused call loses nothing: ``max_keys`` keys,
    ``max_key_chars`` / ``max_value_chars`` characters per key / value, ``max_total_chars``
    characters of keys and values together. :meth:`run` never raises on arguments that passed
    :func:`parse_action` (``action`` one of :data:`MEMORY_ACTIONS`, ``key`` present where the
    action needs one, strings and an int ``offset`` >= 0)."""

    def __init__(self, max_keys: int = 5_000, max_key_chars: int = 200, max_value_chars: int = 4_000,
                 max_total_chars: int = 1_000_000):  # fmt: skip
        self.max_keys, self.max_key_chars = max_keys, max_key_chars
        self.max_value_chars, self.max_total_chars = max_value_chars, max_total_chars
        self.entries: dict[str, str] = {}
        self.chars = 0  # of every key and value held

    def clear(self) -> int:
        """Empties the store; returns how many entries it held."""
        n = len(self.entries)
        self.entries.clear()
        self.chars = 0
        return n

    def run(self, arguments: dict, *, max_chars: int = 20_000) -> tuple[str, bool]:
        """The observation text of one call, and whether it worked (else the text is ``Error: …``).
        ``max_chars`` bounds what ``retrieve_all`` shows at once (the env's observation limit)."""
        action = arguments["action"]
        if action == "remove_all":
            n = self.clear()
            return f"Removed all {n:,} entries; the memory is empty." if n else "The memory was already empty.", True
        if action == "retrieve_all":
            return self._page(arguments.get("offset", 0), max_chars)
        if "dict" in arguments:
            return self._put_many(action, arguments["dict"])
        if "key_list" in arguments:
            return self._many(action, arguments["key_list"])
        key = arguments["key"]
        problem = _text_problem("key", key)
        if problem is None and not key.strip():
            problem = "the key is empty"
        if problem is not None:
            return f"Error: {problem}{'. Nothing was stored' if action in ('add', 'update') else ''}.", False
        held = key in self.entries
        if action in ("retrieve", "remove") and not held:
            return (
                f"Error: no key {_show(key)} in memory ({_entries(len(self.entries))}; retrieve_all lists them).",
                False,
            )
        if action == "retrieve":
            value = self.entries[key]
            return f"Value of {_show(key)} ({_chars(len(value))}):\n{value}", True
        if action == "remove":
            self.chars -= len(key) + len(self.entries.pop(key))
            return f"Removed {_show(key)}; {_entries(len(self.entries))} left.", True
        if action == "add" and held:
            return f"Error: the key {_show(key)} is already in memory; use update to replace its value.", False
        if action == "update" and not held:
            return f"Error: no key {_show(key)} in memory; use add to store a new key.", False
        value = arguments["value"]
        problem = _text_problem("value", value) or self._over_cap(key, value, held)
        if problem is not None:
            return f"Error: {problem}. Nothing was stored.", False
        self.chars += len(value) - (len(self.entries[key]) if held else -len(key))
        self.entries[key] = value
        verb = "Updated" if held else "Stored"
        return f"{verb} {_show(key)} ({_chars(len(value))}); {_entries(len(self.entries))} in memory.", True

    def _put_many(self, action: str, items: dict[str, str]) -> tuple[str, bool]:
        """AgentWorld's ``{"dict": {…}}``: every entry stored, or (any problem) none."""
        update, keys, chars = action == "update", len(self.entries), self.chars
        for key, value in items.items():
            held = key in self.entries
            problem = _text_problem("key", key) or _text_problem("value", value)
            if problem is None and not key.strip():
                problem = "the key is empty"
            if problem is None and held != update:
                problem = "already in memory; use update" if held else "not in memory; use add"
            if problem is None:
                problem = self._over_cap(key, value, held, keys=keys, chars=chars)
            if problem is not None:
                return f"Error: {_show(key)}: {problem}. Nothing was stored.", False
            keys += not held
            chars += len(value) - (len(self.entries[key]) if held else -len(key))
        self.entries.update(items)
        self.chars = chars
        verb = "Updated" if update else "Stored"
        return f"{verb} {_entries(len(items))} ({_some(items)}); {_entries(len(self.entries))} in memory.", True

    def _many(self, action: str, keys: list[str]) -> tuple[str, bool]:
        """AgentWorld's ``{"key_list": […]}``: retrieve the keys held (naming those not found),
        or remove them all (none if one is not held)."""
        missing = [k for k in keys if k not in self.entries]
        if action == "remove":
            if missing:
                return f"Error: no key {_some(missing)} in memory; nothing was removed.", False
            for k in keys:
                self.chars -= len(k) + len(self.entries.pop(k))
            return f"Removed {_entries(len(keys))}; {_entries(len(self.entries))} left.", True
        found = {k: self.entries[k] for k in keys if k in self.entries}
        if not found:
            return f"Error: no key {_some(missing)} in memory ({_entries(len(self.entries))}).", False
        text = f"Values of {_entries(len(found))}, as JSON:\n" + json.dumps(found, ensure_ascii=False, indent=0)
        return text + (f"\nKey not found: {_some(missing, 20)}." if missing else ""), True

    def _over_cap(self, key: str, value: str, held: bool, *, keys: int | None = None,
                  chars: int | None = None) -> str | None:  # fmt: skip
        """Why storing ``key`` would break a cap, with ``keys`` entries and ``chars`` characters
        held (default: the store's own counts)."""
        keys = len(self.entries) if keys is None else keys
        chars = self.chars if chars is None else chars
        if len(key) > self.max_key_chars:
            return f"the key is {len(key):,} characters long; at most {self.max_key_chars:,}"
        if len(value) > self.max_value_chars:
            return f"the value is {len(value):,} characters long; at most {self.max_value_chars:,} (split it over keys)"
        if not held and keys >= self.max_keys:
            return f"the memory is full ({self.max_keys:,} keys); remove or update entries instead"
        total = chars + len(value) + (-len(self.entries[key]) if held else len(key))
        if total > self.max_total_chars:
            return (f"that would bring the memory to {total:,} characters of keys and values; at most "
                    f"{self.max_total_chars:,} (remove entries first)")  # fmt: skip
        return None

    def _page(self, offset: int, max_chars: int) -> tuple[str, bool]:
        """The entries from ``offset`` on, as many as fit in ``max_chars``: a header line, then a
        JSON object with one ``"key": "value"`` line per entry, then how to read on."""
        n = len(self.entries)
        if n == 0:
            return "The memory is empty (0 entries).", True
        if offset >= n:
            return f"Error: offset past the last entry ({_entries(n)}: use an offset from 0 to {n - 1:,}).", False
        # The entries get what the longest header and notes leave (numbers at their widest).
        notes = len(self._head(n, n, n)) + len(_cut_note(n)) + len(_more_note(n, n)) + 8
        room = max(max_chars - notes, 40)
        lines: list[str] = []
        cut = False
        for key, value in itertools.islice(self.entries.items(), offset, None):
            line = f"{json.dumps(key, ensure_ascii=False)}: {json.dumps(value, ensure_ascii=False)}"
            if len(line) + 2 > room:
                if lines:
                    break
                line, cut = _cut_entry(key, value, room - 2), True  # one entry longer than a page
            lines.append(line)
            room -= len(line) + 2
        end = offset + len(lines)
        parts = [self._head(n, offset + 1, end), "{\n" + ",\n".join(lines) + "\n}"]
        if cut:
            parts.append(_cut_note(offset + 1))
        if end < n:
            parts.append(_more_note(n - end, end))
        return "\n".join(parts), True

    def _head(self, n: int, first: int, last: int) -> str:
        shown = f"entry {first:,}" if first == last else f"entries {first:,} to {last:,}"
        return f"Memory: {_entries(n)}, {_chars(self.chars)} in all; {shown}, oldest first, as JSON:"


def _cut_note(i: int) -> str:
    return f"[the value of entry {i:,} was cut to fit: retrieve its key to read it whole]"


def _more_note(more: int, offset: int) -> str:
    entries = "entry" if more == 1 else "entries"
    return f"[{more:,} more {entries}: call dict_memory with action retrieve_all and offset {offset} for the next page]"


def _cut_entry(key: str, value: str, room: int) -> str:
    """One entry's line with its value cut (and marked with …) to fit in ``room`` characters,
    as far as its key leaves room."""
    k = json.dumps(key, ensure_ascii=False)

    def line(keep: int) -> str:
        return f"{k}: {json.dumps(value[:keep] + '…', ensure_ascii=False)}"

    lo, hi = 0, len(value)  # the longest prefix that fits, by bisection (escapes vary in length)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if len(line(mid)) <= room else (lo, mid - 1)
    return line(lo)


def _text_problem(what: str, text: str) -> str | None:
    at = first_surrogate(text)
    return None if at is None else f"the {what} holds a lone surrogate at character {at} (not text)"


def _show(key: str) -> str:
    """A key as an observation shows it: JSON-quoted, cut after 80 characters."""
    return json.dumps(key if len(key) <= 80 else key[:80] + "…", ensure_ascii=False)


def _some(keys, n: int = 5) -> str:
    """Up to ``n`` keys, shown, and how many more."""
    keys = list(keys)
    more = f" and {len(keys) - n:,} more" if len(keys) > n else ""
    return ", ".join(_show(k) for k in keys[:n]) + more


def _entries(n: int) -> str:
    return f"{n:,} {'entry' if n == 1 else 'entries'}"


def _chars(n: int) -> str:
    return f"{n:,} {'character' if n == 1 else 'characters'}"
