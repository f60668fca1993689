"""Hypothesis profiles: how many examples a property test runs is the profile's to say.

Each property states the example count it runs in CI, ``@settings(max_examples=examples(10_000))``,
and a test that sweeps every item of something (every page of a world, every code point) takes
``sampled(items)``; the active profile takes a share of them:

- ``ci``: the whole count, derandomized (the same examples on every run) and without the example
  database, so that a failure in CI reproduces anywhere. The default of the whole suite
  (``python -m pytest -q``, which CI runs).
- ``dev``: a twentieth of it (at least 5), random, with the database (a failure found once is
  tried first next time). The default of the fast tier (``-m "not slow"``).
- ``thorough``: ten times the CI count, random: for hunting (``--hypothesis-profile=thorough``).

``tests/conftest.py`` picks the profile before the test modules are imported.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypeVar

from hypothesis import settings

T = TypeVar("T")

SHARES = {"ci": 1.0, "dev": 0.05, "thorough": 10.0}
FLOOR = 5  # a property runs at least this many examples under any profile

settings.register_profile("ci", deadline=None, derandomize=True, database=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.register_profile("thorough", deadline=None)


def share() -> float:
    return SHARES.get(settings.get_current_profile_name(), 1.0)


def examples(ci: int) -> int:
    """The example count of a property that runs ``ci`` examples in CI, under the active profile."""
    return max(min(FLOOR, ci), math.ceil(ci * share()))


def sampled(items: Sequence[T]) -> Sequence[T]:
    """All of ``items`` under ``ci`` (and ``thorough``); under ``dev`` its share of them, evenly
    spaced from the first (at least ``FLOOR``)."""
    step = max(1, min(round(1 / share()), len(items) // FLOOR)) if share() < 1 else 1
    return items[::step]
