"""Measures of calibration: binned statistics, reliability tables, calibration errors, proper
scores, ranking, and the uncertainty of each; and the measures without bins: CORP reliability
with its score decompositions, smooth ECE, and the cumulative-gap (KS, Kuiper) tests."""

from .bins import BinStats, bin_edges, bin_index
from .corp import CorpResult, ScoreDecomposition, corp
from .cumulative import (
    CumulativeCalibration,
    cumulative_calibration,
    ks_calibration_error,
    ks_test,
    kuiper_test,
)
from .errors import classwise_ece, debiased_squared_ce, ece
from .intervals import binomial_interval
from .ranking import auc
from .reliability import ReliabilityRow, ReliabilityTable, reliability_bins
from .scores import BrierDecomposition, accuracy, brier, brier_decomposition, nll
from .slope import CalibrationSlope, calibration_slope
from .smooth import SmoothECE, smooth_ece
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
    "CorpResult",
    "CumulativeCalibration",
    "NoiseFloor",
    "ReliabilityRow",
    "ReliabilityTable",
    "ScoreDecomposition",
    "SmoothECE",
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
    "corp",
    "cumulative_calibration",
    "debiased_squared_ce",
    "ece",
    "hosmer_lemeshow",
    "ks_calibration_error",
    "ks_test",
    "kuiper_test",
    "nll",
    "noise_floor",
    "reliability_bins",
    "smooth_ece",
    "spiegelhalter_z",
]
