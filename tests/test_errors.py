"""One error vocabulary (issue 75): every exception class fictionworld defines derives from
``FictionWorldError`` and carries the exit code the command line ends with (2: the input is
wrong, 1: the work failed), read from the class, never guessed from the module it came from."""

from __future__ import annotations

import ast
import importlib
import pathlib

import pytest

from fictionworld.errors import FictionWorldError

ROOT = pathlib.Path(__file__).resolve().parent.parent / "fictionworld"


def defined_exceptions() -> list[tuple[str, str]]:
    """(module, class) of every class in the package whose bases name an exception type."""
    import builtins

    out = []
    for f in sorted(ROOT.rglob("*.py")):
        module = ".".join(f.relative_to(ROOT.parent).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.parse(f.read_text(encoding="utf-8")).body:
            if not isinstance(node, ast.ClassDef):
                continue
            names = {b.id for b in node.bases if isinstance(b, ast.Name)}
            if any(isinstance(getattr(builtins, n, None), type) and issubclass(getattr(builtins, n), BaseException)
                   for n in names) or "FictionWorldError" in names:  # fmt: skip
                out.append((module, node.name))
    return out


def test_every_exception_class_is_a_fictionworld_error_with_its_exit_code():
    found = defined_exceptions()
    assert len(found) >= 19, found
    for module, name in found:
        try:
            cls = getattr(importlib.import_module(module), name)
        except ModuleNotFoundError as e:  # (an adapter whose trainer package is not installed)
            pytest.skip(f"{module}: {e}")
        assert issubclass(cls, FictionWorldError), f"{module}.{name} is not a FictionWorldError"
        assert cls.exit_code == (1 if issubclass(cls, RuntimeError) else cls.exit_code) and cls.exit_code in (1, 2)


def test_the_command_line_exits_with_the_errors_code():
    from fictionworld.cli.common import explain_error as error_lines
    from fictionworld.tasks.generate import TaskGenerationError
    from fictionworld.tasks.model import TaskError

    class Odd(FictionWorldError):
        exit_code = 1

    assert error_lines(TaskError("tasks.jsonl line 3: not JSON")) == (["tasks.jsonl line 3: not JSON"], 2)
    assert error_lines(TaskGenerationError("found only 0 of 8 wide tasks"))[1] == 1
    assert error_lines(Odd("a failed run"))[1] == 1
    assert error_lines(ValueError("x"))[0][0].startswith("unexpected ValueError")  # not ours: a bug, said so
