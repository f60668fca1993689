"""Invented name morphology: syllable models per fictional culture.

Place and organisation names are built from these, then filtered against a real gazetteer,
so an agent cannot know any of them from the real world. Given names come from Faker's
per-locale tables (real given names are fine: a full name with an invented surname is not a
real person); surnames are invented words with a culture's surname endings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

__all__ = ["Culture", "CULTURES", "invent_words", "given_names"]


@dataclass(frozen=True)
class Culture:
    name: str
    onsets: tuple[str, ...]
    nuclei: tuple[str, ...]
    codas: tuple[str, ...]  # inside the word, after a syllable (rare)
    finals: tuple[str, ...]  # word endings
    country_endings: tuple[str, ...]
    place_suffixes: tuple[str, ...]  # glued to a stem for some cities
    region_words: tuple[str, ...]  # separate word after a stem for some regions
    surname_endings: tuple[str, ...]
    locale: str  # Faker locale whose given-name tables this culture uses


def _t(s: str) -> tuple[str, ...]:
    return tuple(s.split())


CULTURES: tuple[Culture, ...] = (
    Culture(
        "varn",
        _t("b d f g h k l m n r s t v sk st tr gr br kv fr"),
        _t("a e i o u y ei au"),
        _t("r l n s"),
        _t("en ar und ik ost eld un is"),
        _t("ia and mark"),
        _t("vik heim by stad holm dal"),
        _t("Vale Fells Reach Coast"),
        _t("son sen berg lund qvist"),
        "sv_SE",
    ),
    Culture(
        "aurel",
        _t("b c d f g l m n p r s t v br tr pr gl"),
        _t("a e i o u ia ie io"),
        _t("l n r"),
        _t("a o ia ello ino ara ento ona"),
        _t("ia ora enza"),
        _t("ento ona ano"),
        _t("Marche Valle Riviera"),
        _t("elli ini etti ano one"),
        "it_IT",
    ),
    Culture(
        "kesh",
        _t("b d g k l m n p r s t v z ch sh zh kr pr st sv dr"),
        _t("a e i o u y"),
        _t("v k n r"),
        _t("ov ava ice ek ny in ar"),
        _t("ania ova ia"),
        _t("grad ovo ice"),
        _t("Krai Uplands Basin"),
        _t("ovic ski ak enko ev"),
        "pl_PL",
    ),
    Culture(
        "thalen",
        _t("b d f g h k l m n r s t w sch st br gr kl"),
        _t("a e i o u au ei"),
        _t("l n r s"),
        _t("en er ing au ald ort"),
        _t("ia land ern"),
        _t("burg hafen feld tal"),
        _t("Mark Gau Heath"),
        _t("mann er feld hardt"),
        "de_DE",
    ),
    Culture(
        "oshu",
        _t("h k l m n p r s t v j y"),
        _t("a e i o u aa ei uo"),
        _t("n l s"),
        _t("la nen mo ri ko vi sa"),
        _t("ola ia maa"),
        _t("koski joki lahti"),
        _t("Lakes Moors Shore"),
        _t("nen la inen o"),
        "fi_FI",
    ),
    Culture(
        "lyr",
        _t("b c d g l m n p r t w gw br cr ll tr"),
        _t("a e i o y ae ei"),
        _t("n r l"),
        _t("wyn og ach en an ith"),
        _t("ia wen ydd"),
        _t("moor wick aven"),
        _t("Downs Glens Marches"),
        _t("ach wen ogan ell"),
        "en_GB",
    ),
    Culture(
        "ibar",
        _t("b c d f g l m n p r s t v br cr tr"),
        _t("a e i o u ia ue"),
        _t("l n r s"),
        _t("ez al ena ero ada ilo on"),
        _t("ia onia ara"),
        _t("ena al illa"),
        _t("Vega Sierra Litoral"),
        _t("ez ara ero ado"),
        "es_ES",
    ),
    Culture(
        "mezar",
        _t("b d f g h k l m n p r s t v z cs gy sz ty"),
        _t("a e i o u o e"),
        _t("r l n s"),
        _t("ar esz ony ad ely os"),
        _t("ia any or"),
        _t("vara falu hely"),
        _t("Puszta Hills Plain"),
        _t("i ay as ody"),
        "hu_HU",
    ),
)

_TRIPLE = re.compile(r"(.)\1\1+")
_HARSH = re.compile(r"[^aeiouyåøö]{4,}")


def pronounceable(word: str) -> bool:
    """No run of four consonants (``Lolulrnsk``): such words are redrawn."""
    return _HARSH.search(word.lower()) is None


def invent_words(culture: Culture, n: int, rng: np.random.Generator) -> list[str]:
    """``n`` invented words (not deduplicated) in ``culture``'s morphology, capitalised."""
    if n == 0:
        return []
    on = np.array(culture.onsets, dtype=object)
    nu = np.array(culture.nuclei, dtype=object)
    co = np.array(culture.codas, dtype=object)
    fi = np.array(culture.finals, dtype=object)

    def syllable(with_coda: float) -> np.ndarray:
        s = on[rng.integers(len(on), size=n)] + nu[rng.integers(len(nu), size=n)]
        coda = np.where(rng.random(n) < with_coda, co[rng.integers(len(co), size=n)], "")
        return s + coda

    three = rng.random(n) < 0.25
    first, middle = syllable(0.25), syllable(0.15)
    last_onset = on[rng.integers(len(on), size=n)]
    ending = fi[rng.integers(len(fi), size=n)]
    words = first + np.where(three, middle, "") + last_onset + ending
    # one regex pass over all words at once ("." never matches the newline separators)
    tidy = _TRIPLE.sub(r"\1\1", "\n".join(words.tolist())).split("\n")
    return [w.capitalize() for w in tidy]


def _given_name_tables(locale: str) -> tuple[list[str], list[str]]:
    import importlib

    mod = importlib.import_module(f"faker.providers.person.{locale}")
    prov = mod.Provider
    female = list(getattr(prov, "first_names_female", ()) or getattr(prov, "first_names", ()))
    male = list(getattr(prov, "first_names_male", ()) or getattr(prov, "first_names", ()))
    return female, male


_GIVEN_CACHE: dict[str, tuple[np.ndarray, np.ndarray]] = {}


def given_names(culture: Culture, female: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A given name for each person (``female`` is a bool array), from Faker's locale tables."""
    if culture.locale not in _GIVEN_CACHE:
        f, m = _given_name_tables(culture.locale)
        # Faker tables hold a few multi-word or odd entries; keep simple single names.
        f = [x for x in f if x.isalpha()]
        m = [x for x in m if x.isalpha()]
        _GIVEN_CACHE[culture.locale] = (np.array(f, dtype=object), np.array(m, dtype=object))
    f_tab, m_tab = _GIVEN_CACHE[culture.locale]
    n = len(female)
    return np.where(female, f_tab[rng.integers(len(f_tab), size=n)], m_tab[rng.integers(len(m_tab), size=n)])
