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


@pytest.fixture
def no_ray_left():
    """The Python API example starts a local Ray sized for it; later tests start their own."""
    yield
    import ray

    ray.shutdown()


def test_python_examples_are_doctests(tmp_path, monkeypatch, no_ray_left):
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


def test_every_skipped_block_says_why():
    for line, _, skip in blocks("bash"):
        assert skip is None or len(skip) > 10, f"README line {line}: say why the block is skipped"


@pytest.mark.slow
def test_shell_commands_run_as_written(tmp_path):
    """Each command in order, in one fresh directory, with this interpreter's fictionworld."""
    cmds = commands()
    assert len(cmds) >= 8
    env = dict(os.environ, PATH=f"{pathlib.Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    for line, cmd in cmds:
        assert shlex.split(cmd)[0] == "fictionworld", f"README line {line}: unexpected command {cmd!r}"
        r = subprocess.run(["bash", "-c", cmd], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, f"README line {line}: {cmd}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
