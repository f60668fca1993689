"""The verifiers adapter against verifiers 0.4.0 itself (its v1 API), on CPU: the taskset found by
verifiers' own loader through a top-level module that re-exports ours (a taskset id is a module
name), rollouts run by verifiers' ``Env`` (``serving`` then ``run_slot``: its interception server,
our shared tool server in its own process, its ``null`` chat program as our harness) and by
``vf-eval`` itself. The model is :func:`scripted_model`, a local stand-in that replays
scripted turns (not a model). The oracle's trajectory scores 1.0 and reads exactly what the env's
episode reads, faults included (seed and knobs reach the tool server through ``State``); garbage
calls come back as tool messages, and wrong, hedged, several-candidate and missing answers score
what the env scores them, never more, without an exception."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import require
from scoring_helpers import table

require("verifiers")

import verifiers.v1 as vf  # noqa: E402
from pydantic import ValidationError  # noqa: E402
from verifiers.v1.utils.loaders import taskset_class  # noqa: E402

import fictionworld as fw  # noqa: E402
from fictionworld.env import EnvConfig, SearchEnv  # noqa: E402
from fictionworld.env.prompts import system_prompt  # noqa: E402
from fictionworld.env.trainer import REWARD_KEYS, TRAINER_ENV, Episode, export_rows, reward_info, task_of  # noqa: E402
from fictionworld.integrations import verifiers as fv  # noqa: E402
from fictionworld.tasks.model import write_tasks  # noqa: E402
from fictionworld.testing.scripted_openai import Reply, ScriptedOpenAIServer  # noqa: E402
from fictionworld.testing.trajectories import garbage_calls, oracle_calls  # noqa: E402
from fictionworld.web.web import FAULT_TEXT  # noqa: E402

ID = "fictionworld-verifiers"  # verifiers imports it as the module fictionworld_verifiers
SEED, KNOBS = 3, {"fault_rate": 0.3, "results_per_page": 5}  # faults: the replay must draw them as the env does
NOT_SCORED = ("oracle", "surrogate", "answer-tool")  # rollouts compared otherwise than with the env's reply rule


# -- a stand-in for the model ---------------------------------------------------------------------
def scripted_model(scripts: dict[str, list[dict]]) -> ScriptedOpenAIServer:
    """Not a model: the scripted OpenAI-compatible server, streaming (as verifiers' chat program
    asks) the turn of a script. The request's ``model`` names the script; the number of assistant
    messages in the request picks the turn (past the end: an empty reply)."""

    def reply(req: dict) -> Reply:
        turns, n = scripts[req["model"]], sum(m["role"] == "assistant" for m in req["messages"])
        turn = turns[n] if n < len(turns) else {}
        calls = [{"id": f"call_{n}_{i}", "type": "function",
                  "function": {"name": c["name"], "arguments": c["arguments"] if isinstance(c["arguments"], str)
                               else json.dumps(c["arguments"])}} for i, c in enumerate(turn.get("calls", []))]  # fmt: skip
        return Reply(content=turn.get("text") or "", tool_calls=calls or None)

    return ScriptedOpenAIServer(reply)


def replay(calls: list[dict], answer: str | None) -> list[dict]:
    """A trajectory: one call a turn, then ``answer`` as the reply without a tool call."""
    return [{"calls": [c]} for c in calls] + [{"text": answer}]


# -- fixtures -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def plugin():
    """The folder holding the top-level module that names the taskset (fictionworld_verifiers,
    shipped with the package: verifiers loads tasksets from top-level modules only)."""
    import fictionworld_verifiers

    assert fictionworld_verifiers.__all__ == fv.__all__
    return Path(fictionworld_verifiers.__file__).parent.parent


@pytest.fixture(scope="module")
def tasks_file(world, tmp_path_factory) -> Path:
    tasks = fw.make_tasks(world, 2, kind="deep", seed=5) + fw.make_tasks(world, 1, kind="wide", seed=5)
    path = tmp_path_factory.mktemp("vf") / "tasks.jsonl"
    write_tasks(tasks, path)
    return path


def env_config(saved_world, tasks_file, **taskset) -> vf.SingleAgentEnvConfig:
    ts = {"id": ID, "world": str(saved_world), "tasks": str(tasks_file), "seed": SEED, "knobs": KNOBS} | taskset
    return vf.SingleAgentEnvConfig.model_validate({"taskset": ts, "agent": {"runtime": {"type": "subprocess"}}})


def scripts_for(world, tasks, saved_world) -> tuple[dict, list]:
    """The scripted rollouts, by model name: (task, group size, turns)."""
    t0, t1, wide = tasks
    gold = task_of(wide.data.task_json).gold
    oracle = {t.data.id: oracle_calls(world, task_of(t.data.task_json), seed=t.data.seed, knobs=KNOBS) for t in tasks}
    answer = {i: calls[-1]["arguments"]["text"] for i, calls in oracle.items()}
    other = [gold.rows[(i + 1) % len(gold.rows)] for i in range(len(gold.rows))]
    hedged = [[c if j == 0 else f"{c} or {o[j]}" for j, c in enumerate(r)] for r, o in zip(gold.rows, other)]
    decoys = [[r[0], *o[1:]] for r, o in zip(gold.rows, other)]
    junk = [c for c in garbage_calls(7, 25) if "\\ud800" not in json.dumps(c)]  # see test_a_call_verifiers_cannot_send
    shell = {"name": "bash", "arguments": {"command": f"cat {saved_world}/manifest.json"}}
    plan = {
        "oracle-0": (t0, 2, replay(oracle[t0.data.id][:-1], answer[t0.data.id])),
        "oracle-1": (t1, 1, replay(oracle[t1.data.id][:-1], answer[t1.data.id])),
        "oracle-wide": (wide, 1, replay(oracle[wide.data.id][:-1], answer[wide.data.id])),
        "garbage": (t1, 1, replay([shell, *junk], "I don't know")),
        "hedged": (wide, 1, replay([], table(gold.columns, hedged))),
        "candidates": (wide, 1, replay([], table(gold.columns, gold.rows + decoys))),
        "duplicates": (wide, 1, replay([], table(gold.columns, gold.rows + gold.rows))),
        "said-early": (t0, 1, [{"text": answer[t0.data.id], "calls": oracle[t0.data.id][:1]}, {"text": "Not sure."}]),
        "no-answer": (t0, 1, replay(oracle[t0.data.id][:-1], None)),
        "answer-tool": (wide, 1, replay([{"name": "answer", "arguments": {"text": answer[wide.data.id]}}], "")),
        "surrogate": (t0, 1, replay([{"name": "search", "arguments": {"query": "\ud800"}}], answer[t0.data.id])),
        "thinks-hedge": (wide, 1, replay([], f"<think>maybe\n{answer[wide.data.id]}\nlet me search more</think>")),
        "thinks-then-answers": (wide, 1, replay([], f"<think>I have every row.</think>\n{answer[wide.data.id]}")),
    }
    return {name: turns for name, (_, _, turns) in plan.items()}, [(n, t, k) for n, (t, k, _) in plan.items()]


async def _run(env, plan, url) -> dict[str, list]:
    """Every rollout of ``plan`` through the env's own serving and slots, as vf-eval runs them."""
    client = vf.EvalClientConfig(base_url=url, api_key_var="FICTIONWORLD_NO_KEY")
    async with env.serving():
        slots = [(name, slot) for name, task, n in plan for slot in env.slots(task, n)]
        episodes = await asyncio.gather(*(env.run_slot(s, vf.ModelContext(model=name, client=client))
                                          for name, s in slots))  # fmt: skip
    out: dict[str, list] = {}
    for (name, _), episode in zip(slots, episodes):
        out.setdefault(name, []).extend(episode.traces)
    return out


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@pytest.fixture(scope="module")
def run(plugin, world, saved_world, tasks_file):
    env = vf.load_environment(env_config(saved_world, tasks_file))
    tasks = list(env.taskset)
    scripts, plan = scripts_for(world, tasks, saved_world)
    launch, records = logging.getLogger("verifiers.v1.mcp.launch"), _Records()
    launch.addHandler(records)
    level, launch.level = launch.level, logging.INFO
    try:
        with scripted_model(scripts) as model:
            traces = asyncio.run(_run(env, plan, model.base_url))
    finally:
        launch.removeHandler(records)
        launch.setLevel(level)
    return SimpleNamespace(env=env, tasks={t.data.id: t for t in tasks}, traces=traces, scripts=scripts,
                           requests=model.requests, launched=records.messages)  # fmt: skip


