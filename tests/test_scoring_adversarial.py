"""The strict reward attacked: generated answers that try to earn more than their content
deserves (hedged rows and cells, the web's own decoy names, other names of the world, values
stated twice), and honest answers whose formatting must not cost credit.

Tasks come from a generated world, so every rule is tried on every kind of column the task
generator makes; each test draws many cases from a seeded generator.
"""

from __future__ import annotations

import datetime as dt
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples
from rapidfuzz import fuzz, process
from scoring_helpers import FULL_ROWS, full_task, make_task, table

from fictionworld.scoring import reward, score
from fictionworld.scoring.cells import name_forms, names_match, read_date, read_number
from fictionworld.surface import format_date
from fictionworld.tasks.generate import generate_tasks
from fictionworld.web.perturb import confusable_name

FULL_HEAD = ["Company", "Employees", "Founded", "Website", "Industry"]
SEPARATORS = [" or ", ", ", "; ", " / ", "<br>", " and ", " (or ", " vs ", " "]


@pytest.fixture(scope="module")
def deep(world):
    return [t for t in generate_tasks(world, 30, kind="deep", seed=5)]


@pytest.fixture(scope="module")
def wide(world):
    return generate_tasks(world, 30, kind="wide", seed=5)


@pytest.fixture(scope="module")
def names_by_type(world):
    e = world.entities
    out: dict[str, list[str]] = {}
    for i, n in enumerate(e.name.tolist()):
        out.setdefault(e.type_of(i), []).append(n)
    return out


def _type_of(world, task, g: int) -> str:
    return world.entity(task.provenance[g].entity).type


def _answer(task, rows) -> str:
    return table(task.headers, rows)


def _with_cell(task, j: int, g: int, value: str) -> str:
    rows = [list(r) for r in task.gold.rows]
    rows[g][j] = value
    return _answer(task, rows)


def _hedge(r: random.Random, values: list[str]) -> str:
    vals = list(values)
    r.shuffle(vals)
    sep = r.choice(SEPARATORS)
    text = sep.join(vals)
    return text + ")" if sep == " (or " else text


# -- 1. hedging on single-answer tasks --------------------------------------------------------
def test_several_candidates_earn_no_more_than_the_worst(world, deep, names_by_type):
    r = random.Random(1)
    cases = 0
    for task in deep:
        gold = task.gold.rows[0][0]
        assert score(_answer(task, [[gold]]), task).score == 1.0
        pool = [n for n in names_by_type[_type_of(world, task, 0)] if n != gold]
        for _ in range(15):
            wrong = r.sample(pool, r.randint(1, 4))
            rows = [[x] for x in [gold, *wrong]]
            r.shuffle(rows)
            s = score(_answer(task, rows), task)
            assert s.f1_by_item == 0.0 and s.f1_by_row == 0.0 and reward(s) == 0.0, (rows, s)
            assert "candidates" in s.msg
            lines = "\n".join(r.sample([gold, *wrong], len(wrong) + 1))
            hedges = [_answer(task, [[_hedge(r, [gold, *wrong])]]), f"<answer>{_hedge(r, [gold, *wrong])}</answer>"]
            for text in [*hedges, f"<answer>{lines}</answer>"]:
                assert reward(score(text, task)) == 0.0, text
            cases += 4
    assert cases >= 1000


def test_the_same_answer_twice_is_not_a_hedge(world, deep):
    for task in deep:
        gold = task.gold.rows[0][0]
        variants = [gold, gold.upper(), f"**{gold}**", *task.aliases.get("answer", [[]])[0]]
        assert score(_answer(task, [[v] for v in variants]), task).score == 1.0


def test_hedging_rows_in_a_one_row_deep_table_with_more_columns():
    task = make_task(["film", "year"], [["Glass River", "1994"]], aliases={"film": [[]]})
    task = task.model_copy(update={"kind": "deep"})
    s = score(table(["Film", "Year"], [["Glass River", "1994"], ["Glass Rivers", "1994"]]), task)
    assert s.f1_by_item == 0.0
    s = score(table(["Film", "Year"], [["Glass River", "1994"], ["Glass River", "1995"]]), task)
    assert s.f1_by_item == pytest.approx(0.5)  # the worst candidate alone: its key is right, its year wrong


# -- 2. decoys and other names of the world ---------------------------------------------------
def _name_columns(task):
    return [j for j, c in enumerate(task.evaluation.required) if c in task.aliases]


