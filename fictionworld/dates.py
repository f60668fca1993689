"""Dates as int32 days since 1970-01-01 (the Arrow ``date32`` layout), never wall-clock relative."""

from __future__ import annotations

import datetime as _dt

import numpy as np

__all__ = ["NA_DATE", "YEAR", "to_days", "from_days", "year_start", "year_end", "years_of"]

NA_DATE = np.int32(np.iinfo(np.int32).min)
YEAR = 365.2425
_EPOCH = _dt.date(1970, 1, 1)


def to_days(d: _dt.date) -> int:
    return (d - _EPOCH).days


def from_days(n: int) -> _dt.date:
    return _EPOCH + _dt.timedelta(days=int(n))


def year_start(year: int) -> int:
    return to_days(_dt.date(int(year), 1, 1))


def year_end(year: int) -> int:
    return to_days(_dt.date(int(year), 12, 31))


def years_of(days: np.ndarray) -> np.ndarray:
    """Calendar year of each day number (vectorised)."""
    return days.astype("datetime64[D]").astype("datetime64[Y]").astype(np.int64) + 1970
