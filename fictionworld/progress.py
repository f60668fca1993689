"""Progress that reads well on a terminal and in a log file.

On a terminal, rich's live bar. Elsewhere (stderr sent to a file, a pipe, a CI log) a live bar
draws nothing until it ends, so :class:`LineProgress` writes lines instead: one when a task
starts, when its stage (description) changes and when it ends, and in between at most one every
``every`` seconds (and, during a long step that changes nothing, one every ``HEARTBEAT * every``
seconds); each line is flushed at once and never wrapped. :func:`progress_bar` picks
one of the two for a console. Both take the same calls (``add_task``, ``update``, ``advance``,
``tasks``, ``start``/``stop``, use as a context manager), so a command writes its progress once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["LineProgress", "progress_bar", "EVERY_S"]

EVERY_S = 5.0  # a line at most this often within a stage, when stderr is no terminal
HEARTBEAT = 6  # and, when nothing changed, one every HEARTBEAT * EVERY_S seconds (a long step is alive)


@dataclass
class _Task:
    description: str
    total: float | None
    completed: float
    started: float
    said: float  # when its last line was written
    fields: dict = field(default_factory=dict)  # what else its columns show (e.g. a running score)
    said_text: str = ""


class LineProgress:
    """Progress as lines on ``console``'s file (``stage: done/total (12 s)``), for a console
    that is no terminal. ``clock`` is the time source (seconds; a test passes its own)."""

    def __init__(self, console, every: float = EVERY_S, clock: Callable[[], float] = time.monotonic):
        self.console, self.every, self.clock = console, every, clock
        self._tasks: list[_Task] = []

    # rich's Progress calls, as far as the commands use them
    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        pass

    def stop(self) -> None:
        """A last line for each task whose latest state was not written."""
        for task in self._tasks:
            if self.line(task) != task.said_text:
                self._say(task, force=True)

    @property
    def tasks(self) -> list[_Task]:
        return list(self._tasks)

    def add_task(self, description: str, total: float | None = 100.0, completed: float = 0, **fields) -> int:
        now = self.clock()
        self._tasks.append(_Task(description, total, completed, now, now, fields))
        self._say(self._tasks[-1], force=True)
        return len(self._tasks) - 1

    def update(self, task_id: int, *, description: str | None = None, completed: float | None = None,
               total: float | None = None, advance: float | None = None, **fields) -> None:  # fmt: skip
        task = self._tasks[task_id]
        task.fields.update(fields)
        new_stage = description is not None and description != task.description
        if description is not None:
            task.description = description
        if total is not None:
            task.total = total
        if completed is not None:
            task.completed = completed
        if advance is not None:
            task.completed += advance
        finished = task.total is not None and task.completed >= task.total
        self._say(task, force=new_stage or finished)

    def advance(self, task_id: int, advance: float = 1) -> None:
        self.update(task_id, advance=advance)

    def _say(self, task: _Task, force: bool) -> None:
        now = self.clock()
        text = self.line(task)
        if text == task.said_text:  # nothing new: only now and then, to show the work goes on
            if now - task.said < HEARTBEAT * self.every:
                return
        elif not force and now - task.said < self.every:
            return
        elapsed = now - task.started
        task.said, task.said_text = now, text
        fh = self.console.file
        fh.write(f"{text} ({elapsed:.0f} s)\n")
        fh.flush()

    @staticmethod
    def line(task: _Task) -> str:
        """What a line says of ``task``: its stage, done/total when it counts, its other fields."""
        text = task.description if task.total is None else f"{task.description}: {task.completed:g}/{task.total:g}"
        return "  ".join([text, *(str(v) for v in task.fields.values() if v not in (None, ""))])


def progress_bar(console, *columns, transient: bool = False, every: float = EVERY_S):
    """A rich ``Progress`` with ``columns`` on ``console`` when it is a terminal that redraws; else
    :class:`LineProgress` lines, or, for a ``transient`` bar (one that leaves nothing behind),
    nothing at all: a command's error stays the one line there."""
    from rich.progress import Progress

    if console.is_interactive or console.is_jupyter:  # (a notebook draws rich's bar as a widget)
        return Progress(*columns, console=console, transient=transient)
    if transient:
        return Progress(*columns, console=console, transient=True, disable=True)
    return LineProgress(console, every=every)
