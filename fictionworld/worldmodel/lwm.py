"""Training data for language world models (``fictionworld export lwm``).

Sessions of web calls (rollout episodes replayed, or sampled over a world) become
(history, action, observation) examples in Qwen-AgentWorld's framing: each earlier turn is
``### Turn N`` / ``**Action:**`` / a JSON block, answered by ``**Environment Observation:**`` and
its text; the example's target is the observation of the last action. Rows carry the fields
AgentWorldBench rows have (``task``, ``id``, ``prompt``, ``response``, ``current_prompt``,
``system_str``, ``turn_idx``, ``total_turns``: its ``eval.py`` reads them unchanged) and ours
(``messages`` in chat form for SFT, ``world_hash``, ``page_kind``, ``knobs``, ``source``,
``fact_ids``, …).

Every observation written is the template renderer's (:mod:`.lwm_observe` runs the calls),
checked by :func:`~fictionworld.worldmodel.lwm_check.judge` (the world model verifier against
the graph) before it is written: one that fails is counted and refused. Negatives are the same
examples with one corruption each (a value changed, two facts swapped, a fact dropped, a
namesake, a hedge, a broken layout, an empty page, results swapped, a page invented for a 404),
labelled with the problems the checks find (``label`` 0, ``problems``); a corruption the checks
miss is counted and not written (:mod:`.lwm_corrupt`). Files and the dataset card: :mod:`.lwm_files`;
scoring a world model's predictions on the held-out split: :mod:`.lwm_score`.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from fictionworld.errors import FictionWorldError
from fictionworld.knobs import Knobs
from fictionworld.seeding import hash_text
from fictionworld.web.urls import parse_url
from fictionworld.worldmodel.lwm_check import judge
from fictionworld.worldmodel.lwm_corrupt import CORRUPTIONS, corrupt
from fictionworld.worldmodel.lwm_observe import WEB_TOOLS, Observed, observe, page_kind
from fictionworld.worldmodel.prompts import action_turn, observation_turn
from fictionworld.worldmodel.verify import Verifier

__all__ = ["Session", "Turn", "LwmError", "SYSTEM_STR", "KNOB_PROFILES", "FOCUS_KINDS", "sample_sessions",
           "run_sessions", "build_rows", "Progress"]  # fmt: skip

Progress = Callable[[str, int, int], None]  # (phase, done, total)

SYSTEM_STR = """# Role

You are the world model of a fictional web: a search engine and the pages it indexes. Everything \
in this world is invented and consistent; its truth is a knowledge graph. An agent calls tools and \
you write exactly what the environment returns.

# Tools you simulate

- `web_search` {"queries": [...]}: up to five queries; for several, each list is headed \
`## Results for '<query>'`. `search` {"query", "page"}: one query, result page `page`.
- `web_extractor` {"url"} and `open` {"url"}: the page at the URL, as Markdown.
- `dict_memory`: the agent's key-value memory (add, update, retrieve, retrieve_all, remove, remove_all).

# Output layout

- Result lists: numbered blocks separated by a blank line, `[n] URL`, `Title: …`, `Snippet: …`, \
`Date: Mon D, YYYY`. Snippets tease: they name the page's subject but hide dates, numbers and \
linked names with "…" unless the web lets them show.
- Pages: `# Title`, a blank line, `URL: …`, `Site: …`, `Date: YYYY-MM-DD`, a blank line, then the \
body. Directories list entries as `- [Name](URL)` under a `Showing entries a–b of n (page p of c).` \
line, with `Previous page:` / `Next page:` links.
- An unknown address: `Error 404: no page at URL. Check the address or search again.` Timeouts and \
server errors: one `Error: …` line.

# Rules

