"""The page reader: encyclopedia articles and directory pages read back into statements.

The inverse of the template renderer (:mod:`fictionworld.web.render`): an article's lead gives
the entity's name and type; its infobox lines and section sentences are matched against the
phrasing tables (:mod:`fictionworld.web.phrasing`) restricted to what the schema allows for that
type, and every value comes back typed (int, float, ``datetime.date``, str) as the graph holds
it. Only the web's "language" is used (phrasings, schema, number and date formats), never a
world's facts, so a scripted agent may use it on what it opens.

>>> md = ("# Risarora\\n\\nURL: https://en.fictopedia.org/wiki/Risarora\\nSite: Fictopedia\\n"
...       "Date: 2025-05-19\\n\\n**Risarora** is a country.\\n\\n- **Inhabitants:** 2,749,095\\n\\n"
...       "## Overview\\n\\nThe date of establishment of Risarora is Mar 19, 1590.\\n\\n## Location\\n\\n"
...       "The capital of Risarora is [Trarlinano](https://en.fictopedia.org/wiki/Trarlinano).\\n")
>>> a = read_article(md)
>>> a.type, a.values("population"), a.values("established")
('country', [2749095], [datetime.date(1590, 3, 19)])
>>> a.links("capital")[0].url
'https://en.fictopedia.org/wiki/Trarlinano'

How it matches: each section's text is a run of sentences joined by spaces, and values and names
may hold "." ("US$1.2 million", "Adrian P. Pofalez"), so sentences are never split naively.
Every template is compiled (once per entity type) into a *head* regex (what precedes the page
entity's own name: "", "The population of ", a link, a value), the name itself (compared as a
plain string, so names with " in ", "&" or regex characters need no escaping), and a *tail*
regex ending at the sentence's full stop followed by a space or the end of the section. Slots
are precise: dates in the four page formats, numbers in the formats of
:mod:`fictionworld.surface`, categories from the schema's vocabularies, links with balanced
parentheses in their URL (namesakes' "…_(person)").
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

from fictionworld.schema import ENTITY_TYPES, RELATIONS
from fictionworld.web.phrasing import (
    ATTRIBUTE_SENTENCES,
    INCOMING,
    LABELS,
    RELATION_SENTENCES,
    RELATION_SENTENCES_ENDED,
    RELATION_SENTENCES_UNDATED,
    SECTION,
    TYPE_LABEL,
)
from fictionworld.web.values import (  # noqa: F401 — the value patterns are part of this module's API
    CENTS_RE,
    DATE_RE,
    FLOAT_RE,
    INT_RE,
    LINK_RE,
    LINK_TEXT,
    LINK_URL,
    MONEY_RE,
    TEXT_RE,
    UNIT,
    URL_RE,
    parse_date,
    parse_float,
    parse_int,
    parse_value,
    value_parser,
    value_regex,
)

__all__ = [
    "Statement",
    "Article",
    "Directory",
    "read_article",
    "read_directory",
    "read_whole_directory",
    "parse_value",
    "ARTICLE_PREFIX",
    "DIRECTORY_PREFIX",
]

# The renderer's constants (articles.ENCYCLOPEDIA, render.DIRECTORY), kept here so that reading a page
# does not import the renderer.
ARTICLE_PREFIX = "https://en.fictopedia.org/wiki/"
DIRECTORY_PREFIX = "https://www.openregistry.info/list/"


# -- records -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Statement:
    """One thing an article states. Attributes carry ``value``; relations ``url`` and ``name``
    of the other entity, ``incoming`` when the page's entity is the relation's object, and the
    dates a temporal sentence gives."""

    predicate: str
    value: object = None
    url: str | None = None
    name: str | None = None
    incoming: bool = False
    start: dt.date | None = None
    end: dt.date | None = None


@dataclass
class Article:
    url: str | None
    name: str
    type: str
    aliases: tuple[str, ...]
    statements: list[Statement]
    unread: list[str] = field(default_factory=list)

    def values(self, predicate: str) -> list:
        """The values the article gives for the attribute ``predicate`` (usually one or none)."""
        return [s.value for s in self.statements if s.predicate == predicate and s.url is None]

    def links(self, predicate: str, *, incoming: bool = False) -> list[Statement]:
        """The relation statements of ``predicate``: the page's entity as subject (default) or,
        with ``incoming``, as object (a film's cast, a company's chief executives…)."""
        return [s for s in self.statements if s.predicate == predicate and s.url is not None and s.incoming == incoming]

    def value(self, predicate: str, default=None):
        """The one value of ``predicate``, or ``default`` when the article gives none."""
        for s in self.statements:
            if s.predicate == predicate and s.url is None:
                return s.value
        return default


@dataclass
class Directory:
    title: str
    members: list[tuple[str, str]]
    page: int
    page_count: int
    total: int | None


# -- value formats -------------------------------------------------------------------------
# -- templates, compiled per entity type ----------------------------------------------------
_SLOT = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class _Template:
    predicate: str
    relation: bool
    incoming: bool
    head: re.Pattern | None  # None: the sentence starts with the page entity's name
    tail: re.Pattern
    parse: Callable[[str], object] | None
    index: str  # the suffix of its groups' names (n0, u0, v0, s0, e0)


def _pieces(template: str, self_slot: str, p: str, i: int, *, loose: bool) -> tuple[str | None, str]:
    """(head, tail) regex sources of one template around the page entity's slot."""
    out: list[list[str]] = [[]]
    pos = 0
    for m in _SLOT.finditer(template):
        lit = template[pos : m.start()]
        if lit:
            out[-1].append(re.escape(lit))
        pos = m.end()
        slot = m.group(1)
        if slot == self_slot:
            out.append([])
        elif slot in ("s", "o"):
            out[-1].append(LINK_RE.format(i=i))
        elif slot == "v":
            out[-1].append(f"(?P<v{i}>{value_regex(p, loose=loose)})")
        elif slot == "a":
            out[-1].append("an?")
        elif slot == "start":
            out[-1].append(f"(?P<s{i}>{DATE_RE})")
        elif slot == "end":
            out[-1].append(f"(?P<e{i}>{DATE_RE})")
        else:  # pragma: no cover - a phrasing table with a slot this reader does not know
            raise ValueError(f"unknown slot {{{slot}}} in {template!r}")
    out[-1].append(re.escape(template[pos:]) + r"(?= |\Z)")
    if len(out) != 2:  # pragma: no cover
        raise ValueError(f"{template!r} must name the page's entity ({{{self_slot}}}) exactly once")
    return ("".join(out[0]) or None), "".join(out[1])


