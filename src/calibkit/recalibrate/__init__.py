"""Recalibration maps: fitted on a calibration split, applied to new scores."""

from .base import Calibrator, load_calibrator, save_calibrator
from .temperature import TemperatureScaling, fit_temperature

__all__ = [
    "Calibrator",
    "TemperatureScaling",
    "fit_temperature",
    "load_calibrator",
    "save_calibrator",
]
