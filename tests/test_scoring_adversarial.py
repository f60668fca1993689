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


def test_headers_in_compatibility_forms(world, wide):
    from fictionworld.tasks import TaskKnobs

    # areas are guessable in the session's small world (few regions): drawn without that bound
    loose = generate_tasks(world, 30, kind="wide", seed=5, knobs=TaskKnobs(guess_gain=1.0))
    task = next(t for t in [*wide, *loose] if any("²" in h for h in t.headers))
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


# -- base rates and abstention (issue 74) -------------------------------------------------------
# A policy can write each column's most common value instead of reading. The task generator keeps
# columns a base rate answers out of tasks (fictionworld.tasks.guess); the abstention option lets
# a blank or N/A cell cost less than a wrong guess. Both are attacked here with generated answers.
_GUESS_PRESETS = ("tiny", "small")  # the presets the session world holds; bigger ones: tests marked big


@pytest.fixture(scope="module")
def by_preset(world):
    from fictionworld.tasks.presets import PRESETS

    return {p: generate_tasks(world, 105, seed=11, knobs=PRESETS[p]) for p in _GUESS_PRESETS}


def _column_kind(task, j: int) -> tuple:
    c = task.graph_query.columns[j]
    return (task.graph_query.type, c.path, c.attribute, c.aggregate, c.of_type, c.format)


class _Modes:
    """Each column kind's most common gold text over every entity of the row type (the world's
    base rate, counted here without the task generator's code), and over the rows of other tasks
    of a set (what a policy trained on the set would learn as a base rate: never the task's own
    rows, nor values of the same entities, which would be recalling answers, not guessing)."""

    def __init__(self, world, tasks):
        from fictionworld.tables import TYPE_CODE
        from fictionworld.tasks.query import GraphIndex

        self.world, self.g, self.codes, self.cache = world, GraphIndex(world), TYPE_CODE, {}
        self.cells: dict[tuple, list[tuple[str, str]]] = {}
        for t in tasks:
            for j in range(len(t.gold.columns)):
                cells = self.cells.setdefault(_column_kind(t, j), [])
                cells += [(p.entity, r[j]) for p, r in zip(t.provenance, t.gold.rows)]

    def world_mode(self, task, j: int) -> str:
        from collections import Counter

        k = _column_kind(task, j)
        if k not in self.cache:
            c = task.graph_query.columns[j]
            if c.aggregate == "rank":
                self.cache[k] = "1"
            else:
                rows = np.flatnonzero(self.world.entities.type_code == self.codes[k[0]]).astype(np.int64)
                texts = Counter(x.text for x in self.g.column(rows, c) if x is not None)
                self.cache[k] = min(texts.items(), key=lambda kv: (-kv[1], kv[0]))[0] if texts else ""
        return self.cache[k]

    def learnt_mode(self, task, j: int) -> str:
        from collections import Counter

        mine = {p.entity for p in task.provenance}
        others = Counter(v for e, v in self.cells[_column_kind(task, j)] if e not in mine)
        return min(others.items(), key=lambda kv: (-kv[1], kv[0]))[0] if others else ""

    def question_mode(self, task, j: int) -> str:
        """What a policy that reads the question's pattern answers: for a column through an entity
        on a condition's path ("companies headquartered in a city in T": T's largest city), or one
        whose rows are mostly one value ("people born in Z": Z's country), the commonest value of
        the rows the question selects (counted here, not with the generator's rule); else the
        world's."""
        from collections import Counter

        c, conds = task.graph_query.columns[j], list(task.graph_query.conditions)
        paths = set()
        while conds:
            x = conds.pop()
            conds += list(x.any_of)
            paths |= {x.path[:n] for n in range(1, len(x.path) + 1)}
        own = Counter(r[j] for r in task.gold.rows)
        top, n = min(own.items(), key=lambda kv: (-kv[1], kv[0]))
        rows = len(task.gold.rows)
        if c.aggregate is None and (any(c.path[: len(p)] == p for p in paths) or (rows >= 10 and n >= rows / 2)):
            return top
        return self.world_mode(task, j)


def _fill(task, rows, values: list[str]) -> list[list[str]]:
    """``rows`` with every value (non-key) cell of column ``j`` replaced by ``values[j]``."""
    keys = {task.gold.columns.index(k) for k in task.evaluation.unique_columns}
    return [[c if j in keys else values[j] for j, c in enumerate(r)] for r in rows]


