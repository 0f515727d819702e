"""Stated confidence: parse the confidence (and answer) a language model states in its reply,
and audit it per model and per source."""

from __future__ import annotations

from typing import Any

from .parse import (
    ANSWER_KEYS,
    CONFIDENCE_KEYS,
    DEFAULT_VERBAL_SCALE,
    REASONS,
    ConfidenceParse,
    ParseReport,
    parse_batch,
    parse_confidence,
    parse_decision,
)

__all__ = [
    "ANSWER_KEYS",
    "CONFIDENCE_KEYS",
    "Comparison",
    "ConfidenceParse",
    "DEFAULT_VERBAL_SCALE",
    "ParseReport",
    "REASONS",
    "SourceAudit",
    "StatedAudit",
    "audit_stated",
    "parse_batch",
    "parse_confidence",
    "parse_decision",
]

#: Names from .audit, imported on first use: the audit reads tables with pyarrow, which
#: ``import calibkit`` does not load.
_LAZY = {"Comparison", "SourceAudit", "StatedAudit", "audit_stated"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from . import audit

        return getattr(audit, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
