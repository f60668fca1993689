"""Task sets: ``generate_tasks(world, n)`` and recomputing a stored task against its world."""

from __future__ import annotations

from collections.abc import Callable

from fictionworld.errors import FictionWorldError
from fictionworld.registry import RegistryError, make
from fictionworld.tasks.model import Task
from fictionworld.tasks.query import GraphIndex, evaluate
from fictionworld.tasks.wide import TaskKnobs

__all__ = ["generate_tasks", "recompute", "TaskGenerationError"]


class TaskGenerationError(FictionWorldError, RuntimeError):
    exit_code = 1
    pass


def generate_tasks(
    world,
    n: int,
    *,
    kind: str = "wide",
    seed: int = 0,
    knobs: TaskKnobs | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[Task]:
    """``n`` tasks drawn from ``world``: the same (world, n, kind, seed, knobs) always gives the
    same tasks. ``kind`` is a registered task kind (``wide``, ``deep``, or an id such as
    ``fictionworld/WideTable-v1``); ``mixed`` alternates wide and deep. Draws that find no task
    within their attempts are skipped; too many skips (knobs the world cannot satisfy) raise."""
    knobs = knobs or TaskKnobs()
    cycle = ("wide", "deep") if kind == "mixed" else (kind,)
    try:
        gens = {k: make(k, kind="task", world=world, seed=seed, knobs=knobs) for k in cycle}
    except RegistryError as e:
        raise ValueError(f"unknown task kind {kind!r}: {e} (or mixed)") from None
    out: list[Task] = []
    seen: set[str] = set()
    i = 0
    while len(out) < n:
        if i >= 4 * n + 20:
            raise TaskGenerationError(
                f"found only {len(out)} of {n} {kind} tasks in {i} draws: this world has too few entities "
                f"for the knobs (rows {knobs.rows_min}–{knobs.rows_max}, {knobs.columns} columns, "
                f"selectivity {knobs.selectivity}, guess gain {knobs.guess_gain}); lower them (or raise the guess "
                "gain) or generate a larger world"
            )
        k = cycle[i % len(cycle)]
        task = gens[k].task(i)
        i += 1
        if task is None:
            continue
        sig = task.graph_query.model_dump_json() if task.graph_query else task.instance_id
        if sig in seen:  # two draws can land on the same question
            continue
        seen.add(sig)
        out.append(task)
        if progress:
            progress(len(out))
    return out


def recompute(world, task: Task) -> list[list[str]]:
    """The task's gold rows recomputed from its stored graph query (equal to ``task.gold.rows``
    for the world it came from)."""
    if task.graph_query is None:
        raise ValueError(f"task {task.instance_id} has no graph query (an imported task?)")
    if task.world_hash and task.world_hash != world.world_hash:
        raise ValueError(
            f"task {task.instance_id} belongs to world {task.world_hash[:12]}, not {world.world_hash[:12]}"
        )
    ans = evaluate(world, task.graph_query, GraphIndex(world))
    return [[c.text if c is not None else "" for c in row] for row in ans.cells]
