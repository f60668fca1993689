"""Grounding: what the graph says a page or a result should state, in checkable form.

A :class:`Grounding` lists the page's required facts as :class:`Claim` objects (subject, predicate,
value or object, dates), the entities it may mention and the values it may state. Prompts show
it to the LLM; :mod:`fictionworld.worldmodel.verify` checks the LLM's text against it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from fictionworld.dates import NA_DATE, from_days
from fictionworld.schema import PREDICATES, RELATIONS, DType
from fictionworld.surface import format_date
from fictionworld.web.text import DTYPE

__all__ = ["Claim", "Grounding", "FactIndex"]


@dataclass(frozen=True)
class Claim:
    """One fact a page must state."""

    fact_id: int
    subject: int  # entity row
    predicate: str
    dtype: str  # "relation", "date", "int", "float" or "text"
    value: object  # date, int, float or str; for a relation the object's name
    obj: int = -1  # object entity row of a relation
    dates: tuple[dt.date, ...] = ()  # start / end of a temporal relation

    def describe(self, names: list[str]) -> str:
        """The claim as one line of a prompt: ``Mara Quill | birth_date | March 3, 1950``."""
        v = format_date(self.value) if isinstance(self.value, dt.date) else self.value
        if isinstance(v, float):
            v = f"{v:g}" if abs(v) < 1e15 else str(v)
        line = f"{names[self.subject]} | {self.predicate} | {v}"
        if self.dates:
            line += " | " + " to ".join(format_date(d) for d in self.dates)
        return line


@dataclass
class Grounding:
    """What one page (or one search result) should say, from the graph."""

    url: str
    title: str
    kind: str
    site: str
    published: dt.date
    subject: int  # the page's main entity row, -1 for none
    claims: list[Claim]
    entities: frozenset[int]  # entity rows the page may mention
    links: dict[int, str] = field(default_factory=dict)  # entity row -> its article URL
    dates: frozenset[dt.date] = frozenset()  # every date the page may state
    numbers: frozenset[float] = frozenset()  # every number the page may state
    texts: tuple[str, ...] = ()  # text values (websites, ISBNs, genres) of the entities


class FactIndex:
    """Per world: facts by id and by subject, with their values, for building groundings."""

    def __init__(self, world):
        self.world = world
        f = world.facts
        self.ids = f.id
        order = np.argsort(f.subject, kind="stable")
        self._by_subject = order
        self._subject_start = np.searchsorted(f.subject[order], np.arange(len(world.entities) + 1))
        self.names: list[str] = world.entities.name.tolist()

    def rows_of(self, fact_ids) -> np.ndarray:
        ids = np.asarray(list(fact_ids), np.int64)
        rows = np.searchsorted(self.ids, ids)
        ok = (rows < len(self.ids)) & (self.ids[np.minimum(rows, len(self.ids) - 1)] == ids)
        return rows[ok]

    def rows_about(self, entity: int) -> np.ndarray:
        return self._by_subject[self._subject_start[entity] : self._subject_start[entity + 1]]

    def value(self, row: int):
        return self.world.fact(row).value

    def claim(self, row: int) -> Claim:
        f = self.world.facts
        p = PREDICATES[int(f.predicate[row])]
        s, o = int(f.subject[row]), int(f.object[row])
        if p in RELATIONS:
            dates = tuple(from_days(int(x)) for x in (f.start[row], f.end[row]) if x != NA_DATE)
            return Claim(int(f.id[row]), s, p, "relation", self.names[o], o, dates)
        dtype = DTYPE[p]
        kind = {DType.DATE: "date", DType.INT: "int", DType.FLOAT: "float"}.get(dtype, "text")
        return Claim(int(f.id[row]), s, p, kind, self.value(row))

    @cached_property
    def _dates_numbers(self) -> tuple[list, list, list]:
        """Per entity row: the dates, numbers and text values of its own facts (attributes and relation dates)."""
        f = self.world.facts
        n = len(self.world.entities)
        dates: list[set] = [set() for _ in range(n)]
        numbers: list[set] = [set() for _ in range(n)]
        texts: list[set] = [set() for _ in range(n)]
        subj = f.subject.tolist()
        for col in (f.start, f.end):  # when a fact held: dates on the page too
            idx = np.flatnonzero(col != NA_DATE)
            for i, v in zip(idx.tolist(), col[idx].tolist()):
                dates[subj[i]].add(from_days(v))
        for s, v in zip(subj, f.values()):
            if v is None:
                continue
            if isinstance(v, dt.date):
                dates[s].add(v)
            elif isinstance(v, str):
                texts[s].add(v)
            else:
                numbers[s].add(float(v))
        return dates, numbers, texts

    def grounding(self, web, row: int) -> Grounding:
        """The grounding of page ``row`` of ``web``: its recorded facts, entities and values."""
        p = web.pages
        fact_rows = self.rows_of(p.column("fact_ids", row))
        claims = [self.claim(int(r)) for r in fact_rows.tolist()]
        if p.kind[row] == "list":  # a directory names its members, not the dates of their relation
            claims = [dataclasses.replace(c, dates=()) for c in claims]
        entities = set(p.column("entity_rows", row))
        main = int(p.entity[row])
        if main >= 0:
            entities.add(main)
        for c in claims:
            entities.add(c.subject)
            if c.obj >= 0:
                entities.add(c.obj)
        dates_of, numbers_of, texts_of = self._dates_numbers
        dates = {from_days(int(p.published[row]))}
        numbers: set[float] = set()
        texts: set[str] = set()
        for e in entities:
            dates |= dates_of[e]
            numbers |= numbers_of[e]
            texts |= texts_of[e]
        for c in claims:
            dates.update(c.dates)
        links = {e: web.article_url_of(web.entity_ids[e]) for e in sorted(entities)}
        return Grounding(
            url=p.urls[row],
            title=p.titles[row],
            kind=str(p.kind[row]),
            site=p.column("site", row),
            published=from_days(int(p.published[row])),
            subject=main,
            claims=claims,
            entities=frozenset(entities),
            links=links,
            dates=frozenset(dates),
            numbers=frozenset(numbers),
            texts=tuple(sorted(texts, key=lambda t: (-len(t), t))),
        )