def _each(task, value) -> list[str]:
    return [value(task, j) for j in range(len(task.gold.columns))]


def _guessing_pays_little(world, preset: str, tasks) -> None:
    """Every key plus each column's most common value (the world's, the task generator's best
    guess, the one learnt from the other tasks, or the one the question's pattern predicts)
    earns on average no more than the keys alone + 0.02 item F1, in every family of ``tasks``."""
    from collections import defaultdict

    from fictionworld.tasks.wide import WideTaskGenerator

    modes, rates = _Modes(world, tasks), WideTaskGenerator(world).base_rates
    per: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for t in tasks:
        ev, q = t.evaluation.eval_pipeline, t.graph_query
        best = [rates.guess(q.type, q.columns[j], ev[c]).text for j, c in enumerate(t.gold.columns)]
        d = per[t.family]
        for how, values in (("keys", [""] * len(best)), ("world", _each(t, modes.world_mode)),
                            ("learnt", _each(t, modes.learnt_mode)), ("best", best),
                            ("question", _each(t, modes.question_mode))):  # fmt: skip
            d[how].append(score(_answer(t, _fill(t, t.gold.rows, values)), t).f1_by_item)
    for fam, d in per.items():
        keys = float(np.mean(d["keys"]))
        for how in ("world", "learnt", "best", "question"):
            assert float(np.mean(d[how])) <= keys + 0.02, (preset, fam, how, np.mean(d[how]), keys)


def test_keys_and_base_rate_guesses_earn_at_most_keys_plus_002_in_every_family_and_preset(world, by_preset):
    """Acceptance (issue 74), on the presets the session world holds (bigger ones: below)."""
    for preset, tasks in by_preset.items():
        assert len({t.family for t in tasks}) >= 5, (preset, sorted({t.family for t in tasks}))
        _guessing_pays_little(world, preset, tasks)


@pytest.mark.big
@pytest.mark.parametrize("preset", ["medium", "widesearch"])
def test_keys_and_guesses_earn_at_most_keys_plus_002_at_scale(preset):
    """Acceptance (issue 74) at the bigger presets, on a world of the size each is made for,
    with 8 tasks of every family the world holds there (a via task's columns through the cities
    of a named country, an aggregate's counts: guessable from the question, not from the row
    type's base rate)."""
    import fictionworld as fw
    from fictionworld.tasks.families import WIDE_FAMILIES
    from fictionworld.tasks.generate import TaskGenerationError
    from fictionworld.tasks.presets import WORLD_ENTITIES, preset_knobs

    big = fw.generate(seed=1, entities=WORLD_ENTITIES[preset])
    tasks, missing = [], []
    for fam in WIDE_FAMILIES:
        try:
            tasks += generate_tasks(big, 8, seed=3, knobs=preset_knobs(preset, families=(fam,)))
        except TaskGenerationError:  # the world holds too few groups of this family at this width
            missing.append(fam)
    # aggregate: the types whose counts spread (cities, universities, awards) have too few value
    # columns a base rate misses to fill a table within the default guess_gain (it comes from
    # 0.025 at widesearch); the other six families come at both presets
    assert set(missing) <= {"aggregate"} and len({t.family for t in tasks}) == len(WIDE_FAMILIES) - len(missing)
    _guessing_pays_little(big, preset, tasks)


def _paid(task, j: int, guess: str) -> float:
    """The items ``guess`` earns written in every cell of column ``j`` (the others gold)."""
    n, c = len(task.gold.rows), len(task.gold.columns)
    rows = [[guess if k == j else x for k, x in enumerate(r)] for r in task.gold.rows]
    return score(_answer(task, rows), task).recall_by_item * n * c - n * (c - 1)


