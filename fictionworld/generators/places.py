"""Countries, regions and cities: nested places with populations and areas that add up."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fictionworld.dates import year_end, year_start
from fictionworld.gazetteer import is_real_place
from fictionworld.generators.base import GenContext, register, sample_dates
from fictionworld.generators.flow import Cities
from fictionworld.generators.morphology import CULTURES
from fictionworld.generators.naming import clean_stems, join_suffix, unique_names

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


@dataclass(frozen=True)
class _Nesting:
    """Which country each region lies in and which region each city (local indices)."""

    country_culture: np.ndarray  # index into CULTURES, per country
    region_country: np.ndarray
    city_region: np.ndarray

    @property
    def city_country(self) -> np.ndarray:
        return self.region_country[self.city_region]


@register(SOURCE, produces=("country", "region", "city"))
def generate_places(ctx: GenContext) -> None:
    ctx.source = SOURCE
    nest = _nest(ctx)
    _name_places(ctx, nest)
    # Quantities: cities first, regions contain their cities, countries are the sum of regions.
    pop, area = _city_quantities(ctx)
    reg_pop, reg_area = _region_quantities(ctx, nest, pop, area)
    _country_quantities(ctx, nest, reg_pop, reg_area)
    _relate_places(ctx, nest, pop)
    ctx.flow.cities = Cities(
        country=nest.city_country,
        culture=nest.country_culture[nest.city_country],
        population=pop,
        names=ctx["city"].names.copy(),
    )


def _nest(ctx: GenContext) -> _Nesting:
    nc, nr, ny = ctx.counts["country"], ctx.counts["region"], ctx.counts["city"]
    rng = ctx.rng("places/structure")
    country_culture = rng.permutation(len(CULTURES))[np.arange(nc) % len(CULTURES)]
    region_country = _assign(rng, nr, nc)
    return _Nesting(country_culture, region_country, _assign(rng, ny, nr))


def _country_name(c, stem, u, r):
    return join_suffix(stem, c.country_endings[int(u * 10) % len(c.country_endings)]) if u < 0.6 else stem


def _region_name(c, stem, u, r):
    return f"{stem} {c.region_words[int(u * 97) % len(c.region_words)]}" if u < 0.45 else stem


def _city_name(c, stem, u, r):
    return join_suffix(stem, c.place_suffixes[int(u * 89) % len(c.place_suffixes)]) if u < 0.35 else stem


def _name_places(ctx: GenContext, nest: _Nesting) -> None:
    cult_names = np.array([c.name for c in CULTURES], dtype=object)
    for t, cultures, build in (
        ("country", nest.country_culture, _country_name),
        ("region", nest.country_culture[nest.region_country], _region_name),
        ("city", nest.country_culture[nest.city_country], _city_name),
    ):
        ctx.set_names(t, _place_names(ctx, f"{t}/names", cultures, build), culture=cult_names[cultures])


def _city_quantities(ctx: GenContext) -> tuple[np.ndarray, np.ndarray]:
    ny = ctx.counts["city"]
    r = ctx.rng("city/attributes")
    pop = np.exp(r.normal(np.log(40_000), 1.2, ny)).clip(800, 30_000_000).astype(np.int64)
    density = np.exp(r.normal(np.log(1_500), 0.6, ny)).clip(50, 20_000)
    area = np.round((pop / density).clip(0.5, 19_000), 1)
    elevation = (np.abs(r.normal(0, 600, ny)) - 20).clip(-50, 4_000).astype(np.int64)
    ctx.set_attr("city", "population", pop)
    ctx.set_attr("city", "area_km2", area)
    ctx.set_attr("city", "elevation_m", elevation)
    return pop, area


def _region_quantities(
    ctx: GenContext, nest: _Nesting, pop: np.ndarray, area: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """A region holds its cities' people and land, and more of both outside them."""
    nr = ctx.counts["region"]
    r = ctx.rng("region/attributes")
    reg_city_pop = np.bincount(nest.city_region, weights=pop, minlength=nr)
    reg_city_area = np.bincount(nest.city_region, weights=area, minlength=nr)
    reg_pop = np.ceil(reg_city_pop * (1 + r.uniform(0.1, 0.8, nr))).astype(np.int64)
    reg_area = np.round(reg_city_area + r.uniform(300, 40_000, nr), 1)
    ctx.set_attr("region", "population", reg_pop)
    ctx.set_attr("region", "area_km2", reg_area)
    return reg_pop, reg_area


def _country_quantities(ctx: GenContext, nest: _Nesting, reg_pop: np.ndarray, reg_area: np.ndarray) -> None:
    """A country is exactly the sum of its regions."""
    nc, rc = ctx.counts["country"], nest.region_country
    r = ctx.rng("country/attributes")
    ctx.set_attr("country", "population", np.bincount(rc, weights=reg_pop, minlength=nc).round().astype(np.int64))
    ctx.set_attr("country", "area_km2", np.round(np.bincount(rc, weights=reg_area, minlength=nc), 1))
    ctx.set_attr(
        "country", "established", sample_dates(r, nc, year_start(1300), min(year_end(1995), ctx.present - 3653))
    )


def _capitals(pop: np.ndarray, city_country: np.ndarray, nc: int) -> np.ndarray:
    """The most populous city of each country (ties: lowest index)."""
    order = np.lexsort((np.arange(len(pop)), -pop, city_country))
    first = np.r_[True, city_country[order][1:] != city_country[order][:-1]]
    capital = np.full(nc, -1, np.int64)
    capital[city_country[order][first]] = order[first]
    return capital


def _relate_places(ctx: GenContext, nest: _Nesting, pop: np.ndarray) -> None:
    nc, nr, ny = ctx.counts["country"], ctx.counts["region"], ctx.counts["city"]
    ctx.relate("located_in", "region", np.arange(nr), "country", nest.region_country)
    ctx.relate("located_in", "city", np.arange(ny), "region", nest.city_region)
    ctx.relate("capital", "country", np.arange(nc), "city", _capitals(pop, nest.city_country, nc))
