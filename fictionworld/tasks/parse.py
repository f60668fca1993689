"""Reading a question back: the inverse of :mod:`fictionworld.tasks.grammar`.

:func:`parse_question` reads a question into a :class:`Parsed` query, naming entities by name
only (never by id): that is what a person, or the non-privileged explorer agent, understands
from the words. The task generator keeps a question only when it parses back to exactly its
query, so every question is unambiguous in this grammar.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache

from fictionworld.schema import ENTITY_TYPES, DType
from fictionworld.tasks.clauses import header
from fictionworld.tasks.grammar import (
    COLUMN_REQUEST,
    DEEP_FORMAT,
    DEEP_OPENERS,
    DIRECTION,
    FORMAT,
    RANK_OPENERS,
    TOP_OPENERS,
    TOP_TAIL,
    WIDE_OPENERS,
    candidate_columns,
    column_format,
    count_columns,
    key_header,
    singular,
)
from fictionworld.tasks.phrasing import (
    ATTR_NOUN,
    CATEGORY_CLAUSE,
    DATE_VERB,
    HOP_CLAUSES,
    PLURAL,
    SOMEONE,
    TEMPORAL_CLAUSES,
)
from fictionworld.tasks.query import Column, Condition, Hop, Order, Query, attribute_dtype, type_of_path

__all__ = ["Parsed", "parse_question", "parse_clause"]


@cache
def _header_index(row_type: str) -> dict[str, Column]:
    """Folded header -> column, for every column a task about ``row_type`` can ask for."""
    out: dict[str, Column] = {}
    for c in candidate_columns(row_type, 4):
        for year in (False, True):
            fmt = column_format(row_type, c, year)
            col = c.model_copy(update={"format": fmt})
            out.setdefault(_fold(header(row_type, col)), col.model_copy(update={"header": header(row_type, col)}))
    for c in count_columns(row_type):
        out[_fold(c.header)] = c.model_copy(update={"format": "int"})
    out[_fold("Rank")] = Column(header="Rank", aggregate="rank", format="int")
    k = key_header(row_type)
    out[_fold(k)] = Column(header=k)
    return out


def _fold(s: str) -> str:
    return " ".join(s.lower().split())


@dataclass
class Parsed:
    """A question as understood from its words: ``query`` names entities by *name* in
    ``Condition.equals`` (``names`` lists them); ``deep`` for a one-answer question."""

    query: Query
    deep: bool = False
    names: list[str] = field(default_factory=list)


def _template_regex(template: str, slots: dict[str, str]) -> re.Pattern:
    out, pos = [], 0
    for m in re.finditer(r"\{(\w*)\}", template):
        out.append(re.escape(template[pos : m.start()]))
        out.append(slots[m.group(1)])
        pos = m.end()
    out.append(re.escape(template[pos:]))
    return re.compile("".join(out), re.S)


_NOT_A_NAME = re.compile(r"^(?:the \d|\d)|\b(?:between \d|from \d|or later\b|or earlier\b|century\b)|^either ", re.I)


def _is_name(s: str) -> bool:
    return bool(s.strip()) and s == s.strip() and not _NOT_A_NAME.search(s) and ", " not in s


@cache
def _range_patterns(attribute: str) -> list[tuple[re.Pattern, str]]:
    """Regexes of every way :func:`describe_range` writes a range of ``attribute``."""
    out = []
    num = r"(?P<{}>-?[0-9][0-9,]*(?:\.[0-9]+)?)"
    if attribute_dtype(attribute) == DType.DATE:
        verb = re.escape(DATE_VERB.get(attribute, f"with a {ATTR_NOUN[attribute]}"))
        y = r"(?P<{}>[0-9]{{3,4}})"
        out += [
            (re.compile(rf"{verb} in {y.format('a')}$"), "year"),
            (re.compile(rf"{verb} in the {y.format('a')}s$"), "decade"),
            (re.compile(rf"{verb} in the (?P<a>[0-9]+)(?:st|nd|rd|th) century$"), "century"),
            (re.compile(rf"{verb} in {y.format('a')} or later$"), "from"),
            (re.compile(rf"{verb} in {y.format('b')} or earlier$"), "until"),
            (re.compile(rf"{verb} between {y.format('a')} and {y.format('b')}$"), "span"),
            (re.compile(rf"{verb} (?:at some point )?from {y.format('a')} to {y.format('b')}$"), "span"),
        ]
        return out
    noun = re.escape(ATTR_NOUN[attribute])
    out += [
        (re.compile(rf"whose {noun} is at least {num.format('a')}$"), "from"),
        (re.compile(rf"whose {noun} is at most {num.format('b')}$"), "until"),
        (re.compile(rf"whose {noun} is between {num.format('a')} and {num.format('b')}$"), "span"),
        (re.compile(rf"whose {noun} is from {num.format('a')} to {num.format('b')}$"), "span"),
    ]
    return out


def _number(s: str) -> float:
    return float(s.replace(",", ""))


def _terminals(t: str, text: str) -> list[Condition]:
    """Conditions on ``t``'s own attributes that ``text`` can be."""
    out = []
    for a in ENTITY_TYPES[t].attributes:
        if a.dtype == DType.CATEGORY or a.dtype == DType.TEXT:
            tpl = CATEGORY_CLAUSE.get(a.name, "whose " + ATTR_NOUN.get(a.name, a.name) + " is {}")
            m = _template_regex(tpl, {"": "(?P<v>.+)"}).fullmatch(text)
            if m:
                out.append(Condition(attribute=a.name, equals=m.group("v")))
            continue
        if a.name not in ATTR_NOUN or a.dtype == DType.URL:
            continue
        for rx, kind in _range_patterns(a.name):
            m = rx.fullmatch(text)
            if not m:
                continue
            g = m.groupdict()
            if a.dtype == DType.DATE:
                lo = int(g["a"]) if g.get("a") else None
                hi = int(g["b"]) if g.get("b") else None
                if kind == "year":
                    hi = lo
                elif kind == "decade":
                    hi = lo + 9
                elif kind == "century":
                    lo, hi = (lo - 1) * 100 + 1, lo * 100
                out.append(Condition(attribute=a.name, lo=lo, hi=hi))
            else:
                lo = _number(g["a"]) if g.get("a") else None
                hi = _number(g["b"]) if g.get("b") else None
                out.append(Condition(attribute=a.name, lo=lo, hi=hi))
    return out


