"""Cell preprocessors and metrics, in two flavours.

``Official``: the behaviour of the WideSearch evaluator's ``metric_utils`` (reimplemented from
its documented behaviour, quirks included: both-sides-missing scores 1, dates parsed with
``dateparser`` relative to a reference "today", the first number in a cell wins).

``Strict``: the cell cleaning and normalisation the strict scorer builds on (Markdown and
inline HTML removed, compatibility-normalised keys, URL hosts without "www."); reading one
number, date or name out of a cell is in :mod:`fictionworld.scoring.cells`.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache, wraps
from urllib.parse import urlparse

__all__ = [
    "Official",
    "clean_cell",
    "strict_norm",
    "strict_hosts",
]

# -- official semantics ---------------------------------------------------------------------
_OFF_NUMBER = re.compile(r"[-+]?\d*\.\d+%?|[-+]?\d+\.?\d*%?")
_OFF_URL = re.compile(r"http[s]?://(?:[a-zA-Z]|[0-9]|[$-_@.&+]|[!*\(\),]|(?:%[0-9a-fA-F][0-9a-fA-F]))+")


class Official:
    """The official metric functions; dates are parsed relative to ``today``, by ``dateparser``
    with :attr:`date_settings`, or by ``parse_date`` (a function of one cell) where given."""

    def __init__(self, today: dt.date, parse_date: Callable[[str], dt.datetime | None] | None = None):
        self.today = dt.datetime(today.year, today.month, today.day)
        self.date_settings = {"PREFER_DAY_OF_MONTH": "first", "RELATIVE_BASE": self.today}
        self.parse_date = parse_date

    @staticmethod
    def norm_str(x) -> str:
        return str(x).lower().strip().replace(" ", "").replace("*", "")

    @staticmethod
    def extract_number(x) -> str:
        found = _OFF_NUMBER.findall(str(x).replace(",", ""))
        return found[0] if found else "NULL"

    def _parse_date(self, x):
        if self.parse_date is not None:
            return self.parse_date(x)
        import dateparser

        return dateparser.parse(x, settings=self.date_settings)

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
# Every pattern is bounded (no unbounded scan per start position), so cleaning stays linear in
# the cell's length whatever markup an answer piles up.
_LINK = re.compile(r"\[([^\]\n]{0,500})\]\(([^)\s]{0,2000})\)")
_MARKUP = re.compile(r"(\*\*|__|\*|`)")
_BR = re.compile(r"<br\s{0,5}/?>", re.IGNORECASE)
_STRUCK = re.compile(r"~~[^~]{0,500}~~|<(s|del|strike)\b[^>]{0,200}>.{0,500}?</\1\s*>", re.IGNORECASE | re.DOTALL)
_CITATION = re.compile(r"\[\^?\d{1,3}\]|【[^】]{0,20}】|<sup>\s{0,3}\[?\^?\d{1,3}\]?\s{0,3}</sup>", re.IGNORECASE)
_HTML_LINK = re.compile(
    r"<a\b[^>]{0,200}?href\s*=\s*[\"']?([^\"'\s>]{0,2000})[^>]{0,200}>(.{0,500}?)</a\s*>", re.IGNORECASE | re.DOTALL
)
_TAG = re.compile(r"</?(?:b|i|em|strong|u|ins|mark|small|big|sup|sub|span|code|tt|font|a|p|div)\b[^>]{0,200}>", re.I)
_UNDERSCORE_ITALIC = re.compile(r"(?<![\w_])_(?=[^\s_])([^_\n]{1,500}?)(?<=[^\s_])_(?![\w_])")
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!~<>|])")
_QUOTES = "\"'“”‘’«»"


_STRIP = _QUOTES + ".;,:"
_SPECIAL = frozenset("*_`[<~\"'“”‘’«»\\【")


def short_cache(maxsize: int = 1 << 16, longest: int = 256):
    """``lru_cache`` for functions of a string (and positional arguments) that keeps only strings
    of up to ``longest`` characters: cells repeat across the rollouts of a task, long junk does
    not and would only fill memory."""

    def wrap(f):
        cached = lru_cache(maxsize=maxsize)(f)

        @wraps(f)
        def call(s, *args):
            return cached(s, *args) if s.__class__ is str and len(s) <= longest else f(s, *args)

        call.cache_clear = cached.cache_clear
        call.cache_info = cached.cache_info
        return call

    return wrap


@short_cache()
def clean_cell(s: str, keep_urls: bool = False) -> str:
    """A cell without Markdown or inline HTML: links become their text (or text and URL),
    bold/italic (``**``, ``*``, ``__``, ``_``, ``<b>``, ``<i>``, ``<em>``, ``<strong>``…) and code
    marks, Markdown escapes and ``<br>`` go; struck-out text (``~~…~~``, ``<s>``, ``<del>``) and
    citation marks (``[1]``, ``[^1]``, ``【1】``, ``<sup>1</sup>``) go with their content;
    surrounding quotes go, whitespace collapses."""
    s = str(s)
    if _SPECIAL.isdisjoint(s):
        return " ".join(s.split())
    if "\\" in s:
        s = _ESCAPE.sub(r"\1", s)
    s = _BR.sub(" ", s)
    s = _STRUCK.sub(" ", s)
    s = _CITATION.sub(" ", s)
    if "<" in s:
        s = _HTML_LINK.sub((lambda m: f"{m.group(2)} {m.group(1)}") if keep_urls else (lambda m: m.group(2)), s)
        s = _TAG.sub("", s)
    s = _LINK.sub((lambda m: f"{m.group(1)} {m.group(2)}") if keep_urls else (lambda m: m.group(1)), s)
    s = _MARKUP.sub("", s)
    if "_" in s:
        s = _UNDERSCORE_ITALIC.sub(r"\1", s)
    s = " ".join(s.split())
    while len(s) >= 2 and s[0] in _QUOTES and s[-1] in _QUOTES:
        s = s[1:-1].strip()
    return s


@short_cache()
def strict_norm(s: str) -> str:
    """Compatibility-normalised, case-folded, without whitespace, stray quotes or a final
    full stop: "  **Acme  Corp.** " and "acme corp" agree."""
    s = clean_cell(s)
    s = s.lower() if s.isascii() else unicodedata.normalize("NFKC", s).casefold()
    return s.replace(" ", "").strip(_STRIP)


_URL = re.compile(r"(?:https?://|www\.)[^\s<>|\"'\]\)]+|\b(?:[a-z0-9-]+\.)+[a-z]{2,}\b(?:/[^\s<>|\"'\]\)]*)?", re.I)


_HOST_END = re.compile(r"[/?#\\]")


@short_cache()
def strict_hosts(s: str) -> frozenset[str]:
    """Host names of the URLs (or bare domains) in a cell, lower case, without "www." or port."""
    out = set()
    for u in _URL.findall(clean_cell(s, True)):
        host = _HOST_END.split(u.split("://", 1)[-1], 1)[0].rsplit("@", 1)[-1]
        host = host.split(":", 1)[0].rstrip(".,;:").lower()
        if host.startswith("www."):
            host = host[4:]
        if "." in host:
            out.add(host)
    return frozenset(out)
