"""Episodes on a Ray actor pool.

Each actor loads the world from disk once and keeps one env and agent; the driver sends one
call per episode (a task record, a sample index, a seed), keeps at most ``in_flight`` calls per
actor, writes each finished episode to ``RUN/episodes.jsonl`` at once, and on rerun skips the
(task, sample) pairs already there. An actor that dies (killed, out of memory) is replaced by a
fresh one and its episodes run again; an episode past ``timeout`` seconds is truncated by the
actor itself, and an actor stuck well past it is killed and the episode recorded as a timeout.
"""

from __future__ import annotations

import json
import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from fictionworld.errors import in_words
from fictionworld.rollouts.episode import episode_key
from fictionworld.rollouts.episode_record import Episode, Timing
from fictionworld.rollouts.records import EpisodeLog, summarize
from fictionworld.rollouts.setup import SetupError, agent_factory, check_jobs, check_room, check_run, check_setup
from fictionworld.seeding import child_seed
from fictionworld.tasks.model import TaskError, check_same_world

__all__ = ["Job", "RolloutResult", "RolloutPool", "run_rollouts", "make_jobs", "init_ray", "check_setup", "check_jobs",
           "SetupError", "agent_factory"]  # fmt: skip

GRACE_S = 30.0  # past the episode timeout, the driver kills a stuck actor
MAX_ATTEMPTS = 3  # an episode whose actor dies this many times is recorded as an error


@dataclass
class Job:
    task: object  # fictionworld.tasks.Task
    sample: int
    seed: int
    step: int = 0
    agent_config: dict = field(default_factory=dict)  # per-episode overrides (e.g. a sampled strategy)
    attempt: int = 1
    timed_out: bool = False

    @property
    def key(self) -> str:
        return episode_key(self.task.instance_id, self.sample)


@dataclass
class RolloutResult:
    records: list[Episode]  # one per episode (the latest), finished in this run or before
    new: int  # episodes run now
    skipped: int  # episodes found done in RUN and not run again
    restarts: int  # actors replaced after dying
    path: Path | None
    seconds: float

    def summary(self, samples: int | None = None):
        return summarize([r for r in self.records if r.scores is not None], samples)


def make_jobs(tasks, samples: int, seed: int = 0, step: int = 0) -> list[Job]:
    """``samples`` episodes per task; each episode's seed depends on (seed, task, sample) only."""
    out = []
    for t in tasks:
        for k in range(samples):
            s = int(child_seed(seed, f"episode/{t.instance_id}/{k}").generate_state(1)[0])
            out.append(Job(t, k, s, step))
    return out


def init_ray(address: str | None = None, num_cpus: int | None = None) -> None:
    import ray

    if ray.is_initialized():
        return
    os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")
    kw = {"address": address} if address else {"num_cpus": num_cpus, "include_dashboard": False}
    ray.init(ignore_reinit_error=True, log_to_driver=True, logging_level="ERROR", **kw)


