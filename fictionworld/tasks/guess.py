"""Guessability: how much of a column an agent answers without reading, from base rates.

A policy trained on many tasks learns each kind of column's most common value: a count of
"0", the commonest occupation, the largest country. Writing it into every row of a table it
never read earns whatever share of the gold cells that value answers. For a column of a task,
**guessability** is that share: the best single answer over the column's values for every
entity of the row type (the world's base rate, found without the task), applied to the task's
gold cells with the column's metric (numbers within their tolerance, dates within the days
``date_near`` allows). Task generation keeps each drawn column's base-rate share at most
:data:`GUESS_LIMIT` and a task's expected gain at most :data:`GAIN_LIMIT` (``TaskKnobs.guess_gain``):
the item F1 that "every key plus each column's best guess" earns over "every key, nothing else",
which is the sum of the value columns' guessability over the column count. A rank column's
guessability is 1 / rows ("1" answers one row); a count's is the share of the commonest count
in the task's group (a policy may condition on the group the question names), and both count in
a task's budget: a table too narrow to hold them is not drawn.

A question tells more than the row type. Where a column runs through an entity on the way to
the one the question names ("companies headquartered in a city in T": the headquarters city),
the rows share few such entities, and a policy that knows the pattern ("most companies of T are
in its largest city") answers the commonest of them; and where a column of a task is mostly one
value (at least :data:`DOMINANT_SHARE` of :data:`DOMINANT_ROWS` rows or more: "people born in Z"
are mostly citizens of Z's country), the question predicts it whatever the base rate. There a
column's guessability is the best any single answer does on the task's own gold cells
(:func:`best_answer`), which no policy, however it conditions on the question, beats.
"""

from __future__ import annotations

import collections
import datetime as dt
from dataclasses import dataclass

import numpy as np

from fictionworld.folding import fold_key
from fictionworld.tables import TYPE_CODE
from fictionworld.tasks.model import ColumnEval
from fictionworld.tasks.query import Cell, Column, GraphIndex, gold_text

__all__ = ["GUESS_LIMIT", "GAIN_LIMIT", "DOMINANT_SHARE", "DOMINANT_ROWS", "Guess", "BaseRates", "best_answer", "rule"]

GUESS_LIMIT = 0.2  # most base-rate share of a drawn value column
GAIN_LIMIT = 0.015  # most expected item-F1 gain of keys + best guesses over keys alone, per task
DOMINANT_SHARE = 0.5  # a task's column mostly one value: the question predicts it (see above)
DOMINANT_ROWS = 10  # ... in tables of this many rows or more (fewer: one value twice is chance)

DATE_NEAR_DAYS = 31  # the strict scorer's date_near tolerance


@dataclass(frozen=True)
class Guess:
    """The best single answer of a column over a population, and the share it answers."""

    value: object  # entity id, folded text, number, day number or year (as ``rule`` compares)
    share: float
    text: str  # how an answer writes it


def rule(ev: ColumnEval, fmt: str) -> tuple[str, float]:
    """How a column's metric compares an answer with a gold value: ``("number", relative
    tolerance)``, ``("days", days)`` or ``("exact", 0)`` (names compare as entities, text
    folded)."""
    metrics, pre = set(ev.metric), set(ev.preprocess)
    if fmt == "year" or "number_near" in metrics or "extract_number" in pre:
        tol = float(ev.criterion) if isinstance(ev.criterion, int | float) else 0.0
        return "number", tol
    if "date_near" in metrics:
        return "days", float(DATE_NEAR_DAYS)
    if "norm_date" in pre:
        return "days", 0.0
    return "exact", 0.0


def _value(cell: Cell, kind: str):
    """A gold cell as ``rule`` compares it, read from the gold text as the scorer reads it (a
    name or category folded: namesakes and spellings of one value are one guess)."""
    if kind == "days":
        return cell.value.toordinal() if isinstance(cell.value, dt.date) else None
    if kind == "number":
        try:
            return float(cell.text)
        except ValueError:
            return None
    return fold_key(cell.text)


