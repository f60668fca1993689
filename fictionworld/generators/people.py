"""People: lives in causal order (birth, marriage, children, death) and family ties."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fictionworld.dates import NA_DATE, year_end, year_start
from fictionworld.gazetteer import famous_people, normalize
from fictionworld.generators.base import GenContext, namesake_pairs, register, sample_dates, weighted_choice, years
from fictionworld.generators.flow import Cities, People, need
from fictionworld.generators.morphology import CULTURES, given_names, invent_words
from fictionworld.generators.naming import join_suffix
from fictionworld.schema import GENDERS, OCCUPATIONS

SOURCE = "people-v0"
OCCUPATION_WEIGHTS = dict(
    zip(
        OCCUPATIONS,
        (
            12,
            5,
            10,
            10,
            10,
            8,
            8,
            7,
            5,
            4,
            3,
            3,
            5,
            5,
            3,
            2,
        ),
    )
)
_LETTERS = np.array(list("ABCDEFGHJKLMNPRSTVW"), dtype=object)


def _min_nonna(a: np.ndarray, b: np.ndarray, fill: int) -> np.ndarray:
    a = np.where(a == NA_DATE, fill, a)
    b = np.where(b == NA_DATE, fill, b)
    return np.minimum(a, b)


@dataclass(frozen=True)
class _Lives:
    """Born → (died): when, where, as whom; drawn before anyone meets anyone."""

    birth: np.ndarray  # int32 day
    death: np.ndarray  # int32 day, NA_DATE while alive
    female: np.ndarray  # bool
    occupation: np.ndarray  # index into OCCUPATIONS
    height: np.ndarray  # int64 cm
    born_in: np.ndarray  # local city
    died_in: np.ndarray  # local city, -1 while alive
    culture: np.ndarray  # index into CULTURES (of the birth city)


@dataclass(frozen=True)
class _Marriages:
    """Couples (a[i], b[i]) married from start[i] until end[i] (NA: still married); limit[i]
    is the last day both live."""

    a: np.ndarray
    b: np.ndarray
    start: np.ndarray
    end: np.ndarray
    limit: np.ndarray


@dataclass(frozen=True)
class _Children:
    """child[i] was born to couple[i] (an index into _Marriages): parents pa[i] and pb[i]."""

    couple: np.ndarray
    child: np.ndarray
    pa: np.ndarray
    pb: np.ndarray


@register(SOURCE, produces=("person",), after=("city",))
def generate_people(ctx: GenContext) -> None:
    ctx.source = SOURCE
    cities = need(ctx.flow.cities, "city")
    lives = _born(ctx, cities)
    marriages = _married(ctx, lives)
    children = _had_children(ctx, lives, marriages)
    names = _named(ctx, lives, children)
    in_family = np.zeros(len(names), bool)
    in_family[np.concatenate([marriages.a, marriages.b, children.child])] = True
    female, group = _namesakes(ctx, names, lives.female, in_family)  # families and namesakes: within a block
    _record_people(ctx, lives, names, female, group)
    _relate_people(ctx, cities, lives, marriages, children)
    ctx.flow.people = People(birth=lives.birth, death=lives.death, occupation=lives.occupation, culture=lives.culture)


def _born(ctx: GenContext, cities: Cities) -> _Lives:
    n, present = ctx.span("person")[1], ctx.present
    r = ctx.rng("person/attributes")
    # births span 1880-2006 for a 2025 world; a later present shifts that window forward
    shift = max(0, present - year_end(2025))
    birth = sample_dates(r, n, year_start(1880) + shift, min(year_end(2006) + shift, present - int(years(18))))
    death = (birth + years(r.normal(77, 13, n).clip(20, 104))).astype(np.int64)
    death = np.where(death <= present, death, NA_DATE).astype(np.int32)
    female = r.random(n) < 0.5
    occ_w = np.array([OCCUPATION_WEIGHTS[o] for o in OCCUPATIONS], np.float64)
    occupation = weighted_choice(r, occ_w, n)
    height = np.round(np.where(female, r.normal(166, 7, n), r.normal(179, 7, n))).clip(145, 210).astype(np.int64)

    born_in = weighted_choice(ctx.rng("born_in"), cities.population, n)
    rd = ctx.rng("died_in")
    died_in = np.where(rd.random(n) < 0.7, born_in, weighted_choice(rd, cities.population, n))
    died_in = np.where(death != NA_DATE, died_in, -1)
    return _Lives(birth, death, female, occupation, height, born_in, died_in, cities.culture[born_in])


def _married(ctx: GenContext, lives: _Lives) -> _Marriages:
    """Pairs of people of similar age, one marriage each, while both live."""
    birth, death = lives.birth, lives.death
    rm = ctx.rng("married_to")
    alive_to = np.where(death == NA_DATE, ctx.present, death).astype(np.int64)
    eligible = np.flatnonzero(birth + years(20) < alive_to)
    chosen = eligible[rm.random(len(eligible)) < 0.7]
    chosen = chosen[np.argsort(birth[chosen] + rm.normal(0, years(3), len(chosen)), kind="stable")]
    m = len(chosen) // 2
    a, b = chosen[0 : 2 * m : 2], chosen[1 : 2 * m : 2]
    start = np.maximum(birth[a], birth[b]) + years(rm.uniform(20, 40, m))
    limit = np.minimum(alive_to[a], alive_to[b])
    ok = start < limit
    a, b, start, limit = a[ok], b[ok], start[ok].astype(np.int32), limit[ok]
    end = _min_nonna(death[a], death[b], np.iinfo(np.int32).max)
    end = np.where(end == np.iinfo(np.int32).max, NA_DATE, end).astype(np.int32)
    return _Marriages(a, b, start, end, limit)


def _had_children(ctx: GenContext, lives: _Lives, m: _Marriages) -> _Children:
    """Children born to a couple while both parents live: existing people, one pair of
    parents each."""
    birth, n = lives.birth, len(lives.birth)
    rc = ctx.rng("parent_of")
    k = rc.choice(4, size=len(m.a), p=[0.25, 0.35, 0.25, 0.15])
    couple = np.repeat(np.arange(len(m.a)), k)
    lo = m.start[couple].astype(np.int64) + years(0.8)
    hi = np.minimum.reduce(
        [
            m.limit[couple],
            m.start[couple] + years(22),
            birth[m.a[couple]] + years(50),
            birth[m.b[couple]] + years(50),
        ]
    ).astype(np.int64)
    by_birth = np.argsort(birth, kind="stable")
    sorted_birth = birth[by_birth].astype(np.int64)
    lo_i = np.searchsorted(sorted_birth, lo, "left")
    hi_i = np.searchsorted(sorted_birth, hi, "right")
    valid = hi_i > lo_i
    pick = lo_i + np.floor(rc.random(len(couple)) * np.maximum(hi_i - lo_i, 0)).astype(np.int64)
    child = np.where(valid, by_birth[np.minimum(pick, n - 1)], -1)
    couple, child = couple[child >= 0], child[child >= 0]
    _, first = np.unique(child, return_index=True)  # a child has one pair of parents
    keep = np.sort(first)
    couple, child = couple[keep], child[keep]
    return _Children(couple, child, m.a[couple], m.b[couple])


def _named(ctx: GenContext, lives: _Lives, children: _Children) -> np.ndarray:
    """Full names, distinct and none a famous real person's; one stream for all name parts."""
    rn = ctx.rng("person/names")
    surname = _surnames(rn, lives, children)
    given = _given_names(rn, lives.culture, lives.female)
    return _full_names(ctx, rn, lives, given, surname)


