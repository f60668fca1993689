"""Episode files: ``RUN/episodes.jsonl`` appended as episodes finish (safe to resume after a
crash), ``RUN/run.json`` describing the run, Parquet export loadable with HF ``datasets`` (its
columns derived from :class:`~fictionworld.rollouts.episode_record.Episode`'s fields), and GRPO group
advantages."""

from __future__ import annotations

import json
import math
import os
import types
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel, ValidationError

from fictionworld.errors import FictionWorldError
from fictionworld.rollouts.episode_record import Episode, Timing, as_episodes
from fictionworld.scoring import METRIC_NAMES, Scores, aggregate

__all__ = ["EpisodeLog", "read_episodes", "group_advantages", "GroupAdvantage", "export_parquet", "summarize",
           "RunError", "SCHEMA"]  # fmt: skip

Records = Iterable[Episode | Mapping[str, Any]]  # episodes, or their JSON records


class RunError(FictionWorldError, RuntimeError):
    """A run directory that cannot be used (another world or agent, unreadable files): what is
    wrong (``problem``), then what to do (``advice``, by default for ``rollout``'s --out; a
    command with other options words its own from ``problem``)."""

    exit_code = 1

    def __init__(self, problem: str, advice: str = "use another --out"):
        super().__init__(f"{problem}; {advice}")
        self.problem, self.advice = problem, advice

    def __reduce__(self):
        return type(self), (self.problem, self.advice)


