"""The sentences and infobox lines of an entity block's articles, made in Arrow a template at a time.

:meth:`Renderer.sentence <fictionworld.web.render.Renderer.sentence>` writes one fact at a
time. An article states each fact of its entity, out and in, with the same choices (salt 0), so
a block's article sentences are made here at once: each fact's sentence pool and template picked
by NumPy from its hash, then one Arrow join of literal pieces, names, links, values and dates
per (predicate, pool, template, direction) — a few dozen per block, which hold one entity
type's facts. The text is the one ``sentence`` writes, character for character; where Arrow
could differ from Python (a value missing, a first letter outside ASCII, which ``str.upper``
and ``str.lower`` may map to two letters), the text is null and the renderer writes that fact
with ``sentence``, which stays the reference (``tests/test_article_sentences.py`` compares
the two over whole worlds). The other pages' sentences (other salts, a linked subject, the
perturbation pages' wrong values) are made the same way by :meth:`BlockTexts.said_at`.
"""

from __future__ import annotations

import functools
import string

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fictionworld.dates import NA_DATE
from fictionworld.schema import PREDICATES, RELATIONS, DType
from fictionworld.surface import DATE_FORMATS, MONTHS
from fictionworld.tables import NA_INT
from fictionworld.web.phrasing import (
    ATTRIBUTE_SENTENCES,
    LABELS,
    RELATION_SENTENCES,
    RELATION_SENTENCES_ENDED,
    RELATION_SENTENCES_UNDATED,
)
from fictionworld.web.text import DTYPE

__all__ = [
    "date_texts",
    "relation_sentences",
    "attribute_sentences",
    "infobox_lines",
    "in_order",
    "BlockTexts",
    "VALUE_KIND",
    "TEXT",
    "DATE",
    "OTHER",
]

_FIELDS = ("s", "o", "start", "end")
_ATTRIBUTE_FIELDS = ("s", "v", "a")
UNDATED, ENDED, PLAIN = 0, 1, 2  # a relation's sentence pools, as ``Renderer.sentence`` picks them


def _pieces(template: str, fields: tuple[str, ...] = _FIELDS) -> tuple[str | int, ...]:
    """``template`` as literal texts and field positions in ``fields``."""
    out: list[str | int] = []
    for literal, name, spec, conversion in string.Formatter().parse(template):
        if literal:
            out.append(literal)
        if name is not None:
            if spec or conversion:
                raise ValueError(f"sentence template {template!r}: no format specs or conversions")
            out.append(fields.index(name))
    return tuple(out)


def _capitalised(pieces: tuple[str | int, ...]) -> tuple[str | int, ...]:
    """An attribute template's pieces, its first letter upper-cased where it is a literal's
    (as ``sentence`` does to the text it wrote; a field's is upper-cased in Arrow)."""
    first = pieces[0]
    return (first[0].upper() + first[1:], *pieces[1:]) if isinstance(first, str) else pieces


# Per predicate code: its pools (undated, ended, plain) of templates as pieces.
_POOLS = [
    tuple(
        tuple(_pieces(t) for t in pool.get(p, ()))
        for pool in (RELATION_SENTENCES_UNDATED, RELATION_SENTENCES_ENDED, RELATION_SENTENCES)
    )
    for p in PREDICATES
]
_TEMPORAL = np.array([p in RELATIONS and RELATIONS[p].temporal for p in PREDICATES])
_SIZES = np.array([[len(pool) for pool in pools] for pools in _POOLS], np.uint64)
# Per predicate code, for attributes: the templates as pieces; how the value is written (TEXT
# as it is, DATE in Arrow, OTHER by the renderer's ``fmt``: numbers); the infobox labels.
TEXT, DATE, OTHER = 0, 1, 2
_ATTRIBUTE_POOLS = [tuple(_capitalised(_pieces(t, _ATTRIBUTE_FIELDS)) for t in ATTRIBUTE_SENTENCES.get(p, ())) for p in PREDICATES]  # fmt: skip
_ATTRIBUTE_SIZES = np.array([len(pool) for pool in _ATTRIBUTE_POOLS], np.uint64)
VALUE_KIND = np.array(
    [-1 if p in RELATIONS else DATE if DTYPE[p] == DType.DATE else OTHER if DTYPE[p] in (DType.INT, DType.FLOAT) else TEXT
     for p in PREDICATES]
)  # fmt: skip
_LABEL_COUNT = np.array([len(LABELS.get(p, ())) for p in PREDICATES], np.uint64)
_FIRST_DAY, _LAST_DAY = -719_162, 2_932_896  # 0001-01-01 and 9999-12-31, as day numbers
_LABEL_FIRST = np.concatenate([[0], np.cumsum(_LABEL_COUNT)[:-1]]).astype(np.int64)


