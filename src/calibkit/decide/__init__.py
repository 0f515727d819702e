"""Decide: turn a confidence into act / defer decisions with stated costs."""

from .coverage import RiskCoverage, risk_coverage
from .thresholds import ThresholdChoice, choose_threshold, chow_threshold

__all__ = ["RiskCoverage", "ThresholdChoice", "choose_threshold", "chow_threshold", "risk_coverage"]
