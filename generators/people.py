"""People: lives in causal order (birth, marriage, children, death) and family ties."""

from __future__ import annotations

import numpy as np

from fictionworld.dates import NA_DATE, year_end, year_start
from fictionworld.gazetteer import famous_people, normalize
from fictionworld.schema import GENDERS, OCCUPATIONS
from generators.base import (
    GenContext,
    join_suffix,
    namesake_pairs,
    register,
    sample_dates,
    unique_names,
    weighted_choice,
    years,
)
from generators.morphology import CULTURES, given_names, invent_words

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


@register(SOURCE, produces=("person",), after=("city",))
def generate_people(ctx: GenContext) -> None:
    ctx.source = SOURCE
    n, present = ctx.counts["person"], ctx.present
    city = ctx["city"]
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

    born_in = weighted_choice(ctx.rng("born_in"), city.extra["weight"], n)
    rd = ctx.rng("died_in")
    died_in = np.where(rd.random(n) < 0.7, born_in, weighted_choice(rd, city.extra["weight"], n))
    died_in = np.where(death != NA_DATE, died_in, -1)
    culture = city.extra["culture"][born_in]

    # -- marriages: pairs of people of similar age, one marriage each ---------------------
    rm = ctx.rng("married_to")
    alive_to = np.where(death == NA_DATE, present, death).astype(np.int64)
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

    # -- children: born to a couple while both parents live ---------------------------------
    rc = ctx.rng("parent_of")
    k = rc.choice(4, size=len(a), p=[0.25, 0.35, 0.25, 0.15])
    couple = np.repeat(np.arange(len(a)), k)
    lo = start[couple].astype(np.int64) + years(0.8)
    hi = np.minimum.reduce(
        [
            limit[couple],
            start[couple] + years(22),
            birth[a[couple]] + years(50),
            birth[b[couple]] + years(50),
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
    pa, pb = a[couple], b[couple]

    # -- names: invented surnames inherited from the first parent -----------------------------
    rn = ctx.rng("person/names")
    surname = np.empty(n, dtype=object)
    for c in np.unique(culture).tolist():
        idx = np.flatnonzero(culture == c)
        cul = CULTURES[c]
        stems = invent_words(cul, len(idx), rn)
        ends = rn.integers(len(cul.surname_endings), size=len(idx))
        use = rn.random(len(idx)) < 0.5
        surname[idx] = [
            join_suffix(s, cul.surname_endings[e]) if u else s for s, e, u in zip(stems, ends.tolist(), use.tolist())
        ]
    order = np.argsort(birth[child], kind="stable")
    for c_, p_ in zip(child[order].tolist(), pa[order].tolist()):
        surname[c_] = surname[p_]

    given = np.empty(n, dtype=object)
    for c in np.unique(culture).tolist():
        idx = np.flatnonzero(culture == c)
        given[idx] = given_names(CULTURES[c], female[idx], rn)
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

    names = np.array(unique_names(candidates, n, reject=lambda x: normalize(x) in famous), dtype=object)

    # -- deliberate namesakes (recorded): people outside families take another's name --------
    group = np.full(n, -1, np.int32)
    in_family = np.zeros(n, bool)
    in_family[np.concatenate([a, b, child])] = True
    copies, originals = namesake_pairs(ctx, "person", np.flatnonzero(~in_family))
    names[copies] = names[originals]
    female[copies] = female[originals]  # a namesake's given name fits their recorded gender
    group[copies] = originals
    group[originals] = originals

    aliases = [(f"{x.split(' ')[0][0]}. {x.split(' ')[-1]}",) for x in names.tolist()]
    cult_names = np.array([c.name for c in CULTURES], dtype=object)
    ctx.set_names("person", names, aliases=aliases, culture=cult_names[culture], namesake_group=group)
    ctx.set_attr("person", "birth_date", birth)
    ctx.set_attr("person", "death_date", death)
    ctx.set_attr("person", "gender", np.array(GENDERS, dtype=object)[np.where(female, 0, 1)])
    ctx.set_attr("person", "occupation", np.array(OCCUPATIONS, dtype=object)[occupation])
    ctx.set_attr("person", "height_cm", height)

    idx = np.arange(n)
    ctx.relate("born_in", "person", idx, "city", born_in)
    ctx.relate("died_in", "person", idx, "city", died_in)
    ctx.relate("citizen_of", "person", idx, "country", city.extra["country"][born_in])
    ctx.relate(
        "married_to", "person", np.r_[a, b], "person", np.r_[b, a], start=np.r_[start, start], end=np.r_[end, end]
    )
    ctx.relate("parent_of", "person", np.r_[pa, pb], "person", np.r_[child, child])
    ctx.relate("child_of", "person", np.r_[child, child], "person", np.r_[pa, pb])
    s1, s2 = _sibling_pairs(couple, child)
    ctx.relate("sibling_of", "person", s1, "person", s2)

    ctx["person"].extra.update(birth=birth, death=death, occupation=occupation, culture=culture)


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
