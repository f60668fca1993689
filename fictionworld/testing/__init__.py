"""Test doubles that speak real protocols (no models): see :mod:`scripted_openai`; and
:mod:`nasty_actions` (nasty actions for ``SearchEnv`` from a seed) and :mod:`env_fuzz` (the checks
a step must pass on them, and the runner behind ``benchmarks/fuzz_env.py``)."""
