"""The WideSearch round trip: official task files with any metric the official evaluator has
(``in_match`` included), and ``rollout --official-responses`` writing the official evaluator's
response files (only the fields its ``WideSearchResponse`` dataclass takes), which ``score``
reads back to the run's own numbers. Real files, the real CLI in a subprocess (the rollouts run by
the command itself in this process, on the run's Ray cluster)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import rollout_here

from fictionworld.scoring import score_strict
from fictionworld.scoring.compat import score_compat
from fictionworld.scoring.io import OFFICIAL_RESPONSE_FIELDS, export_widesearch, load_tasks
from fictionworld.tasks.model import OFFICIAL_METRICS, read_tasks

pytestmark = [pytest.mark.cli, pytest.mark.ray]  # its rollouts run on Ray


def run(*args, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fictionworld.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd)  # fmt: skip


def _official_task(tmp_path: Path, *, as_string: bool) -> Path:
    """A task file in the official layout whose second column is scored by in_match."""
    ev = {"unique_columns": ["name"], "required": ["name", "genres"],
          "eval_pipeline": {"genres": {"preprocess": ["norm_str"], "metric": ["in_match"]}}}  # fmt: skip
    rec = {"instance_id": "ws_x_001", "query": "List the bands and their genres.", "language": "en",
           "evaluation": json.dumps(ev) if as_string else ev}  # fmt: skip
    (tmp_path / "widesearch_gold").mkdir()
    (tmp_path / "widesearch_gold" / "ws_x_001.csv").write_text(
        "Name,Genres\nThe Velvet Oaks,folk; rock\nMarrow Lane,jazz\n", encoding="utf-8"
    )
    path = tmp_path / "widesearch.jsonl"
    path.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    return path


def _answer(genres: tuple[str, str]) -> str:
    return f"| Name | Genres |\n|---|---|\n| The Velvet Oaks | {genres[0]} |\n| Marrow Lane | {genres[1]} |"


@pytest.mark.parametrize("as_string", [True, False], ids=["evaluation_as_json_text", "evaluation_as_object"])
def test_official_tasks_with_in_match_load_and_score(tmp_path, as_string):
    assert "in_match" in OFFICIAL_METRICS
    (task,), skipped = load_tasks(_official_task(tmp_path, as_string=as_string))
    assert not skipped and task.evaluation.eval_pipeline["genres"].metric == ["in_match"]
    for honest in (("folk; rock", "jazz"), ("rock", "Jazz"), ("Folk", "jazz.")):
        assert score_strict(_answer(honest), task).f1_by_item == 1.0, honest
        if honest[1] != "jazz.":  # upstream's norm_str keeps a final full stop
            assert score_compat(_answer(honest), task).f1_by_item == 1.0, honest


@pytest.mark.parametrize(
    "attack",
    [
        ("", ""),  # upstream: "" is in every gold
        ("r", "j"),  # one letter of it
        ("fo", "ja"),  # the start of it
        ("folk, rock, jazz, pop, metal", "jazz, folk, rock, pop, metal"),  # every genre there is
        ("folk or rock", "jazz or blues"),  # a hedge
        ("rock (or folk?)", "N/A"),
    ],
)
def test_strict_in_match_gives_nothing_for_a_substring_or_a_hedge(tmp_path, attack):
    (task,), _ = load_tasks(_official_task(tmp_path, as_string=True))
    strict = score_strict(_answer(attack), task)
    assert strict.f1_by_item <= 2 / 3 and strict.f1_by_row == 0.0  # the key column alone, never a genre


def test_compat_in_match_keeps_the_official_containment(tmp_path):
    """Upstream reads in_match as ``response in target``: a piece of the gold scores there."""
    (task,), _ = load_tasks(_official_task(tmp_path, as_string=True))
    assert score_compat(_answer(("fo", "ja")), task).f1_by_item == 1.0
    assert score_strict(_answer(("fo", "ja")), task).f1_by_item < 1.0


@pytest.fixture(scope="module")
def official_run(saved_world, tmp_path_factory) -> dict[str, Path]:
    """The oracle and the baseline, 2 samples each, with official response files written."""
    d = tmp_path_factory.mktemp("official")
    r = run("tasks", saved_world, "--n", "3", "--kind", "mixed", "--seed", "5", "--out", d / "tasks.jsonl",
            "--widesearch", d / "ws")  # fmt: skip
    assert r.returncode == 0, r.stderr
    out = {"dir": d, "tasks": d / "tasks.jsonl", "ws": d / "ws"}
    for agent in ("oracle", "baseline"):
        extra = ["--response-model", "fw-baseline.v1"] if agent == "baseline" else []
        rollout_here(saved_world, "--tasks", d / "tasks.jsonl", "--out", d / agent, "--agent", agent, "--workers",
                     "1", "--samples-per-task", "2", "--json", "--official-responses", d / f"{agent}_resp", *extra)  # fmt: skip
        out[agent] = d / agent
        out[f"{agent}_resp"] = d / f"{agent}_resp"
    return out


def test_response_files_are_the_official_names_and_fields(official_run):
    tasks = read_tasks(official_run["tasks"])
    for agent, model in (("oracle", "oracle"), ("baseline", "fw-baseline.v1")):
        files = sorted(p.name for p in official_run[f"{agent}_resp"].iterdir())
        assert files == sorted(f"{model}_{t.instance_id}_{trial}_response.jsonl" for t in tasks for trial in (0, 1))
        for f in official_run[f"{agent}_resp"].iterdir():
            records = pd.read_json(f, lines=True).to_dict(orient="records")  # as the official loader reads it
            assert len(records) == 1 and set(records[0]) == set(OFFICIAL_RESPONSE_FIELDS)
            rec = records[0]
            assert isinstance(rec["response"], str) and isinstance(rec["messages"], list) and rec["messages"]
            assert f.name == f"{model}_{rec['instance_id']}_{rec['trial_idx']}_response.jsonl"
    oracle = [json.loads(f.read_text()) for f in official_run["oracle_resp"].iterdir()]
    by_id = {t.instance_id: t for t in tasks}
    assert all(score_strict(r["response"], by_id[r["instance_id"]]).f1_by_item == 1.0 for r in oracle)


@pytest.mark.parametrize("mode", ["strict", "compat"])
@pytest.mark.parametrize("agent", ["oracle", "baseline"])
def test_the_official_layout_scores_the_run_as_the_run_itself(official_run, mode, agent):
    """widesearch.jsonl + widesearch_gold/ + the response files give the numbers the run gives."""
    direct = run("score", "--responses", official_run[agent], "--tasks", official_run["ws"] / "widesearch.jsonl",
                 "--mode", mode, "--trials", "2", "--json", "--out", official_run["dir"] / f"{agent}_{mode}_a.jsonl")  # fmt: skip
    files = run("score", "--responses", official_run[f"{agent}_resp"], "--tasks",
                official_run["ws"] / "widesearch.jsonl", "--mode", mode, "--trials", "2", "--json",
                "--out", official_run["dir"] / f"{agent}_{mode}_b.jsonl")  # fmt: skip
    assert direct.returncode == 0 and files.returncode == 0, (direct.stderr, files.stderr)
    a, b = json.loads(direct.stdout), json.loads(files.stdout)
    assert a["missing"] == b["missing"] == 0 and a["metrics"] == b["metrics"]
    if agent == "oracle":
        assert b["metrics"]["f1_by_item"]["avg_n"] == 1.0


def test_official_tasks_written_here_hold_only_the_official_fields(official_run):
    for line in (official_run["ws"] / "widesearch.jsonl").read_text().splitlines():
        rec = json.loads(line)
        assert set(rec) == {"instance_id", "query", "evaluation", "language"}  # WideSearchQuery less its answer
        ev = json.loads(rec["evaluation"])
        assert set(ev) == {"unique_columns", "required", "eval_pipeline"}
        for item in ev["eval_pipeline"].values():
            assert set(item) <= {"preprocess", "metric", "criterion"} and set(item["metric"]) <= set(OFFICIAL_METRICS)


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--official-responses", "{d}/r", "--response-model", "Qwen/Qwen3-8B"], "--response-model cannot start"),
        (
            ["--official-responses", "{d}/r", "--agent", "fictionworld.rollouts.agents.oracle:OracleAgent"],
            "give --response-model",
        ),
        (["--response-model", "m"], "--response-model goes with --official-responses"),
    ],
)
def test_bad_response_options_fail_before_anything_runs(saved_world, official_run, tmp_path, args, error):
    args = [a.format(d=tmp_path) for a in args]
    r = run("rollout", saved_world, "--tasks", official_run["tasks"], "--out", tmp_path / "run", *args)
    assert r.returncode == 2 and error in r.stderr and not (tmp_path / "run").exists()


def test_export_widesearch_round_trips_every_task(official_run, tmp_path):
    tasks = read_tasks(official_run["tasks"])
    export_widesearch(tasks, tmp_path)
    back, skipped = load_tasks(tmp_path / "widesearch.jsonl")
    assert not skipped and [t.gold for t in back] == [t.gold for t in tasks]
