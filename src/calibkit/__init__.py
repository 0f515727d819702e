"""calibkit: make a model's confidence mean something.

Audit whether a model that says 0.9 is right 9 times in 10, with the uncertainty of every number:

>>> import calibkit as ck
>>> round(ck.ece([0.9, 0.9, 0.6, 0.6], [1, 0, 1, 1], n_bins=10), 2)
0.4
"""

from ._errors import CalibkitWarning, InputError, NotFittedError
from .audit import Audit, audit
from .forecasts import (
    Forecast,
    binary,
    classwise,
    log_softmax,
    logit,
    sigmoid,
    softmax,
    top_label,
)
from .io import Predictions, read_predictions
from .measure import (
    BinStats,
    BootstrapInterval,
    BrierDecomposition,
    NoiseFloor,
    ReliabilityRow,
    ReliabilityTable,
    TestResult,
    accuracy,
    auc,
    bin_edges,
    bin_index,
    binomial_interval,
    bootstrap_ece,
    brier,
    brier_decomposition,
    classwise_ece,
    debiased_squared_ce,
    ece,
    hosmer_lemeshow,
    nll,
    noise_floor,
    reliability_bins,
    spiegelhalter_z,
)
from .recalibrate import (
    Calibrator,
    TemperatureScaling,
    fit_temperature,
    load_calibrator,
    save_calibrator,
)

__version__ = "0.1.0"

__all__ = [
    "Audit",
    "BinStats",
    "BootstrapInterval",
    "BrierDecomposition",
    "CalibkitWarning",
    "Calibrator",
    "Forecast",
    "InputError",
    "NoiseFloor",
    "NotFittedError",
    "Predictions",
    "ReliabilityRow",
    "ReliabilityTable",
    "TemperatureScaling",
    "TestResult",
    "accuracy",
    "auc",
    "audit",
    "bin_edges",
    "bin_index",
    "binary",
    "binomial_interval",
    "bootstrap_ece",
    "brier",
    "brier_decomposition",
    "classwise",
    "classwise_ece",
    "debiased_squared_ce",
    "ece",
    "fit_temperature",
    "hosmer_lemeshow",
    "load_calibrator",
    "log_softmax",
    "logit",
    "nll",
    "noise_floor",
    "read_predictions",
    "reliability_bins",
    "save_calibrator",
    "sigmoid",
    "softmax",
    "spiegelhalter_z",
    "top_label",
]
