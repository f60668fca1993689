"""The oracle: the project's answerability proof.

It knows from a task's provenance which entities and facts each gold cell comes from, but it
obtains every value through the tools: it reaches each row's article by searching the name (or
by a link on a page it already read), follows the links a multi-hop column goes through, and
reads each value back from the returned page text (the date, number or words stated there),
formatting it as the task asks. A cell it cannot read stays empty, so any failure shows as a
success rate below 100 %: a bug in the world, the pages, the search, the tasks or the scorer.
"""

from __future__ import annotations

import datetime as dt

from fictionworld.records import Fact
from fictionworld.rollouts.agents.base import ToolAgent, read_links, read_results, register, title_of
from fictionworld.surface import find_dates, find_numbers
from fictionworld.tasks.model import norm_header
from fictionworld.web.text import plain_text

__all__ = ["OracleAgent"]


@register("oracle")
class OracleAgent(ToolAgent):
    name = "oracle"
    privileged = True
    env_defaults = {"max_turns": 100_000, "max_context_chars": 2_000_000_000, "max_observation_chars": 10_000_000}

    def __init__(self, world=None, *, retries: int = 8, search_pages: int = 3, delay: float = 0.0):
        if world is None:
            raise ValueError("the oracle agent needs the world (it reads the task's provenance)")
        self.world, self.web = world, world.web
        self.retries, self.search_pages, self.delay = int(retries), int(search_pages), float(delay)

    def config(self) -> dict:
        return {"name": self.name, "retries": self.retries, "search_pages": self.search_pages, "delay": self.delay}

    def policy(self, messages, tools, task=None):
        if task is None:
            raise ValueError("the oracle needs the task (with provenance)")
        self.pages: dict[str, str] = {}
        self.linked: set[str] = set()  # URLs seen in results or links: reachable without a new search
        self.unread: list[str] = []
        formats, aggregates = {}, {}
        q = task.graph_query
        if q is not None:
            formats = {norm_header(c.header): c.format for c in q.columns}
            aggregates = {norm_header(c.header): c.aggregate for c in q.columns if c.aggregate}
        rows, ranked = [], []
        for prov in task.provenance:
            row, ok = [], True
            for clue in sorted(k for k in prov.facts if k.startswith("clue:")):
                ok &= (yield from self._read_chain(prov.entity, prov.facts[clue], "text")) is not None
            for col in task.gold.columns:
                chain = prov.facts.get(col) or []
                if aggregates.get(col) == "count":
                    value = yield from self._count(prov.entity, chain)
                elif aggregates.get(col) == "rank":
                    key = yield from self._read_chain(prov.entity, chain, "float")
                    ranked.append((len(rows), len(row), key))
                    value = ""
                elif chain:
                    value = yield from self._read_chain(prov.entity, chain, formats.get(col, "text"))
                else:
                    value = yield from self._name_of(prov.entities.get(col) or prov.entity)
                if value is None:
                    self.unread.append(f"{prov.entity}/{col}")
                row.append(value or "")
            rows.append(row if ok else ["" for _ in row])
        if ranked and q is not None and q.order is not None:  # ranks: the values read, sorted as asked
            known = sorted(
                (r for r in ranked if r[2] is not None), key=lambda r: float(r[2]), reverse=q.order.descending
            )
            for n, (i, j, _) in enumerate(known, 1):
                rows[i][j] = str(n)
        headers = task.headers or task.gold.columns
        lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
        yield {"name": "answer", "arguments": {"text": "```markdown\n" + "\n".join(lines) + "\n```"}}

    # -- tool calls -----------------------------------------------------------------------
    def _read(self, text: str) -> None:
        self.linked.update(u for _, u in read_links(text))

    def _reach(self, eid: str):
        """The text of an entity's article, found through search (or a link already seen)."""
        url = self.web.article_url_of(eid)
        if url in self.pages or url in self.linked:
            return (yield from self._open(url))
        name = self.world.entity(eid).name
        for page in range(1, self.search_pages + 1):
            text = yield from self._call("search", query=name, page=page)
            urls = [u for u, _ in read_results(text or "")]
            self.linked.update(urls)
            if url in urls:
                return (yield from self._open(url))
            if len(urls) < 10:
                break
        return None

    def _count(self, eid: str, fact_ids: list[int]):
        """How many entities the counted facts relate to ``eid``, each confirmed on its own
        article (the fact's subject links the row's entity there)."""
        seen = set()
        url = self.web.article_url_of(eid)
        for fid in fact_ids:
            f: Fact = self.world.fact(fid)
            other = f.subject if f.object == eid else f.object
            text = yield from self._reach(other)
            if text is not None and url in {u for _, u in read_links(text)}:
                seen.add(other)
        return str(len(seen))

    def _name_of(self, eid: str):
        text = yield from self._reach(eid)
        return title_of(text) if text else None

    def _read_chain(self, start: str, fact_ids: list[int], fmt: str):
        """Follow a column's facts from ``start``; the last one's value as read on its page."""
        w = self.world
        cur, text = start, (yield from self._reach(start))
        for i, fid in enumerate(fact_ids):
            if text is None:
                return None
            f: Fact = w.fact(fid)
            last = i == len(fact_ids) - 1
            if f.subject != cur:  # an inverse hop: the fact is stated on the other entity's page
                prev_url = self.web.article_url_of(cur)
                cur, text = f.subject, (yield from self._reach(f.subject))
                if text is None or prev_url not in {u for _, u in read_links(text)}:
                    return None
                if last:
                    return title_of(text)
                continue
            if f.object is not None:  # a relation: read the link to the object
                url = self.web.article_url_of(f.object)
                anchors = [a for a, u in read_links(text) if u == url]
                if not anchors:
                    return None
                if last:
                    return anchors[0]
                cur, text = f.object, (yield from self._open(url))
                continue
            return read_value(f, text, fmt)
        return None


def read_value(f: Fact, markdown: str, fmt: str) -> str | None:
    """The value of attribute fact ``f`` as stated in ``markdown``, written as a gold table
    would want it (plain digits, ISO dates, a year), or None when the text does not state it."""
    text = plain_text(markdown)
    v = f.value
    if isinstance(v, dt.date):
        for d, _ in find_dates(text):
            if d == v:
                return str(d.year) if fmt == "year" else d.isoformat()
        return None
    if isinstance(v, int | float) and not isinstance(v, bool):
        for x, _ in find_numbers(text):
            if abs(x - v) <= 1e-6 * max(1.0, abs(v)):
                if fmt == "money":
                    return f"{x:.2f}"
                return str(int(x)) if float(x).is_integer() else repr(x)
        return None
    needle = str(v)
    at = text.lower().find(needle.lower())
    return text[at : at + len(needle)] if at >= 0 else None