State only what the world holds: every fact of the page, each value exactly once and exactly as \
recorded, names spelled exactly, links to existing pages. Encyclopedia articles, organisation \
sites, news and directories are authoritative; forums, blogs, fan pages and aggregator profiles \
may be wrong, and say what they say. Stay consistent with the earlier turns. Answer with \
`**Environment Observation:**` and the observation, nothing else."""

KNOB_PROFILES: dict[str, Knobs] = {
    "clean": Knobs(),
    "leaky": Knobs(snippet_leak_rate=1.0),
    "noisy": Knobs(distractor_rate=1.0, confusable_rate=1.0, conflict_rate=1.0),
    "short_pages": Knobs(list_page_size=5, results_per_page=5),
    "faulty": Knobs(fault_rate=0.3),
    "mixed": Knobs(snippet_leak_rate=0.3, distractor_rate=0.5, confusable_rate=0.5, conflict_rate=0.5,
                   list_page_size=10, results_per_page=8, fault_rate=0.1),
}  # fmt: skip
FOCUS_KINDS = ("article", "org_about", "org_history", "org_leadership", "org_people", "news", "directory",
               "year_list", "forum", "blog", "profile", "not_found", "search")  # fmt: skip
_LAYER_OF = {"forum": "conflict", "blog": "conflict", "profile": "confusable"}
_NOTE = "\n\n[Note: one turn left. Give your final answer now.]"
_CUT = re.compile(r"\n\n\[… cut at [\d,]+ characters\]\Z")


class LwmError(FictionWorldError, ValueError):
    """Input the LWM export or its scoring cannot use, said in one line."""


@dataclass
class Turn:
    tool: str
    arguments: dict
    text: str  # the observation (a web call's as the web returns it, replayed)
    obs: Observed | None = None  # None: not a web call (memory, a refused call): history only
    refused: str = ""  # why this web call is no example (it stays in later examples' history)


@dataclass
class Session:
    id: str
    source: str  # "sampled" or "rollout"
    seed: int
    knobs: Knobs
    turns: list[Turn] = field(default_factory=list)
    profile: str = ""  # sampled: the knob profile's name
    episode: str = ""
    task_id: str = ""


def _rand(seed: int, key: str) -> random.Random:
    return random.Random(hash_text(f"{seed}/{key}"))


# -- sampled sessions ----------------------------------------------------------------------------
def sample_sessions(web, n: int, seed: int = 0, progress: Progress | None = None) -> list[Session]:
    """``n`` seeded sessions over ``web``: session ``i`` uses knob profile ``i mod 6`` and
    focuses on page kind ``i mod 13`` (so any 78 sessions cover every pair): it searches for the
    focus page (one to three queries), opens it (page 2 of a long directory too), follows a link
    and sometimes opens a missing page or searches a year list."""
    by_kind: dict[str, list[int]] = {}
    with web.pages.scanning():  # every page, in order
        for row in range(len(web.pages)):
            by_kind.setdefault(page_kind(web, row), []).append(row)
    out = []
    for i in range(n):
        out.append(_session(web, i, seed, by_kind))
        if progress:
            progress("sampling sessions", i + 1, n)
    return out


def _session(web, i: int, seed: int, by_kind: dict[str, list[int]]) -> Session:
    r = _rand(seed, f"session/{i}")
    profile = list(KNOB_PROFILES)[i % len(KNOB_PROFILES)]
    focus = FOCUS_KINDS[i % len(FOCUS_KINDS)]
    knobs = KNOB_PROFILES[profile]
    if focus in _LAYER_OF and knobs.rate_of(_LAYER_OF[focus]) < 0.5:
        knobs = knobs.model_copy(update={f"{_LAYER_OF[focus]}_rate": 0.5})
    rates = web.rates(knobs)
    pool = [x for x in by_kind.get(focus, ()) if web.pages.u[x] < rates[web.pages.layer[x]]] or by_kind["article"]
    row = pool[r.randrange(len(pool))]
    s = Session(f"sampled/{i:06d}", "sampled", r.randrange(2**31), knobs, profile=profile)
    session = web.session(knobs, s.seed)

    def call(tool: str, arguments: dict, retry: bool = True) -> Observed:
        obs = observe(session, tool, arguments)
        s.turns.append(Turn(tool, arguments, obs.text, obs))
        if obs.status == "fault" and retry:  # an agent retries a fault once
            return call(tool, arguments, retry=False)
        return obs

    call("web_search", {"queries": _queries(web, row, i, r, by_kind)})
    url = web.pages.urls[row]
    if focus == "not_found":
        url = _missing_url(web, url, r)
    page = call("web_extractor", {"url": url}).page
    if page is not None and page.page_count > 1:
        call("web_extractor", {"url": f"{web.pages.urls[row]}?page={r.randint(2, page.page_count)}"})
    links = [u for _, u in re.findall(r"\[([^\]\n]*)\]\((https://\S+?)\)", page.text)] if page is not None else []
    if links:
        call("web_extractor", {"url": links[r.randrange(len(links))]})
    if r.random() < 0.25:
        call("web_extractor", {"url": _missing_url(web, web.pages.urls[pool[r.randrange(len(pool))]], r)})
    if r.random() < 0.25 and by_kind.get("year_list"):
        years = by_kind["year_list"]
        call("search", {"query": web.pages.titles[years[r.randrange(len(years))]], "page": 1})
    return s


def _queries(web, row: int, i: int, r: random.Random, by_kind: dict[str, list[int]]) -> list[str]:
    """The focus page's title, then (for 2 or 3 queries) its subject's name, a directory's or
    year list's title, or the title with a typo."""
    out = [web.pages.titles[row]]
    extra = []
    e = int(web.pages.entity[row])
    if e >= 0:
        extra.append(web.world.entities.name[e])
    for kind in ("directory", "year_list"):
        rows = by_kind.get(kind)
        if rows:
            extra.append(web.pages.titles[rows[r.randrange(len(rows))]])
    title = out[0]
    if len(title) > 6:
        j = r.randrange(1, len(title) - 2)
        extra.append(title[:j] + title[j + 1] + title[j] + title[j + 2 :])
    r.shuffle(extra)
    for q in extra:
        if len(out) > i % 3:
            break
        if q not in out:
            out.append(q)
    return out