def env_scores(world, task, seed: int, reply: str | None) -> tuple[float, dict]:
    """What SearchEnv makes of a rollout that ends with ``reply`` (a reply without a tool call is
    the answer; an empty one leaves the last text written, here none)."""
    env = SearchEnv(world.web, EnvConfig(**TRAINER_ENV))
    env.reset(task, seed=seed)
    env.step({"role": "assistant", "content": reply})
    env.end("stopped")
    return env.reward, reward_info(env.scores, answered=env.reason == "answer")


# -- loading --------------------------------------------------------------------------------------
def test_the_loader_finds_one_taskset_its_tool_only_harness_and_the_tasks(plugin, saved_world, tasks_file):
    assert taskset_class(ID) is fv.FictionWorldTaskset and vf.environment_class(ID) is vf.SingleAgentEnv
    assert vf.default_harness_id(ID) == ID  # the module exports a Harness: it replaces verifiers' `bash`
    harness = vf.load_harness(vf.default_agent_harness(ID))
    assert type(harness) is fv.FictionWorldHarness and not harness.EXECUTES_CODE and harness.SUPPORTS_MCP
    with pytest.raises(ModuleNotFoundError):  # an id is a top-level module: fictionworld_verifiers
        taskset_class("fictionworld.integrations.verifiers")
    taskset = vf.load_taskset(env_config(saved_world, tasks_file).taskset)
    tasks = list(taskset)
    _, rows = export_rows(tasks_file, saved_world, val_fraction=0, seed=SEED)
    assert [(t.data.id, t.data.prompt, t.data.seed) for t in tasks] == [(r.task.instance_id, r.task.query, r.seed)
                                                                        for r in rows]  # fmt: skip
    assert all(task_of(t.data.task_json).gold == r.task.gold and t.data.knobs == KNOBS for t, r in zip(tasks, rows))
    assert tasks[0].data.system_prompt == system_prompt(("search", "open")) and tasks[0].key == tasks[0].data.id
    assert [type(s) for s in taskset.toolsets(taskset.config)] == [fv.FictionWorldToolset]
    assert fv.FictionWorldTask.toolsets(taskset.config.task) == []  # no per-rollout server: one world for all


