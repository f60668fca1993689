"""The page reader: every article of a world read back into exactly the facts it states,
directories read across their pages, other pages refused, and hand-written edge cases."""

from __future__ import annotations

import datetime as dt
import time
from collections import Counter

import numpy as np
import pytest
from helpers import rename

import fictionworld as fw
from fictionworld.schema import ENTITY_TYPES, RELATIONS
from fictionworld.web import PageNotFound, render_pages
from fictionworld.web.reader import (
    Article,
    Statement,
    _reader,
    _split_header,
    parse_value,
    read_article,
    read_directory,
    read_whole_directory,
)

_DECIMALS = {"price_usd": 2}  # floats are written with 1 decimal, prices with cents


@pytest.fixture(scope="module")
def web(world):
    return world.web


def _key(s: Statement) -> tuple:
    return (s.predicate, s.value, s.url, s.name, s.incoming, s.start, s.end)


def _expected(world, fact_ids, entity_id: str, url_of) -> Counter:
    """What the page's facts say, as statement keys (seen from the page's entity)."""
    f = world.facts
    out: Counter = Counter()
    for r in np.searchsorted(f.id, np.asarray(fact_ids, np.int64)).tolist():
        fact = world.fact(r)
        if fact.predicate in RELATIONS:
            incoming = fact.subject != entity_id
            other = fact.subject if incoming else fact.object
            out[(fact.predicate, None, url_of(other), world.entity(other).name, incoming, fact.start, fact.end)] += 1
        else:
            v = fact.value
            if isinstance(v, float):
                v = round(v, _DECIMALS.get(fact.predicate, 1))
            out[(fact.predicate, v, None, None, False, None, None)] += 1
    return out


def _check_typed(a: Article) -> None:
    """Values come back as the schema's types: int, float, date, str."""
    attrs = {x.name: x.dtype for x in ENTITY_TYPES[a.type].attributes}
    for s in a.statements:
        if s.predicate in RELATIONS:
            assert s.value is None and s.url and s.name
            continue
        want = {"int": int, "float": float, "date": dt.date}.get(attrs[s.predicate], str)
        assert type(s.value) is want, (s, want)


def _check_pages(world, pages, rows: list[int], markdown_of, url_of) -> tuple[int, int, float]:
    """Reads every page of ``rows``; (articles, facts checked, mean seconds per read)."""
    ids = world.entities.ids
    facts, spent = 0, 0.0
    for row in rows:
        md = markdown_of(row)
        t0 = time.perf_counter()
        a = read_article(md)
        spent += time.perf_counter() - t0
        e = world.entity(int(pages.entity[row]))
        assert a is not None, md
        assert (a.url, a.name, a.type, a.aliases) == (pages.urls[row], e.name, e.type, e.aliases)
        assert a.unread == [], (a.unread, md)
        fact_ids = pages.column("fact_ids", row)
        want = _expected(world, fact_ids, ids[int(pages.entity[row])], url_of)
        got = Counter(_key(s) for s in a.statements)
        assert got == want, f"missing {want - got}, extra {got - want}\n{md}"
        _check_typed(a)
        facts += len(fact_ids)
    return len(rows), facts, spent / max(1, len(rows))


def _check_world(world, web) -> tuple[int, int, float]:
    rows = np.flatnonzero(web.pages.kind == "article").tolist()
    return _check_pages(world, web.pages, rows, lambda r: web.open(web.pages.urls[r]).markdown(), web.article_url_of)


def test_every_article_of_the_world_reads_back_as_its_facts(world, web):
    n, facts, mean = _check_world(world, web)
    assert n == len(world.entities) and facts >= len(world.facts)
    print(f"\n{n} articles, {facts} facts, {mean * 1e3:.3f} ms per article")
    assert mean < 2e-3, f"{mean * 1e3:.2f} ms per article"


def test_every_article_of_a_second_world_reads_back_as_its_facts():
    world = fw.generate(seed=3, entities=1_200)
    n, facts, _ = _check_world(world, world.web)
    assert n == len(world.entities) and facts >= len(world.facts)


def test_every_sentence_fits_exactly_one_template(world, web):
    """No two templates a type may use read the same sentence: matching is unambiguous."""
    rows = np.flatnonzero(web.pages.kind == "article")
    for row in np.random.default_rng(1).choice(rows, 300, replace=False).tolist():
        md = web.pages.text(row)
        a = read_article(md)
        templates = _reader(a.type).anywhere.templates
        _, _, paras = _split_header(md)
        for para in (p for p in paras[1:] if not p.startswith(("## ", "- **"))):
            pos = 0
            while pos < len(para):
                ends = []
                for tpl in templates:
                    q = pos
                    if tpl.head is not None:
                        h = tpl.head.match(para, pos)
                        if h is None:
                            continue
                        q = h.end()
                    if para.startswith(a.name, q) and (m := tpl.tail.match(para, q + len(a.name))):
                        ends.append(m.end())
                assert len(ends) == 1, (para[pos:], a.type)
                pos = ends[0] + 1


