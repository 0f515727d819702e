"""Estimated performance without labels: CBPE, ATC and DoC fitted on labelled reference rows
and read on unlabelled target rows, each estimate with a bootstrap interval that includes the
fit's error, and the reasons not to trust it."""

from .estimator import PerformanceEstimator, estimate_performance
from .result import PerformanceEstimate

__all__ = ["PerformanceEstimate", "PerformanceEstimator", "estimate_performance"]
