"""The news and organisation pages of the template web: each organisation's own site (about,
history, leadership, squad) and the news of events, award years and acquisitions. Their
sentences are made in Arrow, after the pages are planned (``Renderer.said_at``)."""

from __future__ import annotations

from fictionworld.dates import NA_DATE
from fictionworld.schema import ENTITY_TYPES, PREDICATES, RELATIONS
from fictionworld.web.phrasing import NEWS_SITES, SECTION
from fictionworld.web.text import date_of, slug

__all__ = ["NewsPages"]


class NewsPages:
    """Mixin of the template renderer: organisation sites and news pages of a block."""

    def org_sites(self, entities: range) -> None:
        web = PREDICATES.index("website")
        # The pages planned first, then their sentences made at once (``said_at``).
        planned: list[tuple] = []
        at: list[int] = []
        salts: list[int] = []
        links: list[bool] = []
        for e in entities:
            if ENTITY_TYPES[self.types[e]].kind != "organisation":
                continue
            rows = self.by_subject[e]
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
                planned.append((e, site, host, i, path, title, kind, own, inc))
                for rows, linked in ((own, False), (inc, True)):
                    at += rows
                    salts += [7 + i] * len(rows)
                    links += [linked] * len(rows)
        said = iter(self.said_at(at, salts, links))
        for e, site, host, i, path, title, kind, own, inc in planned:
            if not own and not inc:
                continue
            self.out.add(
                url=f"{site}/{path}",
                site=host,
                title=title,
                kind=kind,
                published=self.edited(e * 8 + i, 700),
                text=" ".join([next(said) for _ in range(len(own) + len(inc))]),
                entity=e,
                entity_rows=[e, *(self.obj[r] for r in own if self.obj[r] >= 0), *(self.subj[r] for r in inc)],
                facts=[self.fid[r] for r in own + inc],
            )

    def _news(self, key: int, title: str, published: int, text: str, entity: int, ents, facts) -> None:
        name, base = NEWS_SITES[key % len(NEWS_SITES)]
        d = date_of(published)
        url = f"{base}/{d.year}/{d.month:02d}/{d.day:02d}/{slug(title)}"
        self.out.add(url=url, site=name, title=title, kind="news", published=published, text=text, entity=entity,
                     entity_rows=ents, facts=facts)  # fmt: skip

    def news(self, entities: range) -> None:
        ev_end, held_in = PREDICATES.index("end_date"), PREDICATES.index("held_in")
        part, acq = PREDICATES.index("participated_in"), PREDICATES.index("acquired_by")
        events = []
        for e in entities:
            if self.types[e] != "event":
                continue
            rows = self.by_subject[e]
            events.append((e, rows, [r for r in self.incoming.get(e, []) if self.pred[r] == part]))
        at = [r for _, rows, inc in events for r in rows + inc]
        linked = [x for _, rows, inc in events for x in [False] * len(rows) + [True] * len(inc)]
        said = iter(self.said_at(at, [3] * len(at), linked))
        for e, rows, inc in events:
            end = next((self.value[r] for r in rows if self.pred[r] == ev_end), self.present)
            city = next((self.obj[r] for r in rows if self.pred[r] == held_in), -1)
            title = [f"{self.names[e]} wraps up", f"Report: {self.names[e]}", f"Looking back at {self.names[e]}"]
            title = title[e % 3] + (f" in {self.names[city]}" if city >= 0 and e % 3 == 0 else "")
            text = " ".join([next(said) for _ in range(len(rows) + len(inc))])
            ents = [e, *(self.obj[r] for r in rows if self.obj[r] >= 0), *(self.subj[r] for r in inc)]
            self._news(e, title, min(end + 1, self.present), text, e, ents, [self.fid[r] for r in rows + inc])
        won = [(award, year, rs) for award in entities for year, rs in self.awards.get(award, ())]
        at = [r for _, _, rs in won for r in rs]
        said = iter(self.said_at(at, [5] * len(at), [True] * len(at)))
        for award, year, rs in won:
            name = self.names[award]
            title = f"{name} {year}: recipients announced"
            linked = f"the [{name}]({self.article_url[award]})"
            text = " ".join([next(said).replace(f"the {name}", linked) for _ in rs])
            published = max(self.start[r] for r in rs)
            self._news(award + year, title, published, text, award, [award, *(self.subj[r] for r in rs)],
                       [self.fid[r] for r in rs])  # fmt: skip
        bought = [
            (s, r) for s in entities for r in self.by_subject[s] if self.pred[r] == acq and self.start[r] != NA_DATE
        ]
        said = iter(self.said_at([r for _, r in bought], [9] * len(bought), [False] * len(bought)))
        for s, r in bought:
            o = self.obj[r]
            title = f"{self.names[o]} acquires {self.names[s]}"
            text = next(said).replace(self.names[s], f"[{self.names[s]}]({self.article_url[s]})", 1)
            self._news(s, title, self.start[r], text, s, [s, o], [self.fid[r]])
