"""The search engine's pruned ranking against the unpruned query: the common clauses' covers,
floors and probes, and hidden layers left out in the engine, page for page and float for float."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest


def scoring_at_least(hits: list, floor: float) -> list:
    """(score, segment, doc) of the hits scoring ``floor`` or more, in order."""
    return [(h[0], h[1].segment_ord, h[1].doc) for h in hits if h[0] >= floor]


@pytest.mark.parametrize("way", ["covers at any cost", "probes", "probes on a budget"])
def test_the_covers_of_a_common_union_find_its_best_pages_above_a_floor(world, way, monkeypatch):
    """``CommonClauses.above`` against the union of the same clauses read whole: for random sets of
    common clauses, floors and depths, the pages scoring at least the floor are the same pages
    with the same floats, in the same order (ties by address), whether found by covers or not.
    The covers are asked however dear ("covers at any cost"), or each is a probe (the covers
    left always cost more than the union), the probes' budget unbounded or not ("on a budget":
    then some sets get None, for the union). Each cover asked raises the floor: many sets must
    ask fewer covers than the floor given had."""
    import fictionworld.web.common_clauses as clauses_module
    from fictionworld.web.index import common_limit

    ix = world.web.index
    monkeypatch.setattr(clauses_module, "_COVER_COST", 1e9 if way == "covers at any cost" else 0.0)
    monkeypatch.setattr(clauses_module, "_PROBE_COST", 2.0 if way == "probes on a budget" else 1e9)
    asked: list[int] = []
    real_cover_top = ix.common.cover_top
    monkeypatch.setattr(ix.common, "cover_top", lambda *a: asked.append(1) or real_cover_top(*a))
    limit = common_limit(ix.num_docs)
    words = sorted({t for title in world.web.pages.titles for t in ix.analyze(title)})
    clauses = [(f, w) for w in words for f in ("title", "body") if ix.searcher.doc_freq(f, w) > limit]
    assert len(clauses) > 40
    rng = np.random.default_rng(3)
    covered = fewer = 0  # sets answered by covers; of them, those that asked fewer covers than the floor had
    for _ in range(300):
        common = [clauses[i] for i in rng.choice(len(clauses), int(rng.integers(1, 7)), replace=False)]
        union = ix._union(common)
        whole = ix._top(union, ix.num_docs)
        bound = ix.common.bound(common)
        nth = whole[min(len(whole) - 1, int(rng.integers(0, 30)))][0]
        floor = float(rng.choice([rng.uniform(0, bound), nth, clauses_module.ANY_SCORE]))  # (the last: no floor)
        n = int(rng.choice([1, 3, 10, 50]))
        ix.common.tops.clear()
        asked.clear()
        got = ix.common.above(common, floor, n)
        if got is None:
            continue
        covered += 1
        assert scoring_at_least(got, floor) == scoring_at_least(whole[:n], floor), (common, floor, n)
        best = [ix.common.best(c) * (1 + 1e-5) + 1e-5 for c in common]
        sets = [s for size in range(1, len(common) + 1) for s in combinations(range(len(common)), size)]
        reach = [set(s) for s in sets if sum(best[i] for i in s) >= floor]
        least = [s for s in reach if not any(r < s for r in reach)]
        fewer += len(asked) < len(least)
    if way == "probes on a budget":
        assert 50 < covered < 300 and fewer > 20, (covered, fewer)
    else:
        assert covered == 300 and fewer > 40, (covered, fewer)


@pytest.mark.parametrize("way", ["covers at any cost", "probes"])
def test_a_raised_floor_keeps_a_cover_that_reaches_just_above_it(way, tmp_path, monkeypatch):
    """The floor a found page sets, to the hundredth: on an index whose scores lie dense (12
    title words and 60 body words on 3,000 pages of random lengths), cases built so that the
    cover asked first (the clause on fewer pages) finds n pages whose n-th scores less than
    0.01 below the best page of the other clause, a page that does not hold the first. That
    cover must still be asked and its page found: a floor raised 0.01 past the n-th, or a
    cover's reach taken 0.01 short, loses it, which the generated worlds (their scores few and
    far apart) never show."""
    import fictionworld.web.common_clauses as clauses_module
    from fictionworld.web.index import TantivyIndex, common_limit

    rng = np.random.default_rng(5)
    titles = "amber birch cedar delta ember fjord grove heron inlet juniper kestrel lark".split()
    bodies = titles + [f"{w}{end}" for end in ("stone", "wood", "field", "mere") for w in titles]
    docs = [
        (" ".join(rng.choice(titles, int(rng.integers(1, 7)))), " ".join(rng.choice(bodies, int(rng.integers(3, 21)))))
        for _ in range(3_000)
    ]
    ix = TantivyIndex.build(docs, tmp_path / "dense")
    monkeypatch.setattr(clauses_module, "_COVER_COST", 1e9 if way == "covers at any cost" else 0.0)
    monkeypatch.setattr(clauses_module, "_PROBE_COST", 1e9)
    key = lambda h: (h[1].segment_ord, h[1].doc)  # noqa: E731
    clauses = [("title", ix.analyze(w)[0]) for w in titles] + [("body", ix.analyze(w)[0]) for w in bodies]
    assert all(ix._field_df(*c) > common_limit(ix.num_docs) for c in clauses)
    cases = 0
    for a, b in [(a, b) for a in clauses for b in clauses if ix._field_df(*a) < ix._field_df(*b)]:
        holds_a = {key(h) for h in ix._top(ix._clause(*a), ix.num_docs)}
        best_b = ix._top(ix._clause(*b), 1)[0]
        if key(best_b) in holds_a:
            continue
        whole = ix._top(ix._union([a, b]), ix.num_docs)
        of_a = [h[0] for h in whole if key(h) in holds_a]
        for n in [i + 1 for i, s in enumerate(of_a) if 0 < best_b[0] - s < 0.009][:1]:
            ix.common.tops.clear()
            got = ix.common.above([a, b], clauses_module.ANY_SCORE, n)
            assert got is not None and key(best_b) in {key(h) for h in got}, (a, b, n)
            assert scoring_at_least(got, 0.0) == scoring_at_least(whole[:n], 0.0), (a, b, n)
            cases += 1
        if cases >= 60:
            break
    assert cases >= 60, cases


@pytest.mark.parametrize("limit_by", ["share", "postings"])
def test_common_clauses_are_pruned_yet_the_top_n_stays_exact(world, limit_by, monkeypatch):
    """The search that scores common clauses only where they can change the top n, against
    one unpruned query of every clause (a chain of unions of two, so that each page's score is
    added left to right, the rare clauses' union first, as the search adds it): same pages,
    same scores, float for float, at every depth;
    every way out of the pruned search occurs (the bound met; the common-only pages found by
    the union of the common clauses, or by the covers that can reach the n-th page, or a
    common clause's n-th score where fewer than n pages hold a rare one or it is higher).
    Common is a share of the pages in a small index, a number of pages in a large one: this
    world is small, so the second case lowers that number below the share."""
    import tantivy as T

    import fictionworld.web.common_clauses as clauses_module
    import fictionworld.web.index as index_module
    from fictionworld.web.index import COMMON_CLAUSE, COMMON_SHARE, TITLE_BOOST, common_limit

    ix = world.web.index
    if limit_by == "postings":
        monkeypatch.setattr(index_module, "COMMON_POSTINGS", int(0.4 * COMMON_CLAUSE * ix.num_docs))
    assert (common_limit(ix.num_docs) < COMMON_CLAUSE * ix.num_docs) == (limit_by == "postings")
    ix.common.scores.clear(), ix.common.tops.clear()  # each case finds its bounds and merges afresh
    n_docs = ix.num_docs
    limit = common_limit(n_docs)
    searcher, schema = ix.searcher, ix.schema

    def clause(field, tok):
        q = T.Query.term_query(schema, field, tok, "freq")
        return T.Query.boost_query(q, TITLE_BOOST) if field == "title" else q

    def unpruned(tokens, n):
        tokens = list(dict.fromkeys(tokens))
        if len(tokens) > 1:
            tokens = [x for x in tokens if ix.doc_freq(x) <= COMMON_SHARE * n_docs] or tokens
        clauses = [(f, t) for t in tokens for f in ("title", "body")]
        common = [c for c in clauses if searcher.doc_freq(*c) > limit]
        rare = [c for c in clauses if c not in common]
        union = lambda cs: T.Query.boolean_query([(T.Occur.Should, clause(*c)) for c in cs])  # noqa: E731
        forms.append(
            "one kind" if not (rare and common) else "added" if len(common) <= index_module._MAX_ADDED else "union"
        )
        if forms[-1] == "union":  # rare + (c1 + c2 ...): two sub-queries
            query = T.Query.boolean_query([(T.Occur.Should, union(rare)), (T.Occur.Should, union(common))])
        else:
            # Every page of every clause, its score added left to right: the rare clauses'
            # union, then each common clause (a union of two sums the same float either way round).
            parts = ([union(rare)] if rare else []) + [clause(*c) for c in common]
            query = parts[0]
            for part in parts[1:]:
                query = T.Query.boolean_query([(T.Occur.Should, query), (T.Occur.Should, part)])
        hits = searcher.search(query, limit=n, count=False).hits
        scores = np.array([h[0] for h in hits], np.float32)
        pids = np.array(searcher.fast_field_values("pid", [h[1] for h in hits]), np.int64)
        order = np.lexsort((pids, -np.round(scores, 4)))
        return pids[order], scores[order]

    words = sorted({t for title in world.web.pages.titles for t in ix.analyze(title)})
    df = np.array([ix.doc_freq(w) for w in words])
    common = [w for w, d in zip(words, df) if d > 2 * limit]
    rare = [w for w, d in zip(words, df) if 0 < d <= limit]
    assert len(common) > 20 and len(rare) > 100
    common_set = set(common)
    calls, bounds = [], []  # the searches a query made (not those finding a bound), bounds asked
    real_top, real_bound = ix._top, ix.common.bound

    def top(query, n, hide=()):
        if not bounds or bounds[-1] != "finding":
            calls.append(n)
        return real_top(query, n, hide)

    def bound(clauses):
        bounds.append("finding")
        value = real_bound(clauses)
        bounds[-1] = value
        return value

    real_above, real_floor = ix.common.above, ix.common.floor
    covered = []  # the queries whose common-only pages came from covers (none: from the union)
    floors = []  # the clauses' floors asked for
    floored = []  # covers above a clause's floor, not the n-th of the rare pages'

    def above(*args):
        got = real_above(*args)
        covered.append(got is not None)
        floored.append(got is not None and args[1] in floors)
        return got

    def floor(*args):
        floors.append(real_floor(*args))
        return floors[-1]

    ix._top, ix.common.bound, ix.common.above, ix.common.floor = top, bound, above, floor
    rng = np.random.default_rng(11)
    cover_cost, max_added = clauses_module._COVER_COST, index_module._MAX_ADDED
    ways = {"one query": 0, "bound met": 0, "merged": 0, "covers": 0, "covers above a clause's floor": 0,
            "common clauses added one at a time": 0, "common clauses as one union": 0}  # fmt: skip
    forms = []  # how the unpruned query of each search added a page's clauses
    try:
        for i in range(600):
            tokens = [str(x) for x in rng.choice(rare, int(rng.integers(1, 3)))]
            if i % 2:  # common words of a page holding the rare one: that page ranks high on both
                held = ix.analyze(world.web.pages.text(int(ix.search(tokens[:1], 1)[0][0])))
                held = sorted({w for w in held if w in common_set})
                tokens += [str(x) for x in rng.choice(held, min(len(held), int(rng.integers(1, 3))), replace=False)]
            else:
                tokens += [str(x) for x in rng.choice(common, int(rng.integers(0, 3)))]
            tokens = [tokens[i] for i in rng.permutation(len(tokens))]
            n = int(rng.choice([1, 3, 10, 50, 200]))
            # a third of the queries take the covers wherever there are some, however costly; a
            # third find them by probes only (the covers left always dearer than the union)
            monkeypatch.setattr(clauses_module, "_COVER_COST", (cover_cost, 1e9, 0.0)[i % 3])
            # and the common clauses are added to the rare-first query one at a time, or as a
            # union past a limit lowered to 0 or 1 (these queries hold at most 4 common clauses)
            monkeypatch.setattr(index_module, "_MAX_ADDED", (max_added, 0, 1, max_added, max_added)[i % 5])
            calls.clear()
            bounds.clear()
            covered.clear()
            floors.clear()
            floored.clear()
            got = ix.search(tokens, n)
            want = unpruned(tokens, n)
            assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]), (tokens, n)
            way = "covers" if any(covered) else "merged" if len(calls) >= 2 else "bound met" if bounds else "one query"
            ways[way] += 1
            ways["covers above a clause's floor"] += any(floored)
            ways["common clauses added one at a time"] += forms[-1] == "added"
            ways["common clauses as one union"] += forms[-1] == "union"
    finally:
        ix._top, ix.common.bound, ix.common.above, ix.common.floor = real_top, real_bound, real_above, real_floor
    assert min(ways.values()) > 20, ways


def test_hidden_layers_are_left_out_in_the_engine_with_the_same_scores(world):
    """``search(tokens, n, hide=...)`` against the whole ranking with those layers' pages
    struck out afterwards: the same pages, the same scores float for float, at every depth.
    The queries are built from perturbation pages' titles, so the layers left out hold many
    of the best pages."""
    from fictionworld.web.pages import LAYERS

    ix = world.web.index
    pages = world.web.pages
    assert ix.hides_layers
    hidden_rows = np.flatnonzero(pages.layer > 0)
    assert len(hidden_rows) > 500
    rng = np.random.default_rng(5)
    struck = 0
    for i in range(300):
        row = int(rng.choice(hidden_rows)) if i % 3 else int(rng.integers(len(pages)))
        words = ix.analyze(pages.titles[row])
        tokens = [str(w) for w in rng.choice(words, min(len(words), int(rng.integers(1, 4))), replace=False)]
        hide = tuple(str(h) for h in rng.choice(LAYERS[1:], int(rng.integers(1, 4)), replace=False))
        n = int(rng.choice([1, 5, 20, 100]))
        got = ix.search(tokens, n, hide=hide)
        every, scores = ix.search(tokens, len(pages))
        keep = ~np.isin(pages.layer[every], [LAYERS.index(h) for h in hide])
        struck += int((~keep[: n + (~keep).sum()]).sum() > 0)
        assert np.array_equal(got[0], every[keep][:n]) and np.array_equal(got[1], scores[keep][:n]), (tokens, hide, n)
    assert struck > 150  # most searches did have hidden pages among their best
    old = type(ix).__new__(type(ix))
    with pytest.raises(ValueError, match="does not know the pages' layers"):
        old.__dict__.update(ix.__dict__, hides_layers=False)
        old.search(["film"], 5, hide=("distractor",))


def test_hidden_layers_and_common_clauses_together_stay_exact(world, monkeypatch):
    """A rare word of a perturbation page's title and common words, every perturbation layer
    left out: against the whole ranking with those pages struck out, at depths where too few
    shown pages hold the rare word (the common-only pages then fill the list). A common
    clause's n-th score over every page may be above its n-th over the pages shown, so it is
    no floor there (tested: taking it as one fails here)."""
    import fictionworld.web.index as index_module
    from fictionworld.web.index import COMMON_CLAUSE, common_limit
    from fictionworld.web.pages import LAYERS

    ix = world.web.index
    pages = world.web.pages
    monkeypatch.setattr(index_module, "COMMON_POSTINGS", int(0.4 * COMMON_CLAUSE * ix.num_docs))
    ix.common.scores.clear(), ix.common.tops.clear()
    limit = common_limit(ix.num_docs)
    words = sorted({t for title in pages.titles for t in ix.analyze(title)})
    common = [w for w in words if ix.doc_freq(w) > 2 * limit]
    hidden_rows = np.flatnonzero(pages.layer > 0)
    hide = tuple(LAYERS[1:])
    rng = np.random.default_rng(8)
    filled = 0
    real_best = ix.common.union_top
    monkeypatch.setattr(ix.common, "union_top", lambda *a: (filled_at.append(1), real_best(*a))[1])
    for _ in range(300):
        row = int(rng.choice(hidden_rows))
        rare = [w for w in ix.analyze(pages.titles[row]) if 0 < ix.doc_freq(w) <= limit]
        if not rare:
            continue
        tokens = [str(rng.choice(rare)), *(str(w) for w in rng.choice(common, int(rng.integers(1, 3))))]
        n = int(rng.choice([5, 10, 20, 40]))
        filled_at = []
        got = ix.search(tokens, n, hide=hide)
        every, scores = ix.search(tokens, len(pages))
        keep = pages.layer[every] == 0
        assert np.array_equal(got[0], every[keep][:n]) and np.array_equal(got[1], scores[keep][:n]), (tokens, n)
        filled += bool(filled_at)
    assert filled > 20


def test_search_leaves_hidden_layers_out_in_the_engine_and_answers_as_before(world, monkeypatch):
    """``Web.hits`` passes the layers its knobs show none of to the engine: the same results
    as the search that strikes them out after ranking (its fetch growing four times over
    until it has enough), under the default knobs (every perturbation layer hidden) and under
    knobs that show a share of some layers (those are struck out after ranking as before)."""
    from fictionworld.knobs import Knobs

    web = world.web
    pages = web.pages
    rng = np.random.default_rng(8)
    hidden_rows = np.flatnonzero(pages.layer > 0)
    queries = [pages.titles[int(r)] for r in rng.choice(hidden_rows, 120, replace=False)]
    queries += [world.entities.name[int(r)] + " founded" for r in rng.choice(len(world.entities), 60, replace=False)]
    queries += ["film", "people born in", "population", "released"]
    hides = []
    real = web.index.search

    def search(tokens, n, hide=()):
        hides.append(hide)
        return real(tokens, n, hide)

    for knobs in (Knobs(), Knobs(distractor_rate=0.5, conflict_rate=1.0)):
        monkeypatch.setattr(web.index, "search", search)
        hides.clear()
        got = [web.hits(q, 10, knobs) for q in queries]
        assert {h for h in hides if h} == (
            {("distractor", "confusable", "conflict")} if knobs == Knobs() else {("confusable",)}
        )
        monkeypatch.setattr(web.index, "hides_layers", False)  # as an index built before layers were indexed
        hides.clear()
        assert [web.hits(q, 10, knobs) for q in queries] == got
        assert not any(hides)
        if knobs == Knobs():  # (struck out after ranking, many a query had to fetch again)
            assert len(hides) > len(queries) + 20, len(hides) - len(queries)
        monkeypatch.undo()


def test_pages_left_out_in_the_engine_do_not_count_against_the_longest_fetch(world, monkeypatch):
    """Where striking hidden pages out after ranking stopped at the longest fetch short of n
    shown pages, leaving them out in the engine reaches further down the same ranking: the
    old answer's pages begin the new answer, and many a query finds more."""
    import fictionworld.web.web as web_module

    web = world.web
    pages = web.pages
    rng = np.random.default_rng(9)
    queries = [pages.titles[int(r)] for r in rng.choice(np.flatnonzero(pages.layer > 0), 150, replace=False)]
    monkeypatch.setattr(web_module, "MAX_FETCH", 20)  # (the first fetch of n = 10 is the longest)
    new = [web.hits(q, 10) for q in queries]
    monkeypatch.setattr(web.index, "hides_layers", False)
    old = [web.hits(q, 10) for q in queries]
    pages_of = lambda hits: [h.page for h in hits]  # noqa: E731
    # (pages, not scores: a linked entity's article scores above the best page found, which
    # is 0 where none was found before)
    assert all(pages_of(o) == pages_of(m)[: len(o)] for o, m in zip(old, new))
    assert sum(len(m) > len(o) for o, m in zip(old, new)) > 20
