"""Organisations: companies (founders, CEOs, staff, acquisitions), universities (students),
publishers and sports teams (players)."""

from __future__ import annotations

import numpy as np

from fictionworld.dates import NA_DATE, year_end, year_start
from fictionworld.gazetteer import is_real_place
from fictionworld.schema import INDUSTRIES, OCCUPATIONS, SPORTS, UNIVERSITY_KINDS
from fictionworld.tables import object_array
from generators import vocab
from generators.base import (
    AlivePicker,
    GenContext,
    clean_stems,
    pick_founded_before,
    register,
    sample_dates,
    slug,
    unique_names,
    weighted_choice,
    years,
)

NA = int(NA_DATE)


def people_picker(ctx: GenContext, occupations: tuple[str, ...] = ()) -> AlivePicker:
    p = ctx["person"].extra
    pool = np.arange(ctx.counts["person"])
    if occupations:
        codes = [OCCUPATIONS.index(o) for o in occupations]
        pool = pool[np.isin(p["occupation"], codes)]
    return AlivePicker(p["birth"], p["death"], pool, ctx.present)


def pick_people(ctx: GenContext, rng, occupations, when, min_age, max_age, until=None) -> np.ndarray:
    """People of the given occupations (falling back to anyone) alive and of age at ``when``."""
    out = people_picker(ctx, occupations).pick(rng, when, min_age, max_age, until)
    miss = np.flatnonzero(out < 0)
    if len(miss) and occupations:
        u = None if until is None else np.asarray(until)[miss]
        out[miss] = people_picker(ctx).pick(rng, np.asarray(when)[miss], min_age, max_age, u)
    return out


def alive_to(ctx: GenContext) -> np.ndarray:
    death = ctx["person"].extra["death"]
    return np.where(death == NA_DATE, ctx.present, death).astype(np.int64)


def bounded_interval(
    start: np.ndarray, end: np.ndarray, person_end: np.ndarray, death: np.ndarray, present: int
) -> np.ndarray:
    """Clip an interval end to the person's life: ongoing (NA) if still running at present."""
    end = np.minimum(end, person_end)
    ongoing = (end >= present) & (death == NA_DATE)
    return np.where(ongoing, NA, end).astype(np.int32)


def successive_stints(
    ctx: GenContext,
    rng,
    who: np.ndarray,
    start: np.ndarray,
    founded: np.ndarray,
    *,
    lead: int,
    duration: tuple[float, float],
    again: float,
    gap: tuple[float, float],
):
    """Up to two non-overlapping stints per person (study, a playing career) at organisations
    that existed when each stint began; a stint starts at least ``lead`` days before the
    person's death / the present, lasts ``duration`` years, and a second one follows with
    probability ``again`` after a ``gap`` in years. Returns (people, orgs, starts, ends)."""
    p = ctx["person"].extra
    death, life_end, present = p["death"], alive_to(ctx), ctx.present
    subj, obj, starts, ends = [], [], [], []
    for _stint in range(2):
        ok = start + lead < np.minimum(life_end[who], present)
        who, start = who[ok], start[ok]
        org = pick_founded_before(rng, founded, start)
        ok = org >= 0
        who, start, org = who[ok], start[ok], org[ok]
        end = bounded_interval(
            start, start + years(rng.uniform(*duration, len(who))), life_end[who], death[who], present
        )
        subj.append(who), obj.append(org), starts.append(start), ends.append(end)
        more = (end != NA) & (rng.random(len(who)) < again)
        who, start = who[more], end[more].astype(np.int64) + years(rng.uniform(*gap, more.sum()))
    return np.concatenate(subj), np.concatenate(obj), np.concatenate(starts), np.concatenate(ends)


def org_names(ctx: GenContext, key: str, culture: np.ndarray, build) -> tuple[list[str], np.ndarray]:
    """Distinct names from invented stems (gazetteer-clean); returns names and their stems."""
    rng = ctx.rng(key)
    stems = np.empty(len(culture), dtype=object)

    def candidates(slots: np.ndarray, rnd: int) -> list[str]:
        s = clean_stems(culture[slots], rng)
        t = clean_stems(culture[slots], rng)
        stems[slots] = s
        return [
            build(a, b, u, slot)
            for a, b, u, slot in zip(s.tolist(), t.tolist(), rng.random(len(slots)).tolist(), slots.tolist())
        ]

    # the stems are clean, but a whole name can still spell a real place ("Gubad AG" ~ Gubadag)
    return unique_names(candidates, len(culture), reject=is_real_place), stems


