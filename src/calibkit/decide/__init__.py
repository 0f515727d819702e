"""Decide: turn a confidence into act / ask / escalate decisions with stated costs, a
threshold whose selective risk is guaranteed, and a binary model's threshold on P(y = 1) from
the costs of its two errors; measure selective prediction (AUGRC, PRR, AURC conventions, the
risk at a coverage and the coverage at a risk with intervals)."""

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
from .coverage_target import CoverageAtRisk, coverage_at_risk
from .decision_report import decision_report
from .guarantee import GuaranteeEvaluation, RiskGuarantee, guaranteed_threshold
from .operating import RiskAtCoverage, risk_at_coverage
from .policy import PolicyRow, PolicyTable, act_forecast, policy_table
from .predictions import Decisions, decide_predictions
from .selective import (
    SelectivePrediction,
    augrc,
    aurc,
    prediction_rejection_ratio,
    selective_prediction,
)
from .thresholds import ThresholdChoice, choose_threshold, chow_threshold

__all__ = [
    "ActionChoice",
    "ActionsEvaluation",
    "BinaryPolicyRow",
    "BinaryPolicyTable",
    "BinaryThresholdChoice",
    "CoverageAtRisk",
    "Decisions",
    "GuaranteeEvaluation",
    "PolicyRow",
    "PolicyTable",
    "RiskAtCoverage",
    "RiskCoverage",
    "RiskGuarantee",
    "SelectivePrediction",
    "ThresholdChoice",
    "act_forecast",
    "augrc",
    "aurc",
    "bayes_threshold",
    "binary_policy_table",
    "choose_actions",
    "choose_binary_threshold",
    "choose_threshold",
    "chow_threshold",
    "coverage_at_risk",
    "decide_predictions",
    "decision_report",
    "guaranteed_threshold",
    "policy_table",
    "prediction_rejection_ratio",
    "risk_at_coverage",
    "risk_coverage",
    "selective_prediction",
    "threshold_text",
]