def _answered(kind: str, tol: float, guess, values: list) -> int:
    if kind == "exact" or guess is None:
        return sum(1 for x in values if x == guess)
    x = np.asarray(values, dtype=float)
    if kind == "days":
        return int((np.abs(x - guess) <= tol).sum())
    return int((np.abs(x - guess) <= np.abs(x) * tol + 1e-9 * np.maximum(1.0, np.abs(x))).sum())


def best_guess(kind: str, tol: float, values: list) -> tuple[object, int]:
    """The single answer matching the most of ``values`` under ``rule`` (ties: the smallest),
    and how many it matches."""
    if not values:
        return None, 0
    if kind == "exact" or tol == 0:
        counts = collections.Counter(values)
        top = max(counts.values())
        return min(v for v, n in counts.items() if n == top), top
    x = np.sort(np.asarray(values, dtype=float))
    if kind == "days":  # an answer d matches gold within [d - tol, d + tol]
        hi = np.searchsorted(x, x + 2 * tol, "right")
        i = int(np.argmax(hi - np.arange(len(x))))
        return float(x[i] + tol), int(hi[i] - i)
    # number_near: |a - g| <= g * tol; gold values x_i..x_j are all matched by the answers in
    # [x_j (1 - tol), x_i (1 + tol)], not empty when x_j <= x_i (1 + tol) / (1 - tol): the middle
    pos = x > 0
    if not pos.any() or tol >= 1:
        counts = collections.Counter(x.tolist())
        top = max(counts.values())
        return min(v for v, n in counts.items() if n == top), top
    xp = x[pos]
    hi = np.searchsorted(xp, xp * (1 + tol) / (1 - tol) * (1 + 1e-12), "right")
    i = int(np.argmax(hi - np.arange(len(xp))))
    guess = float((xp[hi[i] - 1] * (1 - tol) + xp[i] * (1 + tol)) / 2)
    return guess, _answered(kind, tol, guess, x.tolist())


def _written(kind: str, guess, cells: list[Cell], values: list, fmt: str) -> tuple[str, object]:
    """The guess as an answer writes it, and its value read back from that text."""
    if kind == "exact":
        return next((c.text for c, v in zip(cells, values) if v == guess), ""), guess
    if kind == "days":
        day = dt.date.fromordinal(int(round(guess)))
        return day.isoformat(), day.toordinal()
    text = str(int(round(guess))) if fmt in ("int", "year") or float(guess).is_integer() else f"{guess:.2f}"
    return text, float(text)


def best_answer(col: Column, ev: ColumnEval, cells: list[Cell], fmt: str | None = None) -> Guess:
    """The single answer that matches the most of ``cells`` (a task's gold cells of ``col``,
    written as ``fmt``) under the column's metric, and the share of them it matches: what the
    best fixed answer earns on them, however a policy came by it."""
    if not cells:
        return Guess(None, 0.0, "")
    fmt = fmt or col.format
    if col.aggregate == "rank":
        return Guess(1.0, 1.0 / len(cells), "1")
    kind, tol = rule(ev, fmt)
    values = [_value(c, kind) for c in cells]
    keep = [(c, v) for c, v in zip(cells, values) if v is not None]
    if not keep:
        return Guess(None, 0.0, "")
    value, _n = best_guess(kind, tol, [v for _, v in keep])
    text, value = _written(kind, value, [c for c, _ in keep], [v for _, v in keep], fmt)
    return Guess(value, _answered(kind, tol, value, [v for _, v in keep]) / len(cells), text)


