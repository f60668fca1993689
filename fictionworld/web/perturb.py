"""Perturbation layers of the template web: conflicting forum and blog posts, aggregator
profiles of confusable non-entities, and near-miss fan pages. None is ever authoritative; the
knob rates decide per episode which of them are shown."""

from __future__ import annotations

import random
import re

import numpy as np

from fictionworld.schema import PREDICATES, RELATIONS, DType
from fictionworld.seeding import mix64_int
from fictionworld.web.phrasing import DISTRACTOR_KINDS, LABELS, SECTION, TYPE_LABEL
from fictionworld.web.text import DTYPE, a_or_an, date_of, slug

__all__ = ["PerturbationPages", "confusable_name"]

FORUM = ("Threadhaven forums", "https://forum.threadhaven.net/t/")
BLOG = ("Notes from Nowhere", "https://www.notesfromnowhere.blog/")
PROFILES = ("BizProfiles", "https://www.bizprofiles.info/profile/")
FANSITE = ("Fanpedia", "https://www.fanpedia.club/")


# Per predicate code: its name; whether a wrong value of it can be made (a date or number
# attribute); whether a confusable profile restates it as is (a relation of place or life).
_CODES = [
    (p, p not in RELATIONS and DTYPE[p] in (DType.DATE, DType.INT, DType.FLOAT),
     p in RELATIONS and SECTION[p] in ("Location", "Life"))
    for p in PREDICATES
]  # fmt: skip


class PerturbationPages:
    """Mixin of the template renderer: the layers behind the distractor, confusable and
    conflict knobs."""

    def perturbations(self, entities: range) -> None:
        """The perturbation pages of the block's entities in the pool. Their sentences are
        asked for as the pages are planned (:meth:`_later`), then made at once in Arrow
        (:meth:`said_at`, as the articles' are) and put into the pages' texts."""
        real = _Names(self.store)
        first = len(self.out.cols["text"])
        self._asked: list[tuple[int, int, object, tuple[str, str] | None]] = []
        for e in np.flatnonzero(self.in_pool).tolist():  # the block's flags
            e += entities.start
            r = random.Random(mix64_int(e, self.seed + 0x5EED))  # per entity: any split renders the same
            self._conflict(e, r)
            self._distractor(e, r)
            self._confusable(e, r, real)
        at, salt, value, swaps = zip(*self._asked) if self._asked else ((), (), (), ())
        said = self.said_at(list(at), list(salt), [False] * len(at), list(value))
        for i, swap in enumerate(swaps):
            if swap is not None:
                said[i] = said[i].replace(*swap)
        texts = self.out.cols["text"]
        for j in range(first, len(texts)):
            if type(texts[j]) is _Parts:
                texts[j] = "".join([part if part.__class__ is str else said[part] for part in texts[j]])

    def _later(self, x: int, salt: int, value=None, swap: tuple[str, str] | None = None) -> int:
        """Ask for ``sentence(x, salt=salt, value=value)`` (then ``.replace(*swap)``): its
        number among the block's asked, which the page's text holds until it is made."""
        self._asked.append((x, salt, value, swap))
        return len(self._asked) - 1

    def _wrong(self, p: str, v, r: random.Random):
        dtype = DTYPE[p]
        if dtype == DType.DATE:
            return int(v + r.choice([-1, 1]) * r.randrange(400, 6000))
        if dtype in (DType.INT, DType.FLOAT):
            f = 1 + r.choice([-1, 1]) * r.uniform(0.15, 0.6)
            w = v * f
            if dtype == DType.INT:
                w = int(round(w)) if abs(v) > 5 else v + int(r.choice([-3, -2, 2, 3]))
                return w if w != v else w + 1
            return round(w, 2 if p == "price_usd" else 1)
        return None

    def _conflict(self, e: int, r: random.Random) -> None:
        pred = self.pred
        rows = [x for x in self.by_subject[e] if _CODES[pred[x]][1]]
        if not rows:
            return
        pick = sorted(r.sample(range(len(rows)), min(2, len(rows))))
        wrong = [(rows[i], self._wrong(PREDICATES[self.pred[rows[i]]], self.value[rows[i]], r)) for i in pick]
        name, p0 = self.names[e], PREDICATES[self.pred[wrong[0][0]]]
        users = [f"user{r.randrange(100, 99_999)}" for _ in range(3)]
        claims = _spaced([self._later(x, 11, w) for x, w in wrong])
        if r.random() < 0.5:
            title = f"Does anyone know the {LABELS[p0][0].lower()} of {name}?"
            text = _Parts((f"**{users[0]}:** Trying to settle an argument about {name}. Any ideas?\n\n"
                           f"**{users[1]}:** I'm fairly sure about this one. ", *claims,
                           f"\n\n**{users[2]}:** Thanks, that matches what I heard."))  # fmt: skip
            site, base, kind = FORUM[0], FORUM[1], "forum"
        else:
            title = f"What I learned about {name}"
            text = _Parts((f"A few notes I jotted down after reading about {name}. ", *claims, " Interesting stuff."))
            site, base, kind = BLOG[0], BLOG[1], "blog"
        self.out.add(
            url=base + slug(title),
            site=site,
            title=title,
            kind=kind,
            published=self.present - int(r.randrange(0, 3650)),
            text=text,
            entity=e,
            entity_rows=[e],
            contradicts=[self.fid[x] for x, _ in wrong],
            layer="conflict",
            u=r.random(),
        )

    def _distractor(self, e: int, r: random.Random) -> None:
        kind, pattern = DISTRACTOR_KINDS[int(r.randrange(len(DISTRACTOR_KINDS)))]
        title = pattern.format(n=self.names[e])
        year = int(r.randrange(1950, date_of(self.present).year + 1))
        count = int(r.randrange(3, 5000))
        place = next(
            (self.obj[x] for x in self.by_subject[e] if SECTION.get(PREDICATES[self.pred[x]]) in ("Location", "Life")),
            -1,
        )
        where = f", from {self.names[place]}," if place >= 0 else ""
        text = (f"**{title}** is {a_or_an(kind)} {kind}{where} not to be confused with the {TYPE_LABEL[self.types[e]]} "
                f"{self.names[e]}. It started out in {year} and today counts {count:,} followers.")  # fmt: skip
        self.out.add(
            url=FANSITE[1] + slug(title),
            site=FANSITE[0],
            title=title,
            kind="blog",
            published=self.present - int(r.randrange(0, 3650)),
            text=text,
            entity=e,
            layer="distractor",
            u=r.random(),
        )

    def _confusable(self, e: int, r: random.Random, real: set[str]) -> None:
        name = confusable_name(self.names[e], r, real)
        if name is None:
            return
        rows = self.by_subject[e]
        sent = []
        swap = (self.names[e], name)
        for x in rows:
            p, _, restated = _CODES[self.pred[x]]
            if restated:
                sent.append(self._later(x, 13, None, swap))
            if p in RELATIONS:
                continue
            w = self._wrong(p, self.value[x], r)
            if w is not None:
                sent.append(self._later(x, 13, w, swap))
        t = TYPE_LABEL[self.types[e]]
        self.out.add(
            url=PROFILES[1] + slug(name),
            site=PROFILES[0],
            title=f"{name} – {t} profile",
            kind="profile",
            published=self.present - int(r.randrange(0, 3650)),
            text=_Parts((f"**{name}** is {a_or_an(t)} {t}. ", *_spaced(sent))),
            entity=e,
            layer="confusable",
            u=r.random(),
        )


