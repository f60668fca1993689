"""The explorer: a scripted agent that knows nothing but the question and the tools.

It is the fairness proof of generated tasks: where the oracle is told which entities and facts
each gold cell comes from, the explorer gets only the task text, as an LLM would. It reads the
question in the task grammar (:func:`~fictionworld.tasks.grammar.parse_question`: the
conditions, with entities named by name only, the order and the requested columns), then works
the way a person would:

* finds each named entity's article by searching its name;
* lists the candidates from the web: the directory pages the question's words name ("Films
  released in 1994", "Players of X", following ``?page=N``), or a walk back from a named entity
  through directories and articles ("films directed by someone born in Z": People born in Z,
  then Films directed by each);
* opens every candidate, checks each condition on the pages (following links for multi-hop
  conditions, reading the dates of memberships), and keeps those that hold;
* fills the columns from the pages (counts by counting a directory's entries, ranks by
  sorting what it read), keeping each finished row in ``dict_memory`` when the env offers it,
  and answers with the table rebuilt from memory.

What it knows is the language of the web (the phrasing tables the pages are written in, the
directory titles, the schema), never the world's facts. A task it cannot complete is a task an
honest agent cannot complete: a generator bug.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable

from fictionworld.rollouts.agents.base import ToolAgent, read_results, register
from fictionworld.tasks.families import discoverable
from fictionworld.tasks.parse import Parsed, parse_question
from fictionworld.tasks.query import Column, Condition, Hop, type_of_path
from fictionworld.web.phrasing import INCOMING, LIST_BY_ATTRIBUTE, LIST_BY_RELATION, LIST_BY_YEAR
from fictionworld.web.reader import Article, read_article, read_directory

__all__ = ["ExplorerAgent", "explore", "ExploreResult"]

_MEMORY = "dict_memory"


@register("explorer")
class ExplorerAgent(ToolAgent):
    name = "explorer"
    privileged = False
    # It reads every candidate: budgets sized for hundreds of rows, and the memory tool.
    env_defaults = {"max_turns": 1_000_000, "max_context_chars": 2_000_000_000, "max_observation_chars": 10_000_000,
                    "tools": "memory"}  # fmt: skip

    def __init__(self, *, retries: int = 8, memory: bool = True):
        self.retries, self.memory = int(retries), bool(memory)

    def config(self) -> dict:
        return {"name": self.name, "retries": self.retries, "memory": self.memory}

    # -- the episode ---------------------------------------------------------------------
    def policy(self, messages, tools, task=None):
        question = next(m["content"] for m in messages if m["role"] == "user")
        names = {t["function"]["name"] for t in tools}
        self.pages: dict[str, str | None] = {}
        self.articles: dict[str, Article | None] = {}
        self.urls: dict[str, str | None] = {}  # entity name -> article URL
        self.directories: dict[str, list[tuple[str, str]]] = {}
        readings = parse_question(question)
        if not readings:
            yield {"name": "answer", "arguments": {"text": "I could not understand the question."}}
            return
        p: Parsed = readings[0]
        q = p.query
        use_memory = self.memory and _MEMORY in names
        for n in p.names:
            yield from self._article_url(n)
        rows = yield from self._rows(q, deep=p.deep)
        if q.order is not None:
            keyed = []
            for url in rows:
                v = yield from self._value(url, q.order.path, q.order.attribute)
                if v is not None:
                    keyed.append((v, url))
            keyed.sort(key=lambda x: _sort_key(x[0]), reverse=q.order.descending)
            rows = [u for _, u in keyed][: q.order.limit]
        table = []
        for rank, url in enumerate(rows, 1):
            row = []
            for col in q.columns:
                row.append((yield from self._cell(url, col, rank)))
            if use_memory:
                key, value = f"row {rank}: {row[0]}", json.dumps(row, ensure_ascii=False)
                yield from self._tool(_MEMORY, action="add", key=key, value=value)
            table.append(row)
        if use_memory and table:
            table = yield from self._recall(len(q.columns))
        headers = [c.header for c in q.columns]
        lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        lines += ["| " + " | ".join(c.replace("|", "/") for c in r) + " |" for r in table]
        yield {"name": "answer", "arguments": {"text": "```markdown\n" + "\n".join(lines) + "\n```"}}

    def _recall(self, width: int):
        """The rows kept in memory, read back with ``retrieve_all`` (paged by ``offset``)."""
        rows: list[list[str]] = []
        while True:
            text, status = yield from self._tool(_MEMORY, action="retrieve_all", offset=len(rows))
            entries = _memory_entries(text) if status == "ok" and text else {}
            got = [json.loads(v) for v in entries.values()]
            got = [r for r in got if isinstance(r, list) and len(r) == width]
            if not got:
                return rows
            rows += got

    # -- finding things --------------------------------------------------------------------
    def _article(self, url: str):
        if url not in self.articles:
            text = yield from self._open(url)
            self.articles[url] = read_article(text) if text else None
        return self.articles[url]

    def _article_url(self, name: str):
        """The article of the entity called ``name``: searched, then confirmed on the page."""
        if name not in self.urls:
            self.urls[name] = None
            text = yield from self._call("search", query=name)
            for url, title in read_results(text or ""):
                if title.strip() == name:
                    art = yield from self._article(url)
                    if art is not None and art.name == name:
                        self.urls[name] = url
                        break
        return self.urls[name]

    def _directory(self, title: str):
        """Members (name, url) of every directory page titled ``title``, all pages read."""
        if title in self.directories:
            return self.directories[title]
        members: list[tuple[str, str]] = []
        text = yield from self._call("search", query=title)
        for url, found in read_results(text or ""):
            if found.strip().lower() != title.lower():
                continue
            page = 1
            while True:
                body = yield from self._open(url if page == 1 else f"{url}?page={page}")
                d = read_directory(body) if body else None
                if d is None:
                    break
                members += d.members
                if d.page >= d.page_count:
                    break
                page += 1
        self.directories[title] = list(dict.fromkeys(members))
        return self.directories[title]

    def _rows(self, q, *, deep: bool):
        """Article URLs of the rows: candidates from a discoverable condition, then checked."""
        first = next((c for c in q.conditions if discoverable(q.type, c)), None)
        if first is None:
            return []
        cands = yield from self._discover(q.type, first)
        out = []
        for url in cands:
            ok = True
            for c in q.conditions:
                ok = yield from self._holds(url, q.type, c)
                if not ok:
                    break
            if ok:
                out.append(url)
        return out[:1] if deep else out

    def _discover(self, t: str, c: Condition):
        if c.any_of:
            out: list[str] = []
            for x in c.any_of:
                out += yield from self._discover(t, x)
            return list(dict.fromkeys(out))
        if not c.path:
            if c.equals is not None:
                members = yield from self._directory(LIST_BY_ATTRIBUTE[(t, c.attribute)].format(v=c.equals))
                return [u for _, u in members]
            out = []
            for year in range(int(c.lo), int(c.hi) + 1):
                members = yield from self._directory(LIST_BY_YEAR[(t, c.attribute)].format(v=year))
                out += [u for _, u in members]
            return list(dict.fromkeys(out))
        types = [t]
        for hop in c.path:
            types.append(type_of_path(types[-1], (hop,)))
        start = yield from self._article_url(c.equals)
        if start is None:
            return []
        current = {start: c.equals}
        for i in range(len(c.path) - 1, -1, -1):
            hop, row_type = c.path[i], types[i]
            nxt: dict[str, str] = {}
            for url, name in current.items():
                for n, u in (yield from self._back(row_type, hop, url, name)):
                    nxt.setdefault(u, n)
            current = nxt
        return list(current)

    def _back(self, row_type: str, hop: Hop, url: str, name: str):
        """(name, url) of the entities of ``row_type`` whose ``hop`` reaches the entity at ``url``."""
        if hop.inverse:  # the known entity is the relation's subject: its article links them
            art = yield from self._article(url)
            return [(s.name, s.url) for s in art.links(hop.predicate)] if art else []
        if (hop.predicate, row_type) in LIST_BY_RELATION:
            return (yield from self._directory(LIST_BY_RELATION[(hop.predicate, row_type)].format(o=name)))
        if hop.predicate in INCOMING:
            art = yield from self._article(url)
            return [(s.name, s.url) for s in art.links(hop.predicate, incoming=True)] if art else []
        return []

    # -- checking and reading -----------------------------------------------------------
    def _linked(self, art: Article, hop: Hop, during=None) -> list[str]:
        found = art.links(hop.predicate, incoming=hop.inverse)
        if during is not None:
            found = [s for s in found if _overlaps(s.start, s.end, *during)]
        return [s.url for s in found]

    def _holds(self, url: str, t: str, c: Condition):
        if c.any_of:
            for x in c.any_of:
                if (yield from self._holds(url, t, x)):
                    return True
            return False
        art = yield from self._article(url)
        if art is None:
            return False
        if not c.path:
            return any(_satisfies(v, c) for v in art.values(c.attribute))
        hop, rest = c.path[0], c.path[1:]
        linked = self._linked(art, hop, c.during)
        if not rest and c.attribute is None:
            target = yield from self._article_url(c.equals)
            return target is not None and target in linked
        nt = type_of_path(t, (hop,))
        sub = c.model_copy(update={"path": rest, "during": None})
        for u in linked:
            if (yield from self._holds(u, nt, sub)):
                return True
        return False

    def _follow(self, url: str, path):
        """The article reached along a functional path (None where the page shows no link)."""
        for hop in path:
            art = yield from self._article(url)
            links = self._linked(art, hop) if art else []
            if not links:
                return None
            url = links[0]
        return url

    def _value(self, url: str, path, attribute):
        end = yield from self._follow(url, path)
        if end is None:
            return None
        art = yield from self._article(end)
        if art is None:
            return None
        if attribute is None:
            return art.name
        values = art.values(attribute)
        return values[0] if values else None

    def _cell(self, url: str, col: Column, rank: int):
        if col.aggregate == "rank":
            return str(rank)
        art = yield from self._article(url)
        if col.aggregate == "count":
            (hop,) = col.path
            members = yield from self._directory(LIST_BY_RELATION[(hop.predicate, col.of_type)].format(o=art.name))
            return str(len(members))
        v = yield from self._value(url, col.path, col.attribute)
        return _written(v, col.format)


def _memory_entries(text: str) -> dict:
    """The key/value object of a ``retrieve_all`` observation (a count line, then JSON)."""
    at = text.find("{")
    try:
        out = json.loads(text[at:]) if at >= 0 else {}
    except json.JSONDecodeError:
        return {}
    return out if isinstance(out, dict) else {}


def _sort_key(v) -> float:
    return float(v.toordinal()) if isinstance(v, dt.date) else float(v)


def _overlaps(start: dt.date | None, end: dt.date | None, first: int, last: int) -> bool:
    return start is not None and start.year <= last and (end is None or end.year >= first)


def _satisfies(v, c: Condition) -> bool:
    if c.equals is not None:
        return str(v).lower() == str(c.equals).lower()
    x = v.year if isinstance(v, dt.date) else float(v)
    return (c.lo is None or x >= c.lo) and (c.hi is None or x <= c.hi)


def _written(v, fmt: str) -> str:
    """A value as the task's instructions ask: ISO dates, four-digit years, plain digits."""
    if v is None:
        return "N/A"
    if isinstance(v, dt.date):
        return str(v.year) if fmt == "year" else v.isoformat()
    if isinstance(v, float):
        return f"{v:.2f}" if fmt == "money" else repr(v)
    return str(v)


class ExploreResult(dict):
    """One task's explorer figures: row_recall, success, item_f1, calls, seconds, family."""


def explore(world, tasks, *, progress: Callable[[int], None] | None = None, seed: int = 0) -> list[ExploreResult]:
    """Runs the explorer (it gets only the question and the tools) on each task, in process."""
    import time

    from fictionworld.env import EnvConfig, SearchEnv
    from fictionworld.rollouts.episode import run_episode

    agent = ExplorerAgent()
    env = SearchEnv(world.web, EnvConfig(**agent.env_defaults))
    out = []
    for n, t in enumerate(tasks, 1):
        t0 = time.perf_counter()
        ep = run_episode(env, agent, t, seed=seed)
        s = env.scores
        out.append(
            ExploreResult(
                task=t.instance_id,
                family=t.family or t.kind,
                status=ep.status,
                row_recall=float(s.recall_by_row) if s else 0.0,
                success=bool(s and s.success),
                item_f1=float(s.f1_by_item) if s else 0.0,
                calls=len(ep.steps),
                seconds=time.perf_counter() - t0,
            )
        )
        if progress:
            progress(n)
    return out