@functools.cache
def _strings(what: str) -> pa.Array:
    """The constant Arrow strings the sentences take from, made on first use: ``pa.array`` of
    a list imports pandas (0.2–0.3 s), which a server, importing the renderer for its
    constants, must not pay (``tests/test_serving.py``)."""
    return pa.array(
        {
            "labels": [label for p in PREDICATES for label in LABELS.get(p, ())],
            "vowels": ["a", "e", "i", "o", "u", ""],
            "months": list(MONTHS),
            "month abbreviations": [m[:3] for m in MONTHS],
            "empty": [""],
        }[what],
        pa.string(),
    )


def _join(*parts) -> pa.Array:
    return pc.binary_join_element_wise(*parts, "")


def date_texts(days: np.ndarray, variant: np.ndarray) -> pa.Array:
    """``format_date(date_of(d), v)`` of each day number ``d`` and variant ``v``
    (:func:`~fictionworld.surface.format_date`), "" for ``NA_DATE``: one Arrow join per
    variant, over the days written in it."""
    days = np.asarray(days)
    key = np.where(days == NA_DATE, DATE_FORMATS, np.asarray(variant, np.int64) % DATE_FORMATS)
    order = np.argsort(key, kind="stable")
    parts = []
    for v, g in enumerate(np.split(order, np.cumsum(np.bincount(key, minlength=DATE_FORMATS + 1))[:-1])):
        parts.append(
            _date_variant(days[g], v)
            if v < DATE_FORMATS
            else _strings("empty").take(pa.array(np.zeros(len(g), np.int64)))
        )
    inverse = np.empty_like(order)
    inverse[order] = np.arange(len(order))
    return pa.concat_arrays(parts).take(pa.array(inverse))


def _date_variant(days: np.ndarray, variant: int) -> pa.Array:
    """Dates (day numbers) written in one of ``format_date``'s variants."""
    d = days.astype("datetime64[D]")
    months = d.astype("datetime64[M]")
    year = d.astype("datetime64[Y]").astype(np.int64) + 1970
    month = months.astype(np.int64) - (year - 1970) * 12  # 0 … 11
    y = pc.cast(pa.array(year), pa.string())
    day = pc.cast(pa.array((d - months).astype(np.int64) + 1), pa.string())
    if variant == 2:  # ISO: the year in four digits at least, month and day in two
        mm = pc.cast(pa.array(month + 1), pa.string())
        return _join(pc.utf8_lpad(y, 4, "0"), "-", pc.utf8_lpad(mm, 2, "0"), "-", pc.utf8_lpad(day, 2, "0"))
    name = _strings("month abbreviations" if variant == 3 else "months").take(pa.array(month))
    return _join(day, " ", name, " ", y) if variant == 1 else _join(name, " ", day, ", ", y)


