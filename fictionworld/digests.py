"""What a world's manifest says of its two data files (``entities.parquet``, ``facts.parquet``):
their sizes and digests, written when a world is saved (:func:`file_digests`) and checked when
it is loaded, all at once (``verify="files"``: :func:`check_digests`) or each file before its
first column is read (``verify="on-read"``: :class:`DigestsOnRead`). A file that does not
match is one :class:`~fictionworld.reading.WorldFormatError` line."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import xxhash

from fictionworld.reading import WorldFormatError, unreadable

__all__ = ["DIGEST", "file_digests", "files_under", "check_digests", "check_files", "DigestsOnRead"]

# The digest a manifest records for each data file: xxHash's XXH3, 128 bits. It catches a
# corrupt or changed file as a cryptographic digest would (one chance in 2**128 of missing it),
# at memory speed: 31.6 GB/s against blake2b's 1.42 GB/s here, so checking the 0.97 GB of a 10M
# world's Parquet (files cached) takes 0.12-0.14 s where blake2b took 0.86-0.89 s. A
# cryptographic hash would buy nothing more: the manifest holding the digests is not signed, so
# whoever can change the files can change it too. Manifests written with "blake2b" are checked
# with that.
DIGEST = "xxh3_128"
_DIGESTS = {
    DIGEST: xxhash.xxh3_128,
    "blake2b": lambda: hashlib.blake2b(digest_size=20),
}


def file_digests(
    path: Path, names: tuple[str, ...] = ("entities.parquet", "facts.parquet"), algorithm: str = DIGEST
) -> dict:
    """``{name: {"bytes": size, algorithm: hex}}`` of a world's data files (:data:`DIGEST`)."""
    out = {}
    for name in names:
        h = _DIGESTS[algorithm]()
        buf = memoryview(bytearray(1 << 23))
        with open(path / name, "rb", buffering=0) as f:
            while n := f.readinto(buf):
                h.update(buf[:n])
        out[name] = {"bytes": (path / name).stat().st_size, algorithm: h.hexdigest()}
    return out


def files_under(directory: Path) -> list[str]:
    """The files under ``directory``, relative to it, sorted, less those whose names begin with
    a dot (tantivy's lock and bookkeeping files: made or changed by opening an index)."""
    return sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file() and not p.name.startswith("."))  # fmt: skip


def check_digests(path: Path, recorded: dict) -> None:
    """``verify="files"``: both files' sizes, then their digests, against the manifest's
    ``files`` (``recorded``)."""
    kind = _digest_kind(path, recorded)
    check_sizes(path, recorded)
    for name in recorded:
        _raise(_mismatch(path, name, recorded, kind, _identity(path, name)[2]))


def check_sizes(path: Path, recorded: dict) -> None:
    for name in recorded:
        _raise(_mismatch(path, name, recorded, None, _identity(path, name)[2]))


def _raise(problem: str | None) -> None:
    if problem is not None:
        raise WorldFormatError(problem)


def _digest_kind(path: Path, recorded: dict) -> str:
    """The digest algorithm that the manifest's ``files`` records for both data files."""
    names = tuple(recorded)
    if set(names) != {"entities.parquet", "facts.parquet"}:
        raise WorldFormatError(f"{path}/manifest.json: its file digests name {sorted(names)}")
    known = [a for a in _DIGESTS if all(isinstance(recorded[n], dict) and a in recorded[n] for n in names)]
    if not known:
        raise WorldFormatError(f"{path}/manifest.json: its file digests are of no known kind ({', '.join(_DIGESTS)})")
    return known[0]


def _identity(path: Path, name: str) -> tuple[int, int, int, int]:
    """(device, inode, size, mtime) of a data file: what changes when it is replaced or written."""
    try:
        st = (path / name).stat()
    except FileNotFoundError:
        raise WorldFormatError(f"{path}: {name} is missing") from None
    except OSError as exc:
        raise unreadable(path / name, exc) from None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _mismatch(
    path: Path, name: str, recorded: dict, kind: str | None, size: int, record: str = "the manifest"
) -> str | None:
    """Why data file ``name`` (``size`` bytes) is not the one ``record`` records, or None;
    its digest compared too with ``kind``. A file that cannot be read raises."""
    if size != recorded[name].get("bytes"):
        return f"{path}: {name} has another size than {record} records (truncated or modified)"
    if kind is not None:
        try:
            actual = file_digests(path, (name,), kind)[name][kind]
        except OSError as exc:
            raise unreadable(path / name, exc) from None
        if actual != recorded[name][kind]:
            return f"{path}: {name} does not match {record}'s digest (modified or corrupt)"
    return None


def check_files(path: Path, recorded: dict, *, digests: bool, record: str, progress=None) -> None:
    """Every file ``recorded`` names (``{relative name: {"bytes": size, DIGEST: hex}}``, as
    :func:`file_digests` gives) against the files under ``path``: all their sizes first, then,
    with ``digests``, their digests, one :class:`~fictionworld.reading.WorldFormatError` naming
    the first that differs and ``record`` (the file that records them). ``progress(done, total)``
    is called with the bytes hashed."""
    if not isinstance(recorded, dict) or not all(isinstance(v, dict) for v in recorded.values()):
        raise WorldFormatError(f"{path}: {record}'s file list is not a map of file names to sizes and digests")
    for name in recorded:
        _raise(_mismatch(path, name, recorded, None, _identity(path, name)[2], record))
    if digests:
        total, done = sum(int(v.get("bytes") or 0) for v in recorded.values()), 0
        for name, v in recorded.items():
            kind = next((k for k in _DIGESTS if k in v), None)
            if kind is None:
                raise WorldFormatError(f"{path}: {record} records no digest of a known kind for {name}")
            _raise(_mismatch(path, name, recorded, kind, v["bytes"], record))
            done += v["bytes"]
            if progress is not None:
                progress(done, total)


class DigestsOnRead:
    """``verify="on-read"``: the manifest's digest kinds and the files' sizes are checked when
    it is made; a data file's digest when it is called with the file's name, before a column is
    read from it (:func:`~fictionworld.reading.lazy_tables`). A file is hashed once while it
    stays the same file (device, inode, size and modification time, looked at before every
    read): one replaced or written since is hashed again, and one that did not match raises at
    once at every read until it changes (one that could not be read is tried again). A lock per
    file, made anew in a forked child (forked while another thread hashed, the child would find
    it held for ever)."""

    def __init__(self, path: Path, recorded: dict):
        self.path, self.recorded = path, recorded
        self.kind = _digest_kind(path, recorded)
        check_sizes(path, recorded)
        self.seen: dict[str, tuple[tuple, str | None]] = {}  # name -> (identity hashed, its problem)
        self._pid, self._locks = -1, {}

    def __call__(self, name: str) -> None:
        now = _identity(self.path, name)
        seen = self.seen.get(name)
        if seen is None or seen[0] != now:
            if self._pid != os.getpid():
                self._pid, self._locks = os.getpid(), {n: threading.Lock() for n in self.recorded}
            with self._locks[name]:
                now = _identity(self.path, name)
                seen = self.seen.get(name)
                if seen is None or seen[0] != now:
                    seen = self.seen[name] = (now, _mismatch(self.path, name, self.recorded, self.kind, now[2]))
        _raise(seen[1])
