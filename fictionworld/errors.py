"""Errors in words: a pydantic ``ValidationError`` as one plain line per problem (the field, what
is wrong with it and the value given), without pydantic's URLs or Python's exception names.

>>> from fictionworld.knobs import Knobs
>>> try:
...     Knobs(list_page_size=0)
... except ValueError as e:
...     problem_lines(e, what="knob")
["knob 'list_page_size': must be >= 1, not 0"]
"""

from __future__ import annotations

import json
from collections.abc import Callable

from pydantic import BaseModel, ValidationError

__all__ = ["FictionWorldError", "problem_lines", "field_names", "in_words", "is_native_panic"]


class FictionWorldError(Exception):
    """The base of every error fictionworld raises on purpose. ``exit_code`` is what the command
    line exits with when one ends a command: 2 when the input is wrong (a file, an argument, a
    missing extra), 1 when the work itself failed (a build, a run, a server)."""

    exit_code = 2


_BOUNDS = {
    "greater_than_equal": (">=", "ge"),
    "greater_than": (">", "gt"),
    "less_than_equal": ("<=", "le"),
    "less_than": ("<", "lt"),
}
_KINDS = {  # pydantic error type -> what the value must be
    "int_parsing": "a whole number",
    "int_type": "a whole number",
    "int_from_float": "a whole number",
    "float_parsing": "a number",
    "float_type": "a number",
    "finite_number": "a finite number",
    "bool_parsing": "true or false",
    "bool_type": "true or false",
    "string_type": "text",
    "dict_type": "an object (name: value pairs)",
    "model_type": "an object (name: value pairs)",
    "model_attributes_type": "an object (name: value pairs)",
    "list_type": "a list",
    "tuple_type": "a list",
    "date_parsing": "a date (YYYY-MM-DD)",
    "date_from_datetime_parsing": "a date (YYYY-MM-DD)",
    "date_type": "a date (YYYY-MM-DD)",
    "url_parsing": "a URL",
}


def _loc(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _value(value) -> str:
    if isinstance(value, str | int | float | bool) or value is None:
        text = repr(value)
        return text if len(text) <= 60 else text[:57] + "…"
    return ""


def field_names(model: type[BaseModel] | None, loc: tuple = ()) -> list[str] | None:
    """The field names of ``model`` at ``loc`` (nested models followed), or None if unknown."""
    for part in loc:
        field = model.model_fields.get(part) if model is not None and isinstance(part, str) else None
        annotation = field.annotation if field is not None else None
        model = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
    return sorted(model.model_fields) if model is not None else None


def _message(error: dict, what: str, model: type[BaseModel] | None) -> str:
    kind, ctx, value = error["type"], error.get("ctx") or {}, error.get("input")
    given = _value(value)
    tail = f", not {given}" if given else ""
    if kind in _BOUNDS:
        sign, key = _BOUNDS[kind]
        return f"must be {sign} {ctx.get(key)}{tail}"
    if kind in _KINDS:
        return f"must be {_KINDS[kind]}{tail}"
    if kind in ("literal_error", "enum"):
        return f"must be {ctx.get('expected')}{tail}"
    if kind == "extra_forbidden":
        valid = field_names(model, tuple(error["loc"])[:-1])
        return f"unknown {what}" + (f"; valid {what}s: {', '.join(valid)}" if valid else "")
    if kind in ("value_error", "assertion_error") and "error" in ctx:
        return str(ctx["error"])
    if kind == "json_invalid":
        return f"not valid JSON ({ctx.get('error', error['msg'])})"
    return error["msg"].replace("Input should be", "must be") + tail


def problem_lines(
    exc: ValidationError,
    *,
    what: str = "field",
    model: type[BaseModel] | None = None,
    label: Callable[[str], str] | None = None,
) -> list[str]:
    """One line per problem in ``exc``: ``<what> '<field>': <what is wrong>, not <value>``;
    ``missing <what> '<field>'``; checks across fields as their message alone. ``what`` names
    the kind of field (``knob``, ``setting``), ``label`` renders a field path instead (e.g. as a
    command-line option), and ``model`` lets an unknown field list the valid ones."""
    name = label or (lambda path: f"{what} {path!r}")
    out = []
    for error in exc.errors(include_url=False):
        loc = tuple(error["loc"])
        if error["type"] == "missing":
            out.append(f"missing {name(_loc(loc))}")
        elif loc:
            out.append(f"{name(_loc(loc))}: {_message(error, what, model)}")
        else:
            out.append(_message(error, what, model))
    return out or [str(exc).splitlines()[0]]


def in_words(exc: Exception) -> str:
    """An exception as one line a user can act on: a pydantic error one clause per problem, a
    JSON error where it is, a missing key as a missing field, anything else its first line."""
    if isinstance(exc, ValidationError):
        return "; ".join(problem_lines(exc))
    if isinstance(exc, json.JSONDecodeError):
        return f"not JSON ({exc.msg} at column {exc.colno})"
    if isinstance(exc, KeyError) and exc.args:
        return f"missing field {exc.args[0]!r}"
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def is_native_panic(exc: BaseException) -> bool:
    """Whether ``exc`` is a Rust extension's panic (pyo3's ``PanicException``, which tantivy
    raises on a damaged index). It derives from ``BaseException``, so ``except Exception``
    lets it through, and its class cannot be imported: it is known by its name."""
    return type(exc).__name__ == "PanicException" and not isinstance(exc, Exception)
