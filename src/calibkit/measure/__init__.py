"""Measures of calibration: binned statistics, reliability tables, calibration errors, proper
scores, ranking, and the uncertainty of each."""

from .bins import BinStats, bin_edges, bin_index
from .errors import classwise_ece, debiased_squared_ce, ece
from .intervals import binomial_interval
from .ranking import auc
from .reliability import ReliabilityRow, ReliabilityTable, reliability_bins
from .scores import BrierDecomposition, accuracy, brier, brier_decomposition, nll
from .slope import CalibrationSlope, calibration_slope
from .uncertainty import (
    BootstrapInterval,
    NoiseFloor,
    TestResult,
    bootstrap_ece,
    hosmer_lemeshow,
    noise_floor,
    spiegelhalter_z,
)

__all__ = [
    "BinStats",
    "BootstrapInterval",
    "BrierDecomposition",
    "CalibrationSlope",
    "NoiseFloor",
    "ReliabilityRow",
    "ReliabilityTable",
    "TestResult",
    "accuracy",
    "auc",
    "bin_edges",
    "bin_index",
    "binomial_interval",
    "bootstrap_ece",
    "brier",
    "brier_decomposition",
    "calibration_slope",
    "classwise_ece",
    "debiased_squared_ce",
    "ece",
    "hosmer_lemeshow",
    "nll",
    "noise_floor",
    "reliability_bins",
    "spiegelhalter_z",
]
