"""risk_coverage: a five-prediction table worked by hand, the identities of the curve, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calibkit as ck

# Five predictions sorted by confidence, the third and fifth wrong; l_wrong = 10, l_defer = 1.
CONF = [0.95, 0.9, 0.8, 0.7, 0.6]
OUT = [1, 1, 0, 1, 0]

# threshold, acted on, coverage, risk (NaN: none acted on), cost per case, all by hand
FIVE_TABLE = [
    (math.inf, 0, 0.0, math.nan, 1.0),
    (0.95, 1, 0.2, 0.0, 0.8),
    (0.9, 2, 0.4, 0.0, 0.6),
    (0.8, 3, 0.6, 1 / 3, 2.4),
    (0.7, 4, 0.8, 1 / 4, 2.2),
    (0.6, 5, 1.0, 2 / 5, 4.0),
]


def _cost(coverage: float, risk: float, l_wrong: float = 10, l_defer: float = 1) -> float:
    """The cost per case from the curve: coverage * risk * l_wrong + (1 - coverage) * l_defer."""
    return (0.0 if coverage == 0 else coverage * risk * l_wrong) + (1 - coverage) * l_defer


# ----------------------------------------------------------------------------- five predictions


def test_five_prediction_table_row_by_row():
    rc = ck.risk_coverage(CONF, OUT)
    assert rc.n == 5 and rc.errors == 2
    assert rc.threshold.size == len(FIVE_TABLE)
    for j, (t, acted, cov, risk, cost) in enumerate(FIVE_TABLE):
        assert rc.threshold[j] == t
        assert rc.coverage[j] == pytest.approx(cov, abs=1e-15)
        assert round(rc.coverage[j] * rc.n) == acted
        if math.isnan(risk):
            assert math.isnan(rc.risk[j])
        else:
            assert rc.risk[j] == pytest.approx(risk, abs=1e-15)
        assert _cost(rc.coverage[j], rc.risk[j]) == pytest.approx(cost, abs=1e-12)


def test_five_prediction_table_rounded_as_printed():
    rc = ck.risk_coverage(CONF, OUT)
    assert [round(float(r), 2) for r in rc.risk[1:]] == [0.0, 0.0, 0.33, 0.25, 0.4]
    assert rc.coverage.tolist() == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]


def test_risk_not_monotone_in_coverage():
    rc = ck.risk_coverage(CONF, OUT)
    # 1/3 at coverage 0.6 falls to 1/4 at 0.8: the fourth prediction, a correct one, is admitted
    assert rc.risk[3] > rc.risk[4]
    assert np.any(np.diff(rc.risk[1:]) < 0) and np.any(np.diff(rc.risk[1:]) > 0)


def test_five_prediction_table_order_of_input_does_not_matter():
    perm = [3, 0, 4, 2, 1]
    a = ck.risk_coverage(CONF, OUT)
    b = ck.risk_coverage([CONF[i] for i in perm], [OUT[i] for i in perm])
    assert np.array_equal(a.threshold, b.threshold)
    assert np.array_equal(a.coverage, b.coverage)
    assert np.array_equal(a.risk, b.risk, equal_nan=True)


def test_five_predictions_aurc_by_hand():
    rc = ck.risk_coverage(CONF, OUT)
    # mean over k of the risk of the k most confident: (0 + 0 + 1/3 + 1/4 + 2/5) / 5
    assert rc.aurc == pytest.approx((0 + 0 + 1 / 3 + 1 / 4 + 2 / 5) / 5, abs=1e-15)
    # oracle: 3 right then 2 wrong: (0 + 0 + 0 + 1/4 + 2/5) / 5
    assert rc.oracle_aurc == pytest.approx((1 / 4 + 2 / 5) / 5, abs=1e-15)
    assert rc.random_aurc == pytest.approx(0.4)
    assert rc.e_aurc == pytest.approx(rc.aurc - rc.oracle_aurc)


def test_risk_at_and_coverage_at_by_hand():
    rc = ck.risk_coverage(CONF, OUT)
    # the smallest acted set reaching the coverage
    assert rc.risk_at(0.2) == 0.0
    assert rc.risk_at(0.4) == 0.0
    assert rc.risk_at(0.5) == pytest.approx(1 / 3)  # needs 3 of 5
    assert rc.risk_at(0.6) == pytest.approx(1 / 3)
    assert rc.risk_at(0.61) == pytest.approx(1 / 4)
    assert rc.risk_at(1.0) == pytest.approx(2 / 5)
    # the largest coverage whose risk is at most the target
    assert rc.coverage_at(0.0) == pytest.approx(0.4)
    assert rc.coverage_at(0.25) == pytest.approx(0.8)  # not monotone: 0.8 passes, 0.6 does not
    assert rc.coverage_at(0.3) == pytest.approx(0.8)
    assert rc.coverage_at(0.4) == pytest.approx(1.0)
    assert rc.coverage_at(1.0) == pytest.approx(1.0)


def test_coverage_at_zero_when_nothing_qualifies():
    rc = ck.risk_coverage([0.9, 0.8], [0, 1])
    assert rc.coverage_at(0.0) == 0.0


def test_oracle_risk_at_the_curve_coverages():
    rc = ck.risk_coverage(CONF, OUT)
    oracle = rc.oracle_risk()
    assert math.isnan(oracle[0])
    assert oracle[1:].tolist() == pytest.approx([0, 0, 0, 1 / 4, 2 / 5])


def test_str_and_to_dict():
    rc = ck.risk_coverage(CONF, OUT)
    text = str(rc)
    assert "above all" in text and "AURC" in text
    d = rc.to_dict()
    assert d["threshold"][0] is None and d["risk"][0] is None
    assert d["coverage"] == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert d["errors"] == 2 and d["n"] == 5


# ----------------------------------------------------------------------------- identities


def _random(n: int, seed: int, ties: bool = False) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    conf = rng.uniform(0.3, 1.0, n)
    if ties:
        conf = np.round(conf, 1)
    return conf, (rng.random(n) < conf).astype(int)


@pytest.mark.parametrize("seed", range(5))
def test_risk_at_full_coverage_is_the_error_rate(seed):
    conf, out = _random(500, seed, ties=seed % 2 == 1)
    rc = ck.risk_coverage(conf, out)
    assert rc.coverage[-1] == 1.0
    assert rc.risk[-1] == pytest.approx(1 - out.mean(), abs=1e-15)
    assert rc.error_rate == pytest.approx(1 - out.mean())
    assert rc.risk_at(1.0) == rc.risk[-1]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=60))
def test_aurc_of_a_perfect_ranking_is_the_oracle(outcomes):
    out = np.array(outcomes, dtype=int)
    n = out.size
    # every right prediction more confident than every wrong one, no ties
    conf = np.empty(n)
    conf[out == 1] = np.linspace(0.99, 0.6, int(out.sum())) if out.sum() else []
    conf[out == 0] = np.linspace(0.5, 0.1, int(n - out.sum())) if n - out.sum() else []
    rc = ck.risk_coverage(conf, out)
    assert rc.aurc == pytest.approx(rc.oracle_aurc, abs=1e-12)
    assert rc.e_aurc == pytest.approx(0.0, abs=1e-12)
    assert np.allclose(rc.risk[1:], rc.oracle_risk()[1:], atol=1e-15)


@pytest.mark.filterwarnings("ignore::calibkit.CalibkitWarning")  # synthetic: any value in [0, 1]
@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 10**6), st.booleans()), min_size=1, max_size=80),
)
def test_aurc_without_ties_is_the_mean_risk_of_the_k_most_confident(rows):
    # distinct confidences: drop repeated integers, then scale into [0, 1]
    seen: dict[int, bool] = {}
    for k, o in rows:
        seen.setdefault(k, o)
    keys = np.array(list(seen), dtype=np.float64)
    out = np.array(list(seen.values()), dtype=int)
    conf = keys / 10**6
    rc = ck.risk_coverage(conf, out)
    order = np.argsort(-conf)
    wrong = np.cumsum(out[order] == 0)
    k = np.arange(1, conf.size + 1)
    assert rc.aurc == pytest.approx(float(np.mean(wrong / k)), abs=1e-12)
    assert rc.coverage.size == conf.size + 1


def test_ties_form_one_step():
    conf = [0.9, 0.8, 0.8, 0.8, 0.5]
    out = [1, 1, 0, 0, 1]
    rc = ck.risk_coverage(conf, out)
    assert rc.threshold.tolist() == [math.inf, 0.9, 0.8, 0.5]
    assert rc.coverage.tolist() == pytest.approx([0, 0.2, 0.8, 1.0])
    assert rc.risk[1:].tolist() == pytest.approx([0, 2 / 4, 2 / 5])
    # the tie's risk counts over the coverage it adds: 0.2 * 0 + 0.6 * 0.5 + 0.2 * 0.4
    assert rc.aurc == pytest.approx(0.6 * 0.5 + 0.2 * 0.4)
    # the order of rows inside a tie does not matter
    rc2 = ck.risk_coverage([0.8, 0.8, 0.9, 0.5, 0.8], [0, 0, 1, 1, 1])
    assert np.array_equal(rc.risk, rc2.risk, equal_nan=True)
    assert rc.aurc == rc2.aurc


def test_all_equal_confidences_are_one_step():
    rc = ck.risk_coverage([0.7] * 4, [1, 0, 1, 1])
    assert rc.coverage.tolist() == [0.0, 1.0]
    assert rc.risk[1] == 0.25
    assert rc.aurc == 0.25


def _same_curve(a: ck.RiskCoverage, b: ck.RiskCoverage) -> bool:
    return (
        np.array_equal(a.coverage, b.coverage)
        and np.array_equal(a.risk, b.risk, equal_nan=True)
        and a.aurc == b.aurc
    )


@pytest.mark.parametrize(
    "transform",
    [
        lambda p: p**3,
        lambda p: np.sqrt(p),
        lambda p: 0.5 + 0.25 * p,
        lambda p: np.expm1(p) / np.expm1(1.0),
    ],
    ids=["cube", "sqrt", "affine", "expm1"],
)
@pytest.mark.parametrize("ties", [False, True])
def test_increasing_transformation_leaves_the_curve_unchanged(transform, ties):
    conf, out = _random(2000, 7, ties=ties)
    a = ck.risk_coverage(conf, out)
    b = ck.risk_coverage(transform(conf), out)
    assert _same_curve(a, b)


@pytest.mark.filterwarnings("ignore::calibkit.CalibkitWarning")  # synthetic: any value in [0, 1]
@settings(max_examples=40, deadline=None)
@given(st.floats(0.2, 5.0), st.integers(0, 2**32 - 1))
def test_increasing_power_leaves_the_curve_unchanged(power, seed):
    conf, out = _random(300, seed, ties=seed % 3 == 0)
    assert _same_curve(ck.risk_coverage(conf, out), ck.risk_coverage(conf**power, out))


@pytest.mark.parametrize("temperature", [0.5, 0.79, 1.3, 2.88, 10.0])
@pytest.mark.parametrize("seed", range(3))
def test_temperature_scaling_of_binary_scores_gives_a_bit_identical_curve(temperature, seed):
    rng = np.random.default_rng(seed)
    s = rng.normal(0, 3, 5000)
    s[:200] = np.round(s[:200])  # some exact ties, kept as ties by any temperature
    y = (rng.random(5000) < ck.sigmoid(s / 1.7)).astype(int)
    before = ck.risk_coverage(probs=s, labels=y, from_logits=True)
    after = ck.risk_coverage(probs=s / temperature, labels=y, from_logits=True)
    assert np.array_equal(before.coverage, after.coverage)
    assert np.array_equal(before.risk, after.risk, equal_nan=True)
    assert before.aurc == after.aurc


def test_fitted_temperature_gives_a_bit_identical_binary_curve():
    rng = np.random.default_rng(11)
    s = rng.normal(0, 4, 4000)
    y = (rng.random(4000) < ck.sigmoid(s / 2.5)).astype(int)
    ts = ck.TemperatureScaling().fit(s[:2000], y[:2000])
    assert ts.temperature_ > 1.5
    # the predicted class's confidence, sigmoid(|s|), before and after the fitted temperature
    right = (s[2000:] >= 0) == (y[2000:] == 1)
    before = ck.risk_coverage(ck.sigmoid(np.abs(s[2000:])), right)
    after = ck.risk_coverage(ts.predict_proba(np.abs(s[2000:])), right)
    assert np.array_equal(before.coverage, after.coverage)
    assert np.array_equal(before.risk, after.risk, equal_nan=True)


# ----------------------------------------------------------------------------- bad input


def test_empty_input():
    with pytest.raises(ck.InputError, match="risk_coverage: confidence is empty"):
        ck.risk_coverage([], [])


def test_nan_confidence():
    with pytest.raises(
        ck.InputError,
        match="risk_coverage: confidence must not contain NaN; 1 value is NaN, first at index 1",
    ):
        ck.risk_coverage([0.9, np.nan, 0.6], [1, 1, 0])


def test_confidence_outside_unit_interval():
    with pytest.raises(ck.InputError, match=r"must lie in \[0, 1\]"):
        ck.risk_coverage([0.9, 1.5], [1, 0])


@pytest.mark.parametrize("outcome", [[1, 2, 0], [1, -1, 0], [1.0, 0.5, 0.0]])
def test_outcome_not_zero_one(outcome):
    with pytest.raises(ck.InputError, match="outcome must be 0 or 1"):
        ck.risk_coverage([0.9, 0.8, 0.7], outcome)


def test_outcome_length_mismatch():
    with pytest.raises(ck.InputError, match="outcome has 2 entries but the forecasts have 3"):
        ck.risk_coverage([0.9, 0.8, 0.7], [1, 0])


@pytest.mark.parametrize("bad", [0, -0.1, 1.5, "half", None])
def test_risk_at_bad_coverage(bad):
    rc = ck.risk_coverage(CONF, OUT)
    with pytest.raises(ck.InputError, match=r"risk_at: coverage must be a number in \(0, 1\]"):
        rc.risk_at(bad)


@pytest.mark.parametrize("bad", [-0.1, 1.5, "low"])
def test_coverage_at_bad_risk(bad):
    rc = ck.risk_coverage(CONF, OUT)
    with pytest.raises(ck.InputError, match=r"coverage_at: risk must be a number in \[0, 1\]"):
        rc.coverage_at(bad)


# ----------------------------------------------------------------------------- numba kernel


def _steps_data(kind: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    conf = {
        "uniform": lambda: rng.random(n),
        "rounded": lambda: np.round(rng.random(n), 2),
        "equal": lambda: np.full(n, 0.625),
        "zeros and ones": lambda: rng.choice(np.array([-0.0, 0.0, 1.0, 0.5]), n),
        "steep": lambda: rng.random(n) ** 12,  # many magnitudes
    }[kind]()
    return conf, (rng.random(n) < 0.8).astype(np.int8)


@pytest.mark.parametrize("kind", ["uniform", "rounded", "equal", "zeros and ones", "steep"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_numba_steps_equal_the_argsort_reference(monkeypatch, kind, dtype):
    pytest.importorskip("numba")
    from calibkit.decide.coverage import sorted_steps, sorted_steps_numpy

    monkeypatch.setenv("CALIBKIT_KERNEL", "numba")
    conf, out = _steps_data(kind, 300_007, seed=len(kind))
    conf = conf.astype(dtype)
    got, want = sorted_steps(conf, out), sorted_steps_numpy(conf, out)
    assert got.n == want.n
    assert got.threshold.dtype == want.threshold.dtype == np.float64
    assert np.array_equal(got.threshold, want.threshold)
    assert np.array_equal(got.acted, want.acted) and np.array_equal(got.wrong, want.wrong)


@pytest.mark.parametrize("kind", ["uniform", "rounded", "equal"])
def test_risk_coverage_is_identical_on_both_paths(monkeypatch, kind):
    pytest.importorskip("numba")
    conf, out = _steps_data(kind, 250_001, seed=3)
    curves = {}
    for mode in ("numpy", "numba"):
        monkeypatch.setenv("CALIBKIT_KERNEL", mode)
        curves[mode] = ck.risk_coverage(conf, out)
    a, b = curves["numpy"], curves["numba"]
    assert np.array_equal(a.threshold, b.threshold) and _same_curve(a, b)
    assert (a.n, a.errors, a.oracle_aurc) == (b.n, b.errors, b.oracle_aurc)
    # the curve's last point by hand: everything acted on, the error rate
    assert b.coverage[-1] == 1.0 and b.risk[-1] == np.count_nonzero(out == 0) / out.size
