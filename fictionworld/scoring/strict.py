"""The strict scorer: WideSearch's metric with the official evaluator's defects fixed.

Differences from ``compat`` (each is tested in tests/test_scoring_strict.py):

1. Table choice: the *last* Markdown table whose header covers the required columns wins (an
   agent may revise its table); fenced or not, indented or not. Official: the first
   ```` ```markdown ```` block, else the first run of lines starting with "|".
2. Parsing is done here, not by ``pandas.read_csv``: cells stay strings (no "2020" → "2020.0"
   when a column has one empty cell, no "N/A" → NaN), quotes are text, escaped pipes stay in
   their cell, ragged rows are padded or trimmed instead of shifting every column or failing.
3. Cells lose Markdown (bold, italics, code, links, <br>) and surrounding quotes before any
   preprocessing; headers likewise, and extra columns are ignored instead of zeroing the task.
4. Rows are matched to gold rows one to one, in the answer's order: a near-duplicate key
   ("Acme Corp" and "acme  corp") matches at most one gold row, the later copy counts as a
   wrong row, so recall, precision and F1 never exceed 1 and hedging with variants never pays.
   Rows identical in every cell are counted once.
5. Key cells match the gold value or one of the entity's aliases from the graph (no LLM);
   ``llm_judge`` columns use a deterministic judge (same name, alias, plural, word order,
   near-identical spelling).
6. Numbers are read with thousands separators, "1.2 million" and currency marks; dates never
   take a missing part from today's date (a cell without a year is not a date); hosts are
   compared without "www."; a side without a number, date or URL never scores 1 against a
   gold value (official: "both missing" scores 1).
7. A column with several metrics scores the minimum of them as one item (official: one item
   per metric, which can push item precision above 1).
8. An empty join, an empty table or a malformed cell gives zeros with a message, never an
   exception. A single-column task answered without a table is read from ``<answer>…</answer>``
   or the last line.
"""

from __future__ import annotations

import re

from fictionworld.scoring.metrics import (
    clean_cell,
    strict_date,
    strict_hosts,
    strict_judge,
    strict_norm,
    strict_number,
)
from fictionworld.scoring.scores import Scores
from fictionworld.tasks.model import ColumnEval, Task, norm_header

__all__ = ["score_strict", "find_tables", "split_row"]

_SEP_CELL = re.compile(r"^:?-{1,}:?$")
_PIPE = re.compile(r"(?<!\\)\|")
_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.S | re.I)


def split_row(line: str) -> list[str]:
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|") and not s.endswith("\\|"):
        s = s[:-1]
    return [c.strip().replace("\\|", "|") for c in _PIPE.split(s)]


def _is_separator(cells: list[str]) -> bool:
    return bool(cells) and all(_SEP_CELL.match(c.replace(" ", "")) for c in cells if c) and any(cells)


