"""Reading one answer cell as the strict scorer does: one value or none.

A cell that states several different values of its type is a hedge and reads as no value:
"14 or 15", "14 (or 28)", "1900 or 9 December 1888" and "12–15" give nothing, while
"1.2 thousand (1,200)" or "9 December 1888 (1888)" state one value twice and read as it.
Context after "as of" ("3,400 as of March 2019", "1987-03-14 (as of 2020)") is not a value.

Numbers are read in scientific notation ("2.5e6", "2.5 × 10^6") and with thousands grouped by
commas, spaces, or by dots when there are several groups ("1.200.000", "1.200.000,50"); a lone
"1.200" is ambiguous and reads as the official evaluator reads it, 1.2. A unit's exponent
("km^2", "km2", "km²") is not a number.

Dates carry their precision: "December 1888" is a month (see the strict scorer for what it
answers: never an exact full date). Numeric dates may use any dash ("1987–03–14"); a range of
days ("1987-03-14–15", "14–15 March 1987") is several dates. All-numeric dates ("09/12/1888")
are read day-first or month-first by the other dates of the same answer; with nothing to go
by, month-first (the convention of the official evaluator's date parser).

Names are compared folded (compatibility form, accents and case removed, only letters and
digits kept), so "Émile  Zola" and "emile zola" agree but "Emile Zolla", a one-letter decoy,
does not. A qualifier in parentheses or after a comma or dash ("Acme Corp (company)",
"Return to Dufau (1994 film)", "Acme Corporation (Acme)") is harmless when it is only type
words and years, or another name of the same entity; anything else there reads as a second
name, i.e. a hedge.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Literal, NamedTuple

from fictionworld.folding import fold, fold_key
from fictionworld.scoring.metrics import clean_cell, short_cache
from fictionworld.surface import MONTHS

__all__ = [
    "DateValue",
    "DateOrder",
    "read_number",
    "read_numbers",
    "read_date",
    "date_order",
    "fold_name",
    "name_readings",
    "name_forms",
    "names_match",
    "category_match",
    "DESCRIPTOR_WORDS",
]

DateOrder = Literal["dmy", "mdy", "none"]

# -- numbers ---------------------------------------------------------------------------------
_NUM = re.compile(
    r"(?<![\w.])(?<![^\W\d_]\^)(?P<sign>[-−](?=[\d$]))?(?:US)?\$?"
    r"(?P<int>\d{1,3}(?:\.\d{3}){2,}(?:,\d+)?(?!\d|\.\d)"  # "1.200.000" and "1.200.000,50": dots group thousands
    r"|\d{1,3}(?:,\d{3})+(?!\d)|\d{1,3}(?: \d{3})+(?![\d,.])|\d{1,2}(?:,\d{2})+,\d{3}(?!\d)|\d+)(?P<frac>\.\d+)?"
    r"(?:(?:e(?P<exp>[-+−]?\d{1,2})|\s*[x×·*]\s*10\^(?P<pow>[-+−]?\d{1,2}))(?![\w.]))?"
    r"(?:\s*(?P<mag>thousand|million|billion|trillion)\b)?\s*(?P<pct>%)?",
    re.IGNORECASE,
)
_MAG = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_AS_OF = re.compile(r"\(?\bas of\b[^()]{0,100}\)?", re.IGNORECASE)


def _number(m: re.Match) -> float:
    whole = m.group("int")
    if whole.count(".") >= 2:  # "1.200.000,50": dots group thousands, a comma starts the fraction
        v = float(whole.replace(".", "").replace(",", "."))
    else:
        v = float(whole.replace(",", "").replace(" ", "") + (m.group("frac") or ""))
    power = m.group("exp") or m.group("pow")
    if power:
        v *= 10.0 ** int(power.replace("−", "-"))
    if m.group("mag"):
        v *= _MAG[m.group("mag").lower()]
    if m.group("sign"):
        v = -v
    if m.group("pct"):
        v /= 100
    return v


@short_cache()
def read_numbers(s: str) -> tuple[float, ...]:
    """The distinct numbers a cell states, in order: thousands separators, "1.2 million",
    currency marks and a minus sign are read, "%" divides by 100; a full date counts as its
    year and an "as of …" context is dropped."""
    text = clean_cell(s)
    if text.isdecimal():
        return (float(text),)
    text = _AS_OF.sub(" ", text)
    text = _DATE_ANY.sub(_year_of_date, text)
    out: list[float] = []
    for m in _NUM.finditer(text):
        v = _number(m)
        if not any(abs(v - x) <= 1e-9 * max(1.0, abs(x)) for x in out):
            out.append(v)
    return tuple(out)


def _year_of_date(m: re.Match) -> str:
    d = _date_of(m, "mdy")
    return f" {d[0].year} " if d is not None and d[1] >= 2 else m.group(0)


def read_number(s: str) -> float | None:
    """The one number a cell states, or None (no number, or several different ones)."""
    found = read_numbers(s)
    return found[0] if len(found) == 1 else None


# -- dates -----------------------------------------------------------------------------------
class DateValue(NamedTuple):
    """A date and how much of it is known: 1 = year, 2 = month, 3 = day (missing parts are 1)."""

    date: dt.date
    precision: int

    def truncated(self, precision: int) -> dt.date:
        d = self.date
        return dt.date(d.year, d.month if precision >= 2 else 1, d.day if precision >= 3 else 1)

    def span(self) -> tuple[dt.date, dt.date]:
        """The first and last day the value can mean ("November 1933": the 1st to the 30th)."""
        d = self.date
        if self.precision >= 3:
            return d, d
        if self.precision == 2:
            nxt = dt.date(d.year + (d.month == 12), d.month % 12 + 1, 1)
            return d, nxt - dt.timedelta(days=1)
        return d, dt.date(d.year, 12, 31)

    def covers(self, other: DateValue) -> bool:
        """Whether two readings agree where both are known."""
        p = min(self.precision, other.precision)
        return self.truncated(p) == other.truncated(p)


_MONTH_NUMBER = {m.lower(): i + 1 for i, m in enumerate(MONTHS)} | {m[:3].lower(): i + 1 for i, m in enumerate(MONTHS)}
_MONTH_NUMBER["sept"] = 9
_M = "|".join(sorted(_MONTH_NUMBER, key=len, reverse=True))
_ORD = r"(?:st|nd|rd|th)?"
_DASHES = "\\-‐‑‒–—−"  # "1987–03–14" with en-dashes (or any other dash) is a full date
_DATE_ANY = re.compile(
    rf"(?P<iso>(?<!\d)(?P<iy>\d{{4}})[/.{_DASHES}](?P<im>\d{{1,2}})[/.{_DASHES}](?P<id>\d{{1,2}})(?!\d))"
    rf"|(?P<num>(?<![\d.])(?P<na>\d{{1,2}})[/.{_DASHES}](?P<nb>\d{{1,2}})[/.{_DASHES}](?P<ny>\d{{4}})(?!\d))"
    rf"|(?P<mdy>\b(?P<m1>{_M})\.?\s+(?P<d1>\d{{1,2}}){_ORD},?\s+(?P<y1>\d{{3,4}})(?!\d))"
    rf"|(?P<dmy>(?<!\d)(?P<d2>\d{{1,2}}){_ORD}\s+(?:of\s+)?(?P<m2>{_M})\.?,?\s+(?P<y2>\d{{3,4}})(?!\d))"
    rf"|(?P<my>\b(?P<m3>{_M})\.?,?\s+(?P<y3>\d{{3,4}})(?!\d))"
    rf"|(?P<ym>(?<![\d.\-/])(?P<y4>\d{{4}})-(?P<m4>\d{{2}})(?![\d\-/]))"
    rf"|(?P<y>(?<![\d.,\-/$])(?P<y5>\d{{3,4}})(?![\d,]|\.\d))",
    re.IGNORECASE,
)


def _date_of(m: re.Match, order: DateOrder) -> tuple[dt.date, int] | None:
    """(date, precision) of one match; None for an impossible or ambiguous date."""
    g = m.group
    try:
        if g("iso"):
            return dt.date(int(g("iy")), int(g("im")), int(g("id"))), 3
        if g("num"):
            a, b, y = int(g("na")), int(g("nb")), int(g("ny"))
            if a > 12 or (order == "dmy" and b <= 12):
                return dt.date(y, b, a), 3
            if b > 12 or order == "mdy" or a == b:
                return dt.date(y, a, b), 3
            return None  # "09/12/1888" in an answer that mixes both conventions
        if g("mdy"):
            return dt.date(int(g("y1")), _MONTH_NUMBER[g("m1").lower()], int(g("d1"))), 3
        if g("dmy"):
            return dt.date(int(g("y2")), _MONTH_NUMBER[g("m2").lower()], int(g("d2"))), 3
        if g("my"):
            return dt.date(int(g("y3")), _MONTH_NUMBER[g("m3").lower()], 1), 2
        if g("ym"):
            return dt.date(int(g("y4")), int(g("m4")), 1), 2
        return dt.date(int(g("y5")), 1, 1), 1
    except ValueError:
        return None


_ISO = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_NUMERIC_DATE = re.compile(rf"(?<![\d.])(\d{{1,2}})[/.{_DASHES}](\d{{1,2}})[/.{_DASHES}]\d{{4}}(?!\d)")
# A day range around a full date ("1987-03-14–15", "14–15 March 1987", "13 or 14 March 1987"):
# several days, i.e. a hedge.
_LINK_WORD = rf"(?:[/&,{_DASHES}]|\b(?:to|or|and)\b)"
_DAY_AFTER = re.compile(rf"\s*{_LINK_WORD}\s*\d{{1,2}}(?![\d:])")
_DAY_BEFORE = re.compile(rf"(?<![\d:])\d{{1,2}}{_ORD}\s*{_LINK_WORD}\s*$", re.IGNORECASE)


def date_order(text: str) -> DateOrder:
    """The day/month order of an answer's all-numeric dates, from those that show it: "dmy"
    if one has a first part over 12, "mdy" if one has a second part over 12, "none" when
    they disagree, else "mdy"."""
    dmy = mdy = False
    for a, b in _NUMERIC_DATE.findall(text):
        dmy |= int(a) > 12 >= int(b)
        mdy |= int(b) > 12 >= int(a)
    if dmy and mdy:
        return "none"
    return "dmy" if dmy else "mdy"


@short_cache()
def read_date(s: str, order: DateOrder = "mdy") -> DateValue | None:
    """The one date a cell states, with its precision, never filled in from today; None when
    it states none, an impossible or ambiguous one, or several that disagree ("1900 or
    9 December 1888", a range of days). Context after "as of" is dropped when a date is left."""
    text = clean_cell(s)
    iso = _ISO.fullmatch(text)
    if iso:
        try:
            return DateValue(dt.date(int(iso[1]), int(iso[2]), int(iso[3])), 3)
        except ValueError:
            return None
    found = _dates(_AS_OF.sub(" ", text), order) if "as of" in text.lower() else None
    if not found:  # no context, or nothing but context ("as of 1 May 2020")
        found = _dates(text, order)
    if not found or None in found:
        return None
    best = max(found, key=lambda v: v.precision)
    return best if all(best.covers(v) for v in found) else None


def _dates(text: str, order: DateOrder) -> list[DateValue | None]:
    """Each date ``text`` states (None for an impossible, ambiguous or day-range one)."""
    out: list[DateValue | None] = []
    for m in _DATE_ANY.finditer(text):
        d = _date_of(m, order)
        if d is not None and (
            (m.group("iso") and _DAY_AFTER.match(text, m.end()))
            or (m.group("dmy") and _DAY_BEFORE.search(text, max(0, m.start() - 16), m.start()))
        ):
            d = None
        out.append(None if d is None else DateValue(*d))
        if d is None:
            break
    return out


# -- names -----------------------------------------------------------------------------------


@short_cache(1 << 17)
def fold_name(s: str) -> str:
    """A name reduced to what tells names apart (:func:`fictionworld.folding.fold_key` of the
    cleaned cell): "Émile-Zola  Ltd." → "emilezolaltd"."""
    return fold_key(clean_cell(s))


# Words a qualifier may hold without naming anything: type words, legal forms, articles.
DESCRIPTOR_WORDS = frozenset(
    """
    a an the fictional country region state province city town village capital person people
    man woman author writer novelist poet actor actress director producer singer musician artist
    composer athlete player footballer politician scientist company corporation firm business
    enterprise conglomerate startup brand manufacturer maker inc incorporated ltd limited llc plc
    co corp gmbh ag sa nv bv university college school institute academy publisher publishing
    house press imprint book novel novella memoir biography film movie documentary album music
    record lp ep soundtrack product device model award prize medal trophy event festival
    tournament championship conference fair exhibition sports team club franchise band group
    series edition
    """.split()
)
_QUALIFIED = (
    re.compile(r"^(?P<base>.+?)\s*\((?P<qual>[^()]*)\)\s*$"),
    re.compile(r"^(?P<base>.+?)\s*\[(?P<qual>[^\[\]]*)\]\s*$"),
    re.compile(r"^(?P<base>.+?)\s*,\s*(?P<qual>[^,]+)$"),
    re.compile(r"^(?P<base>.+?)\s+[-–—]\s+(?P<qual>.+)$"),
)
_QUALIFIER_MARKS = frozenset("()[],-–—")
_WORD = re.compile(r"\w+")
_ARTICLES = frozenset({"a", "an", "the"})


def _singular(w: str) -> str:
    return w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w


def category_match(cell: str, gold: str) -> bool:
    """Whether a cell gives the same category as ``gold``, case, accents, punctuation, plurals
    and word order aside ("Science-Fiction" = "science fiction"); the words must be the same,
    so a list of guesses ("robotics, banking") does not match."""
    a, b = _category_words(cell), _category_words(gold)
    return bool(a) and a == b


@short_cache()
def _category_words(s: str) -> tuple[str, ...]:
    return tuple(sorted(_singular(w) for w in _WORD.findall(fold(clean_cell(s)))))


def _descriptor(qual: str) -> bool:
    words = _WORD.findall(fold(qual))
    ok = all(w in DESCRIPTOR_WORDS or (w.isdigit() and len(w) == 4) for w in words)
    return ok and any(w not in _ARTICLES for w in words)  # "Last Orchards, The" is not "Last Orchards"


@short_cache()
def name_readings(s: str) -> tuple[tuple[str, str | None], ...]:
    """The names a cell can be read as, each as (folded name, folded qualifier or None): the
    whole cell, and the part before a qualifier. A qualifier of type words and years folds to
    "" (always harmless); any other must be a name of the same entity, which the caller checks."""
    text = clean_cell(s)
    out: list[tuple[str, str | None]] = []
    for base, qual in [(text, None), *_splits(text)]:
        f = fold_name(base)
        if f:
            out.append((f, None if qual is None else "" if _descriptor(qual) else fold_name(qual)))
    return tuple(out)


def _splits(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if _QUALIFIER_MARKS.isdisjoint(text):
        return out
    for pat in _QUALIFIED:
        m = pat.match(text)
        if m and m.group("qual").strip():
            out.append((m.group("base"), m.group("qual")))
    return out


def names_match(cell: str, forms: frozenset[str]) -> bool:
    """Whether ``cell`` names the entity whose folded names (name and aliases) are ``forms``."""
    for base, qual in name_readings(cell):
        if base in forms and (qual is None or qual == "" or qual in forms):
            return True
    return False


def name_forms(names) -> frozenset[str]:
    """Folded forms of an entity's names (its name and aliases)."""
    return frozenset(f for f in map(fold_name, names) if f)