@dataclass
class _Section:
    templates: list[_Template]
    named: re.Pattern | None  # every name-first template's tail, one alternation (group t{i})
    named_index: dict[str, _Template]
    headed: list[_Template]


@dataclass
class _TypeReader:
    type: str
    labels: dict[str, str]  # infobox label -> predicate
    values: dict[str, re.Pattern]  # predicate -> infobox value regex (unit optional)
    sections: dict[str, _Section]
    anywhere: _Section  # every template of the type: sentences in an unexpected section


def _predicates(t: str) -> list[tuple[str, str, bool]]:
    """(predicate, section, incoming) the schema lets an article of type ``t`` state."""
    out = [(a.name, "Overview", False) for a in ENTITY_TYPES[t].attributes]
    out += [(p, SECTION[p], False) for p, r in RELATIONS.items() if any(s == t for s, _ in r.pairs)]
    out += [
        (p, section, True)
        for p, (otype, section) in INCOMING.items()
        if otype == t and any(o == t for _, o in RELATIONS[p].pairs)
    ]
    return out


def _section(entries: list[tuple[str, str, bool, str]], start: int, loose: bool) -> _Section:
    templates, named_src, named_index, headed = [], [], {}, []
    for k, (p, template, incoming, _sec) in enumerate(entries):
        i = start + k
        relation = p in RELATIONS
        head, tail = _pieces(template, "o" if incoming else "s", p, i, loose=loose)
        parse = None if relation else value_parser(p)
        tpl = _Template(p, relation, incoming, re.compile(head) if head else None, re.compile(tail), parse, str(i))
        templates.append(tpl)
        if head is None:
            named_src.append(f"(?P<t{i}>{tail})")
            named_index[f"t{i}"] = tpl
        else:
            headed.append(tpl)
    named = re.compile("|".join(named_src)) if named_src else None
    return _Section(templates, named, named_index, headed)


