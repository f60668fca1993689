"""Episode files: ``RUN/episodes.jsonl`` appended as episodes finish (safe to resume after a
crash), ``RUN/run.json`` describing the run, Parquet export loadable with HF ``datasets``, and
GRPO group advantages."""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from fictionworld.scoring import METRIC_NAMES, Scores, aggregate

__all__ = ["EpisodeLog", "read_episodes", "group_advantages", "export_parquet", "summarize", "RunError"]


class RunError(RuntimeError):
    """A run directory that cannot be used (another world or agent, unreadable files)."""


def read_episodes(path: str | Path, *, repair: bool = False) -> tuple[list[dict], int]:
    """Episode records of a JSON Lines file and the number of unreadable lines skipped. With
    ``repair``, a partly written last line (a crash mid-write) is cut off the file."""
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
        except json.JSONDecodeError:
            bad += 1
            continue
        if isinstance(rec, dict) and "episode" in rec:
            out.append(rec)
        else:
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
            if r.get("world_hash") not in (None, meta.get("world_hash")):
                raise RunError(f"{self.path}: episodes from another world ({r.get('world_hash')}); use another --out")
        self._fh = self.path.open("a", encoding="utf-8")

    def _check_meta(self, meta: dict) -> None:
        f = self.dir / "run.json"
        if f.exists():
            try:
                old = json.loads(f.read_text())
            except json.JSONDecodeError as e:
                raise RunError(f"{f}: not valid JSON ({e.msg}); remove it or use another --out") from None
            if not isinstance(old, dict):
                raise RunError(f"{f}: not a run description (a JSON object); remove it or use another --out")
            for key in ("world_hash", "agent"):
                if old.get(key) != meta.get(key):
                    raise RunError(f"{self.dir} holds a run with {key}={old.get(key)!r}, not {meta.get(key)!r}; "
                                   "use another --out")  # fmt: skip
            new = json.loads(json.dumps(meta, default=str))
            changed = [d for key in ("agent_config", "env_config") if key in old
                       for d in _differences(key, old[key], new.get(key, {}))]  # fmt: skip
            if changed:
                raise RunError(f"{self.dir} holds a run with other settings ({'; '.join(changed[:5])}); "
                               "rerun with the same settings to resume, or use another --out")  # fmt: skip
        else:
            f.write_text(json.dumps(meta, indent=2, default=str) + "\n")

    def done(self) -> set[str]:
        """Episodes already finished (an agent or infrastructure error is run again)."""
        return {r["episode"] for r in self.records if r.get("status") != "error"}

    def append(self, record: dict) -> None:
        self._fh.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self.records.append(record)

    def close(self) -> None:
        self._fh.close()

    def latest(self) -> list[dict]:
        """One record per episode (the last written), in file order."""
        last = {r["episode"]: r for r in self.records}
        return list(last.values())


def _differences(path: str, old, new) -> list[str]:
    """``path: old then, new now`` for each setting that differs (nested objects compared key by key)."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [d for k in sorted(set(old) | set(new), key=str)
                for d in _differences(f"{path}.{k}", old.get(k), new.get(k))]  # fmt: skip
    short = lambda v: r if len(r := repr(v)) <= 60 else r[:57] + "…"  # noqa: E731
    return [] if old == new else [f"{path}: {short(old)} then, {short(new)} now"]


def summarize(records: list[dict], samples: int | None = None):
    """WideSearch summary (avg@K, pass@K / max@K) over the episodes' scores."""
    per_task: dict[str, list[Scores | None]] = defaultdict(list)
    for r in records:
        s = r.get("scores")
        per_task[r["task_id"]].append(Scores(**s) if s else None)
    k = samples or max((len(v) for v in per_task.values()), default=1)
    return aggregate(per_task, k)


