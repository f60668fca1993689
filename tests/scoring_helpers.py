"""Hand-made tasks for scorer tests."""

from __future__ import annotations

from fictionworld.tasks.model import ColumnEval, Evaluation, GoldTable, Task

EXACT = {"preprocess": ["norm_str"], "metric": ["exact_match"]}


def make_task(columns, rows, *, key=None, pipeline=None, aliases=None, iid="t1") -> Task:
    pipeline = pipeline or {}
    ev = Evaluation(
        unique_columns=list(key or columns[:1]),
        required=list(columns),
        eval_pipeline={c: ColumnEval(**pipeline.get(c, EXACT)) for c in columns},
    )
    return Task(
        instance_id=iid,
        query="q",
        evaluation=ev,
        gold=GoldTable(columns=list(columns), rows=[[str(x) for x in r] for r in rows]),
        aliases=aliases or {},
    )


def table(header, rows, fence=True) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(x) for x in r) + " |" for r in rows]
    body = "\n".join(lines)
    return f"```markdown\n{body}\n```" if fence else body


# A task with every metric kind: name key, int, date, url, judged category.
FULL_COLUMNS = ["company", "employees", "founded", "website", "industry"]
FULL_PIPELINE = {
    "company": EXACT,
    "employees": {"preprocess": ["extract_number"], "metric": ["number_near"], "criterion": 0.01},
    "founded": {"preprocess": ["norm_date"], "metric": ["date_near"]},
    "website": {"metric": ["url_match"]},
    "industry": {"metric": ["llm_judge"], "criterion": "same industry"},
}
FULL_ROWS = [
    ["Acme Corp", "1200", "1987-03-14", "https://www.acme.example", "robotics"],
    ["Borla Works", "45", "1990-01-02", "https://borla.example/about", "textiles"],
    ["Cindra AG", "310000", "2001-12-31", "https://www.cindra.example", "banking"],
]


def full_task(**kw) -> Task:
    return make_task(
        FULL_COLUMNS,
        FULL_ROWS,
        pipeline=FULL_PIPELINE,
        aliases={"company": [["Acme Corporation"], [], ["Cindra"]]},
        **kw,
    )