def test_the_taskset_scores_abstention_aware_when_configured(plugin, saved_world, tasks_file):
    """``--env.taskset.abstention``: each task's answer is scored with blank cells out of
    precision's denominator; off by default (WideSearch's score)."""
    from types import SimpleNamespace

    plain = list(vf.load_taskset(env_config(saved_world, tasks_file).taskset))
    aware = list(vf.load_taskset(env_config(saved_world, tasks_file, abstention=True).taskset))
    assert not any(t.data.abstention for t in plain) and all(t.data.abstention for t in aware)
    i = next(i for i, t in enumerate(plain) if len(task_of(t.data.task_json).gold.rows) >= 2)
    task = task_of(plain[i].data.task_json)
    keys = {task.gold.columns.index(k) for k in task.evaluation.unique_columns}
    rows = [r if n == 0 else [c if j in keys else "N/A" for j, c in enumerate(r)] for n, r in enumerate(task.gold.rows)]
    reply = "<answer>\n" + task.gold.model_copy(update={"rows": rows}).markdown(task.headers or None) + "\n</answer>"
    trace = SimpleNamespace(assistant_messages=[SimpleNamespace(content=reply)])
    assert aware[i].scores(trace)["score"] > plain[i].scores(trace)["score"]


def test_bad_configs_fail_when_the_taskset_loads(plugin, saved_world, tasks_file, tmp_path):
    with pytest.raises(ValueError, match="--env.taskset.world"):
        list(vf.load_taskset(env_config(saved_world, tasks_file, world="").taskset))
    with pytest.raises(ValidationError, match="fault_rat"):
        list(vf.load_taskset(env_config(saved_world, tasks_file, knobs={"fault_rat": 0.1}).taskset))
    other = tmp_path / "other"
    fw.generate(seed=5, entities=50).save(other)
    with pytest.raises(ValueError, match="another world"):
        list(vf.load_taskset(env_config(other, tasks_file).taskset))


