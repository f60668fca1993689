"""A non-LLM heuristic search agent, the floor every learned agent should beat.

It reads only what an LLM would: the task text and the tool observations. It searches the
task's core phrase (optionally one query per year of a range), opens the top results, collects
entities from directory pages (following their pagination), opens each entity's article and
fills the requested columns from the fact box and sentences by fuzzy label matching, following
one or two links for multi-hop columns. Its choices are a :class:`Strategy`, the action space
of the trainable policy in :mod:`fictionworld.rollouts.train`.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from rapidfuzz import fuzz

from fictionworld.rollouts.agents.base import ToolAgent, read_links, read_results, register, title_of
from fictionworld.surface import find_dates, find_numbers
from fictionworld.web.text import plain_text

__all__ = ["BaselineAgent", "Strategy", "STRATEGY_CHOICES"]


class Strategy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    query: Literal["core", "full", "headers"] = "core"  # what to search for first
    expand_ranges: bool = True  # "between 1974 and 1978": one query per year
    open_results: int = Field(3, ge=1, le=10)  # results opened per search
    follow_pages: bool = True  # follow a directory's ?page=N pages
    max_entities: int = Field(30, ge=1, le=500)  # articles read at most
    hops: int = Field(1, ge=0, le=2)  # links followed for a multi-hop column
    prose: bool = True  # read sentences too, not only the fact box


# The trainable policy's action space: every field's alternatives.
STRATEGY_CHOICES: dict[str, tuple] = {
    "query": ("core", "full", "headers"),
    "expand_ranges": (False, True),
    "open_results": (1, 3),
    "follow_pages": (False, True),
    "max_entities": (5, 15, 40),
    "hops": (0, 1, 2),
}

_WIKI = "https://en.fictopedia.org/wiki/"
_LEAD = re.compile(
    r"^(find every one of the|find all( the)?|list (all|every)( the)?|identify the|which is the)\s+", re.I
)
_RANGE = re.compile(r"\b(\w+) between (\d{3,4}) and (\d{3,4})\b")
_FACTBOX = re.compile(r"^- \*\*(.+?):\*\* (.+)$", re.M)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\[])")
_NUMERIC = ("number", "population", "metres", "km²", "price", "revenue", "capacity", "employees", "pages",
            "minutes", "tracks", "height", "attendance", "students", "elevation", "area", "dollars", "staff")  # fmt: skip
_DATE = ("date", "born", "founded", "launched", "released", "established", "published")
# Words a task uses for a relation, and words a page may use for it.
_SYNONYMS = {
    "headquarters": ("head office", "headquartered", "headquarters", "based in"),
    "manufacturer": ("made by", "manufactured", "manufacturer", "makes"),
    "artist": ("recorded by", "artist", "performed"),
    "author": ("author", "written by", "wrote"),
    "director": ("directed", "director"),
    "publisher": ("published by", "publisher"),
    "birthplace": ("born in", "birthplace"),
    "host": ("held in", "hosted", "host"),
    "label": ("released on", "label", "released by"),
    "producer": ("produced by", "producer"),
    "home": ("based in", "home"),
    "region": ("region", "located in"),
    "country": ("country", "located in", "citizen"),
    "city": ("city", "located in", "in"),
}


@register("baseline")
class BaselineAgent(ToolAgent):
    name = "baseline"
    env_defaults = {"max_turns": 120}

    def __init__(self, strategy: Strategy | dict | None = None, *, retries: int = 3, **fields):
        s = strategy if isinstance(strategy, Strategy) else Strategy.model_validate(strategy or {})
        self.strategy = Strategy.model_validate(s.model_dump() | fields) if fields else s  # validated, not copied
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ValueError(f"retries: must be a whole number >= 0, not {retries!r}")
        self.retries = retries

    def config(self) -> dict:
        return {"name": self.name, "strategy": self.strategy.model_dump(), "retries": self.retries}

    def policy(self, messages, tools, task=None):
        s = self.strategy
        query = next(m["content"] for m in messages if m["role"] == "user")
        headers = _headers(query)
        single = len(headers) == 1
        self.pages: dict[str, str | None] = {}
        urls = []
        for q in _queries(query, headers, s, single):
            text = yield from self._call("search", query=q)
            urls += [u for u, _ in read_results(text or "")[: s.open_results] if u not in urls]
        entities: list[str] = []
        for url in urls:
            text = yield from self._open(url)
            if text is None:
                continue
            if url.startswith(_WIKI):
                entities.append(url)
                continue
            entities += [u for _, u in read_links(text) if u.startswith(_WIKI)]
            m = re.search(r"\(page 1 of (\d+)\)", text)
            if s.follow_pages and m:
                for n in range(2, min(int(m.group(1)), 10) + 1):
                    more = yield from self._open(f"{url}?page={n}")
                    entities += [u for _, u in read_links(more or "") if u.startswith(_WIKI)]
        entities = list(dict.fromkeys(entities))[: s.max_entities]
        if single:
            answer = yield from self._best_match(query, entities[: max(3, s.open_results)])
            rows = [[answer]] if answer else []
        else:
            rows = []
            for url in entities:
                text = yield from self._open(url)
                if text:
                    rows.append((yield from self._row(text, headers)))
        lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        lines += ["| " + " | ".join(c.replace("|", "/") for c in r) + " |" for r in rows]
        yield {"name": "answer", "arguments": {"text": "```markdown\n" + "\n".join(lines) + "\n```"}}

    # -- reading ----------------------------------------------------------------------------
    def _best_match(self, query: str, urls: list[str]):
        best, best_score = None, -1.0
        for url in urls:
            text = yield from self._open(url)
            if text and url.startswith(_WIKI):
                score = fuzz.token_set_ratio(query.split(".")[0], plain_text(text))
                if score > best_score:
                    best, best_score = title_of(text), score
        return best

    def _row(self, text: str, headers: list[str]):
        row = [title_of(text) or ""]
        for h in headers[1:]:
            value = _lookup(text, h, self.strategy.prose)
            if value is None and self.strategy.hops:
                value = yield from self._hop(text, h.lower().split(), self.strategy.hops)
            row.append(_clean(value or "", h))
        return row

    def _hop(self, text: str, words: list[str], hops: int):
        """Split the header into a relation word and the rest; follow the relation's link."""
        for k in range(1, len(words)):
            url = _link_for(text, " ".join(words[:k]))
            if url is None:
                continue
            page = yield from self._open(url)
            if page is None:
                continue
            rest = " ".join(words[k:])
            value = _lookup(page, rest, True)
            if value is None and hops > 1:
                value = yield from self._hop(page, words[k:], hops - 1)
            if value is not None:
                return value
        return None


