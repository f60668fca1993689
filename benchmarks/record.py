"""A benchmark run's figures as data: one JSON record per run, under ``benchmarks/results/``.

    with Record("search", args) as rec:           # args: the parsed argparse namespace
        rec.figure("latency", 0.37, "ms", entities=100_000, what="tantivy engine", stat="p50")
        rec.ratio("world.search p50 / engine p50", tool_p50, engine_p50, at_most=2,
                  against="the tantivy engine alone, same queries, same process", entities=100_000)

A record holds the figures (named values, each with a unit and labels), the ratios measured in
the same run (with their targets, where the project states one, and whether they hold), notes,
and the environment: the command, its parsed arguments, the git commit (and whether the tree
had changes), when it ran (UTC), Python, the packages that matter, the CPU and the machine's
calibration (``machine.py``) before and after the benchmark's work. This machine's speed swings
1.6-2.5x, so a target is a ratio of two figures of one run, never a figure against another day's.

:class:`RunRecord` is the schema (pydantic): a record is validated when written and when read
(``benchmarks/report.py``). It is written when the ``with`` block ends without an exception, as
pretty JSON to ``<results>/<benchmark>/<UTC yyyymmddTHHMMSSZ>-<short commit>.json``, and its
path printed. :func:`add_options` gives every benchmark ``--results DIR`` and ``--no-record``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import numbers
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Annotated, Any, Literal

from machine import calibrate, cpu
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, JsonValue, StringConstraints, model_validator

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"
SCHEMA_VERSION = 1
# fictionworld's dependencies that a figure may depend on, then the peers some benchmarks run.
PACKAGES = ("tantivy", "numpy", "pyarrow", "pandas", "ray", "rapidfuzz", "pydantic", "zstandard", "xxhash",
            "networkx", "faker", "dateparser", "matplotlib", "psutil", "httpx", "fastapi", "uvicorn", "uvloop",
            "bm25s", "rank-bm25", "numba", "aiohttp", "torch", "transformers", "trl", "verl")  # fmt: skip

Name = Annotated[str, StringConstraints(min_length=1)]
Number = Annotated[float, Field(allow_inf_nan=False)]
Label = Annotated[str, StringConstraints(min_length=1)] | int | Number | bool
Labels = dict[Name, Label]


class Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class Figure(Strict):
    """One measured value: ``name`` (what was measured), ``value`` in ``unit`` ("ms", "s", "GiB",
    "1/s", "" for a count ...), and ``labels`` that say of what (entities=100000, workers=2,
    what="tantivy engine", stat="p50"). Within a record, no two figures share name and labels."""

    name: Name
    value: Number
    unit: str
    labels: Labels = {}

    def key(self) -> tuple:
        return key_of(self.name, self.labels)


class Ratio(Strict):
    """``numerator / denominator``, both measured in the same run, against a target where one is
    stated (``op`` and ``target``: the ratio must be ``>=`` or ``<=`` it); ``holds`` says whether
    it does (None without a target); ``against`` says what the ratio compares."""

    name: Name
    numerator: Number
    denominator: Number
    measured: Number
    op: Literal[">=", "<="] | None = None
    target: Number | None = None
    holds: bool | None = None
    against: Name
    labels: Labels = {}

    @model_validator(mode="after")
    def _consistent(self) -> Ratio:
        if self.denominator == 0:
            raise ValueError("the denominator is 0")
        if not math.isclose(self.measured, self.numerator / self.denominator, rel_tol=1e-9):
            raise ValueError(f"measured {self.measured} is not {self.numerator} / {self.denominator}")
        if (self.op is None) != (self.target is None):
            raise ValueError("give both op and target, or neither")
        if self.holds != verdict(self.measured, self.op, self.target):
            raise ValueError(f"holds is {self.holds}, but {self.measured} {self.op} {self.target} says otherwise")
        return self

    def key(self) -> tuple:
        return key_of(self.name, self.labels)


class Environment(Strict):
    """Where, when and how a run ran."""

    command: list[str]  # sys.argv
    args: dict[str, JsonValue]  # the parsed arguments
    commit: str | None  # None: not a git checkout
    dirty: bool | None  # tracked files changed from the commit
    started: AwareDatetime  # UTC
    finished: AwareDatetime
    python: str
    platform: str
    packages: dict[Name, str | None]  # None: not installed
    cpu: str  # machine.cpu(): model, clock, CPUs this process may run on
    cores: int
    calibration_before_ms: Number  # machine.calibrate() before the benchmark's work (lower is faster)
    calibration_after_ms: Number  # and after it


class RunRecord(Strict):
    """The record of one benchmark run (the file's schema)."""

    schema_version: Literal[1] = SCHEMA_VERSION
    benchmark: Annotated[str, StringConstraints(pattern=r"^[a-z0-9_]+$")]
    environment: Environment
    figures: Annotated[list[Figure], Field(min_length=1)]
    ratios: list[Ratio] = []
    notes: list[str] = []

    @model_validator(mode="after")
    def _unique(self) -> RunRecord:
        for kind, items in (("figure", self.figures), ("ratio", self.ratios)):
            seen: set[tuple] = set()
            for item in items:
                if item.key() in seen:
                    raise ValueError(f"two {kind}s named {item.name!r} with labels {item.labels}")
                seen.add(item.key())
        return self

    def file_name(self) -> str:
        """``<UTC yyyymmddTHHMMSSZ>-<short commit>.json``."""
        stamp = self.environment.started.astimezone(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        return f"{stamp}-{(self.environment.commit or 'nogit')[:7]}.json"


def key_of(name: str, labels: dict) -> tuple:
    """What makes a figure or ratio the same one in another record: its name and labels."""
    return (name, tuple(sorted((k, repr(v)) for k, v in labels.items())))


def verdict(measured: float, op: str | None, target: float | None) -> bool | None:
    if op is None or target is None:
        return None
    return measured >= target if op == ">=" else measured <= target


def read(path: Path) -> RunRecord:
    """The record in ``path``, validated (a ``pydantic.ValidationError`` or ``ValueError`` if not)."""
    return RunRecord.model_validate_json(Path(path).read_bytes())


def add_options(ap: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``--results DIR`` and ``--no-record``, the options every benchmark takes."""
    ap.add_argument("--results", type=Path, default=RESULTS,
                    help="where the run's record goes, in a folder per benchmark (default benchmarks/results)")  # fmt: skip
    ap.add_argument("--no-record", action="store_true", help="write no record of this run")
    return ap


def git_state() -> tuple[str | None, bool | None]:
    """This checkout's commit, and whether its tracked files differ from it."""
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()  # fmt: skip
        changed = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                                 capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return None, None
    return commit, bool(changed)


def cores() -> int:
    """The CPUs this process may run on (as ``machine.cpu()`` counts them)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def plain(x: Any) -> JsonValue:
    """``x`` as JSON data (paths and other objects as their text)."""
    if x is None or isinstance(x, bool | int | str):
        return x
    if isinstance(x, float):
        return x if math.isfinite(x) else str(x)
    if isinstance(x, dict):
        return {str(k): plain(v) for k, v in x.items()}
    if isinstance(x, list | tuple | set | frozenset):
        return [plain(v) for v in x]
    return str(x)


def number(x: Any) -> float:
    """A real number as a float (NumPy's too); a TypeError for anything else, bools included."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"not a number: {x!r}")
    return float(x)


def label(x: Any) -> str | int | float | bool:
    if isinstance(x, bool | str):
        return x
    if isinstance(x, numbers.Integral):
        return int(x)
    return number(x)


# Units read from the end of a measurement's key (``p50_ms``, ``tantivy_build_s``, ``qps``).
SUFFIXES = (("_mib_per_query", "MiB/query"), ("_ms", "ms"), ("_s", "s"), ("_gib", "GiB"), ("_mib", "MiB"),
            ("_pct", "%"), ("_bytes", "B"))  # fmt: skip


def split_unit(key: str) -> tuple[str, str]:
    """(stat, unit) of a key such as ``p50_ms`` (("p50", "ms")); a rate (``qps``, ``per_s``,
    ``tables_per_s``) keeps its key, in 1/s."""
    if key in ("qps", "per_s") or key.endswith("_per_s"):
        return key, "1/s"
    for suffix, unit in SUFFIXES:
        if key.endswith(suffix) and len(key) > len(suffix):
            return key[: -len(suffix)], unit
    return key, ""


class Record:
    """A benchmark run being recorded (a context manager; see the module's docstring)."""

    def __init__(self, benchmark: str, args: argparse.Namespace | None = None, *, results: Path | None = None,
                 enabled: bool | None = None) -> None:  # fmt: skip
        self.benchmark = benchmark
        self.args = vars(args) if args is not None else {}
        self.results = Path(results if results is not None else self.args.get("results") or RESULTS)
        self.enabled = enabled if enabled is not None else not self.args.get("no_record", False)
        self.figures: list[Figure] = []
        self.ratios: list[Ratio] = []
        self.notes: list[str] = []
        self.path: Path | None = None
        self._keys: set[tuple] = set()

    def __enter__(self) -> Record:
        self.started = dt.datetime.now(dt.UTC)
        self.cpu, self.cores = cpu(), cores()
        self.before = calibrate() if self.enabled else 0.0
        return self

    def figure(self, name: str, value: Any, unit: str = "", **labels: Any) -> float:
        """Adds a figure (validated now: a non-number or a second figure of the same name and labels
        is an error here, not at the end of the run); returns its value."""
        f = Figure(name=name, value=number(value), unit=unit, labels={k: label(v) for k, v in labels.items()})
        if f.key() in self._keys:
            raise ValueError(f"{self.benchmark}: a second figure {name!r} with labels {labels}")
        self._keys.add(f.key())
        self.figures.append(f)
        return f.value

    def stats(self, name: str, measured: dict, **labels: Any) -> None:
        """A figure per number in ``measured`` (``{"p50_ms": 0.4, "qps": 2362.0, ...}``), its key's
        stem as the label ``stat`` and its suffix as the unit (:func:`split_unit`); other values skipped."""
        for key, value in measured.items():
            if isinstance(value, numbers.Real) and not isinstance(value, bool):
                stat, unit = split_unit(key)
                self.figure(name, value, unit, **labels, stat=stat)

    def ratio(self, name: str, numerator: Any, denominator: Any, *, against: str, at_least: float | None = None,
              at_most: float | None = None, **labels: Any) -> Ratio:  # fmt: skip
        """Adds ``numerator / denominator`` with its target (``at_least`` or ``at_most``; neither: a
        ratio with no stated target) and returns it."""
        if at_least is not None and at_most is not None:
            raise ValueError("a target is at least or at most, not both")
        op, target = (">=", at_least) if at_least is not None else ("<=", at_most)
        if target is None:
            op = None
        top, bottom = number(numerator), number(denominator)
        measured = top / bottom
        r = Ratio(name=name, numerator=top, denominator=bottom, measured=measured, op=op,
                  target=None if target is None else number(target), holds=verdict(measured, op, target),
                  against=against, labels={k: label(v) for k, v in labels.items()})  # fmt: skip
        if any(x.key() == r.key() for x in self.ratios):
            raise ValueError(f"{self.benchmark}: a second ratio {name!r} with labels {labels}")
        self.ratios.append(r)
        return r

    def note(self, text: str) -> None:
        """A line of text the run's figures do not say (an answer's digest, a check that passed)."""
        self.notes.append(text)

    def build(self, after: float) -> RunRecord:
        commit, dirty = git_state()
        env = Environment(command=list(sys.argv), args={k: plain(v) for k, v in self.args.items()}, commit=commit,
                          dirty=dirty, started=self.started, finished=dt.datetime.now(dt.UTC),
                          python=platform.python_version(), platform=platform.platform(), packages=versions(),
                          cpu=self.cpu, cores=self.cores, calibration_before_ms=self.before,
                          calibration_after_ms=after)  # fmt: skip
        return RunRecord(benchmark=self.benchmark, environment=env, figures=self.figures, ratios=self.ratios,
                         notes=self.notes)  # fmt: skip

    def write(self) -> Path | None:
        """Validates the record and writes it (the path; None when not enabled or nothing measured)."""
        if not self.enabled:
            return None
        if not self.figures:
            print(f"record: {self.benchmark} measured nothing: no record written", file=sys.stderr, flush=True)
            return None
        rec = self.build(calibrate())
        folder = self.results / self.benchmark
        folder.mkdir(parents=True, exist_ok=True)
        path, n = folder / rec.file_name(), 1
        while path.exists():  # two runs in one second
            n += 1
            path = folder / rec.file_name().replace(".json", f"-{n}.json")
        path.write_text(rec.model_dump_json(indent=2) + "\n")
        self.path = path
        shown = os.path.relpath(path) if not os.path.relpath(path).startswith("..") else str(path)
        sys.stdout.flush()  # (the run's own text first)
        print(f"record: {shown}", file=sys.stderr, flush=True)
        return path

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if kind is None:
            self.write()
