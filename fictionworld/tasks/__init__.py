"""Tasks from graph queries: WideSearch-style tables and deep multi-hop questions."""

from fictionworld.tasks.model import (
    ColumnEval,
    Evaluation,
    GoldTable,
    RowProvenance,
    Task,
    TaskError,
    read_tasks,
    write_tasks,
)
from fictionworld.tasks.query import Column, Condition, GraphIndex, Hop, Query, evaluate
from fictionworld.tasks.wide import TaskKnobs, WideTaskGenerator

__all__ = [
    "ColumnEval",
    "Evaluation",
    "GoldTable",
    "RowProvenance",
    "Task",
    "TaskError",
    "read_tasks",
    "write_tasks",
    "Column",
    "Condition",
    "GraphIndex",
    "Hop",
    "Query",
    "evaluate",
    "TaskKnobs",
    "WideTaskGenerator",
]
