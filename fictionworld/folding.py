"""Text folding, in one place: how two spellings of a name or word are made comparable.

:func:`fold` is the one folding every matcher shares (the search linker, the world-model
verifier, the strict scorer, task generation's alias checks): lowercase, accents off, the
letters that Unicode decomposition keeps (ł ø đ ß æ œ ı) spelled out, one kind of apostrophe and
dash. :func:`fold_key` keeps letters and digits only (names told apart by what they spell).
:func:`ascii_key` is for identifiers (URL slugs, the gazetteer's collision keys): non-ASCII
letters dropped, as those keys were first defined; changing it would change generated worlds.

>>> fold("Émile–Zoła’s")
"emile-zola's"
>>> fold_key("Émile-Zola  Ltd.")
'emilezolaltd'
>>> ascii_key("Søren Kierkegaard")
'sren kierkegaard'
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["fold", "fold_phrase", "fold_key", "ascii_key", "LETTERS", "MARKS"]

LETTERS = {"ł": "l", "ø": "o", "đ": "d", "ß": "ss", "æ": "ae", "œ": "oe", "ı": "i"}  # letters NFKD keeps
MARKS = {"’": "'", "–": "-", "—": "-"}
_NOT_ALNUM = re.compile(r"[\W_]+")


class _Marks(dict):
    """A ``str.translate`` table: :data:`LETTERS` and :data:`MARKS` spelled out, combining
    marks (``unicodedata.combining`` non-zero) dropped, every other character kept. Filled one
    character at a time as they are met: one C-level pass per string instead of a generator
    over its characters (the index folds every page title: 0.29 s down to 0.13 s for the
    320,000 titles of a shard of a 1M world, a fifth of them not ASCII). Only the Basic
    Multilingual Plane is kept, so that text sent by agents cannot grow it past 65,536 entries."""

    def __missing__(self, cp: int):
        out = None if unicodedata.combining(chr(cp)) else cp
        if cp < 0x10000:
            self[cp] = out
        return out


_FOLD = _Marks(str.maketrans(LETTERS | MARKS))


def fold(text: str) -> str:
    """Lowercase, accents off, special letters spelled out, one apostrophe and one dash.
    Spacing is kept (callers split or squeeze it as they need)."""
    t = text.lower()
    if t.isascii():
        return t
    return unicodedata.normalize("NFKD", t).translate(_FOLD).casefold()


def fold_phrase(text: str) -> str:
    """:func:`fold` with single spaces: phrases compared whole (page titles, verified text)."""
    return " ".join(fold(text).split())


def fold_key(text: str) -> str:
    """:func:`fold`, then letters and digits only: what tells two names apart."""
    return _NOT_ALNUM.sub("", fold(text))


def ascii_key(text: str) -> str:
    """Lowercase ASCII: accents off and every other non-ASCII character dropped (identifiers)."""
    if not text.isascii():
        text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return text.lower()