def _headers(query: str) -> list[str]:
    lines = [ln for ln in query.splitlines() if ln.strip().startswith("|") and "---" not in ln]
    if not lines:
        return ["Answer"]
    return [c.strip() for c in lines[-1].strip().strip("|").split("|")]


def _queries(query: str, headers: list[str], s: Strategy, single: bool) -> list[str]:
    first = query.split(". ")[0].strip()
    core = _LEAD.sub("", first)
    if s.query == "full":
        base = query.split("Answer with")[0][:900]
    elif s.query == "headers":
        base = " ".join(headers)
    else:
        base = core
    out = [base]
    m = _RANGE.search(core)
    if s.expand_ranges and m and not single and int(m.group(3)) - int(m.group(2)) <= 12:
        stem = core[: m.start()] + m.group(1) + " in {}"
        out = [stem.format(y) for y in range(int(m.group(2)), int(m.group(3)) + 1)]
    return out


def _lookup(text: str, header: str, prose: bool) -> str | None:
    h = header.lower()
    best, score = None, 0.0
    for label, value in _FACTBOX.findall(text):
        sc = fuzz.token_set_ratio(h, label.lower())
        if sc > score:
            best, score = value, sc
    if score >= 80:
        return plain_text(best)
    if not prose:
        return None
    keys = [w for w in re.findall(r"\w+", h) if len(w) > 3 and w not in ("number", "name", "metres", "dollars")]
    if not keys:
        return None
    for sentence in _SENTENCE.split(plain_text(text.split("\n## ", 1)[-1])):
        low = sentence.lower()
        if all(fuzz.partial_ratio(k, low) >= 85 for k in keys):
            at = low.find(keys[-1][:5])
            return sentence[at:] if at >= 0 else sentence
    return None


def _link_for(text: str, phrase: str) -> str | None:
    cues = _SYNONYMS.get(phrase, (phrase,))
    for sentence in _SENTENCE.split(text):
        low = sentence.lower()
        if any(c in low for c in cues):
            links = [u for _, u in read_links(sentence) if u.startswith(_WIKI)]
            if links:
                return links[-1]
    return None


def _clean(value: str, header: str) -> str:
    h = header.lower()
    if any(k in h for k in _DATE):
        dates = find_dates(value)
        if dates:
            return str(dates[0][0].year) if "year" in h else dates[0][0].isoformat()
    if any(k in h for k in _NUMERIC):
        nums = find_numbers(value)
        if nums:
            v = nums[-1][0]
            return str(int(v)) if float(v).is_integer() else f"{v:.2f}"
    if "website" in h or "url" in h:
        m = re.search(r"https?://\S+", value)
        return m.group(0).rstrip(".") if m else value
    for sep in (" is ", " are ", " in "):  # a sentence: keep what follows the verb
        if sep in value:
            value = value.rsplit(sep, 1)[1]
            break
    return value.strip().rstrip(".")[:200]
