"""Task records: WideSearch's fields plus what this project adds (graph query, provenance,
aliases), and their JSON Lines / official-layout serialisations."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from fictionworld.errors import FictionWorldError
from fictionworld.tasks.query import Query

__all__ = [
    "ColumnEval",
    "Evaluation",
    "GoldTable",
    "RowProvenance",
    "Task",
    "TaskError",
    "read_tasks",
    "write_tasks",
    "check_same_world",
    "norm_header",
    "PREPROCESSORS",
    "METRICS",
    "OFFICIAL_METRICS",
]

PREPROCESSORS = ("norm_str", "extract_number", "norm_date")
METRICS = ("exact_match", "number_near", "date_near", "url_match", "llm_judge")  # the ones tasks here use
# Every metric the official evaluator has (official task files may use any): in_match is "the
# answer is contained in the gold", for a gold listing several acceptable values.
OFFICIAL_METRICS = (*METRICS, "in_match")


class TaskError(FictionWorldError, ValueError):
    """A task file or record that cannot be used (names the file and line)."""


def norm_header(name: str) -> str:
    """WideSearch's column-name normalisation: lower case, every space removed."""
    return "".join(str(name).lower().split())


class ColumnEval(BaseModel):
    """How one column is scored: preprocessors applied to both sides, then one metric.
    ``criterion`` is the relative tolerance of ``number_near`` or the instruction of
    ``llm_judge``."""

    model_config = ConfigDict(extra="allow")

    preprocess: list[Literal["norm_str", "extract_number", "norm_date"]] = Field(default_factory=list)
    metric: list[Literal["exact_match", "number_near", "date_near", "url_match", "llm_judge", "in_match"]]
    criterion: str | float | None = None


class Evaluation(BaseModel):
    model_config = ConfigDict(extra="allow")

    unique_columns: list[str]
    required: list[str]
    eval_pipeline: dict[str, ColumnEval]


class GoldTable(BaseModel):
    columns: list[str]  # normalised names, in the order of ``required``
    rows: list[list[str]]

    def markdown(self, headers: list[str] | None = None) -> str:
        head = headers or self.columns
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(r) + " |" for r in self.rows]
        return "\n".join(lines)

    def csv(self, headers: list[str] | None = None) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(headers or self.columns)
        w.writerows(self.rows)
        return buf.getvalue()


class RowProvenance(BaseModel):
    """Where a gold row comes from: the row's entity and, per column, the entities and facts
    an agent must find (the oracle agent follows these)."""

    entity: str
    facts: dict[str, list[int]]
    entities: dict[str, str | None] = Field(default_factory=dict)


class Task(BaseModel):
    instance_id: str
    kind: Literal["wide", "deep"] = "wide"
    query: str
    language: str = "en"
    evaluation: Evaluation
    gold: GoldTable
    headers: list[str] = Field(default_factory=list)  # display names asked for, in column order
    # Per normalised column, per gold row: other strings naming the same thing (entity aliases).
    aliases: dict[str, list[list[str]]] = Field(default_factory=dict)
    graph_query: Query | None = None
    world_hash: str | None = None
    provenance: list[RowProvenance] = Field(default_factory=list)
    difficulty: dict[str, float] = Field(default_factory=dict)  # wide tasks: guess_gain (tasks.guess) among them
    # Per value column: the share of its gold cells the column's base-rate guess answers (tasks.guess).
    guessability: dict[str, float] = Field(default_factory=dict)
    family: str | None = None  # the question family (tasks.families), e.g. "top"; deep tasks: "lookup"
    preset: str | None = None  # the difficulty preset the task was drawn at, if any
    # Scorers keep per-task precomputation here (gold canonical forms); tasks are not mutated
    # after creation, so it never goes stale.
    _cache: dict = PrivateAttr(default_factory=dict)

    def widesearch_record(self) -> dict:
        """The official ``widesearch.jsonl`` row (``evaluation`` as a JSON string)."""
        ev = self.evaluation.model_dump(mode="json", exclude_none=True)
        return {
            "instance_id": self.instance_id,
            "query": self.query,
            "evaluation": json.dumps(ev, ensure_ascii=False),
            "language": self.language,
        }

    @property
    def answer(self) -> str:
        """The gold answer as a Markdown table (what a perfect agent writes)."""
        return "```markdown\n" + self.gold.markdown(self.headers or None) + "\n```"


def write_tasks(tasks: list[Task], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for t in tasks:
            fh.write(t.model_dump_json(exclude_none=True) + "\n")
    tmp.replace(path)
    return path


def check_same_world(tasks: list[Task], world_hash: str, world: object) -> None:
    """Refuses (TaskError) tasks made from another world than ``world`` (a name for it, e.g. its
    directory), whose hash is ``world_hash``: their gold tables would be wrong there, and every
    episode would score 0. A task that records no world (an official one) is taken. What every
    command that runs tasks on a world checks: ``rollout``, ``export`` (``export_rows``)."""
    wrong = [t.instance_id for t in tasks if t.world_hash is not None and t.world_hash != world_hash]
    if wrong:
        raise TaskError(f"{len(wrong)} of {len(tasks)} tasks were made from another world than {world} "
                        f"(world_hash {world_hash[:12]}), e.g. {wrong[0]}")  # fmt: skip


def read_tasks(path: str | Path) -> list[Task]:
    """This project's ``tasks.jsonl`` (one :class:`Task` per line)."""
    path = Path(path)
    out = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise TaskError(f"cannot read tasks file {path}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise TaskError(f"cannot read tasks file {path}: not a text file (UTF-8)") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append(Task.model_validate_json(line))
        except ValidationError as e:
            from fictionworld.errors import problem_lines

            problems = problem_lines(e)
            more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
            raise TaskError(f"{path}:{n}: not a task record: {'; '.join(problems[:3])}{more}") from None
    return out
