"""calibkit: make a model's confidence mean something.

Audit whether a model that says 0.9 is right 9 times in 10, with the uncertainty of every number:

>>> import calibkit as ck
>>> round(ck.ece([0.9, 0.9, 0.6, 0.6], [1, 0, 1, 1], n_bins=10), 2)
0.4
"""

from typing import Any

from ._errors import CalibkitWarning, InputError, NotFittedError
from ._version import __version__ as __version__
from .audit import Audit, GroupedAudit, audit
from .decide import (
    ActionChoice,
    BinaryPolicyTable,
    BinaryThresholdChoice,
    CoverageAtRisk,
    PolicyTable,
    RiskAtCoverage,
    RiskCoverage,
    RiskGuarantee,
    SelectivePrediction,
    ThresholdChoice,
    augrc,
    aurc,
    bayes_threshold,
    binary_policy_table,
    choose_actions,
    choose_binary_threshold,
    choose_threshold,
    chow_threshold,
    coverage_at_risk,
    decision_report,
    guaranteed_threshold,
    policy_table,
    prediction_rejection_ratio,
    risk_at_coverage,
    risk_coverage,
    selective_prediction,
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
    CorpResult,
    CumulativeCalibration,
    NoiseFloor,
    ReliabilityRow,
    ReliabilityTable,
    ScoreDecomposition,
    SmoothECE,
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
    corp,
    cumulative_calibration,
    debiased_squared_ce,
    ece,
    hosmer_lemeshow,
    ks_calibration_error,
    ks_test,
    kuiper_test,
    nll,
    noise_floor,
    reliability_bins,
    smooth_ece,
    spiegelhalter_z,
)
from .meter import CalibrationMeter
from .recalibrate import (
    BetaCalibration,
    CalibrationLedger,
    Calibrator,
    GroupCalibrationLedger,
    GroupCalibrator,
    HistogramBinning,
    InvarianceReport,
    IsotonicCalibration,
    MatrixScaling,
    PlattScaling,
    TemperatureScaling,
    VectorScaling,
    check_invariance,
    compare_calibration,
    compare_group_calibration,
    cross_fit,
    fit_temperature,
    load_calibrator,
    make_calibrator,
    save_calibrator,
    stratified_split,
)
from .record import (
    CalibrationRecord,
    RecordComparison,
    calibration_record,
    compare_records,
    read_record,
    verify_record,
    write_record,
)
from .report import (
    before_after,
    corp_diagram,
    cost_curve,
    generalized_risk_coverage_plot,
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
    "CalibratedClassifier",
    "CalibrationDisplay",
    "CalibrationLedger",
    "CalibrationMeter",
    "CalibrationRecord",
    "CalibrationSlope",
    "Calibrator",
    "ConfidenceParse",
    "CorpResult",
    "CoverageAtRisk",
    "CumulativeCalibration",
    "Forecast",
    "GapSequence",
    "GroupCalibrationLedger",
    "GroupCalibrator",
    "GroupedAudit",
    "HistogramBinning",
    "InputError",
    "InvarianceReport",
    "IsotonicCalibration",
    "MatrixScaling",
    "Monitor",
    "NoiseFloor",
    "NotFittedError",
    "ParseReport",
    "PerformanceEstimate",
    "PerformanceEstimator",
    "PeriodEstimate",
    "PeriodEstimates",
    "PlattScaling",
    "PolicyTable",
    "Predictions",
    "RecordComparison",
    "ReliabilityRow",
    "ReliabilityTable",
    "RiskAtCoverage",
    "RiskCoverage",
    "RiskGuarantee",
    "ScoreDecomposition",
    "SegmentSearch",
    "SelectivePrediction",
    "SequentialMonitor",
    "SequentialStatus",
    "SmoothECE",
    "StatedAudit",
    "TemperatureScaling",
    "TestResult",
    "ThresholdChoice",
    "VectorScaling",
    "accuracy",
    "auc",
    "audit",
    "audit_stated",
    "augrc",
    "aurc",
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
    "compare_group_calibration",
    "compare_records",
    "corp",
    "corp_diagram",
    "cost_curve",
    "coverage_at_risk",
    "cross_fit",
    "cumulative_calibration",
    "debiased_squared_ce",
    "decision_report",
    "ece",
    "estimate_by_period",
    "estimate_performance",
    "find_miscalibrated_segments",
    "fit_temperature",
    "generalized_risk_coverage_plot",
    "guaranteed_threshold",
    "hosmer_lemeshow",
    "ks_calibration_error",
    "ks_test",
    "kuiper_test",
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
    "prediction_rejection_ratio",
    "read_predictions",
    "read_record",
    "reliability_bins",
    "reliability_diagram",
    "risk_at_coverage",
    "risk_coverage",
    "risk_coverage_plot",
    "save_calibrator",
    "save_figure",
    "selective_prediction",
    "sigmoid",
    "smooth_ece",
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
    if name in (
        "PerformanceEstimate",
        "PerformanceEstimator",
        "PeriodEstimate",
        "PeriodEstimates",
        "estimate_by_period",
        "estimate_performance",
    ):
        from . import estimate

        return getattr(estimate, name)
    if name in ("Monitor", "monitor"):
        from . import monitoring

        return getattr(monitoring, name)
    if name in ("GapSequence", "SequentialMonitor", "SequentialStatus"):
        from . import sequential

        return getattr(sequential, name)
    if name in ("SegmentSearch", "find_miscalibrated_segments"):
        from . import segments

        return getattr(segments, name)
    if name in ("CalibratedClassifier", "CalibrationDisplay", "sklearn"):
        import importlib

        module = importlib.import_module(".sklearn", __name__)  # needs scikit-learn
        return module if name == "sklearn" else getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
