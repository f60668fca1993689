"""The strict scorer: WideSearch's metric with the official evaluator's defects fixed, and
hardened as an RL reward (a policy finds every hole in a reward).

Differences from ``compat`` (each is tested in tests/test_scoring_strict.py and attacked with
generated cases in tests/test_scoring_adversarial.py):

1. Table choice: the answer is the content of the last ``<answer>…</answer>`` when that holds
   a table with the required columns (or the task asks for one value), else the whole text. In
   it the *last* Markdown table whose header covers the required columns wins (an agent may
   revise its table); fenced or not, indented or not, with prose (even prose holding a pipe)
   above it or before its header on the same line. Earlier tables with the required columns
   and no key in common with the later ones are read as its first parts (a long table split in
   two); one that shares a key is a draft, and one introduced as an example ("For example:",
   "Template:") is an illustration: both are dropped. Rows that repeat the header or hold only
   placeholders ("...", "{name}", "<date>") are no rows (an echoed template). The choice never
   depends on the gold, so two tables never score more than the one table they are read as.
2. Parsing is done here, not by ``pandas.read_csv``: cells stay strings, quotes are text,
   escaped pipes stay in their cell, ragged rows are padded or trimmed.
3. Cells lose Markdown and inline HTML (bold, italics with ``*`` or ``_``, ``<b>``/``<i>``,
   code, links, ``<br>``; struck-out text goes with its content) and surrounding quotes; headers
   likewise, and extra columns are ignored instead of zeroing the task.
4. Rows are matched to gold rows one to one, in the answer's order: a near-duplicate key
   matches at most one gold row and the later copy is a wrong row, so recall, precision and F1
   never exceed 1. Rows identical in every cell count once.
5. A single-answer (deep) task pays only for committing: several candidate rows score as the
   worst of them alone.
6. Names (keys, and judged columns of entity names) match the gold entity's name or one of its
   aliases from the graph up to case, accents, spacing, punctuation, a leading article and a
   harmless qualifier ("(company)", "(1994 film)"), never by edit distance: the web's decoys
   are one letter away from the real names. Category columns match up to plural and word order.
7. A cell states one value or none: several different numbers or dates in it ("14 or 15",
   "1900 or 9 December 1888", a range of days) is a hedge and scores 0; context after "as of"
   is not a value. Numbers are read with thousands separators ("1,200,000", "1.200.000"),
   "1.2 million", scientific notation ("2.5e6") and currency marks, a unit's exponent ("km^2")
   aside; a date has a precision and "December 1888" does not answer a full date; any dash
   may separate a numeric date's parts; all-numeric dates follow the answer's own day/month
   order; dates are never completed from today (:mod:`fictionworld.scoring.cells`). Hosts are compared without "www.". A side without a
   value never scores 1 against a gold value.
8. A column with several metrics scores the minimum of them as one item.
9. Nothing raises: an empty join, an empty table, a malformed cell or an answer over the size
   limits (:class:`AnswerLimits`) gives zeros with a message. A one-value task is answered by
   a last line "Answer: …" (whatever tables of notes come before it), else by its table, else
   by the ``<answer>…</answer>`` content or, without any table, the last line.
10. ``abstention=True`` (registered as ``strict-abstain``; off by default, as WideSearch
   counts a blank cell as a wrong one): a value cell left blank or N/A leaves item precision's
   denominator, a wrong cell does not, so base-rate guesses cost precision where saying
   nothing does not. Keys always count; recall and the row metrics are unchanged.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from typing import NamedTuple

from pydantic import BaseModel, Field

from fictionworld.scoring.cells import (
    DateOrder,
    category_match,
    date_order,
    name_forms,
    name_readings,
    names_match,
    read_date,
    read_number,
)
from fictionworld.scoring.metrics import clean_cell, strict_hosts, strict_norm
from fictionworld.scoring.scores import Scores
from fictionworld.tasks.model import ColumnEval, Task, norm_header

__all__ = ["score_strict", "find_tables", "split_row", "abstains", "AnswerLimits", "LIMITS"]

_SEP_CELL = re.compile(r"^:?-{1,}:?$")
_PIPE = re.compile(r"(?<!\\)\|")


class AnswerLimits(BaseModel):
    """What one answer may hold; beyond any of these it scores 0 with a message. Generous for
    WideSearch-size tables (hundreds of rows), small enough that scoring stays cheap."""

    max_chars: int = Field(1_000_000, ge=1)
    max_rows: int = Field(2_000, ge=1)
    max_cells: int = Field(40_000, ge=1)


LIMITS = AnswerLimits()


def split_row(line: str) -> list[str]:
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|") and not s.endswith("\\|"):
        s = s[:-1]
    return [c.strip().replace("\\|", "|") for c in _PIPE.split(s)]


_SEP_CHARS = frozenset("|-: \t")


def _is_separator(cells: list[str]) -> bool:
    return any(cells) and all(_SEP_CELL.match(c.replace(" ", "")) for c in cells if c)


def _separator_line(line: str) -> bool:
    return "-" in line and _SEP_CHARS.issuperset(line) and _is_separator(split_row(line))


def _blocks(lines: list[str]) -> list[tuple[int, list[str]]]:
    """Runs of consecutive lines holding a pipe (code fences end a run), each with the index
    of its first line."""
    out, block, start = [], [], 0
    for i, line in enumerate([*lines, ""]):
        if "|" in line and line.strip().strip("`") and not line.strip().startswith("```"):
            if not block:
                start = i
            block.append(line)
            continue
        if block:
            out.append((start, block))
        block = []
    return out


def _header(line: str, separator: str) -> list[str]:
    """Header cells; prose before the first pipe is dropped when the separator starts with one."""
    if not line.strip().startswith("|") and separator.strip().startswith("|"):
        line = line[line.index("|") :]
    return split_row(line)


# Prose that introduces a table as an illustration rather than the answer.
_EXAMPLE = re.compile(
    r"\b(?:examples?|for\s+instance|templates?|placeholders?|illustrat\w*|dummy|"
    r"sample\s+(?:output|table|rows?|answer|format))\b|\be\.\s?g\.",
    re.IGNORECASE,
)
_INTRO_LINES = 3  # lines above a table read for what introduces it


class _Table(NamedTuple):
    header: list[str]
    rows: list[list[str]]
    example: bool  # introduced as an example or a template ("For example:", "Template:")


def _tables(text: str) -> list[_Table]:
    """Every Markdown table in ``text``, in order of appearance. A header is the line above a
    separator row; lines above it in the same run are prose. A run without a separator is read
    as a header and rows. A table is an example when the prose just above it (not crossing the
    previous table) says so."""
    lines = text.splitlines()
    tables: list[_Table] = []
    prev_end = 0
    for start, block in _blocks(lines):
        seps = [i for i, line in enumerate(block) if i > 0 and _separator_line(line)]
        if not seps:
            if len(block) >= 2:
                example = _example(lines, prev_end, start, "")
                tables.append(_Table(split_row(block[0]), [split_row(x) for x in block[1:]], example))
                prev_end = start + len(block)
            continue
        for n, s in enumerate(seps):
            end = seps[n + 1] - 1 if n + 1 < len(seps) else len(block)
            line = block[s - 1]
            lead = line[: line.index("|")] if not line.strip().startswith("|") else ""
            example = _example(lines, prev_end, start + s - 1, lead)
            tables.append(_Table(_header(line, block[s]), [split_row(x) for x in block[s + 1 : end]], example))
            prev_end = start + end
    return tables


def _example(lines: list[str], prev_end: int, header_at: int, lead: str) -> bool:
    """Whether the prose just above a header (and before it on its line) calls the table an example."""
    above = lines[max(prev_end, header_at - _INTRO_LINES) : header_at]
    text = " ".join(x[-MAX_HEADER_CHARS:] for x in [*above, lead])
    return bool(_EXAMPLE.search(text))


def find_tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every Markdown table in ``text`` as (header, rows), in order of appearance. A header is
    the line above a separator row; lines above it in the same run are prose. A run without a
    separator is read as a header and rows."""
    return [(t.header, t.rows) for t in _tables(text)]


