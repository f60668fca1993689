"""Organisations: companies (founders, CEOs, staff, acquisitions), universities (students),
publishers and sports teams (players)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fictionworld.dates import NA_DATE, year_end, year_start
from fictionworld.gazetteer import is_real_place
from fictionworld.generators import vocab
from fictionworld.generators.base import (
    AlivePicker,
    GenContext,
    people_task,
    pick_founded_before,
    register,
    sample_dates,
    weighted_choice,
    years,
)
from fictionworld.generators.flow import Companies, Founded, People, need
from fictionworld.generators.naming import clean_stems, slug
from fictionworld.schema import INDUSTRIES, OCCUPATIONS, SPORTS, UNIVERSITY_KINDS
from fictionworld.tables import object_array

NA = int(NA_DATE)


def people_picker(ctx: GenContext, occupations: tuple[str, ...] = ()) -> AlivePicker:
    """A picker over every person (of ``occupations``), kept with the hand-off: the block
    tasks of a generator pick from the same people again and again."""
    people = need(ctx.flow.people, "person")
    memo = people.__dict__.setdefault("_pickers", {})
    key = (tuple(occupations), ctx.present)
    if key not in memo:
        pool = np.arange(len(people.birth))
        if occupations:
            codes = [OCCUPATIONS.index(o) for o in occupations]
            pool = pool[np.isin(people.occupation, codes)]
        memo[key] = AlivePicker(people.birth, people.death, pool, ctx.present)
    return memo[key]


def pick_people(ctx: GenContext, rng, occupations, when, min_age, max_age, until=None) -> np.ndarray:
    """People of the given occupations (falling back to anyone) alive and of age at ``when``."""
    out = people_picker(ctx, occupations).pick(rng, when, min_age, max_age, until)
    miss = np.flatnonzero(out < 0)
    if len(miss) and occupations:
        u = None if until is None else np.asarray(until)[miss]
        out[miss] = people_picker(ctx).pick(rng, np.asarray(when)[miss], min_age, max_age, u)
    return out


def alive_to(ctx: GenContext) -> np.ndarray:
    """Last day each person is alive in the world (see :meth:`People.alive_to`)."""
    return need(ctx.flow.people, "person").alive_to(ctx.present)


def own_people(ctx: GenContext) -> People:
    """The people a task over person blocks (:attr:`WorldGenerator.people`) makes facts for:
    its block, indexed block-relative (every person without blocks)."""
    people = need(ctx.flow.people, "person")
    first, n = ctx.span("person")
    return People(*(getattr(people, f)[first : first + n] for f in ("birth", "death", "occupation", "culture")))


def bounded_interval(
    start: np.ndarray, end: np.ndarray, person_end: np.ndarray, death: np.ndarray, present: int
) -> np.ndarray:
    """Clip an interval end to the person's life: ongoing (NA) if still running at present."""
    end = np.minimum(end, person_end)
    ongoing = (end >= present) & (death == NA_DATE)
    return np.where(ongoing, NA, end).astype(np.int32)


def successive_stints(
    ctx: GenContext,
    people: People,
    rng,
    who: np.ndarray,
    start: np.ndarray,
    founded: np.ndarray,
    *,
    lead: int,
    duration: tuple[float, float],
    again: float,
    gap: tuple[float, float],
    weights: np.ndarray | None = None,
):
    """Up to two non-overlapping stints per person (study, a playing career) at organisations
    that existed when each stint began (in proportion to ``weights`` where given: a bigger
    university has more students); a stint starts at least ``lead`` days before the
    person's death / the present, lasts ``duration`` years, and a second one follows with
    probability ``again`` after a ``gap`` in years. Returns (people, orgs, starts, ends)."""
    death, life_end, present = people.death, people.alive_to(ctx.present), ctx.present
    subj, obj, starts, ends = [], [], [], []
    for _stint in range(2):
        ok = start + lead < np.minimum(life_end[who], present)
        who, start = who[ok], start[ok]
        org = pick_founded_before(rng, founded, start, weights=weights)
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
    return ctx.unique(key.split("/")[0], candidates, len(culture), reject=is_real_place), stems


