"""Ctrl-C during a build stops it at once, says so in one line with the command that resumes it,
and leaves no worker behind; a build's progress reaches a log file as it goes.

A terminal sends SIGINT to the whole process group: the driver and every worker. The workers
leave it to the driver (each would raise KeyboardInterrupt and print a traceback), and the driver
kills them instead of waiting for their tasks."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from build_helpers import SEED, small_spec

from fictionworld.executors import LocalTasks, forked_pool

STOP_S = 20  # a build must be gone this long after Ctrl-C (a bound on a hang, not a speed)


def _interrupt_myself() -> str:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.2)
    return "still here"


def test_pool_workers_leave_ctrl_c_to_the_driver():
    pool = forked_pool(1)
    try:
        result = pool.submit(_interrupt_myself).result()
    except KeyboardInterrupt:  # (the worker took it: caught here, or it would stop the test run)
        result = "interrupted"
    finally:
        pool.shutdown()
    assert result == "still here"


def _say_pid_and_sleep(path: str, seconds: float) -> None:
    Path(path).write_text(str(os.getpid()))
    time.sleep(seconds)


def test_a_task_alone_is_killed_when_the_driver_is_interrupted(tmp_path):
    """The graph stage runs alone in a process of its own: Ctrl-C waited for it to end (~50 s at
    200k entities). ``poll`` raising KeyboardInterrupt is Ctrl-C arriving in the driver."""
    pid_file = tmp_path / "pid"

    def poll() -> None:
        if pid_file.exists():
            raise KeyboardInterrupt

    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        LocalTasks(2).alone(_say_pid_and_sleep, str(pid_file), 60, poll=poll)
    assert time.monotonic() - t0 < 30  # (not the task's own 60 s)
    pid = int(pid_file.read_text())
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def _generate(spec: Path, out: Path, entities: int) -> list[str]:
    return [sys.executable, "-m", "fictionworld.cli", "generate", "--spec", str(spec), "--entities", str(entities),
            "--seed", str(SEED), "--out", str(out), "--workers", "2", "--shards", "24"]  # fmt: skip


def _group(pgid: int) -> list[int]:
    """The processes still in process group ``pgid``."""
    alive = []
    for p in psutil.process_iter():
        try:
            if os.getpgid(p.pid) == pgid and p.status() != psutil.STATUS_ZOMBIE:
                alive.append(p.pid)
        except (ProcessLookupError, psutil.Error):
            pass
    return alive


@pytest.mark.cli
@pytest.mark.big
@pytest.mark.parametrize("stage", ["graph: ", "rendering and indexing"])
def test_ctrl_c_stops_a_build_at_once_and_says_how_to_resume_it(tmp_path, stage):
    spec = tmp_path / "spec.yaml"
    spec.write_text(small_spec().to_yaml())
    out = tmp_path / "w"
    # in a process group of its own, as a terminal starts a command
    proc = subprocess.Popen(_generate(spec, out, 3000), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # fmt: skip
    seen = []
    for line in proc.stderr:  # the progress lines, as they come
        seen.append(line)
        if line.startswith(stage):
            break
    else:
        pytest.fail(f"no {stage!r} line: {''.join(seen)}")
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the whole group
    time.sleep(0.3)
    try:
        os.killpg(proc.pid, signal.SIGINT)  # and again, impatient
    except ProcessLookupError:
        pass
    try:
        _, rest = proc.communicate(timeout=STOP_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail(f"still running {STOP_S} s after Ctrl-C: {''.join(seen)}")
    stderr = "".join(seen) + rest
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "stopped" in errors[0] and str(out / ".building") in errors[0], stderr
    assert not _group(proc.pid)  # no worker left rendering
    resume = shlex.split(errors[0].split("resume with: ", 1)[1])
    assert resume[:2] == ["fictionworld", "generate"] and "--force" not in resume
    again = subprocess.run([sys.executable, "-m", "fictionworld.cli", *resume[1:]], capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert (out / "manifest.json").exists() and not (out / ".building").exists()


@pytest.mark.cli
@pytest.mark.big
def test_a_build_into_a_log_shows_its_progress_as_it_goes(tmp_path):
    """Into a file, rich's bar said nothing until the end; the graph stage was a bare 0/1; the
    last line was cut at 80 columns, the path and the hash with it."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(small_spec().to_yaml())
    out = tmp_path / ("a-long-directory-name-" * 6)
    proc = subprocess.Popen(_generate(spec, out, 1000), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=os.environ | {"COLUMNS": "80"})  # fmt: skip
    first = proc.stderr.readline()
    running = proc.poll() is None
    stdout, rest = proc.communicate(timeout=600)
    assert proc.returncode == 0, rest
    assert first and running  # a line came while the build ran
    lines = [first.rstrip("\n"), *rest.splitlines()]
    graph = [line for line in lines if line.startswith("graph: ")]
    # (how many of the graph's steps get a line depends on the machine's speed: the driver polls)
    assert graph and all(line.split(": ")[-1].split(" ")[0].count("/") == 1 for line in graph), lines
    totals = {line.rsplit(": ", 1)[1].split(" ")[0].split("/")[1] for line in graph}
    assert totals != {"1"}, graph  # real steps, not a bare 0/1
    assert any(line.startswith("rendering and indexing: ") for line in lines), lines
    said = stdout.strip().splitlines()
    assert len(said) == 1 and str(out) in said[0] and "hash" in said[0], stdout
