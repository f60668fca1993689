"""Training data for language world models (``export lwm``) and its fidelity mode: rows in
AgentWorldBench's layout that load in HF ``datasets``, every page kind and source present, the
card's counts true, same seed same bytes, negatives labelled with their problems; scoring gives
the template renderer 100 % and every kind of corrupted prediction less, on the dimension it
breaks, including predictions that try to earn credit they do not deserve."""

from __future__ import annotations

import json
import random
import re
import shutil
from collections import Counter

import pytest
import yaml
from typer.testing import CliRunner

import fictionworld as fw
from fictionworld.cli import app
from fictionworld.env import EnvConfig, SearchEnv
from fictionworld.knobs import Knobs
from fictionworld.rollouts.agents import make_agent
from fictionworld.rollouts.episode import run_episode
from fictionworld.rollouts.records import EpisodeLog
from fictionworld.tasks.generate import generate_tasks
from fictionworld.worldmodel.lwm import FOCUS_KINDS, SYSTEM_STR
from fictionworld.worldmodel.lwm_corrupt import CORRUPTIONS, corrupt
from fictionworld.worldmodel.lwm_files import export_lwm
from fictionworld.worldmodel.lwm_score import gold_observations, model_predictions, read_heldout, score_predictions
from fictionworld.worldmodel.verify import Verifier

datasets = pytest.importorskip("datasets")
runner = CliRunner()
ACTION = re.compile(r"\A### Turn (\d+)\n\*\*Action:\*\*\n```json\n(.+)\n```\Z", re.S)
OBSERVATION = "**Environment Observation:**\n"


@pytest.fixture(scope="module")
def world_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("lwm") / "world"
    fw.generate(seed=5, entities=300).save(d)
    return d


@pytest.fixture(scope="module")
def world(world_dir):
    return fw.load(world_dir)


@pytest.fixture(scope="module")
def run_dir(world, world_dir):
    """A real rollout run, written by the rollout library: the oracle (basic tools, faults, three-entry
    directory pages, leaky snippets, pages cut at 1,500 characters) and the explorer (dict_memory,
    every perturbation layer shown)."""
    run = world_dir.parent / "run"
    log = EpisodeLog(run, {"world": str(world_dir), "world_hash": world.world_hash, "agent": "mixed"})
    tasks = generate_tasks(world, 2, kind="mixed", seed=3)
    noisy = Knobs(conflict_rate=1.0, distractor_rate=1.0, confusable_rate=1.0)
    faulty = Knobs(fault_rate=0.2, list_page_size=3, snippet_leak_rate=0.5)
    settings = [("oracle", {"max_observation_chars": 1500, "knobs": faulty}), ("explorer", {"knobs": noisy})]
    for i, (name, config) in enumerate(settings):
        agent = make_agent(name, world=world)
        env = SearchEnv(world.web, EnvConfig(**(agent.env_defaults | config)))
        for k, task in enumerate(tasks):
            log.append(run_episode(env, agent, task, seed=100 * i + k, sample=i))
    log.append(run_episode(SearchEnv(world.web), LongQuery(), tasks[0], seed=9, sample=9))
    log.close()
    return run


class LongQuery:
    """Searches with a query longer than a step record keeps (300 characters), then gives up."""

    name, privileged, env_defaults = "long-query", False, {}

    def config(self) -> dict:
        return {"name": self.name}

    def policy(self, messages, tools, task=None):
        yield {"name": "search", "arguments": {"query": "films released " * 30 + "in 1990"}}
        yield {"name": "answer", "arguments": {"text": "none"}}


@pytest.fixture(scope="module")
def export_dir(run_dir):
    out = run_dir.parent / "lwm"
    r = runner.invoke(app, ["export", "lwm", str(run_dir), "--out", str(out), "--sessions", "40"])
    assert r.exit_code == 0, r.output
    assert "examples: train" in r.output
    return out


def rows_of(out, config="data", fmt="jsonl"):
    files = {s: str(out / config / f"search_{s}.{fmt}") for s in ("train", "test")}
    return datasets.load_dataset("json" if fmt == "jsonl" else "parquet", data_files=files, cache_dir=cache(out))


def cache(out) -> str:
    """A datasets cache of this session's own (its default one may hold a stale build of a path reused)."""
    return str(out.parent / "hf_cache")


