"""``check_world_dir``: every check of :func:`~fictionworld.check.check_world` on a saved world,
as tasks that each hold a few predicates' facts, never the whole world.

The predicates are cut into groups that no rule reads across (:data:`TOGETHER` names the
pairs one rule reads together: inverses, an interval's two ends, a role and the job it
needs, ...); the facts of a predicate sit in a few runs of the file, so a unit of groups
reads only the row groups that hold them. What rules read from other predicates is small
and per entity (origin and end dates, the ``located_in`` parent and country): a first pass
writes it once, a row group at a time, and every unit maps it. Fact ids used twice, and the
names of the entities, are checked in units of their own. Units run as local processes or Ray
tasks (:mod:`fictionworld.executors`); their findings are merged in unit order, so the result
does not depend on the number of workers.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from fictionworld.check.base import CONTEXT_PREDICATES, CheckContext, Checker, ContextBuilder
from fictionworld.errors import FictionWorldError
from fictionworld.records import Violation
from fictionworld.records import ViolationKind as K
from fictionworld.schema import ORDERED_ATTRIBUTES, PREDICATE_CODE, PREDICATES, RELATIONS

__all__ = ["check_world_dir", "CheckError", "TOGETHER", "predicate_groups", "plan_units", "UNIT_FACTS"]

TOGETHER: tuple[tuple[str, ...], ...] = (
    *ORDERED_ATTRIBUTES.values(),  # birth before death, an event's start before its end
    *((name, r.inverse) for name, r in RELATIONS.items() if r.inverse),  # parent_of / child_of, ...
    ("works_for", "ceo_of"),  # a chief executive is employed for the whole term
    ("acquired_by", "subsidiary_of"),  # an acquisition makes a subsidiary
    ("child_of", "sibling_of"),  # siblings share a parent
    ("born_in", "citizen_of"),  # citizenship follows the birthplace
    ("revenue_usd", "employees"),  # revenue per employee
    ("runtime_min", "track_count"),  # minutes per track
)
"""Predicates whose facts one rule reads together (every other rule reads one predicate's
facts, and the per-entity :class:`~fictionworld.check.base.CheckContext`)."""

UNIT_FACTS = 4_000_000
"""Facts per unit, at most (a unit holds a whole group, however big): a process checking one
peaked at about 1 GiB on a 1M-entity world."""

Progress = Callable[[str, int, int], None]


class CheckError(FictionWorldError, RuntimeError):
    """A streamed check that could not be run to its end (not a violation in the world)."""

    exit_code = 1


def predicate_groups() -> list[tuple[int, ...]]:
    """Predicate codes cut into the smallest groups that keep every :data:`TOGETHER` set whole."""
    root = list(range(len(PREDICATES)))

    def find(i: int) -> int:
        while root[i] != i:
            root[i] = root[root[i]]
            i = root[i]
        return i

    for names in TOGETHER:
        codes = [PREDICATE_CODE[n] for n in names]
        for c in codes[1:]:
            a, b = find(codes[0]), find(c)
            root[max(a, b)] = min(a, b)
    groups: dict[int, list[int]] = {}
    for i in range(len(PREDICATES)):
        groups.setdefault(find(i), []).append(i)
    return [tuple(g) for g in groups.values()]


def plan_units(counts: np.ndarray, max_facts: int = UNIT_FACTS) -> list[dict]:
    """Units of whole predicate groups from ``counts`` (facts per row group and predicate):
    groups taken in the order their facts come in the file, a unit closed before it would pass
    ``max_facts``. Each unit: ``codes`` (predicates), ``groups`` (row groups to read), ``facts``."""
    per_pred = counts.sum(axis=0)
    first = np.where(counts.any(axis=0), (counts > 0).argmax(axis=0), len(counts))
    groups = sorted(predicate_groups(), key=lambda g: (min(first[list(g)]), g))
    units: list[dict] = []
    for g in groups:
        n = int(per_pred[list(g)].sum())
        if not units or units[-1]["facts"] + n > max_facts:
            units.append({"codes": [], "facts": 0})
        units[-1]["codes"] += list(g)
        units[-1]["facts"] += n
    for u in units:
        u["codes"] = sorted(u["codes"])
        u["groups"] = np.flatnonzero(counts[:, u["codes"]].sum(axis=1)).tolist()
    return units


# -- tasks: run in a local process or as Ray tasks ---------------------------------------------
_CONTEXT_FILES = ("origin", "death", "parent", "country")
IDS, NAMES = {"rule": "fact ids"}, {"rule": "names"}  # the two units that read no context


def check_context(path: str, work: str) -> tuple[str, float]:
    """The first pass: facts per row group and predicate (``counts.npy``) and the
    :class:`CheckContext`, written to ``work`` for the units to map."""
    from fictionworld.streaming import SavedWorld

    t = time.process_time()
    w = SavedWorld(path)
    counts = w.predicate_counts()
    b = ContextBuilder(w.entities.type_code.astype(np.int64))
    for g in np.flatnonzero(counts[:, list(CONTEXT_PREDICATES)].sum(axis=1)).tolist():  # a row group at a time
        f = w.facts([g], CONTEXT_PREDICATES, ("subject", "object", "value_date"))
        b.add(f.subject, f.predicate.astype(np.int32), f.object, f.v_date)
    ctx = b.finish()
    for name, arr in (("counts", counts), *zip(_CONTEXT_FILES, ctx)):
        tmp = Path(work) / f"{name}.tmp.npy"
        np.save(tmp, arr)
        os.replace(tmp, Path(work) / f"{name}.npy")
    return _node(), time.process_time() - t


def check_unit(path: str, work: str, unit: dict, limit: int) -> tuple[dict, dict, str, float]:
    """Run every check over one unit's facts (``unit["codes"]``), or the rules of ``IDS``
    (fact ids used twice, a row group at a time) or ``NAMES`` (the entities' names)."""
    from fictionworld.check import CHECKS, give_back_freed_memory
    from fictionworld.check.structure import repeated_ids, report_repeated_ids
    from fictionworld.streaming import SavedWorld

    t = time.process_time()
    w = SavedWorld(path)
    codes, rule = unit.get("codes", []), unit.get("rule")
    facts = w.facts(unit["groups"], codes) if codes else _no_facts()
    ctx = None  # (the two units without facts read no context: they may run before it is written)
    if codes:
        ctx = CheckContext(*(np.load(Path(work) / f"{name}.npy", mmap_mode="r") for name in _CONTEXT_FILES))
    world = SimpleNamespace(spec=w.spec, entities=w.entities, facts=facts)
    c = Checker(world, limit, owned=codes, entity_rules=rule == NAMES["rule"], context=ctx)
    if rule == IDS["rule"]:
        report_repeated_ids(c, repeated_ids(lambda: w.column("id")))
    else:
        for check in CHECKS:
            check(c)
            give_back_freed_memory()
    return dict(c.found), dict(c.extra), _node(), time.process_time() - t


def _no_facts():
    from fictionworld.tables import FactTable

    return FactTable.empty()


def _node() -> str:
    from fictionworld.executors import node_name

    return node_name()


class StreamedCheck:
    """The tasks of one streamed check and what they found, for any driver loop: :meth:`start`
    gives the first tasks (the first pass, and the two units that need none of it), and
    :meth:`done` takes each task's result and gives the tasks it lets start; once every unit
    is done, :attr:`violations` holds the merged list. Tasks are ``(key, (fn, *args))``."""

    def __init__(self, path: str | Path, work: str | Path, limit: int, max_facts: int = UNIT_FACTS):
        self.path, self.work, self.limit, self.max_facts = str(path), str(work), limit, max_facts
        self.units: dict = {"ids": IDS, "names": NAMES}
        self.results: dict = {}
        self.planned = False
        self.violations: list[Violation] | None = None
        self.cpu: dict = {}

    def _job(self, key) -> tuple:
        return key, (check_unit, self.path, self.work, self.units[key], self.limit)

    def start(self) -> list[tuple]:
        """The tasks to run now: all of them at first; after a restart, those that did not report."""
        first = [] if self.planned else [("context", (check_context, self.path, self.work))]
        return first + [self._job(k) for k in self.units if k not in self.results]

    def done(self, key, value: tuple) -> list[tuple]:
        *found, _node, cpu = value
        self.cpu[key] = cpu
        if key == "context":
            self.planned = True
            units = plan_units(np.load(Path(self.work) / "counts.npy"), self.max_facts)
            self.units.update(enumerate(units))
            return [self._job(k) for k in range(len(units))]
        self.results[key] = found
        if self.planned and len(self.results) == len(self.units):
            order = ["ids", *sorted(k for k in self.units if isinstance(k, int)), "names"]
            self.violations = merge(self.limit, [self.results[k] for k in order])
        return []


# -- the driver -------------------------------------------------------------------------------
def check_world_dir(
    path: str | Path,
    *,
    limit_per_kind: int = 200,
    workers: int | None = None,
    use_ray: bool = False,
    address: str | None = None,
    max_facts: int = UNIT_FACTS,
    progress: Progress | None = None,
    stats: dict | None = None,
) -> list[Violation]:
    """:func:`~fictionworld.check.check_world` of the world saved at ``path``, streamed: the same
    rules and kinds, each unit holding at most ``max_facts`` facts (or one whole predicate group).

    Runs in ``workers`` local processes (default: every core; 1: in this one) or as Ray tasks
    with ``use_ray`` (``address`` of a running cluster; its nodes must see ``path`` and the
    directory beside it, where the per-entity arrays the units share are written for the run;
    without ``address`` they go to the system's temporary directory).
    At most ``limit_per_kind`` violations are listed per kind, in unit order; a final entry of a
    kind says how many more there were. ``stats``, if given, receives the units' sizes and CPU
    seconds."""
    from fictionworld.executors import POOL_RESTARTS, LocalTasks, RayTasks
    from fictionworld.streaming import SavedWorld

    path = Path(path)
    SavedWorld(path)  # the manifest, spec and footers: a clear error before any task starts
    say = progress or (lambda _s, _d, _t: None)
    if use_ray:
        runner = RayTasks(address, workers if not address else None)
    else:
        runner = LocalTasks(workers or os.cpu_count() or 1)
    work = Path(_work_dir(path, shared=use_ray and bool(address)))
    try:
        t0 = time.perf_counter()
        check = StreamedCheck(path, work, limit_per_kind, max_facts)
        for attempt in range(POOL_RESTARTS + 1):  # a local worker killed (Ray retries its own tasks)
            try:
                runner.start([])
                pending = {runner.submit(*job): key for key, job in check.start()}  # (those not done)
                while pending:
                    for f in runner.wait(pending):
                        for key, job in check.done(pending.pop(f), runner.result(f)):
                            pending[runner.submit(*job)] = key
                        say("checking constraints", len(check.results), len(check.units) if check.planned else len(check.units) + 1)  # fmt: skip
                break
            except KeyboardInterrupt:  # Ctrl-C: the workers (which leave it to this process) are killed
                runner.stop(now=True)
                raise
            except BrokenProcessPool:
                if attempt == POOL_RESTARTS:
                    raise CheckError(f"{path}: the check's local workers died {POOL_RESTARTS + 1} times") from None
            finally:
                runner.stop()
        if stats is not None:
            stats.update(
                units=[
                    {
                        "unit": u.get("rule", "facts"),
                        "facts": u.get("facts", 0),
                        "predicates": len(u.get("codes", ())),
                        "row_groups": len(u.get("groups", ())),
                        "cpu_s": check.cpu[key],
                    }
                    for key, u in check.units.items()
                ],
                context_cpu_s=check.cpu["context"],
                wall_s=time.perf_counter() - t0,
            )
        return check.violations
    finally:
        runner.stop()
        shutil.rmtree(work, ignore_errors=True)


def merge(limit: int, results: list) -> list[Violation]:
    """The violations of every unit as one list: per kind, in unit order, capped at ``limit``."""
    found: dict[K, list[Violation]] = {}
    extra: dict[K, int] = {}
    for unit_found, unit_extra in results:
        for kind in K:
            items = unit_found.get(kind, [])
            have = found.setdefault(kind, [])
            room = max(0, limit - len(have))
            have.extend(items[:room])
            extra[kind] = extra.get(kind, 0) + max(0, len(items) - room) + unit_extra.get(kind, 0)
    out: list[Violation] = []
    for kind in K:
        out.extend(found.get(kind, ()))
        if extra.get(kind):
            out.append(Violation(kind=kind, message=f"... and {extra[kind]} more {kind.value} violations"))
    return out


def _work_dir(path: Path, shared: bool) -> str:
    """A directory for the run's shared arrays: the system's temporary directory, or, when the
    tasks may run on other machines (``shared``), one beside the world, which every node sees."""
    if shared:
        try:
            return tempfile.mkdtemp(prefix=f".{path.name}.checking-", dir=path.resolve().parent)
        except OSError:
            pass
    return tempfile.mkdtemp(prefix="fictionworld-checking-")
