"""Sample weights in every calibrator's fit: integer weights fit exactly what the rows repeated
that many times fit (a weight of 0 leaves the row out), for every registered calibrator;
scikit-learn as the oracle for the weighted isotonic and sigmoid fits; the weighted temperature
is the minimiser of the weighted NLL; bad weights are refused naming the calibrator."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.special import logsumexp

import calibkit as ck
from calibkit.recalibrate.base import _REGISTRY, Calibrator

RTOL = 1e-8
#: a golden-section search locates T only to about sqrt(machine epsilon) relative (it compares
#: NLL values, which are flat to rounding within that of the minimum), so a weighted sum and
#: repeated terms, which round differently, agree to that
GOLDEN_RTOL = 1e-6
#: vector and matrix scaling stop where scipy's solver sees a gradient norm below 1e-10 of the
#: logit scale; two fits whose sums round differently stop at points that far apart divided by
#: the objective's curvature, which on 200 rows is about 1e-8 relative
SOLVER_RTOL = 1e-7


def _rtol(case: str) -> float:
    if case == "temperature-golden":
        return GOLDEN_RTOL
    return SOLVER_RTOL if case.startswith(("vector", "matrix")) else RTOL


def _binary_scores(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    s = rng.normal(0.0, 2.0, n)
    y = (rng.random(n) < ck.sigmoid(0.6 * s + 0.3)).astype(np.int64)
    return s, y


def _binary_probs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    s, y = _binary_scores(n, seed)
    return ck.sigmoid(s), y


def _logits(n: int, seed: int, classes: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = 2.0 * rng.normal(size=(n, classes))
    p = np.exp(0.5 * z) / np.exp(0.5 * z).sum(axis=1, keepdims=True)
    y = (rng.random((n, 1)) > p.cumsum(axis=1)).sum(axis=1)
    return z, np.minimum(y, classes - 1)


def _probs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    z, y = _logits(n, seed)
    return ck.softmax(z), y


#: name -> (a new calibrator, data maker, extra fit keywords from the rows' groups)
CASES: dict[str, tuple[Callable[[], Calibrator], Callable[[int, int], Any]]] = {
    "temperature-multiclass": (ck.TemperatureScaling, _logits),
    "temperature-binary": (ck.TemperatureScaling, _binary_scores),
    "temperature-golden": (lambda: ck.TemperatureScaling(method="golden"), _logits),
    "platt": (ck.PlattScaling, _binary_scores),
    "platt-hard-targets": (lambda: ck.PlattScaling(smooth_targets=False), _binary_scores),
    "platt-ovr": (ck.PlattScaling, _logits),
    "platt-top-label": (lambda: ck.PlattScaling(multiclass="top-label"), _logits),
    "isotonic": (ck.IsotonicCalibration, _binary_scores),
    "isotonic-ovr": (ck.IsotonicCalibration, _probs),
    "histogram": (lambda: ck.HistogramBinning(n_bins=6), _binary_probs),
    "histogram-quantile": (
        lambda: ck.HistogramBinning(n_bins=6, strategy="quantile"),
        _binary_probs,
    ),
    "histogram-top-label": (lambda: ck.HistogramBinning(n_bins=5, multiclass="top-label"), _probs),
    "beta": (ck.BetaCalibration, _binary_probs),
    "beta-ab": (lambda: ck.BetaCalibration(parameters="ab"), _binary_probs),
    "beta-am": (lambda: ck.BetaCalibration(parameters="am"), _binary_probs),
    "vector": (ck.VectorScaling, _logits),
    "vector-l2": (lambda: ck.VectorScaling(l2=0.1), _logits),
    "matrix": (lambda: ck.MatrixScaling(l2=0.01, intercept=0.01), _logits),
    "group": (
        lambda: ck.GroupCalibrator(base=ck.PlattScaling(), min_group_size=20),
        _binary_scores,
    ),
}


def _groups(n: int) -> np.ndarray:
    return np.where(np.arange(n) % 3 == 0, "a", "b")


def _fit(calibrator: Calibrator, x: np.ndarray, y: np.ndarray, groups: Any, **kw: Any):
    if isinstance(calibrator, ck.GroupCalibrator):
        return calibrator.fit(x, y, groups=groups, **kw)
    return calibrator.fit(x, y, **kw)


def _predict(calibrator: Calibrator, x: np.ndarray, groups: Any) -> np.ndarray:
    if isinstance(calibrator, ck.GroupCalibrator):
        return calibrator.predict_proba(x, groups=groups)
    return calibrator.predict_proba(x)


def _state_numbers(calibrator: Calibrator) -> np.ndarray:
    """Every fitted number of the calibrator's JSON state but the iteration counts (the
    solver's path may differ between a weighted sum and repeated terms)."""
    out: list[float] = []

    def walk(node: Any, key: str = "") -> None:
        if isinstance(node, dict):
            for k, value in node.items():
                walk(value, k)
        elif isinstance(node, list):
            for value in node:
                walk(value, key)
        elif isinstance(node, (int, float)) and not isinstance(node, bool):
            if key not in {"n_iter", "n_evaluations", "counts", "sizes", "gradient"}:
                if key not in {"gradient_norm", "objective_gradient"}:
                    out.append(float(node))

    state = calibrator.to_dict()["state"]
    if "bias" in state:  # softmax(u + c) = softmax(u): the offsets are compared centred
        state["bias"] = (np.array(state["bias"]) - np.mean(state["bias"])).tolist()
    walk(state)
    return np.array(out)


