"""Agents, Ray rollout workers and RL glue. An episode's record is an :class:`Episode`."""

from fictionworld.rollouts.episode_record import Episode, EpisodeStatus, Timing

__all__ = ["Episode", "EpisodeStatus", "Timing"]
