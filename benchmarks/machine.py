"""What machine a benchmark ran on, and how fast it ran plain Python then.

    python benchmarks/machine.py          # one line: the CPU, and the calibration's time

Figures taken on different days are not comparable on their own. The same code (a9631d6's), on
the same world, read a 1M ``world.search`` p50 of 0.97-0.99 ms on 2026-11-27 and 1.83-1.87 ms
on 2026-11-28, even in that day's fastest spells; and on 2026-11-28 this machine's speed swung
1.6-1.8x within minutes (`benchmarks/BIG_WORLDS.md`, "Measuring on a machine whose speed
swings"). The benchmarks print this line beside their figures, so that a reader can tell a
slower machine from slower code.

The calibration is a fixed piece of work of the kinds a search spends its time on, none of it
this project's code: Python bytecode over dicts, lists and strings; a regular expression with
look-behinds over prose (like the snippets' sentence breaks); NumPy calls on small arrays (like
the linker's). Its time is the best of several passes, in milliseconds (lower is faster). It
needs no world and takes a quarter of a second. It is CPU work only: a change in memory or disk
speed would not show in it.
"""

from __future__ import annotations

import gc
import os
import platform
import re
import time

import numpy as np

_WORDS = "the of a founded album released by in city company river north hall press".split()
# A deterministic text: words drawn by a fixed linear congruence, a sentence every 9 words.
_TEXT = " ".join(_WORDS[(i * 7919 + 13) % len(_WORDS)] + ("." if i % 9 == 8 else "") for i in range(6_000))
_BREAK = re.compile(r"[.!?\n](?:(?<=[.!?])(?<!\b[A-Z]\.)(\s\s*)|(?<=\n)\n*)")


def _python() -> int:
    counts: dict[str, int] = {}
    for w in _TEXT.split():
        counts[w] = counts.get(w, 0) + 1
    pairs = sorted((v, k) for k, v in counts.items())
    s = 0
    for i in range(150_000):
        s += (i * 31) % 7 + len(pairs)
    return s


def _regex() -> int:
    n = 0
    for _ in range(24):
        n += sum(1 for _ in _BREAK.finditer(_TEXT))
    return n


def _numpy() -> int:
    a = np.arange(64, dtype=np.int64)
    s = 0
    for i in range(2_000):
        b = a[(a + i) % 5 == 0]
        s += int(np.searchsorted(a, i % 64)) + len(b)
    return s


def calibrate(repeat: int = 5) -> float:
    """Milliseconds for one pass of the fixed work, the best of ``repeat`` passes."""
    best = float("inf")
    gc.disable()  # a collection would land in whichever part ran when it came
    try:
        for _ in range(repeat):
            t = time.perf_counter()
            _python(), _regex(), _numpy()
            best = min(best, time.perf_counter() - t)
    finally:
        gc.enable()
    return best * 1e3


def cpu() -> str:
    """The CPU's model name and clock as Linux reports them for the first CPU (else the
    platform's word for it), and the CPUs this process may run on."""
    found = {}
    try:
        with open("/proc/cpuinfo") as f:
            for row in f:
                key, _, value = row.partition(":")
                found.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    model = found.get("model name") or platform.processor() or platform.machine()
    mhz = f", {float(found['cpu MHz']):.0f} MHz" if "cpu MHz" in found else ""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{model}{mhz}, {cpus} CPUs"


def line() -> str:
    """The machine line the benchmarks print first."""
    return f"machine: {cpu()}; calibration {calibrate():.1f} ms (benchmarks/machine.py; lower is faster)"


if __name__ == "__main__":
    print(line())
