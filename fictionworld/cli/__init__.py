"""The ``fictionworld`` command line: a thin layer over the library.

One module per command group, each with a ``register(app)`` that adds its commands to an app;
this module makes the app and registers every group, here and nowhere else (importing a
command module registers nothing):

- :mod:`~fictionworld.cli.world`: ``generate``, ``validate``, ``stats``, ``index``, ``search``,
  ``open``, ``spec``
- :mod:`~fictionworld.cli.tasks`: ``tasks``, ``score``
- :mod:`~fictionworld.cli.rollout`: ``rollout``, ``demo``, ``train-demo``
- :mod:`~fictionworld.cli.export`: ``export verl``, ``export trl``, ``export episodes`` (``export RUN``)
- :mod:`~fictionworld.cli.train_trl`: ``train-trl`` (a GRPO run on CPU with a tiny model)
- :mod:`~fictionworld.cli.serve`: ``serve``, ``mcp``
- :mod:`~fictionworld.cli.worldmodel`: ``fidelity``, ``render-cache``

What they share (the error guard that makes every error an ``error:`` line, option types and
checks, progress) is in :mod:`~fictionworld.cli.common`. The console script is
``fictionworld = "fictionworld.cli:main"``; ``python -m fictionworld.cli`` runs the same."""

from __future__ import annotations

import typer

from fictionworld.cli import export, rollout, serve, tasks, train_trl, world, worldmodel
from fictionworld.cli.common import MAX_ENTITIES, MAX_K, MAX_PAGE, MAX_TASKS, MIN_ENTITIES, new_app

__all__ = ["app", "build_app", "main", "MIN_ENTITIES", "MAX_ENTITIES", "MAX_K", "MAX_PAGE", "MAX_TASKS"]

GROUPS = (world, tasks, rollout, export, train_trl, serve, worldmodel)  # in the order `fictionworld --help` lists them


def build_app() -> typer.Typer:
    """A new app with every command group registered."""
    app = new_app()
    for group in GROUPS:
        group.register(app)
    return app


app = build_app()


def main() -> None:
    app()
