"""The launch script a trainer export writes (``train.sh``: verl's, SkyRL's): bash that runs
the trainer's module with the export's overrides, where ``$HERE`` is the export folder."""

from __future__ import annotations

import shlex
from collections.abc import Iterable

__all__ = ["launch_script"]


def _quote(arg: str) -> str:
    """``arg`` for bash: ``$HERE`` expands, nothing else does."""
    return '"$HERE"'.join(shlex.quote(part) if part else "" for part in arg.split("$HERE"))


def launch_script(notes: Iterable[str], module: str, args: Iterable[str],
                  needs: tuple[Iterable[str], str] | None = None) -> str:  # fmt: skip
    """``python3 -m module`` with ``args`` and then the script's own arguments (which win), run
    from anywhere; ``notes`` are the comment lines at its top. ``needs``: (modules, a warning):
    the script prints the warning on stderr, and goes on, when python3 cannot find one of the
    modules (looked up, not imported: a check of a second or less)."""
    top = "".join(f"# {note}\n" for note in notes)
    lines = "".join(f"    {_quote(a)} \\\n" for a in args)
    here = 'HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"'
    check = ""
    if needs is not None:
        modules, warning = needs
        find = "import importlib.util as u, sys; sys.exit(any(u.find_spec(m) is None for m in sys.argv[1:]))"
        check = (f"if ! python3 -c {shlex.quote(find)} {' '.join(map(shlex.quote, modules))} 2>/dev/null; then\n"
                 f"    echo {shlex.quote(warning)} >&2\nfi\n")  # fmt: skip
    return f'#!/usr/bin/env bash\n{top}set -euo pipefail\n{here}\n{check}python3 -m {module} \\\n{lines}    "$@"\n'
