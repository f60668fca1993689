"""Strict mode, case by case: the official metric with its defects fixed (see scoring/strict.py)."""

import pytest
from scoring_helpers import FULL_COLUMNS, FULL_ROWS, full_task, make_task, table

from fictionworld.scoring import RewardConfig, reward, score

HEAD = ["Company", "Employees", "Founded", "Website", "Industry"]


def s(text, task=None):
    return score(text, task or full_task())


def test_perfect_answer_scores_one():
    r = s(table(HEAD, FULL_ROWS))
    assert r.score == 1.0 and r.f1_by_item == 1.0 and r.f1_by_row == 1.0 and r.parsed
    assert r.predicted_rows == r.gold_rows == r.matched_rows == 3


def test_one_wrong_cell():
    rows = [list(r) for r in FULL_ROWS]
    rows[1][1] = "46"
    r = s(table(HEAD, rows))
    assert r.score == 0
    assert r.precision_by_row == pytest.approx(2 / 3) and r.recall_by_row == pytest.approx(2 / 3)
    assert r.precision_by_item == pytest.approx(14 / 15)


def test_surface_forms_are_read():
    rows = [
        ["**Acme Corp**", "1.2 thousand", "March 14, 1987", "[site](http://acme.example/x)", "Robotics"],
        ['"Borla Works"', "45 employees", "2 January 1990", "borla.example", "textile"],
        ["cindra  ag", "310,000", "2001-12-31", "https://cindra.example", "Banking"],
    ]
    r = s(table(HEAD, rows))
    assert r.score == 1.0, r


def test_headers_normalised_extra_columns_ignored_order_free():
    head = ["**Website**", "company", "Employees", "Notes", "Industry", "FOUNDED"]
    rows = [[r[3], r[0], r[1], "n/a", r[4], r[2]] for r in FULL_ROWS]
    assert s(table(head, rows)).score == 1.0


def test_missing_column_scores_zero_with_message():
    r = s(table(HEAD[:-1], [x[:-1] for x in FULL_ROWS]))
    assert r.score == 0 and r.f1_by_item == 0 and not r.parsed and "columns" in r.msg


def test_last_table_wins():
    wrong = [list(r) for r in FULL_ROWS]
    wrong[0][1] = "1"
    text = "Draft:\n" + table(HEAD, wrong) + "\nRevised:\n" + table(HEAD, FULL_ROWS)
    assert s(text).score == 1.0
    # an unrelated later table does not displace the answer
    assert s(table(HEAD, FULL_ROWS) + "\n\n| source | n |\n|---|---|\n| web | 3 |").score == 1.0


def test_unfenced_indented_table():
    text = "Here you go:\n" + "\n".join("   " + x for x in table(HEAD, FULL_ROWS, fence=False).splitlines())
    assert s(text).score == 1.0


def test_near_duplicate_keys_match_one_gold_row():
    rows = [*FULL_ROWS, ["acme  corp", "1200", "1987-03-14", "https://acme.example", "robotics"]]
    r = s(table(HEAD, rows))
    assert r.matched_rows == 3 and r.predicted_rows == 4
    assert r.recall_by_row == 1.0 and r.precision_by_row == pytest.approx(3 / 4) and r.score == 0
    # hedging with two versions of a row: the first counts, the second is a wrong row
    hedge = [["Acme Corp", "1", *FULL_ROWS[0][2:]], FULL_ROWS[0], *FULL_ROWS[1:]]
    assert s(table(HEAD, hedge)).recall_by_row == pytest.approx(2 / 3)


def test_exact_repeat_rows_count_once():
    r = s(table(HEAD, [*FULL_ROWS, FULL_ROWS[0]]))
    assert r.score == 1.0 and r.predicted_rows == 3


def test_aliases_from_the_graph_match_keys():
    rows = [list(r) for r in FULL_ROWS]
    rows[0][0], rows[2][0] = "Acme Corporation", "cindra"
    assert s(table(HEAD, rows)).score == 1.0


