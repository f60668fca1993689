"""Lookups over sorted Arrow columns without a Python structure per row: the speller (its
tables, last-three-letters key and saved prefix keys), ``Strings``' bisection by prefix keys,
``numpy_of`` and the linker's membership test."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest
from profiles import examples
from rapidfuzz.distance import OSA
from spelling_helpers import edits, literal_correct, literal_spellings

from fictionworld.web import linker
from fictionworld.web import speller as speller_module
from fictionworld.web.arrow import write_arrow
from fictionworld.web.speller import MIN_SIMILARITY, Speller, keys_path, letters_of, tail3_path


@pytest.mark.parametrize("one_edit_pool", [0, None])
@pytest.mark.parametrize("seed", range(4))
def test_the_speller_table_corrects_as_the_rule_says(seed, one_edit_pool, tmp_path, monkeypatch):
    """Against the rule written plainly; with ``one_edit_pool=0`` every pool is first searched
    for words one edit away (``Speller._one_edit``), as the large pools of a big world are."""
    if one_edit_pool is not None:
        monkeypatch.setattr(speller_module, "ONE_EDIT_POOL", one_edit_pool)
    rng = random.Random(seed)
    letters = "abcdeéiklmnorstuvyzøß0123"
    vocab = {"".join(rng.choice(letters) for _ in range(rng.randint(1, 11))) for _ in range(3_000)}
    speller = Speller(vocab)
    speller.save(tmp_path / "s.arrow")
    opened = Speller.open(tmp_path / "s.arrow")
    # without the last-three-letters key (a table saved before it): the "last two" groups, filtered
    plain = Speller(vocab, tail3=False)
    speller.save(tmp_path / "p.arrow")
    plain.save(tmp_path / "p.arrow")  # (over a table saved with one: its key goes too)
    assert not tail3_path(tmp_path / "p.arrow").exists() and tail3_path(tmp_path / "s.arrow").exists()
    assert opened.words._keys is not None and opened._tail3._keys is not None  # read, not made
    # without the prefix keys (a table saved before them): made on first use
    (tmp_path / "k").mkdir()
    for f in ("s.arrow", "s.tail3.arrow"):
        (tmp_path / "k" / f).write_bytes((tmp_path / f).read_bytes())
    unkeyed = Speller.open(tmp_path / "k" / "s.arrow")
    assert unkeyed.words._keys is None and not keys_path(tmp_path / "k" / "s.arrow").exists()
    spellers = (speller, opened, plain, Speller.open(tmp_path / "p.arrow"), unkeyed)
    assert [x.tail3 is not None for x in spellers] == [True, True, False, False, True]
    queries = [edits(w, rng) for w in rng.sample(sorted(vocab), examples(400))] + rng.sample(
        sorted(vocab), examples(100)
    )
    queries += ["", "a", "zzzzzzzzzzzzzzzzzzzzzzz", "1234", "ß" * 5]
    for q in queries:
        want = literal_correct(vocab, q)
        assert [x.correct(q) for x in spellers] == [want] * 5, q
        want = literal_spellings(vocab, q)
        assert [x.spellings(q) for x in spellers] == [want] * 5, q
    # one edit away from a word of 4+ letters is never out of reach: the word, or one as close, is found
    for w in rng.sample(sorted(w for w in vocab if len(w) >= 4 and not w.isdigit()), 300):
        q = edits(w, rng)
        if q in vocab or len(q) < 4 or q.isdigit() or OSA.normalized_similarity(q, w) < MIN_SIMILARITY:
            continue
        got = speller.correct(q)
        assert got and OSA.normalized_similarity(q, got[0]) >= OSA.normalized_similarity(q, w), (w, q, got)
    assert len(speller) == len(vocab - {""}) and all(w in opened for w in vocab if w)
    assert "not-a-word-here" not in opened and 3 not in opened


@pytest.mark.parametrize("seed", range(3))
def test_many_words_one_edit_away_rank_as_the_rule_says(seed, monkeypatch):
    """Words with dozens of vocabulary words one edit away (dropped, added, changed and swapped
    letters; shorter, as long and longer), so that ties run past the three kept, through the
    one-edit search and the pool's scoring alike; and words whose nearest are two edits away."""
    rng = random.Random(seed)
    stems = ["kataloneni", "vourrinen", "haufnort", "abcd", "éssøßa", "x1y2z3w"]
    vocab = set()
    for stem in stems:
        for _ in range(rng.randint(5, 60)):
            w = edits(stem, rng)
            vocab.update([w, edits(edits(w, rng), rng)])
    queries = [q for stem in stems for q in [stem, edits(stem, rng), edits(edits(stem, rng), rng)]]
    for pool in (0, 10**9):
        monkeypatch.setattr(speller_module, "ONE_EDIT_POOL", pool)
        speller = Speller(vocab)
        for q in queries:
            assert speller.correct(q) == literal_correct(vocab, q), (pool, q)
            assert speller.spellings(q) == literal_spellings(vocab, q), (pool, q)
            assert speller.spellings(q, limit=2) == literal_spellings(vocab, q, limit=2), (pool, q)


