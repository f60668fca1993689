"""The question grammar: how a graph query reads as a task, with many paraphrases, and back.

:func:`render_wide` and :func:`render_deep` write a :class:`~fictionworld.tasks.query.Query` as
a question (an opener, the conditions as relative clauses, an order sentence, a column request,
WideSearch-style output instructions and the table header), picking every paraphrase from a
seeded generator. :func:`parse_question` reads a question back into a :class:`Parsed` query,
naming entities by name only (never by id): that is what a person, or the non-privileged
explorer agent, understands from the words. The task generator keeps a question only when it
parses back to exactly its query, so every question is unambiguous in this grammar.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache

from fictionworld.schema import ENTITY_TYPES, RELATIONS, DType
from fictionworld.tasks.clauses import describe_range, header
from fictionworld.tasks.phrasing import (
    ATTR_NOUN,
    CATEGORY_CLAUSE,
    DATE_VERB,
    HOP_CLAUSES,
    KEY_HEADER,
    PLURAL,
    SOMEONE,
    TEMPORAL_CLAUSES,
)
from fictionworld.tasks.query import Column, Condition, Hop, Order, Query, attribute_dtype, type_of_path
from fictionworld.web.phrasing import LIST_BY_RELATION

__all__ = [
    "Parsed",
    "candidate_columns",
    "column_format",
    "count_columns",
    "COUNT_HEADER",
    "render_wide",
    "render_deep",
    "parse_question",
    "key_header",
    "instructions",
    "MISSING",
]

MISSING = "N/A"  # what a table holds where the web states no value

SKIP_COLUMNS = {"gender"}
# Relations a value column may follow: functional ones plus founded_by (a row with several
# founders makes the column ineligible for that task), and a book's author.
COLUMN_RELATIONS = {name for name, r in RELATIONS.items() if r.functional} | {"founded_by"}
COLUMN_HOPS = [Hop(predicate=p) for p in sorted(COLUMN_RELATIONS)] + [Hop(predicate="author_of", inverse=True)]

# Count columns: (relation, subject type) of a directory page -> header. The row is the
# relation's object; the count is the number of entries of its directory.
COUNT_HEADER: dict[tuple[str, str], str] = {
    ("headquartered_in", "company"): "Number of companies headquartered there",
    ("headquartered_in", "publisher"): "Number of publishers headquartered there",
    ("located_in", "region"): "Number of regions",
    ("located_in", "city"): "Number of cities",
    ("located_in", "university"): "Number of universities",
    ("based_in", "sports_team"): "Number of sports teams based there",
    ("held_in", "event"): "Number of events held there",
    ("born_in", "person"): "Number of people born there",
    ("published_by", "book"): "Number of books published",
    ("manufactured_by", "product"): "Number of products made",
    ("produced_by", "film"): "Number of films produced",
    ("released_by", "album"): "Number of albums released",
    ("directed_by", "film"): "Number of films directed",
    ("performed_by", "album"): "Number of albums recorded",
    ("won", "person"): "Number of people who won it",
    ("won", "book"): "Number of books that won it",
    ("won", "film"): "Number of films that won it",
    ("won", "album"): "Number of albums that won it",
    ("presented_by", "award"): "Number of awards presented",
    ("organized_by", "event"): "Number of events organised",
    ("studied_at", "person"): "Number of alumni",
    ("member_of", "person"): "Number of players",
}
assert set(COUNT_HEADER) == set(LIST_BY_RELATION)

_WIDE_OPENERS = (
    "Find every one of the {what}.",
    "List all the {what}.",
    "Compile a complete list of the {what}.",
    "I need a table of all the {what}.",
    "Gather every one of the {what}.",
    "Collect the full set of {what}.",
    "Put together a table of the {what}, leaving none out.",
)
_TOP_OPENERS = (
    "Find the {n} {what} with the {extreme} {noun}.",
    "Which are the {n} {what} with the {extreme} {noun}?",
    "List the {n} {what} that have the {extreme} {noun}.",
)
_RANK_OPENERS = (
    "Rank all the {what} by {noun}, {direction}.",
    "Order every one of the {what} by {noun}, {direction}.",
)
_DIRECTION = {True: ("highest first", "from highest to lowest"), False: ("lowest first", "from lowest to highest")}
_TOP_TAIL = ("Rank them {direction}.", "Number them from 1, {direction}.")
_COLUMN_REQUEST = (
    "For each of them give: {cols}.",
    "For every one, report {cols}.",
    "Include for each: {cols}.",
    "The table should give {cols}.",
)
_FORMAT = (
    "Answer with one Markdown table, one row per {one}, with exactly these columns in this order:",
    "Present the result as a single Markdown table (one row per {one}) with the columns below, in this order:",
    "Return one Markdown table with one row for each {one} and these columns, in order:",
)
_DEEP_OPENERS = (
    "Identify the {noun} {what}.",
    "Name the {noun} {what}.",
    "Which {noun} is the one {what}?",
    "There is exactly one {noun} {what}. Which is it?",
)
_DEEP_FORMAT = (
    "Answer with one Markdown table with a single column, Answer, holding its name:",
    "Reply with a Markdown table of one column, Answer, holding its name:",
)
_JOIN_LAST = (", and ", ", and also ")
_INSTRUCTIONS = {
    "date": ("dates as YYYY-MM-DD", "dates in ISO form (YYYY-MM-DD)"),
    "year": ("years as four digits", "years as four-digit numbers"),
    "number": (
        "numbers as plain digits without units or thousands separators",
        "numbers as bare digits (no units, no thousands separators)",
    ),  # fmt: skip
    "money": ("amounts in US dollars as plain digits with two decimals",),
    "url": ("websites as full URLs", "websites as complete URLs (https://…)"),
    "rank": ("the rank as 1, 2, 3, …",),
}


def key_header(row_type: str) -> str:
    return KEY_HEADER.get(row_type, row_type.replace("_", " ").title())


def singular(row_type: str) -> str:
    return "person" if row_type == "person" else SOMEONE[row_type].split(" ", 1)[-1]


# -- columns ---------------------------------------------------------------------------
def candidate_columns(row_type: str, hops: int) -> list[Column]:
    """Every value column of a type reaching at most ``hops`` relation hops (header unset)."""
    out: list[Column] = []
    frontier: list[tuple[tuple[Hop, ...], str]] = [((), row_type)]
    for depth in range(hops + 1):
        nxt = []
        for path, t in frontier:
            if path:
                out.append(Column(header="", path=path))
            for a in ENTITY_TYPES[t].attributes:
                if a.name not in SKIP_COLUMNS and (not path or a.dtype != DType.URL):
                    out.append(Column(header="", path=path, attribute=a.name))
            if depth == hops:
                continue
            for hop in COLUMN_HOPS:
                try:
                    t2 = type_of_path(t, (hop,))
                except ValueError:
                    continue
                if any(h.predicate == hop.predicate for h in path) and hop.predicate != "located_in":
                    continue
                nxt.append(((*path, hop), t2))
        frontier = nxt
    return out


def column_format(row_type: str, col: Column, year: bool = False) -> str:
    """The format a column's values are written in (``year`` picks years over full dates)."""
    if col.aggregate is not None:
        return "int"
    if col.attribute is None:
        return "name"
    dtype = ENTITY_TYPES[type_of_path(row_type, col.path)].attribute(col.attribute).dtype
    if dtype == DType.DATE:
        return "year" if year else "date"
    if col.attribute == "price_usd":
        return "money"
    return {DType.INT: "int", DType.FLOAT: "float", DType.URL: "url", DType.CATEGORY: "category"}.get(dtype, "text")


