"""Cell preprocessors and metrics, in two flavours.

``Official``: the behaviour of the WideSearch evaluator's ``metric_utils`` (reimplemented from
its documented behaviour, quirks included: both-sides-missing scores 1, dates parsed with
``dateparser`` relative to a reference "today", the first number in a cell wins).

``Strict``: the same metrics made exact and unexploitable: numbers read with this project's
surface parsers ("1.2 million", "$3,450,000"), dates never filled from today, hosts compared
without "www.", judge-like columns matched by aliases and fuzzy ratio, no both-missing credit.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from functools import lru_cache
from urllib.parse import urlparse

from rapidfuzz import fuzz

__all__ = [
    "Official",
    "clean_cell",
    "strict_norm",
    "strict_number",
    "strict_date",
    "strict_hosts",
    "strict_judge",
]

# -- official semantics ---------------------------------------------------------------------
_OFF_NUMBER = re.compile(r"[-+]?\d*\.\d+%?|[-+]?\d+\.?\d*%?")
_OFF_URL = re.compile(r"http[s]?://(?:[a-zA-Z]|[0-9]|[$-_@.&+]|[!*\(\),]|(?:%[0-9a-fA-F][0-9a-fA-F]))+")


class Official:
    """The official metric functions; dates are parsed relative to ``today``."""

    def __init__(self, today: dt.date):
        self.today = dt.datetime(today.year, today.month, today.day)

    @staticmethod
    def norm_str(x) -> str:
        return str(x).lower().strip().replace(" ", "").replace("*", "")

    @staticmethod
    def extract_number(x) -> str:
        found = _OFF_NUMBER.findall(str(x).replace(",", ""))
        return found[0] if found else "NULL"

    def _parse_date(self, x):
        import dateparser

        return dateparser.parse(x, settings={"PREFER_DAY_OF_MONTH": "first", "RELATIVE_BASE": self.today})

    def norm_date(self, x) -> str:
        d = self._parse_date(x)  # a non-string raises, as in the official code
        return d.strftime("%Y-%m-%d") if d is not None else x

    @staticmethod
    def exact_match(r, t) -> float:
        return 1.0 if r.lower() == t.lower() else 0.0

    @staticmethod
    def number_near(r, t, criterion) -> float:
        def num(s):
            try:
                s = str(s)
                return float(s.replace("%", "")) / 100 if "%" in s else float(s)
            except ValueError:
                return None

        a, b = num(r), num(t)
        if a is None or b is None:
            return 1.0 if a is None and b is None and r == t else 0.0
        return 1.0 if abs(a - b) <= abs(b) * criterion else 0.0

    def date_near(self, r, t) -> float:
        def parse(s):
            try:
                return self._parse_date(s)
            except Exception:
                return None

        a, b = parse(r), parse(t)
        if a is None and b is None:
            return 1.0
        if a is None or b is None:
            return 0.0
        return 1.0 if abs((a - b).days) <= 31 else 0.0  # tz-aware vs naive raises, as upstream

    @staticmethod
    def url_match(r, t) -> float:
        hosts = [{urlparse(u).netloc for u in _OFF_URL.findall(str(s))} for s in (r, t)]
        return 1.0 if hosts[0] == hosts[1] else 0.0


# -- strict semantics -----------------------------------------------------------------------
_LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]*)\)")
_MARKUP = re.compile(r"(\*\*|__|\*|`|~~)")
_BR = re.compile(r"<br\s*/?>", re.IGNORECASE)
_QUOTES = "\"'“”‘’«»"


_SPECIAL = frozenset("*_`[<~\"'“”‘’«»")


@lru_cache(maxsize=1 << 16)
def clean_cell(s: str, *, keep_urls: bool = False) -> str:
    """A cell without Markdown: links become their text (or URL), bold/italic/code marks and
    <br> go, surrounding quotes go, whitespace collapses."""
    s = str(s)
    if _SPECIAL.isdisjoint(s):
        return " ".join(s.split())
    s = _BR.sub(" ", s)
    s = _LINK.sub((lambda m: f"{m.group(1)} {m.group(2)}") if keep_urls else (lambda m: m.group(1)), s)
    s = _MARKUP.sub("", s)
    s = " ".join(s.split())
    while len(s) >= 2 and s[0] in _QUOTES and s[-1] in _QUOTES:
        s = s[1:-1].strip()
    return s


@lru_cache(maxsize=1 << 16)
def strict_norm(s: str) -> str:
    """Compatibility-normalised, case-folded, without whitespace, stray quotes or a final
    full stop: "  **Acme  Corp.** " and "acme corp" agree."""
    s = unicodedata.normalize("NFKC", clean_cell(s)).casefold()
    s = "".join(s.split())
    return s.strip(_QUOTES + ".;,:")


_NUM = re.compile(
    r"(?<![\w.])(?P<sign>[-−](?=[\d$]))?(?:US)?\$?(?P<int>\d{1,3}(?:,\d{3})+|\d+)(?P<frac>\.\d+)?"
    r"(?:\s*(?P<mag>thousand|million|billion|trillion)\b)?\s*(?P<pct>%)?",
    re.IGNORECASE,
)
_MAG = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}


@lru_cache(maxsize=1 << 16)
def strict_number(s: str) -> float | None:
    """The first number of a cell: thousands separators, "1.2 million", currency marks and a
    minus sign are read; "%" divides by 100 (as upstream)."""
    m = _NUM.search(clean_cell(s))
    if m is None:
        return None
    v = float(m.group("int").replace(",", "") + (m.group("frac") or ""))
    if m.group("mag"):
        v *= _MAG[m.group("mag").lower()]
    if m.group("sign"):
        v = -v
    if m.group("pct"):
        v /= 100
    return v


_YEAR = re.compile(r"(?<!\d)\d{3,4}(?!\d)")


@lru_cache(maxsize=1 << 16)
def strict_date(s: str) -> dt.date | None:
    """A date read without reference to today: the page formats first, then ``dateutil`` with
    missing month/day as 1 (never today's); a cell without a year is not a date."""
    from fictionworld.surface import extract_dates

    text = clean_cell(s)
    found = extract_dates(text)
    if found:
        return found[0]
    if not _YEAR.search(text):
        return None
    from dateutil import parser

    try:
        return parser.parse(text, default=dt.datetime(2000, 1, 1), fuzzy=True).date()
    except (ValueError, OverflowError, TypeError):
        return None


_URL = re.compile(r"(?:https?://|www\.)[^\s<>|\"'\]\)]+|\b(?:[a-z0-9-]+\.)+[a-z]{2,}\b(?:/[^\s<>|\"'\]\)]*)?", re.I)


@lru_cache(maxsize=1 << 16)
def strict_hosts(s: str) -> frozenset[str]:
    """Host names of the URLs (or bare domains) in a cell, lower case, without "www." or port."""
    out = set()
    for u in _URL.findall(clean_cell(s, keep_urls=True)):
        u = u.rstrip(".,;:")
        host = urlparse(u if "://" in u else "http://" + u).hostname or ""
        if host.startswith("www."):
            host = host[4:]
        if "." in host:
            out.add(host)
    return frozenset(out)


def _singular(s: str) -> str:
    return s[:-1] if len(s) > 3 and s.endswith("s") and not s.endswith("ss") else s


def strict_judge(r: str, t: str, aliases: tuple[str, ...] = ()) -> float:
    """Deterministic stand-in for an LLM judge: the same name or an alias of it, a plural,
    a reordering of the same words, or a near-identical spelling (ratio ≥ 92 on strings of
    similar length). Listing several candidates in one cell does not match."""
    a = strict_norm(r)
    if not a:
        return 0.0
    for gold in (t, *aliases):
        b = strict_norm(gold)
        if not b:
            continue
        if a == b or _singular(a) == _singular(b):
            return 1.0
        ra = " ".join(clean_cell(r).casefold().split())
        rb = " ".join(clean_cell(gold).casefold().split())
        if abs(len(ra) - len(rb)) <= max(2, len(rb) // 10) and fuzz.token_sort_ratio(ra, rb) >= 92:
            return 1.0
    return 0.0