def test_spellings_keep_every_word_at_the_fewest_edits_where_correct_prefers_longer_ones():
    """The word "voumko" is one edit from each of these; ``correct``'s similarity (normalised by
    the longer word) ranks the added letters above the swap and the change; ``spellings`` keeps
    them all."""
    speller = Speller(["volumko", "vovumko", "voyumko", "vuomko", "volmko", "vomkov"])
    assert speller.correct("voumko") == ["volumko", "vovumko", "voyumko"]
    assert speller.spellings("voumko") == ["volumko", "vovumko", "voyumko", "volmko", "vuomko"]
    assert speller.spellings("voumko", limit=4) == ["volumko", "vovumko", "voyumko", "volmko"]
    assert speller.spellings("vuomko") == ["vuomko"] and speller.spellings("vou") == []


def test_a_misspelt_name_links_by_a_spelling_correct_would_drop():
    """The rest of the name picks among the spellings: "Tanja Voumko" is Tanja Vuomko, though
    three other words one edit from "voumko" rank above "vuomko"."""
    names = ["Tanja Vuomko", "Ilse Volumko", "Ari Vovumko", "Eva Voyumko", "Tanja Orvel"]
    linked = linker.EntityLinker(names, [()] * len(names)).link("Tanja Voumko")
    assert linked and linked[0].row == 0, linked
    assert linked[0].corrected == ("tanja", "vuomko")  # as its name spells it: what the search adds


def test_letters_of_a_column_hold_every_character():
    """Every character of the strings (multi-byte ones included), and digits and a-z always,
    over chunked, sliced, large_string and empty columns."""
    vocab = ["abc", "éø", "𝔄z", "", "q_Q", "ß-1"]
    columns = [
        pa.array(vocab, pa.string()),
        pa.array(vocab, pa.large_string()),
        pa.chunked_array([pa.array(vocab[:2]), pa.array([], pa.string()), pa.array(vocab[2:])]),
        pa.array(["ж"] * 3 + vocab, pa.string()).slice(3),
        pa.array([], pa.string()),
    ]
    plain = set("0123456789abcdefghijklmnopqrstuvwxyz")
    for column in columns:
        want = set("".join(column.to_pylist())) | plain
        assert letters_of(column) == want, column


def test_a_broken_last_three_letters_key_is_refused(tmp_path):
    """A speller's tail3 file that is not one (other columns, word ids past the vocabulary,
    more rows than words, garbage bytes) is a ValueError naming it, not a wrong correction."""
    vocab = [f"{a}{b}wordsmith{c}" for a in "abc" for b in "xyz" for c in "lmn"]
    Speller(vocab).save(tmp_path / "s.arrow")
    good = tail3_path(tmp_path / "s.arrow").read_bytes()
    ids = pa.array(np.arange(len(vocab), dtype=np.int32))
    keys = pa.array(["0012|" + w[-3:] for w in vocab])
    for table in (
        pa.table({"key": keys, "row": ids}),
        pa.table({"key": keys, "word": pa.array(np.arange(1, len(vocab) + 1, dtype=np.int32))}),
        pa.table({"key": pa.concat_arrays([keys, keys]), "word": pa.concat_arrays([ids, ids])}),
    ):
        write_arrow(tail3_path(tmp_path / "s.arrow"), table)
        with pytest.raises(ValueError, match="s.tail3.arrow"):
            Speller.open(tmp_path / "s.arrow")
    tail3_path(tmp_path / "s.arrow").write_bytes(b"garbage")
    with pytest.raises((ValueError, pa.ArrowException)):
        Speller.open(tmp_path / "s.arrow")
    tail3_path(tmp_path / "s.arrow").write_bytes(good)
    assert Speller.open(tmp_path / "s.arrow").correct("axwordsmitgl") == Speller(vocab).correct("axwordsmitgl")


