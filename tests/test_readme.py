"""README.md runs as written: its Markdown renders as meant (no code fence left open), its Python
examples pass as doctests, and every shell command in a ``bash`` block runs (in a fresh
directory, in order), except a block preceded by ``<!-- readme:skip REASON -->`` (installs, and
commands that need a GPU server), which must say why."""

from __future__ import annotations

import doctest
import os
import pathlib
import re
import shlex
import subprocess
import sys

import pytest
from markdown_it import MarkdownIt

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"
SKIP = re.compile(r"<!-- readme:skip (.+?) -->\s*$")


def blocks(lang: str) -> list[tuple[int, str, str | None]]:
    """(line, code, skip reason) of each fenced block of ``lang``."""
    lines = README.read_text(encoding="utf-8").splitlines()
    out = []
    for tok in MarkdownIt("commonmark").parse("\n".join(lines)):
        if tok.type == "fence" and tok.info.strip() == lang:
            first = tok.map[0]
            above = next((ln for ln in reversed(lines[:first]) if ln.strip()), "")
            m = SKIP.search(above)
            reason = m.group(1) if m else ("the CI test command (.ci/run runs it)" if "ci:test" in above else None)
            out.append((first + 1, tok.content, reason))
    return out


def test_fences_are_balanced_and_headings_are_headings():
    """An unclosed fence turns the rest of the README into code (its headings vanish)."""
    text = README.read_text(encoding="utf-8")
    tokens = MarkdownIt("commonmark").parse(text)
    rendered = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    in_fence, written = False, []
    for line in text.splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
        elif not in_fence and re.match(r"#{1,6} ", line):
            written.append(line.lstrip("#").strip())
    assert not in_fence, "a code fence is never closed"
    assert rendered == written
    for t in tokens:
        if t.type == "fence":
            assert t.info.strip() in {"bash", "python", "text"}, f"README line {t.map[0] + 1}: say the fence's language"


def test_python_examples_are_doctests(tmp_path, monkeypatch, ray_cluster):
    """(``fw.rollout`` in them runs on the run's Ray cluster, as it would on one a user started.)"""
    monkeypatch.chdir(tmp_path)
    examples = [(line, code) for line, code, _ in blocks("python")]
    assert examples, "the README has no Python examples"
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    globs: dict = {}
    failures = []
    for line, code in examples:
        assert ">>> " in code, f"README line {line}: Python examples are doctests (>>> prompts)"
        test = parser.get_doctest(code, globs, f"README.md:{line}", str(README), line)
        result = runner.run(test, out=failures.append)
        globs = test.globs
        assert result.failed == 0, "".join(failures)


def commands() -> list[tuple[int, str]]:
    out = []
    for line, code, skip in blocks("bash"):
        if skip:
            continue
        text = re.sub(r"\\\n\s*", " ", code)  # continuation lines
        for i, cmd in enumerate(text.splitlines()):
            cmd = cmd.split(" #", 1)[0].strip() if not cmd.lstrip().startswith("#") else ""
            if cmd:
                out.append((line + i, cmd))
    return out


# A commit hash: 7 to 40 hex digits with a letter and a digit among them, standing alone.
COMMIT = re.compile(r"(?<![\w/.#-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w/-])")
MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?"
DATE = re.compile(rf"\b(?:(?:19|20)\d\d-[01]\d-[0-3]\d|[0-3]?\d {MONTH},? (?:19|20)\d\d|{MONTH} [0-3]?\d,? (?:19|20)\d\d"
                  rf"|{MONTH} (?:19|20)\d\d)\b")  # fmt: skip
# A measured figure: a number with a unit of time, speed, size or a ratio.
FIGURE = re.compile(r"\d[\d,.]*\s?(?:ms|s|sec|min|h|%|×|x|GiB|MiB|GB|MB|KB|/s)(?![A-Za-z])")


def dated_measurements(text: str) -> list[str]:
    """Lines of ``text`` that carry a calendar date and a measured figure."""
    return [line for line in text.splitlines() if DATE.search(line) and FIGURE.search(line)]


def test_the_readme_holds_no_commit_hash_and_no_dated_measurement():
    """README.md is for a user: figures live in benchmarks/results/ and the page made from them
    (docs/performance.md), the history in git."""
    text = README.read_text(encoding="utf-8")
    assert not COMMIT.findall(text), f"commit hashes in README.md: {COMMIT.findall(text)[:5]}"
    assert not dated_measurements(text), f"dated measurements in README.md: {dated_measurements(text)[:3]}"


@pytest.mark.parametrize(
    "line, commit, dated",
    [
        ("measured at 10dee6e: 27 s", True, False),
        ("the 10M build at 53e7d99 (31.6 min)", True, False),
        ("1M p50 1.78 ms (884b276, 2026-12-07)", True, True),
        ("The suite takes 15.5 min on 2026-12-02.", False, True),
        ("On Dec 7, 2026 it took 3.1 s", False, True),
        ("search p50 0.37 ms in November 2026", False, True),
        ("a date cell such as 1987-03-14 scores as a date", False, False),
        ("fictionworld generate --seed 7 --entities 1000000", False, False),
        ("see https://example.org/ab12cd34ef/page and #a1b2c3d", False, False),
        ("the world hash is a hex digest; deadbeefcafe has no digit", False, False),
    ],
)
def test_the_readme_check_finds_hashes_and_dated_measurements(line, commit, dated):
    assert bool(COMMIT.findall(line)) == commit
    assert bool(dated_measurements(line)) == dated


def test_every_skipped_block_says_why():
    for line, _, skip in blocks("bash"):
        assert skip is None or len(skip) > 10, f"README line {line}: say why the block is skipped"


@pytest.mark.cli
@pytest.mark.ray  # its rollouts start Ray
def test_shell_commands_run_as_written(tmp_path):
    """Each command in order, in one fresh directory, with this interpreter's fictionworld."""
    cmds = commands()
    assert len(cmds) >= 8
    env = dict(os.environ, PATH=f"{pathlib.Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    for line, cmd in cmds:
        assert shlex.split(cmd)[0] == "fictionworld", f"README line {line}: unexpected command {cmd!r}"
        r = subprocess.run(["bash", "-c", cmd], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, f"README line {line}: {cmd}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
