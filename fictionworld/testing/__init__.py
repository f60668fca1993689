"""Test doubles that speak real protocols (no models): see :mod:`scripted_openai`; and
:mod:`env_fuzz`, nasty actions for ``SearchEnv`` from a seed (``benchmarks/fuzz_env.py``)."""
