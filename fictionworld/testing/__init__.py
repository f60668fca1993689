"""Test doubles that speak real protocols (no models): see :mod:`scripted_openai`."""