def test_the_webs_decoy_names_never_match(world):
    """Every confusable page the web shows names a decoy one edit from a real entity: the
    decoy must not be read as that entity."""
    pages = world.web.pages
    rows = np.flatnonzero(pages.layer == 2)
    assert len(rows) > 300
    e = world.entities
    for p in rows.tolist():
        decoy = pages.titles[p].rsplit(" – ", 1)[0]
        real = int(pages.column("entity", p))
        assert not names_match(decoy, name_forms([e.name[real], *e.aliases[real]])), decoy


def test_decoys_in_answers_score_like_wrong_names(world, wide, deep):
    r = random.Random(2)
    taken = set(world.entities.name.tolist())
    cases = 0
    for task in [*wide, *deep]:
        for j in _name_columns(task):
            for g, row in enumerate(task.gold.rows[:10]):
                decoy = confusable_name(row[j], r, taken)
                if decoy is None:
                    continue
                got = score(_with_cell(task, j, g, decoy), task)
                wrong = score(_with_cell(task, j, g, "Zzyzx Qwv"), task)
                assert got.f1_by_item == pytest.approx(wrong.f1_by_item), (row[j], decoy)
                cases += 1
    assert cases >= 200


def test_distinct_entities_with_near_names_are_never_merged(world):
    names = sorted(set(world.entities.name.tolist()))
    e = world.entities
    forms = {}
    for i, n in enumerate(e.name.tolist()):
        forms.setdefault(n, set()).update(name_forms([n, *e.aliases[i]]))
    pairs = 0
    for n in names[:1500]:
        for other, ratio, _ in process.extract(n, names, scorer=fuzz.ratio, limit=4, score_cutoff=85):
            if other != n:
                assert not names_match(other, frozenset(forms[n])), (other, n, ratio)
                pairs += 1
    assert pairs >= 50


def _accent(s: str) -> str:
    return s.translate(str.maketrans({"e": "é", "a": "à", "o": "ö", "u": "ü"}))


def test_harmless_name_differences_still_match(world, wide):
    r = random.Random(3)
    cases = 0
    for task in wide:
        for j in _name_columns(task):
            kind = _type_of_column(world, task, j)
            for g, row in enumerate(task.gold.rows[:8]):
                name = row[j]
                variants = [
                    name.upper(),
                    name.lower(),
                    _accent(name),
                    "  ".join(name.split()),
                    f"{name} ({kind})",
                    f"{name} ({r.randint(1900, 2020)} {kind})",
                    f"{name}, {kind}",
                    f"_{name}_",
                    f"<b>{name}</b>",
                    f"<i>{name}</i>",
                    f"**{name}**",
                    f"[{name}](https://example.org/x)",
                ]
                for v in variants:
                    assert score(_with_cell(task, j, g, v), task).score == 1.0, (name, v)
                    cases += 1
    assert cases >= 500


def _type_of_column(world, task, j: int) -> str:
    col = task.evaluation.required[j]
    ent = task.provenance[0].entities.get(col)
    return world.entity(ent).type.replace("_", " ") if ent else "entity"


def test_cells_beyond_the_header_are_ignored_not_read_as_candidates():
    """A row longer than its header is trimmed: "| A | B |" under one column answers A, which
    pays exactly what committing to A pays."""
    task = make_task(["answer"], [["Glass River"]]).model_copy(update={"kind": "deep"})
    assert score("| Answer |\n|---|\n| Glass River | Glass Rivers |", task).score == 1.0
    assert score("| Answer |\n|---|\n| Glass Rivers | Glass River |", task).score == 0.0


def test_a_qualifier_naming_something_else_is_a_hedge():
    task = make_task(["company"], [["Acme Corp"]], aliases={"company": [["Acme Corporation"]]})
    assert score(table(["Company"], [["Acme Corp (Acme Corporation)"]]), task).score == 1.0
    for cell in [
        "Acme Corp (Borla Works)",
        "Acme Corp, or Borla Works",
        "Acme Corp – Acmo Corp",
        "Acme Corp (or Acmo)",
    ]:
        assert score(table(["Company"], [[cell]]), task).score == 0.0, cell


def test_ambiguous_aliases_are_not_given_to_tasks(world, wide):
    """An alias two entities share (initials such as "J. Smith") is dropped from tasks."""
    e = world.entities
    from fictionworld.scoring.cells import fold_name

    owners: dict[str, set[int]] = {}
    for i, (n, al) in enumerate(zip(e.name.tolist(), e.aliases.tolist())):
        for x in (n, *al):
            owners.setdefault(fold_name(x), set()).add(i)
    for task in wide:
        for per_row in task.aliases.values():
            for al in per_row:
                for a in al:
                    assert len(owners[fold_name(a)]) == 1, a


