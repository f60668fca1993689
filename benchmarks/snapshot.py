"""Fingerprints of what a refactor must keep byte-identical: the world hash, every saved file
(tantivy's random segment names replaced by their order, in names and contents), every page's text, tasks
(wide, deep, mixed, and wide with every family at any guess gain) and search results for a
fixed query set, on four seeds.

    python benchmarks/snapshot.py write before.json      # on the old commit
    python benchmarks/snapshot.py write after.json       # on the new one
    python benchmarks/snapshot.py compare before.json after.json
"""

from __future__ import annotations

import hashlib
import json
import pathlib
import re
import sys
import tempfile

WORLDS = ((0, 1500), (7, 1500), (11, 2000), (3, 1500))  # big enough for default wide tasks
QUERIES = ("Glasworks", "films released in 1998", "Albums released in 1998", "companies founded in 1990",
           "people born in 1970", "novel", "university", "city", "band", "Kevesz Glasworks", "2", "the")  # fmt: skip


_SEGMENT = re.compile(r"[0-9a-f]{32}")


def _h(data: bytes, size: int = 16) -> str:
    return hashlib.blake2b(data, digest_size=size).hexdigest()


def snapshot() -> dict:
    import fictionworld as fw
    from fictionworld.tasks.families import WIDE_FAMILIES
    from fictionworld.tasks.generate import generate_tasks
    from fictionworld.tasks.wide import TaskKnobs
    from fictionworld.web import Web

    out = {}
    for seed, n in WORLDS:
        w = fw.generate(seed=seed, entities=n)
        web = Web.build(w)
        d = {"world_hash": w.world_hash, "n_pages": len(web.pages)}
        d["pages"] = _h(b"\0".join(web.pages.text(r).encode() for r in range(len(web.pages))))
        for kind in ("wide", "deep", "mixed"):
            tasks = generate_tasks(w, 12, kind=kind, seed=seed)  # (fw.make_tasks; older commits lack it)
            d[f"tasks_{kind}"] = _h("\n".join(t.model_dump_json() for t in tasks).encode())
        loose = generate_tasks(w, 24, kind="wide", seed=seed, knobs=TaskKnobs(guess_gain=1, families=WIDE_FAMILIES))
        d["tasks_wide_loose"] = _h("\n".join(t.model_dump_json() for t in loose).encode())
        with tempfile.TemporaryDirectory() as td:
            w.save(pathlib.Path(td) / "w")
            files = {}
            segments = sorted(
                {p.stem for p in (pathlib.Path(td) / "w" / "index").glob("*") if _SEGMENT.fullmatch(p.stem)}
            )
            for p in sorted((pathlib.Path(td) / "w").rglob("*")):
                if p.is_file() and p.name not in ("manifest.json", "meta.json", ".managed.json"):
                    key, data = str(p.relative_to(td)), p.read_bytes()
                    for j, seg in enumerate(segments):  # tantivy names segments at random
                        key, data = key.replace(seg, f"segment{j}"), data.replace(seg.encode(), f"segment{j}".encode())
                    if p.name == "web.json":  # its digests of index JSON naming segments left out (hashed above)
                        meta = json.loads(data)
                        meta["files"] = {k: v for k, v in meta.get("files", {}).items() if not k.endswith(".json")}
                        data = json.dumps(meta, sort_keys=True).encode()
                    files[key] = _h(data, 12)
            d["files"] = files
        d["search"] = {f"{q}|{page}": [[r.url, r.title, r.snippet] for r in web.search(q, 10, page)]
                       for q in QUERIES for page in (1, 2)}  # fmt: skip
        out[f"{seed}/{n}"] = d
    return out


def compare(a: dict, b: dict) -> int:
    differences = 0
    for world, fields in a.items():
        for name, value in fields.items():
            if name == "search":
                for q, results in value.items():
                    if results != b[world][name].get(q):
                        differences += 1
                        print(f"search changed: world {world}, query|page {q!r}")
            elif value != b[world].get(name):
                differences += 1
                print(f"DIFFERENT: world {world}, {name}")
    print("identical: world, pages, tasks, files, searches" if not differences else f"{differences} differences")
    return 1 if differences else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "write":
        pathlib.Path(sys.argv[2]).write_text(json.dumps(snapshot(), indent=1))
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        sys.exit(compare(*(json.loads(pathlib.Path(p).read_text()) for p in sys.argv[2:])))
    else:
        sys.exit(__doc__)
