"""Agents: ``oracle`` (answerability proof), ``explorer`` (fairness proof: the question only), ``baseline`` (non-LLM heuristic), ``openai`` (an LLM
over any OpenAI-compatible endpoint, SGLang first)."""

from rollout.agents.base import AGENTS, Agent, Observation, make_agent, register
from rollout.agents.baseline import BaselineAgent, Strategy
from rollout.agents.explorer import ExplorerAgent
from rollout.agents.openai_agent import OpenAIAgent
from rollout.agents.oracle import OracleAgent

__all__ = ["Agent", "Observation", "AGENTS", "make_agent", "register", "OracleAgent", "ExplorerAgent", "BaselineAgent", "Strategy",
           "OpenAIAgent"]  # fmt: skip
