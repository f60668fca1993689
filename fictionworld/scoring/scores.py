"""Score records, trial aggregation (avg@N / pass@N / max@N) and rewards."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["Scores", "METRIC_NAMES", "aggregate", "Summary", "RewardConfig", "reward", "prf"]

# The official result fields, in the official order ("score" is success).
METRIC_NAMES = (
    "score",
    "precision_by_row",
    "recall_by_row",
    "f1_by_row",
    "precision_by_item",
    "recall_by_item",
    "f1_by_item",
)


class Scores(BaseModel):
    """One response's scores against one task, named as the official evaluator names them."""

    instance_id: str = ""
    mode: str = "strict"
    score: float = 0.0  # success: 1 only when all six precision/recall/F1 values are 1
    precision_by_row: float = 0.0
    recall_by_row: float = 0.0
    f1_by_row: float = 0.0
    precision_by_item: float = 0.0
    recall_by_item: float = 0.0
    f1_by_item: float = 0.0
    predicted_rows: int = 0
    gold_rows: int = 0
    matched_rows: int = 0
    # Value cells of the answer left blank or N/A (strict); with abstention they leave item
    # precision's denominator.
    abstained_items: int = 0
    parsed: bool = False  # a table with the required columns was found
    msg: str = ""
    judge: str = "none"  # none | fallback (deterministic stand-in) | endpoint
    trial: int = 0

    @classmethod
    def from_counts(
        cls, tp_row: float, tp_item: float, predicted_rows: int, gold_rows: int, columns: int,
        *, abstained: int = 0, abstention: bool = False, **fields,
    ) -> Scores:  # fmt: skip
        """Row and item precision/recall/F1 from true-positive sums (items = rows × columns);
        success when all six are exactly 1. ``abstained``: value cells the answer left blank or
        N/A; with ``abstention`` they are not counted as predicted items (a blank cell is no
        claim; a wrong one still is). Recall and the row metrics do not change."""
        p_r, r_r, f_r = prf(tp_row, predicted_rows, gold_rows)
        predicted_items = predicted_rows * columns - (abstained if abstention else 0)
        p_i, r_i, f_i = prf(tp_item, predicted_items, gold_rows * columns)
        six = (p_r, r_r, f_r, p_i, r_i, f_i)
        return cls(
            score=1.0 if all(v == 1.0 for v in six) else 0.0,
            precision_by_row=p_r,
            recall_by_row=r_r,
            f1_by_row=f_r,
            precision_by_item=p_i,
            recall_by_item=r_i,
            f1_by_item=f_i,
            predicted_rows=predicted_rows,
            gold_rows=gold_rows,
            abstained_items=abstained,
            parsed=True,
            **fields,
        )

    @property
    def success(self) -> float:
        return self.score

    def metrics(self) -> dict[str, float]:
        return {m: getattr(self, m) for m in METRIC_NAMES}


def prf(tp: float, predicted: float, gold: float) -> tuple[float, float, float]:
    p = tp / predicted if predicted else 0.0
    r = tp / gold if gold else 0.0
    f = 2 * p * r / (p + r) if p + r > 1e-9 else 0.0
    return p, r, f


class Summary(BaseModel):
    """Per metric: the mean over tasks of each task's mean (avg_n), best (max_n) and worst
    (min_n) over its N trials. SR pass@N is ``score.max_n``."""

    trials: int
    tasks: int
    missing: int = 0  # (task, trial) pairs without a response, scored 0
    metrics: dict[str, dict[str, float]] = Field(default_factory=dict)

    def table_rows(self) -> list[tuple[str, float, float]]:
        m = self.metrics
        return [
            ("Success rate", m["score"]["avg_n"], m["score"]["max_n"]),
            ("Row F1", m["f1_by_row"]["avg_n"], m["f1_by_row"]["max_n"]),
            ("Item F1", m["f1_by_item"]["avg_n"], m["f1_by_item"]["max_n"]),
        ]


def aggregate(per_task: dict[str, list[Scores | None]], trials: int) -> Summary:
    """Mean over tasks of avg@N, max@N and min@N of every metric; a missing trial scores 0."""
    sums = {m: {"avg_n": 0.0, "max_n": 0.0, "min_n": 0.0} for m in METRIC_NAMES}
    missing = 0
    for runs in per_task.values():
        runs = list(runs)[:trials] + [None] * max(0, trials - len(runs))
        missing += sum(r is None for r in runs)
        for m in METRIC_NAMES:
            vals = [getattr(r, m) if r is not None else 0.0 for r in runs]
            sums[m]["avg_n"] += sum(vals) / len(vals)
            sums[m]["max_n"] += max(vals)
            sums[m]["min_n"] += min(vals)
    n = len(per_task)
    metrics = {m: {k: (v / n if n else 0.0) for k, v in d.items()} for m, d in sums.items()}
    return Summary(trials=trials, tasks=n, missing=missing, metrics=metrics)


class RewardConfig(BaseModel):
    """A reward as a weighted mean of scores, minus a penalty when no usable table was given.
    Weights are finite and >= 0 with at least one above 0 (a negative weight would pay for
    wrong answers, all zero would pay nothing for anything); the penalty is finite and >= 0."""

    model_config = ConfigDict(extra="forbid")

    item_f1: float = Field(1.0, ge=0, allow_inf_nan=False)
    row_f1: float = Field(0.0, ge=0, allow_inf_nan=False)
    success: float = Field(0.0, ge=0, allow_inf_nan=False)
    # subtracted when the answer has no table with the columns
    format_penalty: float = Field(0.0, ge=0, allow_inf_nan=False)
    # score abstention-aware (``score_strict(abstention=True)``): a blank or N/A value cell leaves
    # item precision's denominator, a wrong one does not; off = WideSearch's metric
    abstention: bool = False

    @model_validator(mode="after")
    def _some_weight(self) -> RewardConfig:
        if not any(w > 0 for _, w in self.weights()):
            raise ValueError("reward weights item_f1, row_f1 and success are all 0: at least one must be above 0")
        return self

    def weights(self) -> Iterable[tuple[str, float]]:
        return (("f1_by_item", self.item_f1), ("f1_by_row", self.row_f1), ("score", self.success))


def reward(scores: Scores, config: RewardConfig | None = None) -> float:
    """Item F1 by default; with a config, the weighted mean of item F1, row F1 and success,
    minus ``format_penalty`` for an unparseable answer."""
    c = config or RewardConfig()
    total = sum(w for _, w in c.weights())
    value = sum(getattr(scores, m) * w for m, w in c.weights()) / total if total else 0.0
    if not scores.parsed:
        value -= c.format_penalty
    return float(value)
