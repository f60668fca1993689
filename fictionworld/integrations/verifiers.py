"""verifiers (``verifiers==0.4.0``, its v1 API, ``verifiers.v1``): fictionworld tasks as a taskset.

verifiers loads a taskset by id: the id names an importable top-level module (``-`` read as
``_``) whose ``__all__`` exports exactly one ``Taskset`` subclass, and at most one ``Harness``
subclass, which then becomes the default harness of the taskset's agent. This module is that
export, for a one-line top-level module that re-exports it (the id cannot be dotted)::

    # fictionworld_verifiers/__init__.py (or .py), importable where verifiers runs
    from fictionworld.integrations.verifiers import *  # noqa: F403
    from fictionworld.integrations.verifiers import __all__  # noqa: F401

    vf-eval fictionworld-verifiers --env.taskset.world worlds/demo --env.taskset.tasks tasks.jsonl \\
        --env.agent.runtime.type subprocess -m MODEL --client.base-url URL -n 20 -r 4 --no-push

**The contract, as verifiers 0.4.0 implements it** (``verifiers/v1``):

- :class:`FictionWorldTaskset` reads a tasks file of the world (``load``, with
  :func:`~fictionworld.env.trainer.export_rows`: the world's hash checked, each task's fault seed
  drawn from ``seed`` as every trainer export draws it). A :class:`FictionWorldTask` carries the
  fictionworld task (query, gold table, evaluation) as JSON, its fault seed and the knobs.
- Its one shared :class:`FictionWorldToolset` (``Taskset.toolsets``: one server process for the
  whole run, started as ``python -m`` this module) opens the world once and serves the env's
  ``search`` and ``open`` over MCP, bare (``TOOL_PREFIX = None``), with the env's descriptions and
  the env's text (:class:`~fictionworld.env.service.WorldService`, as the MCP server does).
- Per rollout, verifiers' ``State`` (:class:`FictionWorldState`, pulled from the rollout before
  every tool call and pushed back after it) holds the rollout's session: its id, its task's fault
  seed and knobs, and the calls made so far, so faults are drawn in call order exactly as the
  env's episode with that seed draws them. ``FictionWorldTask.setup`` fills it in.
- v1's chat loop ends a rollout on a reply without a tool call, so there is no ``answer`` tool:
  that reply is the answer, as in :class:`~fictionworld.env.SearchEnv` (its system prompt says
  so). A rollout stopped earlier (``--env.agent.max-turns``, a token limit) is scored, like a
  truncated env episode, on the last text the agent wrote. Reasoning blocks (``<think>…</think>``)
  are never read as the answer (:mod:`fictionworld.env.reasoning`).
- The one ``@vf.reward``, ``item_f1``, is the env's reward: the strict item F1 of that answer
  (:func:`~fictionworld.env.trainer.score_response`), 0 without one. The other numbers the
  trainers log (``success``, item and row precision/recall/F1, ``answered``, ``parsed``,
  ``predicted_rows``, ``gold_rows``) are ``@vf.metric``\\ s. Both must be ``async`` (verifiers
  hands their results to ``asyncio.gather``).
- :class:`FictionWorldHarness` is the agent: verifiers' ``null`` harness, a chat loop whose only
  tools are the rollout's MCP servers (no shell, no file editing, no web search). verifiers'
  default, ``bash``, would give the model a shell, and with it the world's files.

**Pitfalls**

- The agent's runtime defaults to a Prime sandbox (``AgentConfig.runtime``); locally, set
  ``--env.agent.runtime.type subprocess``. There the chat program runs on this Python (it needs
  only verifiers' own dependencies), not in the uv environment the ``null`` harness would build
  from PyPI at the first rollout. In a sandbox it is the ``null`` harness unchanged, and the tool
  server (on this machine) is reached through a Prime tunnel.
- verifiers sets no turn limit by default: set ``--env.agent.max-turns``. Its chat loop keeps the
  head and tail of a tool result over 20,000 bytes (the env cuts at 20,000 characters); pages
  and result pages are far shorter.
- A tool call whose arguments hold a lone surrogate kills verifiers' chat program (mcp 2.0's
  client cannot encode it): that rollout ends with a ``HarnessError``, unscored; the tool server
  never sees the call and serves the other rollouts on.
- The world folder must be readable where the tool server runs; the process that loads the
  taskset opens the world too (once), to check that the tasks were made from it.
"""

