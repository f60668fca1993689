"""One registry for every extension point, with versioned ids (as Gymnasium's ``make``).

Envs, task kinds, world models, search backends, scorers, agents and world generators are all
registered here under ids of the form ``namespace/Name-vN`` and built with :func:`make`:

>>> import fictionworld as fw
>>> fw.registered("scorer")
['fictionworld/CompatScorer-v0', 'fictionworld/StrictAbstentionScorer-v0', 'fictionworld/StrictScorer-v0']
>>> fw.registry.spec("strict").id          # short aliases name the current version
'fictionworld/StrictScorer-v0'

An entry point is ``"package.module:attr"`` (a class, or a function returning the object) and
is imported only when made, so this module, at the bottom of the layers, names the higher
layers without importing them, and ``import fictionworld`` never loads a trainer, a server or
Ray. Register your own with :func:`register` (bump ``-vN`` whenever what it produces changes:
a run records the ids it used, so an old id must keep meaning the old thing).
"""

from __future__ import annotations

import difflib
import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from fictionworld.errors import FictionWorldError

__all__ = ["EntrySpec", "Kind", "register", "make", "spec", "registered", "RegistryError", "KINDS"]

Kind = Literal["web", "env", "task", "world_model", "search_backend", "scorer", "agent", "generator"]
KINDS: tuple[str, ...] = Kind.__args__
_ID = re.compile(r"^(?:(?P<ns>[\w.-]+)/)?(?P<name>[\w.]+?)(?:-v(?P<version>\d+))?$")


