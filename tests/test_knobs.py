"""Every perturbation knob: off by default, and each has the effect it promises."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError
from rapidfuzz.distance import OSA

import fictionworld as fw
from fictionworld.knobs import Knobs, Schedule, WebSpec
from fictionworld.surface import extract_dates, extract_numbers
from fictionworld.web import Page, PageNotFound
from fictionworld.web.pages import LAYERS


@pytest.fixture(scope="module")
def web(world):
    return world.web


def _pool(web, layer: str) -> np.ndarray:
    return np.flatnonzero(web.pages.layer == LAYERS.index(layer))


def _layers_in_results(web, query: str, knobs: Knobs) -> set[int]:
    rows = [web.pages.row_of_url[r.url] for r in web.search(query, k=10, knobs=knobs)]
    return {int(web.pages.layer[r]) for r in rows}


def test_defaults_are_all_off():
    k = Knobs()
    assert (k.snippet_leak_rate, k.distractor_rate, k.confusable_rate, k.conflict_rate, k.fault_rate) == (0,) * 5


@pytest.mark.parametrize("layer", ["distractor", "confusable", "conflict"])
def test_perturbation_layers_show_by_their_rate(world, web, layer):
    rows = _pool(web, layer)
    assert len(rows) > 50
    sample = rows[:60].tolist()
    off, on = Knobs(), Knobs(**{f"{layer}_rate": 1.0})
    shown = 0
    for r in sample:
        name = world.entities.name[int(web.pages.entity[r])]
        query = web.pages.titles[r] if layer != "conflict" else name
        assert LAYERS.index(layer) not in _layers_in_results(web, query, off)
        assert isinstance(web.open(web.pages.urls[r], off), PageNotFound)
        assert isinstance(web.open(web.pages.urls[r], on), Page)
        shown += LAYERS.index(layer) in _layers_in_results(web, query, on)
    assert shown >= 0.9 * len(sample), f"{layer} pages rank for their queries when on"
    # a rate shows that share of the layer (one fixed draw per page)
    half = Knobs(**{f"{layer}_rate": 0.5})
    visible = web.pages.visible(rows, web.rates(half)).mean()
    assert 0.4 < visible < 0.6


def test_conflicting_pages_state_wrong_values_and_gold_stays_authoritative(world, web):
    ids = {int(i): r for r, i in enumerate(world.facts.id.tolist())}
    on = Knobs(conflict_rate=1.0)
    for r in _pool(web, "conflict")[:80].tolist():
        page = web.open(web.pages.urls[r], on)
        assert page.credibility == "low" and page.contradicts and not page.fact_ids
        for fid in page.contradicts:
            fact = world.fact(ids[fid])
            art = web.open(web.article_url_of(fact.subject), on)
            assert fid in art.fact_ids  # the authoritative page still states the truth
            v = fact.value
            if hasattr(v, "year"):
                assert v not in extract_dates(page.text) and v in extract_dates(art.text)
            else:
                assert not any(abs(x - v) < 1e-9 for x in extract_numbers(page.text))


def test_confusable_names_are_one_edit_from_a_real_name_and_name_nothing_real(world, web):
    real = set(world.entities.name.tolist())
    for r in _pool(web, "confusable")[:200].tolist():
        fake = web.pages.titles[r].rsplit(" – ", 1)[0]
        true = world.entities.name[int(web.pages.entity[r])]
        assert fake not in real
        assert OSA.distance(fake, true) == 1


def test_distractors_are_near_misses_of_another_kind(world, web):
    for r in _pool(web, "distractor")[:100].tolist():
        name = world.entities.name[int(web.pages.entity[r])]
        title = web.pages.titles[r]
        assert name in title and title != name and "not to be confused" in web.pages.text(r)


def test_snippet_leak_rate(world, web):
    founded = [r for r in world.entities.rows_of_type("company").tolist()][:60]
    queries = [f"{world.entities.name[r]} founded" for r in founded]

    def snippets(rate: float) -> list[str]:
        knobs = Knobs(snippet_leak_rate=rate)
        return [web.search(q, k=1, knobs=knobs)[0].snippet for q in queries]

    def share(items) -> float:
        items = list(items)
        return sum(items) / len(items)

    teased, leaked, half = snippets(0.0), snippets(1.0), snippets(0.5)
    assert not any(extract_dates(s) for s in teased)  # "founded on …"
    assert share("…" in s.removesuffix(" …") for s in teased) >= 0.9
    assert not any("…" in s.removesuffix(" …") for s in leaked)  # nothing masked
    assert share(bool(extract_dates(s)) for s in leaked) >= 0.5  # the founding date shows
    assert 0.2 < share("…" in s.removesuffix(" …") for s in half) < 0.8


def test_list_page_size_splits_directories(world, web):
    rows = np.flatnonzero(web.pages.kind == "list")
    big = max(rows.tolist(), key=lambda r: len(web.pages.text(r).splitlines()))
    url, n = web.pages.urls[big], len(web.pages.text(big).splitlines())
    for size in (20, 7, 3):
        knobs = Knobs(list_page_size=size)
        first = web.open(url, knobs)
        assert first.page_count == math.ceil(n / size)
        seen = []
        for p in range(1, first.page_count + 1):
            page = web.open(f"{url}?page={p}", knobs)
            entries = [x for x in page.text.splitlines() if x.startswith("- [")]
            assert len(entries) <= size
            seen += entries
            assert ("Next page" in page.text) == (p < first.page_count)
        assert seen == web.pages.text(big).splitlines()
        assert isinstance(web.open(f"{url}?page={first.page_count + 1}", knobs), PageNotFound)


def test_results_per_page(web):
    for n in (1, 4, 10, 25):
        assert len(web.search("company", knobs=Knobs(results_per_page=n))) == n


def test_fault_rate_injects_readable_faults_deterministically(web):
    def run(rate, seed, kinds=("timeout", "server_error", "rate_limited")):
        s = web.session(Knobs(fault_rate=rate, fault_kinds=kinds), seed=seed)
        out = [s.search("company").fault if i % 2 else s.open(web.pages.urls[i]).fault for i in range(300)]
        return out, s

    none, s = run(0.0, 1)
    assert not any(none) and s.faults == 0
    some, s = run(0.3, 1)
    assert 0.2 < s.faults / 300 < 0.4
    assert run(0.3, 1)[0] == some and run(0.3, 2)[0] != some
    all_, _ = run(1.0, 1, ("timeout",))
    assert set(all_) == {"timeout"}
    sess = web.session(Knobs(fault_rate=1.0), seed=0)
    obs = sess.search("company")
    assert not obs.ok and obs.text.startswith("Error:") and "try again" in obs.text


def test_session_turns_bad_calls_into_observations(web):
    s = web.session(seed=0)
    assert s.search("").text.startswith("Error: empty query")
    assert s.open("not a url").text.startswith("Error: malformed URL")
    assert "404" in s.open("https://en.fictopedia.org/wiki/Nope").text
    ok = s.search("company")
    assert ok.ok and ok.text.startswith("[1] ")


def test_knobs_from_the_spec_are_the_default(world):
    spec = world.spec.model_copy(update={"web": WebSpec(knobs=Knobs(results_per_page=3))})
    w2 = fw.generate(seed=11, entities=400, spec=spec)
    assert len(w2.search("company")) == 3
    again = fw.WorldSpec.model_validate_json(spec.model_dump_json())
    assert again.web.knobs.results_per_page == 3


def test_web_spec_does_not_change_the_graph_hash(world):
    spec = world.spec.model_copy(update={"web": WebSpec(perturbation_pool=0.5)})
    assert (
        fw.generate(seed=3, entities=300, spec=spec).world_hash
        == fw.generate(seed=3, entities=300, spec=world.spec).world_hash
    )


def test_knob_validation():
    with pytest.raises(ValidationError):
        Knobs(conflict_rate=1.5)
    with pytest.raises(ValidationError):
        Knobs(list_page_size=0)
    with pytest.raises(ValidationError):
        Knobs(fault_kinds=())
    with pytest.raises(ValidationError):
        Knobs(fault_kinds=("meteor",))


def test_schedules():
    start, end = Knobs(), Knobs(conflict_rate=0.4, distractor_rate=0.8, list_page_size=4, fault_kinds=("timeout",))
    lin = Schedule(start=start, end=end, steps=100)
    assert lin.at(0) == start and lin.at(100) == end and lin.at(10_000) == end and lin.at(-5) == start
    assert lin.at(50).conflict_rate == pytest.approx(0.2) and lin.at(50).list_page_size == 12
    exp = Schedule(start=start, end=end, steps=100, curve="exponential", base=10)
    assert exp.at(50).conflict_rate < lin.at(50).conflict_rate  # easy longer, then noisy
    assert exp.at(50).conflict_rate == pytest.approx(0.4 * (math.sqrt(10) - 1) / 9, abs=1e-6)
    rates = [exp.at(s).distractor_rate for s in range(0, 101, 10)]
    assert rates == sorted(rates)
    step = Schedule(start=start, end=end, steps=30, curve="step")
    assert step.at(29) == start and step.at(30) == end
    assert lin.at(99).fault_kinds == start.fault_kinds


def test_a_directory_page_records_exactly_its_members_facts(world, web):
    """Each page of a split directory keeps the directory's facts whose subject is listed on
    that page (read off the members' articles), as the fact table says: for one directory in
    ten (relation and attribute ones) and a page size that splits most of them."""
    f = world.facts
    knobs = Knobs(list_page_size=3)
    checked = 0
    subject = dict(zip(f.id.tolist(), f.subject.tolist()))
    for row in np.flatnonzero(web.pages.kind == "list")[::10].tolist():
        whole = web.pages.page(row, web.entity_ids)
        url = web.pages.urls[row]
        count = web.open(url, knobs).page_count
        got = []
        for p in range(1, count + 1):
            page = web.open(f"{url}?page={p}", knobs)
            rows = {world.row(e) for e in page.entity_ids}
            assert page.fact_ids == tuple(i for i in whole.fact_ids if subject[i] in rows)
            got += page.fact_ids
        assert sorted(got) == sorted(whole.fact_ids)  # every fact is on the page of its member
        checked += count > 1
    assert checked >= 10


def test_a_directory_page_lists_exactly_the_entities_it_links(world, web):
    """A directory page's ``entity_ids`` (found from its links, not from every entity of the
    directory) are the directory's entities, in its order, whose articles the page links: for
    one directory in five and page sizes that split most of them or none."""
    checked = 0
    for row in np.flatnonzero(web.pages.kind == "list")[::5].tolist():
        whole = web.pages.page(row, web.entity_ids)
        url = web.pages.urls[row]
        for size in (3, 50, 1_000):
            knobs = Knobs(list_page_size=size)
            count = web.open(url, knobs).page_count
            for p in range(1, count + 1):
                page = web.open(f"{url}?page={p}", knobs)
                # each entry is "- [name](url)"; a URL may hold parentheses ("Vale_(film)")
                linked = {x[x.index("](") + 2 : -1] for x in page.text.splitlines() if x.startswith("- [")}
                assert page.entity_ids == tuple(e for e in whole.entity_ids if web.article_url_of(e) in linked)
                checked += bool(page.entity_ids)
    assert checked >= 100
