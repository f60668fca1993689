"""``score`` on what the other commands write: a rollout run (its directory or its
episodes.jsonl), scores written beside the input (never into the current directory), and
``tasks --widesearch`` saying what it wrote. Real files, the real CLI in a subprocess (the rollout
run by the command itself in this process, on the run's Ray cluster)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import rollout_here

from fictionworld.scoring.io import export_widesearch
from fictionworld.tasks.model import read_tasks

pytestmark = [pytest.mark.cli, pytest.mark.ray]  # its rollouts run on Ray


def run(*args, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fictionworld.cli", *map(str, args)], capture_output=True, text=True, cwd=cwd
    )


def summary(r: subprocess.CompletedProcess) -> dict:
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def rollout_run(saved_world, tmp_path_factory) -> dict[str, Path]:
    """Tasks made by `tasks` and a `rollout` of the baseline agent on them (2 samples each)."""
    d = tmp_path_factory.mktemp("score_runs")
    r = run("tasks", saved_world, "--n", "4", "--kind", "mixed", "--seed", "3", "--out", d / "tasks.jsonl")
    assert r.returncode == 0, r.stderr
    rollout_here(saved_world, "--tasks", d / "tasks.jsonl", "--out", d / "run", "--agent", "baseline", "--workers", "1",
                 "--samples-per-task", "2", "--json")  # fmt: skip
    elsewhere = d / "elsewhere"
    elsewhere.mkdir()
    return {"dir": d, "tasks": d / "tasks.jsonl", "run": d / "run", "cwd": elsewhere}


def test_rollout_keeps_its_tasks_beside_its_episodes(rollout_run):
    kept = read_tasks(rollout_run["run"] / "tasks.jsonl")
    assert kept == read_tasks(rollout_run["tasks"])


def test_score_a_rollout_run_directory(rollout_run):
    """`score --responses RUN` scores each episode's answer against the run's own tasks, gives
    what the rollout itself reported, and writes RUN/scores.jsonl (not into the current directory)."""
    rundir = rollout_run["run"]
    r = run("score", "--responses", rundir, "--trials", "2", "--json", cwd=rollout_run["cwd"])
    got = summary(r)
    reported = json.loads((rundir / "summary.json").read_text())
    assert got["tasks"] == 4 and got["missing"] == 0
    for name, values in reported["metrics"].items():  # the same strict scorer, the same answers
        assert got["metrics"][name] == pytest.approx(values), name
    assert got["scores_file"] == str(rundir / "scores.jsonl")
    assert f"scoring against the run's tasks: {rundir / 'tasks.jsonl'}" in r.stderr
    records = [json.loads(line) for line in (rundir / "scores.jsonl").read_text().splitlines()]
    assert sorted((s["instance_id"], s["trial"]) for s in records) == sorted(
        (t.instance_id, trial) for t in read_tasks(rollout_run["tasks"]) for trial in (0, 1)
    )
    assert not any(rollout_run["cwd"].iterdir())


def test_score_a_runs_episodes_file_with_tasks_and_out(rollout_run, tmp_path):
    episodes = rollout_run["run"] / "episodes.jsonl"
    r = run("score", "--responses", episodes, "--tasks", rollout_run["tasks"], "--trials", "2",
            "--out", tmp_path / "s.jsonl", cwd=rollout_run["cwd"])  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "Success rate" in r.stdout and f"per-task results → {tmp_path / 's.jsonl'}" in r.stdout
    assert len((tmp_path / "s.jsonl").read_text().splitlines()) == 8
    # the official layout of the same tasks scores the run too (compat mode)
    export_widesearch(read_tasks(rollout_run["tasks"]), tmp_path / "ws")
    r = run("score", "--responses", episodes, "--tasks", tmp_path / "ws" / "widesearch.jsonl", "--mode", "compat",
            "--trials", "2", "--json", "--out", tmp_path / "c.jsonl")  # fmt: skip
    assert summary(r)["tasks"] == 4 and len((tmp_path / "c.jsonl").read_text().splitlines()) == 8


def test_score_reads_only_task_id_answer_and_sample(saved_world, tmp_path):
    """An episode file with nothing but task_id, answer, sample/episode: the sample (or the #N of
    the episode key) is the trial, an episode written twice counts as last written, an episode
    without an answer scores 0, and a line cut off by a crash is skipped."""
    r = run("tasks", saved_world, "--n", "3", "--kind", "deep", "--out", tmp_path / "tasks.jsonl")
    assert r.returncode == 0, r.stderr
    t = read_tasks(tmp_path / "tasks.jsonl")
    lines = [
        {"task_id": t[0].instance_id, "sample": 0, "answer": "no idea"},
        {"task_id": t[0].instance_id, "sample": 0, "answer": t[0].answer},  # rerun: this one counts
        {"task_id": t[0].instance_id, "episode": f"{t[0].instance_id}#1", "answer": t[0].answer},
        {"task_id": t[1].instance_id, "sample": 1, "answer": t[1].answer},
        {"task_id": t[1].instance_id, "sample": 0, "answer": None},  # an error: no answer
        {"task_id": t[2].instance_id, "answer": "wrong"},  # no sample, no episode: trial 0
    ]
    episodes = tmp_path / "some_run_episodes.jsonl"
    episodes.write_text("".join(json.dumps(x) + "\n" for x in lines) + '{"task_id": "cut off by a cr')
    r = run("score", "--responses", episodes, "--tasks", tmp_path / "tasks.jsonl", "--trials", "2", "--json",
            cwd=tmp_path)  # fmt: skip
    got = summary(r)
    assert got["scores_file"] == str(tmp_path / "scores.jsonl")  # beside the responses
    scores = {(s["instance_id"], s["trial"]): s["score"] for s in map(json.loads, open(got["scores_file"]))}
    assert scores == {(t[0].instance_id, 0): 1.0, (t[0].instance_id, 1): 1.0, (t[1].instance_id, 1): 1.0,
                      (t[2].instance_id, 0): 0.0}  # fmt: skip
    assert got["metrics"]["score"]["avg_n"] == pytest.approx((1 + 0.5 + 0) / 3)  # (t1, 0) and (t2, 1) score 0
    assert got["missing"] == 2


def test_score_writes_beside_the_responses_and_says_where(saved_world, tmp_path):
    r = run("tasks", saved_world, "--n", "2", "--out", tmp_path / "tasks.jsonl")
    assert r.returncode == 0, r.stderr
    answers = tmp_path / "answers"
    answers.mkdir()
    resp = answers / "resp.jsonl"
    resp.write_text("".join(json.dumps({"instance_id": t.instance_id, "response": t.answer}) + "\n"
                            for t in read_tasks(tmp_path / "tasks.jsonl")))  # fmt: skip
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    r = run("score", "--tasks", tmp_path / "tasks.jsonl", "--responses", resp, cwd=cwd)
    assert r.returncode == 0, r.stderr
    assert f"per-task results → {answers / 'scores.jsonl'}" in r.stdout
    assert len((answers / "scores.jsonl").read_text().splitlines()) == 2 and not any(cwd.iterdir())


def test_score_without_tasks(rollout_run, tmp_path):
    """--tasks may be left out only for a run that holds its tasks; --out never overwrites an input."""
    bare = tmp_path / "bare_run"
    bare.mkdir()
    (bare / "episodes.jsonl").write_bytes((rollout_run["run"] / "episodes.jsonl").read_bytes())
    r = run("score", "--responses", bare)
    assert r.returncode == 2 and r.stderr.startswith(f"error: --tasks is needed: the run {bare} holds no tasks.jsonl")
    assert not (bare / "scores.jsonl").exists()
    r = run("score", "--responses", rollout_run["tasks"])
    assert r.returncode == 2 and "--tasks is needed" in r.stderr
    r = run("score", "--responses", bare, "--tasks", rollout_run["tasks"], "--out", bare / "episodes.jsonl")
    assert r.returncode == 2 and "is an input" in r.stderr
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "episodes.jsonl").write_text("")
    r = run("score", "--responses", tmp_path / "empty", "--tasks", rollout_run["tasks"])
    assert r.returncode == 2 and "no episodes in this run" in r.stderr


def test_tasks_widesearch_says_what_it_wrote(saved_world, tmp_path):
    ws = tmp_path / "ws"
    r = run("tasks", saved_world, "--n", "3", "--out", tmp_path / "t.jsonl", "--widesearch", ws)
    assert r.returncode == 0, r.stderr
    assert f"3 wide tasks → {tmp_path / 't.jsonl'}" in r.stdout
    said = f"official layout → {ws / 'widesearch.jsonl'} (3 tasks), {ws / 'widesearch_gold'}/ (3 gold CSVs)"
    assert said in r.stdout
    assert len((ws / "widesearch.jsonl").read_text().splitlines()) == 3
    assert len(list((ws / "widesearch_gold").glob("*.csv"))) == 3
