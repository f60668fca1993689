"""Rollouts on a real local Ray cluster: results, resume after a crash, a killed actor replaced
and its episode re-run, Parquet for HF datasets, GRPO groups, the CLI and the training loop."""

from __future__ import annotations

import json
import os
import signal

import numpy as np
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from fictionworld.cli import app
from fictionworld.rollouts import Episode, Timing
from fictionworld.rollouts.pool import RolloutPool, make_jobs, run_rollouts
from fictionworld.rollouts.records import RunError, export_parquet, group_advantages, read_episodes
from fictionworld.rollouts.train import SoftmaxPolicy, plot_curve, train_policy
from fictionworld.tasks.generate import generate_tasks
from fictionworld.tasks.model import write_tasks
from fictionworld.testing.scripted_openai import ScriptedOpenAIServer

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def tasks(world):
    return generate_tasks(world, 8, kind="mixed", seed=21)


def lines(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_oracle_rollout_records(ray_cluster, saved_world, world, tasks, tmp_path):
    res = run_rollouts(saved_world, make_jobs(tasks, 2), agent="oracle", workers=2, out=tmp_path / "run",
                       progress=False)  # fmt: skip
    assert res.new == 16 and res.skipped == 0
    assert res.summary(2).metrics["score"]["avg_n"] == 1.0
    recs = lines(tmp_path / "run" / "episodes.jsonl")
    assert sorted(r["episode"] for r in recs) == sorted(f"{t.instance_id}#{k}" for t in tasks for k in (0, 1))
    r = recs[0]
    for key in ("messages", "steps", "timing", "scores", "reward", "world_hash", "task_id", "sample", "agent_config"):
        assert key in r
    assert r["world_hash"] == world.world_hash and r["agent_config"]["name"] == "oracle"
    assert r["messages"][2]["tool_calls"][0]["function"]["name"] == "search"
    assert (
        r["messages"][3]["role"] == "tool"
        and r["messages"][3]["tool_call_id"] == r["messages"][2]["tool_calls"][0]["id"]
    )
    assert all(s["seconds"] >= 0 for s in r["steps"]) and r["timing"]["total_s"] > 0
    assert len({r["worker_pid"] for r in recs}) == 2  # both actors worked
    # same seeds: a second run gives the same episodes
    again = run_rollouts(saved_world, make_jobs(tasks, 2), agent="oracle", workers=1, progress=False)
    a = {r["episode"]: r["messages"] for r in recs}
    assert all(a[r["episode"]] == r["messages"] for r in again.records)


def test_resume_after_a_crash(ray_cluster, saved_world, tasks, tmp_path):
    run = tmp_path / "run"
    jobs = make_jobs(tasks[:6], 2)
    run_rollouts(saved_world, jobs, agent="baseline", workers=2, out=run, progress=False)
    path = run / "episodes.jsonl"
    kept = path.read_text().splitlines()
    # the driver died while writing the 6th episode; an agent error is also on file
    error = json.loads(kept[4]) | {"status": "error", "error": "LLMError: down"}
    path.write_text("\n".join(kept[:4] + [json.dumps(error), kept[5][: len(kept[5]) // 2]]))
    res = run_rollouts(saved_world, jobs, agent="baseline", workers=2, out=run, progress=False)
    assert (res.new, res.skipped) == (8, 4)  # the errored one and the half-written one run again
    recs, bad = read_episodes(path)
    assert bad == 0 and len(recs) == 13  # 4 kept + 1 old error + 8 new
    latest = {r["episode"]: r for r in recs}
    assert len(latest) == 12 and all(r["status"] == "done" for r in latest.values())
    assert [json.loads(x) for x in kept[:4]] == [json.loads(r.line()) for r in recs[:4]]
    res = run_rollouts(saved_world, jobs, agent="baseline", workers=2, out=run, progress=False)
    assert (res.new, res.skipped) == (0, 12) and len(res.records) == 12
    with pytest.raises(RunError, match="agent='baseline'"):
        run_rollouts(saved_world, jobs, agent="oracle", out=run, progress=False)


def test_killed_actor_is_replaced_and_its_episode_rerun(ray_cluster, saved_world, tasks, tmp_path):
    killed = []

    def kill_first_worker(rec):
        if not killed:  # the worker that finished this episode is busy with its next one
            killed.append(rec["worker_pid"])
            os.kill(rec["worker_pid"], signal.SIGKILL)

    res = run_rollouts(saved_world, make_jobs(tasks, 2), agent="oracle", agent_config={"delay": 0.02}, workers=2,
                       out=tmp_path / "run", on_episode=kill_first_worker, progress=False)  # fmt: skip
    assert killed and res.restarts >= 1
    recs = lines(tmp_path / "run" / "episodes.jsonl")
    assert len(recs) == 16 and len({r["episode"] for r in recs}) == 16
    assert all(r["status"] == "done" and r["scores"]["score"] == 1.0 for r in recs)
    assert any(r["attempt"] == 2 for r in recs)
    pids = {r["worker_pid"] for r in recs}
    assert killed[0] in pids and len(pids) >= 3  # a fresh actor took over


def test_openai_agent_on_ray_over_http(ray_cluster, saved_world, tasks):
    answers = {t.query: t.answer for t in tasks}
    with ScriptedOpenAIServer(lambda req: answers[req["messages"][1]["content"]]) as srv:
        res = run_rollouts(saved_world, make_jobs(tasks[:4], 2), agent="openai", workers=2, progress=False,
                           agent_config={"base_url": srv.base_url, "model": "scripted"})  # fmt: skip
        assert len(srv.requests) == 8
    assert all(r["reward"] == 1.0 and r["agent_config"]["model"] == "scripted" for r in res.records)


def test_parquet_loads_with_hf_datasets(ray_cluster, saved_world, tasks, tmp_path):
    datasets = pytest.importorskip("datasets")
    res = run_rollouts(saved_world, make_jobs(tasks, 4), agent="baseline", workers=2, progress=False,
                       agent_config={"strategy": {"max_entities": 5}})  # fmt: skip
    path = export_parquet(res.records, tmp_path / "e.parquet")
    ds = datasets.load_dataset("parquet", data_files=str(path), split="train")
    assert len(ds) == 32 and {"messages", "reward", "advantage", "f1_by_item", "steps"} <= set(ds.column_names)
    row = ds[0]
    assert row["messages"][0]["role"] == "system" and row["messages"][2]["tool_calls"][0]["function"]["name"]
    table = pq.read_table(path).to_pandas()
    for _, g in table.groupby("task_id"):
        adv = g["advantage"].dropna()
        if len(adv):
            assert abs(adv.mean()) < 1e-6 and abs(adv.std(ddof=0) - 1) < 1e-3
        else:
            assert g["reward"].nunique() == 1


def test_group_advantages():
    def episode(t, k, reward):
        return Episode(episode=f"t{t}#{k}", task_id=f"t{t}", task_kind="wide", sample=k, seed=k, step=0,
                       world_hash=None, agent="a", agent_config={}, status="done", error=None, reason="answer",
                       turns=1, reward=reward, scores=None, answer=None, messages=[], steps=[], timing=Timing())  # fmt: skip

    recs = [episode(t, k, r) for t, rs in enumerate([[1, 0, 0, 1], [0.5, 0.5], [0.2]]) for k, r in enumerate(rs)]
    adv = group_advantages(recs)
    assert [adv[f"t0#{k}"].advantage for k in range(4)] == pytest.approx([1, -1, -1, 1], abs=1e-5)
    assert adv["t1#0"].advantage is None and adv["t2#0"].advantage is None  # no variance, no signal
    assert group_advantages(recs, scale="none")["t0#0"].advantage == pytest.approx(0.5)
    assert group_advantages([json.loads(r.line()) for r in recs]) == adv  # JSON records are read as episodes


def test_cli_rollout_resume_and_export(ray_cluster, saved_world, tasks, tmp_path):
    write_tasks(tasks, tmp_path / "tasks.jsonl")
    args = ["rollout", str(saved_world), "--tasks", str(tmp_path / "tasks.jsonl"), "--agent", "baseline",
            "--samples-per-task", "2", "--workers", "2", "--out", str(tmp_path / "run"), "--limit", "3"]  # fmt: skip
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert "6 episodes run, 0 already done" in r.output and "Item F1" in r.output
    r = CliRunner().invoke(app, args + ["--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["skipped"] == 6  # (a warning may go to stderr)
    assert (tmp_path / "run" / "episodes.parquet").exists() and (tmp_path / "run" / "summary.json").exists()
    r = CliRunner().invoke(app, ["export", "episodes", str(tmp_path / "run"), "--out", str(tmp_path / "x.parquet")])
    assert r.exit_code == 0 and pq.read_table(tmp_path / "x.parquet").num_rows == 6
    bad = CliRunner().invoke(app, args[:-2] + ["--limit", "3", "--agent", "oracle"])
    assert bad.exit_code == 2 and "use another --out" in bad.output
    r = CliRunner().invoke(app, ["rollout", str(saved_world), "--tasks", str(tmp_path / "nope.jsonl"),
                                 "--out", str(tmp_path / "r2")])  # fmt: skip
    assert r.exit_code == 2 and "cannot read tasks file" in r.output


def test_cli_demo(ray_cluster, tmp_path):
    r = CliRunner().invoke(app, ["demo", "--dir", str(tmp_path / "d"), "--entities", "1500", "--tasks", "6"])
    assert r.exit_code == 0, r.output
    row = next(line for line in r.output.splitlines() if "oracle (all)" in line)
    assert row.count("1.000") == 3
    assert any("baseline (all)" in line for line in r.output.splitlines())
    assert (tmp_path / "d" / "runs" / "oracle" / "episodes.jsonl").exists()
    saved = (tmp_path / "d" / "results.txt").read_text()  # the table, kept beside the runs
    assert "oracle (all)" in saved and "baseline (all)" in saved and "results.txt" in r.output
    assert "\x1b" not in saved  # (plain text)
    # progress off a terminal: lines as the episodes finish (a rich bar printed only at the end)
    assert any(line.startswith("episodes: 6/6") for line in r.output.splitlines()), r.output


def test_cli_rollout_where_every_episode_failed_exits_1(ray_cluster, saved_world, tasks, tmp_path):
    """The openai agent on a server that is down: every episode is an error, and the command
    says so in one line and exits 1 (it printed its table and exited 0)."""
    write_tasks(tasks[:2], tmp_path / "tasks.jsonl")
    r = CliRunner().invoke(app, ["rollout", str(saved_world), "--tasks", str(tmp_path / "tasks.jsonl"), "--agent",
                                 "openai", "--agent-url", "http://127.0.0.1:9/v1", "--agent-config", '{"retries": 0}',
                                 "--workers", "1", "--out", str(tmp_path / "run")])  # fmt: skip
    assert r.exit_code == 1, r.output
    failed = [line for line in r.output.splitlines() if line.startswith("error:")]
    assert len(failed) == 1 and "every episode failed (2 of 2)" in failed[0], r.output
    assert "Traceback" not in r.output and len(lines(tmp_path / "run" / "episodes.jsonl")) == 2


def test_policy_update_moves_toward_advantage():
    p = SoftmaxPolicy(choices={"a": (1, 2, 3)})
    for _ in range(20):
        p.update([("wide", {"a": 2}, 1.0), ("wide", {"a": 0}, -1.0)], lr=1.0)
    probs = p.probs("wide")["a"]
    assert probs[2] > 0.9 and probs[0] < 0.05
    assert np.allclose(p.probs("deep")["a"], 1 / 3)  # the other context is untouched
    assert p.strategy(p.greedy("wide")) == {"a": 3}


def test_train_policy_runs_on_ray(ray_cluster, saved_world, world, tmp_path):
    ts = generate_tasks(world, 8, kind="wide", seed=31)
    res = train_policy(saved_world, ts[:5], ts[5:], iterations=2, group=4, eval_samples=2, eval_every=1, workers=2)
    assert [r["iteration"] for r in res.curve] == [0, 1, 2]
    assert res.episodes == 3 * 3 * 2 + 2 * 5 * 4 + 3
    assert all(r["heldout_reward"] is not None for r in res.curve)
    probs = res.policy["wide"]["max_entities"]
    assert abs(sum(probs.values()) - 1) < 1e-3 and len(set(probs.values())) > 1  # it moved
    png = plot_curve(res, tmp_path / "c.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_pool_reports_actor_memory(ray_cluster, saved_world):
    with RolloutPool(saved_world, agent="baseline", workers=2) as pool:
        info = pool.info()
    assert len(info) == 2 and all(i["rss"] > 10_000_000 for i in info)


def test_oracle_on_ray_with_the_llm_world_model(ray_cluster, saved_world, world, tasks, tmp_path):
    """Ray actors serve pages written by the (scripted) LLM world model: every page verified,
    one stored page per URL in the world's render cache, and the oracle still answers all."""
    import shutil

    from wm_helpers import Script

    from fictionworld.worldmodel.cache import RenderCache

    d = tmp_path / "w"
    shutil.copytree(saved_world, d)
    with ScriptedOpenAIServer(Script(world.web)) as srv:
        wm = {"kind": "sglang", "base_url": srv.base_url, "model": "scripted", "timeout": 20}
        res = run_rollouts(d, make_jobs(tasks[:4], 2), agent="oracle", workers=2, progress=False,
                           env_config={"world_model": wm})  # fmt: skip
        assert srv.requests
    assert all(r["status"] == "done" and r["world_model"] == "sglang:scripted" for r in res.records)
    assert [r["scores"]["score"] for r in res.records] == [1.0] * 8
    opened = {s["arguments"]["url"].split("?")[0] for r in res.records for s in r["steps"] if s["tool"] == "open"}
    counts = RenderCache(d / "renders.sqlite").counts()
    assert set(counts) == {"llm"} and counts["llm"] >= len(opened) // 2


def test_cli_rollout_on_a_world_corrupt_past_its_manifest_stops_before_any_episode(ray_cluster, saved_world, tasks,
                                                                                  tmp_path):  # fmt: skip
    import shutil

    d = tmp_path / "w"
    shutil.copytree(saved_world, d)
    (d / "facts.parquet").write_bytes(b"\x00" * 100)
    write_tasks(tasks[:2], tmp_path / "tasks.jsonl")
    r = CliRunner().invoke(app, ["rollout", str(d), "--tasks", str(tmp_path / "tasks.jsonl"), "--workers", "1",
                                 "--out", str(tmp_path / "run")])  # fmt: skip
    assert r.exit_code == 2 and "Traceback" not in r.output
    error = [line for line in r.output.splitlines() if line.startswith("error:")]
    assert len(error) == 1 and "rollout workers could not start" in error[0] and "facts.parquet" in error[0]
    assert not (tmp_path / "run" / "episodes.jsonl").read_text().strip()
