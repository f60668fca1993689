"""Tasks from graph queries: WideSearch fields, gold from the graph, every gold cell on a page."""

import json
import subprocess
import sys

import numpy as np
import pytest
from web_helpers import states

import fictionworld as fw
from fictionworld.scoring import score
from fictionworld.scoring.io import export_widesearch, load_responses, load_tasks
from fictionworld.tasks import GraphIndex, Query, TaskKnobs, read_tasks, write_tasks
from fictionworld.tasks.generate import TaskGenerationError, generate_tasks, recompute
from fictionworld.tasks.model import METRICS, PREPROCESSORS, Task, norm_header


@pytest.fixture(scope="module")
def tasks(world):
    return generate_tasks(world, 30, kind="mixed", seed=5)


def test_widesearch_fields(tasks):
    for t in tasks:
        ev = t.evaluation
        assert t.instance_id and t.language == "en" and t.query
        assert ev.required == [norm_header(h) for h in t.headers] == t.gold.columns
        assert set(ev.unique_columns) <= set(ev.required) and set(ev.eval_pipeline) == set(ev.required)
        for item in ev.eval_pipeline.values():
            assert set(item.preprocess) <= set(PREPROCESSORS) and len(item.metric) == 1 and item.metric[0] in METRICS
            if item.metric[0] == "number_near":
                assert isinstance(item.criterion, float)
            if item.metric[0] == "llm_judge":
                assert isinstance(item.criterion, str) and item.criterion
        for h in t.headers:  # the question names every column and asks for one Markdown table
            assert h in t.query
        assert "Markdown table" in t.query
        rec = t.widesearch_record()
        assert json.loads(rec["evaluation"]) == ev.model_dump(mode="json", exclude_none=True)
        keys = [tuple(r[t.gold.columns.index(k)] for k in ev.unique_columns) for r in t.gold.rows]
        assert len(set(keys)) == len(keys)  # the key identifies a row


def test_every_metric_and_preprocessor_is_used(world):
    many = generate_tasks(world, 60, kind="wide", seed=1)
    metrics = {m for t in many for e in t.evaluation.eval_pipeline.values() for m in e.metric}
    pre = {p for t in many for e in t.evaluation.eval_pipeline.values() for p in e.preprocess}
    assert metrics == set(METRICS) and pre == set(PREPROCESSORS)


def test_deterministic_and_seeded(world):
    a = [t.model_dump_json() for t in generate_tasks(world, 6, kind="mixed", seed=3)]
    b = [t.model_dump_json() for t in generate_tasks(world, 6, kind="mixed", seed=3)]
    c = [t.model_dump_json() for t in generate_tasks(world, 6, kind="mixed", seed=4)]
    assert a == b and a != c


def test_gold_recomputes_from_the_stored_query(world, tasks, tmp_path):
    write_tasks(tasks, tmp_path / "t.jsonl")
    back = read_tasks(tmp_path / "t.jsonl")
    assert [t.model_dump() for t in back] == [t.model_dump() for t in tasks]
    for t in back:
        assert recompute(world, t) == t.gold.rows
        assert t.world_hash == world.world_hash


def test_perfect_answers_score_one_in_both_modes(tasks):
    for t in tasks:
        assert score(t.answer, t).score == 1.0
        assert score(t.answer, t, mode="compat").score == 1.0, t.instance_id


def test_deep_tasks_are_unique_and_name_no_entity(world, tasks):
    g = GraphIndex(world)
    names = set(world.entities.name.tolist())
    deep = [t for t in tasks if t.kind == "deep"]
    assert deep
    for t in deep:
        q = t.graph_query
        assert len(g.select(q)) == 1 and len(t.gold.rows) == 1
        assert all(c.attribute is not None for c in q.conditions)  # clues are attributes, never an entity
        assert max(len(c.path) for c in q.conditions) >= 1
        answer = t.gold.rows[0][0]
        assert answer not in t.query
        path_entities = {e for p in t.provenance for e in p.entities.values() if e}
        for e in path_entities:
            assert world.entity(e).name not in t.query
        assert not any(n in t.query for n in names if len(n) > 6 and n in (answer,))


def test_knobs_shape_wide_tasks(world):
    # guess_gain=1: six columns of one hop are more than the session's small world holds that a
    # base rate answers little of (tests/test_wide_families.py checks the default's bound)
    knobs = TaskKnobs(rows_min=5, rows_max=12, columns=6, hops=1, selectivity=0.5, families=("list",), guess_gain=1)
    for t in generate_tasks(world, 8, kind="wide", seed=2, knobs=knobs):
        assert 5 <= len(t.gold.rows) <= 12 and len(t.gold.columns) == 6
        assert t.difficulty["hops"] <= 1 and t.difficulty["selectivity"] < 1.0
        assert len(t.graph_query.conditions) == 2  # a discoverable group, then a filter
    # Most: a long path often ends at one of a few entities (a country) that a base rate answers,
    # and such columns are not drawn.
    deep = generate_tasks(world, 5, kind="wide", seed=2, knobs=TaskKnobs(hops=3, columns=5, guess_gain=1))
    assert sum(max(len(c.path) for c in t.graph_query.columns) >= 2 for t in deep) >= 2


