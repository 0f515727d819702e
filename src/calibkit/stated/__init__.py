"""Stated confidence: parse the confidence (and answer) a language model states in its reply,
and audit it per model and per source."""

from __future__ import annotations

from typing import Any

from .decision_set import read_decision_set
from .elicit import (
    DEFAULT_PROMPT,
    ElicitationRun,
    Item,
    ItemResult,
    ProviderUnreachable,
    elicit,
    prompt_hash,
)
from .judge import DEFAULT_JUDGE_PROMPT, JudgeRun, judge, parse_verdict
from .parse import (
    ANSWER_KEYS,
    CONFIDENCE_KEYS,
    DEFAULT_VERBAL_SCALE,
    MAX_REPLY_CHARS,
    REASONS,
    ConfidenceParse,
    ParseReport,
    decision_reason,
    parse_batch,
    parse_confidence,
    parse_decision,
)
from .ptrue import DEFAULT_PTRUE_PROMPT, p_true, true_probability
from .store import FINAL_STATUSES, ReplyKey, ReplyRecord, ReplyStore, StoreError

__all__ = [
    "true_probability",
    "parse_verdict",
    "p_true",
    "judge",
    "JudgeRun",
    "DEFAULT_PTRUE_PROMPT",
    "DEFAULT_JUDGE_PROMPT",
    "ANSWER_KEYS",
    "CONFIDENCE_KEYS",
    "Comparison",
    "ConfidenceParse",
    "DEFAULT_PROMPT",
    "DEFAULT_VERBAL_SCALE",
    "ElicitationRun",
    "FINAL_STATUSES",
    "Item",
    "ItemResult",
    "MAX_REPLY_CHARS",
    "ParseReport",
    "ProviderUnreachable",
    "REASONS",
    "ReplyKey",
    "ReplyRecord",
    "ReplyStore",
    "SourceAudit",
    "StatedAudit",
    "StoreError",
    "audit_stated",
    "decision_reason",
    "elicit",
    "parse_batch",
    "parse_confidence",
    "parse_decision",
    "prompt_hash",
    "read_decision_set",
]
#: Names from .audit, imported on first use: the audit reads tables with pyarrow, which
#: ``import calibkit`` does not load.
_LAZY = {"Comparison", "SourceAudit", "StatedAudit", "audit_stated"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from . import audit

        return getattr(audit, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
