"""Reading tasks and responses in this project's format, in the official WideSearch layout and
from rollout runs, and writing tasks out in the official layout.

Responses come in three shapes, all read by :func:`load_responses`: a JSONL file of
``{"instance_id", "response", "trial"}`` records, a directory of official
``*_response.jsonl`` files, or a rollout run (``RUN/`` or ``RUN/episodes.jsonl``), whose episodes
answer tasks by ``task_id`` (the trial is the episode's ``sample``). A run's tasks are in
``RUN/tasks.jsonl`` when the run was made by ``fictionworld rollout`` (see :func:`run_tasks_file`)."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

from pydantic import ValidationError

from fictionworld.errors import FictionWorldError, in_words
from fictionworld.tasks.model import Evaluation, GoldTable, Task, TaskError, norm_header, read_tasks

__all__ = [
    "carries_gold",
    "load_tasks",
    "load_responses",
    "load_episode_answers",
    "rollout_run",
    "run_tasks_file",
    "export_widesearch",
    "write_official_responses",
    "OFFICIAL_RESPONSE_FIELDS",
    "OFFICIAL_MODEL_NAME",
    "ResponseError",
    "EPISODES_FILE",
    "RUN_TASKS_FILE",
]

EPISODES_FILE = "episodes.jsonl"  # a rollout run's episodes (fictionworld.rollouts.records.EpisodeLog)
RUN_TASKS_FILE = "tasks.jsonl"  # the tasks a rollout run ran, beside its episodes
# The fields of the official evaluator's WideSearchResponse dataclass: its loader builds one from
# each record with ``WideSearchResponse(**record)``, so any other field is a TypeError there.
OFFICIAL_RESPONSE_FIELDS = ("instance_id", "response", "messages", "trial_idx")
OFFICIAL_MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class ResponseError(FictionWorldError, ValueError):
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


def rollout_run(path: str | Path) -> Path | None:
    """The run directory if ``path`` is a rollout run (a directory holding ``episodes.jsonl``)
    or a run's ``episodes.jsonl``; else None."""
    path = Path(path)
    if path.is_dir():
        return path if (path / EPISODES_FILE).is_file() else None
    return path.parent if path.name == EPISODES_FILE and path.is_file() else None


def run_tasks_file(path: str | Path) -> Path | None:
    """The tasks file of the rollout run at ``path`` (the run or its episodes), if it has one."""
    run = rollout_run(path)
    return run / RUN_TASKS_FILE if run is not None and (run / RUN_TASKS_FILE).is_file() else None


def load_responses(path: str | Path, task_ids: list[str]) -> dict[str, dict[int, str | None]]:
    """{instance_id: {trial: response}} from a JSONL file of ``{"instance_id", "response",
    "trial"}`` records (trial defaults to 0, ``trial_idx`` accepted), from a directory of
    official ``{model}_{instance_id}_{trial}_response.jsonl`` files, or from a rollout run
    (its directory, its ``episodes.jsonl`` or any JSONL file of episode records: see
    :func:`load_episode_answers`)."""
    path = Path(path)
    if path.is_dir():
        if (path / EPISODES_FILE).is_file():
            return load_episode_answers(path / EPISODES_FILE)
        return _official_responses(path, task_ids)
    lines = _read_text(path, "responses", ResponseError).splitlines()
    if _are_episodes(lines):
        return _episode_answers(path, lines)
    out: dict[str, dict[int, str | None]] = {}
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


def _official_responses(path: Path, task_ids: list[str]) -> dict[str, dict[int, str | None]]:
    out: dict[str, dict[int, str | None]] = {}
    pats = {iid: re.compile(rf"_{re.escape(iid)}_(\d+)(?:_multi_agent)?_response\.jsonl$") for iid in task_ids}
    for f in sorted(path.glob("*_response.jsonl")):
        for iid, pat in pats.items():
            m = pat.search(f.name)
            if m:
                rec = _first_record(f)
                out.setdefault(iid, {})[int(m.group(1))] = rec.get("response") if rec else None
                break
    return out


def _are_episodes(lines: list[str]) -> bool:
    """Whether a JSONL file holds episode records (``task_id``) rather than responses (``instance_id``)."""
    first = next((ln for ln in lines if ln.strip()), "")
    try:
        rec = json.loads(first) if first else None
    except json.JSONDecodeError:
        return False
    return isinstance(rec, dict) and "task_id" in rec and "instance_id" not in rec


