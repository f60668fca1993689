"""Mapping a saved web's files into a process's page tables ahead of its searches.

A saved web is read through memory maps (the pages file, the index segments, the lexicon), so
a fresh process pays a page fault the first time it touches each part of them, even when the
page cache already holds the file: at 10M entities about 72,000 over its first 1,200 searches,
some 7 µs each on this project's 2-core VM. :func:`preload` asks the kernel to fill this
process's page tables for those maps in one go (Linux's ``MADV_POPULATE_READ``; 12.4 GiB in
0.5-0.9 s), as Elasticsearch's ``index.store.preload`` does for its files. Measured in one
process, blocks of 600 queries alternated (``bench_search.py --world DIR --preload``): p50
4.09 -> 3.47 ms, mean 7.98 -> 6.76 ms at 10M (`benchmarks/BIG_WORLDS.md`, "Preloading the memory maps").

By default only what the page cache holds already is mapped (``mincore`` says which): it reads
nothing from disk, so a world larger than the memory left for it is never pulled in whole. The
mapped pages are the page cache's, shared by every process mapping the file; they are counted
in each process's RSS but copied into none. Elsewhere (not Linux, a kernel before 5.14) it
does nothing and says so.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["Preloaded", "preload", "mapped_files"]

MADV_POPULATE_READ = 22  # Linux 5.14+: fault the range in, readable, as a read of each page would
CHUNK_BYTES = 16 << 20  # per madvise call: it holds the mm's map lock (for reading) while it runs


@dataclass(frozen=True)
class Preloaded:
    """What :func:`preload` did: ``mapped`` bytes filled in, of ``total`` bytes of maps of the
    directory's files (``skipped``: not in the page cache, left to fault from disk on use)."""

    supported: bool
    files: int = 0
    total: int = 0
    mapped: int = 0
    skipped: int = 0
    seconds: float = 0.0
    reason: str = ""

    def as_dict(self) -> dict:
        return {"supported": self.supported, "files": self.files, "total_bytes": self.total,
                "mapped_bytes": self.mapped, "skipped_bytes": self.skipped, "seconds": round(self.seconds, 3),
                "reason": self.reason}  # fmt: skip


def mapped_files(directory: str | Path) -> list[tuple[int, int, str]]:
    """(start, end, path) of this process's maps of files under ``directory`` (Linux), in
    address order."""
    root = os.path.realpath(directory).rstrip("/") + "/"
    out = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(maxsplit=5)
                if len(parts) == 6 and parts[5].rstrip("\n").startswith(root):
                    lo, hi = parts[0].split("-")
                    out.append((int(lo, 16), int(hi, 16), parts[5].rstrip("\n")))
    except OSError:
        return []
    return out


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    libc.madvise.restype = ctypes.c_int
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    libc.mincore.restype = ctypes.c_int
    return libc


def _runs(resident: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) page runs where ``resident`` is set."""
    flag = np.concatenate(([0], resident & 1, [0])).astype(np.int8)
    edges = np.flatnonzero(np.diff(flag))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist()))


def preload(directory: str | Path, *, resident_only: bool = True, stop: threading.Event | None = None,
            advice: int = MADV_POPULATE_READ) -> Preloaded:  # fmt: skip
    """Fill this process's page tables for its maps of the files under ``directory``: only the
    parts the page cache holds (``resident_only``, the default: nothing is read from disk), or
    all of them. Runs in pieces of :data:`CHUNK_BYTES`, so a search in another thread waits at
    most one piece for the map lock; ``stop`` (set) ends it between pieces. Never raises for a
    kernel that cannot: the result says ``supported=False`` and why."""
    if not sys.platform.startswith("linux"):
        return Preloaded(False, reason=f"not Linux ({sys.platform})")
    t0 = time.perf_counter()
    maps = mapped_files(directory)
    try:
        libc = _libc()
    except (OSError, AttributeError) as e:
        return Preloaded(False, reason=f"no libc madvise/mincore ({e})")
    page = os.sysconf("SC_PAGE_SIZE")
    files = len({p for *_, p in maps})
    total = mapped = skipped = 0
    for lo, hi, _path in maps:
        total += hi - lo
        pages = (hi - lo) // page
        if resident_only:
            vec = np.zeros(pages, np.uint8)
            if libc.mincore(lo, hi - lo, vec.ctypes.data) != 0:  # (the map went away meanwhile: ENOMEM)
                skipped += hi - lo
                continue
            runs = _runs(vec)
        else:
            runs = [(0, pages)]
        done = 0
        for a, b in runs:
            for s in range(a * page, b * page, CHUNK_BYTES):
                if stop is not None and stop.is_set():
                    return Preloaded(True, files, total, mapped, skipped, time.perf_counter() - t0, "stopped")
                n = min(CHUNK_BYTES, b * page - s)
                if libc.madvise(lo + s, n, advice) != 0:
                    err = ctypes.get_errno()
                    if err == 22 and mapped == 0:  # EINVAL: this kernel has no MADV_POPULATE_READ
                        return Preloaded(False, reason=f"madvise({advice}) is not supported here ({os.strerror(err)})")
                    continue  # (EFAULT/ENOMEM: the map shrank or went away; what is left is not ours to fill)
                mapped += n
                done += n
        skipped += hi - lo - done
    return Preloaded(True, files, total, mapped, skipped, time.perf_counter() - t0)