def relation_sentences(
    pred: np.ndarray,
    h: np.ndarray,
    subj: np.ndarray,
    obj: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    linked_subject: np.ndarray,
    entities: np.ndarray,
    names: pa.Array,
    links: pa.Array,
) -> pa.Array:
    """``Renderer.sentence(r, subject_plain=not linked_subject[r])`` of relation facts, given
    their predicate codes, hashes (``mix64`` of the id, uint64), subject and object rows, start
    and end days; ``names`` and ``links`` ("[name](url)") of the entity rows ``entities``
    (sorted), which hold every subject and object."""
    p, hh = pred.astype(np.int64), np.asarray(h, np.uint64)
    pool = np.where(_TEMPORAL[p] & (start == NA_DATE), UNDATED, np.where((end != NA_DATE) & (_SIZES[p, ENDED] > 0), ENDED, PLAIN))  # fmt: skip
    size = _SIZES[p, pool]
    if not size.all():
        i = int(np.flatnonzero(size == 0)[0])
        raise RuntimeError(f"no sentence template for the relation {PREDICATES[int(p[i])]!r} (pool {int(pool[i])})")
    t = (hh % np.where(size == 0, 1, size)).astype(np.int64)
    linked = np.asarray(linked_subject, bool)
    key = ((p * 3 + pool) * int(_SIZES.max()) + t) * 2 + linked
    order = np.argsort(key, kind="stable")
    cuts = np.flatnonzero(np.diff(key[order])) + 1
    dv = ((hh >> np.uint64(5)) % np.uint64(DATE_FORMATS)).astype(np.int64)  # the date format
    s_row, o_row = np.searchsorted(entities, subj), np.searchsorted(entities, obj)
    groups = []
    for g in np.split(order, cuts) if len(order) else ():
        i = int(g[0])
        groups.append((g, _POOLS[p[i]][pool[i]][t[i]], bool(linked[i])))
    # The start and end dates of the facts whose template writes them: one call each.
    dates, slot = {}, np.zeros(len(p), np.int64)
    for piece, days in ((2, start), (3, end)):
        which = [g for g, pieces, _ in groups if piece in pieces]
        if which:
            rows = np.concatenate(which)
            slot[rows] = np.arange(len(rows))
            dates[piece] = (date_texts(days[rows], dv[rows]), slot.copy())
    texts, where = [], []
    for g, pieces, subject_linked in groups:
        fields: dict[int, pa.Array] = {}
        for piece in pieces:
            if isinstance(piece, int) and piece not in fields:
                if piece < 2:  # s, o: the linked one of the two is the subject where asked, else the object
                    rows = (s_row if piece == 0 else o_row)[g]
                    fields[piece] = (links if (piece == 0) == subject_linked else names).take(pa.array(rows))
                else:
                    text, at_slot = dates[piece]
                    fields[piece] = text.take(pa.array(at_slot[g]))
        texts.append(_join(*(fields[x] if isinstance(x, int) else x for x in pieces)))
        where.append(g)
    return in_order(texts, where, len(p))


def _upper_first(texts: pa.Array) -> pa.Array:
    """``t[0].upper() + t[1:]`` of each text whose first letter is ASCII; null for the others
    (and for an empty text, where ``sentence`` would upper-case the next piece's letter)."""
    first = pc.utf8_slice_codeunits(texts, 0, 1)
    ok = pc.and_(pc.string_is_ascii(first), pc.greater(pc.utf8_length(first), 0))
    return pc.if_else(ok, _join(pc.ascii_upper(first), pc.utf8_slice_codeunits(texts, 1)), pa.scalar(None, pa.string()))


def _a_or_an(values: pa.Array) -> pa.Array:
    """:func:`~fictionworld.web.text.a_or_an` of each value text whose first letter is ASCII
    (or that is empty); null for the others."""
    first = pc.utf8_slice_codeunits(values, 0, 1)
    word = pc.if_else(pc.is_in(pc.ascii_lower(first), _strings("vowels")), "an", "a")
    return pc.if_else(pc.string_is_ascii(first), word, pa.scalar(None, pa.string()))


def attribute_sentences(
    pred: np.ndarray, h: np.ndarray, subj: np.ndarray, values: pa.Array, entities: np.ndarray, names: pa.Array
) -> pa.Array:
    """``Renderer.sentence(r)`` of attribute facts (their subject plain), given their predicate
    codes, hashes (uint64), subject rows and value texts (``fmt(p, v, h >> 5)``; null where
    the renderer writes the fact itself); ``names`` of the entity rows ``entities`` (sorted).
    Null where the text is left to ``sentence`` (see the module's note)."""
    p, hh = pred.astype(np.int64), np.asarray(h, np.uint64)
    size = _ATTRIBUTE_SIZES[p]
    if not size.all():
        raise RuntimeError(f"no sentence template for the attribute {PREDICATES[int(p[np.flatnonzero(size == 0)[0]])]!r}")  # fmt: skip
    t = (hh % np.where(size == 0, 1, size)).astype(np.int64)
    key = p * int(_ATTRIBUTE_SIZES.max()) + t
    order = np.argsort(key, kind="stable")
    cuts = np.flatnonzero(np.diff(key[order])) + 1
    s_row = np.searchsorted(entities, subj)
    texts, where = [], []
    for g in np.split(order, cuts) if len(order) else ():
        i = int(g[0])
        pieces = _ATTRIBUTE_POOLS[p[i]][t[i]]
        take = pa.array(g)
        fields = {0: names.take(pa.array(s_row[g])), 1: values.take(take)}
        if 2 in pieces:
            fields[2] = _a_or_an(fields[1])
        parts = [fields[x] if isinstance(x, int) else x for x in pieces]
        if isinstance(pieces[0], int):
            parts[0] = _upper_first(parts[0])
        texts.append(_join(*parts))
        where.append(g)
    return in_order(texts, where, len(p))


