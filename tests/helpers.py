"""Helpers to plant violations into a valid world (tests only)."""

from __future__ import annotations

import datetime as dt

import numpy as np

from fictionworld.dates import NA_DATE, to_days
from fictionworld.schema import PREDICATE_CODE
from fictionworld.tables import FactTable
from fictionworld.world import World


def rows(world: World, predicate: str) -> np.ndarray:
    return np.flatnonzero(world.facts.predicate == PREDICATE_CODE[predicate])


def add_fact(
    world: World,
    subject: str,
    predicate: str,
    obj: str | None = None,
    *,
    start: dt.date | None = None,
    end: dt.date | None = None,
    subject_row: int | None = None,
    predicate_code: int | None = None,
    **values,
) -> World:
    """Append one fact (ids are renumbered after the last)."""
    s = world.row(subject) if subject_row is None else subject_row
    o = None if obj is None else np.array([world.row(obj)])
    vals = {k: np.array([v]) for k, v in values.items()}
    if "v_date" in vals:
        vals["v_date"] = np.array([to_days(values["v_date"])], np.int32)
    part = FactTable.build(
        np.array([s]),
        PREDICATE_CODE[predicate] if predicate_code is None else predicate_code,
        obj=o,
        start=None if start is None else np.array([to_days(start)]),
        end=None if end is None else np.array([to_days(end)]),
        sources=("planted",),
        **vals,
    )
    return world.replace(facts=world.facts.append(part))


def drop_facts(world: World, fact_rows) -> World:
    keep = np.ones(len(world.facts), bool)
    keep[np.asarray(fact_rows)] = False
    return world.replace(facts=world.facts.take(np.flatnonzero(keep)))


def set_column(world: World, column: str, row: int, value) -> World:
    col = getattr(world.facts, column).copy()
    if column in ("v_date", "start", "end") and isinstance(value, dt.date):
        value = to_days(value)
    col[row] = value
    return world.replace(facts=world.facts.with_values(**{column: col}))


def rename(world: World, entity: str, name: str) -> World:
    names = world.entities.name.copy()
    names[world.row(entity)] = name
    return world.replace(entities=world.entities.with_values(name=names))


def fact_row(world: World, subject: str, predicate: str) -> int:
    f = world.facts
    m = (f.subject == world.row(subject)) & (f.predicate == PREDICATE_CODE[predicate])
    return int(np.flatnonzero(m)[0])


def first_dead_person(world: World) -> str:
    r = rows(world, "death_date")[0]
    return world.entities.ids[world.facts.subject[r]]


NA = NA_DATE
