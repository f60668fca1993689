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

One addition: a time limit, as a budget of work. ``dateparser`` tries each of its 200 or so
languages in turn until one reads a cell; English comes first, so a cell English reads costs a
millisecond, but one no language reads ("1987-03-14 / 1988-02-01") is tried in every language:
a third of a second and more, so an answer of 6.8 kB with two dates a cell took minutes. Dates
are read by :class:`DateParsing`, with the same results, and the searches an answer needs are
estimated before any is made; over ``date_work`` (:data:`DATE_WORK`) the task scores 0 with
"evaluator timeout", as any failure of the evaluator does. The estimate depends on the cells
alone, so the outcome does not depend on the machine's speed.
"""

from __future__ import annotations

import datetime as dt
import io
import re
import traceback

from fictionworld.errors import FictionWorldError
from fictionworld.extras import require
from fictionworld.scoring.judge import FallbackJudge
from fictionworld.scoring.metrics import Official
from fictionworld.scoring.scores import Scores
from fictionworld.tasks.model import Task

__all__ = ["score_compat", "extract_table_text", "norm_column", "DateParsing", "EvaluatorTimeout", "DATE_WORK"]

_BLOCK = re.compile(r"```markdown(.*?)```", re.DOTALL)
_RUN = re.compile(r"((?:\|.*\n?)+)")
_SEPARATOR_CHARS = set("|- :")

# What dateparser's work costs, in milliseconds on a 2.6 GHz core (measured): reading a cell in
# English, 0.5 ms + 0.05 ms a character; searching every language for a date in a cell English
# does not read, 0.3 s + 5 ms a character for digits and punctuation, which every language may
# read, and 10 ms + 1 ms a character or less where letters narrow the languages down.
DATE_WORK = 4_000  # the estimated milliseconds of date parsing one answer may need


def _reading_cost(text: str) -> int:
    """The estimated cost of reading ``text`` as an English date (see DATE_WORK)."""
    return 1 + len(text) // 20


def _search_cost(text: str) -> int:
    """The estimated cost of searching every language for a date in ``text`` (see DATE_WORK)."""
    if any(ch.isdigit() for ch in text) and not any(ch.isalpha() for ch in text):
        return 300 + 5 * len(text)
    return 10 + len(text)


class EvaluatorTimeout(FictionWorldError):
    """An answer needs more work than the budget allows."""

    exit_code = 1


class DateParsing:
    """``dateparser.parse(text, settings=settings)``, as the official evaluator calls it, with
    the same result for every text: English, which dateparser tries first, is tried alone, and
    only a text it cannot read is searched in every language. :meth:`prepare` charges the work
    to ``budget`` before any of it is done (:class:`EvaluatorTimeout` when over)."""

    def __init__(self, settings: dict, budget: int = DATE_WORK):
        self.settings = settings
        self.budget = budget
        self.spent = 0
        self._english: dict[str, object] = {}
        self._charged: set[str] = set()
        self._found: dict[str, object] = {}

    def english(self, text: str):
        if text not in self._english:
            import dateparser

            self._english[text] = dateparser.parse(text, languages=["en"], settings=self.settings)
        return self._english[text]

    def prepare(self, values) -> None:
        """Charge the work of reading ``values`` (each distinct text once); EvaluatorTimeout
        when it does not fit in what is left of the budget."""
        new = [v for v in dict.fromkeys(values) if isinstance(v, str) and v not in self._charged]
        self._charge(sum(_reading_cost(v) for v in new if v not in self._english), f"reading {len(new):,} date cells")
        searched = [v for v in new if self.english(v) is None]
        what = f"searching every language for {len(searched):,} date cells English does not read"
        self._charge(sum(map(_search_cost, searched)), what)
        self._charged.update(new)

    def _charge(self, cost: int, what: str) -> None:
        if self.spent + cost > self.budget:
            raise EvaluatorTimeout(f"{what} needs an estimated {cost:,} ms of dateparser's work; the budget is "
                                   f"{self.budget:,} ms an answer")  # fmt: skip
        self.spent += cost

    def __call__(self, text):
        if not isinstance(text, str):  # raises as the official call does
            import dateparser

            return dateparser.parse(text, settings=self.settings)
        if text not in self._found:
            found = self.english(text)
            if found is None:
                import dateparser

                self.prepare([text])
                found = dateparser.parse(text, settings=self.settings)
            self._found[text] = found
        return self._found[text]


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


def score_compat(
    response, task: Task, *, judge=None, today: dt.date | None = None, date_work: int = DATE_WORK
) -> Scores:
    """Official scores of ``response`` against ``task`` (never raises on the response; MissingExtra
    without the ``[compat]`` extra). ``date_work``: the estimated milliseconds of date searches
    the answer may need (see :data:`DATE_WORK`)."""
    require("compat", "the compat scorer")
    j = judge or FallbackJudge()
    kind = "fallback" if judge is None else "endpoint"
    if response is None:
        return _zero(task, "response is None", kind)
    off = Official(today or dt.date.today())
    dates = off.parse_date = DateParsing(off.date_settings, date_work)
    try:
        return _score(response, task, j, kind, off, dates)
    except EvaluatorTimeout as e:
        return _zero(task, f"evaluator timeout: {e}", kind)
    except Exception:
        return _zero(task, "evaluator error: " + traceback.format_exc(limit=2)[-400:], kind)


def _score(response: str, task: Task, judge, kind: str, off: Official, dates: DateParsing) -> Scores:
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
            if name == "norm_date":
                dates.prepare([*df[col].tolist(), *gold[col].tolist()])
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
            elif metric == "date_near":
                dates.prepare([*resp, *gold_vals])
                columns.append([off.date_near(r, t) for r, t in zip(resp, gold_vals)])
            elif metric == "in_match":
                columns.append([1.0 if r in t else 0.0 for r, t in zip(resp, gold_vals)])
            else:
                fn = {"exact_match": off.exact_match, "url_match": off.url_match}[metric]
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