@cache
def _reader(t: str, loose: bool = False) -> _TypeReader:
    entries: list[tuple[str, str, bool, str]] = []
    for p, section, incoming in _predicates(t):
        if p in RELATIONS:
            pools = (RELATION_SENTENCES.get(p, ()), RELATION_SENTENCES_ENDED.get(p, ()))
            pools += (RELATION_SENTENCES_UNDATED.get(p, ()),)
            for template in dict.fromkeys(x for pool in pools for x in pool):
                entries.append((p, template, incoming, section))
        else:
            for template in ATTRIBUTE_SENTENCES[p]:
                entries.append((p, template, incoming, section))
    by_section: dict[str, list] = {}
    for e in entries:
        by_section.setdefault(e[3], []).append(e)
    sections, n = {}, 0
    for name, es in by_section.items():
        sections[name] = _section(es, n, loose)
        n += len(es)
    attrs = [a.name for a in ENTITY_TYPES[t].attributes]
    labels: dict[str, str] = {}
    for p in attrs:
        for label in LABELS.get(p, ()):
            if labels.setdefault(label, p) != p:  # pragma: no cover - the phrasing tables changed
                raise ValueError(f"infobox label {label!r} is ambiguous for a {t}: {labels[label]} or {p}")
    values = {
        p: re.compile(f"({value_regex(p, loose=loose)}){re.escape(UNIT[p]) + '?' if p in UNIT else ''}") for p in attrs
    }
    # the same templates once more, all in one section, numbered apart from the others
    return _TypeReader(t, labels, values, sections, _section(entries, n, loose))


_TYPE_OF_LABEL = {label: t for t, label in TYPE_LABEL.items() if t in ENTITY_TYPES}
_LEAD = re.compile(
    r"\*\*(?P<name>.+?)\*\* is an? (?P<label>"
    + "|".join(re.escape(x) for x in sorted(_TYPE_OF_LABEL, key=len, reverse=True))
    + r")\.(?: Also known as: (?P<aliases>.*)\.)?"
)
_INFOBOX = re.compile(r"- \*\*(?P<label>[^*\n]+):\*\* (?P<value>.*)")


# -- matching --------------------------------------------------------------------------------
def _statement(tpl: _Template, *ms: re.Match) -> Statement:
    i = tpl.index
    g: dict[str, str | None] = {}
    for m in ms:
        g.update(m.groupdict())
    if tpl.relation:
        st, en = g.get(f"s{i}"), g.get(f"e{i}")
        return Statement(
            tpl.predicate,
            url=g[f"u{i}"],
            name=g[f"n{i}"],
            incoming=tpl.incoming,
            start=parse_date(st) if st else None,
            end=parse_date(en) if en else None,
        )
    return Statement(tpl.predicate, tpl.parse(g[f"v{i}"]))


def _match_at(sec: _Section, text: str, pos: int, name: str, cap: str) -> tuple[Statement, int] | None:
    """The statement of the sentence starting at ``pos`` and where the next one starts."""
    for nm in (name, cap) if cap != name else (name,):
        if sec.named is not None and text.startswith(nm, pos):
            m = sec.named.match(text, pos + len(nm))
            if m is not None:
                return _statement(sec.named_index[m.lastgroup], m), m.end() + 1
    for tpl in sec.headed:
        h = tpl.head.match(text, pos)
        if h is None:
            continue
        q = h.end()
        if not text.startswith(name, q):
            continue
        m = tpl.tail.match(text, q + len(name))
        if m is not None:
            return _statement(tpl, h, m), m.end() + 1
    return None


def _read_section(reader: _TypeReader, section: str, text: str, name: str, out: list[Statement],
                  unread: list[str]) -> None:  # fmt: skip
    """Appends the statements of one section's text; sentences no template matches to ``unread``.
    Tried in turn: the section's templates, the type's others, then all of them with categories
    outside the schema's vocabularies (a loose last resort, never needed on rendered pages)."""
    sec = reader.sections.get(section)
    cap = name[:1].upper() + name[1:]
    pos, n = 0, len(text)
    while pos < n:
        hit = _match_at(sec, text, pos, name, cap) if sec is not None else None
        if hit is None:
            hit = _match_at(reader.anywhere, text, pos, name, cap)
        if hit is None:
            hit = _match_at(_reader(reader.type, True).anywhere, text, pos, name, cap)
        if hit is None:
            stop = text.find(". ", pos)
            stop = n if stop < 0 else stop + 1
            unread.append(text[pos:stop])
            pos = stop + 1
            continue
        out.append(hit[0])
        pos = hit[1]