def _missing_url(web, url: str, r: random.Random) -> str:
    """An address on the same site that names no page."""
    for suffix in ("_(disambiguation)", "-archive", "/old", f"-{r.randrange(10**6)}"):
        cand = url.rstrip("/") + suffix
        if parse_url(cand)[0] not in web.pages.row_of_url:
            return cand
    return url.rstrip("/") + f"/missing-{r.randrange(10**9)}"


# -- rollout episodes ----------------------------------------------------------------------------
def read_run(run_dir: Path) -> tuple[dict, list[dict]]:
    """A rollout run's ``run.json`` (or {}) and its episode records (the last of each episode)."""
    meta: dict = {}
    if (run_dir / "run.json").is_file():
        try:
            meta = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise LwmError(f"{run_dir / 'run.json'}: not valid JSON ({e.msg})") from None
    path = run_dir / "episodes.jsonl"
    if not path.is_file():
        raise LwmError(f"{run_dir}: not a rollout run (no episodes.jsonl)")
    last: dict[str, dict] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue  # a half-written last line: the rollout's resume cuts it
        if isinstance(rec, dict) and isinstance(rec.get("episode"), str):
            last[rec["episode"]] = rec
    return (meta if isinstance(meta, dict) else {}), list(last.values())


def run_sessions(web, run_dir: Path, progress: Progress | None = None) -> tuple[list[Session], Counter]:
    """The episodes of a rollout run as sessions: each web call replayed through a session with
    the episode's knobs and seed (deterministic: the same faults, the same pages), and the
    observation the episode stored compared with the replay (a cut page's kept part, a last-turn
    note aside; an argument the step record cut is read from the message's tool call). A call
    whose stored text differs from the replay is no example (an LLM world model's page is kept if
    it passes the checks); an episode whose steps and observations do not pair up is skipped.
    Returns the sessions and the counts of what was refused."""
    meta, records = read_run(run_dir)
    refused: Counter = Counter()
    verifier = Verifier(web)
    out = []
    for n, rec in enumerate(records, 1):
        if rec.get("world_hash") not in (None, web.world.world_hash):
            raise LwmError(f"{run_dir}: episode {rec['episode']} is from another world ({rec.get('world_hash')})")
        s = _episode_session(web, verifier, rec, refused)
        if s is not None:
            out.append(s)
        if progress:
            progress("replaying episodes", n, len(records))
    return out, refused


