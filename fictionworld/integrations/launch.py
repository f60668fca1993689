"""The launch script a trainer export writes (``train.sh``: verl's, SkyRL's): bash that runs
the trainer's module with the export's overrides, where ``$HERE`` is the export folder."""

from __future__ import annotations

import shlex
from collections.abc import Iterable

__all__ = ["launch_script"]


def _quote(arg: str) -> str:
    """``arg`` for bash: ``$HERE`` expands, nothing else does."""
    return '"$HERE"'.join(shlex.quote(part) if part else "" for part in arg.split("$HERE"))


def launch_script(notes: Iterable[str], module: str, args: Iterable[str]) -> str:
    """``python3 -m module`` with ``args`` and then the script's own arguments (which win), run
    from anywhere; ``notes`` are the comment lines at its top."""
    top = "".join(f"# {note}\n" for note in notes)
    lines = "".join(f"    {_quote(a)} \\\n" for a in args)
    here = 'HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"'
    return f'#!/usr/bin/env bash\n{top}set -euo pipefail\n{here}\npython3 -m {module} \\\n{lines}    "$@"\n'