def _actor_class():
    import ray

    @ray.remote(num_cpus=1, max_restarts=0)
    class RolloutWorker:
        """Holds one world (loaded once from disk), one env and one agent. One that cannot build
        them reports why in :meth:`info` (the pool stops before any episode) instead of dying
        with a traceback in the driver's log."""

        def __init__(self, world_dir: str, agent: str, agent_config: dict, env_config: dict):
            self.error: str | None = None
            try:
                self._build(world_dir, agent, agent_config, env_config)
            except Exception as e:  # noqa: BLE001 — reported to the driver in words
                self.error = in_words(e)

        def _build(self, world_dir: str, agent: str, agent_config: dict, env_config: dict) -> None:
            from fictionworld.env import EnvConfig, SearchEnv
            from fictionworld.rollouts.agents import make_agent
            from fictionworld.world import World

            self.world = World.load(world_dir)
            self.web = self.world.web
            self.agent_name, self.agent_config = agent, agent_config
            self.agent = make_agent(agent, world=self.world, **agent_config)
            self.env = SearchEnv(self.web, EnvConfig(**(self.agent.env_defaults | env_config)))
            self._agents: dict[str, object] = {}

        def info(self) -> dict:
            import psutil

            return {"pid": os.getpid(), "rss": psutil.Process().memory_info().rss, "error": self.error}

        def run(self, job: Job, timeout: float) -> Episode:

            from fictionworld.rollouts.agents import make_agent
            from fictionworld.rollouts.episode import run_episode

            if self.error:
                raise RuntimeError(f"this rollout worker could not start: {self.error}")
            agent = self.agent
            if job.agent_config:
                key = json.dumps(job.agent_config, sort_keys=True)
                if key not in self._agents:
                    self._agents[key] = make_agent(self.agent_name, world=self.world,
                                                   **(self.agent_config | job.agent_config))  # fmt: skip
                agent = self._agents[key]
            ep = run_episode(self.env, agent, job.task, seed=job.seed, sample=job.sample, step=job.step,
                             deadline=time.monotonic() + timeout)  # fmt: skip
            ep.attempt = job.attempt
            ep.worker_pid = os.getpid()
            return ep

    return RolloutWorker


class RolloutPool:
    """A pool of ``workers`` actors for one world and agent, reused across calls to
    :meth:`run` (a training loop keeps it for every iteration). Use as a context manager. Every
    setting is checked in the driver (:func:`check_setup`) before Ray or any actor starts."""

    def __init__(self, world_dir: str | Path, *, agent: str = "oracle", agent_config: dict | None = None,
                 env_config: dict | None = None, workers: int = 2, address: str | None = None,
                 world_hash: str | None = None):  # fmt: skip
        self.world_dir = str(Path(world_dir).resolve())
        self.agent, self.agent_config = agent, dict(agent_config or {})
        self.env_config = dict(env_config or {})
        check_run(workers=workers)
        # ``world_hash``: what check_setup returned to a caller that checked these settings already
        self.world_hash = world_hash or check_setup(self.world_dir, agent, self.agent_config, self.env_config)
        try:
            init_ray(address, num_cpus=None if address else max(workers, 1))
        except (ValueError, ConnectionError) as e:  # e.g. a malformed --address
            raise SetupError(f"cannot start Ray{f' at {address!r}' if address else ''}: {in_words(e)}") from None
        check_room(workers, address)
        self._worker = _actor_class()
        self.actors = [self._spawn() for _ in range(workers)]
        self.restarts = 0
        self._check_started()

    def _check_started(self) -> None:
        """Waits until every actor holds its world, agent and env; stops here (SetupError) if one
        cannot, e.g. a world whose files are corrupt past its manifest."""
        from ray.exceptions import RayActorError

        try:
            problems = [i["error"] for i in self.info() if i.get("error")]
        except RayActorError as e:  # died while starting (killed, out of memory)
            problems = [(getattr(e, "error_msg", "") or str(e)).strip().splitlines()[-1]]
        if problems:
            self.close()
            raise SetupError(f"the rollout workers could not start: {problems[0]}")

    def _spawn(self):
        return self._worker.remote(self.world_dir, self.agent, self.agent_config, self.env_config)

    def __enter__(self) -> RolloutPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        import ray

        for a in self.actors:
            try:
                ray.kill(a, no_restart=True)
            except Exception:  # noqa: BLE001
                pass
        self.actors = []

    def info(self) -> list[dict]:
        """Each actor's process id and resident memory."""
        import ray

        return ray.get([a.info.remote() for a in self.actors])

    def run(self, jobs: list[Job], *, log: EpisodeLog | None = None, timeout: float = 600.0, in_flight: int = 2,
            on_episode: Callable[[Episode], None] | None = None, bar: _Progress | None = None,
            max_errors: int | None = 20) -> list[Episode]:  # fmt: skip
        """Runs ``jobs``; returns their episodes in finishing order (each also appended to ``log``).
        The jobs' per-episode agent settings are checked first (SetupError, nothing run)."""
        import ray
        from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError

        check_run(timeout=timeout, in_flight=in_flight)
        check_jobs(jobs, self.agent, self.agent_config)
        todo = deque(jobs)
        slots = deque(i for i in range(len(self.actors)) for _ in range(in_flight))
        pending: dict = {}  # ref -> (job, actor index, started, actor handle)
        out: list[Episode] = []
        errors_in_row = 0
        world_hash, agent, agent_config = self.world_hash, self.agent, self.agent_config
        while todo or pending:
            while todo and slots:
                i = slots.popleft()
                job = todo.popleft()
                a = self.actors[i]
                pending[a.run.remote(job, timeout)] = (job, i, time.monotonic(), a)
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)
            now = time.monotonic()
            for ref in ready:
                job, i, started, handle = pending.pop(ref)
                try:
                    rec = ray.get(ref, timeout=60)
                except (RayActorError, RayTaskError, GetTimeoutError) as e:
                    if isinstance(e, RayActorError) and self.actors[i] is handle:  # first news of this death
                        self.actors[i] = _replace(handle, self._spawn)
                        self.restarts += 1
                    if job.timed_out:
                        rec = _failure(
                            job, world_hash, agent, agent_config, "timeout", f"episode ran past {timeout:.0f} s"
                        )
                    elif job.attempt < MAX_ATTEMPTS:
                        job.attempt += 1
                        todo.appendleft(job)
                        slots.append(i)
                        continue
                    else:
                        rec = _failure(job, world_hash, agent, agent_config, "error", _remote_error(e))
                slots.append(i)
                out.append(rec)
                if log:
                    log.append(rec)
                if on_episode:
                    on_episode(rec)
                if bar:
                    bar.add(rec)
                errors_in_row = errors_in_row + 1 if rec.status == "error" else 0
                if max_errors is not None and errors_in_row >= max_errors:
                    raise RuntimeError(f"{errors_in_row} episodes in a row failed; last error: {rec.error}")
            for job, _i, started, handle in list(pending.values()):
                if now - started > timeout + GRACE_S and not job.timed_out:
                    job.timed_out = True  # the actor is stuck: kill it; its calls fail and are recorded
                    ray.kill(handle, no_restart=True)
        return out


