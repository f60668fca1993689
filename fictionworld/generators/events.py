"""Awards (with yearly winners) and events (held somewhere, organised, attended)."""

from __future__ import annotations

import numpy as np

from fictionworld.dates import year_end, year_start, years_of
from fictionworld.gazetteer import is_real_place
from fictionworld.generators import vocab
from fictionworld.generators.base import GenContext, pick_founded_before, register, sample_dates, weighted_choice, years
from fictionworld.generators.flow import need
from fictionworld.generators.morphology import CULTURES
from fictionworld.generators.naming import clean_stems
from fictionworld.generators.orgs import culture_names, pick_people
from fictionworld.schema import AWARD_FIELDS, EVENT_KINDS, WORKS_BY_FIELD
from fictionworld.tables import runs

PRESENTER = {"literature": "publisher", "science": "university"}  # others: company
WINNER_OCCUPATIONS = {
    "literature": ("writer",),
    "film": ("film director", "actor"),
    "music": ("musician",),
    "science": ("scientist", "engineer"),
    "business": ("entrepreneur", "economist"),
    "sport": ("athlete",),
}


@register(
    "awards-v0", produces=("award",), after=("person", "book", "film", "album", "company", "university", "publisher")
)
def generate_awards(ctx: GenContext) -> None:
    ctx.source = "awards-v0"
    n, present = ctx.span("award")[1], ctx.present
    r = ctx.rng("award/attributes")
    established = sample_dates(r, n, year_start(1900), min(year_end(2015), present), 1.2)
    field = r.integers(len(AWARD_FIELDS), size=n)
    culture = r.integers(len(CULTURES), size=n)
    rn = ctx.rng("award/names")

    def candidates(slots: np.ndarray, rnd: int) -> list[str]:
        stems = clean_stems(culture[slots], rn).tolist()
        u = rn.random(len(slots)).tolist()
        nouns = rn.integers(len(vocab.NOUNS), size=len(slots)).tolist()
        out = []
        for s, st, x, j in zip(slots.tolist(), stems, u, nouns):
            pats = vocab.AWARD_PATTERNS[AWARD_FIELDS[field[s]]]
            out.append(pats[int(x * 100) % len(pats)].format(s=st, n=vocab.NOUNS[j]))
        return out

    ctx.set_names("award", ctx.unique("award", candidates, n, reject=is_real_place), culture=culture_names(culture))
    ctx.set_attr("award", "established", established)
    ctx.set_attr("award", "field", np.array(AWARD_FIELDS, dtype=object)[field])
    _presenters(ctx, established, field)
    if ctx.has("person"):
        _winners(ctx, established, field)


def _presenters(ctx: GenContext, established: np.ndarray, field: np.ndarray) -> None:
    """Each award is presented by an organisation of its field's kind that existed already."""
    for org_type in ("publisher", "university", "company"):
        if not ctx.has(org_type):
            continue
        rp = ctx.rng(f"presented_by/{org_type}")  # one stream per optional type: no reshuffling
        mine = np.array([PRESENTER.get(AWARD_FIELDS[f], "company") == org_type for f in field.tolist()], bool)
        idx = np.flatnonzero(mine)
        org = pick_founded_before(rp, ctx.flow.founded(org_type).founded, established[idx])
        ctx.relate("presented_by", "award", idx, org_type, org)


def _winners(ctx: GenContext, established: np.ndarray, field: np.ndarray) -> None:
    rw = ctx.rng("won")
    first_year = years_of(established) + 1
    present_year = int(years_of(np.array([ctx.present]))[0])
    span = np.maximum(present_year - first_year + 1, 0)
    award, offset = runs(np.zeros(len(span), np.int64), span)
    year = first_year[award] + offset
    held = rw.random(len(award)) < 0.5
    award, year = award[held], year[held]
    date = np.array([year_start(y) for y in range(1900, present_year + 1)], np.int64)[year - 1900]
    date = np.minimum(date + rw.integers(0, 365, len(award)), ctx.present)
    f = field[award]
    for fi, fname in enumerate(AWARD_FIELDS):
        rw = ctx.rng(f"won/{fname}")  # per field, so adding a work type changes only its field
        sel = np.flatnonzero(f == fi)
        winner_person = pick_people(ctx, rw, WINNER_OCCUPATIONS[fname], date[sel], 18, 90)
        work_type = WORKS_BY_FIELD.get(fname)
        if work_type and ctx.has(work_type):
            released = ctx.flow.released(work_type).date
            order = np.argsort(released, kind="stable")
            rel_sorted = released[order]
            lo = np.searchsorted(rel_sorted, date[sel] - years(2), "left")
            hi = np.searchsorted(rel_sorted, date[sel], "right")
            k = lo + np.floor(rw.random(len(sel)) * (hi - lo)).astype(np.int64)
            use_work = (hi > lo) & (rw.random(len(sel)) < 0.65)
            work = np.where(use_work, order[np.minimum(k, len(order) - 1)], -1)
            ctx.relate("won", work_type, work, "award", award[sel], start=date[sel])
            winner_person = np.where(use_work, -1, winner_person)
        ctx.relate("won", "person", winner_person, "award", award[sel], start=date[sel])


