"""The articles' sentences and infobox lines made in Arrow (``fictionworld.web.sentences``) are
the ones ``Renderer.sentence`` writes one fact at a time, character for character."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import fictionworld as fw
from fictionworld.dates import NA_DATE, from_days
from fictionworld.surface import format_date
from fictionworld.web.render import _ARTICLE_PRED, Renderer
from fictionworld.web.sentences import _a_or_an, _upper_first, date_texts


def _one_at_a_time(r: Renderer, i: int) -> str | None:
    """What the article says of the fact at position ``i`` of the block, written by the scalar path."""
    p, section, labels = _ARTICLE_PRED[r.pred[i]]
    if section is not None:
        return r.sentence(i, subject_plain=i < r.own)
    if i >= r.own:
        return None
    hr = r.h[i]
    if (hr >> 20) & 1:
        return f"- **{labels[(hr >> 21) % len(labels)]}:** {r.fmt(p, r.value[i], hr >> 24, infobox=True)}"
    return r.sentence(i)


@pytest.mark.parametrize("seed", [1, 7])
def test_every_block_says_what_sentence_says(seed):
    world = fw.generate(seed=seed, entities=3_000)
    r = Renderer.of_world(world)
    made = left = 0
    for b in range(r.entity_blocks):
        rows = range(b * r.block, min(r.n_entities, (b + 1) * r.block))
        r._gather(b, rows)
        texts = r.article_texts()
        want = [_one_at_a_time(r, i) for i in range(len(r.pred))]
        assert len(texts) == len(want)
        for i, (got, w) in enumerate(zip(texts, want)):
            if got is None:
                left += w is not None
            else:
                made += 1
                assert got == w, (b, i)
    assert made > 20_000
    assert left < made / 100  # the few left to ``sentence`` (a first letter outside ASCII)


def test_the_dates_are_format_dates_over_every_year():
    rng = np.random.default_rng(0)
    days = rng.integers(-719_162, 2_932_896, 50_000).astype(np.int32)  # years 1 … 9999
    days[::9] = NA_DATE
    variant = rng.integers(0, 1 << 40, len(days))
    want = ["" if d == NA_DATE else format_date(from_days(int(d)), int(v)) for d, v in zip(days, variant)]
    assert date_texts(days, variant).to_pylist() == want


def test_letters_outside_ascii_are_left_to_python():
    """``"ß".upper()`` is "SS" and ``"İ".lower()`` two code points: Arrow maps them one to one,
    so those texts come back null (the renderer writes them with ``sentence``)."""
    texts = pa.array(["ßtraße", "éclair", "İstanbul", "", "x-ray", "Apple", "4 ways"])
    assert _upper_first(texts).to_pylist() == [None, None, None, None, "X-ray", "Apple", "4 ways"]
    assert _a_or_an(texts).to_pylist() == [None, None, None, "an", "a", "an", "a"]


def test_a_world_with_names_outside_ascii_renders_the_same_pages():
    """Names that start outside ASCII go the scalar way and the pages do not change."""
    world = fw.generate(seed=3, entities=600)
    names = world.entities.name.copy()
    for i in range(0, len(names), 5):
        names[i] = "Ö" + names[i][1:] if i % 2 else "ß" + names[i]
    world.entities.name[:] = names
    r = Renderer.of_world(world)
    b, left = 0, 0
    rows = range(0, min(r.n_entities, r.block))
    r._gather(b, rows)
    texts = r.article_texts()
    for i, got in enumerate(texts):
        want = _one_at_a_time(r, i)
        if got is None:
            left += want is not None
        else:
            assert got == want
    assert left > 10


def test_rendering_makes_no_reference_cycles():
    """``Renderer.render_block`` runs without the cyclic garbage collector: nothing it leaves
    behind may need it."""
    import gc

    r = Renderer.of_world(fw.generate(seed=2, entities=3_000))
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        for b in range(r.blocks):
            r.render_block(b)
            assert gc.collect() == 0, f"block {b} left objects only the cyclic collector frees"
    finally:
        if enabled:
            gc.enable()
    assert gc.isenabled() == enabled


@pytest.mark.parametrize("seed", [4])
def test_sentences_with_a_salt_are_what_sentence_says(seed):
    """``said_at`` (the news and organisation pages' sentences): any salt, subject linked or
    plain, and hashes that a salt carries past 64 bits (Python's ints do not wrap)."""
    world = fw.generate(seed=seed, entities=3_000)
    r = Renderer.of_world(world)
    rng = np.random.default_rng(seed)
    for b in range(r.entity_blocks):
        r._gather(b, range(b * r.block, min(r.n_entities, (b + 1) * r.block)))
        n = len(r.pred)
        near = rng.choice(n, 5, replace=False)
        r.h64[near] = np.uint64(2**64 - 3)  # the hash of a few facts at the top of the range
        for i in near.tolist():
            r.h[i] = 2**64 - 3
        at = list(range(n)) * 2
        salts = rng.integers(0, 14, len(at)).tolist()
        linked = [bool(x) and _ARTICLE_PRED[r.pred[i]][1] is not None for i, x in zip(at, rng.integers(0, 2, len(at)))]
        got = r.said_at(at, salts, linked)
        want = [r.sentence(i, salt=s, subject_plain=not k) for i, s, k in zip(at, salts, linked)]
        assert got == want
