"""The verifiers taskset id ``fictionworld-verifiers`` (``vf-eval fictionworld-verifiers …``):
verifiers loads tasksets from top-level modules only, so this one re-exports
:mod:`fictionworld.integrations.verifiers` (its ``__all__``: one ``Taskset``, one ``Harness``)."""

from fictionworld.integrations.verifiers import *  # noqa: F403
from fictionworld.integrations.verifiers import __all__  # noqa: F401
