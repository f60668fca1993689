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
