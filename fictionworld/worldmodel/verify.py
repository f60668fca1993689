"""Checks a rendered page or result list against the graph before an agent sees it.

Three rules, each a list of :class:`Problem` in the :class:`Verdict`:

- **coverage**: every required fact is stated: a relation names its subject and object (and its
  dates); an attribute's value is on the page, read back from any surface form (dates and
  numbers normalised by :mod:`fictionworld.surface`; names and text values folded and matched
  with rapidfuzz).
- **no contradiction**: a sentence that speaks of an attribute ("born", "employees") of an
  entity the graph knows must state the graph's value; every full date and every number must be
  one the graph holds for an entity of the page (an invented value is "unsupported").
- **no invented entities**: a name one edit (or one word) away from a real one is a namesake; a
  real entity the graph does not connect to the page is "unrelated"; a link must point at a page
  that exists and be named after what it points at.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import regex as re
from rapidfuzz import fuzz

from fictionworld.folding import fold_phrase
from fictionworld.surface import MONTHS, find_dates, find_numbers
from fictionworld.web.model import MASK
from fictionworld.web.phrasing import LABELS, NEWS_SITES, SECTION, TYPE_LABEL
from fictionworld.worldmodel.grounding import Claim, FactIndex, Grounding

__all__ = ["Verifier", "Verdict", "Problem", "PROBLEM_KINDS", "fold", "normalize_values"]

PROBLEM_KINDS = ("missing", "contradiction", "unsupported", "namesake", "unrelated", "bad_link", "leak", "format")
NAME_SIMILARITY = 85  # rapidfuzz ratio above which an unknown name is "named like" a real one
NAME_PRESENT = 92  # partial ratio above which a required name counts as written (spelling variants)

# Words that say which attribute a sentence speaks of (only dated and numeric ones can be compared).
KEYWORDS: dict[str, tuple[str, ...]] = {
    "population": ("population", "inhabitants", "residents", "people live"),
    "area_km2": ("area", "square kilometres", "square kilometers"),
    "established": ("established", "founded", "establishment"),
    "elevation_m": ("elevation", "altitude"),
    "birth_date": ("born", "birth"),
    "death_date": ("died", "death", "passed away"),
    "height_cm": ("tall", "height"),
    "founded": ("founded", "established", "inception"),
    "employees": ("employees", "employs", "staff", "workforce"),
    "revenue_usd": ("revenue", "turnover"),
    "students": ("students", "enrolment", "enrollment", "enrolled"),
    "publication_date": ("published", "publication"),
    "page_count": ("pages", "page count"),
    "release_date": ("released", "release"),
    "runtime_min": ("running time", "runtime", "runs", "minutes long"),
    "box_office_usd": ("box office", "grossed"),
    "track_count": ("tracks", "songs"),
    "launch_date": ("launched", "launch"),
    "price_usd": ("price", "costs", "retails"),
    "attendance": ("attendance", "attended", "attendees", "visitors"),
    "stadium_capacity": ("capacity", "seats"),
}
KEYWORD_PATTERNS = {p: re.compile(r"\b(?:" + "|".join(map(re.escape, k)) + r")\b", re.I) for p, k in KEYWORDS.items()}
LINK = re.compile(r"\[([^\]\n]*)\]\((\S*?(?:\([^\s()]*\)\S*?)*)\)")
_SPAN = re.compile(
    r"\b{w}(?:[ \t]+(?:(?:of|the|de|del|la|le|van|von|da|di|du|y|and|&)[ \t]+)*{w})*".replace(
        "{w}", r"(?:\p{Lu}\.(?=[ \t]\p{Lu})|\p{Lu}[\p{L}\p{M}\d'’\-]*)"
    )
)
SENTENCES = re.compile(r"(?<=[.!?])\s+(?=\p{Lu}|\d|\[|\*)|\n+")
_URL = re.compile(r"https?://\S+")
_DIGITS = re.compile(r"\d+")
_ORDINAL = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)\b")
_DAY_OF = re.compile(rf"\b(\d{{1,2}}) of ({'|'.join(MONTHS)})\b", re.I)
_NO_COMMA = re.compile(rf"\b({'|'.join(MONTHS)}) (\d{{1,2}}) (\d{{4}})\b", re.I)
_COMMON = (
    "the a an and or of in on at to for by with from as is was were be been are it its his her their this that "
    "these those he she they we i you our your after before during since until when while where which who "
    "also however today later then there here today yesterday now about around between into over under "
    "among according born died founded established known based located home headquarters overview "
    "history career life family works production awards leadership authors cast participants players "
    "recipients location squad report reports news page pages directory list entries showing previous next "
    "url site date published updated edited see also external links references notes note early personal "
    "legacy background education reception release plot summary monday tuesday wednesday thursday friday "
    "saturday sunday north south east west northern southern eastern western new old great upper lower "
    "inc ltd llc co corp plc group university college school"
)


fold = fold_phrase  # the verifier's name for it


def normalize_values(text: str) -> str:
    """Date spellings the page parsers do not read, rewritten to ones they do ("3rd of March
    1990" → "3 March 1990", "March 3 1990" → "March 3, 1990")."""
    text = _ORDINAL.sub(r"\1", text)
    text = _DAY_OF.sub(r"\1 \2", text)
    return _NO_COMMA.sub(r"\1 \2, \3", text)


@dataclass
class Problem:
    kind: str  # one of PROBLEM_KINDS
    detail: str
    fact_id: int | None = None


@dataclass
class Verdict:
    problems: list[Problem] = field(default_factory=list)
    required: int = 0
    covered: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems

    def count(self, kind: str) -> int:
        return sum(1 for p in self.problems if p.kind == kind)

    def feedback(self, limit: int = 12) -> str:
        """The problems as a list the LLM can act on."""
        lines = [f"- {p.kind}: {p.detail}" for p in self.problems[:limit]]
        if len(self.problems) > limit:
            lines.append(f"- … and {len(self.problems) - limit} more")
        return "\n".join(lines)


class Verifier:
    """One per world (names and facts are indexed once)."""

    def __init__(self, web):
        self.web = web
        self.world = web.world
        self.facts = FactIndex(self.world)
        e = self.world.entities
        self.names: list[str] = e.name.tolist()
        self.forms: dict[str, list[int]] = {}  # folded name or alias -> entity rows
        for r, (n, aliases) in enumerate(zip(self.names, e.aliases.tolist())):
            for form in (n, *aliases):
                self.forms.setdefault(fold(form), []).append(r)
        self.by_token: dict[str, list[str]] = {}  # folded word -> folded forms containing it
        for form in self.forms:
            for w in set(form.split()):
                self.by_token.setdefault(w, []).append(form)
        vocab = set(_COMMON.split()) | {m.lower() for m in MONTHS} | {m[:3].lower() for m in MONTHS}
        for text in [*SECTION.values(), *TYPE_LABEL.values(), *(x for v in LABELS.values() for x in v)]:
            vocab |= set(fold(text).split())
        for name, _ in NEWS_SITES:
            vocab |= set(fold(name).split())
        vocab |= {"fictopedia", "open", "registry", "threadhaven", "forums", "fanpedia", "bizprofiles"}
        self.vocab = frozenset(vocab)

    def grounding(self, row: int) -> Grounding:
        return self.facts.grounding(self.web, row)

    # -- pages ---------------------------------------------------------------------------
    def verify_page(self, g: Grounding, markdown: str) -> Verdict:
        v = Verdict(required=len(g.claims))
        text = normalize_values(markdown)
        plain = LINK.sub(lambda m: m.group(1), text).replace("**", "").replace("__", "")
        folded = fold(plain)
        dates = {d for d, _ in find_dates(plain)}
        numbers = self._numbers(g, plain)
        for c in g.claims:
            if self._states(c, folded, dates, numbers):
                v.covered += 1
            else:
                v.problems.append(Problem("missing", f"does not state: {c.describe(self.names)}", c.fact_id))
        self._check_values(g, plain, v)
        self._check_names(g, text, plain, v)
        return v

    def _present(self, name: str, folded: str) -> bool:
        f = fold(name)
        return f in folded or fuzz.partial_ratio(f, folded, score_cutoff=NAME_PRESENT) > 0

    def _states(self, c: Claim, folded: str, dates: set, numbers: list[float]) -> bool:
        if c.dtype == "relation":
            if not (self._present(self.names[c.subject], folded) and self._present(str(c.value), folded)):
                return False
            return all(d in dates for d in c.dates)
        if c.dtype == "date":
            return c.value in dates
        if c.dtype in ("int", "float"):
            x = float(c.value)
            return any(abs(n - x) <= 1e-6 * max(1.0, abs(x)) for n in numbers)
        return self._present(str(c.value), folded)

    def _strip(self, g: Grounding, plain: str) -> str:
        """The text without URLs, text values (ISBNs, websites) and names of the page's
        entities, whose digits are not stated numbers."""
        out = _URL.sub(" ", plain)
        for t in g.texts:
            if any(ch.isdigit() for ch in t):
                out = out.replace(t, " ")
        for e in g.entities:
            if any(ch.isdigit() for ch in self.names[e]):
                out = out.replace(self.names[e], " ")
        if any(ch.isdigit() for ch in g.title):
            out = out.replace(g.title, " ")
        return out

    def _numbers(self, g: Grounding, plain: str) -> list[float]:
        stripped = self._strip(g, plain)
        for _, span in find_dates(stripped):
            stripped = stripped.replace(span, " ")
        return [x for x, _ in find_numbers(stripped)]

    def _supported_number(self, g: Grounding, x: float) -> bool:
        if any(abs(x - n) <= 1e-6 * max(1.0, abs(n)) for n in g.numbers):
            return True
        if x.is_integer() and 0 <= x <= 31:  # day numbers, small counts ("three of its 4 albums")
            return True
        return x.is_integer() and any(d.year == x for d in g.dates)

    def _check_values(self, g: Grounding, plain: str, v: Verdict) -> None:
        plain = self._strip(g, plain)
        for sentence in SENTENCES.split(plain):
            if not sentence.strip():
                continue
            dates = [d for d, _ in find_dates(sentence)]
            rest = sentence
            for _, span in find_dates(sentence):
                rest = rest.replace(span, " ")
            numbers = [x for x, _ in find_numbers(rest)]
            bad = False
            words_only = sentence  # keywords are read outside names ("Songs for the Ledger")
            for e in g.entities:
                words_only = words_only.replace(self.names[e], " ")
            for p, kw in KEYWORD_PATTERNS.items():
                if not kw.search(words_only):
                    continue
                truth = self._truth(g, p, sentence)
                if not truth:
                    continue
                said = dates if isinstance(next(iter(truth)), dt.date) else numbers
                if said and not any(_same(s, t) for s in said for t in truth):
                    shown = ", ".join(str(s) for s in said[:3])
                    v.problems.append(
                        Problem(
                            "contradiction",
                            f"{sentence.strip()[:160]!r} gives {p} as {shown}; the graph says "
                            f"{', '.join(str(t) for t in sorted(truth, key=str))}",
                        )  # fmt: skip
                    )
                    bad = True
            if bad:
                continue
            for d in dates:
                if d not in g.dates:
                    v.problems.append(Problem("unsupported", f"states the date {d.isoformat()}, which the graph "
                                              f"does not hold for anything on this page"))  # fmt: skip
            for x in numbers:
                if not self._supported_number(g, x):
                    shown = f"{x:g}" if abs(x) < 1e15 else str(x)
                    v.problems.append(Problem("unsupported", f"states the number {shown}, which the graph does not "
                                              f"hold for anything on this page"))  # fmt: skip

    def _truth(self, g: Grounding, p: str, sentence: str) -> set:
        """The graph's values of attribute ``p`` for the entities the sentence speaks of: those it
        names, else the page's main entity."""
        folded = fold(sentence)
        named = [e for e in g.entities if fold(self.names[e]) in folded]
        who = named or ([g.subject] if g.subject >= 0 else [])
        out = set()
        for e in who:
            for r in self.facts.rows_about(e).tolist():
                c = self.facts.claim(r)
                if c.predicate == p:
                    out.add(c.value)
        return out

    # -- names ---------------------------------------------------------------------------
    def _check_names(self, g: Grounding, text: str, plain: str, v: Verdict) -> None:
        allowed_forms = {fold(f) for e in g.entities for f in (self.names[e], *self.world.entities.aliases[e])}
        allowed_tokens = {t for f in allowed_forms for t in f.split()}
        for anchor, url in LINK.findall(text):
            self._check_link(g, anchor, url, v)
        body = _URL.sub(" ", plain)
        known = [*g.texts, *(f for e in g.entities for f in (self.names[e], *self.world.entities.aliases[e]))]
        # a snippet teases a name's number ("Juopla Music Festival …" for "… 2014"): still the name
        known += [_DIGITS.sub(MASK, t) for t in known if _DIGITS.search(t)]
        for t in sorted(known, key=len, reverse=True):  # names on the page may hold other names
            body = body.replace(t, " ; ")  # ("Live in Priogla"): take them out first
        reported: set[str] = set()
        for m in _SPAN.finditer(body):
            tokens = [t[:-2] if t.endswith("'s") else t for t in fold(m.group(0)).split()]
            covered = [False] * len(tokens)
            i = 0
            while i < len(tokens):  # longest known name first
                for j in range(min(len(tokens), i + 8), i, -1):
                    form = " ".join(tokens[i:j])
                    if form in self.forms:
                        if form not in allowed_forms and not set(self.forms[form]) & g.entities:
                            if form not in reported and not _is_common(form, self.vocab):
                                reported.add(form)
                                v.problems.append(Problem("unrelated", f"mentions {_title(form)}, which the graph "
                                                          f"does not connect to this page"))  # fmt: skip
                        covered[i:j] = [True] * (j - i)
                        i = j
                        break
                else:
                    i += 1
            rest = [t for t, c in zip(tokens, covered) if not c]
            # a leftover run of words (or one word) next to nothing known: maybe an invented name
            runs, cur = [], []
            for t, c in zip(tokens, covered):
                if c:
                    if cur:
                        runs.append(cur)
                    cur = []
                else:
                    cur.append(t)
            if cur:
                runs.append(cur)
            for run in runs if rest else ():
                name = " ".join(run)
                if name in reported or all(t in self.vocab or t in allowed_tokens for t in run):
                    continue  # ordinary words, or a short form of a name on the page ("Krynovenko")
                twin = self._namesake(run)
                if twin:
                    reported.add(name)
                    v.problems.append(Problem("namesake", f"names {_title(name)}, which is not in the world but is "
                                              f"named like {self.names[self.forms[twin][0]]}"))  # fmt: skip

    def _namesake(self, run: list[str]) -> str | None:
        """The real name (folded) that ``run`` is one edit or one word away from, if any."""
        name = " ".join(run)
        if len(run) == 1 and (len(name) < 5 or name.isdigit()):
            return None
        cands: set[str] = set()
        for t in run:
            if t not in self.vocab and not t.isdigit():
                cands.update(self.by_token.get(t, ())[:2000])
        if len(run) == 1 or not cands:  # a misspelt word shares no token: compare with forms of its length
            for t in run:
                if len(t) >= 5 and t not in self.vocab:
                    cands.update(f for f in self._forms_near(t))
        best, score = None, 0.0
        for f in cands:
            s = fuzz.ratio(name, f)
            if s > score:
                best, score = f, s
            ft = f.split()
            if len(ft) == len(run) >= 2 and sum(a != b for a, b in zip(ft, run)) == 1:
                diff = next(a for a, b in zip(run, ft) if a != b)
                if diff not in self.vocab:
                    return f
        return best if score >= NAME_SIMILARITY and best != name else None

    def _forms_near(self, word: str) -> list[str]:
        out = []
        for w in self.web.linker.correct(word):
            if w != word:
                out.extend(self.by_token.get(w, ())[:200])
        return out

    def _check_link(self, g: Grounding, anchor: str, url: str, v: Verdict) -> None:
        from fictionworld.web.urls import parse_url

        try:
            base, _ = parse_url(url)
        except ValueError:
            v.problems.append(Problem("bad_link", f"[{anchor}]({url}) is not a well-formed URL"))
            return
        row = self.web.pages.row_of_url.get(base)
        if row is None:
            v.problems.append(Problem("bad_link", f"[{anchor}]({url}) links to a page that does not exist"))
            return
        if self.web.pages.kind[row] != "article":
            return
        e = int(self.web.pages.entity[row])
        forms = [fold(f) for f in (self.names[e], *self.world.entities.aliases[e])]
        a = fold(anchor)
        if a not in forms and max(fuzz.ratio(a, f) for f in forms) < NAME_PRESENT:
            v.problems.append(Problem("bad_link", f"[{anchor}]({url}) points at the article on {self.names[e]}"))
        elif e not in g.entities:
            v.problems.append(Problem("unrelated", f"links to {self.names[e]}, which the graph does not connect "
                                      f"to this page"))  # fmt: skip

    # -- search results ------------------------------------------------------------------
    def verify_result(self, g: Grounding, title: str, snippet: str, *, leak: bool) -> Verdict:
        """A result's title and snippet: the page's own title, the page's entity named, no
        value the page does not hold, no invented or unrelated names; without ``leak`` no dates
        or numbers at all (the snippet teases)."""
        v = Verdict(required=1 if g.subject >= 0 else 0)
        if fuzz.ratio(fold(title), fold(g.title)) < NAME_PRESENT:
            v.problems.append(Problem("format", f"title {title!r} is not the page's title {g.title!r}"))
        text = normalize_values(snippet)
        if g.subject >= 0:
            named = self._present(self.names[g.subject], fold(text)) or self._present(
                self.names[g.subject], fold(title)
            )
            if named:
                v.covered = 1
            else:
                v.problems.append(Problem("missing", f"the snippet does not name {self.names[g.subject]}"))
        if not leak:
            stripped = self._strip(g, text)
            shown = [s for _, s in find_dates(stripped)]
            for _, s in find_dates(stripped):
                stripped = stripped.replace(s, " ")
            shown += [s for x, s in find_numbers(stripped) if not (x.is_integer() and 0 <= x <= 31)]
            if shown:
                v.problems.append(Problem("leak", f"the snippet must tease, not state values: {', '.join(shown[:3])}"))
        self._check_values(g, text, v)
        self._check_names(g, text, text, v)
        return v


def _same(a, b) -> bool:
    if isinstance(a, float | int) and isinstance(b, float | int):
        return abs(float(a) - float(b)) <= 1e-6 * max(1.0, abs(float(b)))
    return a == b


def _is_common(form: str, vocab: frozenset[str]) -> bool:
    return all(t in vocab for t in form.split())


def _title(folded: str) -> str:
    return " ".join(w[:1].upper() + w[1:] for w in folded.split())
