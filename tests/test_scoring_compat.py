"""Compat mode, case by case: the official WideSearch evaluator's numbers, quirks included."""

import datetime as dt
import json
import random
import time

import pytest
from scoring_helpers import FULL_ROWS, full_task, make_task, table

from fictionworld.llm import ChatClient
from fictionworld.scoring import score
from fictionworld.scoring.judge import LLMJudge
from fictionworld.testing.scripted_openai import Reply, ScriptedOpenAIServer

HEAD = ["Company", "Employees", "Founded", "Website", "Industry"]
TODAY = dt.date(2026, 11, 21)


def c(text, task=None, **kw):
    kw.setdefault("today", TODAY)
    return score(text, task or full_task(), mode="compat", **kw)


def test_perfect_answer_and_fallback_label():
    r = c(table(HEAD, FULL_ROWS))
    assert r.score == 1.0 and r.f1_by_item == 1.0 and r.judge == "fallback" and r.mode == "compat"


def test_first_markdown_block_only():
    echoed = "The output format is ```markdown\n{data_content}\n```.\n" + table(HEAD, FULL_ROWS)
    r = c(echoed)
    assert r.score == 0 and r.f1_by_item == 0 and r.msg.startswith("evaluator error")
    assert score(echoed, full_task()).score == 1.0  # strict: the last table with the columns


def test_unfenced_table_found_but_indented_one_has_no_rows():
    assert c("Result:\n" + table(HEAD, FULL_ROWS, fence=False)).score == 1.0
    indented = "\n".join("  " + x for x in table(HEAD, FULL_ROWS, fence=False).splitlines())
    r = c("Result:\n" + indented)
    assert r.f1_by_item == 0 and r.predicted_rows == 0


def test_extra_column_zeroes_the_task():
    rows = [[*r, "note"] for r in FULL_ROWS]
    r = c(table([*HEAD, "Notes"], rows))
    assert r.score == 0 and r.f1_by_item == 0 and "required_columns" in r.msg
    assert score(table([*HEAD, "Notes"], rows), full_task()).score == 1.0  # strict ignores it


def test_near_duplicate_keys_inflate_tp():
    task = make_task(["fruit", "colour"], [["Apple", "red"], ["Banana", "yellow"]])
    answer = table(["fruit", "colour"], [["Apple", "red"], ["apple", "red"]])
    r = c(answer, task)
    # deduplicated on raw strings, both rows join the one gold row: a false success
    assert r.score == 1.0 and r.recall_by_row == 1.0
    s = score(answer, task)  # strict: one gold row matched once (the repeat counts once)
    assert s.score == 0 and s.recall_by_row == 0.5 and s.matched_rows == 1


def test_recall_can_exceed_one():
    task = make_task(["fruit", "colour"], [["Apple", "red"]])
    answer = table(["fruit", "colour"], [["Apple", "red"], ["apple", "red"], ["APPLE", "red"]])
    r = c(answer, task)
    assert r.recall_by_row == 3.0 and r.precision_by_row == 1.0
    assert score(answer, task).recall_by_row == 1.0


def test_both_sides_without_a_value_score_one():
    num = {"v": {"preprocess": ["extract_number"], "metric": ["number_near"], "criterion": 0.1}}
    task = make_task(["k", "v"], [["a", "unknown"]], pipeline=num)
    assert c(table(["k", "v"], [["a", "not stated"]]), task).score == 1.0  # "NULL" == "NULL"
    assert score(table(["k", "v"], [["a", "not stated"]]), task).score == 0.0
    url = {"u": {"preprocess": ["norm_str"], "metric": ["url_match"]}}
    task = make_task(["k", "u"], [["a", "acme.example"]], pipeline=url)
    assert c(table(["k", "u"], [["a", "anything at all"]]), task).score == 1.0  # no URL on either side


def test_number_near_tolerance_and_percent():
    num = {"v": {"preprocess": ["extract_number"], "metric": ["number_near"], "criterion": 0.1}}
    task = make_task(["k", "v"], [["a", "50%"]], pipeline=num)
    assert c(table(["k", "v"], [["a", "0.54"]]), task).score == 1.0
    assert c(table(["k", "v"], [["a", "56%"]]), task).score == 0.0
    # the first number wins, and a hyphen reads as a minus sign
    task = make_task(["k", "v"], [["a", "300"]], pipeline=num)
    assert c(table(["k", "v"], [["a", "COVID-19 cases 300"]]), task).score == 0.0
    assert score(table(["k", "v"], [["a", "COVID-19 cases 300"]]), task).score == 0.0


