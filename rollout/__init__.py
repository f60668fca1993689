"""Agents, Ray rollout workers and RL glue (arrives with the rollout issue; nothing here yet)."""
