"""The question grammar: how a graph query reads as a task, with many paraphrases.

:func:`render_wide` and :func:`render_deep` write a :class:`~fictionworld.tasks.query.Query` as
a question (an opener, the conditions as relative clauses, an order sentence, a column request,
WideSearch-style output instructions and the table header), picking every paraphrase from a
seeded generator. :mod:`fictionworld.tasks.parse` reads questions back.
"""

from __future__ import annotations

from fictionworld.schema import ENTITY_TYPES, RELATIONS, DType
from fictionworld.tasks.clauses import describe_range, header
from fictionworld.tasks.phrasing import (
    ATTR_NOUN,
    CATEGORY_CLAUSE,
    HOP_CLAUSES,
    KEY_HEADER,
    PLURAL,
    SOMEONE,
    TEMPORAL_CLAUSES,
)
from fictionworld.tasks.query import Column, Condition, Hop, Query, type_of_path
from fictionworld.web.phrasing import LIST_BY_RELATION

__all__ = [
    "candidate_columns",
    "column_format",
    "count_columns",
    "COUNT_HEADER",
    "render_wide",
    "render_deep",
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

WIDE_OPENERS = (
    "Find every one of the {what}.",
    "List all the {what}.",
    "Compile a complete list of the {what}.",
    "I need a table of all the {what}.",
    "Gather every one of the {what}.",
    "Collect the full set of {what}.",
    "Put together a table of the {what}, leaving none out.",
)
TOP_OPENERS = (
    "Find the {n} {what} with the {extreme} {noun}.",
    "Which are the {n} {what} with the {extreme} {noun}?",
    "List the {n} {what} that have the {extreme} {noun}.",
)
RANK_OPENERS = (
    "Rank all the {what} by {noun}, {direction}.",
    "Order every one of the {what} by {noun}, {direction}.",
)
DIRECTION = {True: ("highest first", "from highest to lowest"), False: ("lowest first", "from lowest to highest")}
TOP_TAIL = ("Rank them {direction}.", "Number them from 1, {direction}.")
COLUMN_REQUEST = (
    "For each of them give: {cols}.",
    "For every one, report {cols}.",
    "Include for each: {cols}.",
    "The table should give {cols}.",
)
FORMAT = (
    "Answer with one Markdown table, one row per {one}, with exactly these columns in this order:",
    "Present the result as a single Markdown table (one row per {one}) with the columns below, in this order:",
    "Return one Markdown table with one row for each {one} and these columns, in order:",
)
DEEP_OPENERS = (
    "Identify the {noun} {what}.",
    "Name the {noun} {what}.",
    "Which {noun} is the one {what}?",
    "There is exactly one {noun} {what}. Which is it?",
)
DEEP_FORMAT = (
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
        head = _pick(rng, WIDE_OPENERS).format(what=what)
    else:
        o = q.order
        noun = ATTR_NOUN[o.attribute] if not o.path else header(q.type, Column(header="", path=o.path,
                                                                                  attribute=o.attribute)).lower()  # fmt: skip
        direction = _pick(rng, DIRECTION[o.descending])
        if o.limit is None:
            head = _pick(rng, RANK_OPENERS).format(what=what, noun=noun, direction=direction)
        else:
            extreme = "highest" if o.descending else "lowest"
            head = _pick(rng, TOP_OPENERS).format(n=o.limit, what=what, extreme=extreme, noun=noun)
            if any(c.aggregate == "rank" for c in q.columns):  # numbered only where ranks are asked
                head += " " + _pick(rng, TOP_TAIL).format(direction=direction)
    headers = [c.header for c in q.columns]
    cols = ", ".join(h.lower() if j else h.lower() + " (the name)" for j, h in enumerate(headers))
    return (
        f"{head} {_pick(rng, COLUMN_REQUEST).format(cols=cols)} {instructions(list(q.columns), rng)}"
        f"{_pick(rng, FORMAT).format(one=singular(q.type))}\n| " + " | ".join(headers) + " |"
    )


def render_deep(q: Query, rng) -> str:
    parts = [clause(q.type, c, {}, rng) for c in q.conditions]
    head = _pick(rng, DEEP_OPENERS).format(noun=singular(q.type), what=_join(parts, rng))
    return f"{head} {_pick(rng, DEEP_FORMAT)}\n| Answer |"
