"""The results page: every benchmark record under ``benchmarks/results/`` rendered into
``docs/performance.md`` and its plots (SVG) in ``docs/performance/``.

    python benchmarks/report.py            # (re)write the page and the plots
    python benchmarks/report.py --check    # exit 1 if they differ from what the records give

Each record is validated (``record.RunRecord``); a bad one stops the report with a one-line
error naming it. Each benchmark shows its latest record of each configuration (the arguments it
ran with, less those that only say where output goes: :data:`NOT_CONFIGURATION`), in a table
that says which file it is, when it ran, on which CPU and the machine's calibration before and
after; the ratios of those records; and plots whose points are each the latest record's that has
it. The output depends on the records alone: the same records give byte-identical files (with
one matplotlib). ``--check`` holds the page to the records byte for byte, and each plot by a
digest of what it shows, kept in the SVG's metadata, so a newer matplotlib's drawing of the same
lines still passes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import io
import json
import os
import re
import statistics
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import matplotlib.figure
import matplotlib.ticker
from pydantic import ValidationError
from record import RESULTS, ROOT, Figure, RunRecord, read

PAGE = ROOT / "docs" / "performance.md"
NOT_CONFIGURATION = {"results", "no_record", "json", "cache", "tmp", "keep", "inprocess_child"}
SVG = {"svg.hashsalt": "fictionworld-performance", "svg.fonttype": "path"}  # fixed ids: the same plot, the same bytes

INTRO = """\
# Benchmark results

