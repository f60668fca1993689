"""The LWM export on disk: a held-out split by session, JSON Lines and Parquet files that load
in HF ``datasets`` (and in AgentWorldBench's ``eval.py``, which reads ``*_test.jsonl``), the
dataset card (``README.md`` with the Hub's YAML header: configs, splits, counts) and
``lwm.json`` (the same counts, for programs).

Layout of ``OUT``::

    README.md                 dataset card
    lwm.json                  world hash, settings, counts
    data/search_{train,test}.{jsonl,parquet}        positives (config "default")
    negatives/search_{train,test}.{jsonl,parquet}   corrupted observations (config "negatives")
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from fictionworld.knobs import Knobs
from fictionworld.seeding import rng
from fictionworld.worldmodel.lwm import KNOB_PROFILES, LwmError, Progress, build_rows, run_sessions, sample_sessions

__all__ = ["export_lwm", "split_sessions", "FORMATS", "SPLITS", "CONFIGS", "schema"]

FORMATS = ("jsonl", "parquet", "both")
SPLITS = ("train", "test")
CONFIGS = {"default": "data", "negatives": "negatives"}  # config name -> folder


def export_lwm(web, out: str | Path, *, run: str | Path | None = None, sessions: int | None = None, seed: int = 0,
               negatives: bool = True, held_out: float = 0.1, fmt: str = "both", history: int = 8,
               progress: Progress | None = None) -> dict:  # fmt: skip
    """Writes the LWM dataset of ``web`` into ``out``: the episodes of the rollout ``run`` (a run
    directory) and ``sessions`` sampled sessions (default 200 without a run, none with one),
    ``held_out`` of the sessions in the test split. Returns the summary (``lwm.json``'s counts,
    plus the seconds it took)."""
    if fmt not in FORMATS:
        raise LwmError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    if not 0 <= held_out < 1:
        raise LwmError(f"the held-out share must be at least 0 and below 1, not {held_out:g}")
    t0 = time.perf_counter()
    all_sessions, refused = [], Counter()
    if run is not None:
        all_sessions, refused = run_sessions(web, Path(run), progress)
    n = (0 if run is not None else 200) if sessions is None else sessions
    all_sessions += sample_sessions(web, n, seed, progress)
    if not all_sessions:
        raise LwmError("nothing to export: the run holds no episodes and no sessions were asked for")
    pos, neg, counts = build_rows(web, all_sessions, seed=seed, negatives=negatives, history=history,
                                  progress=progress)  # fmt: skip
    counts.update(refused)
    test = split_sessions(sorted({s.id for s in all_sessions}), held_out, seed)
    tables = {"default": _split(pos, test)}
    if negatives:
        tables["negatives"] = _split(neg, test)
    out = Path(out)
    files = _write(out, tables, fmt)
    summary = _summary(web, all_sessions, tables, counts, seed, held_out, run, files) | {"format": fmt}
    (out / "lwm.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "README.md").write_text(_card(summary), encoding="utf-8")
    return summary | {"seconds": round(time.perf_counter() - t0, 2)}


def split_sessions(ids: list[str], fraction: float, seed: int) -> set[str]:
    """The sessions held out: a seeded share of them (at least one of two or more, never all)."""
    if fraction <= 0 or len(ids) < 2:
        return set()
    k = min(len(ids) - 1, max(1, round(fraction * len(ids))))
    order = rng(seed, "lwm-held-out").permutation(len(ids))
    return {ids[i] for i in np.sort(order[:k]).tolist()}


def _split(rows: list[dict], test: set[str]) -> dict[str, list[dict]]:
    return {"train": [r for r in rows if r["session"] not in test], "test": [r for r in rows if r["session"] in test]}


# -- files ---------------------------------------------------------------------------------------
def schema(negative: bool = False) -> pa.Schema:
    """The columns of a positive (or negative) row, typed for Parquet."""
    s, i = pa.string(), pa.int64()
    knob_types = {"fault_kinds": pa.list_(s), "list_page_size": i, "results_per_page": i}
    knobs = pa.struct([(k, knob_types.get(k, pa.float64())) for k in Knobs.model_fields])
    fields = [("task", s), ("id", s), ("prompt", pa.list_(s)), ("response", pa.list_(s)), ("current_prompt", s),
              ("system_str", s), ("turn_idx", i), ("total_turns", i),
              ("messages", pa.list_(pa.struct([("role", s), ("content", s)]))), ("label", i), ("source", s),
              ("session", s), ("turn", i), ("tool", s), ("arguments", s), ("page_kind", s), ("layer", s),
              ("status", s), ("urls", pa.list_(s)), ("fact_ids", pa.list_(i)), ("faults", pa.list_(s)),
              ("knobs", knobs), ("knob_profile", s), ("world_hash", s), ("episode", s), ("task_id", s)]  # fmt: skip
    if negative:
        fields += [("corruption", s), ("positive_id", s), ("chosen", s), ("rejected", s),
                   ("problems", pa.list_(pa.struct([("kind", s), ("detail", s)]))), ("facts_required", i),
                   ("facts_stated", i)]  # fmt: skip
    return pa.schema(fields)


def _write(out: Path, tables: dict[str, dict[str, list[dict]]], fmt: str) -> dict[str, dict[str, str]]:
    files: dict[str, dict[str, str]] = {}
    for folder in CONFIGS.values():  # an earlier export's files go (a config not written now too)
        for old in (out / folder).glob("search_*"):
            old.unlink()
    for config, splits in tables.items():
        folder = out / CONFIGS[config]
        folder.mkdir(parents=True, exist_ok=True)
        files[config] = {}
        for split, rows in splits.items():
            if not rows:
                continue
            stem = folder / f"search_{split}"
            if fmt in ("jsonl", "both"):
                with open(stem.with_suffix(".jsonl"), "w", encoding="utf-8", newline="\n") as fh:
                    for row in rows:
                        fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            if fmt in ("parquet", "both"):
                table = pa.Table.from_pylist(rows, schema=schema(config == "negatives"))
                pq.write_table(table, stem.with_suffix(".parquet"), compression="zstd")
            ext = ".parquet" if fmt != "jsonl" else ".jsonl"
            files[config][split] = f"{CONFIGS[config]}/search_{split}{ext}"
    return files


# -- summary and card ----------------------------------------------------------------------------
def _summary(web, sessions, tables, counts: Counter, seed: int, held_out: float, run, files) -> dict:
    pos = tables["default"]
    neg = tables.get("negatives", {})
    rows = [r for split in pos.values() for r in split]
    by = lambda key, rs: dict(sorted(Counter(r[key] for r in rs).items()))  # noqa: E731
    return {
        "world_hash": web.world.world_hash,
        "seed": seed,
        "held_out": held_out,
        "run": Path(run).name if run is not None else None,
        "sessions": dict(sorted(Counter(s.source for s in sessions).items())),
        "examples": {split: len(pos.get(split, [])) for split in SPLITS},
        "negatives": {split: len(neg.get(split, [])) for split in SPLITS},
        "page_kinds": {split: by("page_kind", pos.get(split, [])) for split in SPLITS},
        "sources": {split: by("source", pos.get(split, [])) for split in SPLITS},
        "knob_profiles": by("knob_profile", [r for r in rows if r["knob_profile"]]),
        "corruptions": by("corruption", [r for split in neg.values() for r in split]),
        "refused": dict(sorted((k, v) for k, v in counts.items() if k.startswith("refused"))),
        "left_out": dict(sorted((k, v) for k, v in counts.items() if not k.startswith("refused"))),
        "knobs": {name: k.model_dump(mode="json", exclude_defaults=True) for name, k in KNOB_PROFILES.items()},
        "files": files,
    }


def _loader(paths: dict[str, str]) -> str:
    return "parquet" if next(iter(paths.values())).endswith(".parquet") else "json"


def _card(summary: dict) -> str:
    files = summary["files"]
    configs = [{"config_name": name, "data_files": [{"split": split, "path": path} for split, path in paths.items()]}
               for name, paths in files.items() if paths]  # fmt: skip
    header = {
        "pretty_name": f"fictionworld LWM data (world {summary['world_hash'][:12]})",
        "language": ["en"],
        "task_categories": ["text-generation"],
        "tags": ["world-model", "synthetic", "agents", "web-search", "fictionworld"],
        "configs": configs,
        "fictionworld": {k: summary[k] for k in ("world_hash", "seed", "held_out", "sessions", "examples",
                                                  "negatives", "page_kinds", "sources", "corruptions")},
    }  # fmt: skip
    kinds = sorted(set(summary["page_kinds"]["train"]) | set(summary["page_kinds"]["test"]))
    kind_rows = "\n".join(f"| {k} | {summary['page_kinds']['train'].get(k, 0)} | "
                          f"{summary['page_kinds']['test'].get(k, 0)} |" for k in kinds)  # fmt: skip
    src = sorted(set(summary["sources"]["train"]) | set(summary["sources"]["test"]))
    src_rows = "\n".join(f"| {k} | {summary['sources']['train'].get(k, 0)} | {summary['sources']['test'].get(k, 0)} |"
                         for k in src)  # fmt: skip
    knob_rows = "\n".join(f"| {k} | {summary['knob_profiles'].get(k, 0)} | "
                          f"{', '.join(f'{a}={b}' for a, b in v.items()) or 'defaults'} |"
                          for k, v in summary["knobs"].items())  # fmt: skip
    bad = "\n".join(f"| {k} | {v} |" for k, v in summary["corruptions"].items()) or "| (none) | 0 |"
    refused = "\n".join(f"- {k}: {v}" for k, v in {**summary["refused"], **summary["left_out"]}.items()) or "- none"
    test = files.get("default", {}).get("test", "data/search_test.jsonl")
    loads = "\n".join(
        f"{'data' if name == 'default' else name} = load_dataset({_loader(paths)!r}, data_files={dict(paths)!r})"
        for name, paths in files.items()
        if paths
    )
    if summary["format"] != "parquet":
        evaluate = ("AgentWorldBench's `eval.py infer --data-dir data` reads `data/search_test.jsonl` as it is; "
                    "score its `predictions.jsonl` against the graph with\n")  # fmt: skip
    else:
        evaluate = 'Score predictions (`{"id", "prediction"}` JSON Lines) against the graph with\n'
    return f"""---
{yaml.safe_dump(header, sort_keys=False, allow_unicode=True).strip()}
---