def test_every_registered_calibrator_is_covered():
    covered = {factory().kind for factory, _ in CASES.values()}
    assert covered == set(_REGISTRY)


@pytest.mark.parametrize("case", sorted(CASES))
def test_integer_weights_fit_the_repeated_rows(case):
    factory, make = CASES[case]
    x, y = make(240, 7)
    groups = _groups(y.size)
    weights = np.random.default_rng(11).integers(0, 4, y.size)  # a quarter are 0: left out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ck.CalibkitWarning)
        weighted = _fit(factory(), x, y, groups, sample_weight=weights)
        rep = np.repeat(np.arange(y.size), weights)
        repeated = _fit(factory(), x[rep], y[rep], groups[rep])
    grid, _ = make(50, 99)
    grid_groups = _groups(50)
    rtol = _rtol(case)
    np.testing.assert_allclose(
        _predict(weighted, grid, grid_groups),
        _predict(repeated, grid, grid_groups),
        rtol=rtol,
        atol=1e-12,
    )
    if not isinstance(weighted, ck.GroupCalibrator):
        got, want = _state_numbers(weighted), _state_numbers(repeated)
        assert got.shape == want.shape
        # gradients at the optimum are ~0 on both sides and left out; what remains is the map
        np.testing.assert_allclose(got, want, rtol=max(rtol, 1e-7), atol=1e-9)


#: the weighted fits that depend on the weights' scale by design: Platt's smoothed targets take
#: N+ and N- as the classes' total weights (scikit-learn's rule), and quantile edges follow
#: np.quantile's linear rule on the repeated rows, whose rank (W - 1) k / M depends on W
SCALE_DEPENDENT = {"platt", "platt-ovr", "platt-top-label", "histogram-quantile", "group"}


@pytest.mark.parametrize("case", sorted(set(CASES) - SCALE_DEPENDENT))
def test_weights_times_a_constant_fit_the_same_map(case):
    factory, make = CASES[case]
    x, y = make(200, 3)
    groups = _groups(y.size)
    weights = np.random.default_rng(5).random(y.size) + 0.1
    grid, _ = make(40, 98)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ck.CalibkitWarning)
        one = _fit(factory(), x, y, groups, sample_weight=weights)
        ten = _fit(factory(), x, y, groups, sample_weight=10.0 * weights)
    rtol = _rtol(case)
    np.testing.assert_allclose(
        _predict(one, grid, _groups(40)), _predict(ten, grid, _groups(40)), rtol=rtol, atol=1e-12
    )


