"""Registry-wide input validation: every public function that takes data rejects bad input with
an :class:`calibkit.InputError` whose message names the problem and the first bad index, and
accepts numpy, lists, pandas, polars and pyarrow alike."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import calibkit as ck

# ck.audit runs Hosmer-Lemeshow with 10 groups: on these six rows the groups collapse (tested
# below with pytest.warns); keep the report clean.
pytestmark = pytest.mark.filterwarnings("ignore:.*quantile bins collapsed:UserWarning")


def all_of(*parts: str) -> str:
    """A regex that matches when every part occurs somewhere in the message, in any order."""
    return "(?s)" + "".join(f"(?=.*(?:{p}))" for p in parts)


N = 6
BAD = 3  # the first bad index in every test
CONF = np.array([0.1, 0.35, 0.5, 0.6, 0.8, 0.95])
OUT = np.array([0, 1, 0, 1, 1, 1])
LABELS2 = OUT.copy()
P3 = np.array(
    [
        [0.7, 0.2, 0.1],
        [0.1, 0.6, 0.3],
        [0.2, 0.2, 0.6],
        [0.5, 0.25, 0.25],
        [0.3, 0.4, 0.3],
        [0.1, 0.1, 0.8],
    ]
)
LABELS3 = np.array([0, 1, 2, 0, 1, 2])
P2 = np.c_[1 - CONF, CONF]
LOGITS3 = np.log(P3) + 0.7
SCORES = np.array([-2.0, -0.5, 0.0, 0.4, 1.5, 3.0])
EDGES4 = np.linspace(0.0, 1.0, 5)
SMALL = dict(n_boot=10, n_sims=10)

Fn = Callable[..., Any]


def _logits(f: Fn) -> Fn:
    return lambda z, y: f(z, y, from_logits=True)


def _first_only(f: Fn) -> Fn:
    """Adapt a one-input function to the (x, y) signature of a two-input test."""
    return lambda x, _y: f(x)


def _fixed_first(f: Fn, x: Any) -> Fn:
    """Adapt f to the (x, y) signature, always passing the given x."""
    return lambda _x, y: f(x, y)


def _conv2(f: Fn, x: Any, y: Any) -> Callable[[Callable[[Any], Any]], Any]:
    return lambda conv: f(conv(x), conv(y))


def _conv1(f: Fn, x: Any) -> Callable[[Callable[[Any], Any]], Any]:
    return lambda conv: f(conv(x))


# (confidence, outcome) functions: confidence in [0, 1], outcome 0/1
CONF_OUT: dict[str, Fn] = {
    "ece": lambda c, o: ck.ece(c, o),
    "ece[quantile]": lambda c, o: ck.ece(c, o, strategy="quantile", n_bins=3),
    "reliability_bins": lambda c, o: ck.reliability_bins(c, o),
    "brier_decomposition": lambda c, o: ck.brier_decomposition(c, o),
    "bootstrap_ece": lambda c, o: ck.bootstrap_ece(c, o, n_boot=10),
    "debiased_squared_ce": lambda c, o: ck.debiased_squared_ce(c, o, n_bins=2),
    "spiegelhalter_z": lambda c, o: ck.spiegelhalter_z(c, o),
    "calibration_slope": lambda c, o: ck.calibration_slope(c, o),
    "corp": lambda c, o: ck.corp(c, o, n_boot=5),
    "smooth_ece": lambda c, o: ck.smooth_ece(c, o),
    "cumulative_calibration": lambda c, o: ck.cumulative_calibration(c, o),
    "ks_test": lambda c, o: ck.ks_test(c, o),
    "kuiper_test": lambda c, o: ck.kuiper_test(c, o),
    "ks_calibration_error": lambda c, o: ck.ks_calibration_error(c, o),
    "hosmer_lemeshow": lambda c, o: ck.hosmer_lemeshow(c, o, n_bins=2),
    "BinStats.from_forecasts": lambda c, o: ck.BinStats.from_forecasts(c, o, edges=EDGES4),
    "BinStats.from_chunks": lambda c, o: ck.BinStats.from_chunks([(c, o)], edges=EDGES4),
    "find_miscalibrated_segments": lambda c, o: ck.find_miscalibrated_segments(
        c, o, {"site": np.resize(["a", "b"], len(c))}, n_sims=200, n_boot=10
    ),
}
# functions of a confidence alone
CONF_ONLY: dict[str, Fn] = {
    "noise_floor": lambda c: ck.noise_floor(c, n_sims=10),
    "bin_index": lambda c: ck.bin_index(c, EDGES4),
    "bin_edges[quantile]": lambda c: ck.bin_edges(c, n_bins=3, strategy="quantile"),
    "logit": lambda c: ck.logit(c),
}
# 1-D P(label = 1) with labels 0/1
BINARY_PROBS: dict[str, Fn] = {
    "brier": lambda p, y: ck.brier(p, y),
    "nll": lambda p, y: ck.nll(p, y),
    "accuracy": lambda p, y: ck.accuracy(p, y),
    "audit": lambda p, y: ck.audit(p, y, **SMALL),
    "binary": lambda p, y: ck.binary(p, y),
    "choose_binary_threshold": lambda p, y: ck.choose_binary_threshold(
        p, y, l_false_positive=1, l_false_negative=20
    ),
}
# 1-D real scores (any finite value) with labels 0/1
BINARY_SCORES: dict[str, Fn] = {
    "auc": lambda s, y: ck.auc(s, y),
    "brier[logits]": lambda s, y: ck.brier(s, y, from_logits=True),
    "nll[logits]": lambda s, y: ck.nll(s, y, from_logits=True),
    "accuracy[logits]": lambda s, y: ck.accuracy(s, y, from_logits=True),
    "audit[logits]": lambda s, y: ck.audit(s, y, from_logits=True, **SMALL),
    "binary[logits]": lambda s, y: ck.binary(s, y, from_logits=True),
    "choose_binary_threshold[logits]": lambda s, y: ck.choose_binary_threshold(
        s, y, l_false_positive=1, l_false_negative=20, from_logits=True
    ),
}
SCORES_ONLY: dict[str, Fn] = {
    "sigmoid": lambda s: ck.sigmoid(s),
    "softmax[1-D]": lambda s: ck.softmax(s),
    "log_softmax[1-D]": lambda s: ck.log_softmax(s),
}
# (N, C) probabilities with labels 0..C-1
MULTI_PROBS: dict[str, Fn] = {
    "brier": lambda p, y: ck.brier(p, y),
    "nll": lambda p, y: ck.nll(p, y),
    "accuracy": lambda p, y: ck.accuracy(p, y),
    "top_label": lambda p, y: ck.top_label(p, y),
    "classwise": lambda p, y: list(ck.classwise(p, y)),
    "classwise_ece": lambda p, y: ck.classwise_ece(p, y),
    "audit": lambda p, y: ck.audit(p, y, **SMALL),
}
MULTI_LOGITS: dict[str, Fn] = {
    name + "[logits]": _logits(f)
    for name, f in {
        "brier": ck.brier,
        "nll": ck.nll,
        "accuracy": ck.accuracy,
        "top_label": ck.top_label,
        "classwise": lambda z, y, **kw: list(ck.classwise(z, y, **kw)),
        "classwise_ece": ck.classwise_ece,
        "audit": lambda z, y, **kw: ck.audit(z, y, **kw, **SMALL),
    }.items()
}
LOGITS_ONLY: dict[str, Fn] = {
    "softmax": lambda z: ck.softmax(z),
    "log_softmax": lambda z: ck.log_softmax(z),
}


def _params(registry: dict[str, Fn]):
    return pytest.mark.parametrize("fn", list(registry.values()), ids=list(registry))


def _with(arr: np.ndarray, index, value) -> np.ndarray:
    out = np.array(arr, dtype=np.float64 if isinstance(value, float) else arr.dtype)
    out[index] = value
    return out


def test_input_error_is_a_value_error():
    assert issubclass(ck.InputError, ValueError)
    assert issubclass(ck.CalibkitWarning, Warning)
    with pytest.raises(ValueError):
        ck.ece([0.5, 1.5], [1, 0])


def test_every_public_function_with_data_is_covered():
    covered = {
        name.split("[")[0].split(".")[0]
        for reg in (
            CONF_OUT,
            CONF_ONLY,
            BINARY_PROBS,
            BINARY_SCORES,
            SCORES_ONLY,
            MULTI_PROBS,
            LOGITS_ONLY,
        )
        for name in reg
    }
    covered |= {"BinStats", "binomial_interval"}
    covered |= {"read_predictions"}  # takes a file path, not arrays: tests/test_io.py
    # calibrators and their persistence: tests/recalibrate/
    covered |= {
        "fit_temperature",
        "load_calibrator",
        "save_calibrator",
        "check_invariance",
        "compare_calibration",
        "compare_group_calibration",
        "cross_fit",
        "make_calibrator",
        "stratified_split",
        # decide: tests/decide/
        "chow_threshold",
        "choose_threshold",
        "risk_coverage",
        "choose_actions",
        "guaranteed_threshold",
        "decision_report",
        "policy_table",
        "bayes_threshold",
        "binary_policy_table",
        "aurc",
        "augrc",
        "prediction_rejection_ratio",
        "risk_at_coverage",
        "coverage_at_risk",
        "selective_prediction",
        # figures and reports draw results: tests/report/
        "before_after",
        "corp_diagram",
        "cost_curve",
        "generalized_risk_coverage_plot",
        "reliability_diagram",
        "risk_coverage_plot",
        "save_figure",
        "write_report",
        # monitoring draws on every engine: tests/engines/test_monitor.py
        "monitor",
        "monitor_plot",
        # label-free estimates: tests/estimate/test_estimator.py (NaN, labels, class counts)
        "estimate_performance",
        # files with late labels: tests/estimate/test_periods.py (periods, missing labels)
        "estimate_by_period",
        "calibration_record",
        "compare_records",
        "read_record",
        "verify_record",
        "write_record",
        # text, not arrays: tests/stated/
        "parse_batch",
        "parse_confidence",
        "parse_decision",
        "audit_stated",
    }
    takes_data = {name for name in ck.__all__ if callable(getattr(ck, name)) and name[0].islower()}
    assert takes_data <= covered, sorted(takes_data - covered)


# --------------------------------------------------------------------------- NaN and infinity


@_params(CONF_OUT)
def test_nan_confidence_rejected(fn):
    with pytest.raises(ck.InputError, match=all_of("NaN", f"index {BAD}")):
        fn(_with(CONF, BAD, np.nan), OUT)


@_params(CONF_ONLY)
def test_nan_confidence_rejected_single_input(fn):
    c = _with(CONF, BAD, np.nan)
    c[BAD + 1] = np.nan  # two bad values: the count and the first index
    with pytest.raises(ck.InputError, match=all_of("NaN", f"index {BAD}", "2 values")):
        fn(c)


@_params(BINARY_PROBS)
def test_nan_binary_probability_rejected(fn):
    with pytest.raises(ck.InputError, match=all_of("NaN", f"index {BAD}")):
        fn(_with(CONF, BAD, np.nan), LABELS2)


@pytest.mark.parametrize("value", [np.inf, -np.inf])
@_params({**CONF_OUT, **{k: _first_only(f) for k, f in CONF_ONLY.items()}, **BINARY_PROBS})
def test_infinite_confidence_rejected(fn, value):
    with pytest.raises(ck.InputError, match=all_of("inf", f"index {BAD}")):
        fn(_with(CONF, BAD, value), OUT)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@_params({**BINARY_SCORES, **{k: _first_only(f) for k, f in SCORES_ONLY.items()}})
def test_non_finite_scores_rejected(fn, value):
    with pytest.raises(
        ck.InputError, match=all_of("finite", f"index {BAD}", str(value).lstrip("-"))
    ):
        fn(_with(SCORES, BAD, value), LABELS2)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@_params({**MULTI_LOGITS, **{k: _first_only(f) for k, f in LOGITS_ONLY.items()}})
def test_non_finite_logits_rejected(fn, value):
    with pytest.raises(ck.InputError, match=all_of("finite", f"row {BAD}, column 1")):
        fn(_with(LOGITS3, (BAD, 1), value), LABELS3)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@_params(MULTI_PROBS)
def test_non_finite_probabilities_rejected(fn, value):
    problem = "NaN" if np.isnan(value) else "inf"
    with pytest.raises(ck.InputError, match=all_of(problem, f"row {BAD}, column 1")):
        fn(_with(P3, (BAD, 1), value), LABELS3)


def test_finite_message_reads_correctly():
    with pytest.raises(ck.InputError) as info:
        ck.auc(_with(SCORES, BAD, np.nan), LABELS2)
    assert "does not be" not in str(info.value) and "do not be" not in str(info.value)


# --------------------------------------------------------------------------- ranges


@pytest.mark.parametrize("value", [1.2, -0.2])
@_params({**CONF_OUT, **{k: _first_only(f) for k, f in CONF_ONLY.items()}, **BINARY_PROBS})
def test_confidence_outside_unit_interval_rejected_with_logits_hint(fn, value):
    c = _with(CONF, BAD, value)
    c[BAD + 2] = value
    with pytest.raises(
        ck.InputError, match=all_of(r"\[0, 1\]", f"index {BAD}: {value}", "2 values", "logits")
    ):
        fn(c, OUT)


@pytest.mark.parametrize("value", [1.2, -0.2])
@_params(MULTI_PROBS)
def test_probabilities_outside_unit_interval_rejected_with_logits_hint(fn, value):
    p = _with(P3, (BAD, 0), value)
    p[BAD, 2] = 1.0 - p[BAD, 1] - value  # the row still sums to 1: only the range is wrong
    with pytest.raises(
        ck.InputError, match=all_of(r"\[0, 1\]", f"row {BAD}, column 0: {value}", "logits")
    ):
        fn(p, LABELS3)


@pytest.mark.parametrize("row", [[0.5, 0.4, 0.3], [0.5, 0.2, 0.2]])
@_params(MULTI_PROBS)
def test_rows_not_summing_to_one_rejected(fn, row):
    p = P3.copy()
    p[BAD] = row
    p[BAD + 2] = row
    with pytest.raises(
        ck.InputError,
        match=all_of("sum to 1", r"within 0\.001", f"row {BAD}", "2 rows", "renormalise"),
    ):
        fn(p, LABELS3)


def test_binary_two_column_rows_not_summing_rejected():
    p = P2.copy()
    p[BAD] = [0.5, 0.6]
    for fn in (ck.binary, ck.brier, ck.nll, ck.top_label, ck.accuracy):
        with pytest.raises(ck.InputError, match=all_of("sum to 1", f"row {BAD}", "renormalise")):
            fn(p, LABELS2)


def test_row_sum_tolerance_is_inclusive_of_float32_softmax():
    p = P3.astype(np.float32)
    assert ck.brier(p, LABELS3) == pytest.approx(ck.brier(P3, LABELS3), rel=1e-6)
    p64 = P3.copy()
    p64[BAD] += [0.0009, 0.0, 0.0]  # within 1e-3: accepted as it is, not renormalised
    assert ck.top_label(p64, LABELS3).confidence[BAD] == pytest.approx(0.5009)


# --------------------------------------------------------------------------- labels, outcomes


@pytest.mark.parametrize("value", [3, -1, 7])
@_params({**MULTI_PROBS, **{k: _fixed_first(f, LOGITS3) for k, f in MULTI_LOGITS.items()}})
def test_labels_outside_classes_rejected(fn, value):
    y = LABELS3.copy()
    y[BAD] = value
    with pytest.raises(ck.InputError, match=all_of(r"0\.\.2", f"index {BAD}: {value}")):
        fn(P3, y)


@pytest.mark.parametrize("value", [2, -1])
@_params({**BINARY_PROBS, **{k: _fixed_first(f, SCORES) for k, f in BINARY_SCORES.items()}})
def test_binary_labels_outside_0_1_rejected(fn, value):
    y = LABELS2.copy()
    y[BAD] = value
    with pytest.raises(ck.InputError, match=all_of(r"0\.\.1|0 or 1", f"index {BAD}: {value}")):
        fn(CONF, y)


@pytest.mark.parametrize("value", [0.5, np.nan, 2.5])
def test_fractional_labels_rejected(value):
    y = LABELS3.astype(float)
    y[BAD] = value
    for fn in MULTI_PROBS.values():
        with pytest.raises(ck.InputError, match=all_of(f"index {BAD}: {value}")):
            fn(P3, y)


@pytest.mark.parametrize("value", [0.5, 2.0, -1.0, np.nan, 2])
@_params(CONF_OUT)
def test_outcome_not_0_1_rejected(fn, value):
    o = OUT.copy() if isinstance(value, int) else OUT.astype(float)
    o[BAD] = value
    with pytest.raises(ck.InputError, match=all_of("0 or 1", f"index {BAD}: {value}")):
        fn(CONF, o)


@_params(CONF_OUT)
def test_bool_float_and_int_outcomes_accepted_alike(fn):
    results = [fn(CONF, OUT.astype(t)) for t in (bool, np.int8, np.int64, np.float32, float)]
    for r in results[1:]:
        assert _summary(r) == _summary(results[0])


# --------------------------------------------------------------------------- shapes


def _two_input_functions() -> dict[str, tuple[Fn, Any, Any]]:
    cases: dict[str, tuple[Fn, Any, Any]] = {}
    for k, f in CONF_OUT.items():
        cases[k] = (f, CONF, OUT)
    for k, f in BINARY_PROBS.items():
        cases["binary:" + k] = (f, CONF, LABELS2)
    for k, f in BINARY_SCORES.items():
        cases[k] = (f, SCORES, LABELS2)
    for k, f in MULTI_PROBS.items():
        cases["multi:" + k] = (f, P3, LABELS3)
    for k, f in MULTI_LOGITS.items():
        cases["multi:" + k] = (f, LOGITS3, LABELS3)
    return cases


TWO_INPUTS = _two_input_functions()


@pytest.mark.parametrize("name", list(TWO_INPUTS))
def test_length_mismatch_rejected(name):
    fn, x, y = TWO_INPUTS[name]
    with pytest.raises(ck.InputError, match=all_of("5 entries", f"have {N}", "aligned")):
        fn(x, y[:5])
    with pytest.raises(ck.InputError, match=all_of(f"{N + 1} entries", f"have {N}")):
        fn(x, np.r_[y, y[:1]])


@pytest.mark.parametrize("name", list(TWO_INPUTS))
def test_empty_input_rejected(name):
    fn, x, y = TWO_INPUTS[name]
    with pytest.raises(ck.InputError, match="empty"):
        fn(x[:0], y[:0])


@_params({**CONF_ONLY, **SCORES_ONLY})
def test_empty_single_input_rejected(fn):
    with pytest.raises(ck.InputError, match="empty"):
        fn(np.array([]))
    with pytest.raises(ck.InputError, match="empty"):
        fn([])


@_params(LOGITS_ONLY)
def test_empty_logits_rejected(fn):
    with pytest.raises(ck.InputError, match="empty"):
        fn(np.empty((0, 3)))


@_params({**CONF_OUT, "auc": BINARY_SCORES["auc"]})
def test_two_d_given_to_a_one_d_function_rejected(fn):
    with pytest.raises(ck.InputError, match=all_of("1-D", r"\(6, 3\)", "top_label")):
        fn(P3, OUT)


@_params(CONF_ONLY)
def test_two_d_given_to_a_one_d_function_rejected_single_input(fn):
    with pytest.raises(ck.InputError, match=all_of("1-D", r"\(6, 3\)")):
        fn(P3)


@_params(
    {
        k: v
        for k, v in {**MULTI_PROBS, **MULTI_LOGITS}.items()
        if k.split("[")[0] in ("top_label", "classwise", "classwise_ece")
    }
)
def test_one_d_given_where_n_by_c_is_needed_rejected(fn):
    with pytest.raises(ck.InputError, match=all_of("2-D", r"\(6,\)")):
        fn(CONF, OUT)


@pytest.mark.parametrize("name", list(TWO_INPUTS))
def test_three_d_input_rejected(name):
    fn, x, y = TWO_INPUTS[name]
    with pytest.raises(ck.InputError, match=r"\(6, 1, 1\)|\(6, 3, 1\)"):
        fn(np.asarray(x).reshape(N, -1)[:, :, None], y)


def test_labels_two_d_rejected():
    with pytest.raises(ck.InputError, match=all_of("labels", "1-D")):
        ck.brier(P3, LABELS3[:, None])
    with pytest.raises(ck.InputError, match=all_of("outcome", "1-D")):
        ck.ece(CONF, OUT[:, None])


def test_non_numeric_input_rejected():
    with pytest.raises(ck.InputError, match="numbers"):
        ck.ece(["0.1", "x", "0.3"], [0, 1, 1])
    with pytest.raises(ck.InputError, match="numbers"):
        ck.ece("0.5", [1])
    with pytest.raises(ck.InputError):
        ck.ece(None, [1])


def test_classwise_validates_eagerly():
    """ck.classwise is public: bad input must raise at the call, not at the first next()."""
    bad = P3.copy()
    bad[BAD] = [0.5, 0.4, 0.3]
    with pytest.raises(ck.InputError, match="sum to 1"):
        ck.classwise(bad, LABELS3)


# --------------------------------------------------------------------------- options

N_BINS_FUNCS: dict[str, Fn] = {
    "ece": lambda **kw: ck.ece(CONF, OUT, **kw),
    "reliability_bins": lambda **kw: ck.reliability_bins(CONF, OUT, **kw),
    "brier_decomposition": lambda **kw: ck.brier_decomposition(CONF, OUT, **kw),
    "bootstrap_ece": lambda **kw: ck.bootstrap_ece(CONF, OUT, n_boot=10, **kw),
    "debiased_squared_ce": lambda **kw: ck.debiased_squared_ce(CONF, OUT, **kw),
    "noise_floor": lambda **kw: ck.noise_floor(CONF, n_sims=10, **kw),
    "bin_edges": lambda **kw: ck.bin_edges(CONF, **kw),
    "classwise_ece": lambda **kw: ck.classwise_ece(P3, LABELS3, **kw),
    "audit": lambda **kw: ck.audit(P3, LABELS3, **SMALL, **kw),
}
CLOSED_FUNCS: dict[str, Fn] = {
    **{k: v for k, v in N_BINS_FUNCS.items() if k != "bin_edges"},
    "bin_index": lambda **kw: ck.bin_index(CONF, EDGES4, **kw),
    "BinStats.from_forecasts": lambda **kw: ck.BinStats.from_forecasts(
        CONF, OUT, edges=EDGES4, **kw
    ),
    "BinStats.from_chunks": lambda **kw: ck.BinStats.from_chunks([(CONF, OUT)], edges=EDGES4, **kw),
    "BinStats.empty": lambda **kw: ck.BinStats.empty(EDGES4, **kw),
}
NORM_FUNCS = {k: N_BINS_FUNCS[k] for k in ("ece", "bootstrap_ece", "noise_floor", "classwise_ece")}
LEVEL_FUNCS: dict[str, Fn] = {
    "reliability_bins": N_BINS_FUNCS["reliability_bins"],
    "bootstrap_ece": N_BINS_FUNCS["bootstrap_ece"],
    "audit": N_BINS_FUNCS["audit"],
    "binomial_interval": lambda **kw: ck.binomial_interval([3, 4], [5, 5], **kw),
}
EDGES_FUNCS: dict[str, Fn] = {
    **{
        k: v
        for k, v in CLOSED_FUNCS.items()
        if k
        not in (
            "classwise_ece",
            "bin_index",
            "BinStats.from_forecasts",
            "BinStats.from_chunks",
            "BinStats.empty",
        )
    },
    "bin_index": lambda edges: ck.bin_index(CONF, edges),
    "BinStats.from_forecasts": lambda edges: ck.BinStats.from_forecasts(CONF, OUT, edges=edges),
    "BinStats.from_chunks": lambda edges: ck.BinStats.from_chunks([(CONF, OUT)], edges=edges),
    "BinStats.empty": lambda edges: ck.BinStats.empty(edges),
}


@pytest.mark.parametrize("value", [0, -1, 2.5, True, "3", None])
@_params(N_BINS_FUNCS)
def test_bad_n_bins_rejected(fn, value):
    with pytest.raises(ck.InputError, match=all_of("n_bins", "integer >= 1", f"got {value!r}")):
        fn(n_bins=value)


def test_hosmer_lemeshow_bad_n_bins_rejected_by_its_own_name():
    with pytest.raises(ck.InputError, match=all_of("n_bins", "got 0")):
        ck.hosmer_lemeshow(CONF, OUT, n_bins=0)


@_params({k: v for k, v in N_BINS_FUNCS.items()})
def test_bad_strategy_rejected(fn):
    with pytest.raises(ck.InputError, match=all_of("strategy", "'uniform'", "'quantile'", "'foo'")):
        fn(strategy="foo")


@_params(CLOSED_FUNCS)
def test_bad_closed_rejected(fn):
    with pytest.raises(ck.InputError, match=all_of("closed", "'right'", "'left'", "'middle'")):
        fn(closed="middle")


@_params(NORM_FUNCS)
def test_bad_norm_rejected(fn):
    with pytest.raises(ck.InputError, match=all_of("norm", "'l1'", "'max'", "'l3'")):
        fn(norm="l3")


@pytest.mark.parametrize("value", [1.5, 0.0, 1.0, -0.1, "0.9"])
@_params(LEVEL_FUNCS)
def test_bad_level_rejected(fn, value):
    with pytest.raises(ck.InputError, match=all_of("level", "between 0 and 1", repr(value))):
        fn(level=value)


@_params({"reliability_bins": N_BINS_FUNCS["reliability_bins"], "audit": N_BINS_FUNCS["audit"]})
def test_bad_interval_rejected(fn):
    with pytest.raises(ck.InputError, match=all_of("interval", "'wilson'", "'bar'")):
        fn(interval="bar")


def test_bad_counts_of_resamples_rejected():
    with pytest.raises(ck.InputError, match=all_of("n_boot", "got 0")):
        ck.bootstrap_ece(CONF, OUT, n_boot=0)
    with pytest.raises(ck.InputError, match=all_of("n_sims", "got 0")):
        ck.noise_floor(CONF, n_sims=0)
    with pytest.raises(ck.InputError, match=all_of("seed", "-1")):
        ck.noise_floor(CONF, n_sims=10, seed=-1)
    with pytest.raises(ck.InputError, match=all_of("method", "'bar'")):
        ck.binomial_interval(3, 5, method="bar")


def test_bad_kernel_setting_rejected(monkeypatch):
    monkeypatch.setenv("CALIBKIT_KERNEL", "gpu")
    with pytest.raises(ck.InputError, match=all_of("CALIBKIT_KERNEL", "'gpu'")):
        ck.ece(CONF, OUT)


BAD_EDGES = {
    "start": ([0.1, 0.5, 1.0], all_of("start at 0", "0.1")),
    "end": ([0.0, 0.5, 0.9], all_of("end at 1", "0.9")),
    "decreasing": ([0.0, 0.6, 0.4, 1.0], all_of("strictly increasing", "edge 2", "0.4")),
    "repeated": ([0.0, 0.5, 0.5, 1.0], all_of("strictly increasing", "edge 2", "0.5")),
    "nan": ([0.0, np.nan, 1.0], all_of("finite", "index 1")),
    "one": ([0.0], all_of("at least 2")),
    "empty": ([], "empty"),
}


@pytest.mark.parametrize("case", list(BAD_EDGES))
@_params(EDGES_FUNCS)
def test_bad_explicit_edges_rejected(fn, case):
    edges, pattern = BAD_EDGES[case]
    with pytest.raises(ck.InputError, match=pattern):
        try:
            fn(edges=edges)
        except TypeError:  # the lambdas of BinStats / bin_index take edges positionally
            fn(edges)


# --------------------------------------------------------------------------- binomial_interval


def test_binomial_interval_rejects_bad_counts_naming_the_index():
    with pytest.raises(ck.InputError, match=all_of("NaN|nan", "index 1")):
        ck.binomial_interval([3, np.nan, 2], [5, 5, 5])
    with pytest.raises(ck.InputError, match=all_of("index 2")):
        ck.binomial_interval([3, 4, 6], [5, 5, 5])  # 6 successes of 5 trials


def test_binomial_interval_rejects_empty_input():
    with pytest.raises(ck.InputError, match="empty"):
        ck.binomial_interval([], [])


def test_binomial_interval_rejects_mismatched_lengths_with_input_error():
    with pytest.raises(ck.InputError, match=all_of("2 entries|3 entries")):
        ck.binomial_interval([1, 2, 3], [5, 5])


def test_binomial_interval_rejects_text_with_input_error():
    with pytest.raises(ck.InputError):
        ck.binomial_interval("a", 3)


# --------------------------------------------------------------------------- containers

try:  # dev dependencies; only the container tests need them
    import pandas as pd
    import polars as pl
    import pyarrow as pa
except ImportError:  # pragma: no cover
    pd = pl = pa = None

needs_frames = pytest.mark.skipif(pd is None, reason="pandas, polars and pyarrow are needed")

CONTAINERS_1D: dict[str, Callable[[np.ndarray], Any]] = {
    "numpy": lambda a: np.asarray(a),
    "list": lambda a: np.asarray(a).tolist(),
    "pandas": lambda a: pd.Series(a, index=np.arange(len(a))[::-1] * 10),  # index ignored
    "polars": lambda a: pl.Series(np.asarray(a)),
    "pyarrow": lambda a: pa.array(np.asarray(a)),
    "pyarrow-chunked": lambda a: pa.chunked_array([np.asarray(a)[:2], np.asarray(a)[2:]]),
    "pandas-nullable": lambda a: pd.Series(
        a, dtype="Float64" if np.asarray(a).dtype.kind == "f" else "Int64"
    ),
}
CONTAINERS_2D: dict[str, Callable[[np.ndarray], Any]] = {
    "numpy": lambda a: a,
    "list": lambda a: a.tolist(),
    "pandas": lambda a: pd.DataFrame(a, columns=[f"c{i}" for i in range(a.shape[1])]),
    "polars": lambda a: pl.DataFrame(a, schema=[f"c{i}" for i in range(a.shape[1])]),
}


def _summary(result: Any) -> Any:
    """A comparable (==) summary of any result type."""
    if isinstance(result, float | int | np.floating):
        return float(result)
    if isinstance(result, np.ndarray):
        return result.tolist()
    if isinstance(result, ck.ReliabilityTable):
        return str(result), result.to_dict()
    if isinstance(result, ck.BinStats):
        return result.to_dict()
    if isinstance(result, ck.Forecast):
        return result.confidence.tolist(), result.outcome.tolist()
    if isinstance(result, ck.Audit):
        return result.to_dict()
    if isinstance(result, list):
        return [_summary(r) for r in result]
    if hasattr(result, "to_dict"):
        return result.to_dict()
    return result


ONE_D_CALLS: dict[str, Callable[[Callable[[np.ndarray], Any]], Any]] = {
    **{k: _conv2(f, CONF, OUT) for k, f in CONF_OUT.items()},
    **{k: _conv1(f, CONF) for k, f in CONF_ONLY.items()},
    **{"binary:" + k: _conv2(f, CONF, LABELS2) for k, f in BINARY_PROBS.items()},
    **{k: _conv2(f, SCORES, LABELS2) for k, f in BINARY_SCORES.items()},
    **{k: _conv1(f, SCORES) for k, f in SCORES_ONLY.items()},
}


@needs_frames
@pytest.mark.parametrize("name", list(ONE_D_CALLS))
def test_containers_give_identical_results_1d(name):
    call = ONE_D_CALLS[name]
    expected = _summary(call(CONTAINERS_1D["numpy"]))
    for kind, conv in CONTAINERS_1D.items():
        assert _summary(call(conv)) == expected, kind


@needs_frames
def test_bool_containers_for_outcomes():
    expected = ck.ece(CONF, OUT)
    b = OUT.astype(bool)
    for y in (
        b,
        b.tolist(),
        pd.Series(b),
        pd.Series(b, dtype="boolean"),
        pl.Series(b),
        pa.array(b),
    ):
        assert ck.ece(CONF, y) == expected


@needs_frames
@_params({**MULTI_PROBS, **MULTI_LOGITS})
def test_containers_give_identical_results_2d(fn):
    x = LOGITS3 if fn in MULTI_LOGITS.values() else P3
    expected = _summary(fn(x, LABELS3))
    for kind, conv in CONTAINERS_2D.items():
        for lab_kind in ("numpy", "list", "pandas", "polars", "pyarrow"):
            got = _summary(fn(conv(x), CONTAINERS_1D[lab_kind](LABELS3)))
            assert got == expected, (kind, lab_kind)


@needs_frames
def test_pandas_nan_rejected_with_a_count():
    c = pd.Series(CONF)
    c[[1, 4]] = np.nan
    with pytest.raises(ck.InputError, match=all_of("confidence", "2 missing values")):
        ck.ece(c, OUT)
    p = pd.Series(CONF, dtype="Float64")
    p[BAD] = pd.NA
    with pytest.raises(ck.InputError, match=all_of("probs", "1 missing value")):
        ck.brier(p, LABELS2)
    y = pd.Series(OUT, dtype="Int64")
    y[[0, 2, 5]] = pd.NA
    with pytest.raises(ck.InputError, match=all_of("outcome", "3 missing values")):
        ck.ece(CONF, y)
    y = pd.Series(LABELS3, dtype="Int64")
    y[BAD] = pd.NA
    with pytest.raises(ck.InputError, match=all_of("labels", "1 missing value")):
        ck.nll(P3, y)
    df = pd.DataFrame(P3)
    df.iloc[BAD, 1] = np.nan
    with pytest.raises(ck.InputError, match=all_of("1 missing value")):
        ck.top_label(df, LABELS3)


@needs_frames
def test_arrow_and_polars_nulls_rejected():
    with pytest.raises(ck.InputError, match=all_of("2 missing values")):
        ck.ece(pa.array([0.1, None, 0.5, 0.6, None, 0.95]), OUT)
    with pytest.raises(ck.InputError, match=f"index {BAD}"):
        ck.ece(pl.Series([0.1, 0.35, 0.5, None, 0.8, 0.95]), OUT)
    with pytest.raises(ck.InputError, match=f"index {BAD}"):
        ck.ece(CONF, pl.Series([0, 1, 0, None, 1, 1]))


# --------------------------------------------------------------------------- warnings


def test_nll_of_a_zero_true_class_probability_is_inf_and_warns_with_the_count():
    p = P3.copy()
    p[1] = [0.5, 0.0, 0.5]  # label 1: probability 0
    p[4] = [0.6, 0.0, 0.4]  # label 1: probability 0
    with pytest.warns(ck.CalibkitWarning, match=all_of("2 rows", "index 1", "infinite")):
        assert ck.nll(p, LABELS3) == float("inf")
    c = CONF.copy()
    c[0] = 1.0  # P(label = 1) = 1 but the label is 0
    with pytest.warns(ck.CalibkitWarning, match=all_of("1 row", "index 0")):
        assert ck.nll(c, LABELS2) == float("inf")
    # a zero on a wrong class is harmless
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        q = P3.copy()
        q[0] = [0.8, 0.2, 0.0]
        assert np.isfinite(ck.nll(q, LABELS3))


def test_heavy_ties_collapse_quantile_bins_with_a_warning():
    c = np.r_[np.full(90, 0.7), np.linspace(0.1, 0.9, 10)]
    y = (np.arange(c.size) % 3 > 0).astype(int)
    with pytest.warns(ck.CalibkitWarning, match=all_of("collapsed", "of 10")):
        table = ck.reliability_bins(c, y, n_bins=10, strategy="quantile")
    assert table.requested_bins == 10
    assert table.stats.n_bins < table.requested_bins
    assert table.to_dict()["n_bins"] < table.to_dict()["requested_bins"] == 10
    assert "collapsed" in str(table)
    with pytest.warns(ck.CalibkitWarning, match="collapsed"):
        ck.ece(c, y, n_bins=10, strategy="quantile")
    with pytest.warns(ck.CalibkitWarning, match="collapsed"):
        ck.bin_edges(c, n_bins=10, strategy="quantile")


def test_no_warning_without_ties():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = ck.reliability_bins(
            np.linspace(0.01, 0.99, 50), np.arange(50) % 2, n_bins=10, strategy="quantile"
        )
    assert t.stats.n_bins == t.requested_bins == 10


# ---------------------------------------------------------------- sample weights
def test_sample_weight_refuses_negative_nan_zero_and_misaligned():
    from calibkit import _validate as v

    with pytest.raises(
        ck.InputError,
        match=r"ece: sample_weight must not be negative; 1 weight is, first at index 2: -1.0",
    ):
        v.sample_weight([1, 1, -1], n=3, where="ece")
    with pytest.raises(
        ck.InputError, match=r"sample_weight must be finite; 1 value is not, first at index 0: nan"
    ):
        v.sample_weight([np.nan, 1, 1], n=3, where="ece")
    with pytest.raises(ck.InputError, match="every sample_weight is zero"):
        v.sample_weight([0, 0, 0], n=3, where="ece")
    with pytest.raises(ck.InputError, match="sample_weight has 2 entries but the forecasts have 3"):
        v.sample_weight([1, 1], n=3, where="ece")


def test_effective_size_is_kish():
    from calibkit import _validate as v

    w = np.array([1.0, 3.0, 3.0])
    assert v.effective_size(w.sum(), (w**2).sum()) == pytest.approx(49 / 19)
    assert v.effective_size(np.array([0.0]), np.array([0.0])).tolist() == [0.0]
