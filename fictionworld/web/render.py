"""The template renderer: the graph written out as a web of pages, deterministically.

Authoritative pages (encyclopedia articles, organisations' own sites, news, directories) state
only graph facts and record them in ``fact_ids``; every fact is on its subject's article, so
coverage is 100 % by construction and checked by :func:`coverage`. Perturbation pages (forums,
blogs, aggregator profiles, near-miss fan pages) live in layers that episodes switch on with
the knob rates; none of them is ever authoritative.
"""

from __future__ import annotations

import functools
import gc
import string
from collections import defaultdict
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fictionworld.dates import NA_DATE, years_of
from fictionworld.schema import PREDICATES, RELATIONS, DType
from fictionworld.seeding import hash_text, mix64, mix64_int
from fictionworld.surface import format_date, format_float, format_int, format_money
from fictionworld.tables import NA_INT, TYPE_NAMES
from fictionworld.web.articles import ENCYCLOPEDIA, ArticlePages
from fictionworld.web.news import NewsPages
from fictionworld.web.page_rows import PageRows
from fictionworld.web.pages import PAGE_SCHEMA, PageTable
from fictionworld.web.perturb import PerturbationPages
from fictionworld.web.phrasing import (
    ATTRIBUTE_SENTENCES,
    RELATION_SENTENCES,
    RELATION_SENTENCES_ENDED,
    RELATION_SENTENCES_UNDATED,
)
from fictionworld.web.sentences import BlockTexts
from fictionworld.web.store import RenderStore, write_store
from fictionworld.web.text import DTYPE, a_or_an, article_slug, date_of, plain_text, slug
from fictionworld.web.urls import unique_urls, with_urls

__all__ = [
    "render_pages",
    "Renderer",
    "RENDERER",
    "ENCYCLOPEDIA",
    "DIRECTORY",
    "coverage",
    "article_slug",
    "plain_text",
]

RENDERER = "template-v2"  # v2: "an ice hockey team" (the article before a sport)
DIRECTORY = ("Open Registry", "https://www.openregistry.info/list/")

_COUNT_LIKE = {"population", "employees", "students", "attendance", "stadium_capacity"}
_MONEY = {"revenue_usd", "box_office_usd"}
_INFOBOX_UNIT = {"area_km2": " km²", "elevation_m": " m", "height_cm": " cm", "runtime_min": " min"}


def _positional(template: str, fields: tuple[str, ...]) -> Callable[..., str]:
    """``template.format`` with its named fields turned into positions in ``fields``: the same
    text from ``f(*values)`` without a dictionary of keyword arguments per call."""
    out = []
    for literal, name, spec, conversion in string.Formatter().parse(template):
        out.append(literal.replace("{", "{{").replace("}", "}}"))
        if name is not None:
            out.append(f"{{{fields.index(name)}{'!' + conversion if conversion else ''}{':' + spec if spec else ''}}}")
    return "".join(out).format


def _relation_pool(pool: tuple[str, ...]) -> tuple[tuple[Callable[..., str], bool], ...]:
    """A relation's sentence templates as (format of s, o, start, end; whether it states a date)."""
    return tuple((_positional(t, ("s", "o", "start", "end")), "{start}" in t or "{end}" in t) for t in pool)


# Per predicate code: (name, is relation, temporal, undated / ended / plain sentence pools, and
# each attribute template as (format of s, v, a; whether it says "a"/"an")).
_PRED_TABLE = [
    (
        p,
        p in RELATIONS,
        p in RELATIONS and RELATIONS[p].temporal,
        _relation_pool(RELATION_SENTENCES_UNDATED.get(p, ())),
        _relation_pool(RELATION_SENTENCES_ENDED.get(p, ())),
        _relation_pool(RELATION_SENTENCES.get(p, ())),
        tuple((_positional(t, ("s", "v", "a")), "{a}" in t) for t in ATTRIBUTE_SENTENCES.get(p, ())),
    )
    for p in PREDICATES
]


# Per predicate: how its values are written ("date", "money", "cents", "int", "float" or "text"),
# how many integer formats it may take, and the infobox's unit.
_FORMAT = {
    p: (
        {DType.DATE: "date", DType.INT: "money" if p in _MONEY else "int",
         DType.FLOAT: "cents" if p == "price_usd" else "float"}.get(DTYPE[p], "text"),
        3 if p in _COUNT_LIKE else 2,
        _INFOBOX_UNIT.get(p, ""),
    )
    for p in PREDICATES
    if p not in RELATIONS
}  # fmt: skip


