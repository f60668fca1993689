"""The last step of a sharded build: the finished shards joined into one web.

URL clashes are settled over every page (:func:`~fictionworld.web.urls.unique_urls`), the shards'
pages are streamed into ``pages.arrow`` one shard at a time (:func:`join_pages`: it needs every
shard rendered, none indexed, so a build runs it beside the last index tasks), the shards'
tantivy segments become one index, and everything moves into the world directory with the
manifest last.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from fictionworld.digests import check_files, file_digests, files_under
from fictionworld.reading import WorldFormatError
from fictionworld.web.index_files import COMMON_BEST, COMMON_TERMS, PID_RUNS, join_pid_runs, order_segments, write_json
from fictionworld.web.lexicon import LEXICON_DIR, finish_lexicon, list_titles, web_speller
from fictionworld.web.pages import (
    PAGE_BATCH,
    PAGE_SCHEMA,
    WebError,
    article_map,
    articles_path,
    codes_path,
    columns_path,
    compress_text,
    page_codes,
    page_columns,
    url_order,
    url_order_path,
)
from fictionworld.web.pagetext import TextCodec, sample_rows, stored_schema
from fictionworld.web.speller import Speller
from fictionworld.web.urls import unique_urls, with_urls
from fictionworld.web.web_files import web_manifest, write_web_json

__all__ = ["join_shards", "join_pages", "joined_intact", "unjoin", "move_joined", "PAGE_BATCH", "PAGES_DONE", "MOVING"]

Progress = Callable[[str, int, int], None]  # (stage, done, total)


PAGES_DONE = "pages.json"  # in the build directory: the page half of the join is finished
MOVING = "moving.json"  # in the build directory: the join is done and its files are being moved
_OPTIONAL = {"pages.columns.npy": columns_path, "pages.articles.npy": articles_path}  # files a build may lack
# the columns of every shard that the join reads at once
_KEYS = ["url", "kind", "title", "layer", "entity", "u", "published"]


def join_pages(n_shards: int, build: Path, graph: Path) -> dict:
    """The page half of the join, which needs every shard rendered but no index: settle URL
    clashes, stream the shards into ``<build>/pages.arrow`` with its URL order, and finish
    the lexicon with the web's speller. Sealed by ``<build>/pages.json`` (written last;
    run again, it returns that), which records the size and digest of every file it leaves
    (``files``: :func:`joined_intact` checks them when a build resumes, and ``web.json``
    takes them): a sharded build runs it beside the last index tasks."""
    done_file = build / PAGES_DONE
    if done_file.exists():
        return json.loads(done_file.read_text())
    files = [build / "pages" / f"shard-{s:05d}.arrow" for s in range(n_shards)]
    # URL clashes, page codes, directory titles, the entities' articles and the columns read by
    # row need seven columns of every shard (2.9 GB at 10M): those are read whole, and no more;
    # the pages then pass through a batch at a time
    cols = [_read_columns(f, _KEYS) for f in files]
    urls, kinds, titles, layers = (
        pa.chunked_array([c for t in cols for c in t.column(i).chunks], pa.string()) for i in range(4)
    )
    codes = page_codes(pa.table({"kind": kinds, "layer": layers}))
    np.save(build / "pages.codes.npy", codes)
    columns = np.concatenate([page_columns(t) for t in cols], axis=1)
    np.save(build / "pages.columns.npy", columns)
    manifest = json.loads((graph / "manifest.json").read_text())
    np.save(build / "pages.articles.npy", article_map(codes[0], columns[1], manifest["counts"]["entities"]))
    del columns
    order = url_order(urls)  # finds the clashes, and is the final order unless one is renamed
    renamed = unique_urls(urls, kinds, order)
    directories = list_titles(kinds, titles)
    world_hash = manifest["world_hash"]
    lexicon = build / "lexicon"

    def beside_the_copy(urls: pa.ChunkedArray) -> np.ndarray:
        finish_lexicon(lexicon, web_speller(Speller.open(lexicon / "names.arrow"), directories), world_hash)
        return url_order(with_urls(pa.table({"url": urls}), renamed).column("url")) if renamed else order

    with ThreadPoolExecutor(1) as beside:  # the speller and the URL order while the pages are copied
        done = beside.submit(beside_the_copy, urls)
        del cols, urls, kinds, titles, layers  # (the mapped columns go as soon as the order is made)
        pages = _write_pages(files, renamed, build / "pages.arrow")
        order = done.result()
    np.save(build / "pages.url-order.npy", order)
    summary = {"pages": pages, "renamed_urls": len(renamed), "files": file_digests(build, _joined_names(build))}
    tmp = done_file.with_suffix(".tmp")
    tmp.write_text(json.dumps(summary))
    os.replace(tmp, done_file)
    return summary


def _joined_names(build: Path) -> tuple[str, ...]:
    """The files :func:`join_pages` leaves in ``build``, relative to it and named as they will
    be in the world directory: the pages, the arrays beside them and the finished lexicon."""
    pages = build / "pages.arrow"
    beside = [p.name for p in (url_order_path(pages), codes_path(pages), *(f(pages) for f in _OPTIONAL.values())) if p.exists()]  # fmt: skip
    lexicon = [f"{LEXICON_DIR}/{name}" for name in files_under(build / LEXICON_DIR)]
    return tuple(sorted([pages.name, *beside, *lexicon]))


def joined_intact(build: Path) -> str | None:
    """Why the files of a finished page join are not the ones :func:`join_pages` recorded in
    ``pages.json`` (missing, another size or digest, or a join that recorded none), or None
    when they are. Reads them whole: Arrow, NumPy and the lexicon's files carry no checksum,
    and a file damaged between runs would otherwise be moved into the world as it is, its
    damage recorded in ``web.json``."""
    try:
        recorded = json.loads((build / PAGES_DONE).read_text())["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return f"{build / PAGES_DONE} records no readable digests of the joined files"
    try:
        check_files(build, recorded, digests=True, record=PAGES_DONE)
    except WorldFormatError as e:
        return str(e)
    return None


def unjoin(build: Path) -> None:
    """Undo a page join (its record first): the joined pages, the arrays beside them and the
    lexicon (finished by the join: made again from the graph, then finished by the next join)."""
    (build / PAGES_DONE).unlink(missing_ok=True)
    for p in build.glob("pages.*"):
        if p.is_file():
            p.unlink()
    from fictionworld.web.shard_tasks import seal_file

    shutil.rmtree(build / LEXICON_DIR, ignore_errors=True)
    seal_file(build / LEXICON_DIR).unlink(missing_ok=True)


def join_shards(n_shards: int, build: Path, graph: Path, out: Path, say: Progress) -> dict:
    """Join the pages (:func:`join_pages`, unless done already) and the index segments, and
    move everything into ``out`` (the manifest last)."""
    say("joining shards", 0, 3)
    pages = join_pages(n_shards, build, graph)
    offset = pages["pages"]
    manifest = json.loads((graph / "manifest.json").read_text())
    say("joining shards", 1, 3)
    index = build / "index.joined"
    parts = [build / "index" / f"shard-{s:05d}" for s in range(n_shards)]
    _join_indexes(parts, index)
    say("joining shards", 2, 3)
    from fictionworld.web.index import TantivyIndex, join_common_terms, write_common_best

    joined = TantivyIndex.open(index)
    if joined.num_docs != offset:
        raise WebError(f"{index}: {joined.num_docs} documents for {offset} pages")
    write_common_best(joined, join_common_terms(parts))  # (every term, where a shard listed none)

    web_json = web_manifest(manifest["world_hash"], manifest["spec"].get("web", {}), offset, joined)
    # the files' digests as they were written (the pages' by the page join, the index's now),
    # not as they are after the move: a file damaged in between is one `validate` names
    files = {**pages["files"], **{f"index/{k}": v for k, v in file_digests(index, tuple(files_under(index))).items()}}
    web_json["files"] = dict(sorted(files.items()))
    summary = {"world_hash": manifest["world_hash"], "entities": manifest["counts"]["entities"],
               "facts": manifest["counts"]["facts"], "pages": offset, "renamed_urls": pages["renamed_urls"]}  # fmt: skip
    # (the columns and articles are not there when a build joined its pages before they were
    # kept: made or read otherwise, never taken from an earlier attempt left in ``out``)
    kept = [name for name in _OPTIONAL if (build / name).exists()]
    write_json(build / MOVING, {"summary": summary, "manifest": manifest, "web": web_json, "kept": kept})
    return move_joined(build, graph, out, say)


def move_joined(build: Path, graph: Path, out: Path, say: Progress, *, check: bool = False) -> dict:
    """Move a joined build into ``out``, the manifest last, and remove the build directory;
    returns the build's summary. Run again after a stop at any point of it (a kill, a full
    disk), it finishes the moves: a file already moved is not looked for again, and the
    :data:`MOVING` marker, written before the first move, holds what the moved files no longer
    can tell (the manifest, ``web.json``, the summary). With ``check`` (a build resumed here:
    its files lay in the open while it was stopped), every file is compared with the size and
    digest recorded as it was written before the world is finished: a damaged one is a
    :class:`~fictionworld.reading.WorldFormatError` naming it, and the world stays unfinished
    (no manifest), not finished with the damage in it."""
    state = json.loads((build / MOVING).read_text())
    out.mkdir(parents=True, exist_ok=True)
    pages = out / "pages.arrow"
    moves = [(graph / "entities.parquet", out / "entities.parquet"), (graph / "facts.parquet", out / "facts.parquet"),
             (build / "pages.arrow", pages), (build / "pages.url-order.npy", url_order_path(pages)),
             (build / "pages.codes.npy", codes_path(pages)),
             *((build / name, _OPTIONAL[name](pages)) for name in state["kept"]),
             (build / "index.joined", out / "index"), (build / "lexicon", out / "lexicon")]  # fmt: skip
    for name in set(_OPTIONAL) - set(state["kept"]):
        _OPTIONAL[name](pages).unlink(missing_ok=True)
    for source, target in moves:
        if source.exists():
            if target.is_dir():  # (a directory left in ``out`` by something else: never this build's)
                shutil.rmtree(target)
            os.replace(source, target)
        elif not target.exists():
            raise WebError(f"{source} is missing, and was not moved to {target}: the build cannot finish")
    if check:
        _check_moved(out, state, say)
    write_web_json(out, state["web"])  # (with the digests the join recorded)
    write_json(out / "manifest.json", state["manifest"], indent=2)
    shutil.rmtree(build)
    say("joining shards", 3, 3)
    return state["summary"]


def _check_moved(out: Path, state: dict, say: Progress) -> None:
    """The graph's files against the manifest's digests and the web's against those the join
    recorded (a marker from before the join recorded them has none: the web's are left to
    ``validate``): every byte of the world read (13 GiB at 10M entities), only when a build
    resumes in its moves."""
    recorded = {**state["manifest"]["files"], **(state["web"].get("files") or {})}
    try:
        check_files(out, recorded, digests=True, record=MOVING,
                    progress=lambda done, total: say("checking the moved files", done, total))  # fmt: skip
    except WorldFormatError as e:
        raise WorldFormatError(f"{e}: damaged while the build was stopped; remove {out} and build again") from None


def _write_pages(files: list[Path], renamed: dict[int, str], target: Path) -> int:
    """Stream the shard files into one page file of exactly PAGE_BATCH rows per record batch
    (the same bytes whatever the shards), with the renamed URLs and each page's text
    compressed (:mod:`~fictionworld.web.pagetext`). The shards are read, not mapped, a record
    batch at a time (a mapping's pages would stay in the process until it let the shard go:
    a few GiB per shard at 10M); returns the page count."""
    offset = 0
    carry: pa.Table | None = None  # rows waiting for the next batch to fill a PAGE_BATCH
    codec = _text_codec(files)
    threads = min(4, len(os.sched_getaffinity(0)))  # (the frames do not depend on it)
    with pa.OSFile(str(target), "wb") as sink, ipc.new_file(sink, stored_schema(PAGE_SCHEMA, codec)) as writer:
        put = lambda batch: writer.write_table(compress_text(batch, codec, threads))  # noqa: E731
        for f in files:
            with pa.OSFile(str(f)) as source:
                reader = ipc.open_file(source)
                for i in range(reader.num_record_batches):
                    t = with_urls(pa.Table.from_batches([reader.get_batch(i)]), renamed, offset)
                    offset += t.num_rows
                    t = t if carry is None else pa.concat_tables([carry, t])
                    at = 0
                    while t.num_rows - at >= PAGE_BATCH:
                        put(t.slice(at, PAGE_BATCH).combine_chunks())
                        at += PAGE_BATCH
                    carry = t.slice(at) if at < t.num_rows else None
        if carry is not None:
            put(carry.combine_chunks())
    return offset


def _text_codec(files: list[Path]) -> TextCodec:
    """The page-text dictionary of the pages the shard files hold, in order: trained on the
    :func:`~fictionworld.web.pagetext.sample_rows` of them all, as :meth:`PageTable.save`
    trains it (so the dictionary does not depend on the shards). The shards are compressed
    (:data:`~fictionworld.web.shards.SHARD_COMPRESSION`): the text of a record batch holding
    a sample is read whole, one batch at a time (at 10M nearly every batch holds one)."""
    sizes = [_batch_rows(f) for f in files]
    rows = sample_rows(sum(map(sum, sizes)))
    texts: list[str] = []
    lo = 0
    for f, batches in zip(files, sizes):
        with pa.OSFile(str(f)) as source:
            reader = _reader(source, ["text"])
            for i, n in enumerate(batches):
                picked = rows[(rows >= lo) & (rows < lo + n)] - lo
                if len(picked):
                    texts += reader.get_batch(i).column(0).take(pa.array(picked)).to_pylist()
                lo += n
    return TextCodec.train(texts)


def _reader(source: pa.NativeFile, names: list[str]) -> ipc.RecordBatchFileReader:
    """A reader of a shard file that reads (and decompresses) columns ``names`` alone, in the
    file's order of columns."""
    index = ipc.open_file(source).schema.get_field_index
    return ipc.open_file(source, options=ipc.IpcReadOptions(included_fields=[index(n) for n in names]))


