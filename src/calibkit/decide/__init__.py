"""Decide: turn a confidence into act / ask / escalate decisions with stated costs, and a
threshold whose selective risk is guaranteed."""

from .actions import ActionChoice, choose_actions
from .coverage import RiskCoverage, risk_coverage
from .guarantee import RiskGuarantee, guaranteed_threshold
from .thresholds import ThresholdChoice, choose_threshold, chow_threshold

__all__ = [
    "ActionChoice",
    "RiskCoverage",
    "RiskGuarantee",
    "ThresholdChoice",
    "choose_actions",
    "choose_threshold",
    "chow_threshold",
    "guaranteed_threshold",
    "risk_coverage",
]