_SUPERSCRIPT = re.compile(r"<sup>\s*(\d{1,2})\s*</sup>|\^(\d)", re.IGNORECASE)
MAX_HEADER_CHARS = 200
MAX_CELL_CHARS = 1_000  # a longer cell reads as blank: no answer needs it, and cleaning stays cheap


def _header_key(h: str) -> str:
    """A header as compared with the required names: normalised as WideSearch does, plus
    compatibility forms ("km²", "km2", "km^2", "km<sup>2</sup>" agree)."""
    if len(h) > MAX_HEADER_CHARS:
        return ""
    h = _SUPERSCRIPT.sub(lambda m: m.group(1) or m.group(2), h)
    return unicodedata.normalize("NFKC", norm_header(clean_cell(h)))


def _alnum(s: str) -> str:
    return "".join(ch for ch in s if ch.isalnum())


def _column_map(header: list[str], required: list[str]) -> dict[str, int] | None:
    """Required column → index in the header (exact normalised name, else alphanumerics only)."""
    keys = [_header_key(h) for h in header]
    out: dict[str, int] = {}
    for original in required:
        name = unicodedata.normalize("NFKC", original)
        for i, k in enumerate(keys):
            if i not in out.values() and (k == name or (_alnum(k) and _alnum(k) == _alnum(name))):
                out[original] = i
                break
        else:
            return None
    return out


