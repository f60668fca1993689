"""TRL (``trl==1.16.0``): fictionworld tasks as an ``environment_factory`` for ``GRPOTrainer``.

TRL runs the multi-turn loop itself: for each dataset row it takes an env instance from a pool,
calls ``reset(**row)``, generates, runs every tool call the model makes as a method call on that
instance, feeds the results back, and finally scores the rollout with the instance's
``get_reward()``. :class:`FictionWorldEnv` maps that contract onto one
:class:`~fictionworld.env.trainer.Episode` per rollout; the dataset rows come from
:func:`export_trl` (or :func:`dataset_row`)::

    from datasets import load_dataset
    from trl import GRPOConfig, GRPOTrainer
    from fictionworld.integrations.trl import RECOMMENDED_GRPO, FictionWorldEnv, export_trl

    export_trl(tasks, "world/", "trl/")       # or: fictionworld export trl TASKS --world world/ --out trl/
    data = load_dataset("parquet", data_files={"train": "trl/train.parquet", "validation": "trl/val.parquet"})
    trainer = GRPOTrainer(model="Qwen/Qwen3-1.7B", train_dataset=data["train"],
                          environment_factory=FictionWorldEnv, args=GRPOConfig(**RECOMMENDED_GRPO, ...))

**The contract, as TRL 1.16 implements it** (``trl/trainer/grpo_trainer.py``):

- Tools are the env class's public functions: ``inspect.getmembers(type(env), inspect.isfunction)``
  minus ``reset`` and ``get_reward``. So the class has exactly ``search``, ``open`` and ``answer``
  (the env's ``basic`` tool set); its state is private or read-only properties (not tools).
  Their JSON schemas come from the signatures and Google-style docstrings (transformers'
  ``get_json_schema``, at prompt rendering): a missing hint or argument description fails there.
- A call runs as ``method(**arguments)``. Missing, extra or mistyped arguments reach the env,
  which answers with an error observation (and coerces ``"2"`` to ``2`` for ``page``). Only
  what never reaches a method is TRL's: an unknown tool name or arguments that are no JSON
  object become ``{'error': ...}`` tool messages, counted in ``tools/failure_frequency``; a bad
  call the env answered is not (it did not raise), so that metric undercounts the model's errors.
- ``reset(**row)`` gets *every* column of the row (``remove_unused_columns`` must stay False,
  GRPO's default). A string it returns is appended to the last user message with no separator;
  this one returns None, as the row's ``prompt`` already holds the task. The task comes from the
  row, never drawn: the ``num_generations`` rollouts of a group are resets of pooled instances
  on the same row (same task, same fault seed), so their rewards compare.
- ``get_reward()`` is called once per rollout and logged as ``rewards/FictionWorldEnv/mean``
  (weight 1, added to any ``reward_funcs``); it is the strict item F1 of the recorded answer, 0
  when the rollout never called ``answer``. A final reply *without* a tool call ends the rollout
  and is not seen by the env: the rows' system prompt says so
  (:func:`~fictionworld.env.trainer.system_message`, not the env's, which takes such a reply as the answer).

**Budgets that bite**

- ``max_completion_length`` (default **512**) counts the tool output too: the tokens of every
  tool response are part of the completion (masked out of the loss, and left out of the
  ``completions/*_length`` metrics). Before feeding results back, TRL checks whether prompt +
  completion + results would exceed it (or reach the model's ``max_position_embeddings``, or
  vLLM's ``max_model_len`` in colocate mode); if so it *rolls the results back and ends the
  rollout there*, silently: the tool *did* run (the env saw the call), the model never sees its
  output, no warning is logged, and since the completion ends on the tool call's ``<|im_end|>``
  it is not even counted in ``completions/clipped_ratio``. The rollout has no answer, so it
  scores 0. One results page is ~2,200 characters (600 to 900 tokens: 883 with the demo's toy
  tokenizer): at the default, the very first search overflows (``tests/test_trl.py`` shows it). The oracle's deep-task episodes read ~4k characters of tool output (6k at
  most), its wide-task ones ~36k (70k at most, 57 calls): give a real agent several times that.
- ``max_tool_calling_iterations`` (default None: no limit) is the number of rounds of tool calls
  TRL *executes*; calls the model makes after the last round are parsed but never run, so an
  ``answer`` made then is lost (reward 0). The env's own turn and context budgets are lifted
  (:data:`~fictionworld.env.trainer.TRAINER_ENV`): TRL's limits are the ones that apply.
- No prompt truncation: system prompt, tool schemas and query (~3,000 characters) are all kept.
- With vLLM, set ``vllm_max_model_length`` to at least prompt + ``max_completion_length``.

**Other pitfalls**

- The chat template must render tool calls (TRL checks), and TRL must know how to *parse* them:
  ``add_response_schema`` recognises Qwen2.5/Qwen3/Qwen3.5, Llama 3.1/3.2, GLM-4-MoE, GPT-OSS…
  by exact template text; any other template fails at init with "Unrecognized chat template"
  (set ``tokenizer.response_schema`` yourself). On transformers < 5.13 that legacy schema needs
  ``jmespath``. Non-prefix-preserving templates (Qwen3's drops old ``<think>`` blocks) are
  swapped for TRL's training template, which the SFT warm-up must use too.
- Calls in one turn all run, each as its own env step, so the env's ``max_calls_per_turn`` does
  not apply.
- Reasoning is never an answer: TRL's response parser keeps a ``<tool_call>`` written inside
  ``<think>…</think>`` in ``reasoning_content`` (it never runs), and the env reads the ``answer``
  tool's text outside reasoning blocks (:mod:`fictionworld.env.reasoning`).
- Each trainer process opens the world once (:func:`~fictionworld.env.trainer.shared_world`); the
  pool holds ``generation_batch_size`` instances per process.

:data:`RECOMMENDED_GRPO` holds the values we suggest; ``fictionworld train-trl`` runs a real
(tiny, CPU) GRPO run with this env: see :mod:`fictionworld.integrations.trl_demo`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Iterable
from pathlib import Path

from fictionworld.env.tools import TOOL_SETS
from fictionworld.env.trainer import Episode, export_rows, knobs_json, shared_world, system_message, task_json, task_of

TOOLS = TOOL_SETS["basic"]  # the env's methods: search, open, answer
NO_EPISODE = "There is no episode: the trainer must call reset(**row) before the tools."

# GRPOConfig values we suggest (with your model's own batch sizes, learning rate, vLLM settings).
RECOMMENDED_GRPO = {
    "max_completion_length": 16_384,  # tool output counts: a wide task reads ~36k characters (~10k tokens)
    "max_tool_calling_iterations": 32,  # rounds of tool calls TRL runs; an answer after the last is lost
    "num_generations": 8,  # one group = one row = one task and fault seed
    "temperature": 1.0,
    "remove_unused_columns": False,  # reset(**row) needs task, world, seed, knobs (GRPO's default)
    "log_completions": True,  # see what the model did with the tools
}


def dataset_row(task, world_dir, *, seed: int = 0, knobs=None) -> dict:
    """One GRPO row: ``prompt`` (system message and the task's query), ``task`` (its JSON),
    ``world`` (the saved world's absolute path), ``seed`` (the episode's fault seed), ``knobs``
    (JSON of :class:`~fictionworld.knobs.Knobs`, "" for the world's own) and ``instance_id``."""
    task = task_of(task)
    return {
        "prompt": [{"role": "system", "content": system_message("basic")}, {"role": "user", "content": task.query}],
        "task": task_json(task),
        "world": str(Path(world_dir).expanduser().resolve()),
        "seed": int(seed),
        "knobs": knobs_json(knobs),
        "instance_id": task.instance_id,
    }


def export_trl(tasks: Iterable, world_dir, out, *, val_fraction: float = 0.1, seed: int = 0, knobs=None) -> dict:
    """Writes ``out/train.parquet`` and ``out/val.parquet`` (rows of :func:`dataset_row`, loadable
    with ``datasets.load_dataset("parquet", data_files=…)``). The split and each row's fault seed
    come from ``seed`` (:func:`~fictionworld.env.trainer.export_rows`). Returns the paths and counts."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    world_dir, plan = export_rows(tasks, world_dir, val_fraction=val_fraction, seed=seed)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    summary: dict = {}
    for split in ("train", "val"):
        part = [dataset_row(r.task, world_dir, seed=r.seed, knobs=knobs) for r in plan if r.split == split]
        summary[split] = str(out / f"{split}.parquet")
        summary[f"{split}_rows"] = len(part)
        pq.write_table(pa.Table.from_pylist(part, schema=_schema()), summary[split])
    return summary | {"world": str(world_dir)}


def _schema():
    import pyarrow as pa

    message = pa.struct([("role", pa.string()), ("content", pa.string())])
    return pa.schema([("prompt", pa.list_(message)), ("task", pa.string()), ("world", pa.string()),
                      ("seed", pa.int64()), ("knobs", pa.string()), ("instance_id", pa.string())])  # fmt: skip


def _tool(method):
    """A tool method whose signature and docstring (the schema TRL shows the model) are
    ``method``'s, but which takes any arguments and hands them to the env as they came: the env
    checks them and answers a bad call with an error observation, never an exception."""
    params = list(inspect.signature(method).parameters)[1:]

    @functools.wraps(method)  # inspect.signature follows __wrapped__: the schema is method's
    def call(self, *args, **kwargs) -> str:
        return self._call(method.__name__, dict(zip(params, args)) | kwargs)

    return call


class FictionWorldEnv:
    """One rollout's environment for ``GRPOTrainer(environment_factory=FictionWorldEnv)``.

    ``world_dir``, ``seed`` and ``knobs`` are defaults for rows that lack the ``world``,
    ``seed`` or ``knobs`` column; ``config`` are :class:`~fictionworld.env.EnvConfig` fields
    (``max_observation_chars``, ``max_arg_chars``…). Built with no arguments, everything comes
    from the rows. The world is opened once per process and shared by all instances."""

    def __init__(self, world_dir=None, *, seed: int = 0, knobs=None, **config):
        self._world_dir = world_dir
        self._seed = seed
        self._knobs = knobs
        self._config = config
        self._episode: Episode | None = None

    def reset(self, **row) -> None:
        """Starts the episode of ``row`` (a dataset row: ``task``, ``world``, ``seed``, ``knobs``;
        other columns are ignored). Raises ValueError on a row that names no task or world."""
        if row.get("task") is None:
            raise ValueError("the row has no 'task' column (export rows with fictionworld.integrations.trl)")
        task = task_of(row["task"])
        world = row.get("world") or self._world_dir
        if not world:
            raise ValueError("the row has no 'world' column and the env no world_dir")
        seed = row.get("seed")
        knobs = row.get("knobs")
        self._episode = None  # a failed reset leaves no stale episode behind
        self._episode = Episode(shared_world(world).web, task, seed=self._seed if seed is None else int(seed),
                                knobs=self._knobs if knobs is None else knobs, tools="basic",
                                **self._config)  # fmt: skip
        return None

    @_tool
    def search(self, query: str, page: int = 1) -> str:
        """Search the web. Returns ranked results, 10 per page, each with its URL, title, snippet and date.

        Args:
            query: What to search for.
            page: Result page, from 1.

        Returns:
            The results, or an error message.
        """

    @_tool
    def open(self, url: str) -> str:
        """Open a web page by its URL and read it as Markdown. Long directory pages are split: add ?page=N to the URL.

        Args:
            url: The full URL (https://...).

        Returns:
            The page, or an error message.
        """

    @_tool
    def answer(self, text: str) -> str:
        """Give the final answer and end the task. Use the answer format the task asks for.

        Args:
            text: The final answer.

        Returns:
            A confirmation.
        """

    def get_reward(self) -> float:
        """The rollout's reward: the strict item F1 of its answer; 0 without one (or before reset)."""
        return 0.0 if self._episode is None else self._episode.reward

    @property
    def episode(self) -> Episode | None:
        """The current episode (its ``calls``, ``answer``, ``reward_info()``), None before reset."""
        return self._episode

    def _call(self, name: str, arguments: dict) -> str:
        if self._episode is None:
            return NO_EPISODE
        return self._episode.call(name, arguments)


def env_factory(world_dir=None, **defaults):
    """A zero-argument factory for ``environment_factory``: :class:`FictionWorldEnv` instances
    with these defaults (see the class). With ``world_dir``, the world is opened now, once per
    process, so a bad path fails before training."""
    if world_dir is not None:
        shared_world(world_dir)
    return functools.partial(FictionWorldEnv, world_dir, **defaults)
