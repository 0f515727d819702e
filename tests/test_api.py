"""The public face: the names the README documents, a sorted __all__, and a light import."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import calibkit as ck

EXPECTED = [
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


def test_all_is_sorted_and_pinned():
    assert ck.__all__ == sorted(ck.__all__)
    assert ck.__all__ == EXPECTED
    for name in ck.__all__:
        assert hasattr(ck, name), name


def test_contract_signatures_from_design():
    # arrays first, options keyword-only, the documented defaults
    def keyword_defaults(fn):
        params = inspect.signature(fn).parameters.values()
        return {p.name: p.default for p in params if p.kind is p.KEYWORD_ONLY}

    assert keyword_defaults(ck.reliability_bins) == {
        "n_bins": 15,
        "strategy": "uniform",
        "closed": "right",
        "edges": None,
        "interval": "wilson",
        "level": 0.95,
        "sample_weight": None,
    }
    assert keyword_defaults(ck.ece) == {
        "n_bins": 15,
        "strategy": "uniform",
        "closed": "right",
        "norm": "l1",
        "edges": None,
        "sample_weight": None,
    }
    for fn in (ck.brier, ck.nll, ck.accuracy):
        assert list(inspect.signature(fn).parameters)[:2] == ["probs", "labels"]
    assert list(inspect.signature(ck.auc).parameters) == ["scores", "labels", "sample_weight"]
    assert keyword_defaults(ck.auc) == {"sample_weight": None}


def test_errors_are_value_errors_and_warnings_user_warnings():
    assert issubclass(ck.InputError, ValueError)
    assert issubclass(ck.CalibkitWarning, UserWarning)


def test_import_is_light():
    code = (
        "import sys, calibkit; "
        "print(sorted(m for m in ('scipy', 'pyarrow', 'rich', 'typer', 'numba', 'pandas', 'matplotlib', 'torch') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_small_audit_loads_no_scipy():
    """The whole audit of the shipped 10,000-row CSV (CORP's isotonic fit included) runs on
    numpy alone: importing scipy.optimize would cost a third of the command's wall time."""
    code = (
        "import sys, calibkit as ck; "
        "p = ck.read_predictions('examples/data/resnet110_c10.csv'); "
        "ck.audit(p.scores, p.labels, from_logits=p.kind == 'logits'); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy')[:3])"
    )
    out = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parents[1],
    )
    assert out.stdout.strip() == "[]"


def test_results_are_frozen():
    import dataclasses

    import pytest

    table = ck.reliability_bins([0.2, 0.8], [0, 1], n_bins=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        table.level = 0.5  # type: ignore[misc]


def test_every_name_of_calibkit_stated_resolves_and_the_lazy_ones_load_late():
    import subprocess
    import sys

    import calibkit.stated as stated

    assert stated.__all__ == sorted(stated.__all__)
    for name in stated.__all__:
        assert getattr(stated, name) is not None, name
    code = "import sys, calibkit; print(sorted(m for m in sys.modules if m.startswith('calibkit.stated.')))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    for module in (
        "grade",
        "graders",
        "semantic",
        "judged",
        "judging",
        "ptrue",
        "sampled",
        "topk_guesses",
        "equivalence",
        "harness",
        "fit",
    ):
        assert f"calibkit.stated.{module}'" not in loaded.stdout, module