class _Parts(tuple):
    """A page's text until its sentences are made: literal texts, and the numbers of the
    sentences asked for (:meth:`PerturbationPages._later`) in their places."""


def _spaced(said: list[int]) -> list:
    """``" ".join`` of sentences still to be made, as parts."""
    out: list = []
    for i in said:
        if out:
            out.append(" ")
        out.append(i)
    return out


class _Names:
    """``name in names``: whether an entity of the world bears that name (the store's sorted names)."""

    def __init__(self, store):
        self.store = store

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.store.is_name(name)


_VOWELS = "aeiou"
_NOT_LETTER = re.compile(r"[\W_]+")


def _letters(name: str) -> str:
    return _NOT_LETTER.sub("", name.casefold())


def confusable_name(name: str, r: random.Random, taken: set[str]) -> str | None:
    """``name`` with one edit in its longest word (swap, double, drop or change a vowel) that
    names nothing real. None if ten tries all hit a real name."""
    words = name.split(" ")
    i = max(range(len(words)), key=lambda k: len(words[k]))
    w = words[i]
    if len(w) < 4:
        return None
    for _ in range(10):
        j = int(r.randrange(1, len(w) - 1))
        op = int(r.randrange(4))
        if op == 0:
            v = w[:j] + w[j + 1] + w[j] + w[j + 2 :]
        elif op == 1:
            v = w[:j] + w[j] + w[j:]
        elif op == 2:
            v = w[:j] + w[j + 1 :]
        else:
            vs = [k for k in range(1, len(w)) if w[k] in _VOWELS]
            if not vs:
                continue
            k = vs[int(r.randrange(len(vs)))]
            v = w[:k] + _VOWELS[(_VOWELS.index(w[k]) + 1 + int(r.randrange(4))) % 5] + w[k + 1 :]
        cand = " ".join(words[:i] + [v] + words[i + 1 :])
        if _letters(cand) != _letters(name) and cand not in taken:  # "Segia''s" is still "Segia's"
            return cand
    return None
