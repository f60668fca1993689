"""The files a build writes beside a tantivy index's ``meta.json``: which page each document
is (:data:`PID_RUNS`), and the best score of each common clause (:data:`COMMON_BEST`, joined
from the shards' :data:`COMMON_TERMS`, written by :func:`write_common_best`).
:mod:`fictionworld.web.index` reads them."""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

__all__ = [
    "PID_RUNS",
    "COMMON_BEST",
    "COMMON_TERMS",
    "FLOOR_DEPTHS",
    "frequent_terms",
    "join_common_terms",
    "read_common_best",
    "write_json",
    "write_pid_runs",
    "order_segments",
    "join_pid_runs",
]

# Which page each document of each segment is, as runs (first doc, first page id, length),
# written beside ``meta.json`` when an index is built: a hit's page id is then arithmetic on
# its (segment, doc) address. Reading the ``pid`` fast field instead costs a call into tantivy
# that grows with the number of segments (0.07 ms at 8 segments, 0.7 ms at 37).
PID_RUNS = "pid-runs.json"


# The best score of every common clause over the whole index, written when an index is built
# (or joined from shards): ``{"num_docs": N, "clauses": {field: {token: [pages, best, floors]}}}``,
# ``floors`` the clause's scores at the ranks :data:`FLOOR_DEPTHS` (a file without them, as
# written before, gives none).
# :meth:`TantivyIndex.search` needs a clause's best to know whether pages holding only common
# clauses can reach its top n; found at search time, it is one full scan of the clause, once
# per process: at 10M entities 5,350 clauses on 831M postings, p50 3.0-3.6 -> 1.35 ms over a
# fresh process's first 1,200 bench queries when known ahead (`benchmarks/BIG_WORLDS.md`, "Common words are
# scored only where they can change the answer"). A clause the file lacks, or whose page count differs from the
# index's, is scanned as before.
COMMON_BEST = "common-best.json"
# The ranks at which a common clause's score is kept (``CommonClauses.floor``): the union of
# clauses holding it has at least d pages scoring that much or more.
FLOOR_DEPTHS = (10, 20, 40, 100)
# A shard's terms on enough of its pages to be common in the whole index (pigeonhole: a clause
# on more than L pages of S shards is on more than L / S pages of one), joined into COMMON_BEST.
COMMON_TERMS = "common-terms.json"
_TERMS_CAP = 50_000  # the most frequent terms listed per field (one left out is scanned at search time)


def frequent_terms(searcher, above: float, cap: int = _TERMS_CAP) -> dict[str, list[str]]:
    """The title and body terms on more than ``above`` documents of ``searcher`` (at most the
    ``cap`` most frequent of each field), sorted."""
    return {
        field: sorted(w for w, c in searcher.terms_with_prefix(field, "", limit=cap) if c > above)
        for field in ("title", "body")
    }


def read_common_best(path: Path, num_docs: int) -> dict[tuple[str, str], tuple[int, float, tuple[float, ...]]]:
    """(field, token) -> (pages, best, floors) of :data:`COMMON_BEST` in ``path`` (floors: one
    per :data:`FLOOR_DEPTHS`, or none in a file written before them), or nothing where the
    file is missing, unreadable or made for an index of another size."""
    try:
        data = json.loads((path / COMMON_BEST).read_text())
        if data["num_docs"] != num_docs:
            return {}
        out = {}
        for field, terms in data["clauses"].items():
            for token, (df, best, *rest) in terms.items():
                floors = tuple(float(x) for x in rest[0]) if rest else ()
                if len(rest) > 1 or floors and len(floors) != len(FLOOR_DEPTHS):
                    return {}
                out[str(field), str(token)] = (int(df), float(best), floors)
        return out
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def join_common_terms(parts: list[Path]) -> dict[str, list[str]] | None:
    """The union of the shards' :data:`COMMON_TERMS`, or None if a shard has none."""
    out: dict[str, set[str]] = {"title": set(), "body": set()}
    for part in parts:
        try:
            terms = json.loads((part / COMMON_TERMS).read_text())
        except (OSError, ValueError):
            return None
        for field in out:
            out[field].update(terms.get(field, ()))
    return {field: sorted(ws) for field, ws in out.items()}


