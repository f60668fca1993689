"""Scorer properties over generated answers (hypothesis)."""

import datetime as dt
import string

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from profiles import examples
from scoring_helpers import FULL_ROWS, full_task, make_task, table

from fictionworld.scoring import METRIC_NAMES, score
from fictionworld.scoring.cells import read_date, read_number

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


# -- issue 74: what is read as the answer, and honest forms of numbers and dates ------------
DEEP = make_task(["answer"], [["Acme Corp"]], aliases={"answer": [["Acme Corporation"]]}).model_copy(
    update={"kind": "deep"}
)
NAMES = ["Acme Corp", "Acme Corporation", "Borla Works", "Cindra AG", "Acme Corp or Borla Works"]
NOTES = "| source | note |\n|---|---|\n| page 1 | Acme Corp, founded 1987 |"
PROSE = ["", "Let me check.", "For example:", NOTES, "Template:\n| Answer |", "Hope this helps."]


def _form(kind: int, name: str) -> str:
    return [
        table(["Answer"], [[name]]),
        table(["Answer"], [[name]], fence=False),
        f"Answer: {name}",
        f"**Final answer:** {name}",
        f"<answer>{name}</answer>",
        f"<answer>\n{table(['Answer'], [[name]])}\n</answer>",
    ][kind]


@settings(max_examples=examples(600))
@given(st.lists(st.tuples(st.integers(0, 5), st.sampled_from(NAMES), st.sampled_from(PROSE)), min_size=1, max_size=4))
def test_a_deep_answer_is_the_one_said_last(parts):
    """However answers, notes, templates and tags are mixed, a single-answer task scores what
    one of the candidates scores alone: the last tag's if there is one, else the last one; so
    writing several never pays more than committing to one."""
    text = "\n\n".join(f"{prose}\n{_form(kind, name)}" for kind, name, prose in parts)
    tags = [p for p in parts if p[0] >= 4]
    decisive = (tags or parts)[-1]
    alone = score(_form(decisive[0], decisive[1]), DEEP)
    got = score(text, DEEP)
    assert got.metrics() == alone.metrics(), (text, got.msg)
    assert got.f1_by_item <= max(score(_form(k, n), DEEP).f1_by_item for k, n, _ in parts)


subsets = st.lists(st.sampled_from(range(3)), unique=True, max_size=3)


@settings(max_examples=examples(400))
@given(
    subsets,
    st.lists(st.sampled_from(range(3)), unique=True, min_size=1, max_size=3),
    st.lists(cell, min_size=5, max_size=5),
    st.sampled_from(["", "Draft:", "(continued)", "For example:"]),
)
def test_two_wide_tables_read_as_one_committed_table(first, second, wrong, prose):
    """Two tables read as the last alone, or as one table of both (a table split in two); a
    table introduced as an example never adds rows. Either way the score is that of one table
    the answer commits to, never a best-of-two."""
    wrong = ["Nobody Ltd " + wrong[0], *wrong[1:]]
    t1 = [list(FULL_ROWS[i]) for i in first] + [wrong]
    t2 = [list(FULL_ROWS[i]) for i in second]
    got = score(f"{prose}\n{table(HEAD, t1)}\n\n{table(HEAD, t2)}", TASK).metrics()
    last, both = score(table(HEAD, t2), TASK).metrics(), score(table(HEAD, [*t1, *t2]), TASK).metrics()
    assert got in (last, both)
    if prose == "For example:":
        assert got == last
    tagged = score(f"{table(HEAD, t1)}\n<answer>\n{table(HEAD, t2)}\n</answer>", TASK).metrics()
    assert tagged == last


def _sci(mantissa: int, power: int, style: int) -> str:
    digits = str(mantissa)
    mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    exp = power + len(digits) - 1
    return [f"{mant}e{exp}", f"{mant}E+{exp}", f"{mant} × 10^{exp}", f"{mant}x10^{exp}"][style]


def _dotted(v: int) -> str:
    return f"{v:,}".replace(",", ".")


@settings(max_examples=examples(1_000))
@given(
    st.integers(1, 9_999),
    st.integers(0, 9),
    st.integers(0, 3),
    st.sampled_from(["", " km^2", " km²", " m^2", " people"]),
)
def test_numbers_in_any_honest_notation_read_as_one_value(mantissa, power, style, unit):
    v = mantissa * 10**power
    forms = [_sci(mantissa, power, style), f"{v:,}", str(v)] + ([_dotted(v)] if v >= 1_000_000 else [])
    for form in forms:
        got = read_number(form + unit)
        assert got is not None and abs(got - v) <= 1e-9 * v, (form + unit, got)


@settings(max_examples=examples(1_000))
@given(
    st.integers(1, 9_999),
    st.integers(0, 9),
    st.integers(1, 9_999),
    st.integers(0, 3),
    st.sampled_from([" or ", " / ", " (", "–", ", ", " to "]),
)
def test_two_numbers_in_any_notation_are_a_hedge(mantissa, power, other, style, sep):
    v, w = mantissa * 10**power, other * 10**power
    assume(abs(v - w) > 1e-6 * max(v, w))
    for a, b in [(_sci(mantissa, power, style), _sci(other, power, style)), (f"{v:,}", f"{w:,}")]:
        for unit in ["", " km^2"]:
            assert read_number(f"{a}{unit}{sep}{b}{unit}") is None, (a, b)
    if min(v, w) >= 1_000_000:
        assert read_number(f"{_dotted(v)}{sep}{_dotted(w)}") is None


dates = st.dates(dt.date(1000, 1, 1), dt.date(2999, 12, 31))
DASHES = ["-", "–", "—", "‑", "−"]


@settings(max_examples=examples(1_000))
@given(dates, dates, st.sampled_from(DASHES), st.sampled_from(["", " (as of {})", ", as of {}", " as of {}"]))
def test_dates_with_any_dash_or_as_of_context_read_as_one_date(d, context_date, dash, context):
    form = f"{d.year:04d}{dash}{d.month:02d}{dash}{d.day:02d}"
    assert read_date(form + context.format(context_date.isoformat())) == (d, 3), form
    assert read_date(form + context.format(context_date.year)) == (d, 3), form


@settings(max_examples=examples(1_000))
@given(dates, dates, st.sampled_from(DASHES), st.sampled_from([" or ", " / ", " (or ", "; ", " vs "]))
def test_two_dates_with_any_dash_are_a_hedge(d, e, dash, sep):
    assume(d != e)
    iso = [f"{x.year:04d}{dash}{x.month:02d}{dash}{x.day:02d}" for x in (d, e)]
    assert read_date(sep.join(iso)) is None
    day = f"{d.year:04d}{dash}{d.month:02d}{dash}{d.day:02d}"
    if d.day < 28:
        assert read_date(f"{day}{dash}{d.day + 1}") is None  # a range of days