def test_dates_never_depend_on_today():
    task = make_task(
        ["x", "d"], [["a", "1987-03-14"]], pipeline={"d": {"preprocess": ["norm_date"], "metric": ["date_near"]}}
    )
    assert score(table(["x", "d"], [["a", "14 March 1987"]]), task).score == 1.0
    # date_near (±31 days): a month answers when every day of it is within the tolerance
    assert score(table(["x", "d"], [["a", "March 1987"]]), task).score == 1.0
    assert score(table(["x", "d"], [["a", "1987"]]), task).score == 0.0
    exact = make_task(
        ["x", "d"], [["a", "1987-03-14"]], pipeline={"d": {"preprocess": ["norm_date"], "metric": ["exact_match"]}}
    )
    assert score(table(["x", "d"], [["a", "March 1987"]]), exact).score == 0.0  # a month does not answer a day
    assert score(table(["x", "d"], [["a", "March 14"]]), task).score == 0.0  # no year: not a date
    assert score(table(["x", "d"], [["a", "n/a"]]), task).score == 0.0


def test_number_tolerance_and_percent():
    pipe = {"v": {"preprocess": ["extract_number"], "metric": ["number_near"], "criterion": 0.1}}
    task = make_task(["k", "v"], [["a", "50%"]], pipeline=pipe)
    assert score(table(["k", "v"], [["a", "0.5"]]), task).score == 1.0
    assert score(table(["k", "v"], [["a", "54%"]]), task).score == 1.0
    assert score(table(["k", "v"], [["a", "56%"]]), task).score == 0.0
    assert score(table(["k", "v"], [["a", "none"]]), task).score == 0.0


def test_integer_column_with_an_empty_cell_stays_integer():
    task = make_task(
        ["k", "year"],
        [["a", "2020"], ["b", "2021"]],
        pipeline={"year": {"preprocess": ["norm_str"], "metric": ["exact_match"]}},
    )
    r = score(table(["k", "year"], [["a", "2020"], ["b", ""]]), task)
    assert r.recall_by_row == 0.5  # "2020" still equals "2020"; the empty cell is simply wrong


def test_ragged_rows_and_escaped_pipes():
    task = make_task(["k", "v"], [["a|b", "1"], ["c", "2"]])
    text = "| k | v |\n|---|---|\n| a\\|b | 1 | extra |\n| c |\n"
    r = score(text, task)
    assert r.matched_rows == 2 and r.recall_by_row == 0.5


def test_url_hosts_without_www_and_url_needed():
    task = make_task(["k", "u"], [["a", "https://www.acme.example/"]], pipeline={"u": {"metric": ["url_match"]}})
    assert score(table(["k", "u"], [["a", "acme.example"]]), task).score == 1.0
    assert score(table(["k", "u"], [["a", "https://other.example"]]), task).score == 0.0
    assert score(table(["k", "u"], [["a", "unknown"]]), task).score == 0.0


def test_judge_fallback_rejects_lists_of_guesses():
    task = full_task()
    rows = [list(r) for r in FULL_ROWS]
    rows[0][4] = "robotics, textiles, banking"
    assert s(table(HEAD, rows), task).recall_by_row == pytest.approx(2 / 3)


def test_empty_and_garbage_never_raise():
    for text in ["", "no table here", "|", "| a |\n|---|", "```markdown\n```", None, 123]:
        r = score(text, full_task())
        assert r.score == 0 and r.f1_by_item == 0


def test_empty_join_scores_zero_without_error():
    rows = [["Zed", "1", "2000-01-01", "https://z.example", "x"]]
    r = s(table(HEAD, rows))
    assert r.parsed and r.matched_rows == 0 and r.f1_by_item == 0 and r.precision_by_row == 0


def test_single_column_task_accepts_a_bare_answer():
    task = make_task(["answer"], [["Acme Corp"]], aliases={"answer": [["Acme Corporation"]]})
    assert score("<answer>Acme Corporation</answer>", task).score == 1.0
    assert score("I searched a lot.\nAnswer: acme corp", task).score == 1.0
    assert score(table(["Answer"], [["Acme Corp"]]), task).score == 1.0
    assert score("Answer: Borla", task).score == 0.0


def test_reward_mixes_and_penalises_format():
    good = s(table(HEAD, FULL_ROWS))
    assert reward(good) == 1.0
    bad = s("I could not find it")
    assert reward(bad) == 0.0
    assert reward(bad, RewardConfig(format_penalty=0.1)) == pytest.approx(-0.1)
    half = s(table(HEAD, FULL_ROWS[:1]))
    mix = RewardConfig(item_f1=1, row_f1=1, success=2)
    assert reward(half, mix) == pytest.approx((half.f1_by_item + half.f1_by_row) / 4)


