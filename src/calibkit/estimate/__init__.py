"""Estimated performance without labels: CBPE, ATC and DoC fitted on labelled reference rows
and read on unlabelled target rows, each estimate with a bootstrap interval that includes the
fit's error, and the reasons not to trust it."""

from .estimator import PerformanceEstimator, estimate_performance
from .periods import PeriodEstimate, PeriodEstimates
from .result import PerformanceEstimate
from .shift import ShiftTest
from .table import estimate_by_period

__all__ = [
    "PerformanceEstimate",
    "PerformanceEstimator",
    "PeriodEstimate",
    "PeriodEstimates",
    "ShiftTest",
    "estimate_by_period",
    "estimate_performance",
]
