"""Decide: turn a confidence into act / ask / escalate decisions with stated costs, a
threshold whose selective risk is guaranteed, and a binary model's threshold on P(y = 1) from
the costs of its two errors."""

from ._format import threshold_text
from .actions import ActionChoice, ActionsEvaluation, choose_actions
from .binary import (
    BinaryPolicyRow,
    BinaryPolicyTable,
    BinaryThresholdChoice,
    bayes_threshold,
    binary_policy_table,
    choose_binary_threshold,
)
from .coverage import RiskCoverage, risk_coverage
from .guarantee import GuaranteeEvaluation, RiskGuarantee, guaranteed_threshold
from .policy import PolicyRow, PolicyTable, act_forecast, decision_report, policy_table
from .predictions import Decisions, decide_predictions
from .thresholds import ThresholdChoice, choose_threshold, chow_threshold

__all__ = [
    "ActionChoice",
    "ActionsEvaluation",
    "BinaryPolicyRow",
    "BinaryPolicyTable",
    "BinaryThresholdChoice",
    "Decisions",
    "GuaranteeEvaluation",
    "PolicyRow",
    "PolicyTable",
    "RiskCoverage",
    "RiskGuarantee",
    "ThresholdChoice",
    "act_forecast",
    "bayes_threshold",
    "binary_policy_table",
    "choose_actions",
    "choose_binary_threshold",
    "choose_threshold",
    "chow_threshold",
    "decide_predictions",
    "decision_report",
    "guaranteed_threshold",
    "policy_table",
    "threshold_text",
    "risk_coverage",
]