def run_rollouts(
    world_dir: str | Path,
    jobs: list[Job],
    *,
    agent: str = "oracle",
    agent_config: dict | None = None,
    env_config: dict | None = None,
    workers: int = 2,
    out: str | Path | None = None,
    timeout: float = 600.0,
    in_flight: int = 2,
    address: str | None = None,
    on_episode: Callable[[Episode], None] | None = None,
    progress: bool = True,
    max_errors: int | None = 20,
) -> RolloutResult:
    """Runs ``jobs`` on ``workers`` actors and returns their episodes (with ``out``, the run
    directory's earlier episodes of these jobs too: a rerun resumes, skipping finished ones).
    Every setting is checked first, before Ray starts or RUN is written (SetupError). Raises
    after ``max_errors`` failed episodes in a row (e.g. an LLM endpoint that is down), keeping
    every episode that finished. Tasks made from another world are refused (SetupError)."""
    t0 = time.perf_counter()
    world_dir = str(Path(world_dir).resolve())
    check_run(workers=workers, timeout=timeout, in_flight=in_flight)
    world_hash = check_setup(world_dir, agent, agent_config, env_config)  # before Ray starts or RUN is written
    try:
        check_same_world(list({id(j.task): j.task for j in jobs}.values()), world_hash, world_dir)
    except TaskError as e:
        raise SetupError(str(e)) from None
    check_jobs(jobs, agent, agent_config)
    log = None
    records: dict[str, Episode] = {}
    if out is not None:
        meta = {"world": world_dir, "world_hash": world_hash, "agent": agent, "agent_config": agent_config or {},
                "env_config": env_config or {}}  # fmt: skip
        log = EpisodeLog(out, meta)
        records = {r.episode: r for r in log.latest()}
    done = log.done() if log else set()
    todo = [j for j in jobs if j.key not in done]
    wanted = {j.key for j in jobs}
    bar = (
        _Progress(len(jobs), len(jobs) - len(todo), [r for k, r in records.items() if k in wanted])
        if progress
        else None
    )
    restarts = 0
    try:
        if todo:
            with RolloutPool(world_dir, agent=agent, agent_config=agent_config, env_config=env_config,
                             workers=min(workers, len(todo)), address=address, world_hash=world_hash) as pool:  # fmt: skip
                for rec in pool.run(todo, log=log, timeout=timeout, in_flight=in_flight, on_episode=on_episode,
                                    bar=bar, max_errors=max_errors):  # fmt: skip
                    records[rec.episode] = rec
                restarts = pool.restarts
    finally:
        if bar:
            bar.close()
        if log:
            log.close()
    recs = [r for k, r in records.items() if k in wanted]
    return RolloutResult(recs, len(todo), len(jobs) - len(todo), restarts, log.path if log else None,
                         time.perf_counter() - t0)  # fmt: skip


