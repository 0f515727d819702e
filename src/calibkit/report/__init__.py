"""Rendering results: terminal tables (rich). Renderers import their libraries lazily, so
``import calibkit.report`` costs nothing until one is used."""

from __future__ import annotations

from typing import Any

__all__ = ["render_audit"]


def __getattr__(name: str) -> Any:
    if name == "render_audit":
        from .terminal import render_audit

        return render_audit
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
