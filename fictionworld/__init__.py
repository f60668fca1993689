"""fictionworld: consistent fictional worlds as training grounds for search agents.

One way per job, all from ``import fictionworld as fw``:

>>> import fictionworld as fw
>>> world = fw.generate(seed=7, entities=600)          # same seed, same world
>>> fw.validate(world)                                  # no fact contradicts another
[]
>>> tasks = fw.make_tasks(world, 2, kind="wide")        # WideSearch-style tables, with gold
>>> [r.title for r in fw.search(world, tasks[0].gold.rows[0][0])][:1] != []
True
>>> env = fw.make("fictionworld/Search-v0", world=world, tasks=tasks, max_turns=8)
>>> fw.check_env(env)
[]
>>> fw.score(tasks[0].gold.markdown(), tasks[0]).score, fw.score("no table here", tasks[0]).score
(1.0, 0.0)

Everything below the facade (``fictionworld.web``, ``fictionworld.tasks``, ``rollout``, …) is
importable too; this module only names the public entry points, and imports the heavier layers
when they are first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fictionworld._version import __version__
from fictionworld.check import check_world
from fictionworld.determinism import check_determinism
from fictionworld.knobs import Knobs, Schedule, WebSpec
from fictionworld.records import Entity, Fact, Violation, ViolationKind
from fictionworld.registry import make, register, registered
from fictionworld.spec import EntityTypeConfig, WorldSpec, default_spec
from fictionworld.storage import WorldFormatError, load_world
from fictionworld.world import FORMAT, World

if TYPE_CHECKING:
    from fictionworld.env import EnvConfig, SearchEnv, check_env
    from fictionworld.scoring import Scores
    from fictionworld.tasks.model import Task
    from fictionworld.web import Page, PageNotFound, SearchResult, Web

__all__ = [
    # the jobs, one function each
    "generate",
    "load",
    "validate",
    "search",
    "open",
    "make_tasks",
    "load_tasks",
    "score",
    "make",
    "check_env",
    "rollout",
    # registry
    "register",
    "registered",
    # types
    "World",
    "WorldSpec",
    "EntityTypeConfig",
    "default_spec",
    "Entity",
    "Fact",
    "Violation",
    "ViolationKind",
    "WorldFormatError",
    "Knobs",
    "Schedule",
    "WebSpec",
    "Task",
    "Scores",
    "SearchEnv",
    "EnvConfig",
    "Web",
    "SearchResult",
    "Page",
    "PageNotFound",
    # earlier names, kept
    "check_world",
    "check_determinism",
    "load_world",
    "FORMAT",
    "__version__",
]

# Names served from the layers above, imported on first use (PEP 562).
_LAZY = {
    "Task": "fictionworld.tasks.model",
    "Scores": "fictionworld.scoring",
    "SearchEnv": "fictionworld.env",
    "EnvConfig": "fictionworld.env",
    "check_env": "fictionworld.env",
    "Web": "fictionworld.web",
    "SearchResult": "fictionworld.web",
    "Page": "fictionworld.web",
    "PageNotFound": "fictionworld.web",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'fictionworld' has no attribute {name!r}")


def generate(seed: int, entities: int | None = None, spec: WorldSpec | None = None, progress=None) -> World:
    """A world from ``spec`` (default: :func:`default_spec`), scaled to ``entities`` if given.
    Same seed and spec, same world (and ``world_hash``) on any machine."""
    from fictionworld.generators import generate_world

    if spec is None:
        spec = default_spec(entities or 10_000)
    elif entities is not None:
        spec = spec.scaled(entities)
    return generate_world(spec, seed, progress=progress)


def load(path, *, verify: bool | str = True) -> World:
    """A world saved with ``World.save`` or ``fictionworld generate`` (its web opens on first
    search). ``verify``: True recomputes the content hash, ``"files"`` checks the data files'
    digests (and reads the tables lazily), ``"on-read"`` checks each file's digest before its
    first read (a server's choice), False trusts them (see :func:`load_world`)."""
    return load_world(path, verify=verify)


def validate(world: World) -> list[Violation]:
    """Every broken rule of ``world`` (contradictions, impossible dates, …); ``[]`` when none."""
    return check_world(world)


def search(
    world: World | Web, query: str, k: int | None = None, page: int = 1, knobs: Knobs | None = None
) -> list[SearchResult]:
    """Ranked results for ``query`` in the world's web (``k`` per page, pages from 1)."""
    return _web(world).search(query, k, page, knobs)


def open(world: World | Web, url: str, knobs: Knobs | None = None) -> Page | PageNotFound:  # noqa: A001
    """The page at ``url``, or :class:`PageNotFound`."""
    return _web(world).open(url, knobs)


def make_tasks(world: World, n: int, *, kind: str = "wide", seed: int = 0, knobs=None, progress=None) -> list[Task]:
    """``n`` tasks of ``kind`` (``wide``, ``deep``, ``mixed``, or a registered task id) drawn
    from ``world``, each with its graph query and gold rows: same arguments, same tasks."""
    from fictionworld.tasks.generate import generate_tasks

    return generate_tasks(world, n, kind=kind, seed=seed, knobs=knobs, progress=progress)


def load_tasks(path) -> list[Task]:
    """Tasks from a ``tasks.jsonl`` this project wrote, or an official ``widesearch.jsonl``
    (with its gold tables beside it)."""
    from fictionworld.scoring.io import load_tasks as _load

    return _load(path)[0]


def score(response: str, task: Task, *, mode: str = "strict", **options) -> Scores:
    """WideSearch scores of one response: ``strict`` (the RL reward) or ``compat`` (the
    official evaluator's numbers), or any registered scorer."""
    from fictionworld.scoring import score as _score

    return _score(response, task, mode=mode, **options)


def rollout(world_dir, tasks, *, agent: str = "oracle", samples: int = 1, seed: int = 0, **options):
    """Episodes of ``agent`` on ``tasks`` over the saved world ``world_dir``, run on a local Ray
    cluster (see :func:`fictionworld.rollouts.pool.run_rollouts` for ``workers``, ``out``, ``env_config`` …)."""
    from fictionworld.rollouts.pool import make_jobs, run_rollouts

    return run_rollouts(world_dir, make_jobs(tasks, samples, seed), agent=agent, **options)


def _web(world):
    return world.web if isinstance(world, World) else world
