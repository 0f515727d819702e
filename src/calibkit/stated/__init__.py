"""Stated confidence: parse the confidence (and answer) a language model states in its reply,
elicit it, grade the answers, and audit it per model and per source."""

from __future__ import annotations

import importlib
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
from .store import FINAL_STATUSES, ReplyKey, ReplyRecord, ReplyStore, StoreError

#: Names imported on first use, by module: the audit reads tables with pyarrow, and the graders,
#: judges and intervals are not needed to parse or elicit (``import calibkit`` stays light).
_LAZY_MODULES = {
    "audit": ("Comparison", "SourceAudit", "StatedAudit", "audit_stated"),
    "grade": (
        "Grade",
        "grade_choice",
        "grade_exact",
        "grade_f1",
        "grade_numeric",
        "grade_regex",
        "normalize_answer",
    ),
    "graders": ("GRADERS", "Grader", "grade_many", "make_grader"),
    "semantic": ("SemanticConsistency", "semantic_consistency", "semantic_groups"),
    "judged": ("JudgedAudit", "JudgedBin", "JudgedMeasures", "judged_audit"),
    "judging": ("DEFAULT_JUDGE_PROMPT", "JudgeRun", "judge", "parse_verdict"),
    "ptrue": ("DEFAULT_PTRUE_PROMPT", "p_true", "true_probability"),
    "sampled": ("DEFAULT_ANSWER_PROMPT", "SampledRun", "parse_answer", "sample_answers"),
    "topk_guesses": ("DEFAULT_TOPK_PROMPT", "TOPK_REASONS", "TopKRun", "parse_topk", "topk"),
    "equivalence": ("DEFAULT_SAME_PROMPT", "JudgeEquivalence", "judge_equivalence"),
    "harness": ("HARNESS_COLUMNS", "is_harness_samples", "read_harness_samples"),
    "fit": ("StatedFit", "StatedFits", "fit_stated"),
}
_PACKAGE = "calibkit.stated"
_LAZY = {name: module for module, names in _LAZY_MODULES.items() for name in names}

__all__ = [
    "ANSWER_KEYS",
    "CONFIDENCE_KEYS",
    "Comparison",
    "ConfidenceParse",
    "DEFAULT_ANSWER_PROMPT",
    "DEFAULT_JUDGE_PROMPT",
    "DEFAULT_PROMPT",
    "DEFAULT_PTRUE_PROMPT",
    "DEFAULT_SAME_PROMPT",
    "DEFAULT_TOPK_PROMPT",
    "DEFAULT_VERBAL_SCALE",
    "ElicitationRun",
    "FINAL_STATUSES",
    "GRADERS",
    "Grade",
    "Grader",
    "HARNESS_COLUMNS",
    "Item",
    "ItemResult",
    "JudgeEquivalence",
    "JudgeRun",
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
    "SampledRun",
    "SemanticConsistency",
    "SourceAudit",
    "StatedAudit",
    "StatedFit",
    "StatedFits",
    "StoreError",
    "TOPK_REASONS",
    "TopKRun",
    "audit_stated",
    "decision_reason",
    "elicit",
    "fit_stated",
    "grade_choice",
    "grade_exact",
    "grade_f1",
    "grade_many",
    "grade_numeric",
    "grade_regex",
    "is_harness_samples",
    "judge",
    "judge_equivalence",
    "judged_audit",
    "make_grader",
    "normalize_answer",
    "p_true",
    "parse_answer",
    "parse_batch",
    "parse_confidence",
    "parse_decision",
    "parse_topk",
    "parse_verdict",
    "prompt_hash",
    "read_decision_set",
    "read_harness_samples",
    "sample_answers",
    "semantic_consistency",
    "semantic_groups",
    "topk",
    "true_probability",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module = importlib.import_module(f"{_PACKAGE}.{_LAZY[name]}")
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