def _surnames(rn: np.random.Generator, lives: _Lives, children: _Children) -> np.ndarray:
    """Invented per culture; a child inherits the first parent's (elder children first)."""
    culture = lives.culture
    surname = np.empty(len(culture), dtype=object)
    for c in np.unique(culture).tolist():
        idx = np.flatnonzero(culture == c)
        cul = CULTURES[c]
        stems = invent_words(cul, len(idx), rn)
        ends = rn.integers(len(cul.surname_endings), size=len(idx))
        use = rn.random(len(idx)) < 0.5
        surname[idx] = [
            join_suffix(s, cul.surname_endings[e]) if u else s for s, e, u in zip(stems, ends.tolist(), use.tolist())
        ]
    order = np.argsort(lives.birth[children.child], kind="stable")
    for c_, p_ in zip(children.child[order].tolist(), children.pa[order].tolist()):
        surname[c_] = surname[p_]
    return surname


def _given_names(rn: np.random.Generator, culture: np.ndarray, female: np.ndarray) -> np.ndarray:
    given = np.empty(len(culture), dtype=object)
    for c in np.unique(culture).tolist():
        idx = np.flatnonzero(culture == c)
        given[idx] = given_names(CULTURES[c], female[idx], rn)
    return given


def _full_names(
    ctx: GenContext, rn: np.random.Generator, lives: _Lives, given: np.ndarray, surname: np.ndarray
) -> np.ndarray:
    """Given name and surname; a clash gets a middle initial, and from round 4 a new given name."""
    culture, female = lives.culture, lives.female
    famous = famous_people()

    def candidates(slots: np.ndarray, rnd: int) -> list[str]:
        if rnd == 0:
            return [f"{g} {s}" for g, s in zip(given[slots], surname[slots])]
        if rnd >= 4:
            for c in np.unique(culture[slots]).tolist():
                idx = slots[culture[slots] == c]
                given[idx] = given_names(CULTURES[c], female[idx], rn)
        initials = _LETTERS[rn.integers(len(_LETTERS), size=len(slots))]
        return [f"{g} {i}. {s}" for g, i, s in zip(given[slots], initials, surname[slots])]

    return np.array(
        ctx.unique("person", candidates, len(culture), reject=lambda x: normalize(x) in famous), dtype=object
    )


