"""A run's samples reach what is made of them: ``export episodes`` says when GRPO groups carry
no signal (every sample of a task got the same reward, or a task has one sample), and ``score
--responses RUN`` scores every sample the run holds unless told ``--trials``. Hand-written runs,
the CLI in process: no Ray."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from fictionworld.cli import app
from fictionworld.rollouts import Episode, Timing
from fictionworld.tasks.model import write_tasks


def episode(task_id: str, sample: int, reward: float, answer: str | None = None) -> Episode:
    return Episode(episode=f"{task_id}#{sample}", task_id=task_id, task_kind="wide", sample=sample, seed=sample, step=0,
                   world_hash=None, agent="a", agent_config={}, status="done", error=None, reason="answer", turns=1,
                   reward=reward, scores=None, answer=answer, messages=[], steps=[], timing=Timing())  # fmt: skip


def write_run(path, episodes: list[Episode]):
    path.mkdir()
    (path / "episodes.jsonl").write_text("".join(e.line() + "\n" for e in episodes))
    return path


def export(run) -> tuple[int, str, str]:
    r = CliRunner().invoke(app, ["export", "episodes", str(run)])
    return r.exit_code, r.stdout, r.stderr


def test_export_says_how_many_groups_carry_no_signal(tmp_path):
    rewards = {"t0": [1, 1, 1, 1], "t1": [1, 0, 1, 0], "t2": [0, 0, 0, 0], "t3": [0.5, 0.5, 0.5, 0.5]}
    run = write_run(tmp_path / "run", [episode(t, k, r) for t, rs in rewards.items() for k, r in enumerate(rs)])
    code, stdout, stderr = export(run)
    assert code == 0 and "16 episodes →" in stdout
    warning = [line for line in stderr.splitlines() if line.startswith("warning:")]
    assert len(warning) == 1, stderr
    assert "12 of 16 episodes (3 of 4 tasks) have a null GRPO advantage" in warning[0]
    assert "(1 all 1, 1 all 0)" in warning[0] and "--samples-per-task" in warning[0]
    table = pq.read_table(run / "episodes.parquet").to_pandas()
    assert table["advantage"].isna().sum() == 12  # what the warning counts is what the file holds


def test_export_is_quiet_when_every_group_has_signal_and_names_single_samples(tmp_path):
    varied = write_run(tmp_path / "varied", [episode(t, k, r) for t in ("a", "b") for k, r in enumerate([1, 0, 0.5])])
    code, _, stderr = export(varied)
    assert code == 0 and "warning" not in stderr
    single = write_run(tmp_path / "single", [episode(t, 0, 1.0) for t in ("a", "b", "c")])
    code, _, stderr = export(single)
    assert code == 0 and "3 of 3 episodes (3 of 3 tasks)" in stderr and "one sample per task" in stderr


@pytest.mark.parametrize("trials", [None, 2])
def test_score_a_run_scores_every_sample_it_holds(small_world, tmp_path, trials):
    """Four samples per task: all four are scored (avg@4) unless ``--trials`` says otherwise,
    and then the others are named as ignored."""
    import fictionworld as fw

    task = fw.make_tasks(small_world, 1, kind="deep", seed=0)[0]
    answers = [task.gold.markdown(), "I don't know", task.gold.markdown(), "no idea"]
    run = write_run(tmp_path / "run", [episode(task.instance_id, k, 0.0, a) for k, a in enumerate(answers)])
    write_tasks([task], run / "tasks.jsonl")
    args = ["score", "--responses", str(run), "--json"] + ([] if trials is None else ["--trials", str(trials)])
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    scored = sorted(json.loads(line)["trial"] for line in (run / "scores.jsonl").read_text().splitlines())
    if trials is None:
        assert scored == [0, 1, 2, 3] and got["metrics"]["score"]["avg_n"] == pytest.approx(0.5)
        assert "ignored" not in r.stderr
    else:
        assert scored == [0, 1] and "responses to trials 2, 3 are ignored" in r.stderr