def _replace(actor, spawn):
    import ray

    try:
        ray.kill(actor, no_restart=True)
    except Exception:  # noqa: BLE001 — it is dead already
        pass
    return spawn()


def _failure(job: Job, world_hash, agent, agent_config, status: str, error: str) -> Episode:
    """The episode of a job that never finished: its actor died on every try, or was stuck."""
    t = job.task
    return Episode(episode=job.key, task_id=t.instance_id, task_kind=t.kind, sample=job.sample, seed=job.seed,
                   step=job.step, world_hash=world_hash, agent=agent, agent_config=agent_config | job.agent_config,
                   status=status, error=error, reason=status, turns=0, reward=0.0, scores=None, answer=None,
                   messages=[], steps=[], timing=Timing(), difficulty=t.difficulty, attempt=job.attempt)  # fmt: skip


def _remote_error(e: Exception) -> str:
    """A failed actor call in one line: the exception raised in the actor (in words, not Ray's
    traceback), or the first line of why the actor died."""
    cause = getattr(e, "cause", None)
    if isinstance(cause, Exception):
        return f"{type(cause).__name__}: {in_words(cause)}"[:500]
    text = (getattr(e, "error_msg", "") or str(e)).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else 'no details'}"[:500]


class _Progress:
    """Episodes done, with the running mean success rate and item F1: rich's bar on a terminal,
    else a line every few seconds (:func:`~fictionworld.progress.progress_bar`), on stderr."""

    def __init__(self, total: int, done: int, prior: list[Episode]):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

        from fictionworld.progress import progress_bar

        self.sr = [r.scores.score for r in prior if r.scores]
        self.f1 = [r.scores.f1_by_item for r in prior if r.scores]
        self.p = progress_bar(Console(stderr=True), TextColumn("episodes"), BarColumn(), MofNCompleteColumn(),
                              TextColumn("{task.fields[metrics]}"), TimeElapsedColumn())  # fmt: skip
        self.p.start()
        self.t = self.p.add_task("episodes", total=total, completed=done, metrics=self._text())

    def _text(self) -> str:
        if not self.sr:
            return ""
        return f"SR {sum(self.sr) / len(self.sr):.3f}  Item F1 {sum(self.f1) / len(self.f1):.3f}"

    def add(self, ep: Episode) -> None:
        if ep.scores:
            self.sr.append(ep.scores.score)
            self.f1.append(ep.scores.f1_by_item)
        self.p.update(self.t, advance=1, metrics=self._text())

    def close(self) -> None:
        self.p.stop()
