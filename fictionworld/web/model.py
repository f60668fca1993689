"""The world-model contract, and the deterministic template world model (the default).

A world model decides what the tools return: given the retrieved hits for a query it writes the
result list, and given a URL it writes the page. The graph stays the truth either way; the LLM
world model (SGLang) plugs in beside :class:`TemplateWorldModel` through the same two methods.
"""

from __future__ import annotations

import re
from itertools import islice
from typing import TYPE_CHECKING, NamedTuple, Protocol

import numpy as np

from fictionworld.dates import from_days
from fictionworld.knobs import Knobs
from fictionworld.web.linker import words
from fictionworld.web.pages import Page, PageNotFound, SearchResult
from fictionworld.web.render import plain_text
from fictionworld.web.text import LINK

if TYPE_CHECKING:
    from fictionworld.web.web import Web

__all__ = [
    "Hit",
    "WorldModel",
    "TemplateWorldModel",
    "make_snippet",
    "directory_snippet",
    "query_stems",
    "SNIPPET_CHARS",
]

SNIPPET_CHARS = 240
MAX_SENTENCES = 40  # snippets come from the first sentences of long pages
SCAN_CHARS = 4_000
# Sentence breaks: whitespace after "." "!" or "?", or a run of line breaks; but never after an
# initial or inside a link's name: "Magdolna R. Vexo" and "[St. Ovar](…)" are names, and a snippet
# cut there shows half of one (a namesake to a reader). The stop stays with its sentence. Written
# to start with the stop or line break before the cut, so the regex engine skips ahead to the next
# of those characters (a few per sentence) instead of trying every position or every space: a
# match is the stop and the break (group 1), or a run of line breaks. :func:`_breaks` gives the
# spans where r"(?<=[.!?])(?<!\b[A-Z]\.)(?![^\[\]\n]*\]\()\s+|\n+" splits (tested).
_BREAK = re.compile(r"[.!?\n](?:(?<=[.!?])(?<!\b[A-Z]\.)(\s(?:(?<=\n)|(?![^\[\]\n]*\]\())\s*)|(?<=\n)\n*)")
# Dates and numbers start with one of a few characters: the lookaheads say which, so that the
# regex engine skips to the next of them instead of trying every position (3x faster; the same
# matches, tested against the patterns without them).
_DATE = re.compile(
    r"(?=[\dJFMASOND])(?:\b\d{4}-\d{2}-\d{2}\b|\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.? \d{1,2}, \d{1,4}\b"
    r"|\b\d{1,2} (?:January|February|March|April|May|June|July|August|September|October|November|December) \d{1,4}\b)"
)
_NUMBER = re.compile(r"(?=[U$\-\d])(?:US)?\$?-?\d[\d,]*(?:\.\d+)?(?:\s*(?:thousand|million|billion))?")
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


def _breaks(text: str):
    """(start, end) of each sentence break of ``text``, in order."""
    for m in _BREAK.finditer(text):
        a = m.start(1)
        yield (m.start() if a < 0 else a), m.end()  # group 1 unset: a run of line breaks


def _sentences(text: str):
    """The sentences of ``text`` in order, as ``re.split`` cuts it at the first
    ``MAX_SENTENCES`` breaks, less blank pieces and headings; one at a time, so a caller may
    stop early."""
    pos = 0
    for i, m in enumerate(_BREAK.finditer(text)):  # _breaks inlined: a generator less per sentence
        if i == MAX_SENTENCES:
            break
        a = m.start(1)
        if a < 0:
            a = m.start()
        if pos < a and text[pos] != "#" and not text[pos:a].isspace():
            yield text[pos:a]
        pos = m.end()
    if pos < len(text) and not text[pos:].isspace() and text[pos] != "#":
        yield text[pos:]