# -- 3. hedged values -------------------------------------------------------------------------
def _value_columns(task, metric_pre):
    return [
        j
        for j, c in enumerate(task.evaluation.required)
        if c not in task.evaluation.unique_columns and metric_pre(task.evaluation.eval_pipeline[c])
    ]


def _no_better_than_wrong(task, j: int, g: int, cells: list[str], wrong: str) -> int:
    """Asserts each cell, put in gold row ``g``, column ``j``, scores no more than ``wrong``."""
    ceiling = score(_with_cell(task, j, g, wrong), task).f1_by_item + 1e-12
    for cell in cells:
        assert score(_with_cell(task, j, g, cell), task).f1_by_item <= ceiling, cell
    return len(cells)


def _gold_cells(tasks, kind):
    """(task, column, gold row, gold cell) for the first ten rows of each value column of a kind."""
    for task in tasks:
        for j in _value_columns(task, kind):
            for g, row in enumerate(task.gold.rows[:10]):
                yield task, j, g, row[j]


def _is_number(ev) -> bool:
    return "extract_number" in ev.preprocess


def _is_date(ev) -> bool:
    return "norm_date" in ev.preprocess


def _other_number(r: random.Random, v: float) -> str:
    w = v + r.choice([1, 2, 7, 13, 100]) * r.choice([1, -1]) if abs(v) >= 1 else v + 1
    return str(int(w)) if float(w).is_integer() else f"{w:.2f}"


def test_hedged_numbers_score_like_the_wrong_value(wide):
    r = random.Random(4)
    cases = 0
    for task, j, g, gold in _gold_cells(wide, _is_number):
        other = _other_number(r, read_number(gold))
        forms = [
            _hedge(r, [gold, other]),
            f"{gold} ({other})",
            f"{other} (or {gold})",
            f"{min(gold, other)}–{max(gold, other)}",
            f"between {other} and {gold}",
            f"~{gold}? maybe {other}",
        ]
        cases += _no_better_than_wrong(task, j, g, forms, other)
    assert cases >= 300


def test_one_number_stated_twice_is_one_value():
    for cell in ["1,200 (1.2 thousand)", "1200 employees", "$1,200", "1,200 as of March 2019", "1,200 (as of 2019)"]:
        assert read_number(cell) == 1200.0, cell
    for cell in ["121 747", "121\u202f747", "1,21,747", "121,747"]:  # SI spaces, Indian grouping
        assert read_number(cell) == 121747.0, cell
    for cell in ["14 or 15", "14 (or 28)", "12–15", "1,200 (2019)", "COVID-19: 300"]:
        assert read_number(cell) is None, cell


def _other_date(r: random.Random, d: dt.date) -> dt.date:
    return d + dt.timedelta(days=r.choice([1, 40, 365, 4000]) * r.choice([1, -1]))


def test_hedged_dates_score_like_the_wrong_value(wide):
    r = random.Random(5)
    cases = 0
    for task, j, g, gold in _gold_cells(wide, _is_date):
        d = dt.date.fromisoformat(gold)
        o = _other_date(r, d)
        y = o.year if o.year != d.year else d.year + 1
        forms = [
            _hedge(r, [format_date(d, r.randrange(4)), format_date(o, r.randrange(4))]),
            f"{y} or {format_date(d, 1)}",
            f"{format_date(d, 0)} ({y})",
            f"{format_date(o, 2)} (or {format_date(d, 2)})",
            str(d.year),  # a year never answers a full date
        ]
        if task.evaluation.eval_pipeline[task.evaluation.required[j]].metric == ["exact_match"]:
            forms += [f"{d:%B %Y}", f"{d:%Y-%m}"]  # nor does a month, unless the metric is date_near
        cases += _no_better_than_wrong(task, j, g, forms, o.isoformat())
    assert cases >= 200


