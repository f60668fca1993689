"""Fuzzing :class:`~fictionworld.env.SearchEnv` with seeded nasty actions
(:mod:`fictionworld.testing.nasty_actions`): the checks a step must pass and the runner behind
``benchmarks/fuzz_env.py`` and ``tests/test_env_fuzz.py``.

:func:`check_step` holds every step, bad or not, to the env's contract: no exception, a reward
in [0, 1], observations as messages with string content, an error observation for each call
that failed to parse (and for every action bad by construction), and messages that can be
written as UTF-8 JSON.
"""

from __future__ import annotations

import hashlib
import json
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from fictionworld.env import EnvConfig, SearchEnv
from fictionworld.env.tools import short_repr
from fictionworld.knobs import Knobs
from fictionworld.scoring import RewardConfig
from fictionworld.testing.nasty_actions import BAD_URLS, NASTY_PIECES, Case, NastyActions

__all__ = ["Case", "NastyActions", "check_step", "run_fuzz", "fuzz_envs", "FuzzReport", "BAD_URLS", "NASTY_PIECES"]


# -- the contract of a step ------------------------------------------------------------------------
def check_step(case: Case, result: tuple, *, was_done: bool, record: dict) -> list[str]:
    """What is wrong with one step's result (empty: nothing); ``record`` holds what the step
    added to the episode (its messages, steps, answer), which must be writable as UTF-8 JSON."""
    obs, r, terminated, truncated, info = result
    problems = []
    if not isinstance(r, float) or not 0.0 <= r <= 1.0:
        problems.append(f"reward {r!r} outside [0, 1]")
    if not isinstance(obs, list) or not all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in obs):
        problems.append("an observation that is not a list of messages with string content")
        return problems
    if not isinstance(terminated, bool) or not isinstance(truncated, bool):
        problems.append("terminated/truncated not booleans")
    errors = [c for c in info.get("calls", []) if c.get("error")]
    if len([m for m in obs if m["content"].startswith("Error:")]) < len(errors):
        problems.append("a call that failed to parse has no error observation")
    if case.bad and not (obs and obs[0]["content"].startswith("Error:")):
        problems.append("a bad action without an error observation")
    if case.bad and terminated and not was_done:
        problems.append("a bad action ended the episode as answered")
    if was_done and (r != 0.0 or not (terminated or truncated)):
        problems.append("a step after the end was not refused")
    try:
        json.dumps({**record, "obs": obs}, ensure_ascii=False).encode("utf-8")
    except (TypeError, ValueError) as e:
        problems.append(f"the episode record cannot be written as UTF-8 JSON ({type(e).__name__})")
    return problems


# -- the run -------------------------------------------------------------------------------------
def fuzz_envs(web) -> list[SearchEnv]:
    """Envs that differ where it matters: tool sets, text tags, budgets, faults, reward weights."""
    return [
        SearchEnv(web, EnvConfig(tools="all", text_tags=True, max_turns=8, max_context_chars=50_000)),
        SearchEnv(web, EnvConfig(tools="basic", max_turns=5, max_observation_chars=500, knobs=Knobs(fault_rate=0.2))),
        SearchEnv(web, EnvConfig(tools="agentworld", max_turns=12, reward=RewardConfig(row_f1=1.0, success=1.0))),
    ]


@dataclass
class FuzzReport:
    cases: int = 0
    steps_after_end: int = 0
    bad: int = 0  # cases whose action is bad by construction
    exceptions: int = 0
    out_of_range: int = 0  # rewards outside [0, 1]
    positive: int = 0  # episodes that ended with a reward above 0
    problems: Counter = field(default_factory=Counter)  # broken contract (exceptions and rewards included)
    examples: list[str] = field(default_factory=list)  # the first few failures, with their actions
    kinds: Counter = field(default_factory=Counter)
    episodes: int = 0
    ends: Counter = field(default_factory=Counter)  # episode end reasons
    digest: str = ""  # of every step's result: the same seed gives the same digest
    slowest: tuple[float, str] = (0.0, "")  # seconds and family of the slowest case
    outcomes: Counter = field(default_factory=Counter)  # what the first observation was

    @property
    def ok(self) -> bool:
        return not self.problems