def test_the_recorded_guessability_is_what_the_scorer_pays(world, by_preset):
    """A task's guessability of a column is the share of its cells a fixed guess answers under
    the strict scorer: the base-rate guess's, or where the question predicts more (a column
    through an entity on a condition's path, a count of the group, a column mostly one value)
    the best single answer's on the task's cells: that guess written in that column alone earns
    exactly those items, and guess_gain is the item F1 that keys + every guess earn over the
    keys alone."""
    from fictionworld.tasks.guess import best_answer
    from fictionworld.tasks.query import GraphIndex, evaluate
    from fictionworld.tasks.wide import WideTaskGenerator

    checked, rates, g = 0, WideTaskGenerator(world).base_rates, GraphIndex(world)
    for tasks in by_preset.values():
        for t in tasks:
            n, c = len(t.gold.rows), len(t.gold.columns)
            ev, q = t.evaluation.eval_pipeline, t.graph_query
            assert set(t.guessability) == set(t.gold.columns) - set(t.evaluation.unique_columns)
            ans = evaluate(world, q, g)
            for j, name in enumerate(t.gold.columns):
                if name not in t.guessability:
                    continue
                col = q.columns[j]
                base = _paid(t, j, rates.guess(q.type, col, ev[name]).text if col.aggregate != "rank" else "1")
                if col.aggregate != "rank":  # the type's commonest value, and a ranking's extreme
                    base = max(base, _paid(t, j, _texts(g, t, j, "mode")))
                    if q.order is not None and (col.path, col.attribute) == (q.order.path, q.order.attribute):
                        base = max(base, _paid(t, j, _texts(g, t, j, "max" if q.order.descending else "min")))
                best = _paid(t, j, best_answer(col, ev[name], [r[j] for r in ans.cells]).text)
                want, tol = t.guessability[name] * n, 1e-5 * n
                assert base <= best + tol and base <= want + tol, (t.instance_id, name)
                assert want == pytest.approx(base, abs=tol) or want == pytest.approx(best, abs=tol), (
                    t.instance_id,
                    name,
                )
                checked += 1
            keys_only = score(_answer(t, _fill(t, t.gold.rows, [""] * c)), t).f1_by_item
            assert t.difficulty["guess_gain"] == pytest.approx(sum(t.guessability.values()) / c, abs=1e-5)
            assert keys_only == pytest.approx(1 / c)
    assert checked >= 50


def _texts(g, task, j: int, which: str) -> str:
    """A value column's commonest text over the row type (``mode``; ties: the smallest number,
    else the first text), or its ``max`` or ``min`` as a number, written as the gold writes it
    (counted here, not with tasks.guess)."""
    from collections import Counter

    from fictionworld.tables import TYPE_CODE

    def key(text: str):
        try:
            return (0, float(text), "")
        except ValueError:
            return (1, 0.0, text)

    q = task.graph_query
    rows = np.flatnonzero(g.world.entities.type_code == TYPE_CODE[q.type]).astype(np.int64)
    texts = [x.text for x in g.column(rows, q.columns[j]) if x is not None]
    if which == "mode":
        counts = Counter(texts)
        top = max(counts.values())
        return min((x for x, k in counts.items() if k == top), key=key)
    numbers = [x for x in texts if key(x)[0] == 0] or texts
    return (max if which == "max" else min)(numbers, key=key)


def _read(task, r: random.Random, share: float) -> set[int]:
    n = len(task.gold.rows)
    return set(r.sample(range(n), max(1, round(share * n))))


def test_filling_unread_rows_with_base_rates_never_beats_the_read_rows(world, by_preset):
    """Acceptance (issue 74), with the abstention reward: an agent that read a quarter of the
    rows and fills the others' values with the most common ones earns on average no more, in any
    family of any preset, than one that reports the rows it read (and the others' keys with N/A)."""
    from collections import defaultdict

    r = random.Random(74)
    for preset, tasks in by_preset.items():
        modes = _Modes(world, tasks)
        per: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for t in tasks:
            read = _read(t, r, 0.25)
            gold = t.gold.rows
            only_read = [list(x) for i, x in enumerate(gold) if i in read]
            honest = [list(x) if i in read else _fill(t, [x], ["N/A"] * len(x))[0] for i, x in enumerate(gold)]
            best_honest = max(score(_answer(t, rows), t, abstention=True).f1_by_item for rows in (only_read, honest))
            for mode in (modes.world_mode, modes.learnt_mode):
                values = _each(t, mode)
                filled = [list(x) if i in read else _fill(t, [x], values)[0] for i, x in enumerate(gold)]
                per[t.family].append((score(_answer(t, filled), t, abstention=True).f1_by_item, best_honest))
        for fam, pairs in per.items():
            fill, honest = np.mean([a for a, _ in pairs]), np.mean([b for _, b in pairs])
            assert fill <= honest, (preset, fam, fill, honest)