def test_dates_depend_on_today():
    pipe = {"d": {"preprocess": ["norm_date"], "metric": ["date_near"]}}
    task = make_task(["k", "d"], [["a", "2024-11-01"]], pipeline=pipe)
    answer = table(["k", "d"], [["a", "2024"]])
    assert c(answer, task, today=dt.date(2026, 11, 21)).score == 1.0  # "2024" → 2024-11-01
    assert c(answer, task, today=dt.date(2026, 5, 5)).score == 0.0  # "2024" → 2024-05-01
    assert score(answer, task).score == 0.0  # strict: 2024-01-01, 305 days off, any day


def test_integer_column_turned_float_by_an_empty_cell():
    pipe = {"year": {"preprocess": ["norm_str"], "metric": ["exact_match"]}}
    task = make_task(["k", "year"], [["a", "2020"], ["b", "2021"]], pipeline=pipe)
    answer = table(["k", "year"], [["a", "2020"], ["b", ""]])
    assert c(answer, task).recall_by_row == 0.0  # "2020.0" != "2020"
    assert score(answer, task).recall_by_row == 0.5


def test_ragged_rows():
    task = make_task(["k", "v"], [["a", "1"], ["b", "2"]])
    later_long = "| k | v |\n|---|---|\n| a | 1 |\n| b | 2 | x |\n"
    r = c(later_long, task)
    assert r.f1_by_item == 0 and r.msg.startswith("evaluator error")
    first_long = "| k | v |\n|---|---|\n| a | 1 | x |\n| b | 2 | y |\n"
    assert c(first_long, task).score == 0  # every column shifts by one
    assert score(later_long, task).score == 1.0 and score(first_long, task).score == 1.0


def test_bold_cells_and_headers():
    task = make_task(["k", "v"], [["a", "x"]])
    answer = table(["**k**", "v"], [["a", "x"]])
    # "**k**" is not a required column: upstream asks its LLM to map names, as the fallback does
    with ScriptedOpenAIServer(["```json {}```"]) as srv:
        refusing = LLMJudge(ChatClient(srv.base_url, "m", timeout=5, retries=0))
        assert c(answer, task, judge=refusing).score == 0
    assert c(answer, task).score == 1.0
    assert c(table(["k", "v"], [["**a**", "**x**"]]), task).score == 1.0  # norm_str drops "*"
    assert score(answer, task).score == 1.0


def test_llm_steps_go_to_the_judge_endpoint():
    task = full_task()
    rows = [list(r) for r in FULL_ROWS]
    rows[0][0] = "ACME Corporation Inc."
    rows[2][4] = "financial services"

    def reply(req):
        prompt = req["messages"][0]["content"]
        if "Align two vocabularies" in prompt:
            if "company" in prompt and "employees" in prompt:
                return '```json {"firm": "company"}```'
            return '```json {"ACME Corporation Inc.": "acme corp"}```' if "ACME" in prompt else "```json {}```"
        return '```json {"idx_0": 1, "idx_1": 1, "idx_2": 1}```'

    head = ["Firm", *HEAD[1:]]
    with ScriptedOpenAIServer(reply) as srv:
        judge = LLMJudge(ChatClient(srv.base_url, "judge-model", timeout=5, retries=0))
        r = c(table(head, rows), task, judge=judge)
        prompts = [q["messages"][0]["content"] for q in srv.requests]
    assert r.judge == "endpoint" and r.score == 1.0, r.msg
    assert sum("Align two vocabularies" in p for p in prompts) == 2  # header map, then keys
    assert sum("criterion-start" in p for p in prompts) == 1  # one call for the judged column
    assert json.dumps("same industry")[1:-1] in prompts[-1]


def test_unparseable_judge_reply_zeroes_the_column():
    with ScriptedOpenAIServer(["```json {}```", "I think they are all right."]) as srv:
        judge = LLMJudge(ChatClient(srv.base_url, "m", timeout=5, retries=0))
        r = c(table(HEAD, FULL_ROWS), judge=judge)
    assert r.recall_by_row == 0.0 and r.recall_by_item == pytest.approx(4 / 5)


