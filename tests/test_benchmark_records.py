"""The benchmarks' records (``benchmarks/record.py``) and the results page they make
(``benchmarks/report.py``): the schema refuses what is not a record, every benchmark writes one,
a real benchmark run writes a valid one, and the page is a deterministic function of the records
that ``report.py --check`` holds to them (the repository's own page included)."""

from __future__ import annotations

import ast
import datetime as dt
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
sys.path.insert(0, str(BENCH))  # (the benchmarks import each other as scripts beside each other)

import record  # noqa: E402
import report  # noqa: E402

HELPERS = {"machine", "search_children", "serve_harness", "serve_report", "snapshot", "record", "report"}
FILE_NAME = re.compile(r"^\d{8}T\d{6}Z-([0-9a-f]{7}|nogit)(-\d+)?\.json$")


def environment(started: dt.datetime, args: dict) -> record.Environment:
    return record.Environment(
        command=["benchmarks/bench_x.py", "--size", "3"], args=args | {"results": "/tmp/x"}, commit="0" * 40,
        dirty=False, started=started, finished=started + dt.timedelta(seconds=5), python="3.11.7", platform="Linux",
        packages={"numpy": "2.1.0", "bm25s": None}, cpu="Test CPU, 2 CPUs", cores=2, calibration_before_ms=21.5,
        calibration_after_ms=22.0,
    )  # fmt: skip


def run_record(benchmark: str, figures: list[dict], ratios: list[dict] = (), minute: int = 0,
               args: dict | None = None) -> record.RunRecord:  # fmt: skip
    started = dt.datetime(2026, 12, 8, 10, minute, tzinfo=dt.UTC)
    return record.RunRecord(
        benchmark=benchmark, environment=environment(started, args or {}), figures=[record.Figure(**f) for f in figures],
        ratios=[record.Ratio(**r) for r in ratios], notes=["a note | with a pipe"],
    )  # fmt: skip


def ratio(name: str, top: float, bottom: float, op: str | None, target: float | None, **labels) -> dict:
    measured = top / bottom
    return {"name": name, "numerator": top, "denominator": bottom, "measured": measured, "op": op, "target": target,
            "holds": record.verdict(measured, op, target), "against": "a peer in the same run", "labels": labels}  # fmt: skip


def search_record(entities: int, minute: int, engine_ms: float = 0.1) -> record.RunRecord:
    figures = [{"name": "latency", "value": v * entities / 1000, "unit": "ms",
                "labels": {"entities": entities, "what": what, "stat": "p50"}}
               for what, v in (("tantivy engine", engine_ms), ("world.search tool (+10 snippets)", 0.4))]  # fmt: skip
    tool, engine = figures[1]["value"], figures[0]["value"]
    ratios = [ratio("world.search p50 / engine p50", tool, engine, "<=", 2, entities=entities)]
    return run_record("search", figures, ratios, minute, {"sizes": [entities]})


def write(results: Path, rec: record.RunRecord) -> Path:
    path = results / rec.benchmark / rec.file_name()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(rec.model_dump_json(indent=2) + "\n")
    return path


# -- the schema ------------------------------------------------------------------------------
def test_a_record_round_trips_through_the_schema(tmp_path):
    rec = search_record(2000, 0)
    path = write(tmp_path, rec)
    assert record.read(path) == rec
    assert FILE_NAME.match(path.name) and path.name.startswith("20261208T100000Z-0000000")
    assert rec.ratios[0].holds is False  # 4x the engine against a target of 2x
    data = json.loads(path.read_text())
    assert data["environment"]["packages"]["bm25s"] is None and data["figures"][0]["labels"]["stat"] == "p50"


REQUIRED = [("benchmark",), ("figures",), ("environment", "commit"), ("environment", "calibration_after_ms"),
            ("figures", 0, "unit"), ("ratios", 0, "against")]  # fmt: skip


@pytest.mark.parametrize("remove", REQUIRED)
def test_a_record_missing_a_required_field_is_refused(tmp_path, remove):
    data = json.loads(search_record(2000, 0).model_dump_json())
    holder = data
    for key in remove[:-1]:
        holder = holder[key]
    del holder[remove[-1]]
    with pytest.raises(ValidationError):
        record.RunRecord.model_validate_json(json.dumps(data))


@pytest.mark.parametrize("value", ["0.4", True, None, [0.4], "NaN"])
def test_a_figure_that_is_not_a_number_is_refused(value):
    data = json.loads(search_record(2000, 0).model_dump_json())
    data["figures"][0]["value"] = value
    text = json.dumps(data).replace('"NaN"', "NaN")  # (a bare NaN: not JSON, but Python writes it)
    with pytest.raises(ValidationError):
        record.RunRecord.model_validate_json(text)
    with record.Record("x", enabled=False) as rec, pytest.raises(TypeError):
        rec.figure("latency", value if value != "NaN" else "nan", "ms")


