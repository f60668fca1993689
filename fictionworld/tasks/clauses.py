"""Natural language for queries: columns as headers, ranges in words, blurred ranges (the clauses
themselves, with their paraphrases: :mod:`fictionworld.tasks.grammar`)."""

from __future__ import annotations

import math

from fictionworld.schema import DType
from fictionworld.tasks.phrasing import ATTR_NOUN, DATE_VERB, HOP_NOUN
from fictionworld.tasks.query import Column, attribute_dtype, type_of_path

__all__ = ["header", "nice_range", "year_range", "describe_range"]

_PLACE_WORDS = ("city", "region", "country")


def _num(v: float) -> str:
    return f"{int(v):,}" if float(v).is_integer() else f"{v:,}"


def describe_range(attribute: str, lo: float | None, hi: float | None, variant: int = 0) -> str:
    """ "founded between 1990 and 1999", "whose population is between 1,000,000 and 2,000,000";
    ``variant`` 1 writes a span as "from … to …"."""
    if attribute_dtype(attribute) == DType.DATE:
        verb = DATE_VERB.get(attribute, f"with a {ATTR_NOUN[attribute]}")
        lo_i, hi_i = (None if lo is None else int(lo)), (None if hi is None else int(hi))
        if lo_i is not None and lo_i == hi_i:
            return f"{verb} in {lo_i}"
        if lo_i is not None and hi_i is not None and lo_i % 10 == 0 and hi_i == lo_i + 9:
            return f"{verb} in the {lo_i}s"
        if lo_i is not None and hi_i is not None and lo_i % 100 == 1 and hi_i == lo_i + 99:
            return f"{verb} in the {_ordinal(lo_i // 100 + 1)} century"
        if hi_i is None:
            return f"{verb} in {lo_i} or later"
        if lo_i is None:
            return f"{verb} in {hi_i} or earlier"
        return f"{verb} from {lo_i} to {hi_i}" if variant else f"{verb} between {lo_i} and {hi_i}"
    noun = ATTR_NOUN[attribute]
    if hi is None:
        return f"whose {noun} is at least {_num(lo)}"
    if lo is None:
        return f"whose {noun} is at most {_num(hi)}"
    if variant:
        return f"whose {noun} is from {_num(lo)} to {_num(hi)}"
    return f"whose {noun} is between {_num(lo)} and {_num(hi)}"


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def header(row_type: str, col: Column) -> str:
    """A column header: "Founding date", "Headquarters country", "Director date of birth"."""
    noun = ""
    t = row_type
    for hop in col.path:
        t = type_of_path(t, (hop,))
        if hop.predicate in ("located_in", "capital") and noun:
            words = noun.split()
            if words[-1] in _PLACE_WORDS:
                words = words[:-1]
            noun = " ".join([*words, t if hop.predicate == "located_in" else "capital"])
        else:
            word = "author" if hop.inverse else HOP_NOUN.get(hop.predicate, hop.predicate.replace("_", " "))
            noun = f"{noun} {word}".strip()
    if col.attribute is not None:
        attr = ATTR_NOUN[col.attribute]
        if col.format == "year":
            attr = attr.replace("date of ", "year of ").replace(" date", " year")
            if "year" not in attr:
                attr += " (year)"
        noun = f"{noun} {attr}".strip()
    return noun[:1].upper() + noun[1:]


def nice_range(v: float, width: int) -> tuple[float, float]:
    """A round interval containing ``v``: ``width`` 0 is tight (2 significant digits), 1 a half
    order of magnitude, 2 a whole one (1 significant digit)."""
    if v <= 0:
        return (0.0, 10.0)
    mag = 10 ** math.floor(math.log10(v))
    step = (mag / 10, mag / 2, mag)[min(width, 2)]
    if step < 1 and float(v).is_integer():
        step = 1.0
    lo = math.floor(v / step) * step
    return (float(lo), float(lo + step))


def year_range(year: int, width: int) -> tuple[int, int]:
    """0: the year; 1: its decade; 2: its century (1901–2000 style)."""
    if width <= 0:
        return (year, year)
    if width == 1:
        lo = year - year % 10
        return (lo, lo + 9)
    lo = ((year - 1) // 100) * 100 + 1
    return (lo, lo + 99)