This page is generated: every figure on it comes from the JSON records in `benchmarks/results/`,
one per run of a benchmark (the schema: `benchmarks/record.py`). To add figures, run a benchmark
(each script in `benchmarks/` writes its record; `--results DIR` puts it elsewhere, `--no-record`
writes none), then `python benchmarks/report.py`, and commit the record with the page;
`python benchmarks/report.py --check` fails while the page and the records disagree. Targets are
ratios of two figures measured within one run, never a figure against a fixed number, because
this machine's speed swings 1.6–2.5× between days and within minutes; each record keeps the
machine's calibration (`benchmarks/machine.py`, milliseconds, lower is faster) from before and
after its run. Each benchmark shows its latest record of each configuration (the arguments it ran
with); a plot takes each point from the latest record that has it.
"""


@dataclass(frozen=True)
class Loaded:
    """A record and its path under the results folder (``search/20261208T101500Z-abc1234.json``)."""

    name: str
    record: RunRecord

    def order(self) -> tuple:
        return (self.record.environment.started, self.name)

    def configuration(self) -> str:
        """The arguments the run was measured with, as text (less where its output went)."""
        args = {k: v for k, v in self.record.environment.args.items() if k not in NOT_CONFIGURATION}
        return json.dumps(args, sort_keys=True)


@dataclass(frozen=True)
class Plot:
    """A plot of one figure (``figure``, in ``unit``) of some benchmarks against one of its labels
    (``x``); a line for each other set of labels, repeated runs (label ``run``) at their median.
    ``only`` keeps the figures whose labels take one of the values given; ``dashes`` draws a
    line dashed where its label ``dashes`` (e.g. ``stat``) is not the first value it takes."""

    file: str
    title: str
    benchmarks: tuple[str, ...]
    figure: str
    unit: str
    x: str
    xlabel: str
    ylabel: str
    log: bool
    how: str  # the command that records its data
    only: tuple[tuple[str, tuple], ...] = ()
    dashes: str | None = None

    def shows(self, labels: dict) -> bool:
        return all(labels.get(k) in values for k, values in self.only)


SEARCH_PARTS = ("tantivy engine", "retrieval (+linking, knobs)", "world.search tool (+10 snippets)",
                "bm25s engine (numba)", "rank-bm25 engine (100 q)")  # fmt: skip
PLOTS = (
    Plot("search-latency.svg", "Search latency vs world size", ("search",), "latency", "ms", "entities", "entities",
         "ms per query, one core (p50 solid, p99 dashed)", True,
         "python benchmarks/bench_search.py --sizes 20000 100000", only=(("what", SEARCH_PARTS), ("stat", ("p50", "p99"))),
         dashes="stat"),
    Plot("build-time.svg", "Build time vs entities", ("generate",), "wall", "s", "entities", "entities",
         "seconds", True, "python benchmarks/bench_generate.py --sizes 10000 100000 and --full --sizes 100000",
         only=(("what", ("generate + validate", "networkx MultiDiGraph of the same facts", "full build")),)),
    Plot("speed-up.svg", "Speed-up vs workers", ("blocks", "generate", "rollout"), "speed-up", "×", "workers",
         "workers", "speed-up over the fewest workers", False, "python benchmarks/bench_generate.py --full --sizes 20000"),
    Plot("scorer-cost.svg", "Scorer cost vs table size", ("score",), "cost per response", "ms", "rows",
         "gold rows (6 columns)", "ms per response, one core", True, "python benchmarks/bench_score.py"),
)  # fmt: skip


class BadRecord(Exception):
    """A file under the results folder that is not a valid record."""


def load(results: Path) -> list[Loaded]:
    """Every record under ``results`` (``<benchmark>/<file>.json``), oldest first."""
    out = []
    for path in sorted(results.rglob("*.json")) if results.is_dir() else []:
        name = path.relative_to(results).as_posix()
        if len(path.relative_to(results).parts) != 2:
            raise BadRecord(f"{path}: not in a benchmark's folder (<results>/<benchmark>/<file>.json)")
        try:
            rec = read(path)
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(x) for x in first["loc"]) or "the file"
            more = f" (and {e.error_count() - 1} more)" if e.error_count() > 1 else ""
            raise BadRecord(f"{path}: not a valid record: {where}: {first['msg']}{more}") from None
        except (OSError, ValueError) as e:
            raise BadRecord(f"{path}: not a valid record: {e}") from None
        if rec.benchmark != path.parent.name:
            raise BadRecord(f"{path}: a record of {rec.benchmark!r} in the folder of {path.parent.name!r}")
        out.append(Loaded(name, rec))
    return sorted(out, key=Loaded.order)


def current(records: list[Loaded]) -> list[Loaded]:
    """The latest record of each benchmark and configuration, by benchmark, the latest first."""
    last = {(lo.record.benchmark, lo.configuration()): lo for lo in records}  # oldest first: later ones replace
    newest_first = sorted(last.values(), key=Loaded.order, reverse=True)
    return sorted(newest_first, key=lambda lo: lo.record.benchmark)


def latest_figures(records: list[Loaded]) -> dict[tuple, tuple[Loaded, Figure]]:
    """(benchmark, key) -> (record, figure) of each figure, from the latest record that has it."""
    out: dict[tuple, tuple[Loaded, Figure]] = {}
    for loaded in records:  # oldest first: later ones replace
        for f in loaded.record.figures:
            out[(loaded.record.benchmark, f.key())] = (loaded, f)
    return out


# -- text ------------------------------------------------------------------------------------
def cell(x: object) -> str:
    return str(x).replace("|", "\\|").replace("\n", " ")


def number(v: float) -> str:
    if v.is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    if abs(v) >= 100:
        return f"{v:,.1f}"
    if abs(v) >= 1:
        return f"{v:.3f}"
    return f"{v:.4g}"


def labels(items: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in items.items())


def about(loaded: Loaded) -> str:
    """The line under a record's heading: when, which commit, where, the calibration, the command."""
    env = loaded.record.environment
    commit = (env.commit or "no git")[:7] + (" (with changes)" if env.dirty else "")
    command = " ".join(["python", *env.command])
    return (f"{env.started.astimezone(dt.UTC).strftime('%Y-%m-%d %H:%M:%S')} UTC · commit {commit} · {env.cpu} · "
            f"calibration {env.calibration_before_ms:.1f} ms before, {env.calibration_after_ms:.1f} ms after · "
            f"Python {env.python} · `{cell(command)}`")  # fmt: skip


