"""Agents: ``oracle`` (answerability proof), ``explorer`` (fairness proof: the question only), ``baseline`` (non-LLM heuristic), ``openai`` (an LLM
over any OpenAI-compatible endpoint, SGLang first)."""

from fictionworld.rollouts.agents.base import AGENTS, Agent, Observation, make_agent, register
from fictionworld.rollouts.agents.baseline import BaselineAgent, Strategy
from fictionworld.rollouts.agents.explorer import ExplorerAgent
from fictionworld.rollouts.agents.openai_agent import OpenAIAgent
from fictionworld.rollouts.agents.oracle import OracleAgent

__all__ = ["Agent", "Observation", "AGENTS", "make_agent", "register", "OracleAgent", "ExplorerAgent", "BaselineAgent", "Strategy",
           "OpenAIAgent"]  # fmt: skip
