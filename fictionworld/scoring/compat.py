"""The compat scorer: the official WideSearch evaluator's numbers.

Reimplemented from the evaluator's documented behaviour (ByteDance-Seed/WideSearch,
src/evaluation/, newest revision), with the versions it pins (pandas 2.3.1, dateparser 1.2.2),
quirks included: the first ```` ```markdown ```` block or the first run of "|" lines,
``pandas.read_csv(sep="|")`` with its type inference and NA strings, set equality of columns,
duplicates dropped on raw key strings, a many-to-many inner join, both-missing cells scoring 1,
dates relative to ``today``. Any exception scores the task 0 ("evaluator error"), as upstream.

Where upstream calls an LLM (column-name alignment, key alignment, ``llm_judge`` columns),
pass a :class:`~fictionworld.scoring.judge.Judge` for an OpenAI-compatible endpoint; without
one a deterministic stand-in is used and ``Scores.judge`` says ``fallback``.
"""

from __future__ import annotations

import datetime as dt
import io
import re
import traceback

from fictionworld.scoring.judge import FallbackJudge
from fictionworld.scoring.metrics import Official
from fictionworld.scoring.scores import Scores
from fictionworld.tasks.model import Task

__all__ = ["score_compat", "extract_table_text", "norm_column"]

_BLOCK = re.compile(r"```markdown(.*?)```", re.DOTALL)
_RUN = re.compile(r"((?:\|.*\n?)+)")
_SEPARATOR_CHARS = set("|- :")


def norm_column(col: str) -> str:
    return str(col).strip().lower().replace(" ", "")


def extract_table_text(response: str) -> str | None:
    """The CSV-like text upstream hands to pandas, or None when it finds no table."""
    blocks = _BLOCK.findall(response)
    if not blocks:
        pipes = [i for i, ch in enumerate(response) if ch == "|"]
        if len(pipes) < 4:
            return None
        start = response.rfind("\n", 0, pipes[0])
        end = response.find("\n", pipes[-1])
        span = response[max(start, 0) : end if end != -1 else len(response)]
        blocks = _RUN.findall(span)
        if not blocks:
            return None
    lines = blocks[0].strip().split("\n")
    if lines:
        lines[0] = lines[0].replace(" ", "").lower()
    kept = []
    for line in lines:
        line = line.strip()
        if set(line) <= _SEPARATOR_CHARS or "|" not in line:
            continue
        kept.append("|".join(part.strip() for part in line.split("|")))
    return "\n".join(kept)


def _frame(text: str):
    import pandas as pd

    df = pd.read_csv(io.StringIO(text), sep="|")
    return df[[c for c in df.columns if not str(c).startswith("Unnamed")]]


def _zero(task: Task, msg: str, judge: str) -> Scores:
    return Scores(instance_id=task.instance_id, mode="compat", gold_rows=len(task.gold.rows), msg=msg, judge=judge)


def score_compat(response, task: Task, *, judge=None, today: dt.date | None = None) -> Scores:
    """Official scores of ``response`` against ``task`` (never raises)."""
    j = judge or FallbackJudge()
    kind = "fallback" if judge is None else "endpoint"
    if response is None:
        return _zero(task, "response is None", kind)
    try:
        return _score(response, task, j, kind, Official(today or dt.date.today()))
    except Exception:
        return _zero(task, "evaluator error: " + traceback.format_exc(limit=2)[-400:], kind)


def _score(response: str, task: Task, judge, kind: str, off: Official) -> Scores:
    import pandas as pd

    ev = task.evaluation
    required, unique = list(ev.required), list(ev.unique_columns)
    text = extract_table_text(response)
    if text is None:
        return _zero(task, "response_df is None", kind)
    df = _frame(text)
    gold = pd.read_csv(io.StringIO(task.gold.csv()))
    gold.columns = [norm_column(c) for c in gold.columns]
    gold = gold[required]
    df.columns = [norm_column(c) for c in df.columns]
    if set(required) != set(df.columns):
        mapping = judge.align(list(df.columns), required)
        df = df.rename(columns=mapping)
        if set(required) != set(df.columns):
            return _zero(task, f"required_columns {required} != response_df {list(df.columns)}", kind)
    for col in required:  # the newest revision's int/float reconciliation never fires
        gold[col] = gold[col].astype(str)
        df[col] = df[col].astype(str)
    df = df.drop_duplicates(subset=unique)
    gold = gold.drop_duplicates(subset=unique)
    for col in unique:
        item = ev.eval_pipeline.get(col)
        if item is not None and {"llm_judge", "exact_match"} & set(item.metric):
            mapping = judge.align(df[col].tolist(), gold[col].tolist())
            df[col] = df[col].apply(lambda x, m=mapping: m.get(x, x))
    pre = {"norm_str": off.norm_str, "extract_number": off.extract_number, "norm_date": off.norm_date}
    for col, item in ev.eval_pipeline.items():
        for name in item.preprocess:
            df[col] = df[col].apply(pre[name])
            gold[col] = gold[col].apply(pre[name])
    inner = pd.merge(gold, df, on=unique, how="inner", suffixes=("_query", "_response"))
    columns: list[list[float]] = []
    for col in required:
        if col in unique:
            columns.append([1.0] * len(inner))
            continue
        item = ev.eval_pipeline[col]
        resp, gold_vals = inner[f"{col}_response"].tolist(), inner[f"{col}_query"].tolist()
        for metric in item.metric:
            if metric == "llm_judge":
                columns.append([_as_score(x) for x in judge.judge_column(resp, gold_vals, item.criterion)])
            elif metric == "number_near":
                columns.append([off.number_near(r, t, item.criterion) for r, t in zip(resp, gold_vals)])
            elif metric == "in_match":
                columns.append([1.0 if r in t else 0.0 for r, t in zip(resp, gold_vals)])
            else:
                fn = {"exact_match": off.exact_match, "date_near": off.date_near, "url_match": off.url_match}[metric]
                columns.append([fn(r, t) for r, t in zip(resp, gold_vals)])
    rows = list(zip(*columns)) if columns and len(inner) else []
    tp_row = float(sum(min(r) for r in rows))
    tp_item = float(sum(sum(r) for r in rows))
    n_pred, n_gold = len(df), len(gold)

    return Scores.from_counts(
        tp_row,
        tp_item,
        n_pred,
        n_gold,
        len(required),
        instance_id=task.instance_id,
        mode="compat",
        matched_rows=len(inner),
        judge=kind,
    )


def _as_score(x) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return 0.0
