"""A world's web on disk: ``web.json``, written last, says what built the web, for which world,
how many pages it has, and the size and digest of every other file of it (``files``: the pages,
the arrays beside them, the index, the lexicon). Opening a web checks their sizes (a ``stat``
each); ``fictionworld validate`` (:func:`verify_web`) their digests too, which means reading
them all."""

from __future__ import annotations

import json
import os
from pathlib import Path

from fictionworld.digests import check_files, file_digests, files_under
from fictionworld.reading import WorldFormatError
from fictionworld.web.lexicon import LEXICON_DIR
from fictionworld.web.pages import WebError
from fictionworld.web.render import RENDERER

__all__ = ["WEB_FORMAT", "WEB_JSON", "web_manifest", "web_file_names", "write_web_json", "read_web_json",
           "check_web_files", "verify_web"]  # fmt: skip

WEB_FORMAT = "fictionworld-web/1"
WEB_JSON = "web.json"
PAGES = "pages.arrow"


def web_manifest(world_hash: str, web_spec: dict, pages: int, index) -> dict:
    """``web.json`` of a template web, less its files: format, renderer, backend, world and
    page count."""
    version = getattr(index, "version", None)
    return {
        "format": WEB_FORMAT,
        "renderer": RENDERER,
        "backend": f"{index.name} {version}" if version else index.name,
        "world_hash": world_hash,
        "perturbation_pool": web_spec.get("perturbation_pool"),
        "block": web_spec.get("block"),
        "pages": pages,
    }


def web_file_names(d: Path) -> list[str]:
    """The web's files in world directory ``d``, relative to it, sorted: ``pages.arrow`` and
    the arrays beside it, and every file under ``index/`` and ``lexicon/`` but tantivy's own
    lock and bookkeeping files (their names begin with a dot: made or changed by opening)."""
    names = [p.name for p in d.glob("pages.*") if p.is_file() and not p.name.endswith(".tmp")]
    for sub in ("index", LEXICON_DIR):
        names += [f"{sub}/{name}" for name in files_under(d / sub)]
    return sorted(names)


def write_web_json(d: Path, meta: dict) -> None:
    """``web.json`` of ``meta`` and the sizes and digests of the web's files: ``meta``'s
    ``files`` where it has them (a sharded build records them as it writes the files), else
    those of the files now in ``d`` (written beside it and moved into place: never there
    half-written)."""
    files = meta.get("files") or file_digests(d, tuple(web_file_names(d)))
    tmp = d / (WEB_JSON + ".tmp")
    tmp.write_text(json.dumps(meta | {"files": files}, indent=2) + "\n")
    os.replace(tmp, d / WEB_JSON)


def read_web_json(d: Path) -> dict:
    """``d``'s ``web.json``, or a clear error (no web, not JSON, not text, not an object)."""
    path = d / WEB_JSON
    try:
        meta = json.loads(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(f"{d} has no web (run `fictionworld index {d}`)") from None
    except json.JSONDecodeError as e:
        raise WebError(f"{path}: not valid JSON ({e.msg})") from None
    except UnicodeDecodeError as e:
        raise WebError(f"{path}: not text (UTF-8): {e.reason} at byte {e.start}") from None
    if not isinstance(meta, dict):
        raise WebError(f"{path}: not a JSON object")
    return meta


def check_web_files(d: Path, meta: dict, *, digests: bool = False, progress=None) -> None:
    """The web's files against what ``web.json`` (``meta``) records: their sizes, and with
    ``digests`` their digests (reading every byte). A web saved before its files were recorded
    passes unchecked, and so does a missing file the web can do without (the arrays beside
    the pages, the lexicon: computed from the pages when first needed)."""
    if "files" not in meta:
        return
    files = meta["files"]
    if isinstance(files, dict):  # (a file the web can do without, deleted, is made again when needed)
        files = {n: v for n, v in files.items() if n == PAGES or n.startswith("index/") or (d / n).exists()}
    try:
        check_files(d, files, digests=digests, record=WEB_JSON, progress=progress)
    except WorldFormatError as e:
        raise WebError(f"{e}; rebuild the web (`fictionworld index --force`)") from None


def verify_web(d: str | Path, progress=None, world_hash: str | None = None) -> bool:
    """Every file of the web of world directory ``d`` against the sizes and digests in its
    ``web.json``: True when they match, False when ``web.json`` records none (a web saved
    before they were), a :class:`WebError` naming the first file that differs; and, given the
    graph's verified ``world_hash``, the one ``web.json`` was built for."""
    d = Path(d)
    meta = read_web_json(d)
    if world_hash is not None and meta.get("world_hash") != world_hash:
        raise WebError(f"{d / WEB_JSON}: built for another world (its world_hash is not the graph's); rebuild the web")
    check_web_files(d, meta, digests=True, progress=progress)
    return "files" in meta