def _pattern(patterns: tuple[str, ...], u: float, **kw: str) -> str:
    return patterns[int(u * 1000) % len(patterns)].format(**kw)


def _culture_of_cities(ctx: GenContext, cities: np.ndarray) -> np.ndarray:
    return ctx["city"].extra["culture"][cities]


@register("companies-v0", produces=("company",), after=("person", "city"))
def generate_companies(ctx: GenContext) -> None:
    ctx.source = "companies-v0"
    n, present = ctx.counts["company"], ctx.present
    r = ctx.rng("company/attributes")
    rf = ctx.rng("founded_by")
    founder = cofounder = np.full(n, -1, np.int64)
    if ctx.has("person"):
        founded = sample_dates(rf, n, year_start(1905), present - int(years(0.5)), recent_bias=1.8)
        founder = pick_people(ctx, rf, ("entrepreneur", "engineer", "scientist", "economist"), founded, 22, 65)
        cofounder = pick_people(ctx, rf, ("entrepreneur", "engineer"), founded, 22, 65)
        cofounder = np.where((rf.random(n) < 0.25) & (cofounder != founder), cofounder, -1)
    else:
        founded = sample_dates(rf, n, year_start(1820), present, recent_bias=1.5)
    hq = weighted_choice(ctx.rng("headquartered_in"), ctx["city"].extra["weight"], n)
    industry = r.integers(len(INDUSTRIES), size=n)
    age_years = (present - founded) / 365.2425
    employees = (np.exp(r.normal(np.log(60), 1.7, n)) * (1 + age_years / 40)).clip(1, 500_000).astype(np.int64)
    revenue = employees * np.exp(r.normal(np.log(150_000), 0.7, n)).clip(20_000, 2_000_000)
    revenue = revenue.clip(10_000, 500_000_000_000).astype(np.int64)

    def build(s, t, u, slot):
        if u < 0.7:
            return f"{s} {_pattern(vocab.COMPANY_SUFFIXES[INDUSTRIES[industry[slot]]], u * 7)}"
        if u < 0.9:
            return f"{s} {_pattern(vocab.COMPANY_FORMS, u * 3)}"
        return f"{s} & {t}"

    names, stems = org_names(ctx, "company/names", _culture_of_cities(ctx, hq), build)
    ctx.set_names(
        "company", names, aliases=[(s,) for s in stems.tolist()], culture=_culture_names(_culture_of_cities(ctx, hq))
    )
    ctx.set_attr("company", "founded", founded)
    ctx.set_attr("company", "industry", np.array(INDUSTRIES, dtype=object)[industry])
    ctx.set_attr("company", "employees", employees)
    ctx.set_attr("company", "revenue_usd", revenue)
    ctx.set_attr("company", "website", object_array([f"https://www.{slug(x)}.com" for x in names]))
    ctx["company"].extra.update(founded=founded, stem=stems, industry=industry)

    idx = np.arange(n)
    ctx.relate("headquartered_in", "company", idx, "city", hq)
    if ctx.has("person"):
        ctx.relate("founded_by", "company", np.r_[idx, idx], "person", np.r_[founder, cofounder])
        _ceos_and_staff(ctx, founded, founder)
    _acquisitions(ctx, founded)


