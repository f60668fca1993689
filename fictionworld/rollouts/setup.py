"""Checks a rollout's setup in the driver, before Ray or any actor starts: the world's manifest,
the agent and its settings (and each episode's overrides), the env settings, the run settings,
and room on a local Ray for the workers. Every problem is a :class:`SetupError` in words."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from fictionworld.errors import FictionWorldError

if TYPE_CHECKING:
    from fictionworld.rollouts.pool import Job

__all__ = ["SetupError", "check_setup", "check_jobs", "check_run", "check_room", "agent_factory"]


class SetupError(FictionWorldError, ValueError):
    """A rollout that cannot start: its world, agent or env settings are wrong. Found in the
    driver, before Ray starts or a run directory is written."""


def check_setup(world_dir: str | Path, agent: str, agent_config: dict | None = None,
                env_config: dict | None = None) -> str:  # fmt: skip
    """Checks in the driver what every actor will build (the world's manifest, the agent and
    its settings, the env config: ``EnvConfig`` of the agent's ``env_defaults`` and
    ``env_config``) and returns the world's hash. Raises :class:`SetupError` (WorldFormatError
    for the world) with one line per problem. :func:`run_rollouts` checks once and hands the
    hash to its :class:`RolloutPool`; a pool made directly checks for itself."""
    return _check_setup(world_dir, agent, dict(agent_config or {}), dict(env_config or {}))


def _check_setup(world_dir, agent: str, agent_config: dict, env_config: dict) -> str:
    from fictionworld.storage import read_manifest

    world_hash = str(read_manifest(world_dir)["world_hash"])
    factory = agent_factory(agent)
    defaults = _agent_env_defaults(factory, agent, agent_config)
    _check_env(defaults | env_config, from_agent={k for k in defaults if k not in env_config}, agent=agent)
    return world_hash


def check_jobs(jobs: list[Job], agent: str, agent_config: dict | None = None) -> None:
    """Checks in the driver each distinct per-episode agent override (``Job.agent_config``, e.g.
    a sampled strategy) merged into ``agent_config``, as an actor would build it; SetupError."""
    overrides: dict[str, Job] = {}
    for job in jobs:
        if job.agent_config:
            overrides.setdefault(json.dumps(job.agent_config, sort_keys=True, default=repr), job)
    if not overrides:
        return
    factory = agent_factory(agent)
    for job in overrides.values():
        try:
            _agent_env_defaults(factory, agent, dict(agent_config or {}) | job.agent_config)
        except SetupError as e:
            raise SetupError(f"episode {job.key}: {e}") from None


_RUN_RULES = {  # run settings: (test, what it must be)
    "workers": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1, ">= 1"),
    "in_flight": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1, ">= 1"),
    "timeout": (lambda v: isinstance(v, int | float) and not isinstance(v, bool) and v > 0, "> 0 seconds"),
}


def check_run(**settings) -> None:
    problems = [f"{k}: must be {_RUN_RULES[k][1]}, not {v!r}" for k, v in settings.items() if not _RUN_RULES[k][0](v)]
    if problems:
        raise SetupError("\n".join(problems))


def agent_factory(name: str):
    """What :func:`fictionworld.rollouts.agents.make_agent` would build ``name`` with, or SetupError."""
    from fictionworld.rollouts.agents.base import agent_class

    try:
        return agent_class(name)
    except ValueError as e:
        raise SetupError(str(e)) from None


def _agent_env_defaults(factory, name: str, config: dict) -> dict:
    """Builds the agent once (a privileged agent, which needs the world, only has its settings
    checked against its signature) and returns its env defaults."""
    import inspect

    from pydantic import ValidationError

    from fictionworld.errors import problem_lines

    privileged = getattr(factory, "privileged", False)
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # no signature to read: building it tells
        params = None
    if params is not None and not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        valid = [k for k, p in params.items() if k != "world" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        unknown = sorted(set(config) - set(valid))
        if unknown:
            raise SetupError(f"agent {name!r}: unknown setting(s) {', '.join(map(repr, unknown))}; "
                             f"valid settings: {', '.join(valid)}")  # fmt: skip
    if privileged:
        return dict(getattr(factory, "env_defaults", {}) or {})
    try:
        built = factory(**config)
    except ValidationError as e:
        raise SetupError("\n".join(f"agent {name!r}: {x}" for x in problem_lines(e, what="setting"))) from None
    except (TypeError, ValueError) as e:
        raise SetupError(f"agent {name!r}: {e}") from None
    return dict(getattr(built, "env_defaults", {}) or {})


def _check_env(config: dict, from_agent: set[str] = frozenset(), agent: str = "") -> None:
    """``EnvConfig(**config)`` or SetupError, one line per problem; a problem in a setting that
    came from the agent's ``env_defaults`` says so."""
    from pydantic import ValidationError

    from fictionworld.env import EnvConfig
    from fictionworld.errors import problem_lines

    def label(path: str) -> str:
        origin = f" (from agent {agent!r}'s env_defaults)" if path.split(".")[0] in from_agent else ""
        return f"env setting {path!r}{origin}"

    try:
        EnvConfig(**config)
    except ValidationError as e:
        raise SetupError("\n".join(problem_lines(e, what="env setting", model=EnvConfig, label=label))) from None


def check_room(workers: int, address: str | None) -> None:
    """A local Ray started earlier in this process with fewer CPUs than ``workers`` would leave
    actors unscheduled forever: say so instead. (A cluster at ``address`` may autoscale.)"""
    import ray

    cpus = ray.cluster_resources().get("CPU", 0)
    if address is None and cpus < workers:
        raise SetupError(
            f"{workers} workers need {workers} CPUs, but the Ray started earlier in this process has "
            f"{cpus:g}: use fewer workers, or ray.shutdown() first"
        )