def count_columns(row_type: str) -> list[Column]:
    """The count columns a row type can have (it is the object of a directory's relation)."""
    out = []
    for (p, st), head in COUNT_HEADER.items():
        if any(s == st and o == row_type for s, o in RELATIONS[p].pairs):
            out.append(
                Column(header=head, path=(Hop(predicate=p, inverse=True),), format="int", aggregate="count", of_type=st)
            )
    return out


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


# -- rendering -------------------------------------------------------------------------
def _pick(rng, options):
    return options[int(rng.integers(len(options)))]


def clause(row_type: str, c: Condition, names: dict[str, str], rng=None) -> str:
    """A relative clause for ``c`` about an entity of ``row_type`` (paraphrases drawn from
    ``rng``; the first of each without one). ``names`` maps entity ids to names."""
    pick = (lambda xs: xs[0]) if rng is None else (lambda xs: _pick(rng, xs))
    if c.any_of:
        parts = [clause(row_type, x, names, rng) for x in c.any_of]
        return "either " + " or ".join(parts)
    if c.during is not None:
        (hop,) = c.path
        return pick(TEMPORAL_CLAUSES[hop.predicate]).format(names[c.equals], a=c.during[0], b=c.during[1])

    def walk(t: str, path: tuple[Hop, ...]) -> str:
        if not path:
            return _terminal(c, names, pick)
        hop, rest = path[0], path[1:]
        nxt = type_of_path(t, (hop,))
        inner = names[c.equals] if not rest and c.attribute is None else f"{SOMEONE[nxt]} {walk(nxt, rest)}"
        return pick(HOP_CLAUSES[(hop.predicate, hop.inverse)]).format(inner)

    return walk(row_type, c.path)


def _terminal(c: Condition, names: dict[str, str], pick) -> str:
    if c.attribute is None:
        return names[c.equals]
    if c.equals is not None:
        return CATEGORY_CLAUSE.get(c.attribute, "whose " + ATTR_NOUN[c.attribute] + " is {}").format(c.equals)
    return describe_range(c.attribute, c.lo, c.hi, variant=pick((0, 1)))


