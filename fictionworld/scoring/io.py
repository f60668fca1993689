"""Reading tasks and responses in this project's format and in the official WideSearch layout,
and writing tasks out in the official layout."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

from pydantic import ValidationError

from fictionworld.errors import in_words
from fictionworld.tasks.model import Evaluation, GoldTable, Task, TaskError, norm_header, read_tasks

__all__ = ["carries_gold", "load_tasks", "load_responses", "export_widesearch", "ResponseError"]


class ResponseError(ValueError):
    pass


def _in_words(e: Exception) -> str:
    """What is wrong with a JSON Lines record, without Python's exception names."""
    return "not a JSON object" if isinstance(e, TypeError) else in_words(e)


def _read_text(path: Path, what: str, error: type[ValueError], encoding: str = "utf-8") -> str:
    try:
        return path.read_text(encoding=encoding)
    except UnicodeDecodeError:
        raise error(f"{what} {path} is not UTF-8 text") from None
    except OSError as e:
        raise error(f"cannot read {what} {path}: {e.strerror or e}") from None


def _gold_from_csv(text: str, required: list[str]) -> GoldTable:
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        raise TaskError("empty gold CSV")
    header = [norm_header(h.strip()) for h in rows[0]]
    missing = [c for c in required if c not in header]
    if missing:
        raise TaskError(f"gold CSV lacks required columns {missing}")
    idx = [header.index(c) for c in required]
    body = [[r[i] if i < len(r) else "" for i in idx] for r in rows[1:] if any(x.strip() for x in r)]
    return GoldTable(columns=list(required), rows=body)


def carries_gold(text: str, path: str | Path = "tasks") -> bool:
    """Whether a tasks file's text is this project's format (each task with its gold table; an
    empty file too) rather than an official ``widesearch.jsonl``. TaskError if not JSON."""
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    try:
        head = json.loads(first) if first else {}
    except json.JSONDecodeError:
        raise TaskError(f"{path}:1: not JSON") from None
    return not first or (isinstance(head, dict) and "gold" in head)


def load_tasks(path: str | Path, gold_dir: str | Path | None = None) -> tuple[list[Task], list[str]]:
    """Tasks from this project's ``tasks.jsonl`` or an official ``widesearch.jsonl`` (gold
    tables from ``gold_dir``, default ``widesearch_gold/`` beside it). Returns (tasks, skipped),
    where skipped names the official tasks whose gold table is missing or lacks a required
    column (upstream skips them too)."""
    path = Path(path)
    text = _read_text(path, "tasks file", TaskError)
    if carries_gold(text, path):
        return read_tasks(path), []
    gold_root = Path(gold_dir) if gold_dir else path.parent / "widesearch_gold"
    tasks, skipped = [], []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            ev = rec["evaluation"]
            ev = Evaluation.model_validate(json.loads(ev) if isinstance(ev, str) else ev)
            iid = str(rec["instance_id"])
        except (json.JSONDecodeError, KeyError, TypeError, ValidationError) as e:
            raise TaskError(f"{path}:{n}: not a WideSearch task record: {_in_words(e)}") from None
        gold_file = gold_root / f"{iid}.csv"
        try:
            gold = _gold_from_csv(gold_file.read_text(encoding="utf-8-sig"), ev.required)
        except (OSError, TaskError) as e:
            skipped.append(f"{iid}: {e}")
            continue
        tasks.append(
            Task(
                instance_id=iid,
                query=str(rec.get("query", "")),
                language=str(rec.get("language", "en")),
                evaluation=ev,
                gold=gold,
            )
        )
    return tasks, skipped


def load_responses(path: str | Path, task_ids: list[str]) -> dict[str, dict[int, str]]:
    """{instance_id: {trial: response}} from a JSONL file of ``{"instance_id", "response",
    "trial"}`` records (trial defaults to 0, ``trial_idx`` accepted) or from a directory of
    official ``{model}_{instance_id}_{trial}_response.jsonl`` files."""
    path = Path(path)
    out: dict[str, dict[int, str]] = {}
    if path.is_dir():
        pats = {iid: re.compile(rf"_{re.escape(iid)}_(\d+)(?:_multi_agent)?_response\.jsonl$") for iid in task_ids}
        for f in sorted(path.glob("*_response.jsonl")):
            for iid, pat in pats.items():
                m = pat.search(f.name)
                if m:
                    rec = _first_record(f)
                    out.setdefault(iid, {})[int(m.group(1))] = rec.get("response") if rec else None
                    break
        return out
    lines = _read_text(path, "responses", ResponseError).splitlines()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            iid = str(rec["instance_id"])
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise ResponseError(f"{path}:{n}: not a response record: {_in_words(e)}") from None
        trial = rec.get("trial", rec.get("trial_idx", 0))
        if isinstance(trial, str) and trial.strip().isdigit():
            trial = int(trial)
        if isinstance(trial, bool) or not isinstance(trial, int) or trial < 0:
            raise ResponseError(f"{path}:{n}: field 'trial' must be a whole number >= 0, not {trial!r}")
        out.setdefault(iid, {})[trial] = rec.get("response")
    return out


def _first_record(f: Path) -> dict | None:
    for line in _read_text(f, "response file", ResponseError).splitlines():
        if line.strip():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                return None
            return rec if isinstance(rec, dict) else None
    return None


def export_widesearch(tasks: list[Task], root: str | Path) -> Path:
    """Write ``widesearch.jsonl`` and ``widesearch_gold/<instance_id>.csv`` (official layout)."""
    root = Path(root)
    (root / "widesearch_gold").mkdir(parents=True, exist_ok=True)
    with (root / "widesearch.jsonl").open("w", encoding="utf-8") as fh:
        for t in tasks:
            fh.write(json.dumps(t.widesearch_record(), ensure_ascii=False) + "\n")
            (root / "widesearch_gold" / f"{t.instance_id}.csv").write_text(
                t.gold.csv(t.headers or None), encoding="utf-8"
            )
    return root / "widesearch.jsonl"
