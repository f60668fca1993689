"""The index of a sharded build (issue 19): shards' segments joined into one index that ranks
like a single one, listed by page id, page ids of hits read from the runs file, and the index
writer's heap per shard."""

from __future__ import annotations

import json

import numpy as np
import pytest
from build_helpers import SEED, small_spec

from fictionworld.web.shards import build_world

pytestmark = pytest.mark.big


@pytest.fixture(scope="module")
def sharded(tmp_path_factory):
    path = tmp_path_factory.mktemp("sharded") / "s"
    build_world(small_spec(), SEED, path, workers=2, shards=5)
    return path


def test_the_sharded_index_ranks_like_one_index_ties_included(sharded, tmp_path):
    """Scores and order of the joined shard index equal a single index over the same pages,
    for many queries, with deep result lists where ties are common."""
    from fictionworld.web.index import TantivyIndex
    from fictionworld.web.pages import PageTable
    from fictionworld.web.render import plain_text

    pages = PageTable.load(sharded / "pages.arrow")
    text = list(pages.texts)
    single = TantivyIndex.build(((t, plain_text(x)) for t, x in zip(pages.titles, text)), tmp_path / "one")
    joined = TantivyIndex.open(sharded / "index")
    rng = np.random.default_rng(0)
    vocab = sorted({w for t in pages.titles[:2000] for w in single.analyze(t)})
    ties = 0
    for _ in range(150):
        tokens = list(rng.choice(vocab, size=int(rng.integers(1, 4))))
        a, b = single.search(tokens, 200), joined.search(tokens, 200)
        assert np.array_equal(a[0], b[0]) and np.allclose(a[1], b[1])
        ties += int((np.diff(a[1]) == 0).sum())
    assert ties > 100  # the comparison covered tied scores


def test_joined_segments_are_listed_by_page_id_so_ties_go_to_the_lower_page(tmp_path):
    """Whatever order the shards' segments come in, the joined index lists them by page id,
    so tantivy's tie-break (the lower document address) is the lower page id."""
    from fictionworld.web.index import TantivyIndex
    from fictionworld.web.join import _join_indexes

    docs = [("Alpha", "alpha beta gamma")] * 6  # every page scores the same for "alpha"
    low = TantivyIndex.build(docs, tmp_path / "low", first_id=0)
    high = TantivyIndex.build(docs, tmp_path / "high", first_id=6)
    _join_indexes([high.path, low.path], tmp_path / "joined")
    joined = TantivyIndex.open(tmp_path / "joined")
    first = [json.loads((p.path / "pid-runs.json").read_text())["segments"] for p in (low, high)]
    listed = [
        m["segment_id"].replace("-", "")
        for m in json.loads((tmp_path / "joined" / "meta.json").read_text())["segments"]
    ]
    assert listed == [next(iter(first[0])), next(iter(first[1]))]
    pids, scores = joined.search(["alpha"], 4)
    assert pids.tolist() == [0, 1, 2, 3] and len(set(scores.tolist())) == 1


def _every_address(ix):
    import tantivy

    meta = json.loads((ix.path / "meta.json").read_text())["segments"]
    return [tantivy.DocAddress(o, d) for o, m in enumerate(meta) for d in range(m["max_doc"])]


def test_page_ids_of_hits_come_from_the_runs_file_and_agree_with_the_fast_field(sharded, tmp_path):
    """Every document of the joined index (several segments per shard) maps to its page id by
    the runs file; a missing, corrupt or wrong file falls back to the fast field, never to
    wrong ids."""
    import shutil

    from fictionworld.web.index import PID_RUNS, TantivyIndex

    ix = TantivyIndex.open(sharded / "index")
    assert ix._runs is not None and ix.searcher.num_segments >= 5
    addresses = _every_address(ix)
    want = ix.searcher.fast_field_values("pid", addresses)
    assert sorted(want) == list(range(ix.num_docs))
    assert ix._pids(addresses).tolist() == want
    runs = json.loads((sharded / "index" / PID_RUNS).read_text())["segments"]
    assert sum(len(r) for r in runs.values()) < 4 * len(runs)  # runs, not one entry per page
    tokens = ix.analyze("festival river city 1998")
    result = ix.search(tokens, 200)
    for name, breaks in [
        ("missing", lambda f: f.unlink()),
        ("corrupt", lambda f: f.write_text("{not json")),
        ("short", lambda f: f.write_text(json.dumps({"segments": dict(list(runs.items())[1:])}))),
        ("segments swapped", lambda f: f.write_text(json.dumps({"segments": dict(zip(runs, reversed(list(runs.values()))))}))),
        ("pages shifted", lambda f: f.write_text(json.dumps({"segments": {k: [[a, b + 1, c] for a, b, c in v] for k, v in runs.items()}}))),
    ]:  # fmt: skip
        copy = tmp_path / name
        shutil.copytree(sharded / "index", copy)
        breaks(copy / PID_RUNS)
        broken = TantivyIndex.open(copy)
        assert broken._runs is None, name
        assert broken._pids(addresses).tolist() == want
        got = broken.search(tokens, 200)
        assert np.array_equal(got[0], result[0]) and np.array_equal(got[1], result[1]), name


