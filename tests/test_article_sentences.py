"""The articles' sentences and infobox lines made in Arrow (``fictionworld.web.sentences``) are
the ones ``Renderer.sentence`` writes one fact at a time, character for character."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import fictionworld as fw
from fictionworld.dates import NA_DATE, from_days
from fictionworld.schema import ENTITY_TYPES, PREDICATES, RELATIONS
from fictionworld.surface import format_date
from fictionworld.web.articles import ENCYCLOPEDIA, SECTION_ORDER
from fictionworld.web.page_rows import PageRows
from fictionworld.web.phrasing import INCOMING, LABELS, SECTION, TYPE_LABEL
from fictionworld.web.render import Renderer
from fictionworld.web.sentences import _a_or_an, _upper_first, date_texts
from fictionworld.web.text import a_or_an

# Per predicate code, for articles: (name, section of a relation or None, infobox labels).
_ARTICLE_PRED = [(p, SECTION[p] if p in RELATIONS else None, LABELS.get(p, ())) for p in PREDICATES]
# Per type: the incoming relations its articles state, as (predicate code, section), in INCOMING's order.
_INCOMING_OF = {t: [(PREDICATES.index(p), sec) for p, (ot, sec) in INCOMING.items() if ot == t] for t in ENTITY_TYPES}


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


def _articles_one_at_a_time(r: Renderer, entities: range) -> None:
    """The articles of a block written a fact at a time, as the renderer wrote them before
    ``fictionworld.web.articles`` put them together in Arrow: the reference it is held to."""
    said = r.article_texts()
    for e in entities:
        t, rows = r.types[e], r.by_subject[e]
        name, label = r.names[e], TYPE_LABEL[t]
        lead = f"**{name}** is {a_or_an(label)} {label}."
        if r.aliases[e]:
            lead += f" Also known as: {', '.join(r.aliases[e])}."
        infobox: list[str] = []
        sections: dict[str, list[str]] = {}
        for i in rows:
            p, section, labels = _ARTICLE_PRED[r.pred[i]]
            text = said[i]
            if section is None:
                if (r.h[i] >> 20) & 1:
                    infobox.append(text or f"- **{labels[(r.h[i] >> 21) % len(labels)]}:** {r.fmt(p, r.value[i], r.h[i] >> 24, infobox=True)}")  # fmt: skip
                    continue
                section, text = "Overview", text or r.sentence(i)
            sections.setdefault(section, []).append(text)
        facts, mentioned = [r.fid[i] for i in rows], [e]
        for code, section in _INCOMING_OF[t]:
            for i in r.incoming.get(e, ()):
                if r.pred[i] == code:
                    sections.setdefault(section, []).append(said[i])
                    facts.append(r.fid[i])
                    mentioned.append(r.subj[i])
        parts = [lead, *(["\n".join(infobox)] if infobox else [])]
        parts += [f"## {sec}\n\n" + " ".join(sections[sec]) for sec in sorted(sections, key=SECTION_ORDER.index)]
        r.out.add(url=r.article_url[e], site=ENCYCLOPEDIA[0], title=name, kind="article",
                  published=r.present - r.he[e] % 1500, text="\n\n".join(parts), entity=e,
                  entity_rows=mentioned + [r.obj[i] for i in rows if r.obj[i] >= 0], facts=facts)  # fmt: skip


@pytest.mark.parametrize(("seed", "outside_ascii"), [(1, False), (7, False), (5, True)])
def test_the_articles_are_the_ones_written_a_fact_at_a_time(seed, outside_ascii):
    """Every article of every block, put together in Arrow, is the article written a fact at
    a time: lead and aliases, infobox, sections and their order, facts and mentions."""
    world = fw.generate(seed=seed, entities=3_000)
    if outside_ascii:  # first letters Arrow leaves to ``sentence``
        names = world.entities.name.copy()
        for i in range(0, len(names), 4):
            names[i] = "ß" + names[i]
        world.entities.name[:] = names
        aliases = world.entities.aliases  # and several aliases (generated entities have one at most)
        for i in range(1, len(aliases), 3):
            aliases[i] = (*aliases[i], f"{names[i]} Jr", "Ōda")
    r = Renderer.of_world(world)
    pages = 0
    for b in range(r.entity_blocks):
        rows = range(b * r.block, min(r.n_entities, (b + 1) * r.block))
        r._gather(b, rows)
        r.out = PageRows()
        r.articles(rows)
        made = r.out.batch()
        r.out = PageRows()
        _articles_one_at_a_time(r, rows)
        want = r.out.batch()
        for name in want.schema.names:
            assert made.column(name).equals(want.column(name)), (b, name)
        pages += made.num_rows
    assert pages == len(world.entities)
    aliased = pa.concat_arrays([r.store.entities.column("aliases").combine_chunks()])
    assert pa.compute.sum(pa.compute.list_value_length(aliased)).as_py() > 100  # leads with aliases were checked


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


def test_is_name_by_hash_then_by_the_sorted_names():
    """``RenderStore.is_name`` rules a text out by its hash and checks every hash it finds
    against the sorted names: every name is one, a text one edit away is not, and a text whose
    hash is planted among the names' (a collision) is still not a name."""
    world = fw.generate(seed=3, entities=2_000)
    store = Renderer.of_world(world).store
    names = sorted(set(world.entities.name.tolist()))
    assert all(store.is_name(n) for n in names)
    edited = [n[:-1] + ("q" if n[-1] != "q" else "z") for n in names] + [n + " " for n in names[:50]] + ["", "ß"]
    edited = [x for x in edited if x not in set(names)]
    assert edited and not any(store.is_name(x) for x in edited)
    store._hashes = np.sort(np.concatenate([store.name_hashes(), [hash(x) for x in edited]]).astype(np.int64))
    assert not any(store.is_name(x) for x in edited)
    assert all(store.is_name(n) for n in names[::7])