def test_values_parse_in_every_format():
    assert parse_value("revenue_usd", "US$1.2 million") == 1_200_000
    assert parse_value("revenue_usd", "$1,234,567") == parse_value("revenue_usd", "1,234,567 USD") == 1_234_567
    assert parse_value("box_office_usd", "US$3.45 billion") == 3_450_000_000
    assert parse_value("population", "1.23 million") == 1_230_000
    assert parse_value("population", "12 thousand") == 12_000
    assert parse_value("elevation_m", "-12 m") == -12
    assert parse_value("price_usd", "$1,234.50") == parse_value("price_usd", "1,234.50 USD") == 1234.5
    assert parse_value("area_km2", "1,234.5 km²") == parse_value("area_km2", "1234.5") == 1234.5
    d = dt.date(987, 3, 4)
    for s in ("March 4, 987", "4 March 987", "0987-03-04", "Mar 4, 987"):
        assert parse_value("founded", s) == d
    with pytest.raises(ValueError):
        parse_value("population", "about 1,200")


HAND_WRITTEN = """# Smith & Sons in Port. Ltd.

URL: https://en.fictopedia.org/wiki/Smith_Sons_in_Port_Ltd
Site: Fictopedia
Date: 2025-01-02

**Smith & Sons in Port. Ltd.** is a company. Also known as: S&S, Smith Co..

- **Revenue:** US$1.2 million
- **Inception:** 1 May 1901

## Overview

Smith & Sons in Port. Ltd. operates in the food processing industry. The official website of \
Smith & Sons in Port. Ltd. is https://www.smith.example.com. Smith & Sons in Port. Ltd. has a workforce \
of 1.25 thousand.

## Location

The headquarters of Smith & Sons in Port. Ltd. are in [Port in the Bay](https://en.fictopedia.org/wiki/Port_in_the_Bay).

## History

[Adrian P. Pofalez](https://en.fictopedia.org/wiki/Adrian_P_Pofalez_(person)) founded Smith & Sons in Port. Ltd.. \
On 1936-10-24, [A. & B. in Co.](https://en.fictopedia.org/wiki/A_B_in_Co) acquired Smith & Sons in Port. Ltd.. \
Smith & Sons in Port. Ltd. was a subsidiary of [A. & B. in Co.](https://en.fictopedia.org/wiki/A_B_in_Co) from \
October 24, 1936 to Jan 2, 1950.

## Leadership

[Ann B. Carter](https://en.fictopedia.org/wiki/Ann_B_Carter) has led Smith & Sons in Port. Ltd. as CEO since 2001-02-03.
"""


def test_hand_written_article_with_dots_ampersands_and_in():
    a = read_article(HAND_WRITTEN)
    assert a is not None and a.unread == []
    assert (a.name, a.type, a.aliases) == ("Smith & Sons in Port. Ltd.", "company", ("S&S", "Smith Co."))
    assert a.values("revenue_usd") == [1_200_000]
    assert a.values("founded") == [dt.date(1901, 5, 1)]
    assert a.values("industry") == ["food processing"]
    assert a.values("website") == ["https://www.smith.example.com"]
    assert a.value("employees") == 1_250 and a.value("students", "none") == "none"
    (hq,) = a.links("headquartered_in")
    assert (hq.name, hq.url) == ("Port in the Bay", "https://en.fictopedia.org/wiki/Port_in_the_Bay")
    (founder,) = a.links("founded_by")
    assert founder.url == "https://en.fictopedia.org/wiki/Adrian_P_Pofalez_(person)"
    assert founder.name == "Adrian P. Pofalez" and not founder.incoming
    (acq,) = a.links("acquired_by")
    assert (acq.name, acq.start, acq.end) == ("A. & B. in Co.", dt.date(1936, 10, 24), None)
    (sub,) = a.links("subsidiary_of")
    assert (sub.start, sub.end) == (dt.date(1936, 10, 24), dt.date(1950, 1, 2))
    assert a.links("ceo_of") == []
    (ceo,) = a.links("ceo_of", incoming=True)
    assert (ceo.name, ceo.incoming, ceo.start, ceo.end) == ("Ann B. Carter", True, dt.date(2001, 2, 3), None)
    assert len(a.statements) == 10
    # the bare text (no header) reads the same, without a URL
    bare = read_article(HAND_WRITTEN.split("\n\n", 2)[2])
    assert bare.url is None and bare.statements == a.statements