def _split_header(markdown: str) -> tuple[str | None, str | None, list[str]]:
    """(title, url, body paragraphs) of a page as ``open`` shows it (or of its bare text)."""
    paras = markdown.strip().split("\n\n")
    title = url = None
    if paras and paras[0].startswith("# ") and "\n" not in paras[0]:
        title = paras[0][2:]
        paras = paras[1:]
        if paras and paras[0].startswith("URL: "):
            for line in paras[0].split("\n"):
                if line.startswith("URL: "):
                    url = line[5:].strip()
            paras = paras[1:]
    return title, url, paras


def read_article(markdown: str) -> Article | None:
    """The statements of an encyclopedia article (``Web.open(url).markdown()`` of a page of kind
    "article", or its bare text); None when the text is not one."""
    if not isinstance(markdown, str):
        return None
    _title, url, paras = _split_header(markdown)
    if url is not None and not url.startswith(ARTICLE_PREFIX):
        return None
    if not paras:
        return None
    lead = _LEAD.fullmatch(paras[0])
    if lead is None:
        return None
    name, t = lead.group("name"), _TYPE_OF_LABEL[lead.group("label")]
    aliases = tuple(lead.group("aliases").split(", ")) if lead.group("aliases") else ()
    reader = _reader(t)
    statements: list[Statement] = []
    unread: list[str] = []
    section: str | None = None
    for para in paras[1:]:
        if para.startswith("## "):
            section = para[3:].strip()
            continue
        if section is None and para.startswith("- **"):
            for line in para.split("\n"):
                st = _infobox_line(reader, line)
                if st is None:
                    unread.append(line)
                else:
                    statements.append(st)
            continue
        text = para.replace("\n", " ")
        if section is None:
            unread.append(text)
            continue
        _read_section(reader, section, text, name, statements, unread)
    return Article(url=url, name=name, type=t, aliases=aliases, statements=statements, unread=unread)


def _infobox_line(reader: _TypeReader, line: str) -> Statement | None:
    m = _INFOBOX.fullmatch(line)
    if m is None:
        return None
    p = reader.labels.get(m.group("label"))
    if p is None:
        return None
    v = reader.values[p].fullmatch(m.group("value"))
    if v is None:
        loose = _reader(reader.type, True).values[p].fullmatch(m.group("value"))
        if loose is None:
            return None
        v = loose
    return Statement(p, value_parser(p)(v.group(1)))


# -- directories -----------------------------------------------------------------------------
_SHOWING = re.compile(r"Showing entries (\d+)–(\d+) of (\d+) \(page (\d+) of (\d+)\)\.")
_MEMBER = re.compile(rf"- \[(?P<n>{LINK_TEXT})\]\((?P<u>{LINK_URL})\)")


def read_directory(markdown: str) -> Directory | None:
    """A directory ("list") page: its title, members (name, article URL) in page order, which
    page of how many, and the total number of entries; None when the text is not one."""
    if not isinstance(markdown, str):
        return None
    title, url, paras = _split_header(markdown)
    if url is not None and not url.startswith(DIRECTORY_PREFIX):
        return None
    page = count = 1
    total = None
    members: list[tuple[str, str]] = []
    seen_head = False
    for para in paras:
        m = _SHOWING.fullmatch(para)
        if m is not None:
            total, page, count = int(m.group(3)), int(m.group(4)), int(m.group(5))
            seen_head = True
            continue
        if para.startswith(("Previous page: ", "Next page: ")):
            continue
        lines = para.split("\n")
        found = [_MEMBER.fullmatch(x) for x in lines]
        if all(found):
            members += [(f.group("n"), f.group("u")) for f in found]
        elif url is None:
            return None  # bare text that is not a directory
    if url is None and not seen_head and not members:
        return None
    return Directory(title=title or "", members=members, page=page, page_count=count, total=total)


def read_whole_directory(open_markdown: Callable[[str], str], url: str) -> Directory | None:
    """Every page of the directory at ``url`` read through ``open_markdown`` (URL → the page as
    ``open`` shows it): one Directory with all members, ``page`` 1 and the page count."""
    base = url.split("?", 1)[0]
    first = read_directory(open_markdown(base))
    if first is None:
        return None
    members = list(first.members)
    for n in range(2, first.page_count + 1):
        part = read_directory(open_markdown(f"{base}?page={n}"))
        if part is None:
            break
        members += part.members
    return Directory(title=first.title, members=members, page=1, page_count=first.page_count, total=first.total)