def test_a_record_that_contradicts_itself_is_refused():
    good = ratio("tool / engine", 3.0, 1.0, "<=", 2)
    with pytest.raises(ValidationError, match="holds"):
        record.Ratio(**(good | {"holds": True}))  # 3 is not <= 2
    with pytest.raises(ValidationError, match="measured"):
        record.Ratio(**(good | {"measured": 2.0}))
    same = {"name": "latency", "value": 1.0, "unit": "ms", "labels": {"entities": 5}}
    with pytest.raises(ValidationError, match="two figures"):
        run_record("search", [same, same | {"value": 2.0}])
    with pytest.raises(ValidationError):
        run_record("search", [])  # a record measures something
    with record.Record("x", enabled=False) as rec:
        rec.figure("latency", 1, "ms", entities=5)
        with pytest.raises(ValueError, match="second figure"):
            rec.figure("latency", 2, "ms", entities=5)
        r = rec.ratio("a / b", 3, 2, at_least=1.7, against="b")
    assert (r.op, r.target, r.holds, r.measured) == (">=", 1.7, False, 1.5)


# -- the benchmarks --------------------------------------------------------------------------
def calls(tree: ast.AST) -> list[ast.Call]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)]


def name_of(call: ast.Call) -> str:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def test_every_benchmark_writes_a_record():
    scripts = sorted(p for p in BENCH.glob("*.py") if p.stem not in HELPERS)
    assert {p.stem for p in scripts} >= {"adapter_overhead", "fuzz_env", "bench_search", "bench_score", "bench_serve"}
    names = {}
    for path in scripts:
        tree = ast.parse(path.read_text())
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "record"
                    for a in n.names}  # fmt: skip
        assert "Record" in imported, f"{path.name} does not use benchmarks/record.py"
        if path.stem == "adapter_overhead":  # its figures go into bench_rollout.py's record
            assert any(name_of(c) == "figure" for c in calls(tree)), "adapter_overhead.py records no figure"
            continue
        made = [c for c in calls(tree) if name_of(c) == "Record"]
        assert len(made) == 1 and isinstance(made[0].args[0], ast.Constant), f"{path.name}: one Record(name, args)"
        names[made[0].args[0].value] = path.name
        used = any(isinstance(n, ast.Name) and n.id == "add_options" for n in ast.walk(tree))  # (called or passed on)
        assert "add_options" in imported and used, f"{path.name} takes no --results / --no-record"
        assert any(name_of(c) in ("figure", "stats") for c in calls(tree)), f"{path.name} records no figure"
    assert len(names) == len(scripts) - 1 and all(re.fullmatch(r"[a-z0-9_]+", n) for n in names)
    rollout = ast.parse((BENCH / "bench_rollout.py").read_text())
    assert any(name_of(c) == "report" and any(k.arg == "rec" for k in c.keywords) for c in calls(rollout))


@pytest.mark.cli
def test_a_benchmark_run_writes_a_valid_record(tmp_path):
    argv = [sys.executable, str(BENCH / "bench_score.py"), "--responses", "20", "--wide", "0", "--world", "0",
            "--sweep", "10", "20", "--sweep-responses", "2", "--results", str(tmp_path)]  # fmt: skip
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "compat / strict (mean)" in done.stdout  # the human text, as before
    [path] = (tmp_path / "score").glob("*.json")
    assert FILE_NAME.match(path.name) and f"record: {path}" in done.stderr
    rec = record.read(path)
    assert rec.benchmark == "score" and rec.figures
    assert rec.environment.command == argv[1:] and rec.environment.args["sweep"] == [10, 20]
    assert rec.environment.calibration_before_ms > 0 and rec.environment.calibration_after_ms > 0
    assert rec.environment.packages["pandas"] and rec.environment.cores >= 1
    swept = {(f.labels["rows"], f.labels["mode"]) for f in rec.figures if f.name == "cost per response"}
    assert swept == {(rows, mode) for rows in (10, 20) for mode in ("strict cold", "strict warm", "compat")}
    assert all(f.value > 0 for f in rec.figures if f.unit == "ms")
    [compat] = [r for r in rec.ratios if r.name.startswith("compat / strict")]
    assert compat.measured > 1  # compat scores through pandas: slower than strict


# -- the page --------------------------------------------------------------------------------
def render(results: Path, page: Path, *more: str) -> int:
    return report.main(["--results", str(results), "--page", str(page), *more])