def test_the_common_best_file_lists_every_common_clause_with_its_best_score(sharded):
    """``common-best.json`` of a build in 5 shards holds exactly the clauses on more pages than
    the common limit (every term of the joined index walked), each with its page count, the
    best score one scan of it finds and its scores at the ranks kept (``FLOOR_DEPTHS``);
    searches then scan none of them."""
    from fictionworld.web.index import COMMON_BEST, TantivyIndex, common_limit, frequent_terms

    ix = TantivyIndex.open(sharded / "index")
    limit = common_limit(ix.num_docs)
    every = frequent_terms(ix.searcher, limit, cap=10**7)
    data = json.loads((sharded / "index" / COMMON_BEST).read_text())
    assert data["num_docs"] == ix.num_docs
    assert {f: sorted(t) for f, t in data["clauses"].items()} == every
    assert len(every["title"]) > 10 and len(every["body"]) > 100
    for field, terms in data["clauses"].items():
        for token, (df, best, floors) in terms.items():
            assert df == ix.searcher.doc_freq(field, token) > limit
            assert (best, tuple(floors)) == ix.common.scan((field, token)) and best > 0
            assert best >= floors[0] > 0 and floors == sorted(floors, reverse=True)

    scans = []
    scan = ix.common.scan
    ix.common.scan = lambda c: scans.append(c) or scan(c)
    for q in ("festival river", "people born in 1970", "company founded city", "the film award"):
        ix.search(ix.analyze(q), 10)
    known = ix.common.known
    assert ix.common.scores and scans == [min(known, key=lambda c: (known[c][0], c))]  # the probe only


def test_a_wrong_or_broken_common_best_file_is_not_trusted(sharded, tmp_path):
    """A missing or corrupt file, one made for an index of another size, or one wrong about the
    clause it is checked on, is ignored; a clause listed with another page count than the
    index's is scanned. Search results stay those of the index read whole."""
    import shutil

    from fictionworld.web.index import COMMON_BEST, TantivyIndex, common_limit

    data = json.loads((sharded / "index" / COMMON_BEST).read_text())
    known = {(f, t): v for f, ts in data["clauses"].items() for t, v in ts.items()}
    probe = min(known, key=lambda c: (known[c][0], c))
    other = max(known, key=lambda c: known[c][0])

    def edit(fn):
        return lambda f: f.write_text(json.dumps(fn(json.loads(json.dumps(data)))))

    def set_(clause, value):
        def fn(d):
            d["clauses"][clause[0]][clause[1]] = value
            return d

        return fn

    ix = TantivyIndex.open(sharded / "index")
    queries = [
        ix.analyze(q) for q in ("festival river", "people born in 1970", "company founded city", "film award 2004")
    ]
    queries += [[other[1], probe[1]], [other[1]]]
    want = [ix.search(q, 10) for q in queries]
    assert ix.common.read_known() == {c: (v[0], v[1], tuple(v[2])) for c, v in known.items()}
    floors = [0.0] * len(known[probe][2])
    for name, breaks, trusted in [
        ("missing", lambda f: f.unlink(), 0),
        ("corrupt", lambda f: f.write_text("{not json"), 0),
        ("not a table", lambda f: f.write_text(json.dumps({"num_docs": data["num_docs"], "clauses": [1, 2]})), 0),
        ("other size", edit(lambda d: {**d, "num_docs": d["num_docs"] + 1}), 0),
        ("probe's best too low", edit(set_(probe, [known[probe][0], known[probe][1] / 2, known[probe][2]])), 0),
        ("probe's floors wrong", edit(set_(probe, [known[probe][0], known[probe][1], floors])), 0),
        ("floors of another length", edit(set_(other, [known[other][0], known[other][1], [1.0]])), 0),
        ("a page count wrong", edit(set_(other, [known[other][0] + 1, known[other][1] / 100, floors])), len(known)),
        (
            "written before floors",
            edit(lambda d: {**d, "clauses": {f: {t: v[:2] for t, v in ts.items()} for f, ts in d["clauses"].items()}}),
            len(known),
        ),
    ]:
        copy = tmp_path / name.replace(" ", "-").replace("'", "")
        shutil.copytree(sharded / "index", copy)
        breaks(copy / COMMON_BEST)
        broken = TantivyIndex.open(copy)
        got = [broken.search(q, 10) for q in queries]
        assert len(broken.common.known) == trusted, name
        assert broken.common.best(other) == ix.common.best(other), name
        assert ix._field_df(*other) > common_limit(ix.num_docs), name
        if name == "written before floors":  # the bests are still taken from it, with no floor
            assert broken.common.stats(other) == (known[other][1], ()) and broken.common.floor([other], 10) == 0.0
        for (p1, s1), (p2, s2) in zip(want, got):
            assert np.array_equal(p1, p2) and np.array_equal(s1, s2), name


def test_an_index_task_gets_a_heap_for_all_of_its_pages_within_bounds():
    from fictionworld.web.shard_tasks import INDEX_HEAP_MAX, INDEX_HEAP_MIN, INDEX_HEAP_PER_PAGE, index_heap

    plenty = 64 * 2**30
    assert index_heap(0, plenty) == index_heap(10_000, plenty) == INDEX_HEAP_MIN  # a 1M world's shard
    assert index_heap(3_200_000, plenty) == 3_200_000 * INDEX_HEAP_PER_PAGE  # a 10M world's shard: one segment
    assert index_heap(50_000_000, plenty) == INDEX_HEAP_MAX  # tantivy's bound per indexing thread
    assert index_heap(3_200_000, 4 * 2**30) == int(0.2 * 4 * 2**30)  # a share of the memory free
    assert index_heap(3_200_000, 2**20) == INDEX_HEAP_MIN  # never below the floor
