"""How any text is judged against what the web returned and against the graph.

:func:`judge` checks a text (the template's own observation, a corrupted one, a world model's
prediction) against an :class:`~.lwm_observe.Observed` and the graph, with the world model
:class:`~fictionworld.worldmodel.verify.Verifier`:

- **facts**: the facts the observation must state (a page's graph facts, read back from any
  surface form; a result list's ranked results; a directory's entries; the values of a
  low-credibility page), each stated or not;
- **errors**: facts stated wrongly (``contradiction``, including a hedge that gives a second
  value beside the right one, dates moved to another sentence or swapped), values the graph
  does not hold (``unsupported``), invented or unrelated names and links (``namesake``,
  ``unrelated``, ``bad_link``), snippets that give values away (``leak``);
- **format**: the layout agents read (``[n] URL / Title / Snippet / Date`` result blocks, a
  page's Markdown head, a directory's "Showing entries" line).

The template renderer's own observations pass (every fact stated, nothing else): the LWM export
refuses any that does not.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections import Counter
from dataclasses import dataclass, field

from fictionworld.dates import from_days
from fictionworld.folding import fold_phrase
from fictionworld.surface import find_dates, find_numbers, format_serp_date
from fictionworld.web.urls import parse_url
from fictionworld.worldmodel.lwm_observe import Observed, Part, Result
from fictionworld.worldmodel.verify import KEYWORD_PATTERNS, LINK, SENTENCES, Problem, Verifier, fold, normalize_values

__all__ = ["Judgement", "judge", "ERROR_KINDS", "HEAD"]

ERROR_KINDS = ("contradiction", "unsupported", "namesake", "unrelated", "bad_link", "leak")
HEAD = re.compile(r"\A# (?P<title>[^\n]+)\n\nURL: (?P<url>\S+)\nSite: (?P<site>[^\n]+)\nDate: (?P<date>\S+)\n\n")
_BLOCK = re.compile(r"\A\[(\d+)\] (\S+)\nTitle: ([^\n]*)\nSnippet: ([^\n]*)\nDate: ([^\n]*)\Z")
_SERP_DATE = re.compile(r"\A(?:[A-Z][a-z]{2} \d{1,2}, \d{4}|N/A)\Z")  # N/A: an undated page (web_search)
_QUERY_HEAD = re.compile(r"^## Results for (.+)$", re.M)
_SHOWING = re.compile(r"^Showing entries (\d+)–(\d+) of (\d+) \(page (\d+) of (\d+)\)\.$", re.M)
_ENTRY = re.compile(r"^- \[([^\]\n]*)\]\((\S+)\)$", re.M)
_NAV = re.compile(r"^(?:Previous|Next) page: \S+$", re.M)
_DIRECTORY = re.compile(r"^A directory of (\d+) entries")
_PLACED = re.compile("Z\ue000(\\d+)\ue001")
_NOT_FOUND = re.compile(r"\AError 404: no page at (\S+)\. ")


@dataclass
class Judgement:
    required: int = 0
    stated: int = 0
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.stated == self.required and not self.problems

    def count(self, *kinds: str) -> int:
        return sum(1 for p in self.problems if p.kind in kinds)

    @property
    def errors(self) -> int:
        return self.count(*ERROR_KINDS)

    @property
    def format_ok(self) -> bool:
        return not self.count("format")

    def add(self, kind: str, detail: str) -> None:
        self.problems.append(Problem(kind, detail))


def judge(verifier: Verifier, obs: Observed, text: str) -> Judgement:
    """``text`` checked against what the web returned for ``obs`` and against the graph."""
    j = Judgement()
    text = text.replace("\r\n", "\n")
    if obs.parts:
        _judge_search(verifier, obs, text, j)
    elif obs.status != "ok":
        _judge_exact(obs.text, text, j, obs.kind)
    else:
        _judge_page(verifier, obs, text, j)
    if not text.strip():
        j.add("format", "the observation is empty")
    return j


def _squash(text: str) -> str:
    return " ".join(text.split())


def _judge_exact(gold: str, text: str, j: Judgement, kind: str) -> None:
    """A 404, an injected fault, a refused call: one fact (what happened), said in its layout."""
    j.required += 1
    if _squash(text) == _squash(gold):
        j.stated += 1
        return
    j.add("missing", f"does not say what the web returned: {gold[:120]!r}")
    if HEAD.match(text) or _BLOCK.match(text.split("\n\n")[0]):
        j.add("contradiction", f"shows content where the web returned no page ({kind})")
    if kind == "not_found":
        m, g = _NOT_FOUND.match(text), _NOT_FOUND.match(gold)
        if not m:
            j.add("format", "not a 404 observation ('Error 404: no page at URL. …')")
        elif g and m.group(1) != g.group(1):
            j.add("contradiction", f"names {m.group(1)} where the address asked for was {g.group(1)}")
    elif not text.startswith("Error"):
        j.add("format", "not an error observation ('Error: …')")


def _judge_search(verifier: Verifier, obs: Observed, text: str, j: Judgement) -> None:
    if len(obs.parts) == 1:
        chunks = [text]
    else:
        heads = list(_QUERY_HEAD.finditer(text))
        if [h.group(1) for h in heads] != [repr(p.query) for p in obs.parts]:
            j.add("format", f"expected one '## Results for …' head per query ({len(obs.parts)}), in order")
        bounds = [h.end() for h in heads] + [len(text)]
        starts = [h.start() for h in heads[1:]] + [len(text)]
        chunks = [text[bounds[i] : starts[i]].strip() for i in range(len(heads))]
        chunks += [""] * (len(obs.parts) - len(chunks))
    for part, chunk in zip(obs.parts, chunks):
        if not part.results:
            _judge_exact(part.text, chunk, j, "fault" if part.fault else part.status)
        else:
            _judge_results(verifier, part, chunk.strip(), j)


def _judge_results(verifier: Verifier, part: Part, text: str, j: Judgement) -> None:
    blocks: dict[int, tuple[str, str, str, str]] = {}
    for chunk in (c for c in text.split("\n\n") if c.strip()):
        m = _BLOCK.match(chunk.strip())
        if not m:
            j.add(
                "format", f"not a result block ([n] URL / Title: / Snippet: / Date: Mon D, YYYY or N/A): {chunk[:80]!r}"
            )
            continue
        n = int(m.group(1))
        if n in blocks:
            j.add("contradiction", f"result [{n}] is given twice")
            continue
        if not _SERP_DATE.match(m.group(5)):
            j.add("format", f"result [{n}]'s date is not written 'Mon D, YYYY' (or N/A): {m.group(5)[:40]!r}")
        blocks[n] = m.group(2, 3, 4, 5)
    numbers = sorted(blocks)
    first = part.results[0].number
    if numbers and numbers != list(range(first, first + len(numbers))):
        j.add("format", f"results must be numbered {first}, {first + 1}, … in order")
    gold = {r.number: r for r in part.results}
    for n in numbers:
        if n not in gold:
            j.add("unsupported", f"result [{n}] ({blocks[n][0]}) is not among the web's results for {part.query!r}")
    for r in part.results:
        j.required += 1
        if r.number not in blocks:
            j.add("missing", f"result [{r.number}] ({r.url}) is missing")
            continue
        url, title, snippet, date = blocks[r.number]
        want = {"URL": r.url, "title": r.title, "date": "N/A" if r.undated else _serp_date(verifier.web, r.row)}
        wrong = [what for what, got in zip(want, (url, title, date)) if got != want[what]]
        if wrong:
            j.add(
                "contradiction", f"result [{r.number}] has the wrong {', '.join(wrong)} (the web ranks {r.url} there)"
            )
            continue
        verdict = _check_snippet(verifier, r, snippet)
        if any(p.kind == "missing" for p in verdict):
            j.add("missing", f"the snippet of result [{r.number}] does not name its subject")
        else:
            j.stated += 1
        j.problems += [p for p in verdict if p.kind != "missing"]


def _serp_date(web, row: int) -> str:
    return format_serp_date(from_days(int(web.pages.published[row])))


def _check_snippet(verifier: Verifier, r: Result, snippet: str) -> list[Problem]:
    web = verifier.web
    if web.pages.layer[r.row] or web.pages.kind[r.row] in ("forum", "blog", "profile"):
        # a low-credibility page's snippet quotes the page (its wrong values are the layer's contract)
        where = f"result [{r.number}]"
        said = _values(verifier._strip(verifier.grounding(r.row), snippet))  # names with numbers in them aside
        shown = [v for v in said if not (isinstance(v, float) and v.is_integer() and 0 <= v <= 31)]
        leaks = [] if r.leak or not shown else [Problem("leak", f"{where}: the snippet must tease, not state values")]
        return leaks + _values_outside(snippet, web.pages.page(r.row, web.entity_ids).markdown(), where)
    problems = []
    m = _DIRECTORY.match(snippet)
    if m and web.pages.kind[r.row] == "list":
        entries = len(_ENTRY.findall(web.pages.text(r.row)))
        if int(m.group(1)) != entries:
            problems.append(
                Problem("contradiction", f"result [{r.number}] says {m.group(1)} entries; it has {entries}")
            )
        snippet = "A directory" + snippet[m.end() :]
    v = verifier.verify_result(verifier.grounding(r.row), r.title, snippet, leak=r.leak)
    return problems + [dataclasses.replace(p, detail=f"result [{r.number}]: {p.detail}") for p in v.problems]


def _values(text: str, *, keyed: bool = False) -> Counter:
    """The dates and numbers ``text`` states (URLs aside), counted; ``keyed``: each with the
    attributes its sentence speaks of ("born", "employees") and the word before it, so a value
    moved elsewhere is another value."""
    plain = re.sub(r"https?://\S+", " ", normalize_values(LINK.sub(lambda m: m.group(1), text)))
    out: Counter = Counter()
    for sentence in SENTENCES.split(plain) if keyed else [plain]:
        key = tuple(p for p, kw in KEYWORD_PATTERNS.items() if kw.search(sentence)) if keyed else ()
        found = []
        for d, span in find_dates(sentence):
            i = sentence.find(span)
            found.append((i, d))
            sentence = sentence[:i] + " " * len(span) + sentence[i + len(span) :]
        at = 0
        for v, span in find_numbers(sentence):
            at = sentence.find(span, at)
            found.append((at, v))
            at += len(span)
        for i, v in found:
            before = re.findall(r"[^\W\d]+", sentence[:i].lower())
            out[(key, before[-1] if before else "", v) if keyed else v] += 1
    return out


def _values_outside(text: str, source: str, where: str) -> list[Problem]:
    extra = _values(text) - _values(source)
    return [Problem("unsupported", f"{where} states {v}, which its page does not") for v in extra]


def _judge_page(verifier: Verifier, obs: Observed, text: str, j: Judgement) -> None:
    page, gold = obs.page, obs.text
    m = HEAD.match(text)
    if not m:
        j.add("format", "the page does not start with its head ('# Title', URL:, Site:, Date:)")
        body = text
    else:
        want = {"title": page.title, "url": page.url, "site": page.site, "date": page.published.isoformat()}
        for key, value in want.items():
            if m.group(key) != value:
                j.add("contradiction", f"the head gives the {key} as {m.group(key)!r}, not {value!r}")
        body = text[m.end() :]
    gold_body = gold[HEAD.match(gold).end() :]
    if page.kind == "list":
        _judge_list(gold_body, body, j)
    elif obs.layer or page.credibility == "low":
        _judge_values(gold_body, body, j)
    else:
        _judge_facts(verifier, obs, text, j)


def _judge_list(gold: str, body: str, j: Judgement) -> None:
    """A directory page: its entries (each a fact), the "Showing entries" line, the page links."""
    want, got = _SHOWING.search(gold), _SHOWING.search(body)
    if got is None:
        j.add("format", "no 'Showing entries a–b of n (page p of c).' line")
    elif got.groups() != want.groups():
        j.add("contradiction", f"says {got.group(0)!r}; the page is {want.group(0)!r}")
    entries, shown = set(_ENTRY.findall(gold)), Counter(_ENTRY.findall(body))
    j.required += len(entries)
    j.stated += len(entries & set(shown))
    for name, _ in sorted(entries - set(shown)):
        j.problems.append(Problem("missing", f"does not list {name}"))
    for (name, url), n in sorted(shown.items()):
        if (name, url) not in entries:
            j.add("unrelated", f"lists {name} ({url}), which is not on this page")
        elif n > 1:
            j.add("contradiction", f"lists {name} {n} times")
    if sorted(_NAV.findall(body)) != sorted(_NAV.findall(gold)):
        j.add("format", "the previous/next page links are not the page's")


def _judge_values(gold: str, body: str, j: Judgement) -> None:
    """A low-credibility page (its wrong values are the layer's contract): the values and links it
    states, each once as often as the page does; nothing it does not."""
    want = _values(gold, keyed=True) + Counter(LINK.findall(gold))
    got = _values(body, keyed=True) + Counter(LINK.findall(body))
    j.required += len(want)
    j.stated += len(set(want) & set(got))
    for v in want.keys() - got.keys():
        j.problems.append(Problem("missing", f"does not state {v}"))
    for v in (got - want).keys():
        shown = v[-1] if isinstance(v, tuple) and isinstance(v[0], tuple) else v
        if v in want:
            j.add("contradiction", f"states {shown} more often than the page does")
        else:
            j.add("unsupported", f"states {shown} where the page does not")


def _judge_facts(verifier: Verifier, obs: Observed, text: str, j: Judgement) -> None:
    """An authoritative page: the verifier's checks (facts stated, no contradiction, no invented
    value or name), plus hedges: a sentence about an attribute that gives the graph's value and
    another one beside it loses that fact and counts as a contradiction."""
    g = verifier.grounding(obs.row)
    ids = set(obs.fact_ids)
    g = dataclasses.replace(g, claims=[c for c in g.claims if c.fact_id in ids])
    v = verifier.verify_page(g, text)
    hedged = _hedges(verifier, g, text)
    unstated = {p.fact_id for p in v.problems if p.kind == "missing"}
    apart = _dates_apart(verifier, g, text, unstated)
    lost = {c.fact_id for c in g.claims if (c.subject, c.predicate) in hedged} - unstated
    j.required += v.required
    j.stated += v.covered - len(lost | {c.fact_id for c in apart})
    j.problems += v.problems
    for (e, p), said in sorted(hedged.items(), key=lambda x: (x[0][0], x[0][1])):
        j.add("contradiction", f"hedges {p} of {verifier.names[e]}: states {', '.join(map(str, said))}")
    for c in apart:
        j.add("contradiction", f"no sentence gives {c.describe(verifier.names)} with its dates")
    reported = {p.detail for p in v.problems if p.kind == "bad_link"}
    for anchor, url in LINK.findall(text):
        e = _linked_entity(verifier, url)
        if e is not None and fold(anchor) not in _forms(verifier, e) and not any(url in d for d in reported):
            j.add("namesake", f"[{anchor}]({url}) is not named as {verifier.names[e]}")


def _dates_apart(verifier: Verifier, g, text: str, unstated: set[int]) -> list:
    """Dated relation claims (held since, from … to) stated, but with no sentence naming the
    other entity that gives the claim's dates, the start before the end: dates moved to
    another sentence, or swapped."""
    claims = [c for c in g.claims if c.dtype == "relation" and c.dates and c.fact_id not in unstated]
    if not claims:
        return []
    plain = LINK.sub(lambda m: m.group(1), normalize_values(text)).replace("**", "")
    sentences = [(fold(s), [d for d, _ in find_dates(s)]) for s in _sentences(verifier, g, plain)]

    def given(c, f: str, ds: list) -> bool:  # both named, the dates given, the start first
        named = fold(str(c.value)) in f and fold(verifier.names[c.subject]) in f
        return named and set(c.dates) <= set(ds) and _in_order(c.dates, ds)

    return [c for c in claims if not any(given(c, f, ds) for f, ds in sentences)]


def _sentences(verifier: Verifier, g, plain: str) -> list[str]:
    """The sentences of ``plain``, a name with a full stop in it ("Justin L. Bylwawenell") kept whole."""
    dotted = sorted({verifier.names[e] for e in g.entities if "." in verifier.names[e]}, key=len, reverse=True)
    for k, name in enumerate(dotted):
        plain = plain.replace(name, f"Z\ue000{k}\ue001")  # a capital first: a sentence may start with it
    out = SENTENCES.split(plain)
    return [_PLACED.sub(lambda m: dotted[int(m.group(1))], x) for x in out] if dotted else out


def _in_order(want: tuple, said: list) -> bool:
    return len(want) < 2 or want[0] == want[1] or said.index(want[0]) < len(said) - 1 - said[::-1].index(want[1])


def _linked_entity(verifier: Verifier, url: str) -> int | None:
    try:
        row = verifier.web.pages.row_of_url.get(parse_url(url)[0])
    except ValueError:
        return None
    if row is None or verifier.web.pages.kind[row] != "article":
        return None
    return int(verifier.web.pages.entity[row])


def _forms(verifier: Verifier, e: int) -> set[str]:
    return {fold(f) for f in (verifier.names[e], *verifier.world.entities.aliases[e])}


def _hedges(verifier: Verifier, g, text: str) -> dict[tuple[int, str], list]:
    """(entity, attribute) → the values a sentence gives beside the graph's own for it."""
    plain = verifier._strip(g, LINK.sub(lambda m: m.group(1), normalize_values(text)).replace("**", ""))
    out: dict[tuple[int, str], list] = {}
    for sentence in _sentences(verifier, g, plain):
        words = sentence
        for e in g.entities:
            words = words.replace(verifier.names[e], " ")
        keys = [p for p, kw in KEYWORD_PATTERNS.items() if kw.search(words)]
        if not keys:
            continue
        dates = find_dates(sentence)
        rest = sentence
        for _, span in dates:
            rest = rest.replace(span, " ")
        said_dates = {d for d, _ in dates}
        said_numbers = {x for x, _ in find_numbers(rest)}
        truths = {p: verifier._truth(g, p, sentence) for p in keys}
        allowed = set().union(*truths.values())
        for p, truth in truths.items():
            said = said_dates if truth and isinstance(next(iter(truth)), dt.date) else said_numbers
            if not truth or not said & truth:
                continue  # no value of it here, or none right: the verifier's own rules
            extra = sorted(x for x in said - allowed if not (isinstance(x, float) and x.is_integer() and x <= 31))
            if extra:
                who = _subject_of(verifier, g, sentence)
                out[(who, p)] = sorted(truth & said, key=str) + extra
    return out


def _subject_of(verifier: Verifier, g, sentence: str) -> int:
    folded = fold_phrase(sentence)
    named = [e for e in sorted(g.entities) if fold_phrase(verifier.names[e]) in folded]
    return named[0] if named else g.subject