def infobox_lines(pred: np.ndarray, h: np.ndarray, values: pa.Array) -> pa.Array:
    """The infobox line ("- **label:** value") of attribute facts, given their predicate codes,
    hashes and value texts (``fmt(p, v, h >> 24, infobox=True)``; null where the renderer
    writes it)."""
    p, hh = pred.astype(np.int64), np.asarray(h, np.uint64)
    count = _LABEL_COUNT[p]
    if not count.all():
        raise RuntimeError(f"no infobox label for the attribute {PREDICATES[int(p[np.flatnonzero(count == 0)[0]])]!r}")  # fmt: skip
    label = _LABEL_FIRST[p] + ((hh >> np.uint64(21)) % count).astype(np.int64)
    return _join("- **", _strings("labels").take(pa.array(label)), ":** ", values)


def in_order(texts: list[pa.Array], where: list[np.ndarray], n: int) -> pa.Array:
    """Texts made group by group, for positions ``where`` (of ``n``), in position order; null
    at the positions no group has."""
    position = np.full(n, -1, np.int64)
    if texts:
        at = np.concatenate(where)
        position[at] = np.arange(len(at))
    joined = pa.concat_arrays(texts) if texts else pa.array([], pa.string())
    return joined.take(pa.array(position, mask=position < 0))