# fictionworld: language world model data

(history, action, observation) examples from a fictional web, world `{summary["world_hash"]}`, in
Qwen-AgentWorld's framing: each turn is `### Turn N` / `**Action:**` / a JSON block, answered by
`**Environment Observation:**` and the text the environment returned. Every observation is the
template renderer's, checked against the world's knowledge graph before it was written (faithful
by construction); the `negatives` config holds the same examples with one corruption each,
labelled with the problems the checks find, for reward models.

```python
from datasets import load_dataset

{loads}
```

{evaluate}`fictionworld fidelity WORLD --heldout {test} --predictions predictions.jsonl`.

## Fields

AgentWorldBench's: `task` ("search"), `id`, `prompt` and `response` (the turns up to this one),
`current_prompt`, `system_str`, `turn_idx` (1-based, into `prompt`), `total_turns` (of the session).
Ours: `messages` (the same as a chat: system, then user/assistant turns; the last assistant message
is the target), `label` (1; 0 for negatives), `source` (rollout or sampled), `session`, `turn`,
`tool`, `arguments` (JSON), `page_kind`, `layer` (perturbation layer of a low-credibility page),
`status`, `urls`, `fact_ids` (graph facts the page states), `faults` (injected per web call),
`knobs`, `knob_profile`, `world_hash`, `episode`, `task_id`. Negatives add `corruption`,
`positive_id`, `chosen`, `rejected`, `problems` (kind, detail), `facts_required`, `facts_stated`.

## Counts

Sessions: {", ".join(f"{k} {v}" for k, v in summary["sessions"].items())}.
Examples: train {summary["examples"]["train"]}, test {summary["examples"]["test"]} (held out by session, share \
{summary["held_out"]:g}, seed {summary["seed"]}).
Negatives: train {summary["negatives"]["train"]}, test {summary["negatives"]["test"]}.

| page kind | train | test |
|---|---|---|
{kind_rows}

| source | train | test |
|---|---|---|
{src_rows}

| knob profile (sampled sessions) | examples | knobs |
|---|---|---|
{knob_rows}

| corruption | negatives |
|---|---|
{bad}

Refused or left out:
{refused}
"""