@pytest.mark.parametrize("case", ["temperature-multiclass", "platt", "isotonic", "vector"])
def test_unit_weights_fit_what_no_weights_fit(case):
    factory, make = CASES[case]
    x, y = make(150, 4)
    grid, _ = make(30, 97)
    plain = factory().fit(x, y)
    ones = factory().fit(x, y, sample_weight=np.ones(y.size))
    np.testing.assert_allclose(plain.predict_proba(grid), ones.predict_proba(grid), rtol=1e-12)


def test_a_zero_weight_row_does_not_move_the_isotonic_range_or_the_separation_check():
    # the zero-weight rows would widen the range to [-50, 50] and break the separation
    s = np.array([-1.0, -0.5, 0.5, 1.0, -50.0, 50.0])
    y = np.array([0, 0, 1, 1, 1, 0])
    w = np.array([1, 1, 1, 1, 0, 0])
    iso = ck.IsotonicCalibration().fit(s, y, sample_weight=w)
    assert (iso.x_min_[0], iso.x_max_[0]) == (-1.0, 1.0)
    with pytest.warns(ck.CalibkitWarning, match="separate the labels"):
        platt = ck.PlattScaling(smooth_targets=False).fit(s, y, sample_weight=w)
    assert not platt.converged_


# ----------------------------------------------------------------------------- oracles


def test_weighted_temperature_minimises_the_weighted_nll():
    z, y = _logits(300, 21, classes=4)
    w = np.random.default_rng(2).gamma(2.0, 1.0, y.size)

    def weighted_nll(t: float) -> float:
        u = z / t
        return float(np.sum(w * (logsumexp(u, axis=1) - u[np.arange(y.size), y])) / w.sum())

    ts = ck.TemperatureScaling().fit(z, y, sample_weight=w)
    best = minimize_scalar(
        weighted_nll, bounds=(0.1, 20.0), method="bounded", options={"xatol": 1e-10}
    )
    assert ts.temperature_ == pytest.approx(best.x, rel=1e-7)
    assert ts.nll_after_ == pytest.approx(weighted_nll(ts.temperature_), rel=1e-12)
    assert ts.nll_before_ == pytest.approx(weighted_nll(1.0), rel=1e-12)
    # the weighted gradient vanishes at the fit (central difference of the weighted NLL)
    h = 1e-5 * ts.temperature_
    slope = (weighted_nll(ts.temperature_ + h) - weighted_nll(ts.temperature_ - h)) / (2 * h)
    assert abs(slope) < 1e-8
    assert abs(ts.gradient_) < 1e-10
    # and the unweighted temperature is a different one: the weights mattered
    assert abs(ck.fit_temperature(z, y) - ts.temperature_) > 1e-3


def test_weighted_binary_temperature_is_the_weighted_maximum_likelihood():
    s, y = _binary_scores(200, 8)
    w = np.random.default_rng(3).integers(1, 6, y.size).astype(float)
    sign = np.where(y == 1, 1.0, -1.0)

    def weighted_nll(t: float) -> float:
        return float(np.sum(w * np.logaddexp(0.0, -sign * s / t)) / w.sum())

    best = minimize_scalar(
        weighted_nll, bounds=(0.1, 20.0), method="bounded", options={"xatol": 1e-10}
    )
    t = ck.fit_temperature(s, y, sample_weight=w)
    assert t == pytest.approx(best.x, rel=1e-7)


