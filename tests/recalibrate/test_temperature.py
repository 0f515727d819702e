"""Temperature scaling: the seeds' numbers, exactness against an independent optimiser, scikit-learn
as an oracle, degenerate data, and the calibrator contract."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar
from scipy.special import log_softmax

import calibkit as ck

SIX_LOGITS = np.array(
    [
        [3.0, 1.0, 0.0],
        [2.5, 1.0, 0.0],
        [3.0, 0.5, 0.0],
        [1.5, 2.0, 0.0],
        [0.5, 0.0, 1.5],
        [2.0, 2.2, 0.0],
    ]
)
SIX_LABELS = np.array([0, 0, 1, 1, 2, 0])


def calibrated_logits(n: int, c: int, spread: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Logits whose softmax is the true label distribution (Gumbel-max sampling)."""
    rng = np.random.default_rng(seed)
    z = spread * rng.normal(size=(n, c))
    labels = (z + rng.gumbel(size=(n, c))).argmax(axis=1)
    return z, labels


def reference_temperature(z: np.ndarray, y: np.ndarray) -> float:
    """Maximum-likelihood T by a bounded scalar search in log T, in float64 (independent)."""
    z = np.asarray(z, dtype=np.float64)
    rows = np.arange(len(y))

    def nll(log_t: float) -> float:
        if z.ndim == 1:
            signed = np.where(y == 1, 1.0, -1.0) * z / np.exp(log_t)
            return float(np.mean(np.logaddexp(0.0, -signed)))
        return float(-log_softmax(z / np.exp(log_t), axis=1)[rows, y].mean())

    result = minimize_scalar(
        nll, bounds=(-12.0, 12.0), method="bounded", options={"xatol": 1e-12, "maxiter": 2000}
    )
    return float(np.exp(result.x))


# --------------------------------------------------------------------------- seed numbers


def test_six_predictions():
    ts = ck.TemperatureScaling().fit(SIX_LOGITS, SIX_LABELS)
    assert round(ts.temperature_, 5) == 1.22975
    assert round(ts.nll_before_, 5) == 0.82278
    assert round(ts.nll_after_, 5) == 0.81243
    before = ck.softmax(SIX_LOGITS).argmax(axis=1)
    after = ts.predict_proba(SIX_LOGITS).argmax(axis=1)
    assert np.array_equal(before, after)
    assert np.mean(after == SIX_LABELS) == 4 / 6


def test_calibrated_logits_times_three_recover_three():
    z, y = calibrated_logits(20_000, 4, 1.5, seed=0)
    assert ck.fit_temperature(3.0 * z, y) == pytest.approx(3.0, rel=0.05)
    assert ck.fit_temperature(z, y) == pytest.approx(1.0, rel=0.05)


def test_4000_row_demo_recovers_two_and_a_half():
    # 4,000 four-class predictions, labels from softmax(z*), reported logits z = 2.5 z*
    z_star, y = calibrated_logits(4000, 4, 1.5, seed=11)
    ts = ck.TemperatureScaling().fit(2.5 * z_star, y)
    assert ts.temperature_ == pytest.approx(2.5, rel=0.1)
    assert ts.nll_after_ < ts.nll_before_


def test_binary_overconfident_scorer():
    rng = np.random.default_rng(0)
    s_true = rng.normal(0, 2, 3000)
    y = (rng.random(3000) < 1 / (1 + np.exp(-s_true))).astype(int)
    scores = 1.7 * s_true  # scores pushed too far from zero: overconfident
    ts = ck.TemperatureScaling().fit(scores, y)
    assert ts.temperature_ > 1.0
    p_before, p_after = ck.sigmoid(scores), ts.predict_proba(scores)
    assert np.array_equal(p_before >= 0.5, p_after >= 0.5)  # decisions, hence accuracy
    assert np.array_equal(np.argsort(p_before, kind="stable"), np.argsort(p_after, kind="stable"))
    assert ck.auc(p_before, y) == ck.auc(p_after, y)  # bit-identical


# --------------------------------------------------------------------------- exactness


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_exact_whatever_the_scale_and_dtype(scale, dtype):
    z, y = calibrated_logits(3000, 5, 1.0, seed=3)
    logits = (2.0 * scale * z).astype(dtype)
    ts = ck.TemperatureScaling().fit(logits, y)
    assert ts.converged_
    assert ts.temperature_ == pytest.approx(reference_temperature(logits, y), rel=1e-6)
    assert ts.n_evaluations_ <= 15