class _Column:
    """A column's scoring, with the gold side read once per task."""

    def __init__(self, ev: ColumnEval, gold: list[str], aliases: list[list[str]] | None):
        self.metrics = list(ev.metric) or ["exact_match"]
        self.pre = list(ev.preprocess)
        self.tol = float(ev.criterion) if isinstance(ev.criterion, int | float) else 0.0
        self.gold = gold
        self.names = aliases is not None  # a column of entity names: aliases come from the graph
        m, pre, none = set(self.metrics), set(self.pre), [None] * len(gold)
        if self.names:
            self.forms = [name_forms([g, *(aliases[i] if i < len(aliases) else ())]) for i, g in enumerate(gold)]
        plain = not self.names and bool(m - {"number_near", "date_near", "url_match", "llm_judge"})
        self.norm = [strict_norm(g) for g in gold] if plain else none  # compared as normalised text
        numbers = "number_near" in m or ("exact_match" in m and "extract_number" in pre)
        self.number = [read_number(g) for g in gold] if numbers else none
        dates = "date_near" in m or ("exact_match" in m and "norm_date" in pre)
        self.date = [read_date(g) for g in gold] if dates else none
        self.hosts = [strict_hosts(g) for g in gold] if "url_match" in m else none
        self.alternatives = [_alternatives(g) for g in gold] if "in_match" in m else none
        self._metrics = [self._metric(x) for x in self.metrics]

    @property
    def indexable(self) -> bool:
        """Whether a cell matches a gold row only through its exact forms (keys are looked up)."""
        return self.metrics == ["exact_match"] and not ({"norm_date", "extract_number"} & set(self.pre))

    def key_forms(self, g: int) -> frozenset[str]:
        return self.forms[g] if self.names else frozenset({self.norm[g]} - {""})

    def cell_forms(self, cell: str) -> list[str]:
        return [base for base, _ in name_readings(cell)] if self.names else [strict_norm(cell)]

    def score(self, cell: str, g: int, order: DateOrder) -> float:
        if len(self._metrics) == 1:  # the common case, on the hot path
            return self._metrics[0](cell, g, order)
        return min(f(cell, g, order) for f in self._metrics)

    def _metric(self, m: str):
        return {
            "exact_match": self._exact,
            "number_near": self._near,
            "date_near": self._date_near,
            "url_match": self._url,
            "llm_judge": self._judge,
            "in_match": self._in,
        }[m]

    def _near(self, cell: str, g: int, order: DateOrder) -> float:
        return 1.0 if _close(read_number(cell), self.number[g], self.tol) else 0.0

    def _date_near(self, cell: str, g: int, order: DateOrder) -> float:
        return 1.0 if self._date(cell, g, order, days=31) else 0.0

    def _url(self, cell: str, g: int, order: DateOrder) -> float:
        return 1.0 if self.hosts[g] and strict_hosts(cell) == self.hosts[g] else 0.0

    def _judge(self, cell: str, g: int, order: DateOrder) -> float:
        ok = names_match(cell, self.forms[g]) if self.names else category_match(cell, self.gold[g])
        return 1.0 if ok else 0.0

    def _in(self, cell: str, g: int, order: DateOrder) -> float:
        """in_match: upstream credits any answer that is a substring of the gold (so "", one
        letter, or one word of a name score 1). Here the answer must be the gold, or one of the
        values the gold lists (split at ";", "|", "/", ",", " or "), as a whole, normalised."""
        got = strict_norm(cell)
        return 1.0 if got and got in self.alternatives[g] else 0.0

    def _exact(self, cell: str, g: int, order: DateOrder) -> float:
        if "norm_date" in self.pre and self.date[g] is not None:
            return 1.0 if self._date(cell, g, order, days=0) else 0.0
        if "extract_number" in self.pre and self.number[g] is not None:
            return 1.0 if _close(read_number(cell), self.number[g], 0.0) else 0.0
        if self.names:
            return 1.0 if names_match(cell, self.forms[g]) else 0.0
        return 1.0 if self.norm[g] and strict_norm(cell) == self.norm[g] else 0.0

    def _date(self, cell: str, g: int, order: DateOrder, *, days: int) -> bool:
        """Exact (``days`` = 0): the answer is at least as precise as the gold and equal at the
        gold's precision. Near: every day the answer can mean is within ``days`` of the gold,
        so "November 1933" answers 27 November 1933 exactly when a made-up "15 November 1933"
        would, and inventing a day never pays more than saying what is known."""
        a, b = read_date(cell, order), self.date[g]
        if a is None or b is None:
            return False
        if a.precision >= b.precision:
            return abs((a.truncated(b.precision) - b.truncated(b.precision)).days) <= days
        if days == 0:
            return False
        first, last = a.span()
        gold = b.truncated(b.precision)
        return abs((first - gold).days) <= days and abs((last - gold).days) <= days