def _ceos_and_staff(ctx: GenContext, founded: np.ndarray, founder: np.ndarray) -> None:
    n, present = len(founded), ctx.present
    p = ctx["person"].extra
    birth, death, life_end = p["birth"].astype(np.int64), p["death"], alive_to(ctx)
    rc = ctx.rng("ceo_of")
    k = 1 + rc.poisson((present - founded) / years(14)).clip(0, 5)
    comp = np.repeat(np.arange(n), k)
    first = np.r_[True, comp[1:] != comp[:-1]]
    u = np.where(first, 0.0, rc.random(len(comp)))
    order = np.lexsort((u, comp))
    comp, u, first = comp[order], u[order], first[order]
    f = founded[comp].astype(np.int64)
    seg_start = f + np.floor(u * (present - f)).astype(np.int64)
    last = np.r_[comp[1:] != comp[:-1], True]
    seg_end = np.where(last, present, np.r_[seg_start[1:], present])
    keep = seg_end > seg_start
    comp, seg_start, seg_end, first, last = comp[keep], seg_start[keep], seg_end[keep], first[keep], last[keep]
    fnd = founder[comp]
    founder_ok = first & (fnd >= 0)
    founder_ok &= np.where(fnd >= 0, life_end[np.maximum(fnd, 0)] > seg_end, False)
    ceo = np.where(founder_ok, fnd, -1)
    need = ceo < 0
    ceo[need] = people_picker(ctx).pick(rc, seg_start[need], 28, 68, until=seg_end[need])
    ok = ceo >= 0
    comp, ceo, seg_start, seg_end, last = comp[ok], ceo[ok], seg_start[ok], seg_end[ok], last[ok]
    ongoing = last & (death[ceo] == NA_DATE)
    ceo_end = np.where(ongoing, NA, seg_end).astype(np.int32)
    ctx.relate("ceo_of", "person", ceo, "company", comp, start=seg_start, end=ceo_end)
    # A chief executive is on the staff for (at least) the whole term.
    w_start = np.maximum.reduce(
        [founded[comp].astype(np.int64), seg_start - years(rc.uniform(0, 6, len(comp))), birth[ceo] + years(16) + 1]
    )
    w_start = np.minimum(w_start, seg_start)

    rw = ctx.rng("works_for")
    m = int(0.3 * len(birth))
    who = rw.integers(len(birth), size=m)
    start = birth[who] + years(rw.uniform(18, 50, m))
    ok = start + 30 < life_end[who]
    who, start = who[ok], start[ok]
    where = pick_founded_before(rw, founded, start)
    ok = where >= 0
    who, start, where = who[ok], start[ok], where[ok]
    end = bounded_interval(start, start + years(rw.exponential(7, len(who))) + 30, life_end[who], death[who], present)
    ctx.relate(
        "works_for",
        "person",
        np.r_[ceo, who],
        "company",
        np.r_[comp, where],
        start=np.r_[w_start, start],
        end=np.r_[ceo_end, end],
    )


def _acquisitions(ctx: GenContext, founded: np.ndarray) -> None:
    ra = ctx.rng("acquired_by")
    n = len(founded)
    targets = np.flatnonzero(ra.random(n) < 0.08)
    buyer = pick_founded_before(ra, founded, founded[targets].astype(np.int64) - 1)
    date = founded[targets].astype(np.int64) + years(ra.uniform(1, 40, len(targets)))
    ok = (buyer >= 0) & (date <= ctx.present)
    t, b, d = targets[ok], buyer[ok], date[ok]
    ctx.relate("acquired_by", "company", t, "company", b, start=d)
    ctx.relate("subsidiary_of", "company", t, "company", b, start=d)
    ctx.relate("has_subsidiary", "company", b, "company", t, start=d)


@register("universities-v0", produces=("university",), after=("person", "city"))
def generate_universities(ctx: GenContext) -> None:
    ctx.source = "universities-v0"
    n, present = ctx.counts["university"], ctx.present
    r = ctx.rng("university/attributes")
    hi = min(year_end(2005), present - int(years(5)))
    founded = (year_start(1150) + np.floor(r.beta(2.5, 1.2, n) * (hi - year_start(1150)))).astype(np.int32)
    city = weighted_choice(ctx.rng("university/located_in"), ctx["city"].extra["weight"], n)
    kind = r.integers(len(UNIVERSITY_KINDS), size=n)
    students = np.exp(r.normal(np.log(9_000), 0.9, n)).clip(300, 120_000).astype(np.int64)
    city_names = ctx["city"].names

    def build(s, t, u, slot):
        return _pattern(vocab.UNIVERSITY_PATTERNS[UNIVERSITY_KINDS[kind[slot]]], u, s=s, c=city_names[city[slot]])

    names, _ = org_names(ctx, "university/names", _culture_of_cities(ctx, city), build)
    aliases = [(a,) if len(a := "".join(w[0] for w in x.split() if w[0].isupper())) >= 2 else () for x in names]
    ctx.set_names("university", names, aliases=aliases, culture=_culture_names(_culture_of_cities(ctx, city)))
    ctx.set_attr("university", "founded", founded)
    ctx.set_attr("university", "students", students)
    ctx.set_attr("university", "kind", np.array(UNIVERSITY_KINDS, dtype=object)[kind])
    ctx.set_attr("university", "website", object_array([f"https://www.{slug(x)}.edu" for x in names]))
    ctx["university"].extra.update(founded=founded)
    ctx.relate("located_in", "university", np.arange(n), "city", city)

    if not ctx.has("person"):
        return
    rs = ctx.rng("studied_at")
    p = ctx["person"].extra
    birth = p["birth"].astype(np.int64)
    who = np.flatnonzero(rs.random(len(birth)) < 0.55)
    start = birth[who] + years(rs.uniform(17.5, 23, len(who)))
    subj, obj, starts, ends = successive_stints(
        ctx, rs, who, start, founded, lead=int(years(1)), duration=(3, 6), again=0.15, gap=(0.3, 4)
    )
    ctx.relate("studied_at", "person", subj, "university", obj, start=starts, end=ends)