def _namesakes(
    ctx: GenContext, names: np.ndarray, female: np.ndarray, in_family: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Deliberate, recorded namesakes: people outside families take another's name (and, so
    the given name fits, gender). Renames ``names`` in place; returns (female, group)."""
    group = np.full(len(names), -1, np.int32)
    copies, originals = namesake_pairs(ctx, "person", np.flatnonzero(~in_family))
    names[copies] = names[originals]
    female = female.copy()
    female[copies] = female[originals]
    first = ctx.span("person")[0]
    group[copies] = originals + first
    group[originals] = originals + first
    return female, group


def _record_people(ctx: GenContext, lives: _Lives, names: np.ndarray, female: np.ndarray, group: np.ndarray) -> None:
    aliases = [(f"{x.split(' ')[0][0]}. {x.split(' ')[-1]}",) for x in names.tolist()]
    cult_names = np.array([c.name for c in CULTURES], dtype=object)
    ctx.set_names("person", names, aliases=aliases, culture=cult_names[lives.culture], namesake_group=group)
    ctx.set_attr("person", "birth_date", lives.birth)
    ctx.set_attr("person", "death_date", lives.death)
    ctx.set_attr("person", "gender", np.array(GENDERS, dtype=object)[np.where(female, 0, 1)])
    ctx.set_attr("person", "occupation", np.array(OCCUPATIONS, dtype=object)[lives.occupation])
    ctx.set_attr("person", "height_cm", lives.height)


def _relate_people(ctx: GenContext, cities: Cities, lives: _Lives, m: _Marriages, kids: _Children) -> None:
    idx = np.arange(len(lives.birth))
    ctx.relate("born_in", "person", idx, "city", lives.born_in)
    ctx.relate("died_in", "person", idx, "city", lives.died_in)
    ctx.relate("citizen_of", "person", idx, "country", cities.country[lives.born_in])
    start, end = np.r_[m.start, m.start], np.r_[m.end, m.end]
    ctx.relate("married_to", "person", np.r_[m.a, m.b], "person", np.r_[m.b, m.a], start=start, end=end)
    ctx.relate("parent_of", "person", np.r_[kids.pa, kids.pb], "person", np.r_[kids.child, kids.child])
    ctx.relate("child_of", "person", np.r_[kids.child, kids.child], "person", np.r_[kids.pa, kids.pb])
    s1, s2 = _sibling_pairs(kids.couple, kids.child)
    ctx.relate("sibling_of", "person", s1, "person", s2)


def _sibling_pairs(couple: np.ndarray, child: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(couple, kind="stable")
    couple, child = couple[order], child[order]
    bounds = np.flatnonzero(np.r_[True, couple[1:] != couple[:-1], True])
    s1: list[int] = []
    s2: list[int] = []
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        kids = child[lo:hi].tolist()
        for x in kids:
            for y in kids:
                if x != y:
                    s1.append(x)
                    s2.append(y)
    return np.array(s1, np.int64), np.array(s2, np.int64)