def _close(a: float | None, b: float | None, tol: float) -> bool:
    """Within ``tol`` of ``b``, relatively, up to float rounding ("3.45 million" = 3450000)."""
    return a is not None and b is not None and abs(a - b) <= abs(b) * tol + 1e-9 * max(1.0, abs(b))


class _Prepared:
    """A task's columns and key index, computed once per task."""

    def __init__(self, task: Task, required: list[str], keys: list[str]):
        ev = task.evaluation
        gold_cols = list(zip(*task.gold.rows)) if task.gold.rows else [() for _ in required]
        gold_index = {norm_header(c): j for j, c in enumerate(task.gold.columns)}
        self.required, self.keys = required, keys
        self.n_gold = len(task.gold.rows)
        self.columns: dict[str, _Column] = {}
        for c in required:
            ev_c = ev.eval_pipeline.get(c) or ColumnEval(preprocess=["norm_str"], metric=["exact_match"])
            gold = [str(x) for x in gold_cols[gold_index[c]]] if c in gold_index else ["" for _ in task.gold.rows]
            self.columns[c] = _Column(ev_c, gold, task.aliases.get(c))
        self.key_cols = [self.columns[k] for k in keys]
        self.key_at = [required.index(k) for k in keys]
        self.indexed = all(col.indexable for col in self.key_cols)
        self.lookup: dict[tuple[str, ...], list[int]] = {}
        if self.indexed:
            for g in range(self.n_gold):
                for form in itertools.product(*(sorted(col.key_forms(g)) for col in self.key_cols)):
                    self.lookup.setdefault(form, []).append(g)
        self.date_at = [
            j
            for j, c in enumerate(required)
            if "date_near" in self.columns[c].metrics or "norm_date" in self.columns[c].pre
        ]

    def match(self, cells: tuple[str, ...], taken: set[int], order: DateOrder) -> int | None:
        """The gold row these cells' keys name (first untaken), or None."""
        if self.indexed:
            return self._lookup(cells, taken, order)
        for g in range(self.n_gold):
            if g not in taken and self._keys_score(cells, g, order):
                return g
        return None

    def _lookup(self, cells, taken, order) -> int | None:
        forms = [col.cell_forms(cells[j]) for col, j in zip(self.key_cols, self.key_at)]
        for form in itertools.product(*forms):
            for g in self.lookup.get(form, ()):
                if g not in taken and self._keys_score(cells, g, order):
                    return g
        return None  # no gold row, or only ones already matched (a near-duplicate)

    def _keys_score(self, cells, g: int, order) -> bool:
        return all(col.score(cells[j], g, order) >= 1.0 for col, j in zip(self.key_cols, self.key_at))

    def tally(self, rows: list[tuple[str, ...]], order: DateOrder) -> tuple[float, float, int]:
        """(row true positives, item true positives, matched rows) of rows against the gold."""
        taken: set[int] = set()
        tp_row = tp_item = 0.0
        for cells in rows:
            g = self.match(cells, taken, order)
            if g is None:
                continue
            taken.add(g)
            scores = [
                1.0 if c in self.keys else self.columns[c].score(cells[j], g, order)
                for j, c in enumerate(self.required)
            ]
            tp_row += min(scores)
            tp_item += sum(scores)
        return tp_row, tp_item, len(taken)