# No `from __future__ import annotations`: MCP builds the tool schemas from the tools' annotations.
import sys
from hashlib import sha256
from pathlib import Path
from typing import Annotated, Any

import verifiers.v1 as vf
from pydantic import Field
from verifiers.v1.harnesses.null import NullHarness
from verifiers.v1.types import content_text

from fictionworld.env.prompts import system_prompt
from fictionworld.env.reasoning import last_words
from fictionworld.env.service import RequestError, WorldService
from fictionworld.env.tools import TOOLS
from fictionworld.env.trainer import export_rows, score_response, task_json
from fictionworld.knobs import Knobs

__all__ = ["FictionWorldTaskset", "FictionWorldTasksetConfig", "FictionWorldTask", "FictionWorldData",
           "FictionWorldState", "FictionWorldToolset", "FictionWorldToolsetConfig", "FictionWorldHarness"]  # fmt: skip

TOOL_NAMES = ("search", "open")


class FictionWorldState(vf.State):
    """One rollout's web session, shared by the rollout and the tool server: its id, the fault
    seed and knob overrides of its episode, and the calls made so far (faults go by call order)."""

    session: str = ""
    seed: int = 0
    knobs: dict[str, Any] = Field(default_factory=dict)
    calls: int = 0


class FictionWorldData(vf.TaskData):
    """A task's row: ``id`` its instance id, ``prompt`` its query, ``system_prompt`` the env's
    for ``search`` and ``open``; ``task_json`` the fictionworld task (gold table and evaluation
    included), ``seed`` its episodes' fault seed, ``knobs`` the knob overrides of its episodes,
    ``abstention`` whether its answer is scored abstention-aware."""

    task_json: str = ""
    seed: int = 0
    knobs: dict[str, Any] = Field(default_factory=dict)
    abstention: bool = False


class FictionWorldTask(vf.Task[FictionWorldData, FictionWorldState]):
    @property
    def key(self) -> str:
        """The instance id: the task's identity across runs (``--resume``), whatever its position."""
        return self.data.id or self.hash

    async def setup(self, trace: vf.Trace, runtime: vf.Runtime) -> None:
        """Starts the rollout's web session: its own id, the task's fault seed and knobs."""
        state = trace.state
        state.session, state.seed, state.knobs = trace.id, self.data.seed, dict(self.data.knobs)

    @vf.reward
    async def item_f1(self, trace: vf.Trace) -> float:
        """The env's reward: the strict item F1 of the answer, 0 without one."""
        return self.scores(trace)["score"]

    @vf.metric
    async def widesearch(self, trace: vf.Trace) -> dict[str, float]:
        """The other numbers the trainers log: success, item and row precision/recall/F1, …"""
        return {k: v for k, v in self.scores(trace).items() if k != "score"}

    def scores(self, trace: vf.Trace) -> dict[str, float]:
        """:data:`~fictionworld.env.trainer.REWARD_KEYS` of the rollout's answer: the last text
        the agent wrote outside reasoning blocks (the reply that ended the rollout, or, stopped
        earlier, its last words), as the env takes it."""
        texts = (content_text(m.content) for m in reversed(trace.assistant_messages))
        return score_response(None, self.data.task_json, recorded=last_words(texts), abstention=self.data.abstention)


def _arg(tool: str, name: str):
    """The env's description of an argument, for the schema MCP derives from the signature."""
    return Field(description=TOOLS[tool]["function"]["parameters"]["properties"][name]["description"])


class FictionWorldToolsetConfig(vf.SharedToolsetConfig):
    world: str = ""
    """The saved world's folder (absolute: the server runs in its own working folder)."""


