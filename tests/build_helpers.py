"""What the sharded-build tests share: a small world spec in many blocks, its seed and queries;
and how many bytes of a file (or of the files under a directory) are mapped into this process."""

from __future__ import annotations

import json
import re
from pathlib import Path

from fictionworld.spec import default_spec

__all__ = ["QUERIES", "SEED", "fingerprint", "resident_bytes", "small_spec"]

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