@register("events-v0", produces=("event",), after=("person", "company", "university", "city"))
def generate_events(ctx: GenContext) -> None:
    ctx.source = "events-v0"
    n, present = ctx.span("event")[1], ctx.present
    r = ctx.rng("event/attributes")
    start = sample_dates(r, n, year_start(1950), present - 12, 1.5).astype(np.int64)
    end = np.minimum(start + r.integers(0, 10, n), present)
    kind = r.integers(len(EVENT_KINDS), size=n)
    attendance = np.exp(r.normal(np.log(3_000), 1.4, n)).clip(30, 2_000_000).astype(np.int64)
    city = weighted_choice(ctx.rng("held_in"), need(ctx.flow.cities, "city").population, n)
    _name_events(ctx, start, kind, city)
    ctx.set_attr("event", "start_date", start.astype(np.int32))
    ctx.set_attr("event", "end_date", end.astype(np.int32))
    ctx.set_attr("event", "kind", np.array(EVENT_KINDS, dtype=object)[kind])
    ctx.set_attr("event", "attendance", attendance)
    ctx.relate("held_in", "event", np.arange(n), "city", city)
    _organisers(ctx, start)
    if ctx.has("person"):
        _participants(ctx, start)


def _name_events(ctx: GenContext, start: np.ndarray, kind: np.ndarray, city: np.ndarray) -> None:
    """Names like "<place> <kind title> <year>": the host city first, else an invented place."""
    city_names = need(ctx.flow.cities, "city").names
    culture = need(ctx.flow.cities, "city").culture[city]
    yr = years_of(start)
    rn = ctx.rng("event/names")

    def candidates(slots: np.ndarray, rnd: int) -> list[str]:
        stems = clean_stems(culture[slots], rn).tolist()
        out = []
        for s, st, u in zip(slots.tolist(), stems, rn.random(len(slots)).tolist()):
            title = vocab.EVENT_TITLES[EVENT_KINDS[kind[s]]]
            place = city_names[city[s]] if (rnd == 0 and u < 0.6) else st
            out.append(f"{place} {title} {yr[s]}")
        return out

    ctx.set_names("event", ctx.unique("event", candidates, len(start)), culture=culture_names(culture))


def _organisers(ctx: GenContext, start: np.ndarray) -> None:
    """Most events are organised by a company or university that existed when they began."""
    n = len(start)
    by_university = ctx.rng("organized_by").random(n) < 0.3
    for org_type, mask in (("company", ~by_university), ("university", by_university)):
        if ctx.has(org_type):
            ro = ctx.rng(f"organized_by/{org_type}")
            idx = np.flatnonzero(mask & (ro.random(n) < 0.75))
            org = pick_founded_before(ro, ctx.flow.founded(org_type).founded, start[idx])
            ctx.relate("organized_by", "event", idx, org_type, org)


def _participants(ctx: GenContext, start: np.ndarray) -> None:
    """One to four adults alive at the start take part in each event."""
    n = len(start)
    rp = ctx.rng("participated_in")
    k = rp.integers(1, 5, size=n)
    ev = np.repeat(np.arange(n), k)
    who = pick_people(ctx, rp, (), start[ev], 18, 85)
    pairs = np.unique(np.stack([ev, who], 1)[who >= 0], axis=0)
    ctx.relate("participated_in", "person", pairs[:, 1], "event", pairs[:, 0])
