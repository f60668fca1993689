"""An entity block's encyclopedia articles, put together in Arrow.

An article is its entity's lead ("**name** is a label.", and its aliases), its infobox (one line
per attribute fact whose hash puts it there) and its sections in ``SECTION_ORDER``: each the
sentences of its facts, the entity's own in fact order, then the facts pointing at it
(``INCOMING``, in that table's order, then in fact order). The sentences and infobox lines come
from :meth:`~fictionworld.web.sentences.BlockTexts.article_text_array`, the few it leaves from
``Renderer.sentence``; here one NumPy sort orders every stated fact of the block by (entity,
section, …), and Arrow joins them into sections and the sections into articles, for the whole
block at once, the text the old loop over facts wrote, character for character
(``tests/test_article_sentences.py`` keeps that loop and compares the two over whole worlds).
"""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fictionworld.schema import PREDICATES, RELATIONS
from fictionworld.seeding import mix64
from fictionworld.tables import TYPE_NAMES
from fictionworld.web.page_rows import sets_of
from fictionworld.web.pages import PAGE_SCHEMA
from fictionworld.web.phrasing import INCOMING, LABELS, SECTION, TYPE_LABEL
from fictionworld.web.store import ENCYCLOPEDIA_BASE
from fictionworld.web.text import a_or_an

__all__ = ["ArticlePages", "SECTION_ORDER", "ENCYCLOPEDIA"]

ENCYCLOPEDIA = ("Fictopedia", ENCYCLOPEDIA_BASE)
SECTION_ORDER = (
    "Overview",
    "Location",
    "Life",
    "Family",
    "Career",
    "Works",
    "Production",
    "History",
    "Awards",
    "Leadership",
    "Authors",
    "Cast",
    "Participants",
    "Players",
    "Recipients",
)
_RANK = {name: i for i, name in enumerate(SECTION_ORDER)}
_OVERVIEW = _RANK["Overview"]
# Per predicate code: the section rank of an own relation fact (-1: an attribute).
_OWN_RANK = np.array([_RANK[SECTION[p]] if p in RELATIONS else -1 for p in PREDICATES], np.int64)
# Per (type code, predicate code) of a fact pointing at an entity of that type: its place in the
# type's INCOMING relations (-1: not stated on the article) and the section it is stated in.
_IN_ORDER = np.full((len(TYPE_NAMES), len(PREDICATES)), -1, np.int64)
_IN_RANK = np.full((len(TYPE_NAMES), len(PREDICATES)), -1, np.int64)
for _t, _name in enumerate(TYPE_NAMES):
    _theirs = [(PREDICATES.index(p), sec) for p, (t, sec) in INCOMING.items() if t == _name]
    for _j, (_code, _sec) in enumerate(_theirs):
        _IN_ORDER[_t, _code], _IN_RANK[_t, _code] = _j, _RANK[_sec]


@functools.cache
def _constants() -> dict[str, pa.Array]:
    """The constant strings the articles take from (made on first use: see ``sentences._strings``)."""
    return {
        "headers": pa.array([f"## {s}\n\n" for s in SECTION_ORDER], pa.string()),
        "is a": pa.array([f"** is {a_or_an(TYPE_LABEL[t])} {TYPE_LABEL[t]}." for t in TYPE_NAMES], pa.string()),
    }


def _runs(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each run of equal values of ``key`` starts, and each value's run number."""
    change = key[1:] != key[:-1]
    return np.flatnonzero(np.r_[len(key) > 0, change]), np.r_[np.zeros(min(len(key), 1), np.int64), np.cumsum(change)]


def _grouped(texts: pa.Array, owner: np.ndarray, groups: int, separator: str) -> pa.Array:
    """The texts of each group joined by ``separator``; ``owner``: each text's group (0 … groups-1,
    ascending)."""
    offsets = np.zeros(groups + 1, np.int32)
    np.cumsum(np.bincount(owner, minlength=groups), out=offsets[1:])
    return pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets), texts), separator)