def test_inventing_a_day_never_beats_saying_the_month(wide):
    """Under date_near (±31 days) any day of the right month scores, so the month itself must
    too: else the reward would teach a policy to make up days."""
    cases = 0
    for task, j, g, gold in _gold_cells(wide, _is_date):
        d = dt.date.fromisoformat(gold)
        month = score(_with_cell(task, j, g, f"{d:%B %Y}"), task).f1_by_item
        days = [d.replace(day=k) for k in range(1, 29)]
        best_invented = max(score(_with_cell(task, j, g, x.isoformat()), task).f1_by_item for x in days)
        exact = task.evaluation.eval_pipeline[task.evaluation.required[j]].metric == ["exact_match"]
        assert month >= best_invented - 1e-12 or exact, (gold, month, best_invented)
        cases += 1
    assert cases >= 40


def test_date_precision():
    assert read_date("December 1888") == (dt.date(1888, 12, 1), 2)
    assert read_date("9 December 1888 (1888)") == (dt.date(1888, 12, 9), 3)
    assert read_date("1900 or 9 December 1888") is None
    month = make_task(
        ["k", "d"], [["a", "1888-12"]], pipeline={"d": {"preprocess": ["norm_date"], "metric": ["exact_match"]}}
    )
    assert score(table(["k", "d"], [["a", "December 1888"]]), month).score == 1.0  # the task asked for a month
    assert score(table(["k", "d"], [["a", "9 December 1888"]]), month).score == 1.0
    assert score(table(["k", "d"], [["a", "1888"]]), month).score == 0.0


# -- 4. honest formatting keeps its credit -------------------------------------------------------
def test_numeric_dates_follow_the_answers_own_order():
    rows = [["a", "1888-12-09"], ["b", "1901-03-25"], ["c", "1950-07-04"]]
    task = make_task(["k", "d"], rows, pipeline={"d": {"preprocess": ["norm_date"], "metric": ["exact_match"]}})
    dmy = [["a", "09/12/1888"], ["b", "25/03/1901"], ["c", "04/07/1950"]]
    mdy = [["a", "12/09/1888"], ["b", "03/25/1901"], ["c", "07/04/1950"]]
    assert score(table(["k", "d"], dmy), task).score == 1.0
    assert score(table(["k", "d"], mdy), task).score == 1.0
    mixed = [["a", "09/12/1888"], ["b", "25/03/1901"], ["c", "07/04/1950"]]  # "c" written month-first
    assert score(table(["k", "d"], mixed), task).recall_by_row == pytest.approx(2 / 3)
    alone = make_task(["k", "d"], rows[:1], pipeline={"d": {"preprocess": ["norm_date"], "metric": ["exact_match"]}})
    assert score(table(["k", "d"], [["a", "12/09/1888"]]), alone).score == 1.0  # nothing to go by: month-first


def test_prose_around_the_table_costs_nothing(wide):
    r = random.Random(6)
    for task in wide:
        body = table(task.headers, task.gold.rows, fence=False).splitlines()
        prose_header = "Here is the table I compiled: " + body[0]
        variants = [
            "\n".join([prose_header, *body[1:]]),
            "\n".join(["Sources: page A | page B were used.", *body]),
            "\n".join(["I searched | opened 40 pages.", "", *body, "", "| note | n |", "|---|---|", "| x | 1 |"]),
        ]
        k = r.randint(1, max(1, len(task.gold.rows) - 1))
        first = table(task.headers, task.gold.rows[:k])
        second = table(task.headers, task.gold.rows[k:])
        variants.append(f"{first}\n\n(continued)\n\n{second}")
        for v in variants:
            assert score(v, task).score == 1.0, v


def test_a_revised_table_replaces_its_draft(wide):
    for task in wide:
        draft = [list(x) for x in task.gold.rows]
        draft[0][-1] = "unknown"
        draft.append(["Zzyzx Qwv", *draft[0][1:]])
        assert score(table(task.headers, draft) + "\nLet me fix that:\n" + task.answer, task).score == 1.0


def test_gold_answers_score_one_on_every_task(wide, deep):
    for task in [*wide, *deep]:
        assert score(task.answer, task).score == 1.0, task.instance_id


# -- any column, any hedge: hypothesis ----------------------------------------------------------
@settings(max_examples=examples(400))
@given(
    row=st.integers(0, 2),
    col=st.integers(1, 4),
    other=st.integers(0, 2),
    sep=st.sampled_from(SEPARATORS),
    gold_first=st.booleans(),
)
def test_a_hedged_cell_never_beats_its_wrong_half(row, col, other, sep, gold_first):
    """Every metric kind (number, date, URL, judged category): "gold <sep> wrong" scores no more
    than "wrong" alone."""
    task = full_task()
    gold = FULL_ROWS[row][col]
    wrong = (
        FULL_ROWS[other][col] if other != row else {1: "7", 2: "1999-09-09", 3: "https://z.example", 4: "mining"}[col]
    )
    hedge = sep.join([gold, wrong] if gold_first else [wrong, gold]) + (")" if sep == " (or " else "")

    def with_cell(v):
        rows = [list(x) for x in FULL_ROWS]
        rows[row][col] = v
        return table(FULL_HEAD, rows)

    assert score(with_cell(hedge), task).f1_by_item <= score(with_cell(wrong), task).f1_by_item + 1e-12, hedge


