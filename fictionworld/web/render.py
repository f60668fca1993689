"""The template renderer: the graph written out as a web of pages, deterministically.

Authoritative pages (encyclopedia articles, organisations' own sites, news, directories) state
only graph facts and record them in ``fact_ids``; every fact is on its subject's article, so
coverage is 100 % by construction and checked by :func:`coverage`. Perturbation pages (forums,
blogs, aggregator profiles, near-miss fan pages) live in layers that episodes switch on with
the knob rates; none of them is ever authoritative.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

import numpy as np

from fictionworld.dates import NA_DATE, years_of
from fictionworld.schema import ENTITY_TYPES, PREDICATES, RELATIONS, DType
from fictionworld.seeding import hash_text, mix64, mix64_int
from fictionworld.surface import format_date, format_float, format_int, format_money
from fictionworld.tables import TYPE_NAMES
from fictionworld.web.pages import PageTable
from fictionworld.web.perturb import PerturbationPages
from fictionworld.web.phrasing import (
    ATTRIBUTE_SENTENCES,
    INCOMING,
    LABELS,
    LIST_BY_ATTRIBUTE,
    LIST_BY_RELATION,
    LIST_BY_YEAR,
    NEWS_SITES,
    RELATION_SENTENCES,
    RELATION_SENTENCES_ENDED,
    RELATION_SENTENCES_UNDATED,
    SECTION,
    TYPE_LABEL,
)
from fictionworld.web.text import DTYPE, a_or_an, article_slug, date_of, plain_text, slug

__all__ = ["render_pages", "RENDERER", "ENCYCLOPEDIA", "DIRECTORY", "coverage", "article_slug", "plain_text"]

RENDERER = "template-v0"
ENCYCLOPEDIA = ("Fictopedia", "https://en.fictopedia.org/wiki/")
DIRECTORY = ("Open Registry", "https://www.openregistry.info/list/")

_COUNT_LIKE = {"population", "employees", "students", "attendance", "stadium_capacity"}
_MONEY = {"revenue_usd", "box_office_usd"}
_INFOBOX_UNIT = {"area_km2": " km²", "elevation_m": " m", "height_cm": " cm", "runtime_min": " min"}
_SECTION_ORDER = (
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


# Per predicate code: (name, is relation, temporal, undated / ended / plain sentence pools).
_PRED_TABLE = [
    (
        p,
        p in RELATIONS,
        p in RELATIONS and RELATIONS[p].temporal,
        RELATION_SENTENCES_UNDATED.get(p, ()),
        RELATION_SENTENCES_ENDED.get(p, ()),
        RELATION_SENTENCES.get(p, ()),
    )
    for p in PREDICATES
]


class _Rows:
    """Accumulates page rows in the PageTable column layout."""

    def __init__(self) -> None:
        self.cols: dict[str, list] = defaultdict(list)
        self.urls: set[str] = set()

    def unique_url(self, url: str) -> str:
        if url in self.urls:
            n = 2
            while f"{url}-{n}" in self.urls:
                n += 1
            url = f"{url}-{n}"
        self.urls.add(url)
        return url

    def add(self, *, url, site, title, kind, published, text, entity=-1, entity_rows=(), facts=(), layer="", u=0.0,
            contradicts=()):  # fmt: skip
        c = self.cols
        c["url"].append(url)
        c["site"].append(site)
        c["title"].append(title)
        c["kind"].append(kind)
        c["layer"].append(layer)
        c["published"].append(int(published))
        c["text"].append(text)
        c["entity"].append(int(entity))
        c["entity_rows"].append(sorted(set(int(x) for x in entity_rows)))
        c["fact_ids"].append(sorted(set(int(x) for x in facts)))
        c["contradicts"].append(sorted(set(int(x) for x in contradicts)))
        c["u"].append(float(u))


class _Renderer(PerturbationPages):
    def __init__(self, world, pool: float, progress: Callable[[str], None] | None):
        self.world, self.pool_share, self.progress = world, pool, progress or (lambda _s: None)
        e, f = world.entities, world.facts
        self.seed = world.seed
        self.present = int(np.int32((np.datetime64(world.spec.present) - np.datetime64("1970-01-01")).astype(int)))
        self.names: list[str] = e.name.tolist()
        self.types: list[str] = [TYPE_NAMES[t] for t in e.type_code.tolist()]
        self.aliases: list[tuple] = e.aliases.tolist()
        self.fid = f.id.tolist()
        self.subj = f.subject.tolist()
        self.pred = f.predicate.tolist()
        self.obj = f.object.tolist()
        self.start = f.start.tolist()
        self.end = f.end.tolist()
        self.h = mix64(f.id, self.seed).tolist()
        self.he = mix64(np.arange(len(e)), self.seed + 1).tolist()
        self.value = self._values()
        order = np.argsort(f.subject, kind="stable")
        self.by_subject = np.split(order, np.searchsorted(f.subject[order], np.arange(1, len(e))))
        inc = np.isin(f.predicate, [PREDICATES.index(p) for p in INCOMING]) & (f.object >= 0)
        rows = np.flatnonzero(inc)
        rows = rows[np.argsort(f.object[rows], kind="stable")]
        self.incoming: dict[int, list[int]] = defaultdict(list)
        for r, o in zip(rows.tolist(), f.object[rows].tolist()):
            self.incoming[o].append(r)
        self.out = _Rows()
        self.article_url = self._article_urls()

    # -- values --------------------------------------------------------------------------
    def _values(self) -> list:
        return self.world.facts.values(dates="days")  # dates stay day numbers: ``date_of`` caches them

    def fmt(self, p: str, v, h: int, *, infobox: bool = False) -> str:
        dtype = DTYPE[p]
        if dtype == DType.DATE:
            return format_date(date_of(v), h % 4)
        if dtype == DType.INT:
            if p in _MONEY:
                return format_money(v, h)
            s = format_int(v, h % 3 if p in _COUNT_LIKE else h % 2)
            return s + _INFOBOX_UNIT.get(p, "") if infobox else s
        if dtype == DType.FLOAT:
            if p == "price_usd":
                return format_money(v, h, cents=True)
            s = format_float(v, 1, h)
            return s + _INFOBOX_UNIT.get(p, "") if infobox else s
        return str(v)

    def link(self, row: int) -> str:
        return f"[{self.names[row]}]({self.article_url[row]})"

    def sentence(self, r: int, *, salt: int = 0, subject_plain: bool = True, value=None) -> str:
        """One fact as a sentence. ``value`` overrides the stated value (conflicting pages)."""
        p, is_rel, temporal, undated, ended, plain = _PRED_TABLE[self.pred[r]]
        h = self.h[r] + salt
        s = self.names[self.subj[r]] if subject_plain else self.link(self.subj[r])
        if is_rel:
            o = self.obj[r]
            o_text = self.link(o) if subject_plain else self.names[o]
            st, en = self.start[r], self.end[r]
            if temporal and st == NA_DATE:
                pool = undated
            elif en != NA_DATE and ended:
                pool = ended
            else:
                pool = plain
            t = pool[h % len(pool)]
            dv = (h >> 5) % 4
            return t.format(
                s=s,
                o=o_text,
                start=format_date(date_of(st), dv) if st != NA_DATE else "",
                end=format_date(date_of(en), dv) if en != NA_DATE else "",
            )
        v = self.value[r] if value is None else value
        pool = ATTRIBUTE_SENTENCES[p]
        vt = self.fmt(p, v, h >> 5)
        t = pool[h % len(pool)]
        out = t.format(s=s, v=vt, a=a_or_an(vt))
        return out[0].upper() + out[1:]

    # -- urls ----------------------------------------------------------------------------
    def _article_urls(self) -> list[str]:
        base = ENCYCLOPEDIA[1]
        slugs = [article_slug(n) for n in self.names]
        seen: dict[str, int] = defaultdict(int)
        for s in slugs:
            seen[s] += 1
        out, used = [], set()
        for i, s in enumerate(slugs):
            if seen[s] > 1:
                s = f"{s}_({self.types[i]})"
                k = 2
                while s in used:
                    s = f"{article_slug(self.names[i])}_({self.types[i]}_{k})"
                    k += 1
            used.add(s)
            out.append(base + s)
        self.out.urls.update(out)
        return out

    def edited(self, key: int, span: int) -> int:
        return self.present - mix64_int(key, self.seed + span) % span

    # -- authoritative pages -------------------------------------------------------------
    def articles(self) -> None:
        self.progress("pages: articles")
        for e in range(len(self.names)):
            t = self.types[e]
            rows = self.by_subject[e].tolist()
            he = self.he[e]
            lead = f"**{self.names[e]}** is {a_or_an(TYPE_LABEL[t])} {TYPE_LABEL[t]}."
            if self.aliases[e]:
                lead += f" Also known as: {', '.join(self.aliases[e])}."
            infobox, sections = [], defaultdict(list)
            facts = list(self.fid[r] for r in rows)
            for r in rows:
                p = PREDICATES[self.pred[r]]
                if p in RELATIONS:
                    sections[SECTION[p]].append(self.sentence(r))
                elif (self.h[r] >> 20) & 1:
                    label = LABELS[p][(self.h[r] >> 21) % len(LABELS[p])]
                    infobox.append(f"- **{label}:** {self.fmt(p, self.value[r], self.h[r] >> 24, infobox=True)}")
                else:
                    sections["Overview"].append(self.sentence(r))
            mentioned = [e]
            for p, (otype, section) in INCOMING.items():
                if otype != t:
                    continue
                for r in self.incoming.get(e, ()):
                    if PREDICATES[self.pred[r]] == p:
                        sections[section].append(self.sentence(r, subject_plain=False))
                        facts.append(self.fid[r])
                        mentioned.append(self.subj[r])
            parts = [lead]
            if infobox:
                parts.append("\n".join(infobox))
            for name in _SECTION_ORDER:
                if sections.get(name):
                    parts.append(f"## {name}\n\n" + " ".join(sections[name]))
            mentioned += [self.obj[r] for r in rows if self.obj[r] >= 0]
            self.out.add(
                url=self.article_url[e],
                site=ENCYCLOPEDIA[0],
                title=self.names[e],
                kind="article",
                published=self.present - he % 1500,
                text="\n\n".join(parts),
                entity=e,
                entity_rows=mentioned,
                facts=facts,
            )

    def org_sites(self) -> None:
        self.progress("pages: organisation sites")
        web = PREDICATES.index("website")
        for e, t in enumerate(self.types):
            if ENTITY_TYPES[t].kind != "organisation":
                continue
            rows = self.by_subject[e].tolist()
            site = next((self.value[r] for r in rows if self.pred[r] == web), None)
            if not site:
                continue
            preds = [PREDICATES[self.pred[r]] for r in rows]
            about = [r for r, p in zip(rows, preds) if p not in RELATIONS or SECTION[p] == "Location"]
            history = [r for r, p in zip(rows, preds) if p in ("founded", "founded_by") or SECTION.get(p) == "History"]
            incoming = self.incoming.get(e, [])
            leaders = [r for r in incoming if PREDICATES[self.pred[r]] == "ceo_of"]
            founders = [r for r, p in zip(rows, preds) if p == "founded_by"]
            players = [r for r in incoming if PREDICATES[self.pred[r]] == "member_of"]
            pages = [("about", f"About {self.names[e]}", "org_about", about, [])]
            pages.append(("history", f"Our history – {self.names[e]}", "org_history", history, []))
            if leaders or founders:
                pages.append(("leadership", f"Leadership – {self.names[e]}", "org_leadership", founders, leaders))
            if players:
                pages.append(("squad", f"Squad and former players – {self.names[e]}", "org_people", [], players))
            host = site.split("//", 1)[-1]
            for i, (path, title, kind, own, inc) in enumerate(pages):
                sent = [self.sentence(r, salt=7 + i) for r in own]
                sent += [self.sentence(r, salt=7 + i, subject_plain=False) for r in inc]
                if not sent:
                    continue
                self.out.add(
                    url=self.out.unique_url(f"{site}/{path}"),
                    site=host,
                    title=title,
                    kind=kind,
                    published=self.edited(e * 8 + i, 700),
                    text=" ".join(sent),
                    entity=e,
                    entity_rows=[e, *(self.obj[r] for r in own if self.obj[r] >= 0), *(self.subj[r] for r in inc)],
                    facts=[self.fid[r] for r in own + inc],
                )

    def _news(self, key: int, title: str, published: int, text: str, entity: int, ents, facts) -> None:
        name, base = NEWS_SITES[key % len(NEWS_SITES)]
        d = date_of(published)
        url = self.out.unique_url(f"{base}/{d.year}/{d.month:02d}/{d.day:02d}/{slug(title)}")
        self.out.add(url=url, site=name, title=title, kind="news", published=published, text=text, entity=entity,
                     entity_rows=ents, facts=facts)  # fmt: skip

    def news(self) -> None:
        self.progress("pages: news")
        ev_end = PREDICATES.index("end_date")
        for e, t in enumerate(self.types):
            if t != "event":
                continue
            rows = self.by_subject[e].tolist()
            inc = [r for r in self.incoming.get(e, []) if PREDICATES[self.pred[r]] == "participated_in"]
            end = next((self.value[r] for r in rows if self.pred[r] == ev_end), self.present)
            city = next((self.obj[r] for r in rows if PREDICATES[self.pred[r]] == "held_in"), -1)
            title = [f"{self.names[e]} wraps up", f"Report: {self.names[e]}", f"Looking back at {self.names[e]}"]
            title = title[e % 3] + (f" in {self.names[city]}" if city >= 0 and e % 3 == 0 else "")
            text = " ".join(
                [self.sentence(r, salt=3) for r in rows] + [self.sentence(r, salt=3, subject_plain=False) for r in inc]
            )
            ents = [e, *(self.obj[r] for r in rows if self.obj[r] >= 0), *(self.subj[r] for r in inc)]
            self._news(e, title, min(end + 1, self.present), text, e, ents, [self.fid[r] for r in rows + inc])
        won = PREDICATES.index("won")
        rows = [r for r in range(len(self.pred)) if self.pred[r] == won and self.start[r] != NA_DATE]
        groups: dict[tuple[int, int], list[int]] = defaultdict(list)
        for r in rows:
            groups[(self.obj[r], date_of(self.start[r]).year)].append(r)
        for (award, year), rs in sorted(groups.items()):
            title = f"{self.names[award]} {year}: recipients announced"
            text = " ".join(
                self.sentence(r, salt=5, subject_plain=False).replace(
                    f"the {self.names[award]}", f"the [{self.names[award]}]({self.article_url[award]})"
                )
                for r in rs
            )
            published = max(self.start[r] for r in rs)
            self._news(
                award + year,
                title,
                published,
                text,
                award,
                [award, *(self.subj[r] for r in rs)],
                [self.fid[r] for r in rs],
            )
        acq = PREDICATES.index("acquired_by")
        for r in range(len(self.pred)):
            if self.pred[r] != acq or self.start[r] == NA_DATE:
                continue
            s, o = self.subj[r], self.obj[r]
            title = f"{self.names[o]} acquires {self.names[s]}"
            text = self.sentence(r, salt=9).replace(self.names[s], f"[{self.names[s]}]({self.article_url[s]})", 1)
            self._news(s, title, self.start[r], text, s, [s, o], [self.fid[r]])

    def lists(self) -> None:
        self.progress("pages: directories")
        f, e = self.world.facts, self.world.entities
        groups: dict[str, tuple[list[int], list[int]]] = {}
        for (p, stype), title in LIST_BY_RELATION.items():
            m = (f.predicate == PREDICATES.index(p)) & (e.type_code[f.subject] == TYPE_NAMES.index(stype))
            rows = np.flatnonzero(m)
            for o in np.unique(f.object[rows]).tolist():
                rs = rows[f.object[rows] == o]
                groups[title.format(o=self.names[o])] = (f.subject[rs].tolist(), f.id[rs].tolist(), o)
        for (t, attr), title in LIST_BY_ATTRIBUTE.items():
            subj, vals = self.world.attribute(t, attr)
            ids = f.id[(f.predicate == PREDICATES.index(attr)) & (e.type_code[f.subject] == TYPE_NAMES.index(t))]
            for v in sorted(set(vals.tolist())):
                m = vals == v
                groups[title.format(v=v)] = (subj[m].tolist(), ids[m].tolist(), -1)
        for (t, attr), title in LIST_BY_YEAR.items():
            subj, vals = self.world.attribute(t, attr)
            years = years_of(vals.astype(np.int64))
            for y in np.unique(years).tolist():
                groups[title.format(v=y)] = (subj[years == y].tolist(), [], -1)
        for title in sorted(groups):
            members, facts, about = groups[title]
            members = sorted(set(members), key=lambda r: (self.names[r], r))
            text = "\n".join(f"- {self.link(r)}" for r in members)
            self.out.add(
                url=self.out.unique_url(DIRECTORY[1] + slug(title)),
                site=DIRECTORY[0],
                title=title,
                kind="list",
                published=self.edited(hash_text(title), 400),
                text=text,
                entity=about,
                entity_rows=members + ([about] if about >= 0 else []),
                facts=facts,
            )

    def run(self) -> PageTable:
        self.articles()
        self.org_sites()
        self.news()
        self.lists()
        self.perturbations()
        return PageTable.from_rows(dict(self.out.cols))


def render_pages(world, *, pool: float = 0.25, progress: Callable[[str], None] | None = None) -> PageTable:
    """All pages of ``world``: same world, same pages (and order) on any machine."""
    return _Renderer(world, pool, progress).run()


def coverage(world, pages: PageTable) -> float:
    """Share of the world's facts stated by at least one authoritative page."""
    import pyarrow.compute as pc

    auth = pc.equal(pages.table.column("layer"), "")
    ids = pc.list_flatten(pages.table.filter(auth).column("fact_ids")).to_numpy()
    return float(np.isin(world.facts.id, ids).mean()) if len(world.facts) else 1.0
