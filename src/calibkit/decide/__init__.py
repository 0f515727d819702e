"""Decide: turn a confidence into act / ask / escalate decisions with stated costs, and a
threshold whose selective risk is guaranteed."""

from .actions import ActionChoice, ActionsEvaluation, choose_actions
from .coverage import RiskCoverage, risk_coverage
from .guarantee import GuaranteeEvaluation, RiskGuarantee, guaranteed_threshold
from .policy import PolicyRow, PolicyTable, act_forecast, decision_report, policy_table
from .thresholds import ThresholdChoice, choose_threshold, chow_threshold

__all__ = [
    "ActionChoice",
    "ActionsEvaluation",
    "GuaranteeEvaluation",
    "PolicyRow",
    "PolicyTable",
    "RiskCoverage",
    "RiskGuarantee",
    "ThresholdChoice",
    "act_forecast",
    "choose_actions",
    "choose_threshold",
    "chow_threshold",
    "decision_report",
    "guaranteed_threshold",
    "policy_table",
    "risk_coverage",
]