def _excerpt(text: str, stems: frozenset[str]) -> list[str]:
    """The sentence holding the most of ``stems`` (each counted once, as a substring of the
    lowercased sentence: cheap, and good enough to pick one; the first of equals), and the
    sentences after it up to half a snippet. Sentences are read only as far as needed: once one
    holds every stem that is anywhere in the text, no later one can beat it."""
    # A stem in no part of the lowercased text is in no sentence: lowercasing maps code point by
    # code point, but for a final sigma, which looks at the letters around it, and sentences
    # end at whitespace, where that look stops too.
    low = text.lower()
    present = [x for x in stems if x in low]
    seen: list[str] = []
    best, most, size = 0, -1, 0  # size: characters from the best sentence on
    for s in _sentences(text):
        seen.append(s)
        size += len(s)
        if most < len(present):
            lowered = s.lower()
            score = sum(1 for x in present if x in lowered)
            if score > most:
                best, most, size = len(seen) - 1, score, len(s)
        if most == len(present) and size >= SNIPPET_CHARS // 2:
            break
    picked, size = [], 0
    for s in seen[best:]:
        picked.append(s)
        size += len(s)
        if size >= SNIPPET_CHARS // 2:
            break
    return picked


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
    picked = _excerpt(text[:SCAN_CHARS], q)
    if not picked:
        return ""
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

        if "[" in out:
            out = LINK.sub(hide, out)
        for name in names:
            if _DIGIT.search(name) and named_by_query(name):
                out = re.sub(rf"(?<!\w){re.escape(name)}(?!\w)", lambda m: protect(m.group(0)), out)
        if _DIGIT.search(out):  # both need a digit
            out = _DATE.sub(MASK, out)
            out = _NUMBER.sub(MASK, out)
        if named:
            out = _PLACEHOLDER.sub(lambda m: named[ord(m.group(1)) - _PROTECTED], out)
    # runs of whitespace to one space, none at the ends: str.split's whitespace is re's r"\s"
    # (both are str.isspace; tested), in a third of the time of a regex substitution
    out = " ".join(plain_text(out).replace("- ", "").split())
    return out if len(out) <= SNIPPET_CHARS else out[: SNIPPET_CHARS - 1].rsplit(" ", 1)[0] + " " + MASK


def directory_snippet(text: str, count: int | None = None) -> str:
    """A directory's result: its number of entries and the first three. A directory holds one
    linked entry per line (``Renderer.lists``; :meth:`TemplateWorldModel.render_page` pages it
    by lines), so its lines are counted and only three links parsed: a directory of a thousand
    entries took 50 µs to parse whole, most of a result list's time when it held one. Given
    ``count`` (:meth:`PageTable.entries`), ``text`` need only be its first three lines."""
    count = (text.count("\n") + 1 if text else 0) if count is None else count
    shown = ", ".join(m.group(1) for m in islice(LINK.finditer(text), 3))
    return f"A directory of {count} entries, including {shown}" + (f" {MASK}" if count > 3 else ".")


def _subject_names(web: Web, row: int) -> tuple[str, ...]:
    """The name and aliases of the page's main entity (none for a page about no entity)."""
    e = int(web.pages.entity[row])
    return () if e < 0 else web.subject_forms(e)


def _listed(web: Web, row: int, entries: list[str]) -> tuple[str, ...]:
    """The ids of directory ``row``'s entities (in its order) whose articles ``entries`` (a
    page of its lines, one link each) link to. Found from the links, not from every entity of
    the directory: for a directory of 43,000 entities at 10M that took 1.3 s the first time
    and 0.4 s every time after."""
    p = web.pages
    linked = {r for r in (p.row_of_url.get(LINK.sub(r"\2", x)[2:]) for x in entries) if r is not None}
    subjects = {int(p.entity[r]): r for r in linked if int(p.entity[r]) >= 0}
    rows = list(subjects)
    listed = {e for e, a in zip(rows, web.articles_of(rows)) if a == subjects[e]}  # (the link is its article)
    column = p.table.column("entity_rows")[row]
    order = column.values.to_numpy(zero_copy_only=False) if column.is_valid else np.zeros(0, np.int64)
    kept = order[np.isin(order, np.fromiter(listed, np.int64, len(listed)))]
    return tuple(web.entity_ids[kept].tolist()) if len(kept) else ()


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
            kind = p.kind_of(h.page)
            if kind == "list":
                snippet = directory_snippet(p.head(h.page, 3), p.entries(h.page))
            else:
                snippet = make_snippet(p.text(h.page), query, leak=leak, names=_subject_names(web, h.page), stems=stems)
            out.append(
                SearchResult(  # validated in pydantic's core: half the time of model_construct in Python
                    url=p.urls[h.page],
                    title=p.titles[h.page],
                    snippet=snippet,
                    date=from_days(int(p.published[h.page])),
                    score=round(float(h.score), 4),
                    kind=kind,
                )
            )
        return out

    def render_page(self, web: Web, row: int, page_number: int, knobs: Knobs) -> Page | PageNotFound:
        p = web.pages
        if p.kind_of(row) != "list":
            if page_number != 1:
                return PageNotFound(url=f"{p.urls[row]}?page={page_number}")
            return p.page(row, web.entity_ids)
        page = p.page(row, web.entity_ids, entities=False)
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
        ids = _listed(web, row, part)
        return page.model_copy(
            update={"url": url, "text": text, "page_number": page_number, "page_count": count, "entity_ids": ids}
        )