def _read_columns(path: Path, names: list[str]) -> pa.Table:
    """Columns ``names`` of a shard file, read whole, in that order."""
    with pa.OSFile(str(path)) as source:
        return _reader(source, names).read_all().select(names)


def _batch_rows(path: Path) -> list[int]:
    """The rows of each record batch of a shard file (one small column read)."""
    with pa.OSFile(str(path)) as source:
        reader = _reader(source, ["layer"])
        return [reader.get_batch(i).num_rows for i in range(reader.num_record_batches)]


_NOT_SEGMENT_FILES = ("meta.json", ".managed.json", PID_RUNS, COMMON_TERMS, COMMON_BEST)  # (joined on their own)


def _join_indexes(parts: list[Path], target: Path) -> None:
    """One tantivy index holding every part's segments (same schema; ids already global)."""
    if target.exists():
        shutil.rmtree(target)
    target.mkdir()
    meta: dict | None = None
    managed: list[str] = []
    for part in parts:
        m = json.loads((part / "meta.json").read_text())
        for f in part.iterdir():
            if f.name in _NOT_SEGMENT_FILES or f.name.startswith(".tantivy"):
                continue
            os.link(f, target / f.name) if _same_fs(f, target) else shutil.copy2(f, target / f.name)
            managed.append(f.name)
        if meta is None:
            meta = m
        else:
            if m["schema"] != meta["schema"]:
                raise WebError(f"{part}: index schema differs from the other shards'")
            meta["segments"] += m["segments"]
            meta["opstamp"] = max(meta.get("opstamp", 0), m.get("opstamp", 0))
    assert meta is not None
    (target / ".managed.json").write_text(json.dumps(sorted(managed + ["meta.json"])))
    (target / "meta.json").write_text(json.dumps(meta))
    if all((part / PID_RUNS).exists() for part in parts):  # (else hits read the pid fast field)
        join_pid_runs(parts, target)
        order_segments(target)


def _same_fs(a: Path, b: Path) -> bool:
    try:
        return a.stat().st_dev == b.stat().st_dev
    except OSError:
        return False