def test_weighted_isotonic_equals_scikit_learns_isotonic_regression():
    isotonic = pytest.importorskip("sklearn.isotonic")
    s, y = _binary_scores(120, 12)
    w = np.random.default_rng(4).random(y.size) * 3.0
    w[::7] = 0.0
    ours = ck.IsotonicCalibration().fit(s, y, sample_weight=w)
    theirs = isotonic.IsotonicRegression(out_of_bounds="clip").fit(s, y, sample_weight=w)
    grid = np.linspace(-6.0, 6.0, 301)
    np.testing.assert_allclose(ours.predict_proba(grid), theirs.predict(grid), rtol=0, atol=1e-12)


@pytest.fixture(scope="module")
def frozen_model():
    pytest.importorskip("sklearn")
    from sklearn.datasets import make_classification
    from sklearn.frozen import FrozenEstimator
    from sklearn.linear_model import LogisticRegression

    x, y = make_classification(n_samples=400, n_features=5, n_informative=3, random_state=0)
    clf = LogisticRegression(C=0.05).fit(x[:200], y[:200])
    w = np.random.default_rng(9).integers(0, 5, 200).astype(float)
    return FrozenEstimator(clf), clf, x[200:], y[200:], w


@pytest.mark.filterwarnings("ignore:Since FrozenEstimator:UserWarning")
def test_weighted_platt_equals_scikit_learns_sigmoid_calibration(frozen_model):
    from sklearn.calibration import CalibratedClassifierCV

    frozen, clf, x, y, w = frozen_model
    theirs = CalibratedClassifierCV(frozen, method="sigmoid").fit(x, y, sample_weight=w)
    ours = ck.PlattScaling().fit(clf.decision_function(x), y, sample_weight=w)
    grid = clf.decision_function(x)
    # scikit-learn stops L-BFGS at a gradient of 1e-6; calibkit's Newton fit is exact
    np.testing.assert_allclose(
        ours.predict_proba(grid), theirs.predict_proba(x)[:, 1], rtol=0, atol=2e-5
    )
    unweighted = ck.PlattScaling().fit(clf.decision_function(x), y)
    assert np.max(np.abs(unweighted.predict_proba(grid) - ours.predict_proba(grid))) > 1e-3


@pytest.mark.filterwarnings("ignore:Since FrozenEstimator:UserWarning")
def test_weighted_isotonic_equals_scikit_learns_isotonic_calibration(frozen_model):
    from sklearn.calibration import CalibratedClassifierCV

    frozen, clf, x, y, w = frozen_model
    theirs = CalibratedClassifierCV(frozen, method="isotonic").fit(x, y, sample_weight=w)
    ours = ck.IsotonicCalibration().fit(clf.decision_function(x), y, sample_weight=w)
    np.testing.assert_allclose(
        ours.predict_proba(clf.decision_function(x)),
        theirs.predict_proba(x)[:, 1],
        rtol=0,
        atol=1e-12,
    )


def test_platt_smoothed_targets_use_the_classes_total_weights():
    # positives' weights sum to 6, negatives' to 3: targets 7/8 and 1/5 (Platt's prior with
    # N+ = 6, N- = 3). One score per class, so the fit reproduces both targets exactly.
    s = np.array([-1.0, -1.0, 1.0, 1.0])
    y = np.array([0, 0, 1, 1])
    platt = ck.PlattScaling().fit(s, y, sample_weight=[1, 2, 4, 2])
    np.testing.assert_allclose(platt.predict_proba([-1.0, 1.0]), [1 / 5, 7 / 8], rtol=1e-10)


def test_weighted_histogram_bin_values_by_hand():
    # bins (0, 0.5] and (0.5, 1]: weights 1, 3 on labels 0, 1 give 3/4; weights 2, 2 on
    # labels 1, 0 give 1/2. counts stay the raw rows.
    hb = ck.HistogramBinning(n_bins=2).fit(
        [0.2, 0.4, 0.6, 0.8], [0, 1, 1, 0], sample_weight=[1, 3, 2, 2]
    )
    assert hb.predict_proba([0.3, 0.7]).tolist() == [0.75, 0.5]
    assert hb.maps_[0].counts.tolist() == [2, 2]