@register("publishers-v0", produces=("publisher",), after=("city",))
def generate_publishers(ctx: GenContext) -> None:
    ctx.source = "publishers-v0"
    n = ctx.counts["publisher"]
    r = ctx.rng("publisher/attributes")
    hi = min(year_end(2015), ctx.present - int(years(1)))
    founded = (year_start(1750) + np.floor(r.beta(2.0, 1.3, n) * (hi - year_start(1750)))).astype(np.int32)
    hq = weighted_choice(ctx.rng("publisher/headquartered_in"), ctx["city"].extra["weight"], n)
    employees = np.exp(r.normal(np.log(40), 1.2, n)).clip(2, 15_000).astype(np.int64)

    def build(s, t, u, slot):
        return _pattern(vocab.PUBLISHER_PATTERNS, u, s=s, t=t)

    names, stems = org_names(ctx, "publisher/names", _culture_of_cities(ctx, hq), build)
    ctx.set_names(
        "publisher", names, aliases=[(s,) for s in stems.tolist()], culture=_culture_names(_culture_of_cities(ctx, hq))
    )
    ctx.set_attr("publisher", "founded", founded)
    ctx.set_attr("publisher", "employees", employees)
    ctx.set_attr("publisher", "website", object_array([f"https://www.{slug(x)}.com" for x in names]))
    ctx["publisher"].extra.update(founded=founded)
    ctx.relate("headquartered_in", "publisher", np.arange(n), "city", hq)


@register("sports-teams-v0", produces=("sports_team",), after=("person", "city"))
def generate_sports_teams(ctx: GenContext) -> None:
    ctx.source = "sports-teams-v0"
    n, present = ctx.counts["sports_team"], ctx.present
    r = ctx.rng("sports_team/attributes")
    founded = sample_dates(r, n, year_start(1870), min(year_end(2015), present - int(years(1))), recent_bias=1.3)
    sport = r.integers(len(SPORTS), size=n)
    capacity = np.exp(r.normal(np.log(12_000), 0.9, n)).clip(800, 100_000).astype(np.int64)
    city = weighted_choice(ctx.rng("based_in"), ctx["city"].extra["weight"], n)
    city_names = ctx["city"].names

    def build(s, t, u, slot):
        return _pattern(
            vocab.TEAM_PATTERNS, u, s=s, c=city_names[city[slot]], m=vocab.MASCOTS[int(u * 7919) % len(vocab.MASCOTS)]
        )

    names, _ = org_names(ctx, "sports_team/names", _culture_of_cities(ctx, city), build)
    ctx.set_names("sports_team", names, culture=_culture_names(_culture_of_cities(ctx, city)))
    ctx.set_attr("sports_team", "founded", founded)
    ctx.set_attr("sports_team", "sport", np.array(SPORTS, dtype=object)[sport])
    ctx.set_attr("sports_team", "stadium_capacity", capacity)
    ctx.set_attr("sports_team", "website", object_array([f"https://www.{slug(x)}.club" for x in names]))
    ctx.relate("based_in", "sports_team", np.arange(n), "city", city)

    if not ctx.has("person"):
        return
    rm = ctx.rng("member_of")
    p = ctx["person"].extra
    birth = p["birth"].astype(np.int64)
    who = np.flatnonzero(p["occupation"] == OCCUPATIONS.index("athlete"))
    start = birth[who] + years(rm.uniform(17, 26, len(who)))
    subj, obj, starts, ends = successive_stints(
        ctx, rm, who, start, founded, lead=30, duration=(1, 10), again=0.4, gap=(0.0, 1.0)
    )
    ctx.relate("member_of", "person", subj, "sports_team", obj, start=starts, end=ends)


def _culture_names(codes: np.ndarray) -> np.ndarray:
    from generators.morphology import CULTURES

    return np.array([c.name for c in CULTURES], dtype=object)[codes]
