"""What machine a benchmark ran on, and how fast it ran plain Python that day.

    python benchmarks/machine.py          # one line: the CPU, and the calibration's time

Figures taken on different days are not comparable on their own: the same code, on the same
world, read a 1M ``world.search`` p50 of 0.97-0.99 ms on 2026-11-27 and 2.01-2.58 ms on
2026-11-28 (the code of a9631d6 both days; README, "Where search stands"). The benchmarks print
this line beside their figures, so that a reader can tell a slower machine from slower code.

The calibration is a fixed piece of work of the kinds a search spends its time on, none of it
this project's code: Python bytecode over dicts, lists and strings; a regular expression with
look-behinds over prose (like the snippets' sentence breaks); NumPy calls on small arrays (like
the linker's). Its time is the best of several runs, in milliseconds (lower is faster). It needs
no world and takes about a second.
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
    """The CPU's model name and clock as Linux reports them (else the platform's word for it),
    and the CPUs this process may run on."""
    model, mhz = platform.processor() or platform.machine(), ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and not mhz:
                    model = value.strip()
                elif key.strip() == "cpu MHz" and not mhz:
                    mhz = f", {float(value):.0f} MHz"
    except OSError:
        pass
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{model}{mhz}, {cpus} CPUs"


def describe() -> dict:
    """The machine line's parts, for a benchmark's JSON."""
    return {"cpu": cpu(), "calibration_ms": round(calibrate(), 1)}


def line(d: dict | None = None) -> str:
    d = describe() if d is None else d
    return f"machine: {d['cpu']}; calibration {d['calibration_ms']:.1f} ms (benchmarks/machine.py; lower is faster)"


if __name__ == "__main__":
    print(line())
