"""Walks every command of the app (found from the app itself, so a new command is walked when
it is added, a group's commands too) with bad values for every option: each must fail cleanly,
with an ``error:`` line and no traceback, and write nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from fictionworld.cli import app

pytestmark = pytest.mark.cli

APP = app


def _leaves(group, prefix: str = "") -> dict:
    """Every command of the app by the words that call it ("export verl" for a group's command)."""
    out = {}
    for name, cmd in group.commands.items():
        words = f"{prefix}{name}"
        out |= _leaves(cmd, words + " ") if hasattr(cmd, "commands") else {words: cmd}
    return out


COMMANDS = _leaves(typer.main.get_command(APP))


COMMANDS = _leaves(typer.main.get_command(APP))


OUTPUT_FILES = {("tasks", "out_path"), ("score", "out_path"), ("export episodes", "parquet")}
OUTPUT_DIRS = {("generate", "out_dir"), ("tasks", "widesearch"), ("rollout", "run_dir"), ("demo", "directory"),
               ("train-demo", "directory"), ("export verl", "out_dir"), ("export trl", "out_dir"),
               ("export skyrl", "out_dir"), ("export lwm", "out_dir"), ("rollout", "official_responses"),
               ("train-trl", "directory")}  # fmt: skip
HUGE = "1000000000000"
# Values that look bad but are fine for that option (they would start real work: not run).
ACCEPTED = {
    "seed": {"0", HUGE},
    "workers": {HUGE},
    "limit": {HUGE},
    "timeout": {"1e12"},
    "lr": {"1e12"},
    "temperature": {"0", "1e12"},
    "top_k": {HUGE},
    "max_turns": {HUGE},
    "max_context_chars": {HUGE},
    "rows_max": {HUGE},
    "searches": {"0", HUGE},
    "query": {"nosuch"},
    "model": {"nosuch"},
    "judge_model": {"nosuch"},
    "world_model_name": {"nosuch"},
    "address": {"nosuch"},
}
ACCEPTED_IN = {
    ("fidelity", "n"): {HUGE},
    ("validate", "limit"): {HUGE},
    ("tasks", "hops"): {"0"},
    ("serve", "port"): {"0"},  # any free port: a server would start (tests/test_serve.py starts it so)
    ("mcp", "port"): {"0"},
    ("export verl", "model"): {"nosuch"},  # any model path or hub id: the launch script names it
    ("export skyrl", "logger"): {"nosuch"},  # one logger name: SkyRL checks it where it trains
    ("export verl", "val_fraction"): {"0"},  # no validation rows: every task trains
    ("export trl", "val_fraction"): {"0"},
    ("export skyrl", "val_fraction"): {"0"},
}  # fidelity: at most the pages there are


def _annotation(param) -> object:
    td = getattr(param, "type_descriptor", None)
    if td is not None:
        return td.annotation
    return {"INTEGER": int, "FLOAT": float, "BOOLEAN": bool, "PATH": Path}.get(  # older typer (click types)
        getattr(getattr(param, "type", None), "name", "").upper(), str
    )


def _kind(command: str, param) -> str:
    ann = _annotation(param)
    args = getattr(ann, "__args__", ())
    base = (
        next((a for a in args if a is not type(None)), ann) if args and ann.__class__.__name__ == "UnionType" else ann
    )
    if getattr(param, "is_flag", False) or base is bool:
        return "flag"
    if getattr(param, "multiple", False) or getattr(base, "__origin__", None) is list:
        return "list"
    if base is Path:
        key = (command, param.name)
        return "out_file" if key in OUTPUT_FILES else "out_dir" if key in OUTPUT_DIRS else "in_path"
    return {int: "int", float: "float"}.get(base, "str")


def _bad_values(kind: str, files: dict) -> list[str]:
    d = files["dir"]
    return {
        "in_path": [d / "missing", d / "garbage", d / "garbage.json", d / "empty_dir", d / "bad_world", ""],
        "out_file": [d / "empty_dir", d / "garbage" / "below_a_file", ""],
        "out_dir": [d / "garbage", d / "garbage" / "below_a_file", ""],
        "int": ["abc", "1.5", "-5", "0", HUGE, ""],
        "float": ["abc", "-1", "0", "nan", "1e12", ""],
        "str": ["nosuch", ""],
        "list": ["foo=1", "conflict_rate=abc", "conflict_rate", ""],
        "flag": [],
    }[kind]


def _valid(command: str, param, files: dict, tmp: Path) -> str:
    """A good value for a required parameter."""
    name = param.name
    if (command, name) in OUTPUT_FILES:
        return str(tmp / "out.file")
    if (command, name) in OUTPUT_DIRS:
        return str(tmp / "out_dir")
    by_name = {"query": "glassworks", "url": files["url"], "tasks_path": files["tasks"],
               "responses": files["responses"], "run_dir": files["run"]}  # fmt: skip
    return str(by_name.get(name, files["world"] if _kind(command, param) == "in_path" else "x"))


def _invocations(command: str, files: dict, tmp: Path):
    """(args, the parameter, the bad value) for every parameter and bad value of ``command``."""
    params = COMMANDS[command].params
    for param in params:
        kind = _kind(command, param)
        accepted = ACCEPTED_IN.get((command, param.name), ACCEPTED.get(param.name, set()))
        for value in _bad_values(kind, files):
            if str(value) in accepted:
                continue
            args = []
            for p in params:
                if p is param:
                    args += ([] if p.param_type_name == "argument" else [p.opts[0]]) + [str(value)]
                elif p.required:
                    args += ([] if p.param_type_name == "argument" else [p.opts[0]]) + [_valid(command, p, files, tmp)]
            yield args, param.name, value


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_fails_cleanly_on_bad_values(files, tmp_path, monkeypatch, no_ray, command):
    assert COMMANDS[command].params, command
    monkeypatch.chdir(tmp_path)  # default outputs (tasks.jsonl, scores.jsonl, demo/) would land here
    problems = []
    for args, name, value in _invocations(command, files, tmp_path):
        r = CliRunner().invoke(APP, [*command.split(), *args])
        said = r.output.lower()
        if r.exception is not None and not isinstance(r.exception, SystemExit):
            problems.append(f"{name}={value!r}: raised {r.exception!r}")
        elif "traceback" in said or "errors.pydantic.dev" in said:
            problems.append(f"{name}={value!r}: {r.output[-300:]}")
        elif r.exit_code == 0 or not ("error" in said or "usage" in said):
            problems.append(f"{name}={value!r}: exit {r.exit_code}, said {r.output[-300:]!r}")
    assert not problems, "\n".join(problems)
    assert not any(tmp_path.iterdir()), "bad input wrote files"


def test_the_walk_covers_every_command():
    expected = {"generate", "validate", "stats", "index", "search", "open", "spec", "tasks", "score", "rollout",
                "export episodes", "export verl", "export trl", "export skyrl", "export lwm", "demo", "train-demo", "train-trl", "fidelity",
                "render-cache", "serve", "mcp"}  # fmt: skip
    assert expected <= set(COMMANDS)
