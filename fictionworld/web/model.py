"""The world-model contract, and the deterministic template world model (the default).

A world model decides what the tools return: given the retrieved hits for a query it writes the
result list, and given a URL it writes the page. The graph stays the truth either way; the LLM
world model (SGLang) plugs in beside :class:`TemplateWorldModel` through the same two methods.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple, Protocol

from fictionworld.dates import from_days
from fictionworld.knobs import Knobs
from fictionworld.web.linker import words
from fictionworld.web.pages import Page, PageNotFound, SearchResult
from fictionworld.web.render import plain_text

if TYPE_CHECKING:
    from fictionworld.web.web import Web

__all__ = ["Hit", "WorldModel", "TemplateWorldModel", "make_snippet", "query_stems", "SNIPPET_CHARS"]

SNIPPET_CHARS = 240
MAX_SENTENCES = 40  # snippets come from the first sentences of long pages
SCAN_CHARS = 4_000
# Sentence ends, but never after an initial or inside a link's name: "Magdolna R. Vexo" and
# "[St. Ovar](…)" are names, and a snippet cut there shows half of one (a namesake to a reader).
_SENTENCES = re.compile(r"(?<=[.!?])(?<!\b[A-Z]\.)(?![^\[\]\n]*\]\()\s+|\n+")
_LINK = re.compile(r"\[([^\]]*)\]\(([^)]*)\)")
_DATE = re.compile(
    r"\b\d{4}-\d{2}-\d{2}\b|\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.? \d{1,2}, \d{1,4}\b"
    r"|\b\d{1,2} (?:January|February|March|April|May|June|July|August|September|October|November|December) \d{1,4}\b"
)
_NUMBER = re.compile(r"(?:US)?\$?-?\d[\d,]*(?:\.\d+)?(?:\s*(?:thousand|million|billion))?")
MASK = "…"
_DIGIT = re.compile(r"\d")
_PROTECTED = 0xE000  # placeholders "\0<private-use char>\0" stand for kept names while masking
_PLACEHOLDER = re.compile("\0([\ue000-\uf8ff])\0")


class Hit(NamedTuple):
    page: int  # row in the web's PageTable
    score: float


class WorldModel(Protocol):
    """Renders what the ``search`` and ``open`` tools return."""

    name: str

    def render_results(self, web: Web, query: str, hits: list[Hit], knobs: Knobs) -> list[SearchResult]: ...

    def render_page(self, web: Web, row: int, page_number: int, knobs: Knobs) -> Page | PageNotFound: ...


def _stem(w: str) -> str:
    return w[:5]


def query_stems(query: str) -> frozenset[str]:
    """The stems :func:`make_snippet` matches sentences with (computed once per query)."""
    return frozenset(_stem(w) for w in words(query))


def make_snippet(
    text: str, query: str, *, leak: bool, keep: frozenset[str] = frozenset(), names: tuple[str, ...] = (),
    stems: frozenset[str] | None = None,
) -> str:  # fmt: skip
    """A query-dependent excerpt: the sentences that match the query best. Unless ``leak``,
    values are teased: dates, numbers and linked names the query does not mention become "…".
    A name the query spells out whole keeps its number ("Vesalena Exhibition 1998"): a linked
    name, or one of ``names`` (the page's subject, which its text does not link). ``stems``:
    :func:`query_stems` of the query, when the caller has them."""
    q = query_stems(query) if stems is None else stems
    sentences = [
        s for s in _SENTENCES.split(text[:SCAN_CHARS], maxsplit=MAX_SENTENCES) if s.strip() and not s.startswith("#")
    ]
    if not sentences:
        return ""
    # word stems as substrings of the lowercased sentence: cheap, and good enough to pick one
    scores = [sum(x in low for x in q) for low in (s.lower() for s in sentences)]
    best = max(range(len(sentences)), key=lambda i: (scores[i], -i))
    picked, size = [], 0
    for s in sentences[best:]:
        picked.append(s)
        size += len(s)
        if size >= SNIPPET_CHARS // 2:
            break
    out = " ".join(x if x.rstrip()[-1:] in ".!?:" else x.rstrip() + "." for x in picked)
    if not leak:
        named: list[str] = []  # names with a number the query holds, kept from the masks below

        def named_by_query(name: str) -> bool:
            return {_stem(w) for w in words(name)} <= q | keep

        def protect(name: str) -> str:
            if not _DIGIT.search(name):
                return name
            named.append(name)
            return f"\0{chr(_PROTECTED + len(named) - 1)}\0"

        def hide(m: re.Match) -> str:
            name = m.group(1)
            return protect(name) if named_by_query(name) else MASK

        out = _LINK.sub(hide, out)
        for name in names:
            if _DIGIT.search(name) and named_by_query(name):
                out = re.sub(rf"(?<!\w){re.escape(name)}(?!\w)", lambda m: protect(m.group(0)), out)
        out = _DATE.sub(MASK, out)
        out = _NUMBER.sub(MASK, out)
        if named:
            out = _PLACEHOLDER.sub(lambda m: named[ord(m.group(1)) - _PROTECTED], out)
    out = plain_text(out).replace("- ", "").strip()
    out = re.sub(r"\s+", " ", out)
    return out if len(out) <= SNIPPET_CHARS else out[: SNIPPET_CHARS - 1].rsplit(" ", 1)[0] + " " + MASK


def _subject_names(web: Web, row: int) -> tuple[str, ...]:
    """The name and aliases of the page's main entity (none for a page about no entity)."""
    e = int(web.pages.entity[row])
    return () if e < 0 else web.subject_forms(e)


class TemplateWorldModel:
    """Deterministic: result lists are built from the stored pages, pages are the stored text
    (directories cut into pages of ``knobs.list_page_size`` entries)."""

    name = "template"

    def render_results(self, web: Web, query: str, hits: list[Hit], knobs: Knobs) -> list[SearchResult]:
        out = []
        p = web.pages
        stems = query_stems(query)
        leaks = web.leaks_of(query, [h.page for h in hits], knobs.snippet_leak_rate)
        for h, leak in zip(hits, leaks):
            text = p.text(h.page)
            if p.kind[h.page] == "list":
                names = _LINK.findall(text)
                shown = ", ".join(n for n, _ in names[:3])
                snippet = f"A directory of {len(names)} entries, including {shown}" + (
                    f" {MASK}" if len(names) > 3 else "."
                )
            else:
                snippet = make_snippet(text, query, leak=leak, names=_subject_names(web, h.page), stems=stems)
            out.append(
                SearchResult(
                    url=p.urls[h.page],
                    title=p.titles[h.page],
                    snippet=snippet,
                    date=from_days(int(p.published[h.page])),
                    score=round(float(h.score), 4),
                    kind=str(p.kind[h.page]),
                )
            )
        return out

    def render_page(self, web: Web, row: int, page_number: int, knobs: Knobs) -> Page | PageNotFound:
        page = web.pages.page(row, web.entity_ids)
        if page.kind != "list":
            if page_number != 1:
                return PageNotFound(url=f"{page.url}?page={page_number}")
            return page
        entries = page.text.splitlines()
        size = knobs.list_page_size
        count = max(1, -(-len(entries) // size))
        if not 1 <= page_number <= count:
            return PageNotFound(url=f"{page.url}?page={page_number}", reason=f"this list has {count} pages")
        lo = (page_number - 1) * size
        part = entries[lo : lo + size]
        head = f"Showing entries {lo + 1}–{lo + len(part)} of {len(entries)} (page {page_number} of {count})."
        nav = []
        if page_number > 1:
            nav.append(f"Previous page: {page.url}?page={page_number - 1}")
        if page_number < count:
            nav.append(f"Next page: {page.url}?page={page_number + 1}")
        text = "\n\n".join([head, "\n".join(part), *(["\n".join(nav)] if nav else [])])
        url = page.url if page_number == 1 else f"{page.url}?page={page_number}"
        members = set(_LINK.sub(r"\2", x)[2:] for x in part)
        ids = tuple(i for i in page.entity_ids if web.article_url_of(i) in members)
        return page.model_copy(
            update={"url": url, "text": text, "page_number": page_number, "page_count": count, "entity_ids": ids}
        )
