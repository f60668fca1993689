"""Sharded world builds (issue 19): the same world whatever the shards, workers or Ray nodes;
URL clashes settled by one rule; checks run during the build. (Builds stopped, killed or
damaged half-way: test_build_resume.py.)"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from build_helpers import QUERIES, SEED, fingerprint, small_spec

import fictionworld as fw
from fictionworld.web.pages import url_order
from fictionworld.web.shards import build_world, plan_shards
from fictionworld.web.urls import unique_urls, with_urls

pytestmark = pytest.mark.big


@pytest.mark.parametrize(("workers", "shards"), [(1, 2), (2, 2), (2, 4), (2, 7)])
def test_any_number_of_shards_and_workers_builds_the_same_world(reference, tmp_path, workers, shards):
    path = tmp_path / "w"
    summary = build_world(small_spec(), SEED, path, workers=workers, shards=shards)
    assert summary["shards"] == shards
    got, want = fingerprint(path), reference[1]
    assert got["hash"] == want["hash"] == got["manifest"]
    assert got["pages"] == want["pages"]  # byte for byte
    assert got["url_order"] == want["url_order"] and got["lexicon"] == want["lexicon"]
    assert got["codes"] == want["codes"] and got["articles"] == want["articles"]
    assert got["common_best"] == want["common_best"]  # shards' candidate terms miss no common clause
    assert got["results"] == want["results"]
    assert any(got["results"])


def _no_lexicon_task(*_):
    raise AssertionError("a build task wrote the lexicon")


def test_with_workers_beside_it_the_graph_stage_writes_the_lexicon(reference, tmp_path, monkeypatch):
    """With two workers the graph's own process writes the lexicon's first part once the hash is
    taken, where it would only wait for the render store's fact half: no build task writes it,
    and it is the one-process build's lexicon, byte for byte."""
    from fictionworld.web import shards

    monkeypatch.setattr(shards, "build_lexicon", _no_lexicon_task)
    summary = build_world(small_spec(), SEED, tmp_path / "w", workers=2, shards=2)
    assert summary["times"]["lexicon_s"] > 0
    got = fingerprint(tmp_path / "w")
    assert got["lexicon"] == reference[1]["lexicon"] and got["hash"] == reference[1]["hash"]
    assert got["results"] == reference[1]["results"]


def test_a_world_built_in_memory_has_the_same_pages_and_ranking(reference, tmp_path):
    from fictionworld.generators import generate_world

    world = generate_world(small_spec(), SEED)
    loaded = fw.World.load(reference[0])
    rendered, read = world.web.pages, loaded.web.pages
    assert rendered.table.drop_columns("text").equals(read.table.drop_columns("text"))
    assert list(rendered.texts) == list(read.texts)  # (saved as zstd frames: pagetext.py)
    assert [[(r.url, round(r.score, 4)) for r in world.search(q, k=10)] for q in QUERIES] == reference[1]["results"]
    world.save(tmp_path / "w")  # Web.save writes the lexicon and URL order a sharded build writes
    saved = fingerprint(tmp_path / "w")
    assert (saved["url_order"], saved["lexicon"]) == (reference[1]["url_order"], reference[1]["lexicon"])
    assert saved["codes"] == reference[1]["codes"]
    assert saved["articles"] == reference[1]["articles"]
    articles = np.load(tmp_path / "w" / "pages.articles.npy")  # each entity's article, read off the pages
    kinds, about = rendered.kind_code, rendered.entity
    assert len(articles) == len(world.entities) and (articles >= 0).all()
    assert (kinds[articles] == kinds[articles[0]]).all() and (about[articles] == np.arange(len(articles))).all()
    assert rendered.kind_of(int(articles[0])) == "article"
    assert saved["common_best"] == reference[1]["common_best"]  # one index's walk = the shards' terms
    assert saved["pages"] == reference[1]["pages"]  # the same dictionary and frames, byte for byte


@pytest.mark.ray  # a cluster of its own, of two nodes
def test_a_two_node_ray_cluster_builds_the_same_world(reference, tmp_path):
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    if ray.is_initialized():
        ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    try:
        ray.init(address=cluster.address)
        path = tmp_path / "w"
        summary = build_world(small_spec(), SEED, path, use_ray=True, address=cluster.address, shards=6)
        assert len(summary["nodes"]) == 2, summary["nodes"]  # both nodes ran tasks, writing to the shared directory
        assert fingerprint(path) == reference[1]
    finally:
        ray.shutdown()
        cluster.shutdown()


