"""Choosing the world model: ``WorldModelConfig`` travels in ``EnvConfig`` (so Ray rollout
actors build the same one) and behind ``--world-model template|sglang`` on the command line."""

from __future__ import annotations

import copy
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "WorldModelConfig",
    "make_world_model",
    "with_world_model",
    "use_world_model",
    "sglang_world_model",
    "QWEN_AGENTWORLD_SAMPLING",
]

TEMPLATE, SGLANG = "fictionworld/TemplateWorldModel-v1", "fictionworld/SGLangWorldModel-v0"
# The sampling the Qwen-AgentWorld model card recommends for its world model.
QWEN_AGENTWORLD_SAMPLING = {"temperature": 0.6, "top_p": 0.95, "top_k": 20}


class WorldModelConfig(BaseModel):
    """``kind="template"`` (default, no server), ``"sglang"`` (``base_url`` required), or the
    id of any world model in :mod:`fictionworld.registry` (built with ``web=``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str = "template"
    base_url: str | None = None
    model: str = "default"
    api: Literal["chat", "generate"] = "chat"
    api_key: str | None = None
    timeout: float = Field(60.0, gt=0)
    retries: int = Field(2, ge=0, le=10)
    max_attempts: int = Field(3, ge=1, le=10)  # renderings per page before the template fallback
    max_concurrency: int = Field(8, ge=1, le=1024)
    max_tokens: int = Field(4096, ge=64)
    temperature: float = Field(QWEN_AGENTWORLD_SAMPLING["temperature"], ge=0)
    top_p: float = Field(QWEN_AGENTWORLD_SAMPLING["top_p"], gt=0, le=1)
    top_k: int = QWEN_AGENTWORLD_SAMPLING["top_k"]
    extra_body: dict = Field(default_factory=dict)  # e.g. {"chat_template_kwargs": {"enable_thinking": False}}
    cooldown: float = Field(30.0, ge=0)

    @field_validator("kind")
    @classmethod
    def _registered(cls, kind: str) -> str:
        from fictionworld.registry import RegistryError, spec

        try:
            spec(kind, "world_model")
        except RegistryError as e:
            raise ValueError(str(e)) from None
        return kind

    @property
    def entry_id(self) -> str:
        from fictionworld.registry import spec

        return spec(self.kind, "world_model").id

    @model_validator(mode="after")
    def _url(self) -> WorldModelConfig:
        if self.entry_id == SGLANG and not self.base_url:
            raise ValueError("the sglang world model needs base_url (e.g. http://127.0.0.1:30000/v1)")
        return self

    @property
    def sampling(self) -> dict:
        return {"temperature": self.temperature, "top_p": self.top_p, "top_k": self.top_k}


def make_world_model(config: WorldModelConfig | dict | None, web):
    """The world model ``config`` names, bound to ``web`` (its render cache in the world's
    directory when the world was loaded from one)."""
    from fictionworld.web.model import TemplateWorldModel

    config = WorldModelConfig.model_validate(config or {})
    if config.entry_id == TEMPLATE:
        return TemplateWorldModel()
    if config.entry_id != SGLANG:
        from fictionworld.registry import make

        return make(config.kind, kind="world_model", web=web)
    from fictionworld.worldmodel.sglang import SGLangWorldModel

    c = config
    return SGLangWorldModel(web, c.base_url, c.model, api=c.api, api_key=c.api_key, timeout=c.timeout,
                            retries=c.retries, max_attempts=c.max_attempts, max_concurrency=c.max_concurrency,
                            max_tokens=c.max_tokens, sampling=c.sampling, extra_body=c.extra_body,
                            cooldown=c.cooldown)  # fmt: skip


def sglang_world_model(web, **config):
    """The SGLang world model bound to ``web`` (the registry's ``sglang`` entry)."""
    return make_world_model(WorldModelConfig(kind="sglang", **config), web)


def with_world_model(web, config: WorldModelConfig | dict | None):
    """``web`` with pages written by the world model ``config`` names: ``web`` itself when it
    has that model already, else a shallow view sharing its pages, index and linker. The web
    given is never changed (several envs may share it)."""
    config = WorldModelConfig.model_validate(config or {})
    current = getattr(web, "_world_model_config", None)
    if current == config:
        return web
    view = copy.copy(web)
    view.model = make_world_model(config, view)
    view._world_model_config = config
    return view


def use_world_model(web, config: WorldModelConfig | dict | None):
    """Sets ``web.model`` from ``config`` unless it is that kind already; returns the model.
    This changes ``web`` for everyone using it; :func:`with_world_model` does not."""
    config = WorldModelConfig.model_validate(config or {})
    current = getattr(web, "_world_model_config", None)
    if current != config:
        web.model = make_world_model(config, web)
        web._world_model_config = config
    return web.model