class Renderer(ArticlePages, BlockTexts, NewsPages, PerturbationPages):
    """Renders a world's pages block by block. Pages come in a fixed order: entity blocks of
    ``spec.web.block`` entities (each: articles, organisation sites, news, perturbation pages
    of its entities), then the directory blocks; every block depends only on the world, so any
    split of the blocks over processes or machines renders the same web.

    It reads a :class:`~fictionworld.web.store.RenderStore` (:meth:`of_world` builds one in
    memory; sharded builds memory-map one from disk) and holds only the block at hand: its
    facts, the facts pointing at its entities, and the names and URLs those mention, keyed by
    fact row and entity row."""

    def __init__(self, store: RenderStore, progress: Callable[[str], None] | None = None):
        self.store, self.progress = store, progress or (lambda _s: None)
        self.seed, self.present, self.block = store.seed, store.present, store.block
        self.n_entities = store.n_entities
        self.out = PageRows()

    @classmethod
    def of_world(cls, world, pool: float | None = None, progress: Callable[[str], None] | None = None) -> Renderer:
        """A renderer of ``world`` over a render store built in memory."""
        return cls(write_store(world, pool=pool), progress)

    # -- the plan ------------------------------------------------------------------------
    @staticmethod
    def count_blocks(world) -> int:
        """Number of blocks of ``world``: its entity blocks, then one directory block per eight
        entity blocks (at least one)."""
        entity_blocks = -(-len(world.entities) // world.spec.web.block)
        return entity_blocks + max(1, entity_blocks // 8)

    @property
    def entity_blocks(self) -> int:
        return self.store.entity_blocks

    @property
    def blocks(self) -> int:
        return self.store.blocks

    def render_block(self, b: int) -> pa.RecordBatch:
        """The pages of block ``b`` (0 <= b < ``blocks``), their URLs as asked for.

        Without Python's cyclic garbage collector: a block makes about a million objects, and
        the collections they set off took 7–9 % of the rendering (at 1M entities); a block
        makes no reference cycles (``tests/test_article_sentences.py``), so reference counting
        frees all of it."""
        enabled = gc.isenabled()
        gc.disable()
        try:
            return self._render_block(b)
        finally:
            if enabled:
                gc.enable()

    def _render_block(self, b: int) -> pa.RecordBatch:
        self.out = PageRows()
        if b < self.entity_blocks:
            rows = range(b * self.block, min(self.n_entities, (b + 1) * self.block))
            self._gather(b, rows)
            self.articles(rows)
            self.org_sites(rows)
            self.news(rows)
            self.perturbations(rows)
        else:
            j, d = b - self.entity_blocks, self.blocks - self.entity_blocks
            self.lists(self._gather_lists(self.store.list_slice(j, d)))
        return self.out.batch()

    # -- what a block reads --------------------------------------------------------------
    def _gather(self, b: int, rows: range) -> None:
        """Load block ``b``: its facts (by subject), the facts pointing at its entities (by
        object), and every entity they mention.

        A fact is known by its position ``i`` in the block (its own facts, then the incoming
        ones): ``self.fid[i]``, ``self.pred[i]`` … are lists, built by NumPy in one go."""
        own, inc = self.store.facts("by-subject", b), self.store.facts("by-object", b)
        cols = {name: np.concatenate([own.column(name).to_numpy(), inc.column(name).to_numpy()])
                for name in ("row", "id", "subject", "predicate", "object", "start", "end", "v_int", "v_float", "v_date")}  # fmt: skip
        for attr, name in (("fid", "id"), ("subj", "subject"), ("pred", "predicate"), ("obj", "object"), ("start", "start"), ("end", "end")):  # fmt: skip
            setattr(self, attr, cols[name].tolist())
        self.h64 = mix64(cols["id"], self.seed)
        self.h = self.h64.tolist()
        self.v_text = pa.chunked_array([*own.column("v_text").chunks, *inc.column("v_text").chunks], pa.string()).combine_chunks()  # fmt: skip
        self.value = _values(cols, self.v_text.to_pylist())
        k = own.num_rows
        self.cols, self.own = cols, k
        # Own facts come by subject, incoming ones by object (then fact row): runs of positions.
        cut = np.searchsorted(cols["subject"][:k], np.arange(rows.start, rows.stop + 1)).tolist()
        self.by_subject = {e: list(range(cut[j], cut[j + 1])) for j, e in enumerate(rows)}
        inc_objs, firsts = np.unique(cols["object"][k:], return_index=True)
        bounds = (np.append(firsts, len(cols["object"]) - k) + k).tolist()
        self.incoming = {o: list(range(bounds[j], bounds[j + 1])) for j, o in enumerate(inc_objs.tolist())}
        self.awards = _award_years(cols["row"][k:], cols["predicate"][k:], cols["object"][k:], cols["start"][k:], k)
        self.he = dict(zip(rows, mix64(np.arange(rows.start, rows.stop), self.seed + 1).tolist()))
        objs = cols["object"]
        mentioned = np.concatenate([np.arange(rows.start, rows.stop), objs[objs >= 0], cols["subject"][k:]])
        self._gather_entities(mentioned, rows)
        block = self.store.entities.slice(rows.start, len(rows))
        self.aliases = dict(zip(rows, block.column("aliases").to_pylist()))
        self.in_pool = block.column("pool").to_numpy(zero_copy_only=False)

    def _gather_entities(self, rows: np.ndarray, block: range | None = None) -> None:
        """The names, types, URLs and links of entity rows ``rows``: as Arrow arrays (for the
        texts made in Arrow), and as mappings by row for the pages written in Python. With
        ``block`` (an entity block's rows), those mappings hold the block's entities and make
        the others' entries on first use: most of the entities a block mentions are only ever
        named in its articles' Arrow-made sentences."""
        rows = np.unique(rows)
        t = self.store.entity_rows(rows)
        name, url = t.column("name").combine_chunks(), t.column("url").combine_chunks()
        types = _type_names().take(t.column("type").combine_chunks())
        # "[name](url)", joined by Arrow for every entity at once
        links = pc.binary_join_element_wise("[", name, "](", url, ")", "")
        self.mentioned, self.name_array, self.link_array = rows, name, links
        if block is None:
            r = rows.tolist()
            self.names, self.types = dict(zip(r, name.to_pylist())), dict(zip(r, types.to_pylist()))
            self.article_url, self.links = dict(zip(r, url.to_pylist())), dict(zip(r, links.to_pylist()))
        else:
            a = int(rows.searchsorted(block.start))
            self.names, self.types, self.article_url, self.links = (
                _ByRow(rows, values, block, a) for values in (name, types, url, links)
            )

    def _gather_lists(self, lists: pa.Table) -> list[tuple[str, list[int], list[int], int]]:
        members = lists.column("members").to_pylist()
        flat = (
            lists.column("members").combine_chunks().flatten().to_numpy() if lists.num_rows else np.zeros(0, np.int64)
        )
        about = lists.column("about").to_pylist()
        self._gather_entities(np.concatenate([flat.astype(np.int64), np.array([a for a in about if a >= 0], np.int64)]))
        return list(zip(lists.column("title").to_pylist(), members, lists.column("facts").to_pylist(), about))

    # -- values --------------------------------------------------------------------------
    def fmt(self, p: str, v, h: int, *, infobox: bool = False) -> str:
        kind, int_formats, unit = _FORMAT[p]
        if kind == "date":
            return format_date(date_of(v), h % 4)
        if kind == "int":
            s = format_int(v, h % int_formats)
        elif kind == "float":
            s = format_float(v, 1, h)
        elif kind == "money":
            return format_money(v, h)
        elif kind == "cents":
            return format_money(v, h, cents=True)
        else:
            return str(v)
        return s + unit if infobox else s

    def sentence(self, r: int, *, salt: int = 0, subject_plain: bool = True, value=None) -> str:
        """One fact (its position in the block) as a sentence. ``value`` overrides the stated
        value (conflicting pages)."""
        p, is_rel, temporal, undated, ended, plain, attribute = _PRED_TABLE[self.pred[r]]
        h = self.h[r] + salt
        if is_rel:
            if subject_plain:
                s, o_text = self.names[self.subj[r]], self.links[self.obj[r]]
            else:
                s, o_text = self.links[self.subj[r]], self.names[self.obj[r]]
            st, en = self.start[r], self.end[r]
            if temporal and st == NA_DATE:
                pool = undated
            elif en != NA_DATE and ended:
                pool = ended
            else:
                pool = plain
            say, dated = pool[h % len(pool)]
            if not dated:
                return say(s, o_text)
            dv = (h >> 5) % 4
            return say(
                s,
                o_text,
                format_date(date_of(st), dv) if st != NA_DATE else "",
                format_date(date_of(en), dv) if en != NA_DATE else "",
            )
        s = self.names[self.subj[r]] if subject_plain else self.links[self.subj[r]]
        v = self.value[r] if value is None else value
        vt = self.fmt(p, v, h >> 5)
        say, uses_a = attribute[h % len(attribute)]
        out = say(s, vt, a_or_an(vt)) if uses_a else say(s, vt)
        return out[0].upper() + out[1:]

    # -- urls ----------------------------------------------------------------------------
    def edited(self, key: int, span: int) -> int:
        return self.present - mix64_int(key, self.seed + span) % span

    # -- directories ---------------------------------------------------------------------
    def lists(self, groups) -> None:
        for title, members, facts, about in groups:
            # (never the entity it is about: ``PageTable.entries`` counts on it)
            members = sorted(set(members) - {about}, key=lambda r: (self.names[r], r))
            text = "\n".join(["- " + self.links[r] for r in members])
            self.out.add(
                url=DIRECTORY[1] + slug(title),
                site=DIRECTORY[0],
                title=title,
                kind="list",
                published=self.edited(hash_text(title), 400),
                text=text,
                entity=about,
                entity_rows=members + ([about] if about >= 0 else []),
                facts=facts,
            )


@functools.cache
def _type_names() -> pa.Array:
    """The entity types' names, by type code (made on first use: see ``sentences._strings``)."""
    return pa.array(TYPE_NAMES, pa.string())


class _ByRow(dict):
    """Entity row -> its value in ``values`` (of the sorted entity rows ``rows``): the rows of
    ``block`` (at ``rows[first:]``) read at once, any other on first use."""

    def __init__(self, rows: np.ndarray, values: pa.Array, block: range, first: int):
        super().__init__(zip(block, values.slice(first, len(block)).to_pylist()))
        self.rows, self.values = rows, values

    def __missing__(self, row: int):
        i = int(self.rows.searchsorted(row))
        if i == len(self.rows) or self.rows[i] != row:
            raise KeyError(row)
        value = self[row] = self.values[i].as_py()
        return value


def render_pages(world, *, pool: float | None = None, progress: Callable[[str], None] | None = None) -> PageTable:
    """All pages of ``world`` in one process: same world, same pages (and order) on any machine,
    and the same as a sharded build (:mod:`fictionworld.web.shards`)."""
    r = Renderer.of_world(world, pool, progress)
    batches = []
    for b in range(r.blocks):
        if b == 0:
            r.progress("pages: entity blocks")
        elif b == r.entity_blocks:
            r.progress("pages: directories")
        batches.append(r.render_block(b))
    table = pa.Table.from_batches(batches, schema=PAGE_SCHEMA)
    table = with_urls(table, unique_urls(table.column("url"), table.column("kind")))
    return PageTable(table.combine_chunks())


def _values(cols: dict, text: list) -> list:
    """Each fact's literal value, as :meth:`FactTable.values` decodes it (dates as day numbers)."""
    vals = np.empty(len(text), dtype=object)
    vals[:] = text
    for name, isset in (("v_date", cols["v_date"] != NA_DATE), ("v_float", ~np.isnan(cols["v_float"])),
                        ("v_int", cols["v_int"] != NA_INT)):  # fmt: skip
        idx = np.flatnonzero(isset)
        vals[idx] = cols[name][idx].tolist()  # Python ints and floats, as the formatters expect
    return vals.tolist()


def _award_years(rows, pred, obj, start, first: int) -> dict[int, list[tuple[int, list[int]]]]:
    """Award row -> [(year, positions of that year's recipients' facts)], by year; the facts
    are the block's incoming ones, at positions ``first``… (``rows``: their fact rows)."""
    m = (pred == PREDICATES.index("won")) & (start != NA_DATE) & (obj >= 0)
    at = np.flatnonzero(m) + first
    rows, obj, years = rows[m], obj[m], years_of(start[m].astype(np.int64))
    order = np.lexsort((rows, years, obj))
    out: dict[int, list[tuple[int, list[int]]]] = defaultdict(list)
    for i, o, y in zip(at[order].tolist(), obj[order].tolist(), years[order].tolist()):
        group = out[o]
        if not group or group[-1][0] != y:
            group.append((y, []))
        group[-1][1].append(i)
    return out


def coverage(world, pages: PageTable) -> float:
    """Share of the world's facts stated by at least one authoritative page."""
    auth = pc.equal(pages.table.column("layer"), "")
    ids = pc.list_flatten(pages.table.filter(auth).column("fact_ids")).to_numpy()
    return float(np.isin(world.facts.id, ids).mean()) if len(world.facts) else 1.0