def files_under(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_page_is_a_deterministic_function_of_the_records(tmp_path):
    results = tmp_path / "results"
    for i, n in enumerate((2000, 20000)):
        write(results, search_record(n, i))
    speed = [{"name": "speed-up", "value": 1.74, "unit": "×", "labels": {"entities": 10**6, "workers": 2, "over": 1}}]
    write(results, run_record("generate", speed, [ratio("1 worker / 2 workers", 174.0, 100.0, ">=", 1.7)], 5))
    assert render(results, tmp_path / "a" / "performance.md") == 0  # in this process
    argv = [sys.executable, str(BENCH / "report.py"), "--results", str(results), "--page", str(tmp_path / "b" / "performance.md")]  # fmt: skip
    assert subprocess.run(argv, cwd=ROOT, capture_output=True, timeout=120).returncode == 0  # and in a fresh one
    a, b = files_under(tmp_path / "a"), files_under(tmp_path / "b")
    assert a == b
    assert set(a) == {"performance.md", "performance/search-latency.svg", "performance/speed-up.svg"}
    page = a["performance.md"].decode()
    assert page.startswith("# Benchmark results\n") and "1.6–2.5×" in page and "python benchmarks/report.py" in page
    assert "](performance/search-latency.svg)" in page and "Build time vs entities: left out" in page
    assert "Scorer cost vs table size: left out" in page
    for rec_file in results.rglob("*.json"):
        assert f"`{rec_file.relative_to(results).as_posix()}`" in page
    assert "| ≤ 2 | **missed** |" in page and "| ≥ 1.7 | holds |" in page
    assert "calibration 21.5 ms before, 22.0 ms after" in page and "Test CPU, 2 CPUs" in page
    assert "a note \\| with a pipe" in page


def test_a_configuration_shows_its_latest_record(tmp_path):
    results, page = tmp_path / "results", tmp_path / "performance.md"
    old, new = write(results, search_record(2000, 0)), write(results, search_record(2000, 3, engine_ms=0.3))
    other = write(results, search_record(20000, 1))  # another configuration (--sizes 20000): still shown
    assert render(results, page) == 0
    text = page.read_text()
    assert f"`search/{new.name}`" in text and f"`search/{other.name}`" in text
    assert f"`search/{old.name}`" not in text  # the same configuration, measured again since
    assert "| 0.6 | ms |" in text and "| 0.2 | ms |" not in text  # the new record's engine p50, not the old one's


def test_check_holds_the_page_to_the_records(tmp_path, capsys):
    results, page = tmp_path / "results", tmp_path / "docs" / "performance.md"
    assert render(results, page, "--check") == 1  # no page yet
    assert render(results, page) == 0 and "No records yet" in page.read_text()
    assert render(results, page, "--check") == 0
    write(results, search_record(2000, 0))
    capsys.readouterr()
    assert render(results, page, "--check") == 1  # a record added, the page not rendered again
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "performance.md" in err and "search-latency.svg" in err
    assert render(results, page) == 0
    assert render(results, page, "--check") == 0
    plot = page.parent / "performance" / "search-latency.svg"
    drawn = plot.read_bytes()
    plot.write_bytes(drawn.replace(b"<svg ", b"<!-- another matplotlib -->\n<svg ", 1))
    assert render(results, page, "--check") == 0  # drawn otherwise, the same lines: held by its digest
    plot.write_bytes(drawn.replace(report.digest_in(drawn).encode(), b"data 0000000000000000"))
    assert render(results, page, "--check") == 1  # other lines
    plot.write_text("<svg/>")
    assert render(results, page, "--check") == 1  # a plot edited by hand
    assert render(results, page) == 0 and plot.read_bytes() == drawn
    (page.parent / "performance" / "old.svg").write_text("<svg/>")
    assert render(results, page, "--check") == 1  # a plot the records no longer give
    assert render(results, page) == 0 and not (page.parent / "performance" / "old.svg").exists()
    for path in results.rglob("*.json"):
        path.unlink()
    assert render(results, page) == 0 and not list((page.parent / "performance").glob("*.svg"))
    assert render(results, page, "--check") == 0


def test_a_bad_record_is_a_one_line_error_naming_it(tmp_path):
    results = tmp_path / "results"
    good = write(results, search_record(2000, 0))
    bad = good.with_name("20261208T110000Z-1234567.json")
    data = json.loads(good.read_text())
    data["figures"][0]["value"] = "fast"
    bad.write_text(json.dumps(data))
    argv = [sys.executable, str(BENCH / "report.py"), "--results", str(results), "--page", str(tmp_path / "p.md")]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert str(bad) in done.stderr and "figures.0.value" in done.stderr
    assert not (tmp_path / "p.md").exists()


def test_the_repository_page_matches_its_records():
    done = subprocess.run([sys.executable, "benchmarks/report.py", "--check"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
