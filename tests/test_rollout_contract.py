"""The rollout seams without Ray: the Episode record (one model for the runner, the pool's failure
records, the JSON Lines file, summaries, GRPO groups and the Parquet columns), every setting
checked in the driver before any actor starts, and scripted agents that read a tool call's
status instead of its text."""

from __future__ import annotations

import json
import sys

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import fictionworld.rollouts.pool
import fictionworld.rollouts.setup  # noqa: F401  (rollout.setup below)
from fictionworld import rollouts as rollout
from fictionworld.cli import app
from fictionworld.env import EnvConfig, SearchEnv
from fictionworld.rollouts import Episode
from fictionworld.rollouts.agents import make_agent
from fictionworld.rollouts.agents.base import Observation, ToolAgent, call_status
from fictionworld.rollouts.episode import run_episode
from fictionworld.rollouts.pool import Job, RolloutPool, SetupError, check_jobs, make_jobs, run_rollouts
from fictionworld.rollouts.records import SCHEMA, EpisodeLog, export_parquet, group_advantages, read_episodes, summarize
from fictionworld.tasks.generate import generate_tasks
from fictionworld.tasks.model import write_tasks
from fictionworld.web import ToolResult
from fictionworld.web.web import FAULT_TEXT


@pytest.fixture(scope="module")
def tasks(world):
    return generate_tasks(world, 4, kind="mixed", seed=3)


