"""What a task set looks like (:func:`fictionworld.rollouts.agents.explorer.explore` adds whether an agent that
knows nothing solves it).

:func:`task_stats` summarises a set (families, rows, columns, cells, hops, conditions, and
:func:`guess_stats`: how much base-rate guessing would earn);
:class:`AnswerPages` finds any single page that states
a task's whole answer (a "list of all answers" would make a wide task a lookup).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

__all__ = ["AnswerPages", "task_stats", "guess_stats"]


class AnswerPages:
    """Pages by the facts they state, to find a page holding every fact of a gold table."""

    def __init__(self, web):
        import pyarrow.compute as pc

        col = web.pages.table.column("fact_ids")
        with web.pages.scanning():  # the whole column, in order
            flat = pc.list_flatten(col).to_numpy()
            parents = pc.list_parent_indices(col).to_numpy()
        order = np.argsort(flat, kind="stable")
        self.facts, self.pages = flat[order], parents[order]
        self.web = web
        self._sets: dict[int, set[int]] = {}

    def pages_of(self, fid: int) -> np.ndarray:
        lo, hi = np.searchsorted(self.facts, fid, "left"), np.searchsorted(self.facts, fid, "right")
        return self.pages[lo:hi]

    def _set(self, page: int) -> set[int]:
        if page not in self._sets:
            self._sets[page] = set(self.web.pages.column("fact_ids", page))
        return self._sets[page]

    def holding(self, task) -> list[str]:
        """URLs of pages stating every fact behind the task's gold cells (empty: none does)."""
        needed = {f for p in task.provenance for k, ids in p.facts.items() if not k.startswith("clue:") for f in ids}
        if not needed:
            return []
        first = min(needed, key=lambda f: len(self.pages_of(f)))
        return [self.web.pages.urls[int(p)] for p in self.pages_of(first) if needed <= self._set(int(p))]


def _summary(values) -> dict:
    a = np.asarray(values, dtype=float)
    if not len(a):
        return {"min": 0.0, "mean": 0.0, "max": 0.0}
    return {"min": float(a.min()), "mean": float(a.mean()), "max": float(a.max())}


def guess_stats(tasks, top: int = 5) -> dict:
    """Guessability of a task set (:mod:`fictionworld.tasks.guess`; wide tasks made since it was
    measured): per task the expected item-F1 gain of keys + base-rate guesses over keys alone
    (``guess_gain``), per value column the share of its gold cells the base-rate guess answers,
    how many tasks and columns pass the limits (:data:`GAIN_LIMIT`, :data:`GUESS_LIMIT`: the
    generator bounds the base rate over the row type, so a task's own rows can exceed them by
    chance), and the ``top`` most guessable column kinds (header, mean share, columns)."""
    from fictionworld.tasks.guess import GAIN_LIMIT, GUESS_LIMIT

    measured = [t for t in tasks if "guess_gain" in t.difficulty]
    shares: list[float] = []
    by_header: dict[str, list[float]] = {}
    for t in measured:
        heads = dict(zip(t.gold.columns, t.headers or t.gold.columns))
        for name, v in t.guessability.items():
            shares.append(v)
            by_header.setdefault(heads.get(name, name), []).append(v)
    worst = sorted(by_header.items(), key=lambda kv: (-float(np.mean(kv[1])), kv[0]))[:top]
    return {
        "tasks": len(measured),
        "guess_gain": _summary([t.difficulty["guess_gain"] for t in measured]),
        "gain_over_limit": sum(t.difficulty["guess_gain"] > GAIN_LIMIT for t in measured),
        "gain_limit": GAIN_LIMIT,
        "columns": len(shares),
        "guessability": _summary(shares),
        "over_limit": sum(v > GUESS_LIMIT for v in shares),
        "limit": GUESS_LIMIT,
        "most_guessable": [(h, float(np.mean(v)), len(v)) for h, v in worst],
    }


def task_stats(tasks) -> dict:
    """Families, rows, columns, cells, hops, conditions and guessability of a task set."""
    rows = [len(t.gold.rows) for t in tasks]
    cols = [len(t.gold.columns) for t in tasks]
    return {
        "tasks": len(tasks),
        "families": dict(sorted(Counter(t.family or t.kind for t in tasks).items())),
        "rows": _summary(rows),
        "columns": _summary(cols),
        "cells": _summary([r * c for r, c in zip(rows, cols)]),
        "hops": _summary([t.difficulty.get("hops", 0) for t in tasks]),
        "conditions": _summary([t.difficulty.get("conditions", t.difficulty.get("clues", 1)) for t in tasks]),
        "guess": guess_stats(tasks),
    }