def test_columns_constant():
    assert FULL_COLUMNS == [h.lower() for h in HEAD]


def test_answers_over_the_size_limits_score_zero_with_a_message():
    from fictionworld.scoring import AnswerLimits

    rows = [[f"Company {i}", str(i)] for i in range(500)]
    task = make_task(["company", "n"], rows)
    answer = table(["Company", "N"], rows)
    assert score(answer, task).score == 1.0  # WideSearch size fits the default limits
    tight = AnswerLimits(max_rows=499)
    r = score(answer, task, limits=tight)
    assert r.f1_by_item == 0 and "limits" in r.msg
    r = score(answer + "\n" + "x" * 1_000_000, task)
    assert r.f1_by_item == 0 and "characters" in r.msg
    assert score(answer, task, limits=AnswerLimits(max_cells=999)).f1_by_item == 0


# -- issue 74: honest answers that were under-paid, and their hedged forms -------------------
def _deep_task():
    task = make_task(["answer"], [["Acme Corp"]], aliases={"answer": [["Acme Corporation"]]})
    return task.model_copy(update={"kind": "deep"})


NOTES = "| candidate | evidence |\n|---|---|\n| Acme Corp | founded 1987 |\n| Borla Works | founded 1990 |\n"


def test_a_deep_answer_after_a_table_of_notes_is_read():
    task = _deep_task()
    for closing in ["<answer>Acme Corp</answer>", "Answer: Acme Corp", "**Final answer:** Acme Corporation"]:
        assert score(NOTES + "\n" + closing, task).score == 1.0, closing
    # the explicit answer is what counts, whatever the notes say; hedges stay 0
    for closing in ["<answer>Borla Works</answer>", "Answer: Borla Works", "Answer: Acme Corp or Borla Works"]:
        assert score(NOTES + "\n" + closing, task).f1_by_item == 0.0, closing
    # an answer table before the final line: the last word counts, in either direction
    right, wrong = table(["Answer"], [["Acme Corp"]]), table(["Answer"], [["Borla Works"]])
    assert score(wrong + "\nAnswer: Acme Corp", task).score == 1.0
    assert score(right + "\nAnswer: Borla Works", task).f1_by_item == 0.0
    # a table inside the tag is the answer; the tag wins over tables outside it
    assert score(wrong + "\n<answer>\n" + right + "\n</answer>", task).score == 1.0
    assert score("<answer>\n" + wrong + "\n</answer>\n" + right, task).f1_by_item == 0.0
    # a last line that is a table row is not an explicit answer
    assert score("| Name |\n|---|\n| Borla Works |\n| Acme Corp |", task).f1_by_item == 0.0


def test_an_echoed_template_or_example_table_costs_nothing():
    rows = FULL_ROWS
    template = "| " + " | ".join(HEAD) + " |"
    placeholders = table(HEAD, [["...", "...", "...", "...", "..."]])
    braces = table(HEAD, [["{company}", "{employees}", "{founded}", "{website}", "{industry}"]])
    example = "For example:\n" + table(HEAD, [["Example Corp", "100", "2000-01-01", "https://example.com", "x"]])
    for before in [
        f"Format:\n{template}\n{template}\n|---|---|---|---|---|\n| <name> | <n> | <date> | <url> | <industry> |",
        placeholders,
        braces,
        example,
        "I will fill in this table:\n" + table(HEAD, []),
    ]:
        r = s(before + "\n\nHere is my answer:\n" + table(HEAD, rows))
        assert r.score == 1.0 and r.predicted_rows == 3, (before, r)
    # the header echoed as a row inside the answer table, and a "..." row at its end
    echo = table(HEAD, [HEAD, *rows, ["…"] * 5])
    assert s(echo).score == 1.0
    # tagged: only the table inside the tag is read
    other = table(HEAD, [["Zed", "1", "2000-01-01", "z.example", "x"]])
    assert s(other + "<answer>" + table(HEAD, rows) + "</answer>").score == 1.0


