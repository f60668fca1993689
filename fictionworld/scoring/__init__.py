"""WideSearch scoring: ``strict`` (the default and the RL reward) and ``compat`` (the official
evaluator's numbers)."""

import functools
from collections.abc import Callable

from fictionworld.scoring.scores import METRIC_NAMES, RewardConfig, Scores, Summary, aggregate, reward
from fictionworld.scoring.strict import AnswerLimits, score_strict

__all__ = [
    "score",
    "scorer",
    "score_strict",
    "Scores",
    "Summary",
    "aggregate",
    "reward",
    "RewardConfig",
    "METRIC_NAMES",
    "AnswerLimits",
]


def score(response: str, task, *, mode: str = "strict", **options) -> Scores:
    """Scores of one response against one task. ``mode``: ``strict`` (default; ``limits``, the
    :class:`AnswerLimits` size caps; ``abstention=True``, or mode ``strict-abstain``: a blank or
    N/A value cell leaves item precision's denominator), ``compat`` (official semantics; ``judge`` an optional
    OpenAI-compatible judge, ``today`` the date the official evaluator's date parsing is
    relative to), or any scorer registered in :mod:`fictionworld.registry`."""
    return scorer(mode, **options)(response, task)


def scorer(mode: str = "strict", **options) -> Callable[..., Scores]:
    """The registered scorer ``mode`` (an id or alias) as a function ``(response, task)``,
    with ``options`` bound. Options left ``None`` take the scorer's defaults."""
    from fictionworld.registry import RegistryError, spec

    try:
        entry = spec(mode, "scorer")
    except RegistryError as e:
        raise ValueError(f"unknown scoring mode {mode!r}: {e}") from None
    bound = entry.kwargs | {k: v for k, v in options.items() if v is not None}
    return functools.partial(entry.load(), **bound) if bound else entry.load()