def test_unreachable_judge_is_an_evaluator_error_not_a_hang():
    with ScriptedOpenAIServer([Reply(status=500)]) as srv:
        judge = LLMJudge(ChatClient(srv.base_url, "m", timeout=2, retries=2, backoff=0.01))
        r = c(table(HEAD, FULL_ROWS), judge=judge)
        assert len(srv.requests) == 3  # one try and two retries
    assert r.score == 0 and "evaluator error" in r.msg and "HTTP 500" in r.msg


def test_garbage_never_raises():
    for text in ["", "|||||", "| a |\n|---|\n| b |", "```markdown\n| x |\n```", None]:
        r = c(text)
        assert r.score == 0


# -- issue 74: the official evaluator's date parsing, bounded -----------------------------------
DATES = {"d": {"preprocess": ["norm_date"], "metric": ["date_near"]}}


def _dated(n: int, cell):
    """A task of ``n`` dated rows and an answer whose date cells are ``cell(i, date)``."""
    rnd = random.Random(3)
    days = [dt.date(1900, 1, 1) + dt.timedelta(days=rnd.randrange(40_000)) for _ in range(n)]
    rows = [[f"Company {i:03d}", d.isoformat()] for i, d in enumerate(days)]
    task = make_task(["k", "d"], rows, pipeline=DATES)
    return task, table(["k", "d"], [[r[0], cell(i, d)] for i, (r, d) in enumerate(zip(rows, days))])


def test_an_answer_with_two_dates_a_cell_stops_with_evaluator_timeout():
    """Each cell English cannot read makes dateparser try every language it knows (about a
    third of a second each here): 6.8 kB of two-date cells took minutes. The work is estimated
    before any such search and an answer over the budget scores 0 with "evaluator timeout"."""
    task, answer = _dated(
        170, lambda i, d: f"{d.isoformat()} / {d.replace(year=d.year + 1 if d.month != 2 else d.year - 1).isoformat()}"
    )
    assert len(answer) >= 6_800
    c(*reversed(_dated(1, lambda i, d: d.isoformat())))  # dateparser's English loaded
    start = time.perf_counter()
    r = c(answer, task)
    assert time.perf_counter() - start < 5.0  # generous: the unbounded evaluator took minutes
    assert r.score == 0 and r.f1_by_item == 0 and r.msg.startswith("evaluator timeout"), r.msg
    assert "170 date cells" in r.msg
    assert c(answer, task).model_dump() == r.model_dump()  # a budget of work, not of time: deterministic
    task, answer = _dated(1, lambda i, d: " / ".join([d.isoformat()] * 600))  # 7.8 kB in one cell
    start = time.perf_counter()
    r = c(answer, task)
    assert time.perf_counter() - start < 5.0 and r.msg.startswith("evaluator timeout"), r.msg


def test_date_parsing_within_the_budget_is_the_official_one():
    task, answer = _dated(160, lambda i, d: [d.isoformat(), f"{d:%d %B %Y}", f"{d:%B %d, %Y}", "N/A"][i % 4])
    r = c(answer, task)
    assert r.msg == "" and r.recall_by_row == pytest.approx(120 / 160)  # pandas reads "N/A" as NaN: "nan"
    # a few cells English cannot read are searched in every language, as upstream does
    task, answer = _dated(20, lambda i, d: f"{d.isoformat()} / {d.isoformat()}" if i < 3 else d.isoformat())
    r = c(answer, task)
    assert r.msg == "" and r.recall_by_row == pytest.approx(17 / 20)


def test_english_first_reads_every_date_as_dateparser_does():
    import dateparser

    from fictionworld.scoring.compat import DateParsing

    settings = {"PREFER_DAY_OF_MONTH": "first", "RELATIVE_BASE": dt.datetime(2026, 11, 21)}
    parse = DateParsing(settings, budget=100_000)
    for text in [
        "1987-03-14", "14 March 1987", "March 14, 1987", "14/03/1987", "03/14/1987", "1987.03.14", "1987–03–14",
        "March 1987", "1987", "2024", "N/A", "unknown", "", "-", "14 mars 1987", "2020年3月14日", "14. März 1987",
        "1 week ago", "yesterday", "12.5", "1, 2", "31/02/2001", "1987-03-14 or 1988-02-01", "c. 1987",
    ]:  # fmt: skip
        assert parse(text) == dateparser.parse(text, settings=settings), text
