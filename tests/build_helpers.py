"""What the sharded-build tests share: a small world spec in many blocks, its seed and queries;
what must not depend on how a world was built (``fingerprint``); builds stopped before a join;
and how many bytes of a file (or of the files under a directory) are mapped into this process."""

from __future__ import annotations

import json
import re
from pathlib import Path

from fictionworld.spec import default_spec

__all__ = [
    "QUERIES",
    "SEED",
    "fingerprint",
    "resident_bytes",
    "small_spec",
    "stopped_before_the_index_join",
    "stopped_before_the_page_join",
]

SEED = 4  # a world with URL clashes: the join renames pages and orders the new URLs
QUERIES = ("festival", "river city", "people born in", "Films released in 1998", "company founded", "award 2004")


def small_spec(entities: int = 3000, block: int = 128, generation_block: int = 256):
    """A small world in many render blocks and many generation blocks (people, books, …)."""
    spec = default_spec(entities)
    return spec.model_copy(
        update={"web": spec.web.model_copy(update={"block": block}), "generation_block": generation_block}
    )


def resident_bytes(path: Path) -> int:
    """Bytes of ``path``, or of the files under it, mapped into this process and resident
    (Linux ``/proc/self/smaps``)."""
    path = Path(path).resolve()
    total, current = 0, ""
    for line in Path("/proc/self/smaps").read_text().splitlines():
        if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
            parts = line.split(maxsplit=5)
            current = parts[5] if len(parts) > 5 else ""
        elif line.startswith("Rss:") and (current == str(path) or current.startswith(f"{path}/")):
            total += int(line.split()[1])
    return total * 1024


def fingerprint(path: Path) -> dict:
    """What must not depend on how a world was built: hash, page bytes, ranked results, and
    ``web.json``'s record of the web's files (every file, each as it is)."""
    import fictionworld as fw
    from fictionworld.web.web_files import read_web_json, verify_web, web_file_names

    world = fw.World.load(path)
    results = [[(r.url, round(r.score, 4)) for r in world.search(q, k=10)] for q in QUERIES]
    recorded = read_web_json(path)["files"]
    assert sorted(recorded) == web_file_names(path) and verify_web(path), "web.json does not record the web as it is"
    return {
        "web_files": {name: v for name, v in recorded.items() if not name.startswith("index/")},  # (index names vary)
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


_STOPPED: dict[tuple[str, int], Path] = {}  # (step, workers) -> a build stopped there, made once per process


def _stopped_at(step: str, path: Path, monkeypatch, workers: int) -> Path:
    """The reference world built in 3 shards to ``path`` and stopped, as a kill would stop it,
    where the build calls ``join.<step>``; its build directory. The build runs once per process
    and step; each caller gets a copy of it (nothing in a build directory names its path)."""
    import atexit
    import shutil
    import tempfile

    import pytest

    from fictionworld.web import join
    from fictionworld.web.shards import BUILD_DIR, build_world

    if (step, workers) not in _STOPPED:
        made = Path(tempfile.mkdtemp(prefix="fictionworld-stopped-"))
        atexit.register(shutil.rmtree, made, ignore_errors=True)

        def stop(*_):
            raise KeyboardInterrupt

        monkeypatch.setattr(join, step, stop)
        with pytest.raises(KeyboardInterrupt):
            build_world(small_spec(), SEED, made / "w", workers=workers, shards=3)
        monkeypatch.undo()
        _STOPPED[step, workers] = made / "w"
    shutil.copytree(_STOPPED[step, workers], path)
    return path / BUILD_DIR


def stopped_before_the_index_join(path: Path, monkeypatch) -> Path:
    """Stopped between the page join and the index join."""
    return _stopped_at("_join_indexes", path, monkeypatch, workers=2)


def stopped_before_the_page_join(path: Path, monkeypatch) -> Path:
    """Stopped before the page join, by one worker (which joins the pages after every shard
    is indexed)."""
    return _stopped_at("join_pages", path, monkeypatch, workers=1)
