"""What a task set looks like (:func:`rollout.agents.explorer.explore` adds whether an agent that
knows nothing solves it).

:func:`task_stats` summarises a set (families, rows, columns, cells, hops, conditions);
:class:`AnswerPages` finds any single page that states
a task's whole answer (a "list of all answers" would make a wide task a lookup).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

__all__ = ["AnswerPages", "task_stats"]


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


def task_stats(tasks) -> dict:
    """Families, rows, columns, cells, hops and conditions of a task set."""
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
    }
