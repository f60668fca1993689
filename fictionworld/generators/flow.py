"""What one generator hands the next, typed.

Generators run in causal order (``after=`` in the registry) and pass on only what a later
generator reads; everything else goes straight into the world through ``GenContext``::

    places-v0 ──Cities──▶ people-v0 ──People──▶ companies / universities / publishers / teams
                                                 │ Companies, Founded (then staff, students
                                                 │ and players, per block of people)
                                                 ▼
                              books / films / albums / products ──Released──▶ awards, events

All columns are indexed by the type-local index (row ``i`` is entity ``i`` of that type). A
block task (fictionworld/generators/blocks.py) reads every type whole here, and hands on its own block's
rows, which the run joins in block order before the next generator starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from fictionworld.dates import NA_DATE

__all__ = ["Cities", "People", "Founded", "Companies", "Released", "Flow", "need"]

T = TypeVar("T")


@dataclass(frozen=True)
class Cities:
    """places-v0 → people, organisations, events: where someone or something can be."""

    country: npt.NDArray[np.int64]  # local index of the city's country
    culture: npt.NDArray[np.int64]  # index into morphology.CULTURES (the country's culture)
    population: npt.NDArray[np.int64]  # also the weight for placing people and organisations
    names: npt.NDArray[np.object_]  # the city's name (before namesakes): universities, teams, events


@dataclass(frozen=True)
class People:
    """people-v0 → organisations, works, awards, events: who lived when, doing what."""

    birth: npt.NDArray[np.int32]  # day number
    death: npt.NDArray[np.int32]  # day number, NA_DATE while alive
    occupation: npt.NDArray[np.int64]  # index into schema.OCCUPATIONS
    culture: npt.NDArray[np.int64]  # index into morphology.CULTURES (of the birth city)

    def alive_to(self, present: int) -> npt.NDArray[np.int64]:
        """Last day each person is alive in the world: death, else the present."""
        return np.where(self.death == NA_DATE, present, self.death).astype(np.int64)


@dataclass(frozen=True)
class Founded:
    """An organisation type → whatever needs an organisation that already existed then."""

    founded: npt.NDArray[np.int32]  # day number
    size: npt.NDArray[np.int64] | None = field(default=None, kw_only=True)  # members are drawn by it


@dataclass(frozen=True)
class Companies(Founded):
    """companies-v0 → films, albums, products, awards, events."""

    stem: npt.NDArray[np.object_]  # invented word at the root of the name: a product's brand


@dataclass(frozen=True)
class Released:
    """books-v0 / films-v0 / albums-v0 → awards: when each work came out."""

    date: npt.NDArray[np.int64]  # day number of publication / release


@dataclass
class Flow:
    """The hand-offs of one generation run; a slot stays None until its generator has run,
    and for good when its type is not in the world."""

    cities: Cities | None = None  # places-v0
    people: People | None = None  # people-v0
    companies: Companies | None = None  # companies-v0
    universities: Founded | None = None  # universities-v1
    publishers: Founded | None = None  # publishers-v0
    teams: Founded | None = None  # sports-teams-v0
    books: Released | None = None  # books-v0
    films: Released | None = None  # films-v0
    albums: Released | None = None  # albums-v0

    def founded(self, org_type: str) -> Founded:
        """The founding dates of ``org_type`` ("company", "university" or "publisher")."""
        slots = {
            "company": self.companies,
            "university": self.universities,
            "publisher": self.publishers,
            "sports_team": self.teams,
        }
        return need(slots[org_type], org_type)

    def released(self, work_type: str) -> Released:
        """The release dates of ``work_type`` ("book", "film" or "album")."""
        return need({"book": self.books, "film": self.films, "album": self.albums}[work_type], work_type)


def need(value: T | None, type_name: str) -> T:
    """``value``, which a generator needs: its producer must have run (the type must be in the
    spec, and the reader registered ``after`` it)."""
    if value is None:
        raise KeyError(f"{type_name!r}: needed here, but no generator has produced it in this world")
    return value