def _join(parts: list[str], rng) -> str:
    if len(parts) == 1:
        return parts[0]
    return ", ".join(parts[:-1]) + _pick(rng, _JOIN_LAST) + parts[-1]


def instructions(cols: list[Column], rng) -> str:
    """WideSearch-style output instructions for the formats the columns use."""
    fmts = {c.format for c in cols}
    wanted = []
    if "date" in fmts:
        wanted.append("date")
    if "year" in fmts:
        wanted.append("year")
    if fmts & {"int", "float"}:
        wanted.append("number")
    if "money" in fmts:
        wanted.append("money")
    if "url" in fmts:
        wanted.append("url")
    if any(c.aggregate == "rank" for c in cols):
        wanted.append("rank")
    notes = [_pick(rng, _INSTRUCTIONS[w]) for w in wanted]
    out = ("Write " + ", ".join(notes) + ". ") if notes else ""
    return out + f"Where a value is not stated anywhere, write {MISSING}. "


def render_wide(q: Query, names: dict[str, str], rng) -> str:
    """The question of a wide query: set, order, columns, instructions, table header."""
    what = f"{PLURAL[q.type]} {_join([clause(q.type, c, names, rng) for c in q.conditions], rng)}"
    if q.order is None:
        head = _pick(rng, _WIDE_OPENERS).format(what=what)
    else:
        o = q.order
        noun = ATTR_NOUN[o.attribute] if not o.path else header(q.type, Column(header="", path=o.path,
                                                                                  attribute=o.attribute)).lower()  # fmt: skip
        direction = _pick(rng, _DIRECTION[o.descending])
        if o.limit is None:
            head = _pick(rng, _RANK_OPENERS).format(what=what, noun=noun, direction=direction)
        else:
            extreme = "highest" if o.descending else "lowest"
            head = _pick(rng, _TOP_OPENERS).format(n=o.limit, what=what, extreme=extreme, noun=noun)
            head += " " + _pick(rng, _TOP_TAIL).format(direction=direction)
    headers = [c.header for c in q.columns]
    cols = ", ".join(h.lower() if j else h.lower() + " (the name)" for j, h in enumerate(headers))
    return (
        f"{head} {_pick(rng, _COLUMN_REQUEST).format(cols=cols)} {instructions(list(q.columns), rng)}"
        f"{_pick(rng, _FORMAT).format(one=singular(q.type))}\n| " + " | ".join(headers) + " |"
    )


def render_deep(q: Query, rng) -> str:
    parts = [clause(q.type, c, {}, rng) for c in q.conditions]
    head = _pick(rng, _DEEP_OPENERS).format(noun=singular(q.type), what=_join(parts, rng))
    return f"{head} {_pick(rng, _DEEP_FORMAT)}\n| Answer |"


# -- parsing ---------------------------------------------------------------------------
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


def _split_conditions(text: str) -> list[list[str]]:
    """Ways to cut a conjunction of clauses into clauses (commas never occur inside one)."""
    parts = re.split(r", (?:and (?:also )?)?", text)
    return [parts]


def _conjunction(t: str, text: str) -> list[tuple[Condition, ...]]:
    out: list[tuple[Condition, ...]] = [()]
    for chunk in _split_conditions(text)[0]:
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
    {tpl.split("{", 1)[0] for tpl in (*_COLUMN_REQUEST, *_TOP_TAIL, *_FORMAT, *_DEEP_FORMAT)} | {"Which is it?"}
)


def _head_regexes(openers, slots) -> list[re.Pattern]:
    nxt = "|".join(re.escape(s) for s in _SENTENCE_STARTS)
    return [re.compile(_template_regex(o, slots).pattern + rf"\s+(?={nxt})", re.S) for o in openers]


@cache
def _compiled():
    what = "(?P<what>.+?)"
    wide = _head_regexes(_WIDE_OPENERS, {"what": what})
    top = _head_regexes(
        [o + " " + t for o in _TOP_OPENERS for t in _TOP_TAIL],
        {"what": what, "n": "(?P<n>[0-9]+)", "extreme": "(?P<extreme>highest|lowest)", "noun": "(?P<noun>.+?)",
         "direction": "(?P<direction>" + "|".join(re.escape(d) for ds in _DIRECTION.values() for d in ds) + ")"},
    )  # fmt: skip
    rank = _head_regexes(
        _RANK_OPENERS,
        {"what": what, "noun": "(?P<noun>.+?)",
         "direction": "(?P<direction>" + "|".join(re.escape(d) for ds in _DIRECTION.values() for d in ds) + ")"},
    )  # fmt: skip
    deep = _head_regexes(_DEEP_OPENERS, {"noun": "(?P<noun>.+?)", "what": what})
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
                if g["direction"] not in _DIRECTION[descending]:
                    continue
            else:
                descending = g["direction"] in _DIRECTION[True]
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