def test_rows_load_in_datasets_in_agentworld_layout(export_dir):
    data = rows_of(export_dir, fmt="parquet")
    assert data["test"].num_rows > 0 and data["train"].num_rows > data["test"].num_rows
    same = rows_of(export_dir, fmt="jsonl")
    assert same["train"]["id"] == data["train"]["id"]
    carded = datasets.load_dataset(str(export_dir), cache_dir=cache(export_dir))  # the card's configs
    assert carded["train"].num_rows == data["train"].num_rows
    for row in data["train"]:
        assert row["task"] == "search" and row["system_str"] == SYSTEM_STR and row["label"] == 1
        assert isinstance(row["turn_idx"], int) and 1 <= row["turn_idx"] == len(row["prompt"]) == len(row["response"])
        assert row["current_prompt"] == row["prompt"][row["turn_idx"] - 1] and row["total_turns"] >= row["turn"]
        numbers = []
        for prompt in row["prompt"]:
            m = ACTION.match(prompt)
            assert m, prompt
            action = json.loads(m.group(2))
            assert set(action) == {"name", "arguments"}
            numbers.append(int(m.group(1)))
        assert numbers == list(range(row["turn"] - len(numbers) + 1, row["turn"] + 1))
        assert json.loads(m.group(2)) == {"name": row["tool"], "arguments": json.loads(row["arguments"])}
        assert all(r.startswith(OBSERVATION) for r in row["response"])
        # what AgentWorldBench's eval.py sends the world model: system, earlier turns, the current action
        k = row["turn_idx"] - 1
        sent = [{"role": "system", "content": row["system_str"]}]
        for p, r in zip(row["prompt"][:k], row["response"][:k]):
            sent += [{"role": "user", "content": p}, {"role": "assistant", "content": r}]
        sent.append({"role": "user", "content": row["prompt"][k]})
        assert row["messages"] == sent + [{"role": "assistant", "content": row["response"][k]}]


def test_every_page_kind_and_source_and_the_card_counts(export_dir):
    data = rows_of(export_dir)
    rows = [r for split in ("train", "test") for r in data[split]]
    kinds = Counter(r["page_kind"] for r in rows)
    assert set(FOCUS_KINDS) | {"fault"} <= set(kinds), kinds
    assert {r["source"] for r in rows} == {"rollout", "sampled"}
    assert any(r["layer"] for r in rows) and any(len(json.loads(r["arguments"]).get("queries", [])) > 1 for r in rows)
    assert {r["knob_profile"] for r in rows if r["source"] == "sampled"} == {"clean", "leaky", "noisy", "short_pages",
                                                                             "faulty", "mixed"}  # fmt: skip
    head = yaml.safe_load((export_dir / "README.md").read_text().split("---")[1])
    counts = head["fictionworld"]
    summary = json.loads((export_dir / "lwm.json").read_text())
    assert counts["world_hash"] == summary["world_hash"] == rows[0]["world_hash"]
    for split in ("train", "test"):
        assert counts["examples"][split] == data[split].num_rows
        assert counts["page_kinds"][split] == dict(Counter(r["page_kind"] for r in data[split]))
        assert counts["sources"][split] == dict(Counter(r["source"] for r in data[split]))
        assert counts["negatives"][split] == rows_of(export_dir, "negatives")[split].num_rows
    assert {c["config_name"] for c in head["configs"]} == {"default", "negatives"}
    assert not summary["refused"]  # every template observation passed the checks, a long query's too
    assert any(len(json.loads(r["arguments"]).get("query", "")) > 300 for r in rows)
    # a held-out session is all in the test split
    assert not {r["session"] for r in data["train"]} & {r["session"] for r in data["test"]}


def test_rollout_observations_are_the_replayed_ones_and_a_tampered_one_is_refused(world, run_dir, tmp_path):
    eps = [json.loads(x) for x in (run_dir / "episodes.jsonl").read_text().splitlines()]
    cut = [m["content"] for e in eps for m in e["messages"] if "[… cut at" in (m.get("content") or "")]
    assert cut and any(s["tool"] == "dict_memory" for e in eps for s in e["steps"])
    bad = tmp_path / "run"
    shutil.copytree(run_dir, bad)
    ep = eps[1]
    i = next(i for i, m in enumerate(ep["messages"]) if m["role"] == "tool" and "Title:" in m["content"])
    ep["messages"][i]["content"] = ep["messages"][i]["content"].replace("Title:", "Title: The", 1)
    (bad / "episodes.jsonl").write_text("".join(json.dumps(e) + "\n" for e in eps))
    s = export_lwm(world.web, tmp_path / "out", run=bad, sessions=0, negatives=False)
    assert s["refused"] == {"refused: differs from the replay": 1}
    assert s["sessions"] == {"rollout": len(eps)}


