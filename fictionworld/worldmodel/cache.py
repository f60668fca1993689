"""The render cache: one stored rendering per URL (and per result), shared by every process.

SQLite in WAL mode in the world directory (``renders.sqlite``): readers never block the writer,
and ``INSERT OR IGNORE`` on the primary key makes the first writer win, so two Ray workers that
render the same URL at once both serve the page that was stored first. Rows are namespaced by
the world hash, the model and the prompt version: another model writes its own pages.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from fictionworld.errors import FictionWorldError

__all__ = ["RenderCache", "CACHE_FILE", "CacheError"]

CACHE_FILE = "renders.sqlite"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS renders (
    ns TEXT NOT NULL,
    key TEXT NOT NULL,
    url TEXT NOT NULL,
    body TEXT NOT NULL,
    source TEXT NOT NULL,      -- "llm" (verified) or "fallback" (template after failed checks)
    attempts INTEGER NOT NULL,
    created REAL NOT NULL,     -- seconds since the epoch; bookkeeping only, never content
    PRIMARY KEY (ns, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS renders_url ON renders (ns, url);
"""


class CacheError(FictionWorldError, RuntimeError):
    """The cache file is unreadable (not SQLite, or a corrupt database)."""

    exit_code = 1


class RenderCache:
    """``RenderCache(path)`` for a file (created if missing), ``RenderCache(None)`` in memory."""

    def __init__(self, path: str | Path | None, *, timeout: float = 30.0):
        self.path = Path(path) if path is not None else None
        self._lock = threading.Lock()
        target = str(self.path) if self.path is not None else ":memory:"
        # Processes opening a new cache at once can meet "database is locked" where SQLite's
        # busy handler does not wait (switching to WAL): open again, within ``timeout``.
        deadline = time.monotonic() + timeout
        while True:
            try:
                self._db = self._open(target, timeout)
                return
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) or time.monotonic() > deadline:
                    raise CacheError(
                        f"{target}: not a usable render cache ({e}); move it away to start a new one"
                    ) from None
                time.sleep(0.05)
            except sqlite3.DatabaseError as e:
                raise CacheError(
                    f"{target}: not a usable render cache ({e}); move it away to start a new one"
                ) from None

    def _open(self, target: str, timeout: float) -> sqlite3.Connection:
        db = sqlite3.connect(target, timeout=timeout, check_same_thread=False, isolation_level=None)
        try:
            if self.path is not None:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
            db.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
            db.executescript(_SCHEMA)
        except sqlite3.DatabaseError:
            db.close()
            raise
        return db

    def get(self, ns: str, key: str) -> tuple[str, str, int] | None:
        """(body, source, attempts) stored for ``key``, or None."""
        with self._lock:
            row = self._db.execute("SELECT body, source, attempts FROM renders WHERE ns=? AND key=?", (ns, key))
            return row.fetchone()

    def put(self, ns: str, key: str, url: str, body: str, source: str, attempts: int) -> tuple[str, str, int]:
        """Stores a rendering unless one is there already; returns the one that is stored."""
        with self._lock:
            self._db.execute(
                "INSERT OR IGNORE INTO renders VALUES (?, ?, ?, ?, ?, ?, ?)",
                (ns, key, url, body, source, attempts, time.time()),
            )
            return self._db.execute(
                "SELECT body, source, attempts FROM renders WHERE ns=? AND key=?", (ns, key)
            ).fetchone()

    def about(self, ns: str, url: str, limit: int = 3) -> list[tuple[str, str]]:
        """(key, body) of stored renderings that concern ``url`` (its page, its snippets)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT key, body FROM renders WHERE ns=? AND url=? ORDER BY created LIMIT ?", (ns, url, limit)
            )
            return rows.fetchall()

    def counts(self, ns: str | None = None) -> dict[str, int]:
        """Stored renderings by source (``llm``, ``fallback``), in one namespace or all."""
        with self._lock:
            q = "SELECT source, COUNT(*) FROM renders" + (" WHERE ns=?" if ns else "") + " GROUP BY source"
            return dict(self._db.execute(q, (ns,) if ns else ()).fetchall())

    def clear(self, ns: str | None = None, source: str | None = None) -> int:
        """Forgets stored renderings (e.g. ``source="fallback"`` to give a better model another
        try); returns how many."""
        conds, args = [], []
        if ns:
            conds.append("ns=?")
            args.append(ns)
        if source:
            conds.append("source=?")
            args.append(source)
        where = (" WHERE " + " AND ".join(conds)) if conds else ""
        with self._lock:
            return self._db.execute("DELETE FROM renders" + where, args).rowcount

    def close(self) -> None:
        with self._lock:
            self._db.close()
