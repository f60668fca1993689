"""What the commands write where a person or a log reads it: progress as lines when stderr is no
terminal, lines never cut at 80 columns in a file, tables saved beside what they describe, and
help that names every agent."""

from __future__ import annotations

import io

from rich.console import Console
from typer.testing import CliRunner

from fictionworld.cli import app
from fictionworld.progress import LineProgress, progress_bar


def cli(*args, **env):
    return CliRunner().invoke(app, [str(a) for a in args], env=env or None)


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_progress_in_a_file_is_lines_a_stage_at_a_time_and_every_few_seconds():
    file, clock = io.StringIO(), Clock()
    progress = LineProgress(Console(file=file), every=5, clock=clock)
    with progress:
        task = progress.add_task("generating", total=1)
        progress.update(task, description="graph: generating: person", completed=0, total=9)
        for k in range(1, 4):  # within a stage, a second apart: no line
            clock.now += 1
            progress.update(task, description="graph: generating: person", completed=k, total=9)
        clock.now += 3  # five seconds since the stage's line: one
        progress.update(task, completed=5)
        for _ in range(2):  # nothing new for 29 s, then for 30 s: a line that says it goes on
            clock.now += 29 if _ == 0 else 1
            progress.update(task, completed=5)
        clock.now += 1
        progress.update(task, description="rendering and indexing", completed=0, total=4)
        progress.advance(task, 4)  # done: said at once
    lines = file.getvalue().splitlines()
    assert lines == [
        "generating: 0/1 (0 s)",
        "graph: generating: person: 0/9 (0 s)",
        "graph: generating: person: 5/9 (6 s)",
        "graph: generating: person: 5/9 (36 s)",
        "rendering and indexing: 0/4 (37 s)",
        "rendering and indexing: 4/4 (37 s)",
    ]


def test_a_bar_is_lines_off_a_terminal_and_a_transient_one_is_nothing():
    file = io.StringIO()
    assert isinstance(progress_bar(Console(file=file)), LineProgress)
    with progress_bar(Console(file=file), transient=True) as quiet:
        quiet.update(quiet.add_task("reading", total=3), completed=3)
    assert file.getvalue() == ""
    assert not isinstance(progress_bar(Console(file=file, force_terminal=True, force_interactive=True)), LineProgress)


def test_a_long_path_stays_on_its_line_in_a_file(files, tmp_path):
    """rich wraps at 80 columns (or the terminal's width) even into a file: a path and a hash
    were cut in two."""
    long = tmp_path / ("a-world-with-a-long-name-" * 5)
    long.symlink_to(files["world"].resolve(), target_is_directory=True)
    r = cli("stats", long, COLUMNS="80")
    assert r.exit_code == 0, r.output
    head = r.output.splitlines()[0]
    assert str(long) in head and "hash" in head and "entities" in head, r.output


def test_rollout_help_names_every_agent():
    import fictionworld.rollouts.agents  # noqa: F401  (registers them)
    from fictionworld.rollouts.agents.base import AGENTS

    text = " ".join(cli("rollout", "--help").output.split())
    assert AGENTS and all(name in text for name in AGENTS), text


def test_tasks_stats_saves_its_table_beside_the_tasks(saved_world, tmp_path):
    out = tmp_path / "set.jsonl"
    r = cli("tasks", saved_world, "--n", 2, "--kind", "wide", "--preset", "tiny", "--out", out, "--stats")
    assert r.exit_code == 0, r.output
    saved = (tmp_path / "set.stats.txt").read_text()
    assert "explorer row recall" in saved and "task set vs WideSearch" in saved
    assert str(tmp_path / "set.stats.txt") in r.output