def _hops_from(t: str) -> list[tuple[Hop, str]]:
    out = []
    for p, inv in HOP_CLAUSES:
        hop = Hop(predicate=p, inverse=inv)
        try:
            out.append((hop, type_of_path(t, (hop,))))
        except ValueError:
            continue
    return out


def parse_clause(t: str, text: str) -> list[Condition]:
    """Every condition on an entity of type ``t`` that ``text`` can be read as."""
    out: list[Condition] = []
    if text.startswith("either "):
        body = text[len("either ") :]
        for m in re.finditer(r" or ", body):
            left, right = body[: m.start()], body[m.end() :]
            for a in parse_clause(t, left):
                for b in parse_clause(t, right):
                    out.append(Condition(any_of=(a, b)))
        return out
    out += _terminals(t, text)
    for p, templates in TEMPORAL_CLAUSES.items():
        hop = Hop(predicate=p)
        try:
            type_of_path(t, (hop,))
        except ValueError:
            continue
        for tpl in templates:
            m = _template_regex(tpl, {"": "(?P<n>.+)", "a": "(?P<a>[0-9]{3,4})", "b": "(?P<b>[0-9]{3,4})"}).fullmatch(
                text
            )
            if m and _is_name(m.group("n")):
                out.append(Condition(path=(hop,), equals=m.group("n"), during=(int(m.group("a")), int(m.group("b")))))
    for hop, nxt in _hops_from(t):
        for tpl in HOP_CLAUSES[(hop.predicate, hop.inverse)]:
            m = _template_regex(tpl, {"": "(?P<x>.+)"}).fullmatch(text)
            if not m:
                continue
            inner = m.group("x")
            some = SOMEONE[nxt] + " "
            nested = []
            if inner.startswith(some):
                nested = [c for c in parse_clause(nxt, inner[len(some) :]) if not c.any_of and c.during is None]
                out += [c.model_copy(update={"path": (hop, *c.path)}) for c in nested]
            if not nested and _is_name(inner):
                out.append(Condition(path=(hop,), equals=inner))
    return list(dict.fromkeys(out))


def _conjunction(t: str, text: str) -> list[tuple[Condition, ...]]:
    out: list[tuple[Condition, ...]] = [()]
    for chunk in re.split(r", (?:and (?:also )?)?", text):  # commas never occur inside a clause
        options = parse_clause(t, chunk)
        out = [(*acc, c) for acc in out for c in options]
        if not out:
            return []
    return out


_PLURALS = sorted(((v, k) for k, v in PLURAL.items()), key=lambda x: -len(x[0]))
_SINGULARS = sorted(((singular(k), k) for k in PLURAL), key=lambda x: -len(x[0]))


def _what(text: str, nouns) -> list[tuple[str, tuple[Condition, ...]]]:
    out = []
    for noun, t in nouns:
        if text.startswith(noun + " "):
            out += [(t, conds) for conds in _conjunction(t, text[len(noun) + 1 :])]
    return out