@pytest.mark.parametrize("workers", [1, 2])
def test_violations_are_found_during_the_build(tmp_path, workers):
    """Planted violations are reported by the build's streamed check (its units run in the
    driver with one worker, in the pool with two), as checking the saved world finds them."""
    from dataclasses import replace

    from fictionworld.generators import generate_world

    world = generate_world(small_spec(600), 5)
    f = world.facts
    born = np.flatnonzero(f.predicate == fw.schema.PREDICATE_CODE["born_in"])[0]
    obj = f.object.copy()
    obj[born] = f.subject[born]  # born in oneself: a self reference and a range violation
    ids = f.id.copy()
    ids[7] = ids[3]  # and one fact id used twice
    broken = world.replace(facts=replace(f, object=obj, id=ids))
    summary = build_world(broken.spec, broken.seed, tmp_path / "w", workers=workers, world=broken)
    found = {(v["kind"], v["message"]) for v in summary["violations"]}
    assert {k for k, _ in found} >= {"self_reference", "domain_range", "duplicate_fact"}
    assert (("duplicate_fact", f"fact id {ids[3]} is used 2 times")) in found
    whole = fw.check_world(fw.World.load(tmp_path / "w"), limit_per_kind=20)  # the same world, checked whole
    assert found == {(v.kind.value, v.message) for v in whole}


def _unique_urls_by_hand(urls: list[str], kinds: list[str]) -> dict[int, str]:
    """The rule read literally: articles keep their URL, else the first page asking for it;
    the others get -2, -3, … in page order, skipping any URL a page asks for itself."""
    natural = set(urls)
    keeper = {}
    for i, (u, k) in enumerate(zip(urls, kinds)):
        if k == "article" or u not in keeper:
            keeper[u] = i if k == "article" or u not in keeper else keeper[u]
    out, given = {}, set()
    for i, u in enumerate(urls):
        if keeper[u] == i:
            continue
        n = 2
        while f"{u}-{n}" in natural or f"{u}-{n}" in given:
            n += 1
        out[i] = f"{u}-{n}"
        given.add(out[i])
    return out


def test_url_clashes_follow_the_rule_on_generated_cases():
    rng = np.random.default_rng(3)
    for _ in range(300):
        pool = ["a", "a-2", "a-3", "b", "b-2-2", "b-2", "c-10", "c", "a-2-2"]
        n = int(rng.integers(1, 30))
        urls = [pool[i] for i in rng.integers(0, len(pool), n)]
        kinds = ["news"] * n
        for u in set(urls):  # at most one article per URL, anywhere among its pages
            if rng.random() < 0.3:
                kinds[int(rng.choice([i for i, x in enumerate(urls) if x == u]))] = "article"
        got = unique_urls(pa.array(urls), pa.array(kinds))
        assert got == _unique_urls_by_hand(urls, kinds), (urls, kinds)
        # the same clashes found as neighbours in URL order, over chunks as a join reads them
        cut = int(rng.integers(0, n + 1))
        chunked = pa.chunked_array([pa.array(urls[:cut], pa.string()), pa.array(urls[cut:], pa.string())])
        assert unique_urls(chunked, pa.array(kinds), order=url_order(chunked)) == got
        final = [got.get(i, u) for i, u in enumerate(urls)]
        assert len(set(final)) == n
        parts = [pa.table({"url": chunked.slice(0, cut)}), pa.table({"url": chunked.slice(cut)})]
        assert [u for t, at in zip(parts, (0, cut)) for u in with_urls(t, got, at).column("url").to_pylist()] == final


def test_plan_shards_cuts_whole_blocks_evenly():
    assert plan_shards(10, 3) == [(0, 3), (3, 7), (7, 10)]
    assert plan_shards(2, 8) == [(0, 1), (1, 2)]
    assert plan_shards(5, 1) == [(0, 5)]
    for blocks in range(1, 40):
        for shards in range(1, 12):
            p = plan_shards(blocks, shards)
            assert p[0][0] == 0 and p[-1][1] == blocks
            assert all(a < b for a, b in p) and all(p[i][1] == p[i + 1][0] for i in range(len(p) - 1))
