"""Scoring a language world model's predictions on a held-out LWM set against the graph
(``fictionworld fidelity WORLD --heldout DIR --predictions FILE``).

Each held-out example is replayed on the world's web (its action, knobs and recorded faults:
deterministic), which must give the example's observation back; the prediction is then judged
with :func:`~fictionworld.worldmodel.lwm_check.judge`: the facts it states (recall of the
observation's facts), what it states wrongly (contradictions, hedges, unsupported values,
invented names and links, leaked values) and its layout. An example passes when every fact is
stated and nothing else is wrong. Predictions come as ``{"id", "prediction"}`` JSON Lines or as
the ``predictions.jsonl`` AgentWorldBench's ``eval.py infer`` writes (its rows with ``gen``);
thinking (``<think>``) is dropped, the last ``<predicted_observation>`` block taken if there is
one, and the ``**Environment Observation:**`` label taken off.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq

from fictionworld.knobs import Knobs
from fictionworld.worldmodel.lwm import LwmError
from fictionworld.worldmodel.lwm_check import ERROR_KINDS, judge
from fictionworld.worldmodel.lwm_observe import Observed, observe
from fictionworld.worldmodel.prompts import observation_of
from fictionworld.worldmodel.verify import Verifier

__all__ = ["read_heldout", "read_predictions", "extract_prediction", "score_predictions", "model_predictions",
           "gold_observations"]  # fmt: skip

_MARK = "**Environment Observation:**"
_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)
_REQUIRED = ("id", "tool", "arguments", "knobs", "faults", "response", "world_hash")


def read_heldout(path: str | Path) -> list[dict]:
    """The examples of a held-out set: an export directory (its ``data/search_test``), a folder
    of ``*_test.jsonl`` or ``*_test.parquet`` files, or one such file."""
    path = Path(path)
    if not path.exists():
        raise LwmError(f"{path}: no such file or directory")
    if path.is_dir():
        folder = path / "data" if (path / "data").is_dir() else path
        files = sorted(folder.glob("*_test.jsonl")) or sorted(folder.glob("*_test.parquet"))
        if not files:
            raise LwmError(f"{path}: no held-out set (data/search_test.jsonl or *_test.jsonl) in it")
    else:
        files = [path]
    rows: list[dict] = []
    for f in files:
        rows += _read_rows(f)
    if not rows:
        raise LwmError(f"{path}: the held-out set is empty")
    ids = Counter(str(r["id"]) for r in rows)
    dup = next((i for i, n in ids.items() if n > 1), None)
    if dup is not None:
        raise LwmError(f"{path}: example id {dup!r} appears {ids[dup]} times")
    return rows


def _read_rows(f: Path) -> list[dict]:
    if f.suffix == ".parquet":
        try:
            rows = pq.read_table(f).to_pylist()
        except Exception as e:  # noqa: BLE001 — pyarrow raises several kinds for a bad file
            raise LwmError(f"{f}: not a Parquet file ({type(e).__name__})") from None
        return [_checked(r, f, n) for n, r in enumerate(rows, 1)]
    return [_checked(rec, f, n) for n, rec in _json_lines(f)]


def _json_lines(f: Path):
    """(line number, record) of each non-blank line of a JSON Lines file; LwmError at the first bad one."""
    for n, line in enumerate(_text(f).splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield n, json.loads(line)
        except json.JSONDecodeError as e:
            raise LwmError(f"{f}:{n}: not JSON ({e.msg})") from None


def _checked(rec, f: Path, n: int) -> dict:
    if not isinstance(rec, dict):
        raise LwmError(f"{f}:{n}: not an LWM example (a JSON object)")
    missing = [k for k in _REQUIRED if k not in rec]
    if missing:
        raise LwmError(
            f"{f}:{n}: not an LWM example (no {', '.join(missing)}); export one with `fictionworld export lwm`"
        )
    if rec.get("label", 1) != 1:
        raise LwmError(f"{f}:{n}: a negative example; score against the positives (data/), not negatives/")
    return rec


def _text(f: Path) -> str:
    try:
        return f.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise LwmError(f"{f}: not text (UTF-8): {e.reason} at byte {e.start}") from None
    except IsADirectoryError:
        raise LwmError(f"{f}: a directory, not a file") from None


def extract_prediction(text: str) -> str:
    """The observation in a world model's reply (see the module's docstring)."""
    text = _THINK.sub("", text)
    if "</think>" in text.lower():  # thinking whose start was cut: everything before its end goes
        text = text[text.lower().rindex("</think>") + len("</think>") :]
    i = text.rfind("<predicted_observation>")
    if i >= 0:
        text = text[i:]
    out = observation_of(text)
    return out.removeprefix(_MARK).strip() if out.startswith(_MARK) else out


def read_predictions(path: str | Path) -> dict[str, str]:
    """id → predicted observation, from ``{"id", "prediction"}`` lines or eval.py's rows (``gen``)."""
    path = Path(path)
    if not path.exists():
        raise LwmError(f"{path}: no such file")
    out: dict[str, str] = {}
    for n, rec in _json_lines(path):
        if not isinstance(rec, dict) or "id" not in rec:
            raise LwmError(f'{path}:{n}: not a prediction (expected {{"id": …, "prediction": "…"}})')
        text = rec.get("prediction", rec.get("gen"))
        if not isinstance(text, str):
            raise LwmError(f"{path}:{n}: no 'prediction' text (or eval.py's 'gen') for id {rec['id']!r}")
        out[str(rec["id"])] = extract_prediction(text)
    if not out:
        raise LwmError(f"{path}: no predictions in it")
    return out


