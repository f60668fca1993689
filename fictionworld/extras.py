"""Optional parts and the extras that install them: ``pip install fictionworld`` brings what
generate → web → tasks → env → rollout → strict scoring need; serving, the compat scorer and
plots come with ``[serve]``, ``[compat]`` and ``[plots]`` (``[all]``: everything). A part whose
packages are missing says which extra to install, in one line, before any work.

>>> require("plots", "a plot")  # (installed here)
"""

from __future__ import annotations

import importlib.util

from fictionworld.errors import FictionWorldError

__all__ = ["EXTRAS", "MissingExtra", "missing", "require"]

# extra -> the top-level modules it installs that the package imports
EXTRAS: dict[str, tuple[str, ...]] = {
    "serve": ("fastapi", "uvicorn", "mcp"),
    "compat": ("pandas", "dateparser"),
    "plots": ("matplotlib",),
}


class MissingExtra(FictionWorldError, ImportError):
    """An optional part was asked for without its extra installed (the message names the extra)."""


def missing(extra: str) -> list[str]:
    """The modules of ``extra`` (:data:`EXTRAS`) that cannot be imported here."""
    return [m for m in EXTRAS[extra] if not _importable(m)]


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # (an import hook that refuses it; a module set to None)
        return False


def require(extra: str, what: str) -> None:
    """MissingExtra unless every module of ``extra`` can be imported; ``what`` names the part
    that needs them ("fictionworld serve", "the compat scorer")."""
    gone = missing(extra)
    if gone:
        raise MissingExtra(
            f"{what} needs the [{extra}] extra ({', '.join(gone)} not installed): pip install 'fictionworld[{extra}]'"
        )