def _prepared(task: Task, required: list[str], keys: list[str]) -> _Prepared:
    hit = task._cache.get("strict")
    if hit is None:
        hit = task._cache["strict"] = _Prepared(task, required, keys)
    return hit


def _zero(task: Task, msg: str, **kw) -> Scores:
    return Scores(instance_id=task.instance_id, mode="strict", gold_rows=len(task.gold.rows), msg=msg, **kw)


def _last_answer_tag(text: str) -> str | None:
    """The content of the last ``<answer>…</answer>`` (linear: no pattern rescans the text)."""
    low = text.lower()
    end = low.rfind("</answer>")
    start = low.rfind("<answer>", 0, end) if end != -1 else -1
    return text[start + len("<answer>") : end] if start != -1 else None


_ANSWER_LINE = re.compile(r"(?:final\s+)?answer\s*[:：]\s*", re.IGNORECASE)


def _last_line(text: str) -> str:
    return text.rstrip().rpartition("\n")[2].strip()


def _explicit_answer(text: str) -> str | None:
    """What a last line "Answer: …" ("**Final answer:** …") states, or None; a table row
    (a line with a pipe) is never one."""
    line = _last_line(text)
    if "|" in line or len(line) > MAX_CELL_CHARS:
        return None
    line = clean_cell(line)
    m = _ANSWER_LINE.match(line)
    return (line[m.end() :].strip() or None) if m else None


def _answer_rows(response: str, prep: _Prepared, single: bool, one_cell: bool) -> tuple[list[list[str]] | None, str]:
    """The answer's rows (cells in ``required`` order), or None and why there are none.

    The answer is the content of the last complete ``<answer>…</answer>`` when that holds a
    table with the required columns or the task asks for one value, else the whole text. In
    it, a one-value task's last line "Answer: …" is the answer (it is said last); else the
    table :func:`_choose` picks; else, with no table at all, the tag's content or the last line."""
    tagged = _last_answer_tag(response)
    scope, tables, rows = response, None, None
    if tagged is not None:
        inside = _tables(tagged)
        rows = _choose(inside, prep, single)
        if rows is not None or one_cell:
            scope, tables = tagged, inside
    if tables is None:
        tables = _tables(response)
        rows = _choose(tables, prep, single)
    if one_cell:
        bare = _explicit_answer(scope)
        if bare is None and rows is None:
            bare = scope.strip() if scope is tagged else None if tables else clean_cell(_last_line(scope))
        if bare:
            return [[bare if len(bare) <= MAX_CELL_CHARS else ""]], ""
    if rows is None:
        return None, "no Markdown table" if not tables else f"no table has the columns {prep.required}"
    return rows, ""


