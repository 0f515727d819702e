"""Stated confidence: parse the confidence (and answer) a language model states in its reply."""

from __future__ import annotations

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
    "DEFAULT_VERBAL_SCALE",
    "REASONS",
    "ConfidenceParse",
    "ParseReport",
    "parse_batch",
    "parse_confidence",
    "parse_decision",
]
