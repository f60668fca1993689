"""Reading a fact's value back off a page's text, independently of how the renderer wrote it."""

from __future__ import annotations

import datetime as dt

from fictionworld.records import Fact
from fictionworld.schema import RELATIONS
from fictionworld.surface import extract_dates, extract_numbers
from fictionworld.web.render import plain_text


def states(world, fact: Fact, markdown: str) -> bool:
    """Whether ``markdown`` states ``fact``: its object's name (and dates) for a relation, its
    value parsed back from any surface form for an attribute."""
    text = plain_text(markdown)
    dates = set(extract_dates(text))
    if fact.predicate in RELATIONS:
        if world.entity(fact.object).name not in text:
            return False
        return all(d in dates for d in (fact.start, fact.end) if d is not None)
    v = fact.value
    if isinstance(v, dt.date):
        return v in dates
    if isinstance(v, bool) or not isinstance(v, int | float):
        return str(v) in text
    numbers = extract_numbers(text)
    if isinstance(v, int):
        return float(v) in numbers
    return any(abs(x - v) < 1e-6 * max(1.0, abs(v)) for x in numbers)


def tantivy_panic(searcher) -> BaseException:
    """A real pyo3 ``PanicException``, raised by tantivy itself (a document address out of
    range), as a damaged index raises one: a ``BaseException``, not an ``Exception``."""
    import tantivy

    try:
        searcher.doc(tantivy.DocAddress(10**6, 0))
    except BaseException as exc:  # noqa: BLE001
        return exc
    raise AssertionError("tantivy did not panic on a document address out of range")


class Panicking:
    """A tantivy searcher stand-in whose every method raises ``panic``."""

    def __init__(self, panic: BaseException):
        self.panic = panic

    def __getattr__(self, name):
        def fail(*args, **kwargs):
            raise self.panic

        return fail


def unrecorded(d):
    """World directory ``d`` as a web saved before web.json recorded its files' sizes and
    digests: what the loader's own checks of each file stand behind (a test that rewrites a
    web file to test them would otherwise meet the size check first)."""
    import json

    meta = json.loads((d / "web.json").read_text())
    (d / "web.json").write_text(json.dumps({k: v for k, v in meta.items() if k != "files"}))
    return d