def test_two_tables_never_beat_committing_to_one():
    task = _deep_task()
    right, wrong = table(["Answer"], [["Acme Corp"]]), table(["Answer"], [["Borla Works"]])
    assert score(wrong + "\n" + right, task).score == score(right, task).score == 1.0
    assert score(right + "\n" + wrong, task).f1_by_item == score(wrong, task).f1_by_item == 0.0
    # a labelled example with the right answer does not count either
    assert score("For example:\n" + right + "\n\n" + wrong, task).f1_by_item == 0.0
    # wide: a draft of the same rows is replaced, a labelled example never adds rows
    good, bad = table(HEAD, FULL_ROWS[:2]), table(HEAD, [[r[0], "7", *r[2:]] for r in FULL_ROWS[:2]])
    assert s(bad + "\n" + good).f1_by_item == s(good).f1_by_item
    assert s(good + "\n" + bad).f1_by_item == s(bad).f1_by_item
    assert s("For example:\n" + table(HEAD, FULL_ROWS[2:]) + "\n" + good).recall_by_row == pytest.approx(2 / 3)


def _cell_task(kind: str, gold: str):
    pipe = {
        "date": {"preprocess": ["norm_date"], "metric": ["exact_match"]},
        "near": {"preprocess": ["norm_date"], "metric": ["date_near"]},
        "number": {"preprocess": ["extract_number"], "metric": ["number_near"], "criterion": 0.0},
    }[kind]
    return make_task(["k", "v"], [["a", gold]], pipeline={"v": pipe})


def _cell_score(task, cell) -> float:
    return score(table(["k", "v"], [["a", cell]]), task).f1_by_row


@pytest.mark.parametrize("kind", ["date", "near"])
def test_dates_with_context_or_en_dashes(kind):
    task = _cell_task(kind, "1987-03-14")
    for honest in ["1987-03-14 (as of 2020)", "1987–03–14", "1987—03—14", "14–03–1987", "1987-03-14, as of 2021-05-01"]:
        assert _cell_score(task, honest) == 1.0, honest
    hedges = ["1987-03-14 or 1988-02-01", "1987–03–14 or 1988–02–01", "1987–03–14 (or 1988)", "1987-03-14 / 1986-03-14"]
    if kind == "date":  # a range of days answers no day exactly
        hedges += ["1987–03–14–15", "1987-03-14–16", "14–15 March 1987", "13 or 14 March 1987", "1987-03-14/15"]
    for hedged in hedges:
        assert _cell_score(task, hedged) == 0.0, hedged
    assert _cell_score(task, "1987–03") == 0.0  # a year range, never a month


def test_numbers_in_scientific_and_dotted_notation():
    big = _cell_task("number", "2500000")
    for honest in ["2.5e6", "2.5E+6", "2.5 × 10^6", "2,500,000", "2.500.000", "2.500.000,00"]:
        assert _cell_score(big, honest) == 1.0, honest
    for hedged in ["2.5e6 or 3e6", "2.5e6–3e6", "2.500.000 or 3.000.000", "2.5e6 (2.6e6)"]:
        assert _cell_score(big, hedged) == 0.0, hedged
    million = _cell_task("number", "1200000")
    assert _cell_score(million, "1.200.000") == 1.0
    # "1.200" alone is ambiguous: read as the official evaluator reads it, 1.2
    small = _cell_task("number", "1.2")
    assert _cell_score(small, "1.200") == 1.0 and _cell_score(million, "1.200") == 0.0
    area = _cell_task("number", "23880")
    for honest in ["23880 km^2", "23,880 km²", "23880 km2", "23 880 km<sup>2</sup>", "23880 sq km", "23880 m^2"]:
        assert _cell_score(area, honest) == 1.0, honest
    for hedged in ["23880 km^2 or 24000 km^2", "23880–24000 km^2", "23880 km^2 (24000 km^2)", "23880^24000"]:
        assert _cell_score(area, hedged) == 0.0, hedged


def test_reward_config_rejects_weights_that_are_not_a_reward():
    from pydantic import ValidationError

    from fictionworld.errors import in_words

    for bad in [
        {"item_f1": -1.0},
        {"row_f1": -0.5},
        {"success": float("nan")},
        {"item_f1": float("inf")},
        {"format_penalty": -0.1},
        {"item_f1": 0.0},
        {"item_f1": 1.0, "row_F1": 1.0},
    ]:
        with pytest.raises(ValidationError) as e:
            RewardConfig(**bad)
        assert "\n" not in in_words(e.value), bad
    assert RewardConfig(item_f1=0.0, success=1.0).success == 1.0
    assert "must be >= 0" in in_words(pytest.raises(ValidationError, RewardConfig, item_f1=-1.0).value)
