"""Ship the determinism check as API (as Gymnasium ships ``check_reset_seed_determinism``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

__all__ = ["check_determinism"]


def check_determinism(seed: int = 0, entities: int = 1_000, spec=None) -> list[str]:
    """Generate one world twice here and once in a fresh interpreter with another
    PYTHONHASHSEED; return the problems found (an empty list means deterministic).

    >>> check_determinism(seed=1, entities=300)
    []
    """
    from fictionworld.generators import generate_world
    from fictionworld.spec import default_spec

    spec = (spec or default_spec()).scaled(entities)
    first = generate_world(spec, seed).world_hash
    problems = []
    again = generate_world(spec, seed).world_hash
    if again != first:
        problems.append(f"same process, same seed: {first} then {again}")
    code = (
        "import json, sys, fictionworld as fw\n"
        "spec = fw.WorldSpec.model_validate_json(sys.stdin.read())\n"
        f"print(fw.generate(seed={int(seed)}, spec=spec).world_hash)\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": str((hash(first) & 0xFFFF) + 1)}
    res = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(spec.model_dump(mode="json")),
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    if res.returncode != 0:
        problems.append(
            f"fresh process failed: {res.stderr.strip().splitlines()[-1] if res.stderr.strip() else res.returncode}"
        )
    elif res.stdout.strip() != first:
        problems.append(f"fresh process (PYTHONHASHSEED={env['PYTHONHASHSEED']}): {res.stdout.strip()} != {first}")
    return problems