def test_large_tasks(world):
    big = generate_tasks(world, 2, kind="wide", knobs=TaskKnobs(rows_min=100, rows_max=400, columns=3))
    assert all(len(t.gold.rows) >= 100 for t in big)
    with pytest.raises(TaskGenerationError, match="too few"):
        generate_tasks(world, 2, kind="wide", knobs=TaskKnobs(rows_min=5000, rows_max=9000))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_gold_cell_is_stated_on_a_page(seed):
    """Solvable in principle: each fact behind each gold cell is in the fact_ids of its
    subject's article and the article's text states it (read back with the parsers)."""
    world = fw.generate(seed=seed, entities=1_500)
    web = world.web
    ids = world.facts.id
    checked = 0
    for t in generate_tasks(world, 12, kind="mixed", seed=seed):
        for prov, row in zip(t.provenance, t.gold.rows):
            page = web.open(web.article_url_of(prov.entity))
            assert page.title == row[0] or t.kind == "deep" or len(t.evaluation.unique_columns) > 1
            for col, facts in prov.facts.items():
                for fid in facts:
                    fact = world.fact(int(np.searchsorted(ids, fid)))
                    art = web.open(web.article_url_of(fact.subject))
                    assert fid in art.fact_ids and states(world, fact, art.markdown()), (t.instance_id, col, fact)
                    checked += 1
    assert checked > 100


def test_official_layout_round_trip(world, tasks, tmp_path):
    export_widesearch(tasks, tmp_path / "ws")
    loaded, skipped = load_tasks(tmp_path / "ws" / "widesearch.jsonl")
    assert not skipped and [t.instance_id for t in loaded] == [t.instance_id for t in tasks]
    for a, b in zip(loaded, tasks):
        assert a.evaluation == b.evaluation and a.gold.rows == b.gold.rows
        assert score(b.answer, a, mode="compat").score == 1.0
    (tmp_path / "ws" / "widesearch_gold" / f"{tasks[0].instance_id}.csv").unlink()
    loaded, skipped = load_tasks(tmp_path / "ws" / "widesearch.jsonl")
    assert len(loaded) == len(tasks) - 1 and tasks[0].instance_id in skipped[0]
    # official response files: model names and ids with underscores, trials from 0
    rd = tmp_path / "responses"
    rd.mkdir()
    for trial in range(2):
        rec = {"instance_id": tasks[1].instance_id, "response": f"r{trial}", "messages": None, "trial_idx": trial}
        (rd / f"my_model_v2_{tasks[1].instance_id}_{trial}_response.jsonl").write_text(json.dumps(rec) + "\n")
    got = load_responses(rd, [t.instance_id for t in tasks])
    assert got == {tasks[1].instance_id: {0: "r0", 1: "r1"}}


def test_bad_task_files_fail_clearly(tmp_path):
    from fictionworld.tasks.model import TaskError

    p = tmp_path / "t.jsonl"
    p.write_text('{"gold": 1}\n')
    with pytest.raises(TaskError, match="t.jsonl:1"):
        read_tasks(p)
    p.write_text("not json\n")
    with pytest.raises(TaskError, match="not JSON"):
        load_tasks(p)


@pytest.mark.cli
def test_cli_tasks_and_score(saved_world, tmp_path):
    def run(*args):
        return subprocess.run(
            [sys.executable, "-m", "fictionworld.cli", *map(str, args)], capture_output=True, text=True
        )

    out = tmp_path / "tasks.jsonl"
    r = run("tasks", saved_world, "--n", "4", "--kind", "deep", "--out", out, "--widesearch", tmp_path / "ws")
    assert r.returncode == 0, r.stderr
    made = read_tasks(out)
    assert len(made) == 4 and all(t.kind == "deep" for t in made)
    resp = tmp_path / "resp.jsonl"
    lines = [
        {"instance_id": t.instance_id, "response": t.answer if i % 2 == 0 else "no idea"} for i, t in enumerate(made)
    ]
    resp.write_text("".join(json.dumps(x) + "\n" for x in lines))
    r = run("score", "--tasks", out, "--responses", resp, "--json", "--out", tmp_path / "s.jsonl")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["metrics"]["score"]["avg_n"] == 0.5 and summary["tasks"] == 4
    assert len((tmp_path / "s.jsonl").read_text().splitlines()) == 4
    r = run(
        "score",
        "--tasks",
        tmp_path / "ws" / "widesearch.jsonl",
        "--responses",
        resp,
        "--mode",
        "compat",
        "--trials",
        "2",
        "--out",
        tmp_path / "c.jsonl",
    )
    assert r.returncode == 0 and "deterministic fallback" in r.stdout and "pass@2" in r.stdout
    assert "4 (task, trial) pairs had no response" in r.stdout
    r = run("tasks", saved_world, "--n", "2", "--rows-min", "9", "--rows-max", "3")
    assert r.returncode == 2 and "rows_max" in r.stderr


def test_query_validation():
    with pytest.raises(ValueError):
        Query(type="company", columns=(), bogus=1)
    assert Task.model_fields["kind"].default == "wide"


def test_task_alias_folding_is_the_scorers():
    """Task generation folds names with ``folding.fold_key``; the scorer with ``fold_name``
    (``fold_key`` of the cleaned cell). They agree because generated names are clean cells."""
    import fictionworld as fw
    from fictionworld.folding import fold_key
    from fictionworld.scoring.cells import fold_name

    w = fw.generate(seed=5, entities=3_000)
    names = [x for n, al in zip(w.entities.name.tolist(), w.entities.aliases.tolist()) for x in (n, *al)]
    assert len(names) > 3_000
    assert [fold_name(x) for x in names] == [fold_key(x) for x in names]
