"""WideSearch scoring: ``strict`` (the default and the RL reward) and ``compat`` (the official
evaluator's numbers)."""

from fictionworld.scoring.scores import METRIC_NAMES, RewardConfig, Scores, Summary, aggregate, reward
from fictionworld.scoring.strict import AnswerLimits, score_strict

__all__ = [
    "score",
    "score_strict",
    "Scores",
    "Summary",
    "aggregate",
    "reward",
    "RewardConfig",
    "METRIC_NAMES",
    "AnswerLimits",
]


def score(response: str, task, *, mode: str = "strict", judge=None, today=None, limits=None) -> Scores:
    """Scores of one response against one task. ``mode``: ``strict`` (default) or ``compat``
    (official semantics; ``judge`` an optional OpenAI-compatible judge, ``today`` the date the
    official evaluator's date parsing is relative to). ``limits``: the strict scorer's
    :class:`AnswerLimits` (size caps; over them an answer scores 0)."""
    if mode == "strict":
        return score_strict(response, task, limits=limits)
    if mode == "compat":
        from fictionworld.scoring.compat import score_compat

        return score_compat(response, task, judge=judge, today=today)
    raise ValueError(f"unknown scoring mode {mode!r} (strict or compat)")
