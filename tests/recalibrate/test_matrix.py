"""Vector and matrix scaling: exact derivatives, recovery of a known map, regularisation towards
the identity, persistence, input errors, and a real multiclass problem (scikit-learn's digits)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calibkit as ck
from calibkit.recalibrate import matrix as mx
from calibkit.recalibrate.base import Calibrator, load_calibrator, save_calibrator
from calibkit.recalibrate.matrix import MatrixScaling, VectorScaling


def _softmax(u: np.ndarray) -> np.ndarray:
    e = np.exp(u - u.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _sample_labels(rng: np.random.Generator, u: np.ndarray) -> np.ndarray:
    """Labels drawn from softmax(u), one per row."""
    cdf = _softmax(u).cumsum(axis=1)
    return np.minimum((rng.random((u.shape[0], 1)) > cdf).sum(axis=1), u.shape[1] - 1)


def _nll(p: np.ndarray, y: np.ndarray) -> float:
    return float(-np.mean(np.log(p[np.arange(len(y)), y])))


def _centred(w: np.ndarray) -> np.ndarray:
    """W up to the vector added to every row (which leaves the softmax unchanged)."""
    return w - w.mean(axis=0, keepdims=True)


def _problem(matrix: bool, z: np.ndarray, y: np.ndarray, **penalty: float) -> mx._Problem:
    c = z.shape[1]
    cal = MatrixScaling(**penalty) if matrix else VectorScaling(**penalty)
    h, _ = cal._penalty_weights(c, "test")
    return mx._Problem(z, y, matrix, h, cal._identity(c))


PENALTIES = {
    False: [{}, {"l2": 0.7}],
    True: [
        {},
        {"l2": 0.7},
        {"off_diagonal": 0.3},
        {"intercept": 0.5},
        {"l2": 0.2, "off_diagonal": 0.3, "intercept": 0.5},
    ],
}
CASES = [(m, p) for m in (False, True) for p in PENALTIES[m]]


# --------------------------------------------------------------------------- exact derivatives


@pytest.mark.parametrize(("matrix", "penalty"), CASES)
def test_gradient_matches_finite_differences(matrix, penalty):
    rng = np.random.default_rng(1)
    z = rng.normal(size=(60, 4)) * 2
    y = rng.integers(0, 4, 60)
    problem = _problem(matrix, z, y, **penalty)
    x = problem.identity + 0.3 * rng.normal(size=problem.identity.size)
    value, grad = problem.value_and_grad(x)
    h = 1e-6
    fd = np.empty_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        fd[i] = (problem.value_and_grad(x + e)[0] - problem.value_and_grad(x - e)[0]) / (2 * h)
    assert np.max(np.abs(fd - grad)) <= 1e-6 * np.max(np.abs(grad))
    # the value is the mean NLL plus the penalty
    a, b = problem._split(x)
    u = z @ a.T + b if matrix else z * a + b
    d = x - problem.identity
    assert value == pytest.approx(_nll(_softmax(u), y) + np.sum(problem.h * d * d), rel=1e-12)


@pytest.mark.parametrize(("matrix", "penalty"), CASES)
def test_hessian_vector_product_matches_finite_differences(matrix, penalty):
    rng = np.random.default_rng(2)
    z = rng.normal(size=(50, 3)).astype(np.float32)
    y = rng.integers(0, 3, 50)
    problem = _problem(matrix, z, y, **penalty)
    x = problem.identity + 0.3 * rng.normal(size=problem.identity.size)
    vec = rng.normal(size=x.size)
    h = 1e-5
    fd = (problem.value_and_grad(x + h * vec)[1] - problem.value_and_grad(x - h * vec)[1]) / (2 * h)
    hv = problem.hessp(x, vec)
    assert np.max(np.abs(fd - hv)) <= 1e-6 * np.max(np.abs(hv))
    if not matrix:  # the full Hessian used by vector scaling's solver agrees with it
        np.testing.assert_allclose(problem.hess(x) @ vec, hv, rtol=1e-10, atol=1e-13)


# --------------------------------------------------------------------------- known maps


def test_matrix_scaling_recovers_a_known_matrix_map():
    rng = np.random.default_rng(3)
    n, c = 40_000, 4
    z = rng.normal(size=(n, c)) * 1.5
    a = np.eye(c) * 0.6 + 0.25 * rng.normal(size=(c, c))
    b = np.array([0.5, -0.3, 0.0, 0.2])
    y = _sample_labels(rng, z @ a.T + b)
    ms = MatrixScaling().fit(z, y)
    assert ms.converged_ and ms.gradient_norm_ < 1e-8
    assert np.max(np.abs(_centred(ms.weights_) - _centred(a))) < 0.06
    assert np.max(np.abs((ms.bias_ - ms.bias_.mean()) - (b - b.mean()))) < 0.06
    assert ms.nll_after_ < ms.nll_before_


def test_identity_data_leave_the_matrix_near_identity():
    rng = np.random.default_rng(4)
    z = rng.normal(size=(30_000, 3)) * 2
    y = _sample_labels(rng, z)  # already calibrated
    ms = MatrixScaling().fit(z, y)
    assert np.max(np.abs(_centred(ms.weights_) - _centred(np.eye(3)))) < 0.05
    assert np.max(np.abs(ms.bias_ - ms.bias_.mean())) < 0.05
    diff = np.abs(ms.predict_proba(z) - _softmax(z))
    assert diff.max() < 0.05 and diff.mean() < 0.005
    assert ms.nll_before_ - ms.nll_after_ < 1e-3  # nothing to gain


def test_vector_scaling_beats_or_ties_temperature_when_temperature_is_the_truth():
    rng = np.random.default_rng(5)
    true = 1.5 * rng.normal(size=(20_000, 4))
    y = _sample_labels(rng, true)
    z = 2.5 * true  # overconfident by a temperature of 2.5
    ts = ck.TemperatureScaling().fit(z, y)
    vs = VectorScaling().fit(z, y)
    # vector scaling with w = 1/T in every class and b = 0 is temperature scaling
    assert vs.nll_after_ <= ts.nll_after_ + 1e-12
    assert _nll(vs.predict_proba(z), y) == pytest.approx(vs.nll_after_, rel=1e-12)
    np.testing.assert_allclose(vs.weights_, 1 / ts.temperature_, atol=0.04)
    assert ts.temperature_ == pytest.approx(2.5, rel=0.1)
    assert np.max(np.abs(vs.bias_ - vs.bias_.mean())) < 0.1


def test_float32_logits_fit_exactly_as_their_float64_values():
    rng = np.random.default_rng(6)
    z = (rng.normal(size=(3_000, 5)) * 3).astype(np.float32)
    y = rng.integers(0, 5, 3_000)
    for cls in (VectorScaling, MatrixScaling):
        a = cls(l2=0.1).fit(z, y)
        b = cls(l2=0.1).fit(z.astype(np.float64), y)
        assert np.array_equal(a.weights_, b.weights_) and np.array_equal(a.bias_, b.bias_)
        assert np.array_equal(a.predict_proba(z), b.predict_proba(z.astype(np.float64)))


# --------------------------------------------------------------------------- regularisation


def _overfit_data():
    rng = np.random.default_rng(7)
    z = rng.normal(size=(60, 5)) * 3
    y = rng.integers(0, 5, 60)
    return z, y


@pytest.mark.parametrize(
    ("make", "size"),
    [
        (
            lambda s: VectorScaling(l2=s),
            lambda c: np.sum((c.weights_ - 1) ** 2) + np.sum(c.bias_**2),
        ),
        (
            lambda s: MatrixScaling(l2=s, intercept=1.0),
            lambda c: np.sum((c.weights_ - np.eye(5)) ** 2),
        ),
        (
            lambda s: MatrixScaling(off_diagonal=s, intercept=1.0),
            lambda c: np.sum((c.weights_ * (1 - np.eye(5))) ** 2),
        ),
        (lambda s: MatrixScaling(l2=1.0, intercept=s), lambda c: np.sum(c.bias_**2)),
    ],
)
def test_penalty_shrinks_towards_the_identity(make, size):
    z, y = _overfit_data()
    sizes = []
    for strength in [0.01, 0.1, 1.0, 10.0, 100.0, 1e4]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ck.CalibkitWarning)  # the unbounded directions
            cal = make(strength).fit(z, y)
        sizes.append(size(cal))
    assert all(
        later <= earlier * (1 + 1e-6) + 1e-12
        for earlier, later in zip(sizes, sizes[1:], strict=False)
    )
    assert sizes[-1] < 1e-3 * sizes[0]


def test_huge_penalty_is_the_uncalibrated_model():
    z, y = _overfit_data()
    ms = MatrixScaling(l2=1e9, intercept=1e9).fit(z, y)
    np.testing.assert_allclose(ms.predict_proba(z), _softmax(z), atol=1e-6)


# --------------------------------------------------------------------------- what the maps move


def test_matrix_scaling_can_change_the_argmax_and_rows_sum_to_one():
    rng = np.random.default_rng(8)
    z = rng.normal(size=(5_000, 3)) * 2
    swap = np.array([[0, 1, 0], [1, 0, 0], [0, 0, 1]], dtype=float)  # the model confuses 0 and 1
    y = _sample_labels(rng, z @ swap.T)
    ms = MatrixScaling().fit(z, y)
    p = ms.predict_proba(z)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    moved = p.argmax(axis=1) != z.argmax(axis=1)
    assert moved.mean() > 0.3  # argmax 0 <-> 1 swapped
    assert np.mean(p.argmax(axis=1) == y) > np.mean(z.argmax(axis=1) == y) + 0.2


_rng = np.random.default_rng(9)
_Z = _rng.normal(size=(500, 3)) * 2
_FITTED = MatrixScaling(off_diagonal=0.1, intercept=0.1).fit(_Z, _sample_labels(_rng, 1.7 * _Z))


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=3, max_size=3),
        min_size=1,
        max_size=20,
    )
)
def test_any_finite_logits_give_probability_rows(rows):
    p = _FITTED.predict_proba(np.array(rows))
    assert p.shape == (len(rows), 3)
    assert np.all((p >= 0) & (p <= 1))
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=0, atol=1e-12)


# --------------------------------------------------------------------------- the calibrator API


@pytest.mark.parametrize(
    "cal",
    [VectorScaling(l2=0.3), MatrixScaling(l2=0.1, off_diagonal=0.2, intercept=0.3)],
    ids=["vector", "matrix"],
)
def test_json_round_trip_predicts_identically(cal, tmp_path):
    rng = np.random.default_rng(10)
    z = rng.normal(size=(400, 4)) * 2
    cal.fit(z, _sample_labels(rng, 0.7 * z))
    text = json.dumps(cal.to_dict(), allow_nan=False)
    again = Calibrator.from_dict(json.loads(text))
    assert type(again) is type(cal) and again.get_params() == cal.get_params()
    assert np.array_equal(again.predict_proba(z), cal.predict_proba(z))
    assert again.converged_ == cal.converged_ and again.n_iter_ == cal.n_iter_
    loaded = load_calibrator(save_calibrator(tmp_path / "cal.json", cal))
    assert np.array_equal(loaded.predict_proba(z), cal.predict_proba(z))


def test_malformed_state_is_an_input_error():
    rng = np.random.default_rng(11)
    z = rng.normal(size=(100, 3))
    data = MatrixScaling(l2=1.0, intercept=1.0).fit(z, rng.integers(0, 3, 100)).to_dict()
    data["state"]["weights"] = [[1.0, 0.0], [0.0, 1.0]]
    with pytest.raises(ck.InputError, match=r"expected weights of shape \(3, 3\)"):
        Calibrator.from_dict(data)


def test_sklearn_clone():
    from sklearn.base import clone

    cal = MatrixScaling(l2=0.5, off_diagonal=0.25, intercept=0.125, from_logits=False)
    copy = clone(cal)
    assert copy is not cal and copy.get_params() == cal.get_params() and not copy.is_fitted
    assert clone(VectorScaling(l2=2.0)).get_params() == {
        "l2": 2.0,
        "from_logits": True,
        "clip": None,
        "check_logits": True,
    }


@pytest.mark.parametrize("cls", [VectorScaling, MatrixScaling])
def test_not_fitted(cls):
    with pytest.raises(ck.NotFittedError, match="not fitted yet"):
        cls().predict_proba([[0.0, 1.0]])


def test_probabilities_takes_logs_and_rejects_exact_zeros():
    rng = np.random.default_rng(12)
    z = rng.normal(size=(2_000, 3)) * 2
    y = _sample_labels(rng, z)
    probs = _softmax(z)
    for cls in (VectorScaling, MatrixScaling):
        cal = cls(from_logits=False).fit(probs, y)
        assert np.mean(np.abs(cal.predict_proba(probs) - probs)) < 0.01  # already calibrated
    bad = probs.copy()
    bad[5] = [0.0, 0.5, 0.5]
    with pytest.raises(
        ck.InputError,
        match=r"MatrixScaling.fit: the log is infinite for a probability of exactly 0; 1 value of probs is, at row 5, column 0: 0.0\. Pass clip=1e-7",
    ):
        MatrixScaling(from_logits=False).fit(bad, y)
    with pytest.raises(ck.InputError, match="exactly 0"):
        VectorScaling(from_logits=False).fit(probs, y).predict_proba(bad)
    with pytest.raises(ck.InputError, match=r"probs must lie in \[0, 1\]"):
        MatrixScaling(from_logits=False).fit(z, y)  # logits are not probabilities


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("cls", [VectorScaling, MatrixScaling])
def test_bad_input(cls):
    z = np.array([[1.0, 0.0, -1.0], [0.0, 2.0, 0.5], [0.3, 0.1, 0.2], [1.0, 1.0, 3.0]])
    y = np.array([0, 1, 2, 2])
    name = cls.__name__
    nan = z.copy()
    nan[2, 1] = np.nan
    with pytest.raises(
        ck.InputError,
        match=rf"{name}.fit: logits must be finite; 1 value is not, first at row 2, column 1",
    ):
        cls().fit(nan, y)
    with pytest.raises(
        ck.InputError, match=rf"{name}.fit: labels must lie in 0..2 .* first at index 3: 3"
    ):
        cls().fit(z, [0, 1, 2, 3])
    with pytest.raises(ck.InputError, match=r"labels has 3 entries but the forecasts have 4"):
        cls().fit(z, [0, 1, 2])
    with pytest.raises(
        ck.InputError, match=r"must be a 2-D array \(N, C\) .* got an array of shape \(4,\)"
    ):
        cls().fit(z[:, 0], [0, 1, 1, 0])
    with pytest.raises(ck.InputError, match="l2 must be a finite number >= 0"):
        cls(l2=-1.0).fit(z, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ck.CalibkitWarning)  # 4 rows: separable
        fitted = cls(l2=1.0).fit(z, y)
    with pytest.raises(
        ck.InputError, match=rf"{name}.predict_proba: fitted on 3 classes, got 4 columns"
    ):
        fitted.predict_proba(np.zeros((2, 4)))
    with pytest.raises(ck.InputError, match="must be a 2-D array"):
        fitted.predict_proba([0.1, 0.2, 0.3])
    with pytest.raises(ck.InputError, match="must be finite"):
        fitted.predict_proba(nan)


def test_matrix_penalty_settings_are_checked():
    z = np.eye(3)
    with pytest.raises(ck.InputError, match="off_diagonal must be a finite number >= 0"):
        MatrixScaling(off_diagonal=float("nan")).fit(z, [0, 1, 2])
    with pytest.raises(
        ck.InputError, match=r"intercept must be a finite number >= 0 \(0 = no penalty\), got 'x'"
    ):
        MatrixScaling(intercept="x").fit(z, [0, 1, 2])


# --------------------------------------------------------------------------- warnings, never silence


def test_non_convergence_warns(monkeypatch):
    monkeypatch.setattr(mx, "_MAX_ITER", 1)
    rng = np.random.default_rng(13)
    z = rng.normal(size=(500, 4)) * 3
    y = _sample_labels(rng, 0.3 * z)
    with pytest.warns(ck.CalibkitWarning, match="did not converge after 1 iterations"):
        ms = MatrixScaling().fit(z, y)
    assert not ms.converged_ and ms.gradient_norm_ > 1e-6


def test_separable_data_warn_unless_penalised():
    z = np.array([[2.0, 0.0], [0.0, 2.0], [1.0, 0.0], [0.0, 1.0]])
    y = [0, 1, 0, 1]
    with pytest.warns(ck.CalibkitWarning, match="separable by this map"):
        MatrixScaling().fit(z, y)
    with pytest.warns(ck.CalibkitWarning, match="separable by this map"):
        VectorScaling().fit(z, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ms = MatrixScaling(l2=0.1, intercept=0.1).fit(z, y)
        VectorScaling(l2=0.1).fit(z, y)
    assert ms.converged_


def test_absent_class_warns():
    rng = np.random.default_rng(14)
    z = rng.normal(size=(300, 3))
    y = rng.integers(0, 2, 300)  # class 2 never appears
    with pytest.warns(ck.CalibkitWarning, match="class 2 never appears in the labels"):
        MatrixScaling(l2=1.0).fit(z, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        MatrixScaling(l2=1.0, intercept=1.0).fit(z, y)


# --------------------------------------------------------------------------- a real problem


@pytest.fixture(scope="module")
def digits_logits():
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    x_fit, x_rest, y_fit, y_rest = train_test_split(x, y, test_size=0.6, random_state=0, stratify=y)
    x_cal, x_test, y_cal, y_test = train_test_split(
        x_rest, y_rest, test_size=0.5, random_state=0, stratify=y_rest
    )
    model = LogisticRegression(max_iter=5000).fit(x_fit, y_fit)
    return model.decision_function(x_cal), y_cal, model.decision_function(x_test), y_test


def test_digits_held_out_nll(digits_logits):
    """Held-out NLL on digits (539 calibration, 540 test rows, logits of a LogisticRegression):
    raw 0.1626, temperature 0.1420, vector 0.1358, matrix unpenalised 9.02 (separable: it
    overfits), ODIR lambda = mu = 1: 0.1477, lambda = mu = 10: 0.1197."""
    z_cal, y_cal, z_test, y_test = digits_logits
    raw = _nll(_softmax(z_test), y_test)
    vector = _nll(VectorScaling().fit(z_cal, y_cal).predict_proba(z_test), y_test)
    assert vector < raw - 0.02
    with pytest.warns(ck.CalibkitWarning, match="separable"):
        plain = MatrixScaling().fit(z_cal, y_cal)
    overfit = _nll(plain.predict_proba(z_test), y_test)
    assert overfit > raw  # 110 parameters on 539 separable rows
    held_out = [overfit]
    for strength in [0.1, 1.0, 10.0]:
        odir = MatrixScaling(off_diagonal=strength, intercept=strength).fit(z_cal, y_cal)
        assert odir.converged_
        held_out.append(_nll(odir.predict_proba(z_test), y_test))
    assert held_out == sorted(held_out, reverse=True)  # less overfitting as the penalty grows
    assert held_out[-1] < raw - 0.03
