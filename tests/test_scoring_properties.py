"""Scorer properties over generated answers (hypothesis)."""

import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import examples
from scoring_helpers import FULL_ROWS, full_task, table

from fictionworld.scoring import METRIC_NAMES, score

HEAD = ["Company", "Employees", "Founded", "Website", "Industry"]
TASK = full_task()
FRAGMENTS = [
    "|",
    "| ",
    " |",
    "---",
    "\n",
    "```markdown\n",
    "```",
    "**",
    '"',
    "\\|",
    "Acme Corp",
    "1200",
    "1987-03-14",
    "https://www.acme.example",
    "robotics",
    "Company",
    "Employees",
    "Founded",
    "Website",
    "Industry",
    "%",
    "<answer>",
    "</answer>",
    "nan",
    "N/A",
    "1,2",
    "-",
    ":",
    "\t",
    "é",
    "†",
]
tableish = st.lists(st.sampled_from(FRAGMENTS), max_size=60).map("".join)
anything = st.one_of(st.text(max_size=300), tableish)
cell = st.one_of(
    st.sampled_from([c for r in FULL_ROWS for c in r]),
    st.text(string.ascii_letters + string.digits + string.punctuation.replace("|", "") + " ", max_size=12),
)


def in_unit(s):
    return all(0.0 <= getattr(s, m) <= 1.0 for m in METRIC_NAMES)


@settings(max_examples=examples(10_000), suppress_health_check=list(HealthCheck))
@given(anything)
def test_strict_never_raises_and_stays_in_unit_interval(text):
    assert in_unit(score(text, TASK))


@settings(max_examples=examples(1_500), suppress_health_check=list(HealthCheck))
@given(anything)
def test_compat_never_raises(text):
    s = score(text, TASK, mode="compat")
    assert s.mode == "compat"


answers = st.lists(st.lists(cell, min_size=5, max_size=5), max_size=6).map(lambda extra: [*FULL_ROWS, *extra])


@settings(max_examples=examples(300))
@given(answers, st.randoms(use_true_random=False))
def test_shuffling_rows_or_columns_changes_nothing(rows, rnd):
    base = score(table(HEAD, rows), TASK)
    rows2 = list(rows)
    rnd.shuffle(rows2)
    order = list(range(5))
    rnd.shuffle(order)
    shuffled = score(table([HEAD[i] for i in order], [[r[i] for i in order] for r in rows2]), TASK)
    # one-to-one matching goes in answer order, so shuffling may change which copy of a
    # repeated key counts; without repeated keys nothing may change
    keys = [r[0].strip().lower() for r in rows]
    if len(set(keys)) == len(keys):
        assert base.metrics() == shuffled.metrics()


@settings(max_examples=examples(300))
@given(st.lists(st.sampled_from(range(3)), max_size=3, unique=True), st.randoms(use_true_random=False))
def test_perfect_subsets_shuffled(keep, rnd):
    rows = [FULL_ROWS[i] for i in keep]
    rnd.shuffle(rows)
    s = score(table(HEAD, rows), TASK)
    assert s.precision_by_row == (1.0 if rows else 0.0) and abs(s.recall_by_row - len(rows) / 3) < 1e-12


@settings(max_examples=examples(300))
@given(answers, st.lists(cell, min_size=5, max_size=5))
def test_a_wrong_row_lowers_precision_only(rows, wrong):
    wrong = ["Nobody Ltd " + wrong[0], *wrong[1:]]
    base = score(table(HEAD, rows), TASK)
    more = score(table(HEAD, [*rows, wrong]), TASK)
    assert more.recall_by_row == base.recall_by_row and more.recall_by_item == base.recall_by_item
    assert more.precision_by_row <= base.precision_by_row and more.precision_by_item <= base.precision_by_item


@settings(max_examples=examples(300))
@given(answers, st.data())
def test_duplicates_and_near_duplicates_never_raise_a_score(rows, data):
    base = score(table(HEAD, rows), TASK)
    i = data.draw(st.integers(0, len(rows) - 1))
    dup = list(rows[i])
    variant = data.draw(
        st.sampled_from(
            [lambda k: k, str.upper, str.lower, lambda k: "  " + k.replace(" ", "  "), lambda k: f"**{k}**"]
        )
    )
    dup[0] = variant(dup[0])
    if data.draw(st.booleans()):
        dup[1] = data.draw(cell)
    pos = data.draw(st.integers(0, len(rows)))
    worse = score(table(HEAD, [*rows[:pos], dup, *rows[pos:]]), TASK)
    if pos > i:  # a copy after the original never changes which row matched
        for m in METRIC_NAMES:
            assert getattr(worse, m) <= getattr(base, m) + 1e-12, m
    assert worse.recall_by_row <= base.recall_by_row + 1e-12 or pos <= i