# ----------------------------------------------------------------------------- groups


def test_group_weights_reach_each_groups_fit_and_min_size_counts_weighted_rows():
    s, y = _binary_scores(300, 14)
    groups = np.where(np.arange(300) < 200, "a", "b")
    w = np.random.default_rng(6).random(300) + 0.5
    w[200:290] = 0.0  # group b keeps 10 rows of positive weight
    gc = ck.GroupCalibrator(min_group_size=20).fit(s, y, groups=groups, sample_weight=w)
    own = ck.TemperatureScaling().fit(s[:200], y[:200], sample_weight=w[:200])
    assert gc.maps_["a"].temperature_ == own.temperature_
    assert gc.pooled_.temperature_ == ck.fit_temperature(s, y, sample_weight=w)
    assert "b" not in gc.maps_
    assert gc.fallback_["b"].startswith("10 of its 100 rows have a positive weight")
    assert gc.sizes_ == {"a": 200, "b": 100}


# ----------------------------------------------------------------------------- bad weights


BAD = [
    ([-1.0], "must not be negative; 1 weight is, first at index 0: -1.0"),
    ([np.nan], "sample_weight"),
    ("zero", "every sample_weight is zero"),
    ("short", "sample_weight"),
]


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("bad, match", BAD, ids=["negative", "nan", "all-zero", "wrong-length"])
def test_bad_weights_are_refused_naming_the_calibrator(case, bad, match):
    factory, make = CASES[case]
    x, y = make(40, 1)
    if bad == "zero":
        w = np.zeros(y.size)
    elif bad == "short":
        w = np.ones(y.size - 1)
    else:
        w = np.ones(y.size)
        w[0] = bad[0]
    calibrator = factory()
    name = type(calibrator).__name__
    with pytest.raises(ck.InputError, match=f"^{name}.fit: .*{match}" if bad != "short" else name):
        _fit(calibrator, x, y, _groups(y.size), sample_weight=w)


def test_wrong_length_weights_say_both_lengths():
    s, y = _binary_scores(10, 0)
    with pytest.raises(ck.InputError, match=r"^PlattScaling\.fit: .*sample_weight.*9.*10"):
        ck.PlattScaling().fit(s, y, sample_weight=np.ones(9))


def test_labels_of_one_outcome_among_the_weighted_rows_are_refused():
    s = np.array([-1.0, 0.0, 1.0])
    with pytest.raises(ck.InputError, match="every label with a positive weight is 1"):
        ck.PlattScaling().fit(s, [0, 1, 1], sample_weight=[0, 1, 1])
    with pytest.raises(ck.InputError, match="every label with a positive weight is 1"):
        ck.TemperatureScaling().fit(s, [0, 1, 1], sample_weight=[0, 1, 1])


def test_fit_temperature_with_an_engine_takes_a_weight_column_not_an_array():
    with pytest.raises(ck.InputError, match="the weights are a column of the input"):
        ck.fit_temperature("scores.parquet", engine="duckdb", sample_weight=[1.0])


def test_weighted_quantile_edges_that_collapse_warn_at_the_callers_line():
    x = np.array([0.1] * 10 + [0.9] * 2)
    y = np.array([0, 1] * 6)
    with pytest.warns(ck.CalibkitWarning, match="2 of 4 quantile bins collapsed") as caught:
        hb = ck.HistogramBinning(n_bins=4, strategy="quantile").fit(x, y, sample_weight=2 * y + 1)
    assert caught[0].filename == __file__
    # repeated rows: 5 + 15 at 0.1 and 1 + 3 at 0.9, so 20 of 24 at 0.1: the inner quantiles
    # at ranks 23 k / 4 = 5.75, 11.5, 17.25 all fall on 0.1, which leaves two bins
    assert hb.maps_[0].edges.tolist() == [0.0, 0.1, 1.0]