def test_same_seed_same_bytes(world, tmp_path):
    def files(out):
        return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}

    a, b, c = (export_lwm(world.web, tmp_path / n, sessions=30, seed=s) for n, s in (("a", 7), ("b", 7), ("c", 8)))
    assert a["examples"] == b["examples"]
    assert files(tmp_path / "a") == files(tmp_path / "b")
    assert files(tmp_path / "a")["data/search_train.parquet"] != files(tmp_path / "c")["data/search_train.parquet"]


def test_negatives_carry_the_problems_found(export_dir):
    neg = rows_of(export_dir, "negatives", "parquet")
    pos = {r["id"]: r for split in ("train", "test") for r in rows_of(export_dir)[split]}
    rows = [r for split in ("train", "test") for r in neg[split]]
    assert len({r["corruption"] for r in rows}) >= 7 and {r["corruption"] for r in rows} <= set(CORRUPTIONS)
    for r in rows:
        assert r["label"] == 0 and r["problems"] and r["rejected"] == r["response"][-1] != r["chosen"]
        assert r["chosen"] == pos[r["positive_id"]]["response"][-1] and r["messages"][-1]["content"] == r["rejected"]
        kinds = {p["kind"] for p in r["problems"]}
        if r["corruption"] == "format_broken":
            assert "format" in kinds
        if r["corruption"] in ("value_changed", "hedged", "namesake", "results_swapped", "page_invented"):
            assert kinds & {"contradiction", "unsupported", "namesake", "unrelated", "bad_link", "leak"}, r["problems"]


# -- fidelity mode -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def heldout(world, export_dir):
    rows = read_heldout(export_dir)
    return rows, gold_observations(world.web, rows)


def score(world, rows, predictions):
    return score_predictions(world.web, rows, predictions)


def test_the_template_renderer_scores_100(world, heldout):
    rows, _ = heldout
    for predictions in ({r["id"]: r["response"][-1].removeprefix(OBSERVATION) for r in rows},
                        model_predictions(world.web, rows)):  # fmt: skip
        s = score(world, rows, predictions)
        assert (s["facts"], s["errors"], s["format"], s["pass_rate"], s["missing_predictions"]) == (1.0, 0, 1.0, 1.0, 0)


def test_corrupted_predictions_score_lower_on_the_right_dimension(world, heldout):
    rows, golds = heldout
    v = Verifier(world.web)
    r = random.Random(0)
    clean = {row["id"]: o.text for row, o in zip(rows, golds)}

    def corrupted(kind, only=lambda o: True):
        out = {row["id"]: corrupt(v, o, kind, r) for row, o in zip(rows, golds) if only(o)}
        return {k: t for k, t in out.items() if t is not None} | {k: clean[k] for k in clean if k not in out}

    empty = score(world, rows, {k: "" for k in clean})
    assert empty["facts"] == 0 and empty["format"] == 0 and empty["pass_rate"] == 0
    swapped = score(world, rows, corrupted("facts_swapped"))
    assert swapped["contradictions"] > 0 and swapped["pass_rate"] < 1
    changed = score(world, rows, corrupted("value_changed"))
    assert changed["errors"] > 0 and changed["facts"] < 1 and changed["pass_rate"] < 1
    broken = score(world, rows, corrupted("format_broken"))
    assert broken["format"] < 1 and broken["errors"] == 0
    hedged = score(world, rows, corrupted("hedged"))
    assert hedged["errors"] > 0 and hedged["pass_rate"] < 1
    missing = score(world, rows, {k: t for i, (k, t) in enumerate(clean.items()) if i % 2})
    assert missing["missing_predictions"] == len(rows) // 2 + len(rows) % 2 and missing["facts"] < 1


