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
from .grade import (
    Grade,
    grade_choice,
    grade_exact,
    grade_f1,
    grade_numeric,
    grade_regex,
    normalize_answer,
)
from .graders import GRADERS, Grader, grade_many, make_grader
from .judged import JudgedAudit, JudgedBin, JudgedMeasures, judged_audit
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
from .semantic import SemanticConsistency, semantic_consistency, semantic_groups
from .store import FINAL_STATUSES, ReplyKey, ReplyRecord, ReplyStore, StoreError

__all__ = [
    "ANSWER_KEYS",
    "CONFIDENCE_KEYS",
    "Comparison",
    "ConfidenceParse",
    "DEFAULT_PROMPT",
    "DEFAULT_VERBAL_SCALE",
    "ElicitationRun",
    "FINAL_STATUSES",
    "GRADERS",
    "Grade",
    "Grader",
    "Item",
    "ItemResult",
    "JudgedAudit",
    "JudgedBin",
    "JudgedMeasures",
    "MAX_REPLY_CHARS",
    "ParseReport",
    "ProviderUnreachable",
    "REASONS",
    "ReplyKey",
    "ReplyRecord",
    "ReplyStore",
    "SemanticConsistency",
    "SourceAudit",
    "StatedAudit",
    "StoreError",
    "audit_stated",
    "decision_reason",
    "elicit",
    "grade_choice",
    "grade_exact",
    "grade_f1",
    "grade_many",
    "grade_numeric",
    "grade_regex",
    "make_grader",
    "normalize_answer",
    "judged_audit",
    "parse_batch",
    "parse_confidence",
    "parse_decision",
    "prompt_hash",
    "read_decision_set",
    "semantic_consistency",
    "semantic_groups",
]
#: Names from .audit, imported on first use: the audit reads tables with pyarrow, which
#: ``import calibkit`` does not load.
_LAZY = {"Comparison", "SourceAudit", "StatedAudit", "audit_stated"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from . import audit

        return getattr(audit, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