class BlockTexts:
    """Mixin of the template renderer: what a block's pages say of its facts, made in Arrow
    with the functions above, from the columns ``Renderer._gather`` keeps (``cols``, ``h64``,
    ``v_text``, and the mentioned entities' ``name_array`` and ``link_array``)."""

    def article_texts(self) -> list[str | None]:
        """By position in the block, what its articles say of each fact, made in Arrow
        (:mod:`~fictionworld.web.sentences`): ``sentence(r)`` of every relation (an own fact
        with its subject plain, an incoming one with it linked) and of the own attributes not in
        the infobox, and the infobox lines of the others; None where the article writes it
        itself (see the module's note)."""
        return self.article_text_array().to_pylist()

    def article_text_array(self) -> pa.Array:
        """:meth:`article_texts` as an Arrow array (nulls for None)."""
        k, h = self.own, self.h64
        kind = VALUE_KIND[self.cols["predicate"]]
        attr = np.flatnonzero(kind[:k] >= 0)
        boxes = attr[((h[attr] >> np.uint64(20)) & np.uint64(1)).astype(bool)]
        stated = kind < 0
        stated[attr] = True
        stated[boxes] = False
        at = np.flatnonzero(stated)
        texts = [
            self._sentences(at, h[at], at >= k),
            infobox_lines(self.cols["predicate"][boxes], h[boxes],
                          self._value_texts(boxes, h[boxes] >> np.uint64(24), infobox=True)),
        ]  # fmt: skip
        return in_order(texts, [at, boxes], len(kind))

    def said_at(self, at: list[int], salt: list[int], linked: list[bool], values: list | None = None) -> list[str]:
        """``sentence(at[i], salt=salt[i], subject_plain=not linked[i], value=values[i])`` for
        each ``i`` (``values``: None, or a value per fact, None where the fact's own): made in
        Arrow as :meth:`article_texts` makes them, the few it leaves (see
        :mod:`~fictionworld.web.sentences`; a hash plus salt past 64 bits) written by
        :meth:`sentence`."""
        if not at:
            return []
        pos, salts = np.array(at, np.int64), np.array(salt, np.uint64)
        h = self.h64[pos]
        wraps = h > ~salts  # h + salt as Python adds them, not modulo 2**64
        made = self._sentences(pos, h + salts, np.array(linked, bool), values)
        out = made.to_pylist()
        for i in np.flatnonzero(made.is_null().to_numpy(zero_copy_only=False) | wraps).tolist():
            out[i] = self.sentence(at[i], salt=salt[i], subject_plain=not linked[i],
                                   value=None if values is None else values[i])  # fmt: skip
        return out

    def _sentences(self, pos: np.ndarray, h: np.ndarray, linked: np.ndarray, values: list | None = None) -> pa.Array:
        """The sentences of the facts at positions ``pos``, with hashes ``h`` (salted, uint64)
        and their subject linked where ``linked`` (and the values ``values`` instead of their
        own, where not None): relations, and attributes with their subject plain, made in
        Arrow; null where :meth:`sentence` writes them (an attribute with its subject linked,
        and see :mod:`~fictionworld.web.sentences`)."""
        c, ents, names = self.cols, self.mentioned, self.name_array
        kind = VALUE_KIND[c["predicate"][pos]]
        rel, attr = np.flatnonzero(kind < 0), np.flatnonzero((kind >= 0) & ~linked)
        r, a = pos[rel], pos[attr]
        texts = [
            relation_sentences(c["predicate"][r], h[rel], c["subject"][r], c["object"][r], c["start"][r], c["end"][r],
                               linked[rel], ents, names, self.link_array),
            attribute_sentences(c["predicate"][a], h[attr], c["subject"][a],
                                self._value_texts(a, h[attr] >> np.uint64(5), values=_picked(values, attr)),
                                ents, names),
        ]  # fmt: skip
        return in_order(texts, [rel, attr], len(pos))

    def _value_texts(self, at: np.ndarray, variant: np.ndarray, *, infobox: bool = False,
                     values: list | None = None) -> pa.Array:  # fmt: skip
        """``fmt(p, v, variant, infobox=infobox)`` of the attribute facts at positions ``at``
        (``variant``: their hashes shifted, uint64; ``v`` their value, or ``values[i]`` where
        that is not None): texts as they are, dates in Arrow, numbers by :meth:`fmt`; null
        where a value is missing (the fact is then written by :meth:`sentence`), or is
        given for a text attribute or as a day outside years 1 to 9999."""
        c, kind = self.cols, VALUE_KIND[self.cols["predicate"][at]]
        given = np.zeros(len(at), bool) if values is None else np.array([v is not None for v in values], bool)
        texts, where = [], []
        text = np.flatnonzero(kind == TEXT)
        if len(text):
            rows = at[text]
            # (a text attribute's value is its text: a number or a date there is not written here)
            other = (c["v_date"][rows] != NA_DATE) | ~np.isnan(c["v_float"][rows]) | (c["v_int"][rows] != NA_INT)
            other |= given[text]
            texts.append(pc.if_else(pa.array(other), pa.scalar(None, pa.string()), self.v_text.take(pa.array(rows))))
            where.append(text)
        date = np.flatnonzero(kind == DATE)
        if len(date):
            days = c["v_date"][at[date]].astype(np.int64)
            for i in np.flatnonzero(given[date]).tolist():
                days[i] = values[date[i]]
            bad = (days == NA_DATE) | (days < _FIRST_DAY) | (days > _LAST_DAY)
            ways = (variant[date] % np.uint64(DATE_FORMATS)).astype(np.int64)
            texts.append(pc.if_else(pa.array(bad), pa.scalar(None, pa.string()),
                                    date_texts(np.where(bad, NA_DATE, days), ways)))  # fmt: skip
            where.append(date)
        number = np.flatnonzero(kind == OTHER)
        if len(number):
            pred, value, fmt = self.pred, self.value, self.fmt
            vs = [value[r] for r in at[number].tolist()]
            for i in np.flatnonzero(given[number]).tolist():
                vs[i] = values[number[i]]
            texts.append(pa.array([None if v is None else fmt(PREDICATES[pred[r]], v, w, infobox=infobox)
                                   for r, v, w in zip(at[number].tolist(), vs, variant[number].tolist())], pa.string()))  # fmt: skip
            where.append(number)
        return in_order(texts, where, len(at))


def _picked(values: list | None, at: np.ndarray) -> list | None:
    return None if values is None else [values[i] for i in at.tolist()]