def find_tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every Markdown table in ``text`` as (header, rows), in order of appearance."""
    tables, block = [], []
    for line in [*text.splitlines(), ""]:
        if "|" in line and line.strip().strip("`") and not line.strip().startswith("```"):
            block.append(line)
            continue
        if len(block) >= 2:
            rows = [split_row(x) for x in block]
            header = rows[0]
            body = [r for r in rows[1:] if not _is_separator(r)]
            if _is_separator(rows[1]) or len(body) == len(rows) - 1:
                tables.append((header, body))
        block = []
    return tables


def _header_key(h: str) -> str:
    return norm_header(clean_cell(h))


def _alnum(s: str) -> str:
    return "".join(ch for ch in s if ch.isalnum())


def _column_map(header: list[str], required: list[str]) -> dict[str, int] | None:
    """Required column → index in the header (exact normalised name, else alphanumerics only)."""
    keys = [_header_key(h) for h in header]
    out: dict[str, int] = {}
    for name in required:
        for i, k in enumerate(keys):
            if i not in out.values() and (k == name or (_alnum(k) and _alnum(k) == _alnum(name))):
                out[name] = i
                break
        else:
            return None
    return out


class _Column:
    """A column's scoring: canonical forms of the gold cells, computed once per task."""

    def __init__(self, ev: ColumnEval, gold: list[str], aliases: list[list[str]] | None):
        self.metrics = list(ev.metric) or ["exact_match"]
        self.pre = list(ev.preprocess)
        self.tol = float(ev.criterion) if isinstance(ev.criterion, int | float) else 0.0
        self.gold = gold
        self.aliases = [tuple(a) for a in aliases] if aliases else [() for _ in gold]
        self.gold_forms = [self._forms(g) for g in gold]
        self.alias_forms = [[self._forms(a) for a in al] for al in self.aliases]

    def _forms(self, s: str) -> dict:
        f = {"text": s}
        if "exact_match" in self.metrics:
            if "norm_date" in self.pre:
                d = strict_date(s)
                f["exact"] = d.isoformat() if d else strict_norm(s)
            elif "extract_number" in self.pre:
                n = strict_number(s)
                f["exact"] = repr(n) if n is not None else strict_norm(s)
            else:
                f["exact"] = strict_norm(s)
        if "number_near" in self.metrics:
            f["number"] = strict_number(s)
        if "date_near" in self.metrics:
            f["date"] = strict_date(s)
        if "url_match" in self.metrics:
            f["hosts"] = strict_hosts(s)
        return f

    def score(self, cell: str, row: int) -> float:
        r = self._forms(cell)
        return max(
            [self._against(r, self.gold_forms[row], self.gold[row], self.aliases[row])]
            + [self._against(r, af, a, ()) for af, a in zip(self.alias_forms[row], self.aliases[row])]
        )

    def _against(self, r: dict, g: dict, gold_text: str, aliases: tuple[str, ...]) -> float:
        worst = 1.0
        for m in self.metrics:
            if m == "exact_match":
                s = 1.0 if r["exact"] and r["exact"] == g["exact"] else 0.0
            elif m == "number_near":
                a, b = r["number"], g["number"]
                s = 1.0 if a is not None and b is not None and abs(a - b) <= abs(b) * self.tol + 1e-9 else 0.0
            elif m == "date_near":
                a, b = r["date"], g["date"]
                s = 1.0 if a is not None and b is not None and abs((a - b).days) <= 31 else 0.0
            elif m == "url_match":
                s = 1.0 if g["hosts"] and r["hosts"] == g["hosts"] else 0.0
            elif m == "llm_judge":
                s = strict_judge(r["text"], gold_text, aliases)
            else:  # in_match and other upstream extras: containment of the normalised gold
                s = 1.0 if strict_norm(gold_text) and strict_norm(gold_text) in strict_norm(r["text"]) else 0.0
            worst = min(worst, s)
        return worst


def _zero(task: Task, msg: str, **kw) -> Scores:
    return Scores(instance_id=task.instance_id, mode="strict", gold_rows=len(task.gold.rows), msg=msg, **kw)


def _bare_answer(text: str) -> str | None:
    m = _ANSWER_TAG.findall(text)
    if m:
        return m[-1].strip()
    lines = [x.strip() for x in text.strip().splitlines() if x.strip()]
    if not lines:
        return None
    last = lines[-1]
    return re.sub(r"^(final\s+)?answer\s*[:：]\s*", "", last, flags=re.I)


