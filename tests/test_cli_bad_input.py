"""Bad input on the command line: one clear ``error:`` line and a non-zero exit, never a
traceback, a pydantic dump or silently wrong work (tests/test_cli_walk.py walks every command
with bad values for every option)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from fictionworld.cli import MAX_ENTITIES, MAX_K, MAX_PAGE, MIN_ENTITIES, app

APP = app


def cli(*args) -> object:
    return CliRunner().invoke(APP, [str(a) for a in args])


def shell(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fictionworld.cli", *map(str, args)], capture_output=True, text=True)


def errors(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error:")]


def clean_failure(r, code: int = 2) -> list[str]:
    """Asserts a clean failure (exit ``code``, no traceback, no pydantic URL); its error lines."""
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert "Traceback" not in r.output and "errors.pydantic.dev" not in r.output, r.output
    assert r.exit_code == code, r.output
    return errors(r.output)


@pytest.mark.parametrize("world", ["missing", "bad_world", "garbage", "empty_dir"])
def test_rollout_on_a_missing_or_broken_world(files, tmp_path, no_ray, world):
    r = cli("rollout", files["dir"] / world, "--tasks", files["tasks"], "--out", tmp_path / "run")
    lines = clean_failure(r)
    assert len(lines) == 1 and str(files["dir"] / world) in lines[0]
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("agent", "config", "says"),
    [
        ("nosuch", None, "unknown agent 'nosuch'; known agents: baseline, explorer, openai, oracle"),
        ("os:path", None, "'path' is not an agent class"),
        ("nosuch_module:Agent", None, "cannot import module 'nosuch_module'"),
        ("fictionworld.rollouts.agents:Nope", None, "has no 'Nope'"),
        ("oracle", '{"retries": 1, "colour": "red"}', "unknown setting(s) 'colour'; valid settings: retries"),
        ("openai", '{"tool_mode": "smoke", "base_url": "http://127.0.0.1:9/v1"}', "tool_mode must be native or tags"),
        ("openai", '{"max_turns": 0, "base_url": "http://127.0.0.1:9/v1"}', "must be >= 1, not 0"),  # (env setting)
    ],
)
def test_rollout_agent_is_checked_before_ray_starts(files, tmp_path, no_ray, agent, config, says):
    t0 = time.perf_counter()
    args = ["--agent-config", config] if config else []
    r = cli("rollout", files["world"], "--tasks", files["tasks"], "--out", tmp_path / "run", "--agent", agent, *args)
    lines = clean_failure(r)
    assert len(lines) == 1 and says in lines[0], lines
    assert not (tmp_path / "run").exists() and time.perf_counter() - t0 < 10


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--tool-mode", "tags"], "--tool-mode: only for --agent openai"),
        (["--temperature", "0.3"], "--temperature: only for --agent openai"),
        (["--agent-model", "m"], "--agent-model: only for --agent openai, not --agent baseline"),
        (["--agent-url", "http://h:1/v1"], "--agent-url: only for --agent openai, not --agent baseline"),
        (["--world-model-url", "http://h:1/v1"], "--world-model-url: only for --world-model sglang"),
        (["--world-model-name", "m"], "--world-model-name: only for --world-model sglang"),
        (["--knob", "conflict_rate=abc"], "knob 'conflict_rate': must be a number, not 'abc'"),
        (["--tools", "everything"], "--tools must be basic, agentworld, memory or all"),
        (["--agent-config", "[1]"], "--agent-config must be a JSON object"),
    ],
)
def test_rollout_options_that_would_be_ignored_or_are_wrong(files, tmp_path, no_ray, args, says):
    r = cli("rollout", files["world"], "--tasks", files["tasks"], "--out", tmp_path / "run", *args)
    lines = clean_failure(r)
    assert len(lines) == 1 and says in lines[0], lines
    assert not (tmp_path / "run").exists()


def test_rollout_refuses_a_run_directory_of_other_settings(files, tmp_path, no_ray):
    from fictionworld.storage import read_manifest

    run = tmp_path / "run"
    run.mkdir()
    meta = {"world": str(files["world"].resolve()), "world_hash": read_manifest(files["world"])["world_hash"],
            "agent": "baseline", "agent_config": {}, "env_config": {"tools": "basic"}}  # fmt: skip
    (run / "run.json").write_text(json.dumps(meta))
    r = cli("rollout", files["world"], "--tasks", files["tasks"], "--out", run, "--knob", "conflict_rate=0.3")
    lines = clean_failure(r)
    assert len(lines) == 1 and "holds a run with other settings" in lines[0]
    assert "env_config.knobs" in lines[0] and "use another --out" in lines[0]
    r = cli("rollout", files["world"], "--tasks", files["tasks"], "--out", run, "--max-turns", "7")
    assert "env_config.max_turns: None then, 7 now" in clean_failure(r)[0]
    assert json.loads((run / "run.json").read_text()) == meta  # run.json keeps describing its episodes


def test_a_run_of_the_same_settings_resumes(files, tmp_path):
    from fictionworld.rollouts.records import EpisodeLog, RunError
    from fictionworld.storage import read_manifest

    meta = {"world_hash": read_manifest(files["world"])["world_hash"], "agent": "openai",
            "agent_config": {"model": "m", "temperature": 0.5}, "env_config": {"tools": "basic"}}  # fmt: skip
    EpisodeLog(tmp_path, meta).close()
    EpisodeLog(tmp_path, json.loads(json.dumps(meta))).close()
    with pytest.raises(RunError, match=r"agent_config.temperature: 0.5 then, 0.7 now"):
        EpisodeLog(tmp_path, meta | {"agent_config": {"model": "m", "temperature": 0.7}})


# -- sizes: one minimum everywhere, checked up front ------------------------------------------------
@pytest.mark.parametrize("command", ["generate", "spec", "demo", "train-demo"])
@pytest.mark.parametrize("entities", ["0", "-5", str(MIN_ENTITIES - 1), "100000000000"])
def test_entities_has_one_range_everywhere(files, tmp_path, command, entities):
    args = ["--out", tmp_path / "w"] if command == "generate" else []
    r = cli(command, "--entities", entities, *args)
    lines = clean_failure(r)
    assert len(lines) == 1 and "'--entities'" in lines[0]
    assert str(MIN_ENTITIES) in lines[0] or str(MAX_ENTITIES) in lines[0]  # the range it broke
    assert f"{command} --help" in r.output  # the usage hint
    assert not (tmp_path / "w").exists()


def test_spec_at_the_minimum_size(tmp_path):
    r = cli("spec", "--entities", MIN_ENTITIES)
    assert r.exit_code == 0 and f"entities: {MIN_ENTITIES}" in r.output


@pytest.mark.parametrize("n", ["0", "-3"])
def test_tasks_n_below_one_writes_nothing(files, tmp_path, n):
    r = cli("tasks", files["world"], "--n", n, "--out", tmp_path / "t.jsonl")
    clean_failure(r)
    assert "--n" in r.output and not (tmp_path / "t.jsonl").exists()


def test_task_options_are_named_as_options(files, tmp_path):
    r = cli("tasks", files["world"], "--rows-min", "0", "--columns", "40", "--out", tmp_path / "t.jsonl")
    assert clean_failure(r) == ["error: --rows-min: must be >= 1, not 0", "error: --columns: must be <= 12, not 40"]


def test_export_scale_is_checked(files):
    r = cli("export", "episodes", files["run"], "--scale", "foo")
    assert clean_failure(r) == ["error: --scale must be std or none, not 'foo'"]


# -- score: nothing to score is an error, a partial answer set a warning ----------------------------
def test_score_with_no_matching_response(files, tmp_path):
    (tmp_path / "r.jsonl").write_text(json.dumps({"instance_id": "someone-else", "response": "x"}) + "\n")
    r = cli("score", "--tasks", files["tasks"], "--responses", tmp_path / "r.jsonl", "--out", tmp_path / "s.jsonl")
    lines = clean_failure(r)
    assert len(lines) == 1 and "no response matches a task" in lines[0] and "someone-else" in lines[0]
    assert not (tmp_path / "s.jsonl").exists()


def test_score_with_an_empty_response_directory_or_file(files, tmp_path):
    (tmp_path / "resp").mkdir()
    r = cli("score", "--tasks", files["tasks"], "--responses", tmp_path / "resp")
    assert clean_failure(r) == [
        f"error: --responses {tmp_path / 'resp'}: neither a rollout run (episodes.jsonl) "
        "nor official response files (*_response.jsonl) in this directory"
    ]
    (tmp_path / "r.jsonl").write_text("\n")
    r = cli("score", "--tasks", files["tasks"], "--responses", tmp_path / "r.jsonl")
    assert clean_failure(r) == [f"error: --responses {tmp_path / 'r.jsonl'}: no responses in this file"]


def test_score_with_an_empty_tasks_file(files, tmp_path):
    (tmp_path / "t.jsonl").write_text("")
    r = cli("score", "--tasks", tmp_path / "t.jsonl", "--responses", files["responses"])
    assert clean_failure(r) == [f"error: {tmp_path / 't.jsonl'}: no tasks to score"]


def test_score_warns_about_tasks_without_a_response(files, tmp_path):
    first = files["responses"].read_text().splitlines()[0]
    (tmp_path / "r.jsonl").write_text(first + "\n")
    r = shell("score", "--tasks", files["tasks"], "--responses", tmp_path / "r.jsonl", "--out", tmp_path / "s.jsonl")
    assert r.returncode == 0, r.stderr
    warning = [line for line in r.stderr.splitlines() if line.startswith("warning:")]
    assert warning == [f"warning: 2 of 3 tasks have no response and score 0: {', '.join(files['task_ids'][1:])}"]


def test_tasks_file_errors_are_in_words(files, tmp_path):
    good = files["tasks"].read_text().splitlines()
    bad = json.loads(good[1])
    del bad["instance_id"]
    (tmp_path / "t.jsonl").write_text("\n".join([good[0], json.dumps(bad), good[2]]) + "\n")
    r = cli("score", "--tasks", tmp_path / "t.jsonl", "--responses", files["responses"])
    assert clean_failure(r) == [f"error: {tmp_path / 't.jsonl'}:2: not a task record: missing field 'instance_id'"]


def test_response_file_errors_are_in_words(files, tmp_path):
    (tmp_path / "r.jsonl").write_text(json.dumps({"response": "x"}) + "\n")
    r = cli("score", "--tasks", files["tasks"], "--responses", tmp_path / "r.jsonl")
    lines = clean_failure(r)
    assert len(lines) == 1 and "missing field 'instance_id'" in lines[0] and "KeyError" not in lines[0]


def test_fidelity_fails_when_the_server_never_answers(files):
    r = cli("fidelity", files["world"], "--world-model", "sglang", "--world-model-url", "http://127.0.0.1:9/v1",
            "--n", "2", "--searches", "0", "--json")  # fmt: skip
    lines = clean_failure(r, 1)
    assert len(lines) == 1 and "nothing was rendered" in lines[0] and "http://127.0.0.1:9/v1" in lines[0]


# -- one option per server; the old shared names are gone (issue 75: no deprecated aliases) -----------
def test_each_server_has_its_own_option_and_the_old_names_are_unknown(files, tmp_path, no_ray):
    down = "http://127.0.0.1:9/v1"
    r = cli("open", files["world"], files["url"], "--world-model-url", down)
    assert clean_failure(r) == ["error: --world-model-url: only for --world-model sglang"]
    r = cli("fidelity", files["world"], "--world-model", "sglang")
    assert clean_failure(r) == [
        "error: --world-model sglang needs --world-model-url (its SGLang server, e.g. http://127.0.0.1:30000/v1)"
    ]
    rollout = ["rollout", files["world"], "--tasks", files["tasks"], "--out", tmp_path / "run"]
    old = [("search", files["world"], "glass", "--world-model", "sglang", "--base-url", down),
           ("search", files["world"], "glass", "--world-model", "sglang", "--model", "m"),
           ("open", files["world"], files["url"], "--api", "chat"),
           ("fidelity", files["world"], "--base-url", down),
           (*rollout, "--agent", "openai", "--base-url", down),
           (*rollout, "--agent", "openai", "--model", "m"),
           ("score", "--tasks", files["tasks"], "--responses", files["responses"], "--judge-base-url", down)]  # fmt: skip
    for args in old:
        r = cli(*args)
        assert r.exit_code == 2 and f"error: No such option: {args[-2]}" in r.output, (args, r.output)
    assert not (tmp_path / "run").exists()
    for command in ("search", "open", "fidelity", "rollout", "score"):
        text = cli(command, "--help").output
        assert "--base-url" not in text and "--judge-base-url" not in text, command
    assert "--agent-url" in cli("rollout", "--help").output and "--judge-url" in cli("score", "--help").output
    r = cli("export", files["run"])  # `export RUN` was `export episodes RUN`
    assert r.exit_code == 2 and "No such command" in r.output, r.output


# -- messages: one clear line per problem, never pydantic's ------------------------------------------
def test_unknown_knob_lists_the_valid_knobs(files):
    r = cli("search", files["world"], "glass", "--knob", "foo=1")
    assert clean_failure(r) == [
        "error: knob 'foo': unknown knob; valid knobs: conflict_rate, confusable_rate, distractor_rate, "
        "fault_kinds, fault_rate, list_page_size, results_per_page, snippet_leak_rate"
    ]
    r = cli("open", files["world"], files["url"], "--knob", "list_page_size=0", "--knob", "fault_kinds=timeout,x")
    assert clean_failure(r) == [
        "error: knob 'list_page_size': must be >= 1, not '0'",
        "error: knob 'fault_kinds[1]': must be 'timeout', 'server_error' or 'rate_limited', not 'x'",
    ]
    r = cli("search", files["world"], "glass", "--knob", "conflict_rate")
    assert "expected NAME=VALUE" in clean_failure(r)[0] and "valid knobs: conflict_rate" in r.output


def test_spec_file_errors_are_one_line_each(tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text("entities: many\npresent: 1800-01-01\n")
    r = cli("generate", "--spec", spec, "--out", tmp_path / "w")
    assert set(clean_failure(r)) == {
        f"error: --spec {spec}: spec field 'entities': must be a whole number, not 'many'",
        f"error: --spec {spec}: spec field 'present': present must lie between 1950 and 2100",
        f"error: --spec {spec}: missing spec field 'types'",
    }


def test_a_manifest_with_a_bad_spec_is_in_words(files, tmp_path):
    import shutil

    d = tmp_path / "w"
    shutil.copytree(files["world"], d)
    manifest = json.loads((d / "manifest.json").read_text())
    manifest["spec"] |= {"entities": -3, "bogus": 1}
    (d / "manifest.json").write_text(json.dumps(manifest))
    r = cli("stats", d)
    assert clean_failure(r) == [
        f"error: {d}/manifest.json: invalid spec: spec field 'entities': must be >= 1, not -3; spec field 'bogus': "
        "unknown spec field; valid spec fields: entities, exclude_relations, generation_block, name, present, types, web"
    ]


def test_search_help_documents_the_limits(files):
    from fictionworld.web.web import MAX_PAGE as WEB_MAX_PAGE

    assert MAX_PAGE == WEB_MAX_PAGE
    text = " ".join(cli("search", "--help").output.replace("│", " ").split())  # wherever the box wraps it
    assert f"Results per page, 1 to {MAX_K}" in text and f"1 to {MAX_PAGE}" in text
    r = cli("search", files["world"], "glass", "--k", MAX_K + 1)
    clean_failure(r)
    assert "--k" in r.output


def test_an_empty_value_is_refused(files, tmp_path):
    r = cli("rollout", files["world"], "--tasks", files["tasks"], "--out", "")
    assert clean_failure(r) == ["error: --out: empty value; give a value or leave the option out"]
    r = cli("search", files["world"], "")
    assert clean_failure(r) == ['error: an argument is empty (""); give a value']


def test_an_unexpected_error_is_one_line_unless_debugging(files, monkeypatch):
    import fictionworld.web

    def broken(*a, **k):
        raise KeyError("page_rank")

    monkeypatch.setattr(fictionworld.web.Web, "search", broken)
    r = cli("search", files["world"], "glass")
    assert clean_failure(r, 1) == [
        "error: unexpected KeyError: 'page_rank' (set FICTIONWORLD_DEBUG=1 for the traceback)"
    ]
    monkeypatch.setenv("FICTIONWORLD_DEBUG", "1")
    assert isinstance(cli("search", files["world"], "glass").exception, KeyError)


# -- every command, every option, bad values ---------------------------------------------------------
# How each path is used; a path not listed is an input file or directory (a missing one is bad).


# -- commands that said success when they had failed (issue 74) --------------------------------------
def test_rollout_refuses_tasks_of_another_world_as_export_does(files, tmp_path, no_ray):
    """The same check as ``export``'s (:func:`~fictionworld.tasks.model.check_same_world`),
    before Ray starts or RUN is written: such a run would score 0 on every task and exit 0."""
    from fictionworld.tasks.model import read_tasks, write_tasks

    other = [t.model_copy(update={"world_hash": "f" * 64}) for t in read_tasks(files["tasks"])]
    write_tasks(other, tmp_path / "other.jsonl")
    lines = clean_failure(
        cli("rollout", files["world"], "--tasks", tmp_path / "other.jsonl", "--out", tmp_path / "run")
    )
    assert len(lines) == 1 and f"{len(other)} of {len(other)} tasks were made from another world" in lines[0], lines
    assert not (tmp_path / "run").exists()
    exported = clean_failure(cli("export", "trl", tmp_path / "other.jsonl", "--world", files["world"],
                                 "--out", tmp_path / "x"))  # fmt: skip
    assert exported[0].split(" than ")[0] == lines[0].split(" than ")[0]  # one check, one message


def test_rollout_with_the_openai_agent_needs_its_server(files, tmp_path, no_ray):
    r = cli("rollout", files["world"], "--tasks", files["tasks"], "--out", tmp_path / "run", "--agent", "openai")
    assert clean_failure(r) == [
        "error: --agent openai needs --agent-url (its OpenAI-compatible server, e.g. http://127.0.0.1:30000/v1)"
    ]
    assert not (tmp_path / "run").exists()


def test_demo_never_replaces_a_world_of_other_settings_without_force(files, tmp_path, no_ray):
    """``demo --entities 4000`` after a default demo replaced the world in silence, then failed
    naming ``--out`` (no option of demo's)."""
    from fictionworld.storage import read_manifest

    demo = tmp_path / "demo"
    shutil.copytree(files["world"], demo / "world")  # (seed 5, MIN_ENTITIES)
    before = read_manifest(demo / "world")["world_hash"]
    for args in (["--entities", MIN_ENTITIES + 50, "--seed", 5], ["--seed", 6, "--entities", MIN_ENTITIES]):
        lines = clean_failure(cli("demo", "--dir", demo, "--tasks", 1, *args))
        assert len(lines) == 1 and "holds a world of seed 5" in lines[0] and "--force" in lines[0], lines
        assert "--out" not in lines[0]
    (tmp_path / "junk" / "world").mkdir(parents=True)
    (tmp_path / "junk" / "world" / "notes.txt").write_text("mine")
    lines = clean_failure(cli("demo", "--dir", tmp_path / "junk", "--tasks", 1, "--entities", MIN_ENTITIES))
    assert "holds no demo world" in lines[0] and (tmp_path / "junk" / "world" / "notes.txt").exists()
    assert read_manifest(demo / "world")["world_hash"] == before and not (demo / "runs").exists()


def test_demo_names_its_own_options_for_a_run_it_cannot_use(files, tmp_path, no_ray):
    demo = tmp_path / "demo"
    shutil.copytree(files["world"], demo / "world")  # (seed 5, MIN_ENTITIES: the world this demo makes)
    (demo / "runs" / "oracle").mkdir(parents=True)
    (demo / "runs" / "oracle" / "run.json").write_text(json.dumps({"world_hash": "0" * 64, "agent": "oracle"}))
    lines = clean_failure(cli("demo", "--dir", demo, "--tasks", 1, "--seed", 5, "--entities", MIN_ENTITIES))
    assert len(lines) == 1 and "holds a run with world_hash=" in lines[0], lines
    assert "--force" in lines[0] and "--dir" in lines[0] and "--out" not in lines[0]
