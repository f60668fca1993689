"""Perturbation knobs (how hard the web is) and schedules (how hardness changes over training).

Every knob is off by default: a default :class:`Knobs` gives a clean, fully useful web.

>>> s = Schedule(start=Knobs(), end=Knobs(conflict_rate=0.4), steps=100, curve="linear")
>>> s.at(50).conflict_rate
0.2
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["Knobs", "Schedule", "WebSpec", "FAULT_KINDS"]

FAULT_KINDS = ("timeout", "server_error", "rate_limited")


class Knobs(BaseModel):
    """Difficulty of one episode's web. Rates are probabilities in [0, 1].

    - ``snippet_leak_rate``: share of result snippets that show values (numbers, dates, linked
      names) instead of teasing them with "…".
    - ``distractor_rate``: share of near-miss pages shown (same name words, a different kind of
      thing: a band called like a company, a club named after a city).
    - ``confusable_rate``: share of low-credibility pages shown about entities that do not
      exist, named one edit away from a real one, with plausible but different attributes.
    - ``conflict_rate``: share of low-credibility forum and blog pages shown that state wrong
      values about real entities. Gold always follows the authoritative pages.
    - ``list_page_size``: entries per directory page (fewer entries, more ``open`` calls).
    - ``results_per_page``: results per search call when the caller gives no ``k``.
    - ``fault_rate``: share of tool calls answered by an injected fault (a timeout, a server
      error, rate limiting) returned as an observation; ``fault_kinds`` picks which.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    snippet_leak_rate: float = Field(0.0, ge=0, le=1)
    distractor_rate: float = Field(0.0, ge=0, le=1)
    confusable_rate: float = Field(0.0, ge=0, le=1)
    conflict_rate: float = Field(0.0, ge=0, le=1)
    list_page_size: int = Field(20, ge=1, le=1000)
    results_per_page: int = Field(10, ge=1, le=100)
    fault_rate: float = Field(0.0, ge=0, le=1)
    fault_kinds: tuple[Literal["timeout", "server_error", "rate_limited"], ...] = FAULT_KINDS

    @model_validator(mode="after")
    def _kinds(self) -> Knobs:
        if not self.fault_kinds:
            raise ValueError("fault_kinds must name at least one kind")
        return self

    def rate_of(self, layer: str) -> float:
        """Visibility rate of a perturbation layer ("" is the authoritative web: always 1)."""
        return 1.0 if not layer else float(getattr(self, f"{layer}_rate"))


_FLOAT_KNOBS = ("snippet_leak_rate", "distractor_rate", "confusable_rate", "conflict_rate", "fault_rate")
_INT_KNOBS = ("list_page_size", "results_per_page")


class Schedule(BaseModel):
    """Knob values as a function of the training step, from ``start`` to ``end`` over ``steps``.

    ``curve="linear"`` interpolates evenly; ``"exponential"`` follows ZeroSearch's curriculum
    p(i) = p_s + (b^(i/m) − 1)/(b − 1) · (p_e − p_s), which stays easy longer and then turns
    noisy quickly (``base`` = b > 1); ``"step"`` switches at ``steps``. Integer knobs round;
    ``fault_kinds`` come from ``start`` until the end, then from ``end``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    start: Knobs = Knobs()
    end: Knobs = Knobs()
    steps: int = Field(1, ge=1)
    curve: Literal["linear", "exponential", "step"] = "linear"
    base: float = Field(10.0, gt=1)

    def fraction(self, step: int) -> float:
        x = min(max(step, 0), self.steps) / self.steps
        if self.curve == "linear":
            return x
        if self.curve == "step":
            return 1.0 if x >= 1 else 0.0
        return (math.pow(self.base, x) - 1) / (self.base - 1)

    def at(self, step: int) -> Knobs:
        f = self.fraction(step)
        a, b = self.start, self.end
        values: dict = {k: round(getattr(a, k) + f * (getattr(b, k) - getattr(a, k)), 9) for k in _FLOAT_KNOBS}
        values |= {k: int(round(getattr(a, k) + f * (getattr(b, k) - getattr(a, k)))) for k in _INT_KNOBS}
        values["fault_kinds"] = b.fault_kinds if f >= 1 else a.fault_kinds
        return Knobs(**values)


class WebSpec(BaseModel):
    """How the web of a world is built. ``knobs`` are the default episode knobs;
    ``perturbation_pool`` is the share of entities that get perturbation pages (one near-miss,
    one confusable and one conflicting page each), shown per episode by the knob rates;
    ``block`` is how many entities one render block holds (the unit of a sharded build)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    knobs: Knobs = Knobs()
    perturbation_pool: float = Field(0.25, ge=0, le=1)
    # Pages are rendered and ordered in blocks of this many entities; a build split over
    # processes or machines hands out whole blocks, so every split gives the same web.
    block: int = Field(4096, ge=16, le=1 << 20)