def ratio_tables(records: list[Loaded]) -> list[str]:
    """The ratios of the current records with a target (holds or missed), then those the project
    states no target for."""
    rows = [(lo.record.benchmark, lo, r) for lo in current(records) for r in lo.record.ratios]
    out = ["## Ratio targets", ""]
    for targeted in (True, False):
        mine = [(bench, lo, r) for bench, lo, r in rows if (r.op is not None) == targeted]
        if not targeted:
            out += ["", "## Other ratios (no target stated)", ""]
        if not mine:
            out.append(f"No record has {'a ratio with a target' if targeted else 'one'} yet.")
            continue
        out += ["| benchmark | ratio | labels | measured | " + ("target | verdict | " if targeted else "")
                + "against | record |", "|---|---|---|---:|" + ("---|---|" if targeted else "") + "---|---|"]  # fmt: skip
        for bench, loaded, r in mine:
            verdict = ""
            if targeted:
                verdict = f"{'≥' if r.op == '>=' else '≤'} {r.target:g} | {'holds' if r.holds else '**missed**'} | "
            out.append(f"| {bench} | {cell(r.name)} | {cell(labels(r.labels))} | {r.measured:.3f} | {verdict}"
                       f"{cell(r.against)} | `{loaded.name}` |")  # fmt: skip
    return out


def figure_sections(records: list[Loaded]) -> list[str]:
    """A section per benchmark: a table per current record (each configuration's latest)."""
    out: list[str] = []
    bench = None
    for loaded in current(records):
        if loaded.record.benchmark != bench:
            bench = loaded.record.benchmark
            out += ["", f"## {bench}"]
        out += ["", f"### `{loaded.name}`", "", about(loaded), "", "| figure | labels | value | unit |",
                "|---|---|---:|---|"]  # fmt: skip
        for f in loaded.record.figures:
            out.append(f"| {cell(f.name)} | {cell(labels(f.labels))} | {number(f.value)} | {cell(f.unit)} |")
        if loaded.record.notes:
            out += [""] + [f"- {cell(n)}" for n in loaded.record.notes]
    return out


# -- plots -----------------------------------------------------------------------------------
def series(plot: Plot, records: list[Loaded]) -> tuple[dict[str, list[tuple[float, float]]], list[str]]:
    """The plot's lines (name -> sorted points) from the latest figures, and the records they come from."""
    points: dict[str, dict[float, list[float]]] = {}
    used: set[str] = set()
    for (bench, _), (loaded, f) in sorted(latest_figures(records).items(), key=lambda kv: kv[1][0].order()):
        if (bench not in plot.benchmarks or f.name != plot.figure or f.unit != plot.unit or plot.x not in f.labels
                or not plot.shows(f.labels)):  # fmt: skip
            continue
        x = f.labels[plot.x]
        if isinstance(x, bool) or not isinstance(x, int | float):
            continue
        pinned = {k for k, values in plot.only if len(values) == 1}  # (a label kept at one value names no line)
        rest = {k: v for k, v in f.labels.items() if k not in (plot.x, "run", *pinned)}
        name = (f"{bench}: " if len(plot.benchmarks) > 1 else "") + (labels(rest) or plot.figure)
        points.setdefault(name, {}).setdefault(float(x), []).append(f.value)
        if "over" in rest and isinstance(rest["over"], int | float):  # a speed-up over N workers is 1 at N
            points[name].setdefault(float(rest["over"]), [1.0])
        used.add(loaded.name)
    lines = {n: sorted((x, statistics.median(ys)) for x, ys in p.items()) for n, p in points.items()}
    return lines, sorted(used)


def digest(plot: Plot, lines: dict[str, list[tuple[float, float]]]) -> str:
    """What a plot shows, as a digest: kept in the SVG's metadata, so that ``--check`` holds a
    plot to the records without holding it to matplotlib's bytes (which change with its version)."""
    shown = json.dumps({"plot": plot.file, "title": plot.title, "lines": lines}, sort_keys=True)
    return "data " + hashlib.sha256(shown.encode()).hexdigest()[:16]


def digest_in(svg: bytes) -> str | None:
    found = re.search(rb"<dc:description>(.*?)</dc:description>", svg)
    return found.group(1).decode() if found else None


