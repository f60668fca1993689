"""Sharded world builds (issue 19): the same world whatever the shards, workers or Ray nodes;
builds killed half-way continue; URL clashes settled by one rule; checks run during the build."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from build_helpers import QUERIES, SEED, small_spec

import fictionworld as fw
from fictionworld.web.pages import url_order
from fictionworld.web.shards import BUILD_DIR, BuildError, build_world, plan_shards
from fictionworld.web.urls import unique_urls, with_urls


def fingerprint(path: Path) -> dict:
    """What must not depend on how a world was built: hash, page bytes, ranked results."""
    world = fw.World.load(path)
    results = [[(r.url, round(r.score, 4)) for r in world.search(q, k=10)] for q in QUERIES]
    return {
        "hash": world.world_hash,
        "pages": (path / "pages.arrow").read_bytes(),
        "url_order": (path / "pages.url-order.npy").read_bytes(),
        "codes": (path / "pages.codes.npy").read_bytes(),
        "articles": (path / "pages.articles.npy").read_bytes(),
        "columns": (path / "pages.columns.npy").read_bytes(),
        "lexicon": {f.name: f.read_bytes() for f in sorted((path / "lexicon").iterdir())},
        "common_best": (path / "index" / "common-best.json").read_bytes(),
        "results": results,
        "manifest": json.loads((path / "manifest.json").read_text())["world_hash"],
    }


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The world built in one process, one shard."""
    path = tmp_path_factory.mktemp("ref") / "w"
    summary = build_world(small_spec(), SEED, path, workers=1, shards=1)
    assert summary["shards"] == 1 and not summary["violations"]
    assert summary["renamed_urls"] > 0  # the join's rename path (URL order included) is exercised
    return path, fingerprint(path)


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


def test_a_world_built_in_memory_has_the_same_pages_and_ranking(reference, tmp_path):
    from generators import generate_world

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


def _cli(out: Path, workers: int = 2, shards: int = 24) -> list[str]:
    return [sys.executable, "-m", "fictionworld.cli", "generate", "--seed", "5", "--entities", "20000",
            "--out", str(out), "--workers", str(workers), "--shards", str(shards)]  # fmt: skip


def _wait_for_shards(build: Path, proc: subprocess.Popen, k: int = 1, timeout: float = 120) -> None:
    counts = build / BUILD_DIR / "counts.json"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if counts.exists():
            try:
                if len(json.loads(counts.read_text())) >= k:
                    return
            except json.JSONDecodeError:
                pass
        if proc.poll() is not None:
            pytest.fail(f"the build ended before it could be killed:\n{proc.stderr.read()}")
        time.sleep(0.02)
    pytest.fail("no shard finished in time")


@pytest.fixture(scope="module")
def cli_reference(tmp_path_factory):
    path = tmp_path_factory.mktemp("cliref") / "w"
    subprocess.run(_cli(path, workers=1, shards=1), check=True, capture_output=True)
    return fingerprint(path)