def test_binary_exact():
    rng = np.random.default_rng(2)
    s = rng.normal(0, 3, 5000)
    y = (rng.random(5000) < 1 / (1 + np.exp(-s / 2.5))).astype(int)
    t = ck.fit_temperature(s, y)
    assert t == pytest.approx(reference_temperature(s, y), rel=1e-6)
    assert t == pytest.approx(2.5, rel=0.1)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), c=st.integers(2, 8), spread=st.floats(0.3, 4.0))
def test_fitted_temperature_is_a_stationary_point(seed, c, spread):
    z, y = calibrated_logits(400, c, spread, seed)
    ts = ck.TemperatureScaling().fit(1.8 * z, y)
    assert abs(ts.gradient_) < 1e-8
    # and never changes an argmax
    assert np.array_equal(ts.predict_proba(1.8 * z).argmax(axis=1), z.argmax(axis=1))


def test_golden_section_agrees_with_newton():
    golden = ck.TemperatureScaling(method="golden").fit(SIX_LOGITS, SIX_LABELS)
    newton = ck.TemperatureScaling().fit(SIX_LOGITS, SIX_LABELS)
    # comparisons of f values resolve T only to about sqrt(machine epsilon) near the optimum
    assert golden.temperature_ == pytest.approx(newton.temperature_, rel=1e-7)
    assert golden.n_evaluations_ == 82 and golden.converged_


def test_numpy_and_numba_objectives_agree(monkeypatch):
    pytest.importorskip("numba")
    z, y = calibrated_logits(60_000, 5, 1.0, seed=4)
    z = (2 * z).astype(np.float32)
    temps = {}
    for mode in ("numpy", "numba"):
        monkeypatch.setenv("CALIBKIT_KERNEL", mode)
        temps[mode] = ck.fit_temperature(z, y)
        temps[mode + " binary"] = ck.fit_temperature(z[:, 0] - z[:, 1], (y == 0).astype(int))
    assert temps["numpy"] == pytest.approx(temps["numba"], rel=1e-12)
    assert temps["numpy binary"] == pytest.approx(temps["numba binary"], rel=1e-12)


def test_probabilities_takes_logs():
    z, y = calibrated_logits(2000, 3, 1.0, seed=5)
    probs = ck.softmax(2.0 * z)
    from_probs = ck.fit_temperature(probs, y, from_logits=False)
    assert from_probs == pytest.approx(ck.fit_temperature(2.0 * z, y), rel=1e-9)


# --------------------------------------------------------------------------- oracle


def test_agrees_with_scikit_learn_where_it_converges():
    from sklearn.calibration import _TemperatureScaling

    z, y = calibrated_logits(3000, 4, 1.0, seed=6)
    logits = 1.6 * z
    theirs = 1.0 / _TemperatureScaling().fit(logits, y).beta_
    assert ck.fit_temperature(logits, y) == pytest.approx(theirs, rel=1e-4)


# --------------------------------------------------------------------------- degenerate data


def test_separable_data_is_an_error_not_a_zero():
    z = np.array([[3.0, 0.0], [0.0, 2.0], [5.0, 1.0]])
    with pytest.raises(ck.InputError, match="separable"):
        ck.fit_temperature(z, [0, 1, 0])


def test_constant_logits_carry_no_information():
    with pytest.raises(ck.InputError, match="no information"):
        ck.fit_temperature(np.ones((5, 3)), [0, 1, 2, 0, 1])


def test_one_class_only_in_binary_labels():
    with pytest.raises(ck.InputError, match="both outcomes"):
        ck.fit_temperature([0.5, -1.0, 2.0], [1, 1, 1])


def test_logits_worse_than_uniform_guessing():
    z, y = calibrated_logits(500, 3, 2.0, seed=7)
    with pytest.raises(ck.InputError, match="uniform guessing"):
        ck.fit_temperature(-z, y)  # anti-correlated with the labels


def test_zero_true_class_probability_of_probabilities():
    with pytest.raises(ck.InputError, match="exactly 0"):
        ck.fit_temperature([[1.0, 0.0], [0.3, 0.7]], [1, 1], from_logits=False)


@pytest.mark.parametrize(
    ("logits", "labels", "match"),
    [
        ([[0.0, np.nan], [1.0, 0.0]], [0, 1], "finite"),
        ([[0.0, 1.0], [1.0, 0.0]], [0, 2], "0 or 1"),
        ([[0.0, 1.0], [1.0, 0.0]], [0], "aligned"),
    ],
)
def test_bad_input(logits, labels, match):
    with pytest.raises(ck.InputError, match=match):
        ck.fit_temperature(logits, labels)


