"""Common clauses scored only where they can change the answer.

:meth:`TantivyIndex.search <fictionworld.web.index.TantivyIndex.search>` ranks the pages holding
a rarer clause first. Whether pages holding only common clauses (a clause on more pages than
:func:`~fictionworld.web.index.common_limit` allows) can still reach its top n, and which, is
this module's part: :class:`CommonClauses` knows each common clause's best score and its scores
at a few ranks (:data:`~fictionworld.web.index_files.COMMON_BEST`, written by the build; else one
scan of the clause), and finds the best pages of a union of common clauses above a floor by the
conjunctions (covers) that can reach it. All of it is cached per process: the same common words
("born", "released", "directed") come back query after query.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from fictionworld.web.index_files import FLOOR_DEPTHS, read_common_best

if TYPE_CHECKING:
    from fictionworld.web.index import TantivyIndex

__all__ = ["CommonClauses", "ANY_SCORE"]

# The pages of a common-clause union that can reach a score are found by its covers
# (:meth:`CommonClauses.above`) for queries of at most this many common clauses, when
# there are at most this many covers.
_MAX_COVER_CLAUSES = 10
_MAX_COVERS = 24
# ... and when the pages their rarest clauses lead, times the clauses of the union (at least 4),
# are at most this many times the union's postings: what a cover costs if every page it leads
# holds it and is scored in every clause of the union (an upper bound: a led page that does not
# hold the cover costs about a tenth of that, see _WALK). Fitted when a cover was asked beside
# the whole union (before the chains of :meth:`CommonClauses.cover_top`), which cost more per page than a chain. At
# 10M entities (344 queries of bench_search.py that needed the common-only pages of a full top
# 10, both ways timed with empty caches), the common-only part took p50 10.4 ms by the union,
# 1.55 ms with this rule (mean 13.7 -> 6.3 ms); using the covers wherever there were at most 24
# gave the same p50 and a mean of 6.7 ms: a cover led by many pages costs more than the union.
_COVER_COST = 2.0
# Where the covers cost more than that, the cheapest is asked anyway, as a probe: its pages,
# scored by the whole union, raise the floor, and a higher floor leaves fewer and rarer covers
# (the rarest clause's pages, times the clauses as above, summed over the probes, at most this
# many times the union's postings; past it, the union). A floor from one clause's ranking is
# half the union's n-th score or less (at 10M, "albums released by X chemicals": 23.5 against
# 37.7). At 10M (523 searches of the first 1,200 latency queries of bench_search.py that
# needed common-only pages, empty caches), the common-only part took p90 18.0 -> 10.5 ms, p99
# 56.7 -> 25.3 ms, mean 7.37 -> 4.63 ms; budgets of 0.5 and 2.0 gave about the same.
_PROBE_COST = 1.0
# A cover's pages cost about this many times less to walk to (the conjunction of its clauses,
# per page led and clause) than to score (per page held, in every clause of the union); at 10M,
# over 622 covers, 1.2 ns against 12 ns, and the union 12 ns per posting. The estimate above
# (every page led held) is what a cover that finds n pages is charged; one that finds fewer
# found all its pages, and is charged what it cost: a probe of clauses no page holds together
# ("who directed X Music Festival 2020": 57 covers, most empty) costs little.
_WALK = 10

ANY_SCORE = float(np.finfo(np.float32).tiny)  # a floor that every page holding a clause reaches


class CommonClauses:
    """The common clauses of one :class:`~fictionworld.web.index.TantivyIndex`: their bounds and
    floors, and the best pages of their unions above a floor, each cached."""

    def __init__(self, index: TantivyIndex):
        self.index = index
        self.scores: dict[tuple[str, str], tuple[float, tuple[float, ...]]] = {}  # a clause's best, floors
        self.known: dict[tuple[str, str], tuple] | None = None  # COMMON_BEST, read when first needed
        self.tops: dict[tuple, list] = {}  # the best n of a set of common clauses (or of a cover)

    def bound(self, clauses: list[tuple[str, str]]) -> float:
        """Above the score of any page that holds only ``clauses``: the sum of each clause's
        best score over the index (cached), widened for float32 rounding."""
        return sum(self.best(c) for c in clauses) * (1 + 1e-5) + 1e-5

    def best(self, clause: tuple[str, str]) -> float:
        """``clause``'s best score over the index (:meth:`stats`)."""
        return self.stats(clause)[0]

    def floor(self, common: list[tuple[str, str]], n: int) -> float:
        """A score that at least ``n`` pages of the union of ``common`` reach: the highest of the
        clauses' scores at rank ``n`` or deeper (:data:`FLOOR_DEPTHS`: the first at or past
        ``n``), each page scoring at least its score in any one clause it holds; narrowed for
        float rounding. 0.0 where ``n`` is past the deepest rank kept."""
        at = next((i for i, d in enumerate(FLOOR_DEPTHS) if d >= n), None)
        if at is None:
            return 0.0
        floor = max((f[at] for f in (self.stats(c)[1] for c in common) if f), default=0.0)  # (none: no ranks kept)
        return max(0.0, floor * (1 - 1e-5) - 1e-5)

    def stats(self, clause: tuple[str, str]) -> tuple[float, tuple[float, ...]]:
        """``clause``'s best score over the index and its scores at the ranks
        :data:`FLOOR_DEPTHS` (0.0 past its last page): from :data:`COMMON_BEST` where it lists
        the clause on as many pages as the index has it (a file written before the ranks gives
        the best only, and no floor), else one query of it alone. Cached."""
        got = self.scores.get(clause)
        if got is None:
            if self.known is None:
                self.known = self.read_known()
            known = self.known.get(clause)
            if known is not None and known[0] == self.index._field_df(*clause):
                got = known[1], known[2]
            else:
                got = self.scan(clause)
            self.scores[clause] = got
        return got

    def scan(self, clause: tuple[str, str]) -> tuple[float, tuple[float, ...]]:
        """:meth:`stats` of ``clause`` read off the index: one query of it alone."""
        top = [float(h[0]) for h in self.index._top(self.index._clause(*clause), FLOOR_DEPTHS[-1])]
        return (top[0] if top else 0.0), tuple(top[d - 1] if len(top) >= d else 0.0 for d in FLOOR_DEPTHS)

    def read_known(self) -> dict[tuple[str, str], tuple]:
        """:data:`COMMON_BEST`, or nothing where it is missing, unreadable, made for an index of
        another size, or wrong about the clause on fewest pages (checked by one scan of it)."""
        known = read_common_best(self.index.path, self.index.num_docs) if self.index.path is not None else {}
        if known:
            probe = min(known, key=lambda c: (known[c][0], c))
            df, best, floors = known[probe]
            scanned = self.scan(probe)
            if (df, best) != (self.index._field_df(*probe), scanned[0]) or floors and floors != scanned[1]:
                return {}
        return known

    def above(self, common: list[tuple[str, str]], floor: float, n: int, hide: tuple[str, ...] = ()) -> list | None:
        """The best ``n`` pages of the union of ``common`` among those that can score ``floor``
        or more, or None where finding them costs about what the union does.

        A page scores at most the sum of the best scores of the clauses it holds. So only the
        pages holding a *cover* (a least set of clauses whose bests sum to ``floor`` or more)
        can reach it, and each cover is a conjunction, led by its rarest clause: for a name
        query at 10M entities, the title clause of one word (25,000-400,000 pages) where the
        union walks body clauses of up to 1.9M pages each. A cover's pages get the union's own
        floats (:meth:`cover_top`).

        The covers are asked one at a time, cheapest first, and each answer raises the floor:
        once ``n`` pages are found, the n-th of them is one (``n`` pages score that much), and a
        higher floor leaves fewer covers, each of more clauses. A cover holding one already
        asked is not asked (its pages among the best ``n`` are in that one's best ``n``). While
        the covers left cost more than the union (:data:`_COVER_COST`, :data:`_MAX_COVERS`),
        the cheapest is still asked as a probe, up to :data:`_PROBE_COST`; past it, None."""
        k = len(common)
        if k > _MAX_COVER_CLAUSES:
            return None
        best = np.array([self.best(c) * (1 + 1e-5) + 1e-5 for c in common])  # (widened as bound widens)
        df = np.array([self.index._field_df(*c) for c in common])
        masks = np.arange(1, 1 << k)
        holds = (masks[:, None] >> np.arange(k)) & 1 == 1  # clause j in set i
        sums = holds @ best
        led = np.where(holds, df, np.iinfo(np.int64).max).min(axis=1)  # the set's rarest clause
        width, union = max(k, 4), int(df.sum())  # (each led page seeks in every clause of the union)
        asked = np.zeros(len(masks), bool)  # sets holding a cover already asked
        found: dict[tuple[int, int], list] = {}
        spent = 0
        while True:
            # The least sets reaching the floor: no clause can be dropped (bests are positive).
            least = (sums >= floor) & ~(holds & ((sums[:, None] - best) >= floor)).any(axis=1) & ~asked
            covers = np.flatnonzero(least)
            if not len(covers):
                break
            cheapest = int(covers[np.argmin(led[covers])])
            cost = int(led[cheapest]) * width
            if (len(covers) > _MAX_COVERS or int(led[covers].sum()) * width > _COVER_COST * union) and (
                spent + cost > _PROBE_COST * union
            ):
                return None
            asked |= (masks & masks[cheapest]) == masks[cheapest]
            top = self.cover_top(common, [c for c, held in zip(common, holds[cheapest]) if held], n, hide)
            if len(top) < n:  # (then those were all its pages: what it cost is known, see _WALK)
                cost = int(led[cheapest]) * int(holds[cheapest].sum()) // _WALK + len(top) * width
            spent += cost
            for h in top:
                found.setdefault((h[1].segment_ord, h[1].doc), h)
            if len(found) >= n:
                nth = sorted((h[0] for h in found.values()), reverse=True)[n - 1]
                floor = max(floor, nth * (1 - 1e-5) - 1e-5)  # (narrowed for float rounding)
        return sorted(found.values(), key=lambda h: (-h[0], h[1].segment_ord, h[1].doc))[:n]

    def cover_top(self, common, cover: list[tuple[str, str]], n: int, hide: tuple[str, ...]) -> list:
        """The best ``n`` pages of the union of ``common`` among those holding every clause of
        ``cover``, with the union's own floats; cached.

        Asked as a chain, one clause at a time in the union's order: ``((c1 + c2) + c3) ...``,
        each step a query of two parts, the chain so far and the next clause (required where it
        is in ``cover``, else optional). A sum of two is the same float in either order, so
        each page gets the union's sum, added in the union's order (tested against the union
        read whole). The union itself as a required part cost more: on the 900 covers of
        bench_search.py's first 1,200 latency queries at 10M, p50 0.46 -> 0.32 ms, p99 21.5 ->
        14.7 ms, mean 3.07 -> 2.05 ms, every float the same."""
        t = self.index._t
        held = set(cover)

        def ask() -> list:
            if common[0] in held:
                start, rest = self.index._clause(*common[0]), common[1:]
            else:  # (the pages holding the cover, at score 0, until the first of its clauses)
                const = [(t.Occur.Must, t.Query.const_score_query(self.index._clause(*x), 0.0)) for x in cover]
                start, rest = t.Query.boolean_query(const), common
            return self.index._top(self.index._added(start, rest, required=held), n, hide)

        return self.cached(("cover", tuple(cover), *common, n, hide), ask)

    def union_top(self, common: list[tuple[str, str]], query, n: int, hide: tuple[str, ...] = ()) -> list:
        """``_top(query, n, hide)`` of the union of ``common``, cached: the same common words
        ("born", "released", "directed") come back query after query, and their union is the
        costly part."""
        return self.cached((*common, n, hide), lambda: self.index._top(query, n, hide))

    def cached(self, key: tuple, make: Callable[[], list]) -> list:
        """``make()``, kept under ``key`` among the best pages of common clauses (at most 4,096
        kept: past that, the cache starts again)."""
        top = self.tops.get(key)
        if top is None:
            if len(self.tops) >= 4_096:
                self.tops.clear()
            top = self.tops[key] = make()
        return top