def _headers(question: str) -> list[str]:
    lines = [ln.strip() for ln in question.splitlines() if ln.strip().startswith("|")]
    if not lines:
        return []
    return [c.strip() for c in lines[-1].strip("|").split("|")]


_SENTENCE_STARTS = sorted(
    {tpl.split("{", 1)[0] for tpl in (*COLUMN_REQUEST, *TOP_TAIL, *FORMAT, *DEEP_FORMAT)} | {"Which is it?"}
)


def _head_regexes(openers, slots) -> list[re.Pattern]:
    nxt = "|".join(re.escape(s) for s in _SENTENCE_STARTS)
    return [re.compile(_template_regex(o, slots).pattern + rf"\s+(?={nxt})", re.S) for o in openers]


@cache
def _compiled():
    what = "(?P<what>.+?)"
    wide = _head_regexes(WIDE_OPENERS, {"what": what})
    top = _head_regexes(
        [o + " " + t for o in TOP_OPENERS for t in TOP_TAIL] + list(TOP_OPENERS),
        {"what": what, "n": "(?P<n>[0-9]+)", "extreme": "(?P<extreme>highest|lowest)", "noun": "(?P<noun>.+?)",
         "direction": "(?P<direction>" + "|".join(re.escape(d) for ds in DIRECTION.values() for d in ds) + ")"},
    )  # fmt: skip
    rank = _head_regexes(
        RANK_OPENERS,
        {"what": what, "noun": "(?P<noun>.+?)",
         "direction": "(?P<direction>" + "|".join(re.escape(d) for ds in DIRECTION.values() for d in ds) + ")"},
    )  # fmt: skip
    deep = _head_regexes(DEEP_OPENERS, {"noun": "(?P<noun>.+?)", "what": what})
    return wide, top, rank, deep


def _order_of(t: str, noun: str, descending: bool, limit: int | None) -> list[Order]:
    out = []
    for c in candidate_columns(t, 2):
        if c.attribute is None:
            continue
        if attribute_dtype(c.attribute) not in (DType.INT, DType.FLOAT, DType.DATE):
            continue
        said = ATTR_NOUN[c.attribute] if not c.path else header(t, c).lower()
        if said == noun:
            out.append(Order(path=c.path, attribute=c.attribute, descending=descending, limit=limit))
    return out


def parse_question(question: str) -> list[Parsed]:
    """Every reading of ``question`` in this grammar (one for a generated task)."""
    wide, top, rank, deep = _compiled()
    headers = _headers(question)
    out: list[Parsed] = []

    def columns_for(t: str) -> tuple[Column, ...] | None:
        index = _header_index(t)
        cols = [index.get(_fold(h)) for h in headers]
        if not cols or any(c is None for c in cols):
            return None
        return tuple(c.model_copy(update={"header": h}) for c, h in zip(cols, headers))

    def add(t, conds, order, deep_=False):
        cols = (Column(header="Answer"),) if deep_ else columns_for(t)
        if cols is None:
            return
        if order is None and any(c.aggregate == "rank" for c in cols):
            return
        q = Query(type=t, conditions=conds, columns=cols, order=order)
        names = [n for c in conds for n in _names(c)]
        out.append(Parsed(query=q, deep=deep_, names=names))

    for rx in deep:
        m = rx.match(question)
        if m:
            for noun, t in _SINGULARS:
                if m.group("noun") == noun:
                    for conds in _conjunction(t, m.group("what")):
                        add(t, conds, None, True)
    for rx in wide:
        m = rx.match(question)
        if m:
            for t, conds in _what(m.group("what"), _PLURALS):
                add(t, conds, None)
    for rx, limited in ((top, True), (rank, False)):
        for r in rx:
            m = r.match(question)
            if not m:
                continue
            g = m.groupdict()
            if limited:
                descending = g["extreme"] == "highest"
                if g.get("direction") is not None and g["direction"] not in DIRECTION[descending]:
                    continue
            else:
                descending = g["direction"] in DIRECTION[True]
            for t, conds in _what(g["what"], _PLURALS):
                for o in _order_of(t, g["noun"], descending, int(g["n"]) if limited else None):
                    add(t, conds, o)
    uniq: dict[str, Parsed] = {}
    for p in out:
        uniq.setdefault(p.query.model_dump_json(), p)
    return list(uniq.values())


def _names(c: Condition) -> list[str]:
    if c.any_of:
        return [n for x in c.any_of for n in _names(x)]
    return [c.equals] if c.attribute is None and c.equals is not None else []