def _cells(raw: list[str], cmap: dict[str, int], required: list[str]) -> list[str]:
    return [raw[i] if i < len(raw) and len(raw[i]) <= MAX_CELL_CHARS else "" for i in (cmap[c] for c in required)]


# A cell that only holds a place for a value: "...", "…", "-", "?", "{name}", "<date>", "[url]", "etc.", "TBD", "xxx".
_PLACEHOLDER = re.compile(r"\.{2,}|…+|[-–—_?]+|\{[^{}]*\}|<[^<>]*>|\[[^\[\]]*\]|etc\.?|tbd|xx+", re.IGNORECASE)


def _filler(row: list[str], header: list[str]) -> bool:
    """Whether a row holds no answer: placeholders only, or the header's words again (an
    echoed template). ``header``: the header's letters and digits, lower case, per column."""
    if all(_placeholder(c) for c in row):
        return True
    return all(h and _NOT_ALNUM.sub("", c).lower() == h for c, h in zip(row, header))


_NOT_ALNUM = re.compile(r"[\W_]+")


def _placeholder(cell: str) -> bool:
    c = clean_cell(cell)
    return not c or _PLACEHOLDER.fullmatch(c) is not None


def _choose(tables: list[_Table], prep: _Prepared, single: bool) -> list[list[str]] | None:
    """Rows (cells in ``required`` order) of the answer table: the last table with the
    required columns that holds a row, preceded by earlier such tables while they share no key
    with it (a key written alike, or one naming the same gold row) unless they are introduced
    as examples; a single-answer task reads the last only. Rows that repeat the header or hold
    only placeholders are no rows: what an echoed template or format example leaves."""
    required = prep.required
    mapped: list[tuple[_Table, list[list[str]]]] = []
    for t in tables:
        cmap = _column_map(t.header, required)
        if cmap is None:
            continue
        header = [_NOT_ALNUM.sub("", _header_key(t.header[cmap[c]])).lower() for c in required]
        rows = [r for r in (_cells(x, cmap, required) for x in t.rows) if not _filler(r, header)]
        mapped.append((t, rows))
    if not mapped:
        return None
    while len(mapped) > 1 and not mapped[-1][1]:
        mapped.pop()  # a table without rows (a template) after the answer
    last = mapped[-1][1]
    if single or len(mapped) == 1:
        return last
    parts, seen = [last], _keys(last, prep)
    for t, rows in reversed(mapped[:-1]):
        if t.example:
            continue
        keys = _keys(rows, prep)
        if keys & seen:
            break  # a draft of what follows
        seen |= keys
        parts.append(rows)
    return [r for part in reversed(parts) for r in part]


def _keys(rows: list[list[str]], prep: _Prepared) -> set:
    """A table's keys as written (normalised) and the gold rows they name."""
    keys: set = {tuple(strict_norm(r[j]) for j in prep.key_at) for r in rows}
    return keys | ({prep.match(tuple(r), set(), "mdy") for r in rows} - {None})


def _distinct(rows: list[list[str]]) -> list[tuple[str, ...]]:
    """Rows without blank rows and exact repeats (the same cells up to case and spacing)."""
    out, seen = [], set()
    for r in rows:
        sig = tuple("".join(x.split()).casefold() for x in r)
        if any(sig) and sig not in seen:
            seen.add(sig)
            out.append(tuple(r))
    return out


def score_strict(response: str, task: Task, *, limits: AnswerLimits | None = None, abstention: bool = False) -> Scores:
    """Strict scores of ``response`` against ``task``; never raises on any string (a scorer
    defect gives zeros and says so in ``msg``, so a training run is never stopped by one).
    ``abstention``: a value cell left blank or N/A (:func:`abstains`) is not counted in item
    precision's denominator, so saying nothing costs less than a wrong guess (recall and the
    row metrics are unchanged; WideSearch's metric, the default, counts it as a wrong item)."""
    try:
        return _score(response, task, limits or LIMITS, abstention)
    except Exception as e:  # noqa: BLE001 - the reward must not stop a run; the message names the defect
        return _zero(task, f"internal scorer error: {type(e).__name__}: {e}"[:300])