def run_fuzz(cases: int, seed: int, world, tasks: list, *, progress: Callable[[int], None] | None = None) -> FuzzReport:
    """Steps ``cases`` nasty actions through envs over ``world``'s web, checking each result.
    Episodes (over ``tasks``, seeded by their number) start when one ends; ``after_end`` cases
    end the current one first (``SearchEnv.end``)."""
    web = world.web
    urls = web.pages.urls[:: max(1, len(web.pages) // 200)][:200]
    names = world.entities.name[:60].tolist() + ["company", "city founded", "film director"]
    tables = [(list(t.gold.columns), [list(map(str, row)) for row in t.gold.rows]) for t in tasks]
    envs = fuzz_envs(web)
    gen = NastyActions(seed, urls=urls, names=names, tables=tables, answer_limit=50 * envs[0].config.max_arg_chars)
    report, digest = FuzzReport(), hashlib.blake2b(digest_size=8)
    env = envs[0]
    for i in range(cases):
        gen.current = (report.episodes if env.done else report.episodes - 1) % len(tasks)
        case = gen.case()
        report.cases += 1
        report.kinds[case.kind] += 1
        report.bad += case.bad
        t0 = time.perf_counter()
        try:
            env = _ready(env, envs, case, tasks, report, seed)
            problems = _step(env, case, report, digest)
        except Exception as e:  # the contract under test: no exception, ever
            report.exceptions += 1
            problems = [f"exception {type(e).__name__}"]
            _example(report, case, f"{type(e).__name__}: {str(e)[:200]}\n{traceback.format_exc(limit=-3)}")
        report.slowest = max(report.slowest, (time.perf_counter() - t0, case.kind))
        for p in problems:
            report.problems[p] += 1
        if problems and "exception" not in problems[0]:
            _example(report, case, "; ".join(problems))
        if progress is not None and (i + 1) % 100 == 0:
            progress(100)
    report.digest = digest.hexdigest()
    return report


def _ready(env: SearchEnv, envs: list[SearchEnv], case: Case, tasks: list, report: FuzzReport, seed: int) -> SearchEnv:
    """The env the case goes to: the current one ended for an ``after_end`` case, else a new
    episode (on the next env) when the current one is over."""
    if case.after_end:
        if not env.done:
            env.end("fuzz")
            report.ends[env.reason] += 1
        return env
    if env.done:
        env = envs[report.episodes % len(envs)]
        env.reset(tasks[report.episodes % len(tasks)], seed=seed * 1_000_003 + report.episodes)
        report.episodes += 1
    return env


def _step(env: SearchEnv, case: Case, report: FuzzReport, digest) -> list[str]:
    was_done, n_messages, n_steps = env.done, len(env.messages), len(env.steps)
    result = env.step(case.action)
    obs, r, terminated, truncated, info = result
    report.steps_after_end += was_done
    report.outcomes[_outcome(obs, was_done)] += 1
    if not isinstance(r, float) or not 0.0 <= r <= 1.0:
        report.out_of_range += 1
    if not was_done and (terminated or truncated):
        report.ends[env.reason] += 1
        report.positive += r > 0
    record = {"messages": env.messages[n_messages:], "steps": [s.model_dump() for s in env.steps[n_steps:]],
              "answer": env.answer, "info": info}  # fmt: skip
    digest.update(repr((r, terminated, truncated, [m.get("content") for m in obs])).encode("utf-8", "backslashreplace"))
    return check_step(case, result, was_done=was_done, record=record)


def _example(report: FuzzReport, case: Case, what: str) -> None:
    if len(report.examples) < 10:
        report.examples.append(f"[{case.kind}] {what}\n    action: {short_repr(case.action)}")


def _outcome(obs: list, was_done: bool) -> str:
    text = obs[0].get("content") if obs and isinstance(obs[0], dict) else None
    if not isinstance(text, str):
        return "no observation (answered)" if not obs else "not a message"
    for prefix, what in (("Error: the episode is over", "refused: episode over"), ("Error: the request", "injected fault"),
                         ("Error: 503", "injected fault"), ("Error: 429", "injected fault"), ("Error:", "error"),
                         ("Error 404", "page not found"), ("[", "search results"), ("## Results", "search results"),
                         ("No results", "no results"), ("# ", "page")):  # fmt: skip
        if text.startswith(prefix):
            return what
    return "other"