def _pattern(patterns: tuple[str, ...], u: float, **kw: str) -> str:
    return patterns[int(u * 1000) % len(patterns)].format(**kw)


def _culture_of_cities(ctx: GenContext, cities: np.ndarray) -> np.ndarray:
    return need(ctx.flow.cities, "city").culture[cities]


@register("companies-v0", produces=("company",), after=("person", "city"))
def generate_companies(ctx: GenContext) -> None:
    ctx.source = "companies-v0"
    n = ctx.span("company")[1]
    founded, founder, cofounder = _founded(ctx, n)
    hq = weighted_choice(ctx.rng("headquartered_in"), need(ctx.flow.cities, "city").population, n)
    industry = _company_figures(ctx, founded)
    names, stems = _company_names(ctx, hq, industry)
    ctx.set_attr("company", "founded", founded)
    ctx.set_attr("company", "website", object_array([f"https://www.{slug(x)}.com" for x in names]))
    ctx.flow.companies = Companies(founded=founded, stem=stems)

    idx = np.arange(n)
    ctx.relate("headquartered_in", "company", idx, "city", hq)
    if ctx.has("person"):
        ctx.relate("founded_by", "company", np.r_[idx, idx], "person", np.r_[founder, cofounder])
        _ceos_and_staff(ctx, founded, founder)
    _acquisitions(ctx, founded)


