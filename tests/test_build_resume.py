"""Sharded builds stopped half-way (issue 19): killed whole or a worker at a time, or stopped
at each stage or while moving the world into place; each resumed build ends with the same
world, or refuses. Builds damaged between runs: test_build_damage.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from build_helpers import SEED, fingerprint, small_spec, stopped_before_the_index_join

import fictionworld as fw
from fictionworld.web.shards import BUILD_DIR, BuildError, build_world

pytestmark = pytest.mark.big


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