def test_importing_fictionworld_never_imports_verifiers():
    code = "import sys, fictionworld, fictionworld.integrations, fictionworld.env.trainer; print('verifiers' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


# -- rollouts through verifiers' Env --------------------------------------------------------------
@pytest.mark.trainers  # (run: verifiers' own rollouts)
def test_the_oracle_scores_one_and_reads_exactly_what_the_env_reads(run, world):
    faults = 0
    for name in ("oracle-0", "oracle-1", "oracle-wide"):
        for trace in run.traces[name]:
            data = run.tasks[trace.task.data.id].data
            assert trace.ok and trace.errors == [] and trace.rewards["item_f1"].score == 1.0, (name, trace.errors)
            assert trace.metrics["success"] == 1.0 and trace.metrics["f1_by_row"] == 1.0
            episode = Episode(world.web, data.task_json, seed=data.seed, knobs=KNOBS)
            calls = [c for turn in run.scripts[name][:-1] for c in turn["calls"]]
            assert [m.content for m in trace.tool_messages] == [episode.call(c["name"], c["arguments"]) for c in calls]
            faults += sum(m.content in FAULT_TEXT.values() for m in trace.tool_messages)
            state = trace.state  # the rollout's session, as the tool server last pushed it
            assert (state.session, state.seed, state.knobs, state.calls) == (trace.id, data.seed, KNOBS, len(calls))
    assert faults > 5  # the knobs reached the tool server, and its faults came in the env's order


@pytest.mark.trainers  # (run: verifiers' own rollouts)
def test_a_group_shares_its_tasks_web_in_sessions_of_its_own(run):
    a, b = run.traces["oracle-0"]
    assert a.state.session != b.state.session and a.state.seed == b.state.seed
    assert [m.content for m in a.tool_messages] == [m.content for m in b.tool_messages]


@pytest.mark.trainers  # (run: verifiers' own rollouts)
def test_garbage_and_wrong_answers_score_what_the_env_scores_them(run, world):
    for name, traces in run.traces.items():
        if name.startswith(NOT_SCORED):
            continue
        (trace,) = traces
        data = run.tasks[trace.task.data.id].data
        turns = run.scripts[name]
        assert trace.ok and trace.errors == [], (name, trace.errors)
        assert len(trace.tool_messages) == sum(len(t.get("calls", [])) for t in turns)  # every call was answered
        reward, info = env_scores(world, task_of(data.task_json), data.seed, turns[-1]["text"])
        assert trace.rewards["item_f1"].score == reward == info["score"], name
        assert trace.metrics == {k: v for k, v in info.items() if k != "score"}, name
    scores = {name: run.traces[name][0].rewards["item_f1"].score for name in run.traces if name != "surrogate"}
    assert scores["garbage"] == scores["no-answer"] == scores["said-early"] == scores["answer-tool"] == 0.0
    assert scores["hedged"] < 0.6 and scores["candidates"] < 1.0  # the scorer's rules, unchanged
    assert scores["duplicates"] == 1.0  # the same rows twice are the same content
    assert scores["thinks-hedge"] == 0.0 and scores["thinks-then-answers"] == 1.0  # reasoning is never the answer
    assert run.traces["no-answer"][0].metrics["answered"] == 0.0