def test_a_build_killed_whole_continues_from_its_finished_shards(cli_reference, tmp_path):
    """SIGKILL the driver alone (as the OOM killer would): its workers go with it instead of
    rendering on as orphans, and the same command resumes the build."""
    import psutil

    out = tmp_path / "w"
    proc = subprocess.Popen(_cli(out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # fmt: skip
    _wait_for_shards(out, proc, k=2)
    workers = psutil.Process(proc.pid).children(recursive=True)
    assert workers
    proc.kill()
    proc.wait()
    _, alive = psutil.wait_procs(workers, timeout=15)
    assert not alive, f"{len(alive)} worker(s) outlived the killed driver"
    assert not (out / "manifest.json").exists() and (out / BUILD_DIR / "plan.json").exists()
    again = subprocess.run(_cli(out), capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    done = int(again.stderr.split("resumed: ")[1].split(" of ")[0])
    assert 2 <= done < 24
    assert fingerprint(out) == cli_reference
    assert not (out / BUILD_DIR).exists()


def test_a_killed_worker_is_replaced_and_the_build_ends_with_the_same_world(cli_reference, tmp_path):
    import psutil

    out = tmp_path / "w"
    proc = subprocess.Popen(_cli(out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for_shards(out, proc, k=1)
    children = psutil.Process(proc.pid).children()
    assert children, "the build runs its shards in worker processes"
    children[0].kill()
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    assert fingerprint(out) == cli_reference


_INDEX_SHARD = None  # the real task, kept by the test below (the workers fork with it)


def _index_once_pages_are_joined(pages_file: str, offset: int, index_dir: str, *args):
    """index_shard, except that the last shard waits until the driver has joined the pages."""
    from fictionworld.web.join import PAGES_DONE

    build = Path(pages_file).parent.parent
    last = len(json.loads((build / "plan.json").read_text())["shards"]) - 1
    if Path(index_dir).name == f"shard-{last:05d}":
        deadline = time.monotonic() + 30
        while not (build / PAGES_DONE).exists():
            if time.monotonic() > deadline:
                raise RuntimeError("the pages were not joined while the last shard waited to be indexed")
            time.sleep(0.01)
    return _INDEX_SHARD(pages_file, offset, index_dir, *args)


def test_the_driver_joins_the_pages_while_the_last_shard_is_indexed(reference, tmp_path, monkeypatch):
    """With workers beside it, the driver joins the pages as soon as every shard is rendered:
    the last index task here waits for that, so a join left until after it would fail."""
    global _INDEX_SHARD
    from fictionworld.web import shards

    _INDEX_SHARD = shards.index_shard
    monkeypatch.setattr(shards, "index_shard", _index_once_pages_are_joined)
    path = tmp_path / "w"
    summary = build_world(small_spec(), SEED, path, workers=2, shards=3)
    assert summary["shards"] == 3
    assert fingerprint(path) == reference[1]


def stopped_before_the_index_join(path: Path, monkeypatch) -> Path:
    """The reference world built in 3 shards to ``path`` and stopped between the page join and
    the index join, as a kill would stop it; its build directory."""
    from fictionworld.web import join

    def stop(*_):
        raise KeyboardInterrupt

    monkeypatch.setattr(join, "_join_indexes", stop)
    with pytest.raises(KeyboardInterrupt):
        build_world(small_spec(), SEED, path, workers=2, shards=3)
    monkeypatch.undo()
    return path / BUILD_DIR


def test_a_build_stopped_after_its_pages_were_joined_resumes_to_the_same_world(reference, tmp_path, monkeypatch):
    """Killed between the page join and the index join: the joined pages and the finished
    lexicon are kept (no shard, and not the lexicon, is made again) and the world is the same."""
    from fictionworld.web import shards
    from fictionworld.web.join import PAGES_DONE

    path = tmp_path / "w"
    build = stopped_before_the_index_join(path, monkeypatch)
    assert (build / PAGES_DONE).exists() and (build / "lexicon" / "meta.json").exists()
    assert not (build / "lexicon" / "part.json").exists()
    calls = []
    monkeypatch.setattr(shards, "build_lexicon", lambda *a: calls.append(a))
    summary = build_world(small_spec(), SEED, path, workers=2, shards=3)
    assert summary["resumed_shards"] == 3 and not calls
    assert fingerprint(path) == reference[1]


def test_a_build_stopped_after_writing_its_manifest_is_finished_by_the_same_command(reference, tmp_path, monkeypatch):
    """Killed between the manifest (the world complete) and the removal of ``.building`` (the
    shards' pages and indexes: about as big as the world): the same command removes it and
    ends as a resumed build does, where it said that the directory holds a world."""
    import shutil as shutil_module

    path = tmp_path / "w"
    real = shutil_module.rmtree

    def stop(target, *args, **kwargs):
        if Path(target).name == BUILD_DIR:
            raise KeyboardInterrupt
        return real(target, *args, **kwargs)

    monkeypatch.setattr(shutil_module, "rmtree", stop)
    with pytest.raises(KeyboardInterrupt):
        build_world(small_spec(), SEED, path, workers=2, shards=3)
    monkeypatch.undo()
    assert (path / "manifest.json").exists() and (path / BUILD_DIR).exists()
    summary = build_world(small_spec(), SEED, path, workers=2, shards=3)
    assert summary["resumed_shards"] == 3 and not (path / BUILD_DIR).exists()
    assert fingerprint(path) == reference[1]
    with pytest.raises(FileExistsError, match="holds a world"):
        build_world(small_spec(), SEED, path, workers=2, shards=3)


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(data)


def test_damaged_shard_indexes_are_made_again_when_a_build_resumes(reference, tmp_path, monkeypatch):
    """A shard's index files changed between runs (one truncated, one bit flipped: tantivy's
    files carry no checksum): the resumed build indexes those shards again, and only those,
    and ends with the same world (before, the join read them as they were)."""
    from fictionworld.web import shards

    path = tmp_path / "w"
    build = stopped_before_the_index_join(path, monkeypatch)
    largest = max((build / "index" / "shard-00001").glob("*.idx"), key=lambda p: p.stat().st_size)
    largest.write_bytes(largest.read_bytes()[:-10])
    _flip(next((build / "index" / "shard-00002").glob("*.term")))
    indexed = []
    real = shards.index_shard
    monkeypatch.setattr(shards, "index_shard", lambda *a: indexed.append(Path(a[2]).name) or real(*a))
    build_world(small_spec(), SEED, path, workers=1, shards=3)
    assert sorted(indexed) == ["shard-00001", "shard-00002"]
    assert fingerprint(path) == reference[1]


def test_a_damaged_shard_page_file_is_rendered_again_or_named(reference, tmp_path, monkeypatch):
    """A rendered shard's page file changed between runs: rendered again while the render store
    is there; once it is gone (every shard rendered), a BuildError names the file."""
    from fictionworld.web import shards

    path = tmp_path / "w"
    real_write = shards.write_json

    def stop_at_two(file, obj, *rest, **kw):  # two shards rendered and recorded, the store kept
        real_write(file, obj, *rest, **kw)
        if Path(file).name == "counts.json" and len(obj) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(shards, "write_json", stop_at_two)
    with pytest.raises(KeyboardInterrupt):
        build_world(small_spec(), SEED, path, workers=1, shards=3)
    monkeypatch.undo()
    build = path / BUILD_DIR
    done = sorted(int(s) for s in json.loads((build / "counts.json").read_text()))
    assert len(done) == 2 and (build / "store" / "store.json").exists()
    _flip(build / "pages" / f"shard-{done[0]:05d}.arrow")
    rendered = []
    real = shards.render_shard
    monkeypatch.setattr(shards, "render_shard", lambda *a: rendered.append(a[1]) or real(*a))
    build_world(small_spec(), SEED, path, workers=1, shards=3)
    assert sorted(rendered) == sorted({done[0]} | ({0, 1, 2} - set(done)))
    assert fingerprint(path) == reference[1]
    monkeypatch.undo()

    path = tmp_path / "w2"
    build = stopped_before_the_index_join(path, monkeypatch)
    _flip(build / "pages" / "shard-00001.arrow")
    with pytest.raises(BuildError, match=r"shard-00001.arrow does not match .*render store it was made from is gone"):
        build_world(small_spec(), SEED, path, workers=2, shards=3)


@pytest.mark.parametrize("stop_at", [1, 4, 9, "web.json"])
def test_a_build_stopped_while_moving_its_files_into_place_resumes_to_the_same_world(
    reference, tmp_path, monkeypatch, stop_at
):
    """Stopped in the join's last step, some files already moved out of the build into the
    world directory (a kill before the 1st, 4th or 9th move; the disk full when ``web.json`` is
    written): the same command finishes the moves, joining nothing again, to the same world.
    Before the marker, such a directory was refused for good, ``--force`` included. ``--force``
    with another world starts over."""
    import errno
    import os

    from fictionworld.web import shards
    from fictionworld.web.join import MOVING

    path = tmp_path / "w"
    real_replace = os.replace
    moved: list[str] = []

    def replace(source, target):
        if Path(target).parent == path:  # (the moves into place; the build's own files lie deeper)
            moved.append(Path(target).name)
            if stop_at == "web.json" and moved[-1] == "web.json":
                raise OSError(errno.ENOSPC, "No space left on device")
            if len(moved) == stop_at:
                raise KeyboardInterrupt
        return real_replace(source, target)

    def stop(*_):
        raise AssertionError("joined or made again")

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(OSError if stop_at == "web.json" else KeyboardInterrupt):
        build_world(small_spec(), SEED, path, workers=2, shards=3)
    assert (path / BUILD_DIR / MOVING).exists() and not (path / "manifest.json").exists()
    assert {p.name for p in path.iterdir()} >= {BUILD_DIR, *moved[:-1]}  # (the last one failed)
    monkeypatch.undo()
    for name in ("join_pages", "join_shards", "make_graph"):
        monkeypatch.setattr(shards, name, stop)
    summary = build_world(small_spec(), SEED, path, workers=2, shards=3)
    assert summary["resumed_shards"] == 3 and not summary["violations"] and not (path / BUILD_DIR).exists()
    assert summary["world_hash"] == reference[1]["hash"]
    assert fingerprint(path) == reference[1]
    if stop_at == 4:  # another world over a stopped one: only with --force, and from scratch
        monkeypatch.undo()
        monkeypatch.setattr(os, "replace", replace)
        moved.clear()
        shutil.rmtree(path)
        with pytest.raises(KeyboardInterrupt):
            build_world(small_spec(), SEED, path, workers=2, shards=3)
        monkeypatch.undo()
        with pytest.raises(BuildError, match="another world"):
            build_world(small_spec(), SEED + 1, path, workers=2, shards=3)
        other = build_world(small_spec(), SEED + 1, path, workers=2, shards=3, force=True)
        assert other["world_hash"] != reference[1]["hash"] == summary["world_hash"]
        assert json.loads((path / "manifest.json").read_text())["seed"] == SEED + 1


def test_a_shard_count_changed_between_runs_is_refused_not_built_into_wrong_page_ids(tmp_path, monkeypatch):
    """Each shard's page ids start after the pages counted before it (``counts.json``). A count
    changed while the build was stopped would shift every later page id, and the totals would
    still agree: the resumed build checks each count against the pages its shard indexed."""
    path = tmp_path / "w"
    counts_file = stopped_before_the_index_join(path, monkeypatch) / "counts.json"
    counts = json.loads(counts_file.read_text())
    counts["0"] += 1
    counts_file.write_text(json.dumps(counts))
    with pytest.raises(BuildError, match=r"shard-00000.done: shard 0 indexed \d+ pages, but counts.json says"):
        build_world(small_spec(), SEED, path, workers=2, shards=3)


def test_the_store_goes_once_every_shard_is_rendered_and_a_resumed_build_needs_it_not(reference, tmp_path, monkeypatch):
    """The render store is removed as soon as the last shard is rendered (while the last shards
    are indexed and the pages joined), and a build stopped after that resumes from its graph
    and shards, without making the graph or the store again, to the same world."""
    from fictionworld.web import join, shards

    def stop(*_):
        raise KeyboardInterrupt

    path = tmp_path / "w"
    build = path / BUILD_DIR
    seen = []  # (shards rendered, whether the store was there) as each index task began
    real_index = shards.index_shard

    def index(*args):
        rendered = len(json.loads((build / "counts.json").read_text()))
        seen.append((rendered, (build / "store" / "store.json").exists()))
        return real_index(*args)

    tidied = []  # the check units, each run after letting go of removed stores (shard_tasks.tidy)
    real_tidy = shards.tidy
    monkeypatch.setattr(shards, "index_shard", index)
    monkeypatch.setattr(shards, "tidy", lambda fn, *a: tidied.append(fn.__name__) or real_tidy(fn, *a))
    monkeypatch.setattr(join, "_join_indexes", stop)
    with pytest.raises(KeyboardInterrupt):
        build_world(small_spec(), SEED, path, workers=1, shards=3)  # (its tasks in this process, in turn)
    assert tidied and set(tidied) == {"check_unit"}
    assert (build / "graph" / "manifest.json").exists() and not (build / "store").exists()
    # (the order of the tasks varies; shard 2 is indexed once every shard is rendered)
    assert len(seen) == 3 and all(there == (rendered < 3) for rendered, there in seen) and seen[-1][0] == 3
    monkeypatch.undo()
    monkeypatch.setattr(shards, "make_graph", stop)  # the graph is not made again
    summary = build_world(small_spec(), SEED, path, workers=2, shards=3)
    assert summary["resumed_shards"] == 3
    assert fingerprint(path) == reference[1]


def test_an_unfinished_build_of_another_world_is_not_resumed(tmp_path):
    out = tmp_path / "w"
    (out / BUILD_DIR).mkdir(parents=True)
    (out / BUILD_DIR / "plan.json").write_text(json.dumps({"format": "fictionworld-build/1", "seed": 99}))
    with pytest.raises(BuildError, match="another world"):
        build_world(small_spec(600), 5, out, workers=1)
    build_world(small_spec(600), 5, out, workers=1, force=True)
    assert fw.World.load(out).seed == 5
    with pytest.raises(FileExistsError, match="holds a world"):
        build_world(small_spec(600), 5, out, workers=1)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not a world directory"):
        build_world(small_spec(600), 5, tmp_path / "other", workers=1, force=True)
    assert (tmp_path / "other" / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("workers", [1, 2])
def test_violations_are_found_during_the_build(tmp_path, workers):
    """Planted violations are reported by the build's streamed check (its units run in the
    driver with one worker, in the pool with two), as checking the saved world finds them."""
    from dataclasses import replace

    from generators import generate_world

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
