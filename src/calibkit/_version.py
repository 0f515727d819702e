"""The version of calibkit (the base layer: every module may read it)."""

__version__ = "0.1.0"