def _founded(ctx: GenContext, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """When each company was founded, and by whom (founder, co-founder; -1: nobody known):
    adults of a founding trade, alive at the time."""
    rf = ctx.rng("founded_by")
    if not ctx.has("person"):
        nobody = np.full(n, -1, np.int64)
        return sample_dates(rf, n, year_start(1820), ctx.present, recent_bias=1.5), nobody, nobody
    founded = sample_dates(rf, n, year_start(1905), ctx.present - int(years(0.5)), recent_bias=1.8)
    founder = pick_people(ctx, rf, ("entrepreneur", "engineer", "scientist", "economist"), founded, 22, 65)
    cofounder = pick_people(ctx, rf, ("entrepreneur", "engineer"), founded, 22, 65)
    cofounder = np.where((rf.random(n) < 0.25) & (cofounder != founder), cofounder, -1)
    return founded, founder, cofounder


def _company_figures(ctx: GenContext, founded: np.ndarray) -> np.ndarray:
    """Industry, staff and revenue (older companies are larger); returns the industry codes."""
    n, present = len(founded), ctx.present
    r = ctx.rng("company/attributes")
    industry = r.integers(len(INDUSTRIES), size=n)
    age_years = (present - founded) / 365.2425
    employees = (np.exp(r.normal(np.log(60), 1.7, n)) * (1 + age_years / 40)).clip(1, 500_000).astype(np.int64)
    revenue = employees * np.exp(r.normal(np.log(150_000), 0.7, n)).clip(20_000, 2_000_000)
    revenue = revenue.clip(10_000, 500_000_000_000).astype(np.int64)
    ctx.set_attr("company", "industry", np.array(INDUSTRIES, dtype=object)[industry])
    ctx.set_attr("company", "employees", employees)
    ctx.set_attr("company", "revenue_usd", revenue)
    return industry


def _company_names(ctx: GenContext, hq: np.ndarray, industry: np.ndarray) -> tuple[list[str], np.ndarray]:
    def build(s, t, u, slot):
        if u < 0.7:
            return f"{s} {_pattern(vocab.COMPANY_SUFFIXES[INDUSTRIES[industry[slot]]], u * 7)}"
        if u < 0.9:
            return f"{s} {_pattern(vocab.COMPANY_FORMS, u * 3)}"
        return f"{s} & {t}"

    culture = _culture_of_cities(ctx, hq)
    names, stems = org_names(ctx, "company/names", culture, build)
    ctx.set_names("company", names, aliases=[(s,) for s in stems.tolist()], culture=culture_names(culture))
    return names, stems


@dataclass(frozen=True)
class _Terms:
    """Chief-executive terms: person ceo[i] ran company comp[i] from start[i] (int64 day) to
    end[i] (int32 day; NA while in office)."""

    comp: np.ndarray
    ceo: np.ndarray
    start: np.ndarray
    end: np.ndarray


def _ceos_and_staff(ctx: GenContext, founded: np.ndarray, founder: np.ndarray) -> None:
    rc = ctx.rng("ceo_of")
    terms = _ceo_terms(ctx, rc, founded, founder)
    ctx.relate("ceo_of", "person", terms.ceo, "company", terms.comp, start=terms.start, end=terms.end)
    # A chief executive is on the staff for (at least) the whole term.
    birth = need(ctx.flow.people, "person").birth.astype(np.int64)
    w_start = np.maximum.reduce(
        [
            founded[terms.comp].astype(np.int64),
            terms.start - years(rc.uniform(0, 6, len(terms.comp))),
            birth[terms.ceo] + years(16) + 1,
        ]
    )
    w_start = np.minimum(w_start, terms.start)
    ctx.relate("works_for", "person", terms.ceo, "company", terms.comp, start=w_start, end=terms.end)


@people_task("companies-v0")
def company_staff(ctx: GenContext) -> None:
    """Ordinary staff, drawn for each block of people: they follow the chief executives'
    ``works_for`` facts."""
    who, where, start, end = _hires(ctx, need(ctx.flow.companies, "company").founded)
    ctx.relate("works_for", "person", who, "company", where, start=start, end=end, after="works_for")


def _term_slots(rc: np.random.Generator, founded: np.ndarray, present: int):
    """Each company's history from founding to the present cut into successive terms:
    (company, start, end, is first term, is last term) per term."""
    k = 1 + rc.poisson((present - founded) / years(14)).clip(0, 5)
    comp = np.repeat(np.arange(len(founded)), k)
    first = np.r_[True, comp[1:] != comp[:-1]]
    u = np.where(first, 0.0, rc.random(len(comp)))
    order = np.lexsort((u, comp))
    comp, u, first = comp[order], u[order], first[order]
    f = founded[comp].astype(np.int64)
    seg_start = f + np.floor(u * (present - f)).astype(np.int64)
    last = np.r_[comp[1:] != comp[:-1], True]
    seg_end = np.where(last, present, np.r_[seg_start[1:], present])
    keep = seg_end > seg_start
    return comp[keep], seg_start[keep], seg_end[keep], first[keep], last[keep]


def _ceo_terms(ctx: GenContext, rc: np.random.Generator, founded: np.ndarray, founder: np.ndarray) -> _Terms:
    """Who held each term: the founder the first one if they outlive it, else an adult alive
    throughout; terms nobody can fill are dropped."""
    people = need(ctx.flow.people, "person")
    comp, seg_start, seg_end, first, last = _term_slots(rc, founded, ctx.present)
    fnd = founder[comp]
    founder_ok = first & (fnd >= 0)
    founder_ok &= np.where(fnd >= 0, alive_to(ctx)[np.maximum(fnd, 0)] > seg_end, False)
    ceo = np.where(founder_ok, fnd, -1)
    vacant = ceo < 0
    ceo[vacant] = people_picker(ctx).pick(rc, seg_start[vacant], 28, 68, until=seg_end[vacant])
    ok = ceo >= 0
    comp, ceo, seg_start, seg_end, last = comp[ok], ceo[ok], seg_start[ok], seg_end[ok], last[ok]
    ongoing = last & (people.death[ceo] == NA_DATE)
    return _Terms(comp, ceo, seg_start, np.where(ongoing, NA, seg_end).astype(np.int32))


def _hires(ctx: GenContext, founded: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Ordinary staff: adults joining a company that existed then, for a few years.
    Returns (person, company, start, end)."""
    people = own_people(ctx)
    birth, death, life_end = people.birth.astype(np.int64), people.death, people.alive_to(ctx.present)
    rw = ctx.rng("works_for")
    m = int(0.3 * len(birth))
    who = rw.integers(len(birth), size=m)
    start = birth[who] + years(rw.uniform(18, 50, m))
    ok = start + 30 < life_end[who]
    who, start = who[ok], start[ok]
    where = pick_founded_before(rw, founded, start)
    ok = where >= 0
    who, start, where = who[ok], start[ok], where[ok]
    end = bounded_interval(
        start, start + years(rw.exponential(7, len(who))) + 30, life_end[who], death[who], ctx.present
    )
    return who, where, start, end


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


@register("universities-v1", produces=("university",), after=("person", "city"))
def generate_universities(ctx: GenContext) -> None:
    ctx.source = "universities-v1"
    n, present = ctx.span("university")[1], ctx.present
    r = ctx.rng("university/attributes")
    hi = min(year_end(2005), present - int(years(5)))
    founded = (year_start(1150) + np.floor(r.beta(2.5, 1.2, n) * (hi - year_start(1150)))).astype(np.int32)
    city = weighted_choice(ctx.rng("university/located_in"), need(ctx.flow.cities, "city").population, n)
    kind = r.integers(len(UNIVERSITY_KINDS), size=n)
    students = np.exp(r.normal(np.log(9_000), 0.9, n)).clip(300, 120_000).astype(np.int64)
    city_names = need(ctx.flow.cities, "city").names

    def build(s, t, u, slot):
        return _pattern(vocab.UNIVERSITY_PATTERNS[UNIVERSITY_KINDS[kind[slot]]], u, s=s, c=city_names[city[slot]])

    names, _ = org_names(ctx, "university/names", _culture_of_cities(ctx, city), build)
    aliases = [(a,) if len(a := "".join(w[0] for w in x.split() if w[0].isupper())) >= 2 else () for x in names]
    ctx.set_names("university", names, aliases=aliases, culture=culture_names(_culture_of_cities(ctx, city)))
    ctx.set_attr("university", "founded", founded)
    ctx.set_attr("university", "students", students)
    ctx.set_attr("university", "kind", np.array(UNIVERSITY_KINDS, dtype=object)[kind])
    ctx.set_attr("university", "website", object_array([f"https://www.{slug(x)}.edu" for x in names]))
    ctx.flow.universities = Founded(founded=founded, size=students)
    ctx.relate("located_in", "university", np.arange(n), "city", city)


@people_task("universities-v1")
def students(ctx: GenContext) -> None:
    """55% of people study after school at a university that existed then, chosen by its number
    of students (so alumni counts spread like university sizes); some study twice."""
    unis = need(ctx.flow.universities, "university")
    founded = unis.founded
    rs = ctx.rng("studied_at")
    people = own_people(ctx)
    birth = people.birth.astype(np.int64)
    who = np.flatnonzero(rs.random(len(birth)) < 0.55)
    start = birth[who] + years(rs.uniform(17.5, 23, len(who)))
    subj, obj, starts, ends = successive_stints(
        ctx, people, rs, who, start, founded, lead=int(years(1)), duration=(3, 6), again=0.15, gap=(0.3, 4),
        weights=unis.size,
    )  # fmt: skip
    ctx.relate("studied_at", "person", subj, "university", obj, start=starts, end=ends)


@register("publishers-v0", produces=("publisher",), after=("city",))
def generate_publishers(ctx: GenContext) -> None:
    ctx.source = "publishers-v0"
    n = ctx.span("publisher")[1]
    r = ctx.rng("publisher/attributes")
    hi = min(year_end(2015), ctx.present - int(years(1)))
    founded = (year_start(1750) + np.floor(r.beta(2.0, 1.3, n) * (hi - year_start(1750)))).astype(np.int32)
    hq = weighted_choice(ctx.rng("publisher/headquartered_in"), need(ctx.flow.cities, "city").population, n)
    employees = np.exp(r.normal(np.log(40), 1.2, n)).clip(2, 15_000).astype(np.int64)

    def build(s, t, u, slot):
        return _pattern(vocab.PUBLISHER_PATTERNS, u, s=s, t=t)

    names, stems = org_names(ctx, "publisher/names", _culture_of_cities(ctx, hq), build)
    ctx.set_names(
        "publisher", names, aliases=[(s,) for s in stems.tolist()], culture=culture_names(_culture_of_cities(ctx, hq))
    )
    ctx.set_attr("publisher", "founded", founded)
    ctx.set_attr("publisher", "employees", employees)
    ctx.set_attr("publisher", "website", object_array([f"https://www.{slug(x)}.com" for x in names]))
    ctx.flow.publishers = Founded(founded=founded)
    ctx.relate("headquartered_in", "publisher", np.arange(n), "city", hq)


@register("sports-teams-v0", produces=("sports_team",), after=("person", "city"))
def generate_sports_teams(ctx: GenContext) -> None:
    ctx.source = "sports-teams-v0"
    n, present = ctx.span("sports_team")[1], ctx.present
    r = ctx.rng("sports_team/attributes")
    founded = sample_dates(r, n, year_start(1870), min(year_end(2015), present - int(years(1))), recent_bias=1.3)
    sport = r.integers(len(SPORTS), size=n)
    capacity = np.exp(r.normal(np.log(12_000), 0.9, n)).clip(800, 100_000).astype(np.int64)
    city = weighted_choice(ctx.rng("based_in"), need(ctx.flow.cities, "city").population, n)
    city_names = need(ctx.flow.cities, "city").names

    def build(s, t, u, slot):
        return _pattern(
            vocab.TEAM_PATTERNS, u, s=s, c=city_names[city[slot]], m=vocab.MASCOTS[int(u * 7919) % len(vocab.MASCOTS)]
        )

    names, _ = org_names(ctx, "sports_team/names", _culture_of_cities(ctx, city), build)
    ctx.set_names("sports_team", names, culture=culture_names(_culture_of_cities(ctx, city)))
    ctx.set_attr("sports_team", "founded", founded)
    ctx.set_attr("sports_team", "sport", np.array(SPORTS, dtype=object)[sport])
    ctx.set_attr("sports_team", "stadium_capacity", capacity)
    ctx.set_attr("sports_team", "website", object_array([f"https://www.{slug(x)}.club" for x in names]))
    ctx.flow.teams = Founded(founded=founded)
    ctx.relate("based_in", "sports_team", np.arange(n), "city", city)


@people_task("sports-teams-v0")
def players(ctx: GenContext) -> None:
    """Athletes play for teams that existed when they started: one or two careers each."""
    founded = need(ctx.flow.teams, "sports_team").founded
    rm = ctx.rng("member_of")
    people = own_people(ctx)
    birth = people.birth.astype(np.int64)
    who = np.flatnonzero(people.occupation == OCCUPATIONS.index("athlete"))
    start = birth[who] + years(rm.uniform(17, 26, len(who)))
    subj, obj, starts, ends = successive_stints(
        ctx, people, rm, who, start, founded, lead=30, duration=(1, 10), again=0.4, gap=(0.0, 1.0)
    )
    ctx.relate("member_of", "person", subj, "sports_team", obj, start=starts, end=ends)


def culture_names(codes: np.ndarray) -> np.ndarray:
    from fictionworld.generators.morphology import CULTURES

    return np.array([c.name for c in CULTURES], dtype=object)[codes]