class ArticlePages:
    """Mixin of the template renderer: the articles of an entity block."""

    def articles(self, entities: range) -> None:
        """The articles of the block's entities ``entities``, one record batch: the first of the
        block's pages (see the module's note)."""
        c, k, n_e = self.cols, self.own, len(entities)
        block = self.store.entities.slice(entities.start, n_e)
        types = block.column("type").to_numpy().astype(np.int64)
        pred = c["predicate"].astype(np.int64)
        n = len(pred)
        own = np.arange(n) < k
        owner = np.where(own, c["subject"], c["object"]).astype(np.int64) - entities.start  # entity in the block
        box = own & (_OWN_RANK[pred] < 0) & ((self.h64 >> np.uint64(20)) & np.uint64(1)).astype(bool)
        in_order = np.where(own, -1, _IN_ORDER[types[owner], pred])
        rank = np.where(own, np.where(_OWN_RANK[pred] < 0, _OVERVIEW, _OWN_RANK[pred]), _IN_RANK[types[owner], pred])
        rank[box] = -1
        stated = rank >= 0  # (an incoming fact of a relation the article does not state: -1)
        said = self._filled(self.article_text_array(), stated, box)

        # sections: (entity, section) groups of stated facts, own facts first, then incoming ones
        at = np.flatnonzero(stated)
        order = at[np.lexsort((at, in_order[at], rank[at], owner[at]))]
        first, group = _runs(owner[order] * len(SECTION_ORDER) + rank[order])
        bodies = _grouped(said.take(pa.array(order)), group, len(first), " ")
        heads = _constants()["headers"].take(pa.array(rank[order][first]))
        sections = pc.binary_join_element_wise(heads, bodies, "")
        # infoboxes: an entity's lines in fact order
        boxed = np.flatnonzero(box)  # (own facts come by subject, then fact row)
        box_first, box_group = _runs(owner[boxed])
        box_owner = owner[boxed][box_first]
        infoboxes = _grouped(said.take(pa.array(boxed)), box_group, len(box_first), "\n")
        # leads
        names = block.column("name").combine_chunks()
        aliases = block.column("aliases").combine_chunks()
        known = pc.binary_join_element_wise(" Also known as: ", pc.binary_join(aliases, ", "), ".", "")
        has = pc.greater(pc.fill_null(pc.list_value_length(aliases), 0), 0)
        leads = pc.binary_join_element_wise(
            "**", names, _constants()["is a"].take(pa.array(types)), pc.if_else(has, known, ""), ""
        )
        # an article: lead, infobox, sections in their order, joined by blank lines
        part_owner = np.concatenate([np.arange(n_e), box_owner, owner[order][first]])
        part_key = np.concatenate([np.zeros(n_e, np.int64), np.ones(len(box_owner), np.int64), 2 + rank[order][first]])
        parts = pa.concat_arrays([leads, infoboxes, sections])
        part_order = np.lexsort((part_key, part_owner))
        texts = _grouped(parts.take(pa.array(part_order)), part_owner[part_order], n_e, "\n\n")

        # what each article states and mentions: its facts; itself, the subjects of the facts
        # pointing at it that it states, and the objects of its own relations
        cited = np.flatnonzero(own | stated)
        incoming = at[~own[at]]  # (stated)
        objects = np.flatnonzero(c["object"][:k] >= 0)  # (own relations)
        mention = np.concatenate([np.arange(n_e), owner[incoming], owner[objects]])
        mentioned = np.concatenate([np.arange(entities.start, entities.stop), c["subject"][incoming], c["object"][objects]])  # fmt: skip
        published = self.present - (mix64(np.arange(entities.start, entities.stop), self.seed + 1) % np.uint64(1500)).astype(np.int64)  # fmt: skip
        columns = {
            "url": block.column("url").combine_chunks(),
            "site": pa.array([ENCYCLOPEDIA[0]] * n_e, pa.string()),
            "title": names,
            "kind": pa.array(["article"] * n_e, pa.string()),
            "layer": pa.array([""] * n_e, pa.string()),
            "published": pa.array(published.astype(np.int32)).view(pa.date32()),
            "text": texts.cast(pa.large_string()),
            "entity": pa.array(np.arange(entities.start, entities.stop, dtype=np.int32)),
            "entity_rows": sets_of(mention, mentioned, n_e, PAGE_SCHEMA.field("entity_rows").type),
            "fact_ids": sets_of(owner[cited], c["id"][cited], n_e, PAGE_SCHEMA.field("fact_ids").type),
            "contradicts": sets_of(
                np.zeros(0, np.int64), np.zeros(0, np.int64), n_e, PAGE_SCHEMA.field("contradicts").type
            ),
            "u": pa.array(np.zeros(n_e, np.float32)),
        }
        self.out.add_batch(pa.record_batch([columns[f] for f in PAGE_SCHEMA.names], schema=PAGE_SCHEMA))

    def _filled(self, said: pa.Array, stated: np.ndarray, box: np.ndarray) -> pa.Array:
        """``said`` with the texts it left null where an article needs one written by the
        renderer: an infobox line (``box``), or ``sentence`` (``stated``; see
        :mod:`~fictionworld.web.sentences`)."""
        missing = np.flatnonzero(said.is_null().to_numpy(zero_copy_only=False) & (stated | box))
        if not len(missing):
            return said
        fill = []
        for r in missing.tolist():
            if box[r]:
                p, hr = PREDICATES[self.pred[r]], self.h[r]
                labels = LABELS[p]
                fill.append(f"- **{labels[(hr >> 21) % len(labels)]}:** {self.fmt(p, self.value[r], hr >> 24, infobox=True)}")  # fmt: skip
            else:
                fill.append(self.sentence(r, subject_plain=r < self.own))
        mask = np.zeros(len(said), bool)
        mask[missing] = True
        return pc.replace_with_mask(said, pa.array(mask), pa.array(fill, pa.string()))