def score_strict(response: str, task: Task) -> Scores:
    """Strict scores of ``response`` against ``task``; never raises on any string."""
    if not isinstance(response, str):
        return _zero(task, "response is not a string")
    ev = task.evaluation
    required = [norm_header(c) for c in ev.required]
    keys = [norm_header(c) for c in ev.unique_columns]
    tables = find_tables(response)
    chosen = None
    for header, rows in reversed(tables):
        cmap = _column_map(header, required)
        if cmap is not None:
            chosen = (cmap, rows)
            break
    if chosen is None:
        if len(required) == 1 and len(task.gold.rows) == 1 and not tables:
            bare = _bare_answer(response)
            if bare:
                chosen = ({required[0]: 0}, [[bare]])
        if chosen is None:
            what = "no Markdown table" if not tables else f"no table has the columns {required}"
            return _zero(task, what)
    cmap, raw_rows = chosen
    # Cells by required column, ragged rows padded; blank rows and exact repeats dropped.
    rows, seen = [], set()
    for r in raw_rows:
        cells = tuple(r[cmap[c]] if cmap[c] < len(r) else "" for c in required)
        sig = tuple(strict_norm(x) for x in cells)
        if not any(sig) or sig in seen:
            continue
        seen.add(sig)
        rows.append(cells)
    columns, key_lookup = _prepared(task, required, keys)
    n_gold = len(task.gold.rows)
    taken: set[int] = set()
    tp_row = tp_item = 0.0
    matched = 0
    for cells in rows:
        g = _match(cells, required, keys, columns, key_lookup, taken, n_gold)
        if g is None:
            continue
        taken.add(g)
        matched += 1
        cell_scores = [1.0 if c in keys else columns[c].score(cells[j], g) for j, c in enumerate(required)]
        tp_row += min(cell_scores)
        tp_item += sum(cell_scores)
    return Scores.from_counts(
        tp_row,
        tp_item,
        len(rows),
        n_gold,
        len(required),
        instance_id=task.instance_id,
        mode="strict",
        matched_rows=matched,
        msg="" if rows else "the table has no rows",
        judge="fallback" if any("llm_judge" in col.metrics for col in columns.values()) else "none",
    )


def _prepared(task: Task, required: list[str], keys: list[str]):
    """Per-column gold forms and the key lookup of a task, computed once per task."""
    hit = task._cache.get("strict")
    if hit is not None:
        return hit
    ev = task.evaluation
    gold_cols = list(zip(*task.gold.rows)) if task.gold.rows else [() for _ in required]
    gold_index = {norm_header(c): j for j, c in enumerate(task.gold.columns)}
    columns = {}
    for c in required:
        ev_c = ev.eval_pipeline.get(c) or ColumnEval(preprocess=["norm_str"], metric=["exact_match"])
        gold = [str(x) for x in gold_cols[gold_index[c]]] if c in gold_index else ["" for _ in task.gold.rows]
        columns[c] = _Column(ev_c, gold, task.aliases.get(c))
    key_lookup: dict[tuple, list[int]] = {}
    for g in range(len(task.gold.rows)):
        for form in _key_forms([columns[k] for k in keys], g):
            key_lookup.setdefault(form, []).append(g)
    task._cache["strict"] = (columns, key_lookup)
    return columns, key_lookup


def _key_forms(cols: list[_Column], g: int) -> list[tuple]:
    """Exact-comparable forms of gold row ``g``'s key: its value and each alias."""
    per_col = []
    for col in cols:
        forms = {strict_norm(col.gold[g])} | {strict_norm(a) for a in col.aliases[g]}
        per_col.append([f for f in forms if f])
    out: list[tuple] = [()]
    for forms in per_col:
        out = [(*o, f) for o in out for f in forms]
    return out


def _match(cells, required, keys, columns, key_lookup, taken, n_gold) -> int | None:
    form = tuple(strict_norm(cells[required.index(k)]) for k in keys)
    for g in key_lookup.get(form, ()):
        if g not in taken:
            return g
    if form in key_lookup:
        return None  # its gold row is already matched: a near-duplicate
    # Keys scored by a metric other than plain equality (numbers, dates, URLs, judged names).
    for g in range(n_gold):
        if g in taken:
            continue
        if all(columns[k].score(cells[required.index(k)], g) >= 1.0 for k in keys):
            return g
    return None