@pytest.mark.trainers  # (run: verifiers' own rollouts)
def test_the_harness_gives_the_model_the_envs_two_tools_and_nothing_else(run, saved_world):
    for request in run.requests:
        assert sorted(t["function"]["name"] for t in request["tools"]) == ["open", "search"]
        assert request["messages"][0] == {"role": "system", "content": system_prompt(("search", "open"))}
    garbage = run.traces["garbage"][0].tool_messages
    assert garbage[0].content == "error: unknown tool 'bash'"
    world_hash = json.loads((saved_world / "manifest.json").read_text())["world_hash"]
    assert not any(world_hash in str(m.content) for traces in run.traces.values() for t in traces
                   for m in t.tool_messages)  # fmt: skip
    assert run.traces["answer-tool"][0].tool_messages[0].content == "error: unknown tool 'answer'"


@pytest.mark.trainers  # (run: verifiers' own rollouts)
def test_the_world_is_opened_once_for_every_rollout(run):
    started = [m for m in run.launched if m.startswith("shared tool server")]
    joined = [m for m in run.launched if m.startswith("tool server") and "(shared)" in m]
    assert len(started) == 1 and len(joined) == sum(len(t) for t in run.traces.values())
    assert len({m.rsplit(" ", 1)[-1] for m in joined}) == 1  # one server (one URL) for all of them
    assert not [m for m in run.launched if m.startswith("tool server") and "(shared)" not in m]


@pytest.mark.trainers  # (run: verifiers' own rollouts)
def test_a_call_verifiers_cannot_send_fails_only_its_rollout(run):
    """verifiers' MCP client (mcp 2.0.0) cannot encode a lone surrogate in tool arguments: the chat
    program dies, the rollout ends with a HarnessError and is not scored. Ours never sees the
    call; the other rollouts, served by the same tool server at the same time, are unaffected."""
    (trace,) = run.traces["surrogate"]
    assert not trace.ok and trace.errors[-1].type == "HarnessError" and trace.rewards == {}
    assert trace.reward == 0.0 and trace.state.calls == 0


# -- the command line -----------------------------------------------------------------------------
@pytest.mark.trainers
@pytest.mark.cli
def test_vf_eval_runs_the_taskset_from_its_command_line(plugin, world, saved_world, tasks_file, tmp_path):
    _, rows = export_rows(tasks_file, saved_world, val_fraction=0, seed=SEED)
    calls = oracle_calls(world, rows[0].task, seed=rows[0].seed, knobs=KNOBS)
    vf_eval = Path(sys.executable).parent / "vf-eval"
    argv = [str(vf_eval), ID, "--env.taskset.world", str(saved_world), "--env.taskset.tasks", str(tasks_file),
            "--env.taskset.seed", str(SEED), "--env.taskset.knobs", json.dumps(KNOBS),
            "--env.agent.runtime.type", "subprocess", "--env.agent.max-turns", "30", "-m", "oracle",
            "--client.base-url", "", "--client.api-key-var", "FICTIONWORLD_NO_KEY", "-n", "1", "-r", "1",
            "--no-push", "--no-rich", "-o", str(tmp_path), "--run.name", "oracle"]  # fmt: skip
    with scripted_model({"oracle": replay(calls[:-1], calls[-1]["arguments"]["text"])}) as model:
        argv[argv.index("--client.base-url") + 1] = model.base_url
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin), os.environ.get("PYTHONPATH", "")])}
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    (line,) = (tmp_path / "oracle" / "traces.jsonl").read_text().splitlines()  # one episode
    (trace,) = json.loads(line)["traces"]
    assert trace["task"]["data"]["id"] == rows[0].task.instance_id
    assert trace["rewards"]["item_f1"]["score"] == 1.0 and trace["metrics"]["success"] == 1.0
    assert set(trace["metrics"]) == set(REWARD_KEYS) - {"score"}
