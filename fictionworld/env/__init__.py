"""The search environment agents act in: ``SearchEnv`` with tools ``search``/``open``/``answer``
and the Qwen-AgentWorld ``web_search``/``web_extractor``, in OpenAI function-calling format;
``check_env`` checks an env keeps that contract."""

from fictionworld.env.checker import EnvCheckError, check_env
from fictionworld.env.env import EnvConfig, SearchEnv, StepRecord
from fictionworld.env.tools import TOOL_SETS, TOOLS, ToolCall, parse_action, tool_schemas

__all__ = [
    "SearchEnv",
    "EnvConfig",
    "StepRecord",
    "TOOLS",
    "TOOL_SETS",
    "ToolCall",
    "parse_action",
    "tool_schemas",
    "check_env",
    "EnvCheckError",
]
