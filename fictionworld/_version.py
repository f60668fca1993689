"""The package version (a module of its own: lower layers read it without importing the facade)."""

__version__ = "0.1.0"
