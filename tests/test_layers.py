"""The layers contract: imports point down, never up.

    core ← generators ← web ← tasks/scoring ← env ← rollout ← integrations / cli / the facade

Every ``import`` in the source is read, including those inside functions (a lazy import is
still a dependency). A lower layer that needs something higher names it by registry id
(``fictionworld.registry``), resolved when used, never by import. Tasks and scoring share a
layer but do not import each other's modules beyond the task model the scorer reads.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ("fictionworld",)

# (layer, module prefixes), lowest first; the longest matching prefix decides.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("core", ("fictionworld._version", "fictionworld.records", "fictionworld.schema", "fictionworld.spec",
              "fictionworld.tables", "fictionworld.dates", "fictionworld.world", "fictionworld.storage", "fictionworld.digests", "fictionworld.reading",
              "fictionworld.streaming", "fictionworld.executors", "fictionworld.progress",
              "fictionworld.folding", "fictionworld.seeding", "fictionworld.surface", "fictionworld.gazetteer",
              "fictionworld.categories", "fictionworld.knobs", "fictionworld.errors", "fictionworld.llm",
              "fictionworld.registry", "fictionworld.check", "fictionworld.data", "fictionworld.extras")),
    ("generators", ("fictionworld.generators", "fictionworld.determinism")),
    ("web", ("fictionworld.web", "fictionworld.worldmodel")),
    ("tasks/scoring", ("fictionworld.tasks", "fictionworld.scoring")),
    ("env", ("fictionworld.env",)),
    ("rollout", ("fictionworld.rollouts", "fictionworld.testing")),
    ("top", ("fictionworld.integrations", "fictionworld.cli", "fictionworld.__init__", "fictionworld.__main__")),
)  # fmt: skip
RANK = {name: i for i, (name, _) in enumerate(LAYERS)}
# Within tasks/scoring the scorer reads the task model; nothing in tasks reads the scorer.
ONE_WAY = (("fictionworld.tasks", "fictionworld.scoring"),)


def layer_of(module: str) -> str | None:
    if module == "fictionworld":
        module = "fictionworld.__init__"
    best = None
    for name, prefixes in LAYERS:
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and (best is None or len(p) > len(best[1])):
                best = (name, p)
    return best[0] if best else None


def source_modules() -> list[tuple[str, pathlib.Path]]:
    out = []
    for pkg in PACKAGES:
        for f in sorted((ROOT / pkg).rglob("*.py")):
            parts = f.relative_to(ROOT).with_suffix("").parts
            out.append((".".join(parts), f))
    return out


def imports_of(module: str, path: pathlib.Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module.rsplit(".", 1)[0] if not module.endswith("__init__") else module[: -len(".__init__")]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            found.append((node.lineno, name))
            if name in PACKAGES or name == "fictionworld":  # "from fictionworld import web" imports a submodule
                found += [(node.lineno, f"{name}.{a.name}") for a in node.names]
    return found


def violations(modules: list[tuple[str, pathlib.Path]] | None = None) -> list[str]:
    out = []
    for module, path in source_modules() if modules is None else modules:
        mine = layer_of(module)
        assert mine is not None, f"{module} is in no layer: add it to LAYERS in {__file__}"
        for line, target in imports_of(module, path):
            theirs = layer_of(target)
            if theirs is None or target.split(".")[0] not in PACKAGES:
                continue
            if target == "fictionworld" and mine != "top":
                out.append(f"{_where(path)}:{line}: {module} ({mine}) imports the facade 'fictionworld'")
            elif RANK[theirs] > RANK[mine]:
                out.append(f"{_where(path)}:{line}: {module} ({mine}) imports {target} ({theirs})")
            for low, high in ONE_WAY:
                if module.startswith(low + ".") and target.startswith(high + "."):
                    out.append(f"{_where(path)}:{line}: {module} imports {target} ({low} ← {high} only)")
    return out


def test_every_import_points_down():
    found = violations()
    assert not found, "imports against the layers contract:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("module", "layer"),
    [("fictionworld.world", "core"), ("fictionworld.generators.people", "generators"), ("fictionworld.web.web", "web"),
     ("fictionworld.scoring.strict", "tasks/scoring"), ("fictionworld.env.env", "env"),
     ("fictionworld.rollouts.pool", "rollout"), ("fictionworld", "top"), ("fictionworld.cli", "top")],
)  # fmt: skip
def test_layer_table(module, layer):
    assert layer_of(module) == layer


def test_the_checker_catches_upward_imports(tmp_path):
    """The contract test is not vacuous: an upward import, even one inside a function, a
    relative one, and an import of the facade from below are each found."""
    fake = tmp_path / "tables.py"
    fake.write_text(
        "from fictionworld.dates import NA_DATE\n"  # down: fine
        "def later():\n    from fictionworld.env import SearchEnv\n"
        "from .scoring import score\n"
        "import fictionworld\n",
        encoding="utf-8",
    )
    found = violations([("fictionworld.tables", fake)])
    assert len(found) == 3, found
    assert any("fictionworld.env (env)" in f for f in found)
    assert any("fictionworld.scoring (tasks/scoring)" in f for f in found)
    assert any("the facade" in f for f in found)


def _where(path: pathlib.Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def test_no_private_name_is_imported_across_modules():
    """A name one module imports from another is that module's interface: no leading underscore
    (a private name imported elsewhere says the boundary is in the wrong place). Issue 75."""
    found = []
    for module, path in source_modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = module.rsplit(".", 1)[0] if not module.endswith("__init__") else module[: -len(".__init__")]
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = package.split(".")
                name = ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            if name.split(".")[0] not in PACKAGES:
                continue
            found += [f"{path.relative_to(ROOT)}:{node.lineno}: {name}.{a.name}" for a in node.names
                      if a.name.startswith("_") and not a.name.startswith("__")]  # fmt: skip
    assert not found, "private names imported across modules:\n" + "\n".join(found)