def test_broken_prefix_keys_are_refused(tmp_path):
    """A speller's saved prefix keys that are not its columns' (a count that does not fit,
    another type, out of order, another vocabulary's, garbage) are a ValueError naming the file,
    not a word looked up in the wrong place."""
    vocab = [f"{a}{b}{c}wordsmith" for a in "abcdef" for b in "ghijkl" for c in "mnopqr"]
    Speller(vocab).save(tmp_path / "s.arrow")
    Speller([w.upper() for w in vocab]).save(tmp_path / "o.arrow")  # the same size, other words
    good = np.load(keys_path(tmp_path / "s.arrow"))
    other = np.load(keys_path(tmp_path / "o.arrow"))
    assert good.shape == other.shape and (good != other).any()
    for bad in (good[:-1], good.astype(np.int64), good[::-1].copy(), other):
        np.save(keys_path(tmp_path / "s.arrow"), bad)
        with pytest.raises(ValueError, match="s.keys.npy"):
            Speller.open(tmp_path / "s.arrow")
    keys_path(tmp_path / "s.arrow").write_bytes(b"garbage")
    with pytest.raises(ValueError, match="s.keys.npy: not a NumPy array"):
        Speller.open(tmp_path / "s.arrow")
    np.save(keys_path(tmp_path / "s.arrow"), good)
    assert Speller.open(tmp_path / "s.arrow").correct("bhmwordsmitj") == Speller(vocab).correct("bhmwordsmitj")


@pytest.mark.parametrize("stride", [1, 3, 16])
@pytest.mark.parametrize("seed", range(4))
def test_strings_bisect_by_prefix_keys_as_bisect_does(seed, stride, monkeypatch):
    """The 8-byte-key search of a sorted column against ``bisect`` itself: words sharing long
    prefixes, shorter than 8 bytes, empty, multi-byte (é, 𝔄, U+10FFFF), over chunked,
    sliced and large_string columns, at every ``lo`` and ``hi``, with a key for every row or
    every ``stride``-th; ``find`` against ``list.index``, and ``isin`` against ``in``."""
    import bisect

    from fictionworld.web.strings import Strings

    monkeypatch.setattr(Strings, "STRIDE", stride)

    rng = np.random.default_rng(seed)
    alphabet = ["a", "b", "z", "é", "𝔄", "\U0010ffff", "0"]
    stems = ["", "a", "abcdefg", "abcdefgh", "abcdefghij", "zz", "éé", "𝔄a"]
    vocab = sorted(
        {str(rng.choice(stems)) + "".join(rng.choice(alphabet, int(rng.integers(0, 5)))) for _ in range(300)}
    )
    probes = (
        vocab
        + [w + "a" for w in vocab[:50]]
        + [w[:-1] for w in vocab[:50]]
        + ["", "\U0010ffff" * 3, "abcdefgh\U0010ffff"]
    )
    cut = int(rng.integers(0, len(vocab)))
    columns = [
        pa.array(vocab, pa.string()),
        pa.array(vocab, pa.large_string()),
        pa.chunked_array([pa.array(vocab[:cut], pa.string()), pa.array(vocab[cut:], pa.string())]),
        pa.array(["pad"] * 7 + vocab, pa.string()).slice(7),
    ]
    for column in columns:
        s = Strings(column)
        for x in probes:
            lo = int(rng.integers(0, len(vocab) + 1))
            assert s.bisect_left(x) == bisect.bisect_left(vocab, x), x
            assert s.bisect_right(x) == bisect.bisect_right(vocab, x), x
            assert s.find(x) == (vocab.index(x) if x in vocab else -1), x
            assert s.bisect_left(x, lo) == bisect.bisect_left(vocab, x, lo), (x, lo)
            assert s.bisect_right(x, lo, len(vocab)) == bisect.bisect_right(vocab, x, lo), (x, lo)
            hi = int(rng.integers(lo, len(vocab) + 1))
            assert s.bisect_left(x, lo, hi) == bisect.bisect_left(vocab, x, lo, hi), (x, lo, hi)
            assert s.bisect_right(x, lo, hi) == bisect.bisect_right(vocab, x, lo, hi), (x, lo, hi)
        assert s.isin(probes).tolist() == [x in vocab for x in probes]
        assert s.isin([]).tolist() == [] and s.isin(probes[::-1]).tolist() == [x in vocab for x in probes[::-1]]