def test_a_sentence_no_template_states_is_unread():
    md = "**Bitter Shadow** is a film.\n\n## Overview\n\nBitter Shadow is a film. Bitter Shadow was released on 2001-01-01."
    a = read_article(md)
    assert a.unread == ["Bitter Shadow is a film."]
    assert a.values("release_date") == [dt.date(2001, 1, 1)]
    # a template of another type (a person's birthday) is no statement about a film
    md = "**Bitter Shadow** is a film.\n\n## Overview\n\nBitter Shadow was born on 2001-01-01."
    assert read_article(md).statements == []


def test_ambiguous_phrasings_resolve_by_the_entity_type():
    place = read_article("**Vale** is a country.\n\n## Overview\n\nVale was founded on 2001-01-01.")
    org = read_article("**Vale** is a company.\n\n## Overview\n\nVale was founded on 2001-01-01.")
    assert [s.predicate for s in place.statements] == ["established"]
    assert [s.predicate for s in org.statements] == ["founded"]
    book = read_article("**Vale** is a book.\n\n- **Length:** 320")
    film = read_article("**Vale** is a film.\n\n- **Length:** 95 min")
    assert [(s.predicate, s.value) for s in book.statements] == [("page_count", 320)]
    assert [(s.predicate, s.value) for s in film.statements] == [("runtime_min", 95)]
    uni = read_article("**Vale** is a university.\n\n## Overview\n\nVale is a public university.")
    product = read_article("**Vale** is a product.\n\n## Overview\n\nVale is a smartphone.")
    assert [s.predicate for s in uni.statements] == ["kind"] and uni.unread == []
    assert [s.predicate for s in product.statements] == ["category"] and product.unread == []


def test_renamed_entities_with_awkward_names_read_back(tmp_path):
    """Names with ".", "&", " in ", brackets and a lower-case first letter, through the renderer."""
    world = fw.generate(seed=5, entities=300)
    e = world.entities

    def first(t: str) -> str:
        return next(e.ids[i] for i in range(len(e)) if e.type_of(i) == t)

    names = {
        first("company"): "Smith & Sons in Port. Ltd.",
        first("city"): "de la Mar in Vale",
        first("person"): "Ann B. (Junior) Carter [II]",
        first("film"): "1.2 Million Ways",
    }
    for entity_id, name in names.items():
        world = rename(world, entity_id, name)
    pages = render_pages(world)
    rows = np.flatnonzero(pages.kind == "article").tolist()
    url_of_row = {int(pages.entity[r]): pages.urls[r] for r in rows}
    n, facts, _ = _check_pages(
        world, pages, rows, lambda r: pages.page(r, e.ids).markdown(), lambda i: url_of_row[world.row(i)]
    )
    assert n == len(world.entities) and facts >= len(world.facts)


def test_directories_read_across_their_pages(world, web):
    size = web.knobs.list_page_size
    rows = np.flatnonzero(web.pages.kind == "list").tolist()
    multi = [r for r in rows if web.pages.text(r).count("\n") + 1 > size]
    assert len(multi) >= 3
    for row in [*multi[:12], *rows[:5]]:
        url, text = web.pages.urls[row], web.pages.text(row)
        listed = [(line[3 : line.index("](")], line[line.index("](") + 2 : -1]) for line in text.split("\n")]
        first = read_directory(web.open(url).markdown())
        assert first.title == web.pages.titles[row] and first.page == 1 and first.total == len(listed)
        assert first.page_count == -(-len(listed) // size)
        members = list(first.members)
        for n in range(2, first.page_count + 1):
            part = read_directory(web.open(f"{url}?page={n}").markdown())
            assert (part.page, part.page_count, part.total) == (n, first.page_count, len(listed))
            members += part.members
        assert members == listed
        whole = read_whole_directory(lambda u: web.open(u).markdown(), url)
        assert whole.members == listed and whole.page_count == first.page_count
        assert all(u.startswith("https://en.fictopedia.org/wiki/") for _, u in members)


def test_other_pages_are_neither_articles_nor_directories(world, web):
    ids = world.entities.ids
    kinds = web.pages.kind
    for kind in sorted(set(kinds.tolist())):
        for row in np.flatnonzero(kinds == kind)[:20].tolist():
            page = web.pages.page(row, ids)
            md = page.markdown()
            assert (read_article(md) is not None) == (kind == "article"), (kind, md)
            assert (read_directory(md) is not None) == (kind == "list"), (kind, md)
            if kind == "profile":  # a confusable profile starts like an article's lead, but is none
                assert read_article(page.text) is None
    missing = PageNotFound(url="https://en.fictopedia.org/wiki/Nowhere").markdown()
    assert read_article(missing) is None and read_directory(missing) is None
    assert read_article("") is None and read_directory("") is None
    assert read_directory("Just some words.") is None