# --------------------------------------------------------------------------- calibrator contract


def test_not_fitted_and_wrong_classes():
    with pytest.raises(ck.NotFittedError, match="not fitted"):
        ck.TemperatureScaling().predict_proba(SIX_LOGITS)
    ts = ck.TemperatureScaling().fit(SIX_LOGITS, SIX_LABELS)
    with pytest.raises(ck.InputError, match="3 classes"):
        ts.predict_proba(np.zeros((2, 4)))


def test_json_round_trip_and_files(tmp_path):
    ts = ck.TemperatureScaling().fit(SIX_LOGITS, SIX_LABELS)
    again = ck.Calibrator.from_dict(json.loads(json.dumps(ts.to_dict())))
    assert np.array_equal(again.predict_proba(SIX_LOGITS), ts.predict_proba(SIX_LOGITS))
    path = ck.save_calibrator(tmp_path / "t.json", ts)
    assert np.array_equal(
        ck.load_calibrator(path).predict_proba(SIX_LOGITS), ts.predict_proba(SIX_LOGITS)
    )
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"]  # no temporary left behind


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("not json", "not valid JSON"),
        ('{"kind": "warp", "format_version": 1, "params": {}, "state": {}}', "unknown calibrator"),
        ('{"kind": "temperature"}', "missing field"),
        ('{"kind": "temperature", "format_version": 1, "params": {}, "state": {}}', "malformed"),
        (
            '{"kind": "temperature", "format_version": 1, "params": {"speed": 1}, "state": {}}',
            "malformed",
        ),
    ],
)
def test_malformed_calibrator_files(tmp_path, text, match):
    path = tmp_path / "c.json"
    path.write_text(text)
    with pytest.raises(ck.InputError, match=match):
        ck.load_calibrator(path)


def test_sklearn_clone_and_params():
    from sklearn.base import clone

    ts = ck.TemperatureScaling(method="golden").fit(SIX_LOGITS, SIX_LABELS)
    copy = clone(ts)
    assert copy.get_params() == {
        "from_logits": True,
        "method": "golden",
        "clip": None,
        "check_logits": True,
    }
    assert not copy.is_fitted
    with pytest.raises(ck.InputError, match="unknown parameter"):
        copy.set_params(speed=2)


@pytest.mark.parametrize("beta", [1e-3, 0.37, 1.0, 8.0, 300.0])
def test_objective_passes_agree_to_rounding(monkeypatch, beta):
    """The numba pass (vectorised exp) and the numpy reference give the same f, f' and f''."""
    pytest.importorskip("numba")
    from calibkit.measure import temperature as tm

    z, y = calibrated_logits(50_000, 7, 3.0, seed=8)
    z[::97, 3] = -np.inf  # logs of probabilities that are exactly 0 (never the true class)
    y[::97] = np.where(y[::97] == 3, 0, y[::97])
    values = {}
    for mode in ("numpy", "numba"):
        monkeypatch.setenv("CALIBKIT_KERNEL", mode)
        values[mode] = tm.evaluate(z, y, beta)
    for field in ("value", "gradient", "curvature"):
        a, b = getattr(values["numpy"], field), getattr(values["numba"], field)
        # sums of 50,000 positive terms in different orders: N * eps = 5.6e-12 relative at most
        assert a == pytest.approx(b, rel=1e-10, abs=1e-300)


# --------------------------------------------------------------------------- fewer passes


