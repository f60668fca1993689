"""``check_world``: every constraint a world must satisfy, as vectorised passes over the facts;
``check_world_dir``: the same checks of a saved world, streamed in units of a few predicates.

Each finding is a :class:`Violation` with a :class:`ViolationKind`. The constraints come from
the ontology (``fictionworld.schema``): functional, required, temporal, exclusive, symmetric,
inverse, acyclic, min ages, ranges, units, uniqueness; plus cross-fact rules (containment,
quantities that must add up, role consistency) and the naming rules (gazetteer, famous names).
"""

from __future__ import annotations

import functools

from fictionworld.check.base import Checker
from fictionworld.check.names import check_names, check_unique_values
from fictionworld.check.semantics import (
    check_consistency,
    check_containment,
    check_cycles,
    check_quantities,
    check_ranges,
    check_symmetry_inverse,
)
from fictionworld.check.stream import check_world_dir
from fictionworld.check.structure import (
    check_attribute_types,
    check_domain_range,
    check_duplicate_facts,
    check_missing_and_cardinality,
    check_predicates,
    check_references,
    check_self_reference,
)
from fictionworld.check.time import check_future, check_interval_order, check_lifespans, check_overlaps
from fictionworld.records import Violation

__all__ = ["check_world", "check_world_dir", "CHECKS"]


def check_world(world, *, limit_per_kind: int = 200) -> list[Violation]:
    """All constraint violations of ``world`` (empty list when it is consistent).

    At most ``limit_per_kind`` violations are listed per kind; a final entry of that kind
    says how many more there were.
    """
    c = Checker(world, limit_per_kind)
    for check in CHECKS:
        check(c)
        give_back_freed_memory()
    return c.result()


def give_back_freed_memory() -> None:
    """Return the heap pages the last check freed to the system (glibc keeps freed blocks
    under 32 MB in the process), so that the next check's peak does not stack on them."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim():
    """glibc's ``malloc_trim``, or None (not Linux, or not glibc: musl has none)."""
    import ctypes
    import sys

    if sys.platform.startswith("linux"):
        try:
            return ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            pass
    return None


CHECKS = (
    check_references,
    check_predicates,
    check_domain_range,
    check_attribute_types,
    check_missing_and_cardinality,
    check_overlaps,
    check_interval_order,
    check_future,
    check_lifespans,
    check_containment,
    check_symmetry_inverse,
    check_cycles,
    check_self_reference,
    check_ranges,
    check_quantities,
    check_names,
    check_unique_values,
    check_duplicate_facts,
    check_consistency,
)
