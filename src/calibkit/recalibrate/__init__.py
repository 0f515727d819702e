"""Recalibration maps: fitted on a calibration split, applied to new scores; the invariance check,
the BEFORE/AFTER ledger, per-group maps and their ledger, and the split helpers."""

from .base import Calibrator, load_calibrator, save_calibrator
from .beta import BetaCalibration
from .group import GroupCalibrator
from .group_ledger import GroupCalibrationLedger, GroupComparison, compare_group_calibration
from .histogram import HistogramBinning
from .invariance import InvarianceReport, check_invariance
from .isotonic import IsotonicCalibration
from .ledger import CalibrationLedger, compare_calibration
from .matrix import MatrixScaling, VectorScaling
from .methods import available_methods, make_calibrator
from .platt import PlattScaling
from .split import cross_fit, stratified_folds, stratified_split
from .temperature import TemperatureScaling, fit_temperature

__all__ = [
    "BetaCalibration",
    "CalibrationLedger",
    "Calibrator",
    "GroupCalibrationLedger",
    "GroupCalibrator",
    "GroupComparison",
    "HistogramBinning",
    "InvarianceReport",
    "IsotonicCalibration",
    "MatrixScaling",
    "PlattScaling",
    "TemperatureScaling",
    "VectorScaling",
    "available_methods",
    "check_invariance",
    "compare_calibration",
    "compare_group_calibration",
    "cross_fit",
    "fit_temperature",
    "load_calibrator",
    "make_calibrator",
    "save_calibrator",
    "stratified_folds",
    "stratified_split",
]
