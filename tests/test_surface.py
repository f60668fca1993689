"""Every surface form a page writes parses back to the exact value."""

from __future__ import annotations

import datetime as dt

from hypothesis import given
from hypothesis import strategies as st

from fictionworld.surface import (
    DATE_FORMATS,
    INT_FORMATS,
    extract_dates,
    extract_numbers,
    format_date,
    format_float,
    format_int,
    format_money,
)


@given(st.integers(-(10**12), 10**12), st.integers(0, INT_FORMATS - 1))
def test_ints_round_trip(v, variant):
    assert extract_numbers(f"about {format_int(v, variant)} staff") == [float(v)]


@given(st.integers(0, 10**11), st.integers(0, 2))
def test_money_round_trips(v, variant):
    assert extract_numbers(f"revenue of {format_money(v, variant)}.") == [float(v)]


@given(st.integers(1, 10**8), st.integers(0, 2))
def test_cents_round_trip(cents, variant):
    v = cents / 100
    assert extract_numbers(format_money(v, variant, cents=True)) == [round(v, 2)]


@given(st.integers(0, 10**9), st.integers(0, 1))
def test_floats_round_trip(tenths, variant):
    v = tenths / 10
    assert extract_numbers(f"{format_float(v, 1, variant)} km²") == [v]


@given(st.dates(dt.date(1000, 1, 1), dt.date(2100, 12, 31)), st.integers(0, DATE_FORMATS - 1))
def test_dates_round_trip(d, variant):
    assert extract_dates(f"It was founded on {format_date(d, variant)}.") == [d]


def test_words_only_when_exact():
    assert format_int(1200, 2) == "1.2 thousand"
    assert format_int(2_450_000, 2) == "2.45 million"
    assert format_int(1234, 2) == "1,234"  # 1.234 thousand would need 3 decimals
    assert format_money(1_200_000, 1) == "US$1.2 million"


def test_iso_dates_do_not_leak_negative_numbers():
    assert extract_numbers("on 1987-03-14 at -40 m") == [1987.0, -40.0]
    assert extract_dates("February 30, 1990 and 1990-02-31") == []