def test_sentences_with_other_values_are_what_sentence_says():
    """``said_at`` with ``values`` (the conflicting and confusable pages' wrong dates and
    numbers): what ``sentence(…, value=…)`` says, the first and last day of years 1 to 9999
    included, and a text attribute given a value left to ``sentence``."""
    r = Renderer.of_world(fw.generate(seed=6, entities=3_000))
    rng = np.random.default_rng(6)
    checked = 0
    for b in range(r.entity_blocks):
        r._gather(b, range(b * r.block, min(r.n_entities, (b + 1) * r.block)))
        at = [i for i in range(r.own) if _ARTICLE_PRED[r.pred[i]][1] is None and r.value[i] is not None]
        values = []
        for i in at:
            v = r.value[i]
            if isinstance(v, bool) or not isinstance(v, int | float):
                values.append(None if rng.random() < 0.5 else "a given text")
            elif r.cols["v_date"][i] != NA_DATE:
                values.append(int(rng.choice([-719_162, 2_932_896, v + int(rng.integers(-6000, 6000))])))
            else:
                values.append(type(v)(v * rng.uniform(0.4, 1.6)))
        salts = rng.integers(0, 14, len(at)).tolist()
        got = r.said_at(at, salts, [False] * len(at), values)
        assert got == [r.sentence(i, salt=s, value=v) for i, s, v in zip(at, salts, values)]
        checked += sum(v is not None for v in values)
    assert checked > 1_000


@pytest.mark.parametrize("outside_ascii", [False, True])
def test_perturbation_pages_are_the_ones_written_a_sentence_at_a_time(monkeypatch, outside_ascii):
    """The forum, blog and profile pages, their sentences made together in Arrow, are the
    pages whose sentences ``sentence`` writes one at a time (names outside ASCII too). How the
    pages put the sentences together is pinned by ``test_web_pages.py::test_pages_are_pinned``."""
    world = fw.generate(seed=8, entities=2_500)
    if outside_ascii:
        names = world.entities.name.copy()
        for i in range(0, len(names), 3):
            names[i] = "É" + names[i][1:]
        world.entities.name[:] = names
    r = Renderer.of_world(world, pool=1.0)
    made = [r.render_block(b) for b in range(r.entity_blocks)]

    def one_at_a_time(self, at, salt, linked, values=None):
        values = values or [None] * len(at)
        return [self.sentence(i, salt=s, subject_plain=not k, value=v) for i, s, k, v in zip(at, salt, linked, values)]

    monkeypatch.setattr(Renderer, "said_at", one_at_a_time)
    for b, batch in enumerate(made):
        assert batch.equals(r.render_block(b)), b
    layers = pa.concat_arrays([m.column("layer") for m in made]).to_pylist()
    assert layers.count("conflict") > 100 and layers.count("confusable") > 100


def test_perturbation_pages_that_state_no_fact_are_written_too():
    """A block whose pool entities state no fact on their perturbation pages (no conflicting
    page, profiles of a name and a type only) still gets those pages as text."""
    r = Renderer.of_world(fw.generate(seed=2, entities=600), pool=1.0)
    rows = range(0, min(r.n_entities, r.block))
    r._gather(0, rows)
    for e in rows:
        r.by_subject[e] = []
    r.out = PageRows()
    r.perturbations(rows)
    texts, layers = r.out.cols["text"], r.out.cols["layer"]
    assert texts and all(type(t) is str for t in texts)
    profiles = [t for t, layer in zip(texts, layers) if layer == "confusable"]
    assert profiles and all(t.startswith("**") and t.endswith(". ") for t in profiles)
    assert "conflict" not in layers