def low_information_logits(n: int, c: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """z* ~ 1.5 N(0, 1) for every class, labels by Gumbel-max from z*, reported logits 2.5 z*
    (float32): a wide model that knows little, whose T is near 2.5."""
    rng = np.random.default_rng(seed)
    z = 1.5 * rng.normal(size=(n, c))
    labels = (z + rng.gumbel(size=(n, c))).argmax(axis=1)
    return (2.5 * z).astype(np.float32), labels


def _counting_passes(monkeypatch) -> list[float]:
    from calibkit.measure import temperature as tm

    betas: list[float] = []
    evaluate = tm.evaluate

    def counted(scores, labels, beta):
        betas.append(beta)
        return evaluate(scores, labels, beta)

    monkeypatch.setattr(tm, "evaluate", counted)
    return betas


@pytest.mark.parametrize("mode", ["numpy", "numba"])
@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_wide_low_information_fit_is_exact_in_five_passes(monkeypatch, mode, scale, dtype):
    """Halley's step from the first pass's third derivative, f at beta = 0 read in that same
    pass, and the argmax check folded into the last: five passes over the logits in all (the
    Newton iteration from T = 1 took nine, and the argmax check two more)."""
    if mode == "numba":
        pytest.importorskip("numba")
    monkeypatch.setenv("CALIBKIT_KERNEL", mode)
    z, y = low_information_logits(3000, 200, seed=1)
    logits = (scale * z.astype(np.float64)).astype(dtype)
    betas = _counting_passes(monkeypatch)
    ts = ck.TemperatureScaling().fit(logits, y)
    assert ts.converged_ and ts.invariance_.ok
    assert ts.temperature_ == pytest.approx(reference_temperature(logits, y), rel=1e-6)
    assert ts.temperature_ / scale == pytest.approx(2.5, rel=0.1)
    assert len(betas) <= 5 and betas[0] == 1.0 and 0.0 not in betas
    assert abs(ts.gradient_) * ts.temperature_ < 1e-9  # stationary (d NLL / d log T)


@pytest.mark.parametrize("mode", ["numpy", "numba"])
def test_the_pass_gives_the_objective_at_zero_and_the_third_derivative(monkeypatch, mode):
    if mode == "numba":
        pytest.importorskip("numba")
    from calibkit.measure import temperature as tm

    monkeypatch.setenv("CALIBKIT_KERNEL", mode)
    z, y = calibrated_logits(60_000, 6, 2.0, seed=5)
    z[::89, 2] = -np.inf  # a probability of exactly 0 (never the true class)
    y[::89] = np.where(y[::89] == 2, 0, y[::89])
    at = tm.evaluate(z, y, 0.7)
    zero = tm.evaluate(z, y, 0.0)
    first = tm.evaluate(z, y, 1.0)  # the solver's first pass (the numpy path sums it there)
    for field in ("value", "gradient", "curvature"):
        assert getattr(first.origin, field) == pytest.approx(getattr(zero, field), rel=1e-10)
    # f''' by central differences of f'' (f'' is smooth in beta)
    h = 1e-4
    numeric = (tm.evaluate(z, y, 0.7 + h).curvature - tm.evaluate(z, y, 0.7 - h).curvature) / (
        2 * h
    )
    assert at.third == pytest.approx(numeric, rel=1e-6)
    s, t = z[:, 0] - z[:, 1], (y == 0).astype(int)
    s[~np.isfinite(s)] = 0.0
    b = tm.evaluate(s, t, 0.4)
    numeric = (tm.evaluate(s, t, 0.4 + h).curvature - tm.evaluate(s, t, 0.4 - h).curvature) / (
        2 * h
    )
    assert b.third == pytest.approx(numeric, rel=1e-6)
    assert b.origin.gradient == pytest.approx(np.mean(-0.5 * np.where(t == 1, s, -s)), rel=1e-12)


@pytest.mark.parametrize("c", [4, 100])
def test_the_folded_argmax_check_finds_a_tie_made_by_division(monkeypatch, c):
    """Two adjacent float64 logits whose quotients by T round to one value: the argmax moves
    to the first; the numba pass counts it exactly as dividing the logits does (rows of 4
    logits take the one-scan maximum, rows of 100 the running maxima)."""
    pytest.importorskip("numba")
    from calibkit.measure import temperature as tm
    from calibkit.recalibrate.invariance import check_invariance

    temperature = 3.0
    a = 1.6  # quotients in [0.5, 1): their ulp is 1.5 times the gap of a and its neighbour / 3
    while np.nextafter(a, 2.0) / temperature != a / temperature:
        a = np.nextafter(a, 2.0)
    rng = np.random.default_rng(0)
    z = rng.normal(size=(1_000_000 // c, c))
    z[[1000, 7]] = 0.0
    z[[1000, 7], 0] = a
    z[[1000, 7], c // 2] = np.nextafter(a, 2.0)  # the argmax, tied with column 0 after division
    y = rng.integers(0, c, z.shape[0])
    monkeypatch.setenv("CALIBKIT_KERNEL", "numba")
    moved, first, correct = tm.evaluate(z, y, 1.0 / temperature).argmax
    report = check_invariance(z, z / temperature, labels=y, threshold=0.0)
    assert (moved, first) == (report["argmax"].changed, report["argmax"].first) == (2, 7)
    assert correct == np.count_nonzero(z.argmax(axis=1) == y)