# -- found by an adversarial review ---------------------------------------------------------------
def test_digits_that_are_not_decimal_never_raise():
    pipe = {"n": {"preprocess": ["extract_number"], "metric": ["number_near"], "criterion": 0.0}}
    task = make_task(["k", "n"], [["a", "579"]], pipeline=pipe)
    for cell in ["579¹", "579²", "①①", "１１²", "５７９"]:
        s = score(table(["k", "n"], [["a", cell]]), task)
        assert "internal" not in s.msg and 0 <= s.f1_by_item <= 1, cell
    assert score(table(["k", "n"], [["a", "579¹"]]), task).score == 1.0  # a footnote mark
    assert score(table(["k", "n"], [["a", "５７９"]]), task).score == 1.0  # fullwidth digits


def test_pathological_markup_reads_as_blank_or_text():
    task = make_task(["k", "n"], [["a", "1"]])
    for junk in [" _a" * 32000, "<a href=x>" * 3000, "[" * 50_000, "~~" * 20_000, "as of " * 10_000]:
        s = score(table(["k", "n"], [["a", junk]]), task)
        assert s.recall_by_row == 0 and s.matched_rows == 1  # the key matched, the huge cell is blank
        s = score(table([f"k {junk}", "n"], [["a", "1"]]) + "\n\n" + table(["k", "n"], [["a", "1"]]), task)
        assert s.score == 1.0


def test_a_corrected_single_answer_scores_the_correction(world, deep, names_by_type):
    for task in deep[:10]:
        gold = task.gold.rows[0][0]
        other = next(n for n in names_by_type[_type_of(world, task, 0)] if n != gold)
        text = _answer(task, [[other]]) + "\n\nWait, that is wrong. Corrected:\n\n" + _answer(task, [[gold]])
        assert score(text, task).score == 1.0
        text = _answer(task, [[gold]]) + "\n\nOn second thought:\n\n" + _answer(task, [[other]])
        assert score(text, task).score == 0.0


def test_headers_in_compatibility_forms(wide):
    task = next(t for t in wide if any("²" in h for h in t.headers))
    for sub in ["2", "^2", "<sup>2</sup>"]:
        headers = [h.replace("²", sub) for h in task.headers]
        assert score(table(headers, task.gold.rows), task).score == 1.0, sub


def test_citation_marks_and_markdown_escapes_cost_nothing(wide):
    r = random.Random(7)
    for task in wide[:15]:
        rows = [[f"{c}{r.choice([' [1]', '[^2]', ' 【3】', '<sup>4</sup>'])}" for c in row] for row in task.gold.rows]
        assert score(table(task.headers, rows), task).score == 1.0
        escaped = [[c.replace("-", "\\-").replace(".", "\\.") for c in row] for row in task.gold.rows]
        assert score(table(task.headers, escaped), task).score == 1.0


def test_a_draft_with_keys_spelled_otherwise_is_still_a_draft(world, wide):
    for task in wide[:10]:
        j = task.evaluation.required.index(task.evaluation.unique_columns[0])
        kind = _type_of_column(world, task, j)
        draft = [list(x) for x in task.gold.rows]
        for row in draft:
            row[j] = f"{row[j]} ({kind})"
            row[-1] = "unknown"
        assert score(table(task.headers, draft) + "\nFixed:\n" + task.answer, task).score == 1.0


def test_answer_tags_read_the_last_complete_one():
    task = make_task(["answer"], [["Acme Corp"]], aliases={"answer": [[]]}).model_copy(update={"kind": "deep"})
    assert score("<answer>Borla</answer> no wait <ANSWER>Acme Corp</Answer>", task).score == 1.0
    assert score("<answer>Acme Corp</answer> no wait <answer>Borla</answer>", task).score == 0.0
    assert score("<answer>" * 100_000, task).score == 0.0  # unclosed tags: read once, not rescanned