class RegistryError(FictionWorldError, KeyError):
    """An unknown id, a wrong kind, or an id registered twice."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


@dataclass(frozen=True)
class EntrySpec:
    """What :func:`make` needs to build one registered thing."""

    id: str
    kind: Kind
    entry_point: str | Callable[..., Any]
    kwargs: dict[str, Any] = field(default_factory=dict)  # defaults, overridden by make(**config)
    aliases: tuple[str, ...] = ()
    description: str = ""

    @property
    def version(self) -> int:
        m = _ID.match(self.id)
        return int(m["version"]) if m and m["version"] else 0

    def load(self) -> Callable[..., Any]:
        """The class or factory behind the entry point (imported now)."""
        if callable(self.entry_point):
            return self.entry_point
        module, _, attr = self.entry_point.partition(":")
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
        return obj


_REGISTRY: dict[str, EntrySpec] = {}
_ALIASES: dict[str, str] = {}


def register(
    id: str,
    *,
    kind: Kind,
    entry_point: str | Callable[..., Any],
    aliases: tuple[str, ...] = (),
    description: str = "",
    **kwargs: Any,
) -> EntrySpec:
    """Register ``entry_point`` under ``id`` (``namespace/Name-vN``); ``kwargs`` are defaults
    :func:`make` passes unless overridden. Refuses an id or alias that is taken."""
    if kind not in KINDS:
        raise RegistryError(f"unknown kind {kind!r}; one of {', '.join(KINDS)}")
    m = _ID.match(id)
    if not m or not m["version"]:
        raise RegistryError(f"registry ids look like 'namespace/Name-v0', not {id!r}")
    for key in (id, *aliases):
        if key in _REGISTRY or key in _ALIASES:
            raise RegistryError(f"{key!r} is registered already")
    entry = EntrySpec(id, kind, entry_point, dict(kwargs), tuple(aliases), description)
    _REGISTRY[id] = entry
    for a in aliases:
        _ALIASES[a] = id
    return entry


def spec(id: str, kind: Kind | None = None) -> EntrySpec:
    """The entry for ``id``: a full id, an alias, or an id without ``-vN`` (its latest
    version). ``kind`` checks what it is; an unknown id names the closest known ones."""
    key = _ALIASES.get(id, id)
    entry = _REGISTRY.get(key)
    if entry is None and (m := _ID.match(id)) and not m["version"]:
        versions = [e for e in _REGISTRY.values() if e.id.rsplit("-v", 1)[0] == id]
        entry = max(versions, key=lambda e: e.version, default=None)
    if entry is None:
        known = registered(kind)
        close = difflib.get_close_matches(id, known + [a for a, i in _ALIASES.items() if i in known], n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; registered: {', '.join(known) or 'none'}"
        raise RegistryError(f"no {kind or 'entry'} registered as {id!r}{hint}")
    if kind is not None and entry.kind != kind:
        raise RegistryError(f"{entry.id} is a {entry.kind}, not a {kind}")
    return entry


def registered(kind: Kind | None = None) -> list[str]:
    """Every registered id (of one kind), sorted."""
    return sorted(i for i, e in _REGISTRY.items() if kind is None or e.kind == kind)


def make(id: str, *, kind: Kind | None = None, **config: Any) -> Any:
    """Build the registered thing ``id`` with its defaults updated by ``config``:
    ``make("fictionworld/Search-v0", world=w, max_turns=10)`` is a :class:`SearchEnv`."""
    entry = spec(id, kind)
    return entry.load()(**(entry.kwargs | config))


# -- built-ins --------------------------------------------------------------------------------
# Names only: nothing below is imported until it is made.
_BUILTINS: tuple[tuple[str, Kind, str, tuple[str, ...], str, dict], ...] = (
    ("fictionworld/World-v0", "generator", "fictionworld:generate", ("world",),
     "a whole world from a seed and a spec: the generators package's stages in causal order", {}),
    ("fictionworld/Web-v0", "web", "fictionworld.web:web_for", ("web",),
     "a world's web: opened from its directory when saved with one, else rendered and indexed now", {}),
    ("fictionworld/Search-v0", "env", "fictionworld.env.env:SearchEnv.from_config", ("search",),
     "search/open/answer tools over a world's web; strict reward", {}),
    ("fictionworld/AgentWorldSearch-v0", "env", "fictionworld.env.env:SearchEnv.from_config", ("agentworld",),
     "Qwen-AgentWorld's web_search/web_extractor/dict_memory tools plus answer", {"tools": "agentworld"}),
    ("fictionworld/WideTable-v1", "task", "fictionworld.tasks.wide:WideTaskGenerator", ("wide",),
     "WideSearch-style tables from graph queries; columns a base rate answers are not drawn (v1)", {}),
    ("fictionworld/DeepQA-v0", "task", "fictionworld.tasks.deep:DeepTaskGenerator", ("deep",),
     "multi-hop questions with one answer", {}),
    ("fictionworld/TemplateWorldModel-v1", "world_model", "fictionworld.web.model:TemplateWorldModel",
     ("template",), "pages rendered from templates (no server); snippets read link targets with \"(…)\" whole (v1)",
     {}),
    ("fictionworld/SGLangWorldModel-v0", "world_model", "fictionworld.worldmodel.config:sglang_world_model",
     ("sglang",), "pages written by an LLM on an SGLang server, verified against the graph", {}),
    ("fictionworld/Tantivy-v0", "search_backend", "fictionworld.web.index:TantivyIndex.build", ("tantivy",),
     "BM25 full-text index (tantivy)", {}),
    ("fictionworld/StrictScorer-v0", "scorer", "fictionworld.scoring.strict:score_strict", ("strict",),
     "the RL reward: WideSearch metrics that hedging cannot game", {}),
    ("fictionworld/StrictAbstentionScorer-v0", "scorer", "fictionworld.scoring.strict:score_strict",
     ("strict-abstain",), "the strict reward where a blank or N/A cell is no claim: it leaves item precision's "
     "denominator, a wrong cell does not", {"abstention": True}),
    ("fictionworld/CompatScorer-v0", "scorer", "fictionworld.scoring.compat:score_compat", ("compat",),
     "the official WideSearch evaluator's semantics", {}),
    ("fictionworld/Oracle-v0", "agent", "fictionworld.rollouts.agents.oracle:OracleAgent", ("oracle",),
     "scripted agent that knows each task's provenance (an upper bound)", {}),
    ("fictionworld/Baseline-v0", "agent", "fictionworld.rollouts.agents.baseline:BaselineAgent", ("baseline",),
     "scripted search-and-read agent with a tunable strategy", {}),
    ("fictionworld/Explorer-v0", "agent", "fictionworld.rollouts.agents.explorer:ExplorerAgent", ("explorer",),
     "scripted agent that knows only the question: lists, checks and reads everything through the tools", {}),
    ("fictionworld/OpenAI-v0", "agent", "fictionworld.rollouts.agents.openai_agent:OpenAIAgent", ("openai",),
     "an LLM behind an OpenAI-compatible chat API", {}),
)  # fmt: skip

for _id, _kind, _entry, _aliases, _desc, _kw in _BUILTINS:
    register(_id, kind=_kind, entry_point=_entry, aliases=_aliases, description=_desc, **_kw)