def draw(plot: Plot, lines: dict[str, list[tuple[float, float]]]) -> bytes:
    with matplotlib.rc_context(SVG):
        fig = matplotlib.figure.Figure(figsize=(8, 4.8))
        ax = fig.subplots()
        cycle = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
        solid = str(dict(plot.only).get(plot.dashes, ("",))[0])  # the dashes label's first value: solid lines
        colours: dict[str, str] = {}  # a colour for each line but for the dashes label
        for name in sorted(lines):
            xs, ys = zip(*lines[name])
            parts = [p for p in name.split(", ") if not p.startswith(f"{plot.dashes}=")]
            dashed = plot.dashes is not None and f"{plot.dashes}={solid}" not in name.split(", ")
            colour = colours.setdefault(", ".join(parts), cycle[len(colours) % len(cycle)])
            ax.plot(xs, ys, marker="o", label=name, color=colour, linestyle="--" if dashed else "-")
        if plot.log:
            ax.set_xscale("log")
            ax.set_yscale("log")
            plain = matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}")
            for axis in (ax.xaxis, ax.yaxis):
                axis.set_major_formatter(plain)
                axis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            ax.set_xticks(sorted({x for points in lines.values() for x, _ in points}))  # each measured size
        else:
            ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.set_title(plot.title)
        ax.set_xlabel(plot.xlabel)
        ax.set_ylabel(plot.ylabel)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="best")
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Description": digest(plot, lines)})
    return buf.getvalue()


# -- the page --------------------------------------------------------------------------------
def render(records: list[Loaded], page: Path, plots: Path) -> dict[Path, bytes]:
    """Every file the records give: the page, and a plot for each plot that has data."""
    files: dict[Path, bytes] = {}
    text = [INTRO]
    if not records:
        text += ["No records yet: run a benchmark, then `python benchmarks/report.py`.", ""]
    text += [*ratio_tables(records), "", "## Plots", ""]
    for plot in PLOTS:
        lines, used = series(plot, records)
        if not lines:
            text += [f"- {plot.title}: left out, no record has its data (`{plot.how}` records it).", ""]
            continue
        files[plots / plot.file] = draw(plot, lines)
        link = Path(os.path.relpath(plots / plot.file, page.parent)).as_posix()
        text += [f"### {plot.title}", "", f"![{plot.title}]({link})", "",
                 "From " + ", ".join(f"`{u}`" for u in used) + ".", ""]  # fmt: skip
    text += figure_sections(records)
    files[page] = ("\n".join(text).rstrip("\n") + "\n").encode()
    return files


def stale(files: dict[Path, bytes], plots: Path) -> list[Path]:
    """Plots in the plots folder that the records no longer give."""
    return sorted(p for p in plots.glob("*.svg") if p not in files) if plots.is_dir() else []


def same(path: Path, data: bytes) -> bool:
    """``path`` holds ``data``: the page byte for byte, a plot by what it shows (its digest)."""
    if not path.is_file():
        return False
    if path.suffix == ".svg":
        return digest_in(path.read_bytes()) == digest_in(data)
    return path.read_bytes() == data


def differing(files: dict[Path, bytes], plots: Path) -> list[Path]:
    out = [p for p, data in files.items() if not same(p, data)]
    return sorted(out + stale(files, plots))


def shown(path: Path) -> str:
    rel = os.path.relpath(path)
    return rel if not rel.startswith("..") else str(path)


def main(argv: Iterable[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, default=RESULTS, help="the records (default benchmarks/results)")
    ap.add_argument("--page", type=Path, default=PAGE, help="the page (default docs/performance.md)")
    ap.add_argument("--plots", type=Path, help="the plots' folder (default: beside the page, named as it)")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if the files differ from the records")
    args = ap.parse_args(None if argv is None else list(argv))
    plots = args.plots or args.page.with_suffix("")
    try:
        records = load(args.results)
    except BadRecord as e:
        print(f"report.py: {e}", file=sys.stderr)
        return 1
    files = render(records, args.page, plots)
    if args.check:
        bad = differing(files, plots)
        if bad:
            print(f"report.py: {', '.join(shown(p) for p in bad)} differ from what {shown(args.results)} gives: "
                  f"run python benchmarks/report.py", file=sys.stderr)  # fmt: skip
            return 1
        return 0
    for path in stale(files, plots):
        path.unlink()
    for path, data in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not same(path, data):  # (a plot that shows the same is left as it is)
            path.write_bytes(data)
    print(f"{shown(args.page)}: {len(records)} records, {len(files) - 1} plots")
    return 0


if __name__ == "__main__":
    sys.exit(main())