def write_json(path: Path, data, **dumps) -> None:
    """``data`` as JSON at ``path``, written beside it and moved there (never half a file)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, **dumps))
    os.replace(tmp, path)


def _segments(path: Path) -> list[tuple[str, int]]:
    """(segment id, document count) of the index at ``path``, in ``meta.json`` order (the
    order of the searcher's segment ordinals)."""
    meta = json.loads((path / "meta.json").read_text())
    return [(m["segment_id"].replace("-", ""), int(m["max_doc"])) for m in meta["segments"]]


def write_pid_runs(searcher, path: Path, chunk: int = 1 << 20) -> None:
    """Read every document's page id once and write them to ``path / PID_RUNS`` as runs per
    segment (a shard's documents are added in page order, so a segment is a few runs)."""
    import tantivy

    out: dict[str, list[list[int]]] = {}
    for ord_, (sid, n) in enumerate(_segments(path)):
        pids = np.zeros(n, np.int64)
        for lo in range(0, n, chunk):
            hi = min(n, lo + chunk)
            pids[lo:hi] = searcher.fast_field_values("pid", [tantivy.DocAddress(ord_, d) for d in range(lo, hi)])
        starts = np.flatnonzero(np.r_[True, np.diff(pids) != 1]) if n else np.zeros(0, np.int64)
        lengths = np.diff(np.r_[starts, n])
        out[sid] = np.stack([starts, pids[starts], lengths], 1).tolist() if n else []
    (path / PID_RUNS).write_text(json.dumps({"segments": out}))


def order_segments(path: Path) -> bool:
    """List the segments in ``meta.json`` by their first page id (the order of the searcher's
    segment ordinals), so that tantivy's tie-break, the lower document address, is the lower
    page id wherever its merge keeps it; returns whether the order changed. Needs ``PID_RUNS``."""
    meta = json.loads((path / "meta.json").read_text())
    runs = json.loads((path / PID_RUNS).read_text())["segments"]

    def first(m: dict) -> int:
        r = runs[m["segment_id"].replace("-", "")]
        return min(x[1] for x in r) if r else -1

    ordered = sorted(meta["segments"], key=first)
    if ordered == meta["segments"]:
        return False
    meta["segments"] = ordered
    tmp = path / "meta.json.tmp"
    tmp.write_text(json.dumps(meta))
    tmp.replace(path / "meta.json")
    return True


def join_pid_runs(parts: list[Path], target: Path) -> None:
    """The ``PID_RUNS`` of an index joined from ``parts``' segments (:func:`web.join`)."""
    out: dict[str, list] = {}
    for part in parts:
        out.update(json.loads((part / PID_RUNS).read_text())["segments"])
    (target / PID_RUNS).write_text(json.dumps({"segments": out}))


class _PidRuns:
    """Page id of (segment ordinal, doc) as arithmetic over runs."""

    def __init__(self, base: np.ndarray, start: np.ndarray, pid: np.ndarray):
        self.base, self.start, self.pid = base, start, pid  # segment's first global doc; runs by global doc

    def pids(self, ords: np.ndarray, docs: np.ndarray) -> np.ndarray:
        g = self.base[ords] + docs
        i = np.searchsorted(self.start, g, side="right") - 1
        return self.pid[i] + (g - self.start[i])


def open_runs(searcher, path: Path) -> _PidRuns | None:
    """The index's page-id runs, or None (then hits read the ``pid`` fast field) when the file
    is missing, does not lay runs end to end over every segment, or disagrees with the fast
    field on the first and last document of any segment (checked in one call)."""
    try:
        segments = _segments(path)
        runs = json.loads((path / PID_RUNS).read_text())["segments"]
        base = np.r_[0, np.cumsum([n for _, n in segments])].astype(np.int64)
        table = [np.asarray(runs[sid], np.int64).reshape(-1, 3) for sid, _ in segments]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    for r, (_, n) in zip(table, segments):  # runs laid end to end over the segment's documents
        if r[:, 2].sum() != n or not np.array_equal(
            r[:, 0], np.r_[0, np.cumsum(r[:, 2])[:-1]].astype(np.int64)[: len(r)]
        ):
            return None
    starts = [b + r[:, 0] for b, r in zip(base, table)]
    out = _PidRuns(base, np.concatenate([np.zeros(0, np.int64), *starts]),
                   np.concatenate([np.zeros(0, np.int64), *(r[:, 1] for r in table)]))  # fmt: skip
    probe = [(o, d) for o, (_, n) in enumerate(segments) if n for d in sorted({0, n - 1})]
    if probe:
        import tantivy

        ords, docs = (np.array(x, np.int64) for x in zip(*probe))
        real = searcher.fast_field_values("pid", [tantivy.DocAddress(o, d) for o, d in probe])
        if searcher.num_segments != len(segments) or out.pids(ords, docs).tolist() != list(real):
            return None
    return out


def write_common_best(index, candidates: dict[str, list[str]] | None = None) -> None:
    """Write :data:`COMMON_BEST` beside ``index``: the page count and best score of each of its
    common clauses, among ``candidates`` (field -> terms; default: every term of the index).
    The scans run in two threads (tantivy searches without the GIL)."""
    from fictionworld.web.index import common_limit  # (index.py imports this module)

    assert index.path is not None
    limit = common_limit(index.num_docs)
    if candidates is None:
        candidates = frequent_terms(index.searcher, limit)
    pages = {(f, w): index._field_df(f, w) for f in ("title", "body") for w in sorted(set(candidates.get(f, ())))}
    clauses = [c for c, n in pages.items() if n > limit]
    with ThreadPoolExecutor(min(2, os.cpu_count() or 1)) as pool:
        stats = list(pool.map(index.common.scan, clauses))
    table: dict[str, dict[str, list]] = {"title": {}, "body": {}}
    for (field, token), (best, floors) in zip(clauses, stats):
        table[field][token] = [pages[field, token], best, list(floors)]
    write_json(
        index.path / COMMON_BEST, {"num_docs": index.num_docs, "clauses": table}, sort_keys=True, separators=(",", ":")
    )
