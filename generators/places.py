"""Countries, regions and cities: nested places with populations and areas that add up."""

from __future__ import annotations

import numpy as np

from fictionworld.dates import year_end, year_start
from fictionworld.gazetteer import is_real_place
from generators.base import GenContext, clean_stems, join_suffix, register, sample_dates, unique_names
from generators.morphology import CULTURES

SOURCE = "places-v0"


def _assign(rng: np.random.Generator, n_child: int, n_parent: int) -> np.ndarray:
    """Parent of each child: every parent gets at least one child, the rest at random."""
    first = np.arange(min(n_parent, n_child))
    rest = rng.integers(n_parent, size=max(0, n_child - n_parent))
    return rng.permutation(np.concatenate([first, rest]))


def _place_names(ctx: GenContext, key: str, cultures: np.ndarray, build) -> list[str]:
    rng = ctx.rng(key)

    def candidates(slots: np.ndarray, rnd: int) -> list[str]:
        stems = clean_stems(cultures[slots], rng)
        out = []
        for slot, stem, u in zip(slots.tolist(), stems.tolist(), rng.random(len(slots)).tolist()):
            name = build(CULTURES[cultures[slot]], stem, u, rng)
            out.append(stem if is_real_place(name) else name)
        return out

    return unique_names(candidates, len(cultures))


@register(SOURCE, produces=("country", "region", "city"))
def generate_places(ctx: GenContext) -> None:
    ctx.source = SOURCE
    nc, nr, ny = ctx.counts["country"], ctx.counts["region"], ctx.counts["city"]
    rng = ctx.rng("places/structure")
    country_culture = rng.permutation(len(CULTURES))[np.arange(nc) % len(CULTURES)]
    region_country = _assign(rng, nr, nc)
    city_region = _assign(rng, ny, nr)
    city_country = region_country[city_region]

    def country_name(c, stem, u, r):
        return join_suffix(stem, c.country_endings[int(u * 10) % len(c.country_endings)]) if u < 0.6 else stem

    def region_name(c, stem, u, r):
        return f"{stem} {c.region_words[int(u * 97) % len(c.region_words)]}" if u < 0.45 else stem

    def city_name(c, stem, u, r):
        return join_suffix(stem, c.place_suffixes[int(u * 89) % len(c.place_suffixes)]) if u < 0.35 else stem

    region_culture = country_culture[region_country]
    city_culture = country_culture[city_country]
    cult_names = np.array([c.name for c in CULTURES], dtype=object)
    ctx.set_names(
        "country",
        _place_names(ctx, "country/names", country_culture, country_name),
        culture=cult_names[country_culture],
    )
    ctx.set_names(
        "region", _place_names(ctx, "region/names", region_culture, region_name), culture=cult_names[region_culture]
    )
    ctx.set_names("city", _place_names(ctx, "city/names", city_culture, city_name), culture=cult_names[city_culture])

    # Quantities: cities first, regions contain their cities, countries are the sum of regions.
    r = ctx.rng("city/attributes")
    pop = np.exp(r.normal(np.log(40_000), 1.2, ny)).clip(800, 30_000_000).astype(np.int64)
    density = np.exp(r.normal(np.log(1_500), 0.6, ny)).clip(50, 20_000)
    area = np.round((pop / density).clip(0.5, 19_000), 1)
    elevation = (np.abs(r.normal(0, 600, ny)) - 20).clip(-50, 4_000).astype(np.int64)
    ctx.set_attr("city", "population", pop)
    ctx.set_attr("city", "area_km2", area)
    ctx.set_attr("city", "elevation_m", elevation)

    r = ctx.rng("region/attributes")
    reg_city_pop = np.bincount(city_region, weights=pop, minlength=nr)
    reg_city_area = np.bincount(city_region, weights=area, minlength=nr)
    reg_pop = np.ceil(reg_city_pop * (1 + r.uniform(0.1, 0.8, nr))).astype(np.int64)
    reg_area = np.round(reg_city_area + r.uniform(300, 40_000, nr), 1)
    ctx.set_attr("region", "population", reg_pop)
    ctx.set_attr("region", "area_km2", reg_area)

    r = ctx.rng("country/attributes")
    ctx.set_attr(
        "country", "population", np.bincount(region_country, weights=reg_pop, minlength=nc).round().astype(np.int64)
    )
    ctx.set_attr("country", "area_km2", np.round(np.bincount(region_country, weights=reg_area, minlength=nc), 1))
    ctx.set_attr(
        "country", "established", sample_dates(r, nc, year_start(1300), min(year_end(1995), ctx.present - 3653))
    )

    # capital = most populous city of each country (ties: lowest index)
    order = np.lexsort((np.arange(ny), -pop, city_country))
    first = np.r_[True, city_country[order][1:] != city_country[order][:-1]]
    capital = np.full(nc, -1, np.int64)
    capital[city_country[order][first]] = order[first]

    ctx.relate("located_in", "region", np.arange(nr), "country", region_country)
    ctx.relate("located_in", "city", np.arange(ny), "region", city_region)
    ctx.relate("capital", "country", np.arange(nc), "city", capital)

    ctx["city"].extra.update(country=city_country, region=city_region, culture=city_culture, weight=pop)
    ctx["country"].extra.update(culture=country_culture)