class BaseRates:
    """Best single guesses of columns over every entity of a row type, cached per column."""

    def __init__(self, g: GraphIndex):
        self.g = g
        self._cache: dict[tuple, tuple] = {}  # column key -> _over_type

    def guess(self, row_type: str, col: Column, ev: ColumnEval, fmt: str | None = None) -> Guess:
        """The base-rate guess of ``col`` (written as ``fmt``) for rows of ``row_type``. A rank
        has no base rate here: a rank answers one row of any task (see :meth:`share`)."""
        return self._over_type(row_type, col, ev, fmt)[0]

    def mode(self, row_type: str, col: Column, ev: ColumnEval, fmt: str | None = None):
        """The commonest value of ``col`` over the type (as ``rule`` compares it): what a policy
        that learnt the values, not the metric's tolerance, writes."""
        return self._over_type(row_type, col, ev, fmt)[1]

    def extreme_share(self, row_type: str, col: Column, ev: ColumnEval, cells: list[Cell], *, highest: bool,
                      fmt: str | None = None) -> float:  # fmt: skip
        """The share of ``cells`` that the type's highest (or lowest) value of ``col`` answers:
        what a policy writes for the number a ranking orders by ("the 5 books with the lowest
        page count": the smallest page count it has seen)."""
        fmt = fmt or col.format
        kind, tol = rule(ev, fmt)
        if not cells or kind == "exact":
            return 0.0
        guess = self._over_type(row_type, col, ev, fmt)[2 + int(highest)]
        values = [v for v in (_value(c, kind) for c in cells) if v is not None]
        return _answered(kind, tol, guess, values) / len(cells) if guess is not None else 0.0

    def _over_type(self, row_type: str, col: Column, ev: ColumnEval, fmt: str | None):
        """(best guess, commonest value, lowest value, highest value) of ``col`` written as
        ``fmt`` over every entity of ``row_type``, read once per column and cached."""
        fmt = fmt or col.format
        kind, tol = rule(ev, fmt)
        key = (row_type, col.path, col.attribute, col.aggregate, col.of_type, fmt, kind, tol)
        if key not in self._cache:
            if col.aggregate == "rank":
                self._cache[key] = (Guess(1.0, 0.0, "1"), None, None, None)
                return self._cache[key]
            rows = np.flatnonzero(self.g.world.entities.type_code == TYPE_CODE[row_type]).astype(np.int64)
            cells = [c for c in self.g.column(rows, col) if c is not None]
            if col.format != fmt:
                cells = [Cell(gold_text(c.value, fmt), c.value, c.entity, c.facts) for c in cells]
            values = [_value(c, kind) for c in cells]
            keep = [(c, v) for c, v in zip(cells, values) if v is not None]
            cells, values = [c for c, _ in keep], [v for _, v in keep]
            value, _n = best_guess(kind, tol, values)
            text, value = _written(kind, value, cells, values, fmt) if values else ("", None)
            share = _answered(kind, tol, value, values) / len(values) if values else 0.0
            mode = best_guess("exact", 0.0, values)[0]
            low, high = (min(values), max(values)) if values and kind != "exact" else (None, None)
            self._cache[key] = (Guess(value, share, text), mode, low, high)
        return self._cache[key]

    def share(self, row_type: str, col: Column, ev: ColumnEval, cells: list[Cell], fmt: str | None = None,
              *, through: bool = False, order=None) -> float:  # fmt: skip
        """Guessability of ``col`` in a task: the share of its gold ``cells`` the base-rate
        guess answers (the best guess under the metric or the type's commonest value, whichever
        answers more; a rank column: 1 / rows, since ranks differ); for the number the task's
        ``order`` ranks by, the type's extreme's share where larger (:meth:`extreme_share`); the
        best single answer's share (:func:`best_answer`) where that is larger and the question
        predicts it: the column runs ``through`` an entity on a condition's path, or its cells
        are mostly one value (:data:`DOMINANT_SHARE` of :data:`DOMINANT_ROWS` rows or more)."""
        if not cells:
            return 0.0
        fmt = fmt or col.format
        if col.aggregate == "rank":
            return 1.0 / len(cells)
        kind, tol = rule(ev, fmt)
        g = self.guess(row_type, col, ev, fmt)
        values = [v for v in (_value(c, kind) for c in cells) if v is not None]
        guesses = [x for x in (g.value, self.mode(row_type, col, ev, fmt)) if x is not None]
        base = max([_answered(kind, tol, x, values) for x in guesses if values], default=0) / len(cells)
        if order is not None and (col.path, col.attribute) == (order.path, order.attribute):
            base = max(base, self.extreme_share(row_type, col, ev, cells, highest=order.descending, fmt=fmt))
        own = best_answer(col, ev, cells, fmt).share
        if through or (len(cells) >= DOMINANT_ROWS and own >= DOMINANT_SHARE):
            return max(base, own)
        return base