def _episode_session(web, verifier: Verifier, rec: dict, refused: Counter) -> Session | None:
    try:
        knobs = Knobs.model_validate(rec.get("knobs"))
        seed = int(rec["seed"])
    except (ValueError, TypeError, KeyError):
        refused["episodes without knobs or seed"] += 1
        return None
    messages = rec.get("messages") if isinstance(rec.get("messages"), list) else []
    steps = [s for s in rec.get("steps") or [] if isinstance(s, dict)]
    calls = _calls_by_turn(messages)
    at: Counter = Counter()
    for step in steps:  # the k-th call of turn t is the k-th tool call of the t-th assistant message
        raw = calls.get(step.get("turn"), [])
        k = at[step.get("turn")]
        at[step.get("turn")] += 1
        if k < len(raw) and isinstance(step.get("arguments"), dict):
            step["arguments"] = {a: _uncut(v, raw[k].get(a)) for a, v in step["arguments"].items()}
    steps = [s for s in steps if not (s.get("tool") == "answer" and s.get("status") == "ok")]
    shown = [m for m in messages[2:] if isinstance(m, dict) and m.get("role") in ("tool", "user")]
    if len(shown) != len(steps):
        refused["episodes whose steps and observations do not pair up"] += 1
        return None
    s = Session(f"rollout/{rec['episode']}", "rollout", seed, knobs, episode=rec["episode"],
                task_id=str(rec.get("task_id", "")))  # fmt: skip
    session = web.session(knobs, seed)
    template = str(rec.get("world_model") or "template") == "template"
    for step, message in zip(steps, shown):
        tool, args = str(step.get("tool")), step.get("arguments") or {}
        stored = message.get("content") if isinstance(message.get("content"), str) else ""
        if tool not in WEB_TOOLS or step.get("error") is not None or not isinstance(args, dict):
            s.turns.append(Turn(tool, args, stored))
            continue
        try:
            obs = observe(session, tool, args)
        except (KeyError, TypeError, ValueError):
            s.turns.append(Turn(tool, args, stored, refused="could not be replayed"))
            continue
        if _agrees(stored, obs.text):
            s.turns.append(Turn(tool, args, obs.text, obs))
        elif not template and not _CUT.search(stored.removesuffix(_NOTE)) and judge(verifier, obs, stored).ok:
            s.turns.append(Turn(tool, args, stored.removesuffix(_NOTE), obs))  # an LLM's page, verified
        else:  # no example; later examples' history shows the replay (what the web returns)
            s.turns.append(Turn(tool, args, obs.text, obs, refused="differs from the replay"))
    return s


def _calls_by_turn(messages: list) -> dict[int, list[dict]]:
    """Turn → the arguments of the assistant message's native tool calls (as the agent wrote them)."""
    out, turn = {}, 0
    for m in messages:
        if not isinstance(m, dict) or m.get("role") != "assistant":
            continue
        turn += 1
        args = []
        for c in m.get("tool_calls") or []:
            try:
                a = json.loads(c["function"]["arguments"])
            except (KeyError, TypeError, ValueError):
                a = None
            args.append(a if isinstance(a, dict) else {})
        out[turn] = args
    return out


def _uncut(recorded, raw):
    """A step's argument as the agent gave it where the step record cut it (strings over 300
    characters end in "…" there); the recorded value otherwise (it holds the env's conversions)."""
    if isinstance(recorded, str) and recorded.endswith("…") and isinstance(raw, str) and len(raw) > 300:
        return raw if raw.startswith(recorded[:-1]) else recorded
    if isinstance(recorded, list) and isinstance(raw, list) and len(raw) == len(recorded):
        return [_uncut(a, b) for a, b in zip(recorded, raw)]
    return recorded


def _agrees(stored: str, text: str) -> bool:
    """Whether the observation an episode stored is ``text`` as the env showed it: whole, or cut
    at the observation limit, with or without the last turn's note."""
    s = stored.removesuffix(_NOTE)
    cut = _CUT.search(s)
    if cut:
        return len(text) > cut.start() and text.startswith(s[: cut.start()])
    return s == text


# -- rows ----------------------------------------------------------------------------------------
def _action(turn: Turn) -> dict:
    return {"name": turn.tool, "arguments": turn.arguments}


