"""Surface forms of values: the ways pages write numbers, quantities, money and dates, and the
parsers that read every one of them back.

Pages vary their formats ("1,200 employees", "1.2 thousand staff", "March 14, 1987",
"1987-03-14") so that agents must read rather than pattern-match one layout; everything written
here is lossless, so the scorer and the agents can recover the exact value with
:func:`extract_numbers` and :func:`extract_dates`.

>>> format_int(1200, 2)
'1.2 thousand'
>>> extract_numbers("about 1.2 thousand staff and $3,450,000 in revenue")
[1200.0, 3450000.0]
>>> import datetime as dt
>>> extract_dates("founded on 14 March 1987") == [dt.date(1987, 3, 14)]
True
"""

from __future__ import annotations

import datetime as dt
import re

__all__ = [
    "format_int",
    "format_float",
    "format_money",
    "format_date",
    "format_serp_date",
    "extract_numbers",
    "extract_dates",
    "find_numbers",
    "find_dates",
    "INT_FORMATS",
    "DATE_FORMATS",
]

MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_MONTH_NUMBER = {m.lower(): i + 1 for i, m in enumerate(MONTHS)} | {m[:3].lower(): i + 1 for i, m in enumerate(MONTHS)}
_MAGNITUDES = (("billion", 1_000_000_000), ("million", 1_000_000), ("thousand", 1_000))
INT_FORMATS = 3  # grouped, plain, words (words only when lossless)
DATE_FORMATS = 4


def format_int(v: int, variant: int = 0) -> str:
    """0: "1,234,567"; 1: "1234567"; 2: "1.23 million" when that is exact, else grouped."""
    v = int(v)
    variant %= INT_FORMATS
    if variant == 1:
        return str(v)
    if variant == 2:
        for word, size in _MAGNITUDES:
            if size <= abs(v) < size * 1000 and (v * 100) % size == 0:
                q = v / size
                return f"{q:.2f}".rstrip("0").rstrip(".") + f" {word}"
    return f"{v:,}"


def format_float(v: float, decimals: int, variant: int = 0) -> str:
    """Grouped ("1,234.5") or plain ("1234.5"), trailing zeros kept to ``decimals`` places."""
    return f"{v:,.{decimals}f}" if variant % 2 == 0 else f"{v:.{decimals}f}"


def format_money(v: float, variant: int = 0, *, cents: bool = False) -> str:
    """ "$1,234,567", "US$1.2 million" (exact only), "1,234,567 USD"; ``cents`` keeps 2 decimals."""
    variant %= 3
    if cents:
        body = f"{v:,.2f}"
        return f"{body} USD" if variant == 2 else f"${body}"
    if variant == 1:
        words = format_int(int(v), 2)
        if not words[0].isdigit() or "," not in words:
            return f"US${words}"
    body = f"{int(v):,}"
    return f"{body} USD" if variant == 2 else f"${body}"


def format_date(d: dt.date, variant: int = 0) -> str:
    """0: "March 14, 1987"; 1: "14 March 1987"; 2: "1987-03-14"; 3: "Mar 14, 1987"."""
    variant %= DATE_FORMATS
    m = MONTHS[d.month - 1]
    if variant == 1:
        return f"{d.day} {m} {d.year}"
    if variant == 2:
        return d.isoformat()
    if variant == 3:
        return f"{m[:3]} {d.day}, {d.year}"
    return f"{m} {d.day}, {d.year}"


def format_serp_date(d: dt.date) -> str:
    """The result-list date format agents know: "Mon D, YYYY"."""
    return format_date(d, 3)


_NUMBER = re.compile(
    r"(?<![\w.\-−])(?P<sign>[-−](?=\d))?(?:US)?\$?(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?:\s*(thousand|million|billion)\b)?",
    re.IGNORECASE,
)


def extract_numbers(text: str) -> list[float]:
    """Every number written in ``text``, in order, as floats ("1,234" → 1234.0, "1.2 thousand"
    → 1200.0, "$3.5 million" → 3500000.0). Parts of ISO dates come back as numbers too."""
    return [v for v, _ in find_numbers(text)]


def find_numbers(text: str) -> list[tuple[float, str]]:
    """Like :func:`extract_numbers`, with the text each number was read from."""
    out = []
    for m in _NUMBER.finditer(text):
        v = float(m.group(2).replace(",", "") + (m.group(3) or ""))
        if m.group(4):
            v = round(v * dict(_MAGNITUDES)[m.group(4).lower()], 6)
        if m.group("sign"):
            v = -v
        out.append((v, m.group(0)))
    return out


_MONTH_RE = "|".join(sorted(_MONTH_NUMBER, key=len, reverse=True))
_DATES = re.compile(
    rf"(?P<iso>\b\d{{4}}-\d{{2}}-\d{{2}}\b)"
    rf"|(?P<mdy>\b(?P<m1>{_MONTH_RE})\.? (?P<d1>\d{{1,2}}), (?P<y1>\d{{1,4}})\b)"
    rf"|(?P<dmy>\b(?P<d2>\d{{1,2}}) (?P<m2>{_MONTH_RE}) (?P<y2>\d{{1,4}})\b)",
    re.IGNORECASE,
)


def extract_dates(text: str) -> list[dt.date]:
    """Every full date written in ``text`` in one of the page formats, in order."""
    return [d for d, _ in find_dates(text)]


def find_dates(text: str) -> list[tuple[dt.date, str]]:
    """Like :func:`extract_dates`, with the text each date was read from."""
    out = []
    for m in _DATES.finditer(text):
        try:
            if m.group("iso"):
                d = dt.date.fromisoformat(m.group("iso"))
            elif m.group("mdy"):
                d = dt.date(int(m.group("y1")), _MONTH_NUMBER[m.group("m1").lower()], int(m.group("d1")))
            else:
                d = dt.date(int(m.group("y2")), _MONTH_NUMBER[m.group("m2").lower()], int(m.group("d2")))
        except ValueError:  # "February 30, 1990" in free text is not a date
            continue
        out.append((d, m.group(0)))
    return out
