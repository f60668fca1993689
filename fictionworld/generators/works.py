"""Creative works and products: each made by someone alive and old enough, released by an
organisation that already existed."""

from __future__ import annotations

import numpy as np

from fictionworld.dates import year_start
from fictionworld.generators import vocab
from fictionworld.generators.base import GenContext, pick_founded_before, register, sample_dates, years
from fictionworld.generators.flow import Released, need
from fictionworld.generators.morphology import CULTURES
from fictionworld.generators.naming import clean_stems
from fictionworld.generators.orgs import alive_to, pick_people
from fictionworld.schema import BOOK_GENRES, FILM_GENRES, MUSIC_GENRES, OCCUPATIONS, PRODUCT_CATEGORIES
from fictionworld.tables import object_array

__all__ = ["active_people", "titles"]


def active_people(
    ctx: GenContext,
    rng: np.random.Generator,
    n: int,
    occupations: tuple[str, ...],
    min_age: float,
    max_age: float,
    lo: int,
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` (person, date) pairs: a person of the occupations (else anyone) and a date at
    which they were alive and aged [min_age, max_age], not before ``lo``."""
    people = need(ctx.flow.people, "person")
    birth, life_end = people.birth.astype(np.int64), alive_to(ctx)
    w_lo = np.maximum(birth + years(min_age), lo)
    w_hi = np.minimum(np.minimum(birth + years(max_age), life_end), ctx.present)
    ok = w_hi > w_lo
    codes = [OCCUPATIONS.index(o) for o in occupations]
    pool = np.flatnonzero(ok & np.isin(people.occupation, codes))
    if len(pool) == 0:
        pool = np.flatnonzero(ok)
    if len(pool) == 0:
        return np.full(n, -1, np.int64), np.full(n, max(lo, ctx.present), np.int64)
    who = pool[rng.integers(len(pool), size=n)]
    when = w_lo[who] + np.floor(rng.random(n) * (w_hi[who] - w_lo[who])).astype(np.int64)
    return who, when


def titles(ctx: GenContext, key: str, n: int, culture: np.ndarray, patterns: tuple[str, ...]) -> list[str]:
    rng = ctx.rng(key)

    def candidates(slots: np.ndarray, rnd: int) -> list[str]:
        stems = clean_stems(culture[slots], rng).tolist()
        a = rng.integers(len(vocab.ADJECTIVES), size=len(slots)).tolist()
        b = rng.integers(len(vocab.NOUNS), size=len(slots)).tolist()
        pat = rng.integers(len(patterns), size=len(slots)).tolist()
        return [
            _article(patterns[p].format(a=vocab.ADJECTIVES[i], n=vocab.NOUNS[j], s=s))
            for p, i, j, s in zip(pat, a, b, stems)
        ]

    return ctx.unique(key.split("/")[0], candidates, n)


def _article(title: str) -> str:
    """ "A Embassy" -> "An Embassy"."""
    if title.startswith("A ") and title[2:3] in "AEIOU":
        return "An " + title[2:]
    return title


def _person_culture(ctx: GenContext, who: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    fallback = rng.integers(len(CULTURES), size=len(who))
    if not ctx.has("person"):
        return fallback
    return np.where(who >= 0, need(ctx.flow.people, "person").culture[np.maximum(who, 0)], fallback)


def isbn13(rng: np.random.Generator, n: int) -> list[str]:
    body = rng.choice(10**9, size=n, replace=False).astype(np.int64)
    digits = np.stack(
        [np.full(n, 9), np.full(n, 7), np.full(n, 8)] + [(body // 10**k) % 10 for k in range(8, -1, -1)], axis=1
    )
    check = (10 - (digits * np.tile([1, 3], 6)).sum(axis=1) % 10) % 10
    return [
        f"978-{d[3]}-{''.join(map(str, d[4:8]))}-{''.join(map(str, d[8:12]))}-{c}"
        for d, c in zip(digits.tolist(), check.tolist())
    ]


def _org_after(ctx: GenContext, rng, org_type: str, when: np.ndarray, share: float) -> np.ndarray:
    if not ctx.has(org_type):
        return np.full(len(when), -1, np.int64)
    org = pick_founded_before(rng, ctx.flow.founded(org_type).founded, when)
    return np.where(rng.random(len(when)) < share, org, -1)


@register("books-v0", produces=("book",), after=("person", "publisher"))
def generate_books(ctx: GenContext) -> None:
    ctx.source = "books-v0"
    n, present = ctx.span("book")[1], ctx.present
    r = ctx.rng("book/attributes")
    pub_founded = need(ctx.flow.publishers, "publisher").founded
    lo = max(year_start(1880), int(pub_founded.min()) + 1)
    ra = ctx.rng("author_of")
    if ctx.has("person"):
        author, date = active_people(ctx, ra, n, ("writer", "journalist", "scientist"), 20, 88, lo)
    else:
        author, date = np.full(n, -1, np.int64), sample_dates(ra, n, lo, present, 2.0).astype(np.int64)
    publisher = pick_founded_before(ctx.rng("published_by"), pub_founded, date)
    names = titles(ctx, "book/titles", n, _person_culture(ctx, author, r), vocab.TITLE_PATTERNS)
    ctx.set_names("book", names)
    ctx.set_attr("book", "publication_date", date.astype(np.int32))
    ctx.set_attr("book", "page_count", np.exp(r.normal(np.log(280), 0.45, n)).clip(48, 1400).astype(np.int64))
    ctx.set_attr("book", "genre", np.array(BOOK_GENRES, dtype=object)[r.integers(len(BOOK_GENRES), size=n)])
    ctx.set_attr("book", "isbn", object_array(isbn13(r, n)))
    ctx.flow.books = Released(date=date)
    ctx.relate("author_of", "person", author, "book", np.arange(n))
    ctx.relate("published_by", "book", np.arange(n), "publisher", publisher)


@register("films-v0", produces=("film",), after=("person", "company"))
def generate_films(ctx: GenContext) -> None:
    ctx.source = "films-v0"
    n = ctx.span("film")[1]
    r = ctx.rng("film/attributes")
    director, date = active_people(ctx, ctx.rng("directed_by"), n, ("film director",), 22, 82, year_start(1905))
    producer = _org_after(ctx, ctx.rng("produced_by"), "company", date, 0.8)
    rc = ctx.rng("starred_in")
    k = rc.integers(2, 5, size=n)
    film = np.repeat(np.arange(n), k)
    actor = pick_people(ctx, rc, ("actor",), date[film], 6, 88)
    pairs = np.unique(np.stack([film, actor], 1)[actor >= 0], axis=0)
    ctx.set_names("film", titles(ctx, "film/titles", n, _person_culture(ctx, director, r), vocab.TITLE_PATTERNS))
    ctx.set_attr("film", "release_date", date.astype(np.int32))
    ctx.set_attr("film", "runtime_min", np.round(r.normal(108, 22, n)).clip(62, 220).astype(np.int64))
    ctx.set_attr("film", "genre", np.array(FILM_GENRES, dtype=object)[r.integers(len(FILM_GENRES), size=n)])
    box = np.exp(r.normal(np.log(5e6), 1.8, n)).clip(1_000, 2.8e9).astype(np.int64)
    ctx.set_attr("film", "box_office_usd", np.where(r.random(n) < 0.7, box, np.iinfo(np.int64).min))
    ctx.flow.films = Released(date=date)
    ctx.relate("directed_by", "film", np.arange(n), "person", director)
    ctx.relate("produced_by", "film", np.arange(n), "company", producer)
    ctx.relate("starred_in", "person", pairs[:, 1], "film", pairs[:, 0])


@register("albums-v0", produces=("album",), after=("person", "company"))
def generate_albums(ctx: GenContext) -> None:
    ctx.source = "albums-v0"
    n = ctx.span("album")[1]
    r = ctx.rng("album/attributes")
    artist, date = active_people(ctx, ctx.rng("performed_by"), n, ("musician",), 15, 82, year_start(1925))
    label = _org_after(ctx, ctx.rng("released_by"), "company", date, 0.7)
    runtime = np.round(r.normal(46, 10, n)).clip(20, 95)
    tracks = np.round(runtime / r.uniform(3, 5.5, n)).clip(4, 30).astype(np.int64)
    ctx.set_names("album", titles(ctx, "album/titles", n, _person_culture(ctx, artist, r), vocab.ALBUM_PATTERNS))
    ctx.set_attr("album", "release_date", date.astype(np.int32))
    ctx.set_attr("album", "runtime_min", runtime.astype(np.int64))
    ctx.set_attr("album", "genre", np.array(MUSIC_GENRES, dtype=object)[r.integers(len(MUSIC_GENRES), size=n)])
    ctx.set_attr("album", "track_count", tracks)
    ctx.flow.albums = Released(date=date)
    ctx.relate("performed_by", "album", np.arange(n), "person", artist)
    ctx.relate("released_by", "album", np.arange(n), "company", label)


_PRICE = dict(
    zip(
        PRODUCT_CATEGORIES,
        (
            600,
            900,
            250,
            700,
            500,
            150,
            1200,
            300,
            60000,
            800,
            350,
            40,
            130,
            250,
            120,
            1500,
            1400,
            45000,
        ),
    )
)


@register("products-v0", produces=("product",), after=("company",))
def generate_products(ctx: GenContext) -> None:
    ctx.source = "products-v0"
    n, present = ctx.span("product")[1], ctx.present
    r = ctx.rng("product/attributes")
    rm = ctx.rng("manufactured_by")
    companies = need(ctx.flow.companies, "company")
    founded = companies.founded
    date = sample_dates(rm, n, max(year_start(1905), int(founded.min()) + 1), present, 2.5).astype(np.int64)
    maker = pick_founded_before(rm, founded, date)
    category = r.integers(len(PRODUCT_CATEGORIES), size=n)
    base = np.array([_PRICE[c] for c in PRODUCT_CATEGORIES], np.float64)[category]
    price = np.round(base * np.exp(r.normal(0, 0.4, n)), 2).clip(1, 490_000)
    brand = companies.stem[maker]
    rn = ctx.rng("product/names")

    def candidates(slots: np.ndarray, rnd: int) -> list[str]:
        w = rn.integers(len(vocab.PRODUCT_WORDS), size=len(slots)).tolist()
        num = rn.integers(2, 990 if rnd < 5 else 99_990, size=len(slots)).tolist()
        return [f"{brand[s]} {vocab.PRODUCT_WORDS[i]} {k}" for s, i, k in zip(slots.tolist(), w, num)]

    ctx.set_names("product", ctx.unique("product", candidates, n))
    ctx.set_attr("product", "launch_date", date.astype(np.int32))
    ctx.set_attr("product", "category", np.array(PRODUCT_CATEGORIES, dtype=object)[category])
    ctx.set_attr("product", "price_usd", price)
    ctx.relate("manufactured_by", "product", np.arange(n), "company", maker)