def group_advantages(records: list[dict], *, scale: str = "std", eps: float = 1e-6) -> dict[str, dict]:
    """GRPO advantages: rewards grouped per task (over its samples) and normalised,
    (r − mean) / (std + eps) with ``scale="std"`` or r − mean with ``"none"`` (Dr. GRPO).
    Groups whose rewards are all equal carry no signal and are dropped (advantage None)."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        groups[r["task_id"]].append(r)
    out = {}
    for rs in groups.values():
        rewards = [float(r["reward"]) for r in rs]
        mean = sum(rewards) / len(rewards)
        std = math.sqrt(sum((x - mean) ** 2 for x in rewards) / len(rewards))
        keep = len(rs) > 1 and std > eps
        for r, x in zip(rs, rewards):
            adv = None
            if keep:
                adv = (x - mean) / (std + eps) if scale == "std" else x - mean
            out[r["episode"]] = {"advantage": adv, "group_size": len(rs), "group_mean": mean, "group_std": std}
    return out


_TOOL_CALL = pa.struct([("id", pa.string()), ("type", pa.string()),
                        ("function", pa.struct([("name", pa.string()), ("arguments", pa.string())]))])  # fmt: skip
_MESSAGE = pa.struct([("role", pa.string()), ("content", pa.string()), ("name", pa.string()),
                      ("tool_call_id", pa.string()), ("tool_calls", pa.list_(_TOOL_CALL))])  # fmt: skip
_STEP = pa.struct([("turn", pa.int32()), ("tool", pa.string()), ("arguments", pa.string()), ("ok", pa.bool_()),
                   ("error", pa.string()), ("fault", pa.string()), ("seconds", pa.float64()), ("chars", pa.int64())])  # fmt: skip
SCHEMA = pa.schema(
    [("episode", pa.string()), ("task_id", pa.string()), ("task_kind", pa.string()), ("sample", pa.int32()),
     ("seed", pa.int64()), ("step", pa.int32()), ("world_hash", pa.string()), ("agent", pa.string()),
     ("agent_config", pa.string()), ("knobs", pa.string()), ("world_model", pa.string()), ("status", pa.string()),
     ("reason", pa.string()),
     ("error", pa.string()), ("turns", pa.int32()), ("reward", pa.float64())]
    + [(m, pa.float64()) for m in METRIC_NAMES]
    + [("answer", pa.string()), ("messages", pa.list_(_MESSAGE)), ("steps", pa.list_(_STEP)),
       ("total_s", pa.float64()), ("agent_s", pa.float64()), ("web_s", pa.float64()),
       ("advantage", pa.float64()), ("group_size", pa.int32()), ("group_mean", pa.float64()),
       ("group_std", pa.float64())]
)  # fmt: skip


def _message(m: dict) -> dict:
    content = m.get("content")
    return {"role": m.get("role"), "content": content if isinstance(content, str | None) else json.dumps(content),
            "name": m.get("name"), "tool_call_id": m.get("tool_call_id"),
            "tool_calls": m.get("tool_calls") or None}  # fmt: skip


def export_parquet(records: list[dict], path: str | Path, *, scale: str = "std") -> Path:
    """One row per episode (the last record of each): messages as OpenAI-format structs, the
    scores as columns, and the GRPO group advantage (null for dropped groups)."""
    path = Path(path)
    last = list({r["episode"]: r for r in records}.values())
    adv = group_advantages([r for r in last if r.get("status") != "error"], scale=scale)
    rows = []
    for r in last:
        s = r.get("scores") or {}
        t = r.get("timing") or {}
        g = adv.get(r["episode"], {})
        rows.append(
            {
                k: r.get(k)
                for k in (
                    "episode",
                    "task_id",
                    "task_kind",
                    "sample",
                    "seed",
                    "step",
                    "world_hash",
                    "agent",
                    "world_model",
                    "status",
                    "reason",
                    "error",
                    "turns",
                    "reward",
                    "answer",
                )
            }  # fmt: skip
            | {"agent_config": json.dumps(r.get("agent_config")), "knobs": json.dumps(r.get("knobs"))}
            | {m: s.get(m) for m in METRIC_NAMES}
            | {
                "messages": [_message(m) for m in r.get("messages") or []],
                "steps": [st | {"arguments": json.dumps(st.get("arguments"))} for st in r.get("steps") or []],
                "total_s": t.get("total_s"),
                "agent_s": t.get("agent_s"),
                "web_s": t.get("web_s"),
            }  # fmt: skip
            | {
                "advantage": g.get("advantage"),
                "group_size": g.get("group_size"),
                "group_mean": g.get("group_mean"),
                "group_std": g.get("group_std"),
            }  # fmt: skip
        )
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return path