@pytest.mark.parametrize("seed", range(6))
def test_strings_read_every_index_as_a_list_does(seed):
    """``strings[i]`` of a chunked column (empty chunks first, between and last, sliced chunks,
    large_string) against the same list indexed by ``i``: every row, every negative index, and
    IndexError just past either end; ``take`` of rows in any order, repeated, against the list."""
    from fictionworld.web.strings import Strings

    rng = np.random.default_rng(seed)
    values = [
        "".join(rng.choice(["a", "é", "𝔄", " ", "z"], int(rng.integers(0, 6)))) for _ in range(int(rng.integers(0, 60)))
    ]
    cuts = sorted(int(x) for x in rng.integers(0, len(values) + 1, int(rng.integers(0, 5))))
    parts = [values[a:b] for a, b in zip([0, *cuts], [*cuts, len(values)])]
    type_ = pa.large_string() if seed % 2 else pa.string()
    chunks = [pa.array(["pad", *p, "pad"], type_).slice(1, len(p)) for p in [[], *parts, []]]
    for column in (pa.chunked_array(chunks, type_), pa.array(values, type_)):
        s = Strings(column)
        assert len(s) == len(values)
        assert [s[i] for i in range(len(values))] == values
        assert [s[-i] for i in range(1, len(values) + 1)] == [values[-i] for i in range(1, len(values) + 1)]
        assert [s[np.int64(i)] for i in range(len(values))] == values
        for bad in (len(values), -len(values) - 1):
            with pytest.raises(IndexError):
                s[bad]
        rows = rng.integers(0, len(values), 40).tolist() if values else []
        assert s.take(rows) == [values[i] for i in rows] and s.take([]) == []
        assert s.take(sorted(rows)) == [values[i] for i in sorted(rows)]


def test_numpy_of_reads_fixed_width_columns_as_to_numpy_does():
    """Chunked, sliced, empty and chunkless columns of the page table's fixed-width types, read
    off their buffers, against pyarrow's own ``to_numpy``; nulls and other widths refused."""
    import datetime as dt

    from fictionworld.web.arrow import numpy_of

    rng = np.random.default_rng(0)
    ints, floats = rng.integers(-(2**31), 2**31, 1000, dtype=np.int64).astype(np.int32), rng.random(1000, np.float32)
    days = [dt.date(1900, 1, 1) + dt.timedelta(days=int(d)) for d in rng.integers(0, 60_000, 1000)]
    for values, type_, dtype in ((ints, pa.int32(), np.int32), (floats, pa.float32(), np.float32), (days, pa.date32(), np.int32)):  # fmt: skip
        whole = pa.array(values, type_)
        want = whole.cast(pa.int32()).to_numpy() if type_ == pa.date32() else whole.to_numpy()
        for column, rows in (
            (whole, slice(None)),
            (whole.slice(7, 500), slice(7, 507)),
            (pa.chunked_array([whole.slice(0, 3), whole.slice(3, 0), whole.slice(3)]), slice(None)),
            (pa.chunked_array([whole.slice(5, 10), whole.slice(900)]), np.r_[5:15, 900:1000]),
            (pa.chunked_array([], type_), slice(0, 0)),
            (whole.slice(0, 0), slice(0, 0)),
        ):
            got = numpy_of(column, dtype)
            assert got.dtype == dtype and got.tolist() == want[rows].tolist()
    with pytest.raises(ValueError, match="nulls"):
        numpy_of(pa.array([1, None], pa.int32()), np.int32)
    for column in (pa.array([1], pa.int64()), pa.array(["a"]), pa.array([True])):
        with pytest.raises(ValueError, match="cannot be read as int32"):
            numpy_of(column, np.int32)


def test_the_linkers_membership_test_is_isin():
    """``_among`` (a comparison per id for the few words of a query) against ``np.isin``."""
    from fictionworld.web.linker import _among

    rng = np.random.default_rng(0)
    for size in (0, 1, 5, 300):
        for count in (0, 1, 3, 16, 17, 40):
            values = rng.integers(0, 50, size).astype(np.int32)
            ids = rng.integers(0, 60, count).tolist()
            assert np.array_equal(_among(values, ids), np.isin(values, ids)), (size, count)
