"""Prompts in the Qwen-AgentWorld world-model protocol.

The system message describes the fictional web and the rules, and is the same for every call,
so SGLang's radix cache reuses it. Then come past turns as action → observation pairs (what the
agent was already shown about this page), then the current action with its grounding: the
facts the graph says this page or result states, the entities it may name, and the
perturbation instructions in force. Only page-level facts go in: never a task or its answer.
The model answers inside ``<predicted_observation>`` (pages, Markdown) or as JSON (results).
"""

from __future__ import annotations

import json
import re

from pydantic import BaseModel, Field

from fictionworld.surface import format_date
from fictionworld.worldmodel.grounding import Grounding

__all__ = ["SYSTEM", "PROMPT_VERSION", "RenderedResult", "RenderedResults", "page_messages", "results_messages",
           "observation_of", "action_turn", "observation_turn", "retry_turn", "KIND_STYLE"]  # fmt: skip

PROMPT_VERSION = "fw-wm/1"
SNIPPET_MAX = 320

SYSTEM = """You are a Tool World Model. You simulate a fictional web: a search engine and the pages it \
indexes. Everything in this world is invented; its truth is a knowledge graph that you are shown piece by piece. \
An agent acts (searches, opens pages) and you write the observation the environment returns.

Rules:
1. State every fact listed under "Facts to state". Copy names exactly. Dates may be written as "March 3, 1950", \
"3 March 1950" or "1950-03-03"; numbers as "1,234" or "1234", money as "$1,234". Never round or change a value.
2. State nothing else as a fact: no other dates, numbers, people, organisations, places, works or events. \
Name only the entities listed under "Entities" and link each at least once as [Name](URL) with the URL given.
3. Never invent a name, and never write a variant of a listed name (no relatives, rivals or namesakes).
4. Write like the site the page is on: an encyclopedia article, an organisation's own page, a news report.
5. For a page: write its body in Markdown (no title line; the title, URL, site and date are added for you) \
inside <predicted_observation></predicted_observation>.
6. For search results: answer with JSON only, following the schema: one entry per listed result, in the \
listed order, with the URL and title exactly as given and a snippet of at most 240 characters.
7. Snippets follow the instruction given for each result. "tease" means: name the subject and what the page is \
about, but write no dates and no numbers, and never give the whole answer. "show" means: quote a fact from the page.
8. If you are told your observation failed a check, write the whole observation again, fixing every problem."""

KIND_STYLE = {
    "article": "an encyclopedia article: a lead sentence, then short sections with ## headings",
    "org_about": "the organisation's own 'About us' page, in its own voice",
    "org_history": "the organisation's own history page",
    "org_leadership": "the organisation's own leadership page",
    "org_people": "the organisation's own page about its squad and former players",
    "news": "a news report on a news site",
}


class RenderedResult(BaseModel):
    url: str
    title: str
    snippet: str = Field(max_length=SNIPPET_MAX)


class RenderedResults(BaseModel):
    """What the model returns for a search (``response_format`` = this model's JSON schema)."""

    results: list[RenderedResult]


def action_turn(turn: int, action: dict) -> dict:
    return {
        "role": "user",
        "content": f"### Turn {turn}\n**Action:**\n```json\n{json.dumps(action, ensure_ascii=False)}\n```",
    }


def observation_turn(text: str) -> dict:
    return {"role": "assistant", "content": f"**Environment Observation:**\n{text}"}


def retry_turn(feedback: str) -> dict:
    return {
        "role": "user",
        "content": "Your observation failed the check against the world's records:\n"
        f"{feedback}\nWrite the whole observation again, fixing every problem.",
    }


def _facts(g: Grounding, names: list[str], limit: int | None = None) -> str:
    claims = g.claims if limit is None else g.claims[:limit]
    lines = [f"- {c.describe(names)}" for c in claims]
    return "\n".join(lines) if lines else "- (none)"


def _entities(g: Grounding, names: list[str]) -> str:
    return "\n".join(f"- {names[e]}: {url}" for e, url in g.links.items()) or "- (none)"


def page_messages(g: Grounding, names: list[str], history: list[tuple[dict, str]] = ()) -> list[dict]:
    """Messages asking for the page of ``g``; ``history`` = (action, observation) pairs the
    agent was already shown about it (result snippets), which the page must agree with."""
    msgs = [{"role": "system", "content": SYSTEM}]
    for i, (action, obs) in enumerate(history, 1):
        msgs += [action_turn(i, action), observation_turn(obs)]
    head = action_turn(len(history) + 1, {"tool": "open", "url": g.url})["content"]
    msgs.append(
        {
            "role": "user",
            "content": f"{head}\n\nPage: {g.title}\nSite: {g.site}\nDate: {format_date(g.published)}\n"
            f"Write it as {KIND_STYLE.get(g.kind, 'a web page')}.\n\n"
            f"Facts to state (subject | attribute | value | dates):\n{_facts(g, names)}\n\n"
            f"Entities (name: URL):\n{_entities(g, names)}",
        }
    )
    return msgs


def results_messages(query: str, items: list[tuple[Grounding, bool, str | None]], names: list[str]) -> list[dict]:
    """Messages asking for the results of ``query``: per hit its grounding, whether its snippet
    may show values, and the page text already shown for it (the snippet must agree)."""
    blocks = []
    for i, (g, leak, page_text) in enumerate(items, 1):
        block = (f"[{i}] URL: {g.url}\nTitle: {g.title}\nSnippet: {'show' if leak else 'tease'}\n"
                 f"Facts on the page:\n{_facts(g, names, limit=15)}")  # fmt: skip
        if page_text:
            block += f"\nThe page reads (quote only from it):\n{page_text[:1500]}"
        blocks.append(block)
    head = action_turn(1, {"tool": "search", "query": query})["content"]
    body = "\n\n".join(blocks)
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"{head}\n\nResults to write ({len(items)}):\n\n{body}"},
    ]


_OBS = re.compile(r"<predicted_observation>(.*?)(?:</predicted_observation>|$)", re.S)
_FENCE = re.compile(r"^```(?:markdown|md|json)?\s*\n(.*?)\n```\s*$", re.S)


def observation_of(text: str) -> str:
    """The observation in a reply: inside ``<predicted_observation>`` if present, code fences
    and a leading "Environment Observation" label taken off."""
    m = _OBS.search(text)
    out = (m.group(1) if m else text).strip()
    f = _FENCE.match(out)
    if f:
        out = f.group(1).strip()
    if out.startswith("**Environment Observation:**"):
        out = out[len("**Environment Observation:**") :].strip()
    return out