def test_pasting_every_candidate_earns_no_clean_credit(world, export_dir):
    """A page that gives the right value and a second one beside it (a date the page holds
    elsewhere, so nothing looks invented) loses that fact and counts a contradiction; results
    padded with every candidate page count as unsupported results."""
    rows = read_heldout(export_dir / "data" / "search_train.jsonl")  # any examples do
    golds = gold_observations(world.web, rows)
    pages = [(row, o) for row, o in zip(rows, golds) if o.kind == "article" and "- **Born:** " in o.text]
    searches = [(row, o) for row, o in zip(rows, golds) if o.kind == "search" and len(o.parts) == 1]
    assert pages and searches
    hedged = {}
    for row, o in pages:
        other = o.page.published.isoformat()  # a date the page states (its own date): "supported"
        hedged[row["id"]] = re.sub(r"(- \*\*Born:\*\* [^\n]+)", rf"\1 or {other}", o.text, count=1)
    s = score(world, [row for row, _ in pages], hedged)
    assert s["contradictions"] >= len(pages) and s["facts"] < 1 and s["pass_rate"] == 0
    padded = {}
    for row, o in searches:
        n = o.parts[0].results[-1].number
        p = world.web.pages
        extra = [f"[{n + i + 1}] {p.urls[i]}\nTitle: {p.titles[i]}\nSnippet: x\nDate: Jan 1, 2020" for i in range(20)]
        padded[row["id"]] = o.text + "\n\n" + "\n\n".join(extra)
    s = score(world, [row for row, _ in searches], padded)
    assert s["facts"] == 1.0 and s["problems"]["unsupported"] >= 20 * len(searches) and s["pass_rate"] == 0


def test_fidelity_cli_scores_files_in_both_layouts(world_dir, export_dir, heldout, tmp_path):
    rows, golds = heldout
    mine, theirs = tmp_path / "mine.jsonl", tmp_path / "predictions.jsonl"
    mine.write_text("".join(json.dumps({"id": r["id"], "prediction": o.text}) + "\n" for r, o in zip(rows, golds)))
    wrapped = (json.dumps(r | {"gen": f"<think>a page</think>\n<predicted_observation>\n{OBSERVATION}{o.text}"
                                      "</predicted_observation>"}) + "\n" for r, o in zip(rows, golds))  # fmt: skip
    theirs.write_text("".join(wrapped))
    for f in (mine, theirs):
        r = runner.invoke(app, ["fidelity", str(world_dir), "--heldout", str(export_dir), "--predictions", str(f),
                                "--json"])  # fmt: skip
        assert r.exit_code == 0, r.output
        s = json.loads(r.output)
        assert (s["examples"], s["facts"], s["pass_rate"]) == (len(rows), 1.0, 1.0)
    r = runner.invoke(app, ["fidelity", str(world_dir), "--heldout", str(export_dir / "data" / "search_test.jsonl")])
    assert r.exit_code == 0 and "100.0%" in r.output


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["export", "lwm", "{d}/missing", "--out", "{d}/out"], "no such directory"),
        (["export", "lwm", "{d}/pred.jsonl", "--out", "{d}/out"], "neither a rollout run"),
        (["export", "lwm", "{world}", "--out", "{d}/pred.jsonl"], "is a file"),
        (["export", "lwm", "{world}", "--out", "{world}"], "not an LWM export"),
        (["export", "lwm", "{world}", "--out", "{d}/out", "--format", "csv"], "--format"),
        (["export", "lwm", "{world}", "--out", "{d}/out", "--held-out", "1"], "below 1"),
        (["export", "lwm", "{d}/orphan", "--out", "{d}/out"], "names no world"),
        (["fidelity", "{world}", "--heldout", "{d}/missing", "--predictions", "{d}/pred.jsonl"], "no such file"),
        (["fidelity", "{world}", "--heldout", "{lwm}", "--predictions", "{d}/pred.jsonl"], "not JSON"),
        (["fidelity", "{world}", "--heldout", "{lwm}", "--predictions", "{d}/missing"], "no such file"),
        (["fidelity", "{world}", "--heldout", "{d}/pred.jsonl"], "not an LWM example"),
        (["fidelity", "{world}", "--predictions", "{d}/pred.jsonl"], "needs --heldout"),
        (["fidelity", "{world}", "--heldout", "{lwm}", "--n", "5"], "--n"),
        (["fidelity", "{other}", "--heldout", "{lwm}"], "another world"),
    ],
)
def test_bad_input_is_one_error_line(world_dir, export_dir, tmp_path_factory, args, said):
    d = tmp_path_factory.mktemp("bad")
    (d / "pred.jsonl").write_text('{"id": "x", "prediction": "a"}\n{"id": 3, "predic')
    (d / "orphan").mkdir()
    (d / "orphan" / "episodes.jsonl").write_text("")
    other = d / "other"
    fw.generate(seed=6, entities=60).save(other) if "{other}" in args else None
    values = {"d": d, "world": world_dir, "lwm": export_dir, "other": other}
    r = runner.invoke(app, [a.format(**values) for a in args])
    assert r.exit_code == 2, r.output
    assert "error:" in r.output and said in r.output and "Traceback" not in r.output
    assert not (d / "out").exists()