def _score(response, task: Task, lim: AnswerLimits, abstention: bool = False) -> Scores:
    if not isinstance(response, str):
        return _zero(task, "response is not a string")
    if len(response) > lim.max_chars:
        return _zero(task, f"answer longer than {lim.max_chars:,} characters")
    ev = task.evaluation
    required = [norm_header(c) for c in ev.required]
    keys = [norm_header(c) for c in ev.unique_columns if norm_header(c) in required] or required[:1]
    prep = _prepared(task, required, keys)
    single = task.kind == "deep"
    raw, why = _answer_rows(response, prep, single, len(required) == 1 and len(task.gold.rows) == 1)
    if raw is None:
        return _zero(task, why)
    if len(raw) > lim.max_rows or len(raw) * len(required) > lim.max_cells:
        return _zero(task, f"answer table over the limits ({lim.max_rows:,} rows, {lim.max_cells:,} cells)")
    rows = _distinct(raw)
    order = _date_order(prep, rows)
    mode = "strict-abstain" if abstention else "strict"
    common = dict(instance_id=task.instance_id, mode=mode, judge=_judge_kind(prep), abstention=abstention)
    if single and len(rows) > 1:
        return _worst_candidate(prep, rows, order, common)
    tp_row, tp_item, matched = prep.tally(rows, order)
    return Scores.from_counts(
        tp_row, tp_item, len(rows), prep.n_gold, len(required), matched_rows=matched,
        abstained=_abstained(prep, rows), msg="" if rows else "the table has no rows", **common,
    )  # fmt: skip


_NOTHING = frozenset({"", "n/a", "na", "-", "--", "—", "–"})


def abstains(cell: str) -> bool:
    """Whether a cell states nothing: blank, N/A (any case, with dots or spaces) or a dash."""
    return "".join(clean_cell(cell).split()).casefold().replace(".", "") in _NOTHING


def _abstained(prep: _Prepared, rows: list[tuple[str, ...]]) -> int:
    """Value (non-key) cells of ``rows`` that state nothing; a key always states a row."""
    keys = set(prep.key_at)
    value_at = [j for j in range(len(prep.required)) if j not in keys]
    return sum(1 for r in rows for j in value_at if abstains(r[j]))


def _date_order(prep: _Prepared, rows: list[tuple[str, ...]]) -> DateOrder:
    """The day/month order of the answer's all-numeric dates, read from its date columns."""
    if not prep.date_at:
        return "mdy"
    return date_order("\n".join(r[j] for r in rows for j in prep.date_at))


def _worst_candidate(prep: _Prepared, rows, order: DateOrder, common: dict) -> Scores:
    """A single-answer task answered with several candidates: the worst candidate alone."""
    worst = None
    for r in rows:
        tp_row, tp_item, matched = prep.tally([r], order)
        s = Scores.from_counts(tp_row, tp_item, 1, prep.n_gold, len(prep.required), matched_rows=matched,
                               abstained=_abstained(prep, [r]), **common)  # fmt: skip
        if worst is None or s.f1_by_item < worst.f1_by_item:
            worst = s
    msg = f"{len(rows)} candidates for a single-answer task: scored as the worst of them"
    return worst.model_copy(update={"predicted_rows": len(rows), "msg": msg})


def _judge_kind(prep: _Prepared) -> str:
    return "fallback" if any("llm_judge" in col.metrics for col in prep.columns.values()) else "none"


_LISTED = re.compile(r"\s*(?:[;|/,]|\bor\b)\s*", re.I)


def _alternatives(gold: str) -> frozenset[str]:
    """The normalised gold and each value it lists, for ``in_match``."""
    parts = [gold, *_LISTED.split(gold)]
    return frozenset(n for n in map(strict_norm, parts) if n)