def read_episodes(path: str | Path, *, repair: bool = False) -> tuple[list[Episode], int]:
    """The episodes of a JSON Lines file (of any version: :meth:`Episode.read`) and the number of
    unreadable lines skipped (not JSON, or not an episode). With ``repair``, a partly written
    last line (a crash mid-write) is cut off the file."""
    path = Path(path)
    if not path.exists():
        return [], 0
    data = path.read_bytes()
    if repair and data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        with path.open("r+b") as fh:
            fh.truncate(cut)
        data = data[:cut]
    out, bad = [], 0
    for line in data.decode("utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            out.append(Episode.read(rec))
        except (json.JSONDecodeError, ValidationError, AttributeError):  # AttributeError: not an object
            bad += 1
    return out, bad


class EpisodeLog:
    """Appends one JSON line per finished episode and flushes it to disk at once."""

    def __init__(self, run_dir: str | Path, meta: dict):
        self.dir = Path(run_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / "episodes.jsonl"
        self._check_meta(meta)
        self.records, self.skipped_lines = read_episodes(self.path, repair=True)
        for r in self.records:
            if r.world_hash not in (None, meta.get("world_hash")):
                raise RunError(f"{self.path}: episodes from another world ({r.world_hash})")
        self._fh = self.path.open("a", encoding="utf-8")

    def _check_meta(self, meta: dict) -> None:
        f = self.dir / "run.json"
        if f.exists():
            try:
                old = json.loads(f.read_text())
            except json.JSONDecodeError as e:
                raise RunError(f"{f}: not valid JSON ({e.msg})", "remove it or use another --out") from None
            if not isinstance(old, dict):
                raise RunError(f"{f}: not a run description (a JSON object)", "remove it or use another --out")
            for key in ("world_hash", "agent"):
                if old.get(key) != meta.get(key):
                    raise RunError(f"{self.dir} holds a run with {key}={old.get(key)!r}, not {meta.get(key)!r}")
            new = json.loads(json.dumps(meta, default=str))
            changed = [d for key in ("agent_config", "env_config") if key in old
                       for d in _differences(key, old[key], new.get(key, {}))]  # fmt: skip
            if changed:
                raise RunError(f"{self.dir} holds a run with other settings ({'; '.join(changed[:5])})",
                               "rerun with the same settings to resume, or use another --out")  # fmt: skip
        else:
            f.write_text(json.dumps(meta, indent=2, default=str) + "\n")

    def done(self) -> set[str]:
        """Episodes already finished (an agent or infrastructure error is run again)."""
        return {r.episode for r in self.records if r.status != "error"}

    def append(self, episode: Episode) -> None:
        self._fh.write(episode.line() + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self.records.append(episode)

    def close(self) -> None:
        self._fh.close()

    def latest(self) -> list[Episode]:
        """One record per episode (the last written), in file order."""
        last = {r.episode: r for r in self.records}
        return list(last.values())


def _differences(path: str, old, new) -> list[str]:
    """``path: old then, new now`` for each setting that differs (nested objects compared key by key)."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [d for k in sorted(set(old) | set(new), key=str)
                for d in _differences(f"{path}.{k}", old.get(k), new.get(k))]  # fmt: skip
    short = lambda v: r if len(r := repr(v)) <= 60 else r[:57] + "…"  # noqa: E731
    return [] if old == new else [f"{path}: {short(old)} then, {short(new)} now"]


def summarize(records: Records, samples: int | None = None):
    """WideSearch summary (avg@K, pass@K / max@K) over the episodes' scores (an episode without
    scores counts as a failed sample)."""
    per_task: dict[str, list] = defaultdict(list)
    for ep in as_episodes(records):
        per_task[ep.task_id].append(ep.scores)
    k = samples or max((len(v) for v in per_task.values()), default=1)
    return aggregate(per_task, k)


class GroupAdvantage(BaseModel):
    """An episode's GRPO advantage within its task's group (one Parquet column per field)."""

    advantage: float | None  # None: the group's rewards are all equal (no signal; dropped)
    group_size: int
    group_mean: float
    group_std: float


def group_advantages(records: Records, *, scale: str = "std", eps: float = 1e-6) -> dict[str, GroupAdvantage]:
    """GRPO advantages by episode: rewards grouped per task (over its samples) and normalised,
    (r − mean) / (std + eps) with ``scale="std"`` or r − mean with ``"none"`` (Dr. GRPO).
    Groups whose rewards are all equal carry no signal and are dropped (advantage None)."""
    groups: dict[str, list[Episode]] = defaultdict(list)
    for ep in as_episodes(records):
        groups[ep.task_id].append(ep)
    out = {}
    for eps_ in groups.values():
        rewards = [float(ep.reward) for ep in eps_]
        mean = sum(rewards) / len(rewards)
        std = math.sqrt(sum((x - mean) ** 2 for x in rewards) / len(rewards))
        keep = len(eps_) > 1 and std > eps
        for ep, x in zip(eps_, rewards):
            adv = None
            if keep:
                adv = (x - mean) / (std + eps) if scale == "std" else x - mean
            out[ep.episode] = GroupAdvantage(advantage=adv, group_size=len(eps_), group_mean=mean, group_std=std)
    return out


# -- Parquet: one column per Episode field -------------------------------------------------------
# A field's column type follows from its annotation (objects as JSON text, lists of models as
# lists of structs); these fields are spread over several columns instead, named as the
# nested model names them. A field of a type with no rule fails at import, not in an export.
_SPREAD: dict[str, tuple[type[BaseModel], tuple[str, ...]]] = {
    "scores": (Scores, tuple(METRIC_NAMES)),
    "timing": (Timing, tuple(Timing.model_fields)),
}
_TOOL_CALL = pa.struct([("id", pa.string()), ("type", pa.string()),
                        ("function", pa.struct([("name", pa.string()), ("arguments", pa.string())]))])  # fmt: skip
_MESSAGE = pa.struct([("role", pa.string()), ("content", pa.string()), ("name", pa.string()),
                      ("tool_call_id", pa.string()), ("tool_calls", pa.list_(_TOOL_CALL))])  # fmt: skip


def _message(m: dict) -> dict:
    content = m.get("content")
    return {"role": m.get("role"), "content": content if isinstance(content, str | None) else json.dumps(content),
            "name": m.get("name"), "tool_call_id": m.get("tool_call_id"),
            "tool_calls": m.get("tool_calls") or None}  # fmt: skip


def _column(tp) -> tuple[pa.DataType, Callable[[Any], Any]]:
    """The Parquet type of a value annotated ``tp`` and how to convert the value."""
    origin, args = get_origin(tp), get_args(tp)
    if origin in (Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            typ, conv = _column(rest[0])
            return typ, lambda v: None if v is None else conv(v)
    elif origin is Literal and all(isinstance(a, str) for a in args):
        return pa.string(), lambda v: v
    elif tp is dict or origin is dict:
        return pa.string(), lambda v: json.dumps(v, ensure_ascii=False, default=str)
    elif origin is list and args and isinstance(args[0], type) and issubclass(args[0], BaseModel):
        fields = [(name, *_column(f.annotation)) for name, f in args[0].model_fields.items()]
        struct = pa.struct([(name, typ) for name, typ, _ in fields])
        return pa.list_(struct), lambda v: [{n: conv(getattr(x, n)) for n, _, conv in fields} for x in v]
    elif origin is list and args == (dict[str, Any],):  # messages: OpenAI chat format
        return pa.list_(_MESSAGE), lambda v: [_message(m) for m in v]
    elif tp in _SCALARS:
        return _SCALARS[tp], lambda v: v
    raise TypeError(
        f"no Parquet column for a field of type {tp!r}: add a rule to fictionworld.rollouts.records._column"
    )


_SCALARS = {str: pa.string(), bool: pa.bool_(), int: pa.int64(), float: pa.float64()}


def _episode_columns() -> list[tuple[str, pa.DataType, Callable[[Episode, GroupAdvantage | None], Any]]]:
    cols = []
    for name, field in Episode.model_fields.items():
        if name in _SPREAD:
            model, subs = _SPREAD[name]
            for sub in subs:
                typ, conv = _column(model.model_fields[sub].annotation)
                cols.append((sub, typ, lambda ep, g, name=name, sub=sub, conv=conv: (
                    None if (v := getattr(ep, name)) is None else conv(getattr(v, sub)))))  # fmt: skip
        else:
            typ, conv = _column(field.annotation)
            cols.append((name, typ, lambda ep, g, name=name, conv=conv: conv(getattr(ep, name))))
    for name, field in GroupAdvantage.model_fields.items():
        typ, conv = _column(field.annotation)
        cols.append((name, typ, lambda ep, g, name=name, conv=conv: None if g is None else conv(getattr(g, name))))
    names = [c[0] for c in cols]
    if len(set(names)) != len(names):
        raise TypeError(f"two Parquet columns share a name: {sorted(n for n in names if names.count(n) > 1)}")
    return cols


_COLUMNS = _episode_columns()
SCHEMA = pa.schema([(name, typ) for name, typ, _ in _COLUMNS])


def export_parquet(records: Records, path: str | Path, *, scale: str = "std") -> Path:
    """One row per episode (the last record of each): every :class:`Episode` field a column
    (messages as OpenAI-format structs, steps as structs, objects as JSON text, the scores'
    metrics and the timing spread over columns of their own) and the GRPO group advantage (null
    for dropped groups and for failed episodes)."""
    path = Path(path)
    last = list({ep.episode: ep for ep in as_episodes(records)}.values())
    adv = group_advantages([ep for ep in last if ep.status != "error"], scale=scale)
    rows = [{name: get(ep, adv.get(ep.episode)) for name, _, get in _COLUMNS} for ep in last]
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return path