@settings(max_examples=examples(300))
@given(data=st.data())
def test_abstaining_never_pays_more_than_answering_what_was_read(wide, data):
    """With abstention: for any cells an agent has read, writing them (gold) with N/A elsewhere
    scores at least as much as abstaining on some of them too: on everything, or on all but the
    easy cells (the most guessable columns). Abstention scores at least the default, at most 1,
    equal to it without blank cells; wrong rows still cost, and N/A keys name no row."""
    task = data.draw(st.sampled_from(wide))
    n, c = len(task.gold.rows), len(task.gold.columns)
    keys = {task.gold.columns.index(k) for k in task.evaluation.unique_columns}
    value_at = [j for j in range(c) if j not in keys]
    known = {(i, j) for i in range(n) for j in value_at if data.draw(st.booleans(), label=f"read {i},{j}")}
    blank = data.draw(st.sampled_from(["N/A", "", "n/a", "-", "NA", "**N/A**"]))

    def answer(cells: set) -> str:
        return _answer(task, [[g if j in keys or (i, j) in cells else blank for j, g in enumerate(row)]
                              for i, row in enumerate(task.gold.rows)])  # fmt: skip

    honest = score(answer(known), task, abstention=True)
    everything = score(answer(set()), task, abstention=True)
    easy = sorted(value_at, key=lambda j: -task.guessability.get(task.gold.columns[j], 0.0))[:1]
    cherry = score(answer({(i, j) for (i, j) in known if j in easy}), task, abstention=True)
    fewer = data.draw(st.sets(st.sampled_from(sorted(known)), max_size=len(known))) if known else set()
    some = score(answer(known - fewer), task, abstention=True)
    for other in (everything, cherry, some):
        assert other.f1_by_item <= honest.f1_by_item + 1e-12
    default = score(answer(known), task)
    assert default.f1_by_item <= honest.f1_by_item <= 1.0 and honest.recall_by_item == default.recall_by_item
    assert honest.abstained_items == n * len(value_at) - len(known)
    full = score(task.answer, task, abstention=True)
    assert full.score == 1.0 and full.f1_by_item == score(task.answer, task).f1_by_item == 1.0
    # A wrong row with nothing but N/A values still costs; a row keyed N/A is a wrong row.
    extra = [["Zzyzx Qwv" if j in keys else "N/A" for j in range(c)], ["N/A"] * c]
    padded = score(_answer(task, [*task.gold.rows, *extra]), task, abstention=True)
    assert padded.precision_by_item < 1.0 and padded.precision_by_row < 1.0


def test_a_hedge_or_a_guess_beside_na_is_not_abstention(wide):
    """Only a cell that states nothing abstains: "N/A (maybe 0)" or "unknown, 3" claim a value and
    count as predicted items, so they never score above a wrong value."""
    from fictionworld.scoring.strict import abstains

    assert all(abstains(x) for x in ("", " ", "N/A", "n/a", "N.A.", "NA", "-", "—", "*N/A*", "<b>n/a</b>"))
    assert not any(abstains(x) for x in ("0", "N/A (maybe 0)", "none: 3", "NaN 3", "unknown, 3", "Nan"))
    task = next(t for t in wide if any(ev.metric == ["number_near"] for ev in t.evaluation.eval_pipeline.values()))
    j = next(j for j, c in enumerate(task.gold.columns) if task.evaluation.eval_pipeline[c].metric == ["number_near"])
    wrong = _with_cell(task, j, 0, "0" if task.gold.rows[0][j] != "0" else "1")
    hedge = _with_cell(task, j, 0, "N/A (maybe 0)" if task.gold.rows[0][j] != "0" else "N/A (maybe 1)")
    na = _with_cell(task, j, 0, "N/A")
    s_wrong, s_hedge, s_na = (score(x, task, abstention=True) for x in (wrong, hedge, na))
    assert s_hedge.f1_by_item <= s_wrong.f1_by_item + 1e-12 < s_na.f1_by_item
    assert s_na.abstained_items == 1 and s_hedge.abstained_items == 0
    assert score(na, task, mode="strict-abstain").f1_by_item == s_na.f1_by_item
