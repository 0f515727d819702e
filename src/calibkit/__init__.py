"""calibkit: make a model's confidence mean something.

Audit whether a model that says 0.9 is right 9 times in 10, with the uncertainty of every number:

>>> import calibkit as ck
>>> round(ck.ece([0.9, 0.9, 0.6, 0.6], [1, 0, 1, 1], n_bins=10), 2)
0.4
"""

from typing import Any

from ._errors import CalibkitWarning, InputError, NotFittedError
from ._version import __version__ as __version__
from .audit import Audit, audit
from .decide import (
    ActionChoice,
    BinaryPolicyTable,
    BinaryThresholdChoice,
    PolicyTable,
    RiskCoverage,
    RiskGuarantee,
    ThresholdChoice,
    bayes_threshold,
    binary_policy_table,
    choose_actions,
    choose_binary_threshold,
    choose_threshold,
    chow_threshold,
    decision_report,
    guaranteed_threshold,
    policy_table,
    risk_coverage,
)
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
    CalibrationSlope,
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
    calibration_slope,
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
    BetaCalibration,
    CalibrationLedger,
    Calibrator,
    HistogramBinning,
    InvarianceReport,
    IsotonicCalibration,
    MatrixScaling,
    PlattScaling,
    TemperatureScaling,
    VectorScaling,
    check_invariance,
    compare_calibration,
    cross_fit,
    fit_temperature,
    load_calibrator,
    make_calibrator,
    save_calibrator,
    stratified_split,
)
from .record import (
    RecordComparison,
    calibration_record,
    compare_records,
    read_record,
    verify_record,
    write_record,
)
from .report import (
    before_after,
    cost_curve,
    monitor_plot,
    reliability_diagram,
    risk_coverage_plot,
    save_figure,
    write_report,
)
from .stated import (
    ConfidenceParse,
    ParseReport,
    parse_batch,
    parse_confidence,
    parse_decision,
)

__all__ = [
    "ActionChoice",
    "Audit",
    "BetaCalibration",
    "BinStats",
    "BinaryPolicyTable",
    "BinaryThresholdChoice",
    "BootstrapInterval",
    "BrierDecomposition",
    "CalibkitWarning",
    "CalibrationLedger",
    "CalibrationSlope",
    "Calibrator",
    "ConfidenceParse",
    "Forecast",
    "HistogramBinning",
    "InputError",
    "InvarianceReport",
    "IsotonicCalibration",
    "MatrixScaling",
    "Monitor",
    "NoiseFloor",
    "NotFittedError",
    "ParseReport",
    "PlattScaling",
    "PolicyTable",
    "Predictions",
    "RecordComparison",
    "ReliabilityRow",
    "ReliabilityTable",
    "RiskCoverage",
    "RiskGuarantee",
    "StatedAudit",
    "TemperatureScaling",
    "TestResult",
    "ThresholdChoice",
    "VectorScaling",
    "accuracy",
    "auc",
    "audit",
    "audit_stated",
    "bayes_threshold",
    "before_after",
    "bin_edges",
    "bin_index",
    "binary",
    "binary_policy_table",
    "binomial_interval",
    "bootstrap_ece",
    "brier",
    "brier_decomposition",
    "calibration_record",
    "calibration_slope",
    "check_invariance",
    "choose_actions",
    "choose_binary_threshold",
    "choose_threshold",
    "chow_threshold",
    "classwise",
    "classwise_ece",
    "compare_calibration",
    "compare_records",
    "cost_curve",
    "cross_fit",
    "debiased_squared_ce",
    "decision_report",
    "ece",
    "fit_temperature",
    "guaranteed_threshold",
    "hosmer_lemeshow",
    "load_calibrator",
    "log_softmax",
    "logit",
    "make_calibrator",
    "monitor",
    "monitor_plot",
    "nll",
    "noise_floor",
    "parse_batch",
    "parse_confidence",
    "parse_decision",
    "policy_table",
    "read_predictions",
    "read_record",
    "reliability_bins",
    "reliability_diagram",
    "risk_coverage",
    "risk_coverage_plot",
    "save_calibrator",
    "save_figure",
    "sigmoid",
    "softmax",
    "spiegelhalter_z",
    "stratified_split",
    "top_label",
    "verify_record",
    "write_record",
    "write_report",
]


def __getattr__(name: str) -> Any:
    """Names whose modules load heavy libraries, imported on first use."""
    if name in ("StatedAudit", "audit_stated"):
        from .stated import audit as stated_audit

        return getattr(stated_audit, name)
    if name in ("Monitor", "monitor"):
        from . import monitoring

        return getattr(monitoring, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