@pytest.fixture(scope="module")
def episodes(world, tasks) -> list[Episode]:
    agent = make_agent("baseline")
    env = SearchEnv(world.web, EnvConfig(**agent.env_defaults))
    return [run_episode(env, agent, t, seed=k, sample=k // len(tasks)) for k, t in enumerate(tasks + tasks)]


@pytest.fixture
def no_actors(monkeypatch):
    """Fails the test if Ray or an actor is started."""

    def refuse(*a, **k):
        raise AssertionError("Ray or an actor was started")

    monkeypatch.setattr(rollout.pool, "init_ray", refuse)
    monkeypatch.setattr(rollout.pool, "_actor_class", refuse)


# -- the Episode record -------------------------------------------------------------------------
def test_the_runner_returns_an_episode_whose_json_keeps_the_record_keys(episodes):
    ep = episodes[0]
    assert isinstance(ep, Episode) and rollout.Episode is Episode
    line = json.loads(ep.line())
    assert list(line) == list(Episode.model_fields)
    for key in ("episode", "task_id", "sample", "answer", "reward", "messages", "steps", "timing", "scores"):
        assert key in line
    assert line["episode"] == f"{ep.task_id}#{ep.sample}" and line["steps"][0]["status"] == "ok"
    assert Episode.read(line) == ep
    # code written against the dict records still reads them
    assert ep["scores"]["f1_by_item"] == ep.scores.f1_by_item and ep.get("timing")["total_s"] > 0
    assert ep["steps"][0]["tool"] == "search" and ep.get("nope", 7) == 7 and "reward" in ep
    with pytest.raises(KeyError):
        ep["nope"]


def test_construction_is_strict():
    with pytest.raises(ValueError, match="tunrs"):
        Episode.model_validate(json.loads(_old_record()) | {"tunrs": 3})
    with pytest.raises(ValueError, match="status"):
        Episode.read(json.loads(_old_record()) | {"status": "finished"})


def _old_record() -> str:
    """An episode line as the first rollout version wrote it (no knobs, world model, difficulty,
    attempt or worker pid; steps without a status) plus a key this version does not know."""
    return json.dumps({
        "episode": "t1#0", "task_id": "t1", "task_kind": "wide", "sample": 0, "seed": 5, "step": 0,
        "world_hash": "abc", "agent": "baseline", "agent_config": {"name": "baseline"}, "status": "done",
        "error": None, "reason": "answer", "turns": 2, "reward": 0.5,
        "scores": {"instance_id": "t1", "score": 0.0, "f1_by_item": 0.5}, "answer": "| A |", "messages": [],
        "steps": [{"turn": 1, "tool": "open", "arguments": {"url": "u"}, "ok": False, "error": None, "fault": "timeout",
                   "seconds": 0.0, "chars": 10},
                  {"turn": 2, "tool": "answer", "arguments": {}, "ok": True, "seconds": 0.0, "chars": 0}],
        "timing": {"total_s": 1.0, "agent_s": 0.5, "web_s": 0.1}, "from_the_future": 1,
    })  # fmt: skip


def test_run_files_of_earlier_versions_still_load(tmp_path):
    failure = {"episode": "t1#1", "task_id": "t1", "task_kind": "wide", "sample": 1, "seed": 6, "step": 0,
               "world_hash": "abc", "agent": "baseline", "agent_config": {}, "status": "error",
               "error": "RayActorError: died", "reason": "error", "turns": 0, "reward": 0.0, "scores": None,
               "answer": None, "messages": [], "steps": [], "timing": {}, "attempt": 3}  # fmt: skip
    path = tmp_path / "episodes.jsonl"
    path.write_text(_old_record() + "\n" + json.dumps(failure) + "\n[1, 2]\n" + '{"episode": "x"}\n')
    eps, bad = read_episodes(path)
    assert bad == 2 and [e.episode for e in eps] == ["t1#0", "t1#1"]
    old, fail = eps
    assert [s.status for s in old.steps] == ["fault", "ok"] and old.knobs is None and old.attempt == 1
    assert fail.timing.total_s is None and fail.attempt == 3
    assert summarize(eps).metrics["f1_by_item"]["avg_n"] == 0.25  # the failed sample counts as 0
    export_parquet(eps, tmp_path / "e.parquet")
    assert pq.read_table(tmp_path / "e.parquet").column("f1_by_item").to_pylist() == [0.5, None]


def test_parquet_has_a_column_for_every_field(episodes, tmp_path):
    spread = {"scores", "timing"}  # spread over columns of their own
    names = set(SCHEMA.names)
    assert set(Episode.model_fields) - spread <= names
    assert {"score", "f1_by_item", "total_s", "web_s", "advantage", "group_size"} <= names
    table = pq.read_table(export_parquet(episodes, tmp_path / "e.parquet"))
    assert table.schema == SCHEMA and table.num_rows == len(episodes)
    row = table.slice(0, 1).to_pylist()[0]
    ep = episodes[0]
    assert row["episode"] == ep.episode and row["reward"] == ep.reward and row["f1_by_item"] == ep.scores.f1_by_item
    assert json.loads(row["knobs"]) == ep.knobs and json.loads(row["difficulty"]) == ep.difficulty
    assert row["steps"][0]["status"] == "ok" and json.loads(row["steps"][0]["arguments"]) == ep.steps[0].arguments
    assert (
        row["messages"][0]["role"] == "system" and row["advantage"] == group_advantages(episodes)[ep.episode].advantage
    )


def test_group_advantages_and_the_log_take_episodes(episodes, tmp_path):
    adv = group_advantages(episodes)
    assert set(adv) == {e.episode for e in episodes} and all(a.group_size == 2 for a in adv.values())
    log = EpisodeLog(tmp_path, {"world_hash": episodes[0].world_hash, "agent": "baseline"})
    for ep in episodes[:3]:
        log.append(ep)
    log.close()
    assert read_episodes(tmp_path / "episodes.jsonl") == (episodes[:3], 0)


def test_the_pools_failure_record_is_an_episode(tasks):
    job = Job(tasks[0], 1, 9, attempt=3, agent_config={"strategy": {"hops": 0}})
    ep = rollout.pool._failure(job, "abc", "baseline", {"retries": 2}, "error", "RayActorError: died")
    assert isinstance(ep, Episode) and ep.episode == job.key and ep.status == "error" and ep.attempt == 3
    assert ep.agent_config == {"retries": 2, "strategy": {"hops": 0}} and ep.difficulty == tasks[0].difficulty
    assert list(json.loads(ep.line())) == list(Episode.model_fields)


def test_an_actor_call_failure_is_recorded_in_words():
    from ray.exceptions import RayTaskError

    from fictionworld.env import EnvConfig as E

    try:
        E(max_turn=5)
    except ValueError as cause:
        e = RayTaskError("run", "Traceback (most recent call last):\n" + "  File x\n" * 200, cause)
    said = rollout.pool._remote_error(e)
    assert said.startswith("ValidationError: ") and "max_turn" in said and "File x" not in said


# -- every setting checked in the driver, before any actor -----------------------------------------
ENV_TYPO = "env setting 'max_turn': unknown env setting; valid env settings: keep_observations, knobs, max_arg_chars"


def test_an_env_config_typo_stops_run_rollouts_before_any_actor(saved_world, tasks, tmp_path, no_actors):
    with pytest.raises(SetupError) as e:
        run_rollouts(saved_world, make_jobs(tasks, 1), agent="baseline", env_config={"max_turn": 5},
                     out=tmp_path / "run", progress=False)  # fmt: skip
    assert str(e.value).startswith(ENV_TYPO) and not (tmp_path / "run").exists()
    with pytest.raises(SetupError, match="env setting 'max_turn'"):
        RolloutPool(saved_world, agent="oracle", env_config={"max_turn": 5})
    with pytest.raises(SetupError, match=r"env setting 'knobs.fault_rat': unknown env setting"):
        RolloutPool(saved_world, agent="oracle", env_config={"knobs": {"fault_rat": 0.5}})


def test_per_episode_agent_settings_and_run_settings_are_checked(saved_world, tasks, no_actors):
    jobs = make_jobs(tasks, 1)
    jobs[1].agent_config = {"strategy": {"hops": 7}}
    with pytest.raises(SetupError, match=rf"episode {jobs[1].key}: agent 'baseline': .*hops.*<= 2"):
        run_rollouts(saved_world, jobs, agent="baseline", progress=False)
    check_jobs(jobs[:1] + jobs[2:], "baseline")
    with pytest.raises(SetupError, match=r"timeout: must be > 0 seconds, not 0\n.*in_flight: must be >= 1"):
        run_rollouts(saved_world, jobs, agent="baseline", timeout=0, in_flight=0, progress=False)
    with pytest.raises(SetupError, match="workers: must be >= 1, not 0"):
        RolloutPool(saved_world, agent="baseline", workers=0)


class TypoAgent(ToolAgent):
    """An agent whose env defaults have a typo."""

    name = "typo"
    env_defaults = {"max_turn": 5}

    def policy(self, messages, tools, task=None):
        yield {"name": "answer", "arguments": {"text": ""}}


@pytest.fixture
def cli_files(saved_world, tasks, tmp_path, monkeypatch):
    write_tasks(tasks, tmp_path / "tasks.jsonl")
    monkeypatch.setitem(sys.modules, "typo_agents", sys.modules[__name__])
    return ["rollout", str(saved_world), "--tasks", str(tmp_path / "tasks.jsonl"), "--out", str(tmp_path / "run")]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--agent", "typo_agents:TypoAgent"],
         "error: env setting 'max_turn' (from agent 'typo_agents:TypoAgent''s env_defaults): unknown env setting"),
        (["--agent", "oracle", "--agent-config", '{"max_turn": 5}'],
         "error: agent 'oracle': unknown setting(s) 'max_turn'; valid settings: retries, search_pages, delay"),
        (["--agent", "baseline", "--agent-config", '{"max_turn": 5}'], "error: agent 'baseline': setting 'max_turn'"),
    ],
)  # fmt: skip
def test_cli_rollout_names_the_typo_and_starts_no_actor(cli_files, tmp_path, no_actors, args, says):
    r = CliRunner().invoke(app, cli_files + args)
    assert r.exit_code == 2, r.output
    errors = [line for line in r.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(says), r.output
    assert "max_turn" in errors[0] and "Traceback" not in r.output and not (tmp_path / "run").exists()


def test_cli_rollout_checks_the_setup_once(cli_files, tasks, monkeypatch):
    checks = []
    real = rollout.setup._check_setup
    monkeypatch.setattr(rollout.setup, "_check_setup", lambda *a: checks.append(a) or real(*a))

    def stop(*a, **k):  # RolloutPool has checked its setup by now: stop before Ray
        raise SetupError("stopped before Ray")

    monkeypatch.setattr(rollout.pool, "init_ray", stop)
    r = CliRunner().invoke(app, cli_files + ["--agent", "oracle"])
    assert "stopped before Ray" in r.output and len(checks) == 1, (checks, r.output)  # CLI, run_rollouts, pool
    jobs = make_jobs(tasks, 1)
    with pytest.raises(SetupError, match="stopped before Ray"):  # another setup: checked again, once
        run_rollouts(cli_files[1], jobs, agent="oracle", env_config={"max_turns": 3}, progress=False)
    assert len(checks) == 2 and checks[1][3] == {"max_turns": 3}


# -- agents read the status, not the text ----------------------------------------------------------
class Opener(ToolAgent):
    """A scripted agent that opens the given URLs twice each, then answers; ``seen`` keeps what
    ``_open`` gave back."""

    name = "opener"

    def __init__(self, urls, retries=3):
        self.urls, self.retries, self.seen = urls, retries, []

    def policy(self, messages, tools, task=None):
        self.pages = {}
        for url in self.urls * 2:
            self.seen.append((url, (yield from self._open(url))))
        yield {"name": "answer", "arguments": {"text": "none"}}


class FaultyEnv(SearchEnv):
    """Opening any URL in ``self.faulty`` meets ``faults`` injected faults before it works."""

    faulty: set[str] = set()
    faults = 2

    def reset(self, *a, **k):
        out = super().reset(*a, **k)
        session, left = self.session, {u: self.faults for u in self.faulty}
        real_open = session.open

        def open_(url):
            if left.get(url):
                left[url] -= 1
                return ToolResult(status="fault", text=FAULT_TEXT["timeout"], fault="timeout")
            return real_open(url)

        session.open = open_
        return out


def test_a_missing_page_is_not_a_page_and_is_not_asked_for_again(world, tasks):
    good = world.web.article_url_of(tasks[0].provenance[0].entity)
    missing = good + "_No_Such_Page"
    agent = Opener([missing, good])
    ep = run_episode(SearchEnv(world.web), agent, tasks[0], seed=0)
    assert ep.status == "done"
    assert [u for u, text in agent.seen if text is None] == [missing, missing]
    assert agent.pages[missing] is None and agent.pages[good].startswith("# ")
    opens = [s for s in ep.steps if s.tool == "open"]
    assert [(s.arguments["url"], s.status) for s in opens] == [(missing, "not_found"), (good, "ok")]
    assert ep.messages[3]["content"].startswith("Error 404")  # what a model reads; the agent read the status


def test_a_fault_is_retried_and_a_lasting_one_is_not_remembered(world, tasks):
    good = world.web.article_url_of(tasks[0].provenance[0].entity)
    env = FaultyEnv(world.web)
    env.faulty = {good}
    agent = Opener([good])
    ep = run_episode(env, agent, tasks[0], seed=0)
    assert [s.status for s in ep.steps if s.tool == "open"] == ["fault", "fault", "ok"]
    assert agent.seen[0][1] == agent.seen[1][1] == agent.pages[good] and agent.pages[good].startswith("# ")
    env.faults = 5  # more faults than tries: None, not remembered, tried again on the next open
    agent = Opener([good], retries=2)
    ep = run_episode(env, agent, tasks[0], seed=0)
    assert [s.status for s in ep.steps if s.tool == "open"] == ["fault"] * 4
    assert agent.seen == [(good, None), (good, None)] and good not in agent.pages


def test_the_policy_gets_observations_with_the_steps_calls(world, tasks):
    got = []

    class Recorder(ToolAgent):
        name = "recorder"

        def policy(self, messages, tools, task=None):
            obs = yield {"name": "search", "arguments": {"query": "glassworks"}}
            got.append(obs)
            yield {"name": "answer", "arguments": {"text": "x"}}

    run_episode(SearchEnv(world.web), Recorder(), tasks[0], seed=0)
    (obs,) = got
    assert isinstance(obs, Observation) and isinstance(obs, list) and obs[0]["role"] == "tool"
    assert [c.status for c in obs.calls] == ["ok"] and obs.calls[0].tool == "search" and call_status(obs) == "ok"
    with pytest.raises(TypeError, match="Observation.from_step"):
        call_status([{"role": "tool", "content": "Error 404: …"}])
    env = SearchEnv(world.web)
    env.reset(tasks[0], seed=0)
    plain, _, _, _, info = env.step({"name": "open", "arguments": {"url": "https://en.fictopedia.org/wiki/Nope_Nope"}})
    assert call_status(Observation.from_step(plain, info)) == "not_found"


@pytest.mark.ray  # a cluster of its own, of 1 CPU
def test_a_ray_smaller_than_the_workers_is_an_error_not_a_hang(tmp_path):
    """A local Ray started earlier in the process with 1 CPU cannot hold 2 actors: the pool
    says so at once instead of waiting forever for the second one."""
    import ray

    import fictionworld as fw
    from fictionworld.rollouts.pool import SetupError, init_ray

    world = fw.generate(seed=7, entities=600)
    world.save(tmp_path / "w")
    # any two tasks do (a 600-entity world holds few unguessable wide ones)
    tasks = fw.make_tasks(world, 2, kind="deep")
    if ray.is_initialized():
        ray.shutdown()
    init_ray(num_cpus=1)
    try:
        with pytest.raises(SetupError, match="2 workers need 2 CPUs"):
            fw.rollout(tmp_path / "w", tasks, workers=2, progress=False)
    finally:
        ray.shutdown()
