"""Values as pages write them, read back typed: dates in the four page formats, grouped, plain
and worded numbers, money with and without cents, URLs and categories (the inverse of
:mod:`fictionworld.surface`'s formatters as the template renderer uses them)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable

from fictionworld.schema import ENTITY_TYPES, DType
from fictionworld.surface import MONTHS
from fictionworld.web.text import DTYPE

__all__ = ["parse_date", "parse_int", "parse_float", "parse_value", "DATE_RE", "INT_RE", "MONEY_RE", "CENTS_RE",
           "FLOAT_RE", "URL_RE", "TEXT_RE", "LINK_RE"]  # fmt: skip

_MONEY = frozenset({"revenue_usd", "box_office_usd"})  # render._MONEY: ints written as money
_CENTS = frozenset({"price_usd"})  # floats written as money with cents
UNIT = {"area_km2": " km²", "elevation_m": " m", "height_cm": " cm", "runtime_min": " min"}  # infobox only
_MONTH = {m: i + 1 for i, m in enumerate(MONTHS)} | {m[:3]: i + 1 for i, m in enumerate(MONTHS)}
_FULL = "|".join(MONTHS)
_ABBR = "|".join(m[:3] for m in MONTHS)
DATE_RE = rf"(?:\d{{4}}-\d\d-\d\d|(?:{_FULL}) \d{{1,2}}, \d{{1,4}}|\d{{1,2}} (?:{_FULL}) \d{{1,4}}|(?:{_ABBR}) \d{{1,2}}, \d{{1,4}})"
_WORDS = r"(?:thousand|million|billion)"
_GROUPED = r"\d{1,3}(?:,\d{3})+"
INT_RE = rf"-?(?:\d+(?:\.\d+)? {_WORDS}|{_GROUPED}|\d+)"
MONEY_RE = rf"(?:\$\d{{1,3}}(?:,\d{{3}})*|US\$\d+(?:\.\d+)? {_WORDS}|\d{{1,3}}(?:,\d{{3}})* USD)"
CENTS_RE = r"(?:\$\d{1,3}(?:,\d{3})*\.\d\d|\d{1,3}(?:,\d{3})*\.\d\d USD)"
FLOAT_RE = rf"-?(?:{_GROUPED}|\d+)\.\d+"
URL_RE = r"https?://\S+?"
TEXT_RE = r".+?"
LINK_TEXT = r"(?:[^\[\]\n]|\[[^\[\]\n]*\])*"  # a name, one level of brackets allowed
LINK_URL = r"(?:[^\s()]|\([^\s()]*\))*"  # a URL, namesakes' "…_(person)" allowed
LINK_RE = rf"\[(?P<n{{i}}>{LINK_TEXT})\]\((?P<u{{i}}>{LINK_URL})\)"
_SIZE = {"thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
_WORDS_TUPLE = tuple(_SIZE)


def parse_date(s: str) -> dt.date:
    """A date in one of the page formats ("March 14, 1987", "14 March 1987", "1987-03-14",
    "Mar 14, 1987")."""
    if s[4:5] == "-":
        return dt.date(int(s[:4]), int(s[5:7]), int(s[8:10]))
    a, b, c = s.replace(",", "").split(" ")
    if a.isdigit():
        return dt.date(int(c), _MONTH[b], int(a))
    return dt.date(int(c), _MONTH[a], int(b))


def parse_int(s: str) -> int:
    """ "1,234", "1234", "-5", "1.23 million", "$1,234", "US$1.2 million", "1,234 USD" → int."""
    s = s.removeprefix("US").removeprefix("$").removesuffix(" USD")
    neg = s.startswith("-")
    s = s.lstrip("-")
    if s.endswith(_WORDS_TUPLE):
        num, word = s.split(" ")
        whole, _, frac = num.partition(".")
        scale = 10 ** len(frac)
        v = (int(whole) * scale + int(frac or 0)) * _SIZE[word] // scale
    else:
        v = int(s.replace(",", ""))
    return -v if neg else v


def parse_float(s: str) -> float:
    """ "1,234.5", "1234.5", "$1,234.50", "1,234.50 USD" → float."""
    return float(s.removeprefix("$").removesuffix(" USD").replace(",", ""))


def value_regex(p: str, *, loose: bool = False) -> str:
    dtype = DTYPE[p]
    if dtype == DType.DATE:
        return DATE_RE
    if dtype == DType.INT:
        return MONEY_RE if p in _MONEY else INT_RE
    if dtype == DType.FLOAT:
        return CENTS_RE if p in _CENTS else FLOAT_RE
    if dtype == DType.URL:
        return URL_RE
    if dtype == DType.CATEGORY and not loose:
        cats = {c for t in ENTITY_TYPES.values() for a in t.attributes if a.name == p for c in a.categories}
        if cats:
            return "(?:" + "|".join(re.escape(c) for c in sorted(cats, key=lambda c: (-len(c), c))) + ")"
    return TEXT_RE


def value_parser(p: str) -> Callable[[str], object]:
    dtype = DTYPE[p]
    if dtype == DType.DATE:
        return parse_date
    if dtype == DType.INT:
        return parse_int
    if dtype == DType.FLOAT:
        return parse_float
    return str


def parse_value(predicate: str, text: str):
    """The typed value of attribute ``predicate`` written as ``text`` (a sentence's or an
    infobox's format, unit allowed); ValueError when it is not written in a page format."""
    unit = UNIT.get(predicate)
    if unit and text.endswith(unit):
        text = text[: -len(unit)]
    if not re.fullmatch(value_regex(predicate), text):
        raise ValueError(f"{text!r} is not a value of {predicate}")
    return value_parser(predicate)(text)
