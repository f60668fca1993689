"""fold against the rule it implements, on every code point and on generated strings."""

from __future__ import annotations

import sys
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples, sampled

from fictionworld.folding import LETTERS, MARKS, fold


def _rule(text: str) -> str:
    """Lowercase; if not ASCII: NFKD, combining marks dropped, LETTERS and MARKS spelled out,
    casefolded."""
    t = text.lower()
    if t.isascii():
        return t
    t = unicodedata.normalize("NFKD", t)
    t = "".join(c for c in t if not unicodedata.combining(c))
    return t.translate(str.maketrans(LETTERS | MARKS)).casefold()


def test_fold_follows_its_rule_on_every_code_point():
    bad = [
        hex(cp)
        for cp in sampled(range(sys.maxunicode + 1))
        if not 0xD800 <= cp < 0xE000 and fold(f"Ł{chr(cp)}a") != _rule(f"Ł{chr(cp)}a")
    ]
    assert not bad, bad[:20]


@settings(max_examples=examples(500))
@given(
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs",)) | st.sampled_from(list("aÉéłøßæœı’–— Zoë")), max_size=16
    )
)
def test_fold_follows_its_rule_on_generated_text(text):
    assert fold(text) == _rule(text)


def test_the_fold_table_keeps_no_more_than_the_basic_plane():
    from fictionworld.folding import _FOLD

    fold("".join(chr(cp) for cp in range(0x10000, 0x10400)) + "é")
    assert max(_FOLD) < 0x10000