class FictionWorldToolset(vf.Toolset[FictionWorldToolsetConfig, FictionWorldState]):
    """The env's ``search`` and ``open`` over one world, opened once for every rollout; each call
    runs in the calling rollout's session (:class:`FictionWorldState`)."""

    TOOL_PREFIX = None  # bare names, as the env's

    async def setup(self) -> None:
        self.service = WorldService.open(self.config.world)

    @vf.tool
    def search(self, query: Annotated[str, _arg("search", "query")],
               page: Annotated[int, _arg("search", "page")] = 1) -> str:  # fmt: skip
        return self._call(self.service.search, query=query, page=page)

    @vf.tool
    def open(self, url: Annotated[str, _arg("open", "url")]) -> str:
        return self._call(self.service.open_url, url=url)

    search.__doc__ = TOOLS["search"]["function"]["description"]  # MCP's tool description
    open.__doc__ = TOOLS["open"]["function"]["description"]

    def _call(self, fn, **arguments) -> str:
        s = self.state
        try:
            res = fn(**arguments, session=s.session, seed=s.seed, call=s.calls, knobs=s.knobs or None)
        except RequestError as exc:  # over a limit: refused before the web saw it (no fault drawn)
            return f"Error: {exc}"
        s.calls += 1
        return res["text"]


class FictionWorldTasksetConfig(vf.TasksetConfig):
    world: str = ""
    """The saved world's folder (``--env.taskset.world``)."""
    tasks: str = ""
    """Its tasks: a ``fictionworld tasks`` file or a WideSearch one (``--env.taskset.tasks``)."""
    seed: int = 0
    """Draws each task's fault seed, as ``fictionworld export`` does (every rollout of a task sees one web)."""
    knobs: dict[str, Any] = Field(default_factory=dict)
    """Knob overrides for every rollout (:class:`~fictionworld.knobs.Knobs` fields), over the world's."""
    abstention: bool = False
    """Score answers abstention-aware: blank and N/A cells leave precision's denominator (``--env.taskset.abstention``)."""


class FictionWorldTaskset(vf.Taskset[FictionWorldTask, FictionWorldTasksetConfig]):
    def load(self) -> list[FictionWorldTask]:
        c = self.config
        if not c.world or not c.tasks:
            raise ValueError("set the world and its tasks: --env.taskset.world DIR --env.taskset.tasks FILE")
        Knobs.model_validate(c.knobs)  # a bad knob fails here, not in every tool call
        _, rows = export_rows(c.tasks, c.world, val_fraction=0, seed=c.seed)
        prompt = system_prompt(TOOL_NAMES)
        return [FictionWorldTask(FictionWorldData(id=r.task.instance_id, prompt=r.task.query, system_prompt=prompt,
                                                  task_json=task_json(r.task), seed=r.seed, knobs=c.knobs,
                                                  abstention=c.abstention), c.task)
                for r in rows]  # fmt: skip

    @classmethod
    def toolsets(cls, config: FictionWorldTasksetConfig) -> list[vf.Toolset]:
        return [FictionWorldToolset(FictionWorldToolsetConfig(world=str(Path(config.world).expanduser().resolve())))]


class _ThisPython:
    """A local (subprocess) runtime whose PEP 723 scripts run on this Python, which has the chat
    program's dependencies (verifiers' own), instead of in a uv environment built from PyPI."""

    def __init__(self, runtime):
        self._runtime = runtime

    def __getattr__(self, name: str):
        return getattr(self._runtime, name)

    async def prepare_uv_script(self, script: str | bytes, env=None, *, activate: bool = True) -> list[str]:
        data = script.encode() if isinstance(script, str) else script
        name = f"vf-program-{sha256(data).hexdigest()[:16]}.py"
        await self._runtime.write(name, data)
        return [sys.executable, name]  # run in the runtime's folder


class FictionWorldHarness(NullHarness):
    """verifiers' ``null`` harness: a chat loop whose only tools are the rollout's MCP servers
    (here ``search`` and ``open``); on a local runtime its program runs on this Python."""

    async def setup(self, runtime: vf.Runtime) -> None:
        if runtime.type != "subprocess":
            await super().setup(runtime)

    async def launch(self, ctx, trace, runtime, endpoint, secret, mcp_urls, data, tool_interception_url=None):
        if runtime.type == "subprocess":
            runtime = _ThisPython(runtime)
        return await super().launch(ctx, trace, runtime, endpoint, secret, mcp_urls, data, tool_interception_url)


if __name__ == "__main__":  # verifiers starts the tool server as `python -m fictionworld.integrations.verifiers`
    FictionWorldToolset.run()