def build_rows(web, sessions: list[Session], *, seed: int = 0, negatives: bool = True, history: int = 8,
               progress: Progress | None = None) -> tuple[list[dict], list[dict], Counter]:  # fmt: skip
    """Positive rows (every web call of every session whose observation passes the checks),
    negative rows (one corruption each, where the checks catch it) and the counts of what was
    refused or left out. ``history``: earlier turns kept in an example's prompt."""
    verifier = Verifier(web)
    world_hash = web.world.world_hash
    pos, neg, counts = [], [], Counter()
    total = sum(1 for s in sessions for t in s.turns if t.obs is not None or t.refused)
    done = 0
    for s in sessions:
        for k, turn in enumerate(s.turns):
            if turn.obs is None and not turn.refused:
                continue
            done += 1
            if progress:
                progress("checking and writing examples", done, total)
            if turn.refused:
                counts[f"refused: {turn.refused}"] += 1
                continue
            verdict = judge(verifier, turn.obs, turn.text)
            if not verdict.ok:
                counts["refused: failed the checks"] += 1
                continue
            row = _row(s, k, history, world_hash)
            pos.append(row)
            if negatives:
                bad = _negative(verifier, s, k, row, seed)
                if bad is None:
                    counts["negatives not made (no corruption the checks catch)"] += 1
                else:
                    neg.append(bad)
    return pos, neg, counts


def _row(s: Session, k: int, history: int, world_hash: str) -> dict:
    lo = max(0, k - history)
    turns = s.turns[lo : k + 1]
    prompts = [action_turn(lo + i + 1, _action(t))["content"] for i, t in enumerate(turns)]
    responses = [observation_turn(t.text)["content"] for t in turns]
    messages = [{"role": "system", "content": SYSTEM_STR}]
    for p, r in zip(prompts, responses):
        messages += [{"role": "user", "content": p}, {"role": "assistant", "content": r}]
    obs = s.turns[k].obs
    return {
        "task": "search",
        "id": f"{s.id}/{k + 1}",
        "prompt": prompts,
        "response": responses,
        "current_prompt": prompts[-1],
        "system_str": SYSTEM_STR,
        "turn_idx": len(prompts),
        "total_turns": len(s.turns),
        "messages": messages,
        "label": 1,
        "source": s.source,
        "session": s.id,
        "turn": k + 1,
        "tool": obs.tool,
        "arguments": json.dumps(obs.arguments, ensure_ascii=False, sort_keys=True),
        "page_kind": obs.kind,
        "layer": obs.layer,
        "status": obs.status,
        "urls": obs.urls,
        "fact_ids": obs.fact_ids,
        "faults": obs.faults,
        "knobs": s.knobs.model_dump(mode="json"),
        "knob_profile": s.profile,
        "world_hash": world_hash,
        "episode": s.episode,
        "task_id": s.task_id,
    }


def _negative(verifier: Verifier, s: Session, k: int, row: dict, seed: int) -> dict | None:
    """The row with its observation corrupted (a kind drawn per row, the others tried in turn)
    and labelled with the problems the checks find; None if none applies or is caught."""
    r = _rand(seed, f"negative/{row['id']}")
    obs = s.turns[k].obs
    kinds = [k for k in CORRUPTIONS if k != "empty"]
    r.shuffle(kinds)
    kinds.append("empty")  # the last resort: it always applies and teaches little
    for kind in kinds:
        text = corrupt(verifier, obs, kind, r)
        if text is None or text == obs.text:
            continue
        verdict = judge(verifier, obs, text)
        if verdict.ok:
            continue
        bad = observation_turn(text)["content"]
        messages = row["messages"][:-1] + [{"role": "assistant", "content": bad}]
        return row | {"id": row["id"] + "/" + kind, "response": row["response"][:-1] + [bad], "messages": messages,
                      "label": 0, "corruption": kind, "positive_id": row["id"], "chosen": row["response"][-1],
                      "rejected": bad, "problems": [{"kind": p.kind, "detail": p.detail} for p in verdict.problems],
                      "facts_required": verdict.required, "facts_stated": verdict.stated}  # fmt: skip
    return None