def load_episode_answers(path: str | Path) -> dict[str, dict[int, str | None]]:
    """{task_id: {sample: answer}} from a rollout's ``episodes.jsonl``. Reads only each
    episode's ``task_id`` and ``answer`` (and ``sample``, or the ``#N`` of its ``episode`` key, as
    the trial; 0 without either). An episode without an answer (an error) has None; an episode
    recorded twice (a rerun after an error) counts once, as last written. A partly written last
    line (a crash mid-write) is skipped, as a resumed run skips it."""
    path = Path(path)
    return _episode_answers(path, _read_text(path, "episodes", ResponseError).splitlines())


def _episode_answers(path: Path, lines: list[str]) -> dict[str, dict[int, str | None]]:
    out: dict[str, dict[int, str | None]] = {}
    for (task_id, sample), rec in _episodes(path, lines).items():
        out.setdefault(task_id, {})[sample] = rec.get("answer")
    return out


def _episodes(path: Path, lines: list[str]) -> dict[tuple[str, int], dict]:
    """(task_id, sample) → the episode record last written for it, each record checked."""
    out: dict[tuple[str, int], dict] = {}
    last = max((n for n, ln in enumerate(lines, 1) if ln.strip()), default=0)
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            task_id = rec["task_id"]
        except json.JSONDecodeError as e:
            if n == last:
                break  # cut off by a crash: the run reruns that episode
            raise ResponseError(f"{path}:{n}: not an episode record: {_in_words(e)}") from None
        except (KeyError, TypeError) as e:
            raise ResponseError(f"{path}:{n}: not an episode record: {_in_words(e)}") from None
        if not isinstance(task_id, str) or not task_id:
            raise ResponseError(f"{path}:{n}: field 'task_id' must be a task id (text), not {task_id!r}")
        answer = rec.get("answer")
        if answer is not None and not isinstance(answer, str):
            raise ResponseError(f"{path}:{n}: field 'answer' must be text or null, not {type(answer).__name__}")
        out[(task_id, _sample(rec, path, n))] = rec
    return out


def _sample(rec: dict, path: Path, n: int) -> int:
    """An episode's trial: its ``sample``, else the ``N`` of an ``episode`` key ``TASK#N``, else 0."""
    sample = rec.get("sample")
    if sample is None:
        _, sep, tail = str(rec.get("episode", "")).rpartition("#")
        sample = int(tail) if sep and tail.isdigit() else 0
    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 0:
        raise ResponseError(f"{path}:{n}: field 'sample' must be a whole number >= 0, not {sample!r}")
    return sample


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


def write_official_responses(episodes: str | Path, out_dir: str | Path, model: str) -> list[Path]:
    """A rollout run's episodes as the official evaluator's response files:
    ``{model}_{instance_id}_{trial}_response.jsonl`` in ``out_dir``, trial = the episode's sample
    (from 0), each holding one ``{"instance_id", "response", "messages", "trial_idx"}`` record
    (:data:`OFFICIAL_RESPONSE_FIELDS`, nothing else). ``response`` is the episode's answer ("" when
    it has none: an empty table scores 0 there, as here); an episode recorded twice counts as last
    written. ``model`` is the evaluator's ``--model_config_name``: letters, digits, ``.``, ``_``, ``-``.
    Returns the files written, task by task as the run first wrote them, trials in order."""
    if not isinstance(model, str) or not OFFICIAL_MODEL_NAME.fullmatch(model):
        raise ResponseError(f"model name {model!r} must be 1 to 128 letters, digits, '.', '_' or '-' "
                            "(it starts the official response file names)")  # fmt: skip
    path = Path(episodes)
    path = path / EPISODES_FILE if path.is_dir() else path
    records = _episodes(path, _read_text(path, "episodes", ResponseError).splitlines())  # a cut-off last line skipped
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    order = {iid: i for i, iid in enumerate(dict.fromkeys(iid for iid, _ in records))}  # as the run first wrote them
    for (iid, trial), rec in sorted(records.items(), key=lambda kv: (order[kv[0][0]], kv[0][1])):
        messages = rec.get("messages") if isinstance(rec.get("messages"), list) else None
        record = {"instance_id": iid, "response": rec.get("answer") or "", "messages": messages, "trial_idx": trial}
        f = out_dir / f"{model}_{iid}_{trial}_response.jsonl"
        f.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(f)
    return written