def _observed(web, row: dict, faults: bool = True) -> Observed:
    knobs = Knobs.model_validate(row["knobs"]).model_copy(update={"fault_rate": 0.0})
    args = json.loads(row["arguments"]) if isinstance(row["arguments"], str) else row["arguments"]
    return observe(web.session(knobs, 0), row["tool"], args, faults=list(row["faults"]) if faults else None)


def gold_observations(web, rows: list[dict]) -> list[Observed]:
    """Each example replayed on ``web`` (template pages), checked against the observation it holds."""
    verifier = Verifier(web)
    out = []
    for row in rows:
        if row["world_hash"] != web.world.world_hash:
            raise LwmError(f"example {row['id']}: made from another world ({row['world_hash']}), not this one "
                           f"({web.world.world_hash})")  # fmt: skip
        try:
            obs = _observed(web, row)
        except (KeyError, TypeError, ValueError) as e:
            raise LwmError(f"example {row['id']}: its action cannot be replayed ({e})") from None
        gold = row["response"][-1].removeprefix(_MARK).removeprefix("\n")
        if gold != obs.text and not judge(verifier, obs, gold).ok:
            raise LwmError(f"example {row['id']}: this world's web does not return its observation "
                           f"(another renderer or world version?); export the held-out set again")  # fmt: skip
        out.append(obs)
    return out


def model_predictions(web, rows: list[dict], progress: Callable[[int], None] | None = None) -> dict[str, str]:
    """What ``web``'s own world model (``web.model``) returns for each example's action (with the
    example's knobs and recorded faults): the predictions of the renderer itself."""
    out = {}
    for row in rows:
        out[str(row["id"])] = _observed(web, row).text
        if progress:
            progress(1)
    return out


def score_predictions(web, rows: list[dict], predictions: dict[str, str],
                      progress: Callable[[int], None] | None = None) -> dict:  # fmt: skip
    """The summary of ``predictions`` judged on the held-out ``rows`` (``examples``: one record
    per example)."""
    golds = gold_observations(web, rows)
    verifier = Verifier(web)
    records = []
    for row, obs in zip(rows, golds):
        text = predictions.get(str(row["id"]))
        j = judge(verifier, obs, text or "")
        records.append({
            "id": str(row["id"]), "page_kind": obs.kind, "predicted": text is not None, "facts_required": j.required,
            "facts_stated": j.stated, "contradictions": j.count("contradiction"), "errors": j.errors,
            "format_ok": j.format_ok, "passed": j.ok, "problems": [f"{p.kind}: {p.detail}" for p in j.problems[:8]],
            "problem_kinds": dict(Counter(p.kind for p in j.problems)),
        })  # fmt: skip
        if progress:
            progress(1)
    return _summary(records, set(predictions) - {str(r["id"]) for r in rows})


def _summary(records: list[dict], extra: set[str]) -> dict:
    n = len(records)
    required = sum(r["facts_required"] for r in records)
    kinds: Counter = Counter()
    for r in records:
        kinds.update(r["problem_kinds"])
    per_kind: dict[str, dict] = defaultdict(lambda: {"examples": 0, "facts_required": 0, "facts_stated": 0,
                                                     "passed": 0})  # fmt: skip
    for r in records:
        k = per_kind[r["page_kind"]]
        k["examples"] += 1
        k["facts_required"] += r["facts_required"]
        k["facts_stated"] += r["facts_stated"]
        k["passed"] += r["passed"]
    return {
        "examples": n,
        "predicted": sum(r["predicted"] for r in records),
        "missing_predictions": sum(not r["predicted"] for r in records),
        "unknown_ids": len(extra),
        "facts": round(sum(r["facts_stated"] for r in records) / required, 4) if required else 1.0,
        "contradictions": kinds["contradiction"],
        "errors": sum(kinds[k] for k in ERROR_KINDS),
        "examples_with_errors": sum(r["errors"] > 0 for r in records),
        "format": round(sum(r["format_ok"] for r in records) / n, 4) if n else 1.0,
        "pass_rate": round(sum(r["passed"] for r in records) / n, 4) if n else 1.0,
        "problems": dict(sorted(kinds.items())),
        "by_kind": {
            k: v
            | {
                "facts": round(v["facts_stated"] / v["facts_required"], 4) if v["facts_required"] else 1.0,
                "pass_rate": round(v["passed"] / v["examples"], 4),
            }
            for k, v in sorted(per_kind.items())
        },  # fmt: skip
        "records": records,
    }
