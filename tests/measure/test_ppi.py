"""Prediction-powered inference (calibkit.measure.ppi) against hand computations, identities and
a direct numpy Newton solve of the rectified estimating equation."""

from __future__ import annotations

import numpy as np
import pytest

from calibkit.measure.ppi import _ece_from_sums, ppi_ece_bootstrap, ppi_mean, ppi_slope
from calibkit.measure.slope import calibration_slope

Z = 1.959963984540054


def _data(n_all=3000, n=400, seed=1, err=0.2):
    rng = np.random.default_rng(seed)
    conf = rng.uniform(0.05, 0.95, n_all)
    y = (rng.random(n_all) < conf**1.3).astype(float)
    f = np.where(rng.random(n_all) < err, 1.0 - y, y)
    lab = np.zeros(n_all, bool)
    lab[rng.choice(n_all, n, replace=False)] = True
    return conf, f, y, lab


def test_mean_by_hand():
    f = np.array([1.0, 1.0, 0.0, 1.0, 0.0, 1.0])
    y = np.array([0.0, 1.0, 1.0, 0.0, 0.0, 0.0])
    lab = np.array([True, True, True, False, False, False])
    m = ppi_mean(f, y, lab, lam=1.0)
    # mean_judge(all) = 4/6; rectifier = mean(y - f on L) = (-1 + 0 + 1)/3 = 0
    assert m.estimate == pytest.approx(4 / 6)
    # c = 1 - 3/6 = 1/2; Var_L(y - f/2) with values (-0.5, 0.5, 1) and Var_U(f) of (1, 0, 1)
    var = np.var([-0.5, 0.5, 1.0], ddof=1) / 3 + 0.25 * np.var([1.0, 0.0, 1.0], ddof=1) / 3
    assert m.se == pytest.approx(np.sqrt(var))
    assert m.ci == pytest.approx((4 / 6 - Z * np.sqrt(var), 4 / 6 + Z * np.sqrt(var)))


def test_lam_zero_is_person_only_and_all_labelled_is_classical():
    conf, f, y, lab = _data()
    m = ppi_mean(f, y, lab, lam=0.0)
    assert m.estimate == pytest.approx(y[lab].mean())
    assert m.se == pytest.approx(np.std(y[lab], ddof=1) / np.sqrt(lab.sum()))
    full = ppi_mean(f, y, np.ones_like(lab), lam=None)
    assert full.estimate == pytest.approx(y.mean())
    assert full.se == pytest.approx(np.std(y, ddof=1) / np.sqrt(y.size))


def test_perfect_judge_gives_all_items_classical():
    # judge == person: lam tunes to 1 and the estimate is the mean of all N labels; labelled
    # and unlabelled halves with equal variance make the se that of N labels (ddof=1 on each)
    lab = np.tile([True, False], 100)
    y = np.repeat([1.0, 0.0, 1.0, 1.0], 50)  # pairs (labelled, unlabelled) share a value
    m = ppi_mean(y, y, lab)
    assert m.lam == pytest.approx(1.0)
    assert m.estimate == pytest.approx(y.mean())
    s2 = np.var(y[lab], ddof=1)  # same in U by construction
    assert m.se == pytest.approx(np.sqrt(0.25 * s2 / 100 + 0.25 * s2 / 100))


def test_tuned_lam_never_worse_than_person_only():
    for seed in range(5):
        conf, f, y, lab = _data(seed=seed, err=0.45)  # a nearly useless judge
        assert ppi_mean(f, y, lab).se <= ppi_mean(f, y, lab, lam=0.0).se + 1e-12
        conf, f, y, lab = _data(seed=seed, err=0.05)
        assert ppi_mean(f, y, lab).se <= ppi_mean(f, y, lab, lam=0.0).se + 1e-12


def test_one_labelled_item_has_no_interval():
    m = ppi_mean(np.array([1.0, 0.0]), np.array([0.0, 0.0]), np.array([True, False]))
    assert m.ci is None and m.se is None and "fewer than 2" in m.note
    m = ppi_mean(np.array([1.0, 0.0]), np.array([0.0, 0.0]), np.array([False, False]))
    assert m.estimate is None and m.note == "no labelled items"


def _newton(xl, y, fl, xu, fu, c):
    """Direct solve, independent of the module: rectified score and its Jacobian."""
    th = np.array([0.0, 1.0])
    for _ in range(60):

        def score(t):
            sl, su = 1 / (1 + np.exp(-xl @ t)), 1 / (1 + np.exp(-xu @ t))
            return (xl.T @ ((sl - y) - c * (sl - fl))) / len(y) + c * (xu.T @ (su - fu)) / len(fu)

        g = score(th)
        jac = np.column_stack([(score(th + e) - score(th - e)) / 2e-6 for e in np.eye(2) * 1e-6])
        th = th - np.linalg.solve(jac, g)
    return th


def test_slope_matches_direct_newton_and_identities():
    conf, f, y, lab = _data()
    x = np.log(conf / (1 - conf))
    xa = np.column_stack([np.ones_like(x), x])
    s = ppi_slope(conf, f, y, lab, lam=1.0)
    c = 1.0 - lab.sum() / lab.size
    th = _newton(xa[lab], y[lab], f[lab], xa[~lab], f[~lab], c)
    assert (s.intercept, s.slope) == pytest.approx(tuple(th), abs=1e-7)
    # lam = 0: the person-only logistic fit (calibkit's calibration_slope on the labelled items)
    s0 = ppi_slope(conf, f, y, lab, lam=0.0)
    ref = calibration_slope(conf[lab], y[lab])
    assert (s0.slope, s0.intercept) == pytest.approx((ref.slope, ref.intercept), abs=1e-7)
    # its sandwich se, computed here from the definition
    xl = xa[lab]
    p = 1 / (1 + np.exp(-xl @ np.array([ref.intercept, ref.slope])))
    h = (xl.T * (p * (1 - p))) @ xl / len(p)
    g = xl * (p - y[lab])[:, None]
    cov = np.linalg.inv(h) @ np.cov(g, rowvar=False) @ np.linalg.inv(h) / len(p)
    assert s0.slope_se == pytest.approx(np.sqrt(cov[1, 1]), rel=1e-6)
    # judge == person at lam = 1: the fit of all N labels
    sp = ppi_slope(conf, y, y, lab, lam=1.0)
    full = calibration_slope(conf, y)
    assert (sp.slope, sp.intercept) == pytest.approx((full.slope, full.intercept), abs=1e-7)
    # tuned: perfect judge, lam near 1 (Var_U and Var_L of the scores differ by sampling)
    assert ppi_slope(conf, y, y, lab).lam == pytest.approx(1.0, abs=0.05)


def test_ece_point_matches_per_bin_ppi_and_judge_perfect():
    conf, f, y, lab = _data()
    bins = np.minimum((conf * 5).astype(int), 4)
    est, (lo, hi) = ppi_ece_bootstrap(conf, bins, 5, f, y, lab, n_boot=300, power_tuning=False)
    want = 0.0
    for b in range(5):
        i = bins == b
        acc = ppi_mean(f[i], y[i], lab[i], lam=1.0).estimate
        want += i.sum() / conf.size * abs(acc - conf[i].mean())
    assert est == pytest.approx(want)
    assert (
        0.0 <= lo < hi <= 1.0
    )  # percentile interval (it need not hold the upward-biased estimate)
    # a perfect judge: the PPI ECE is the binned ECE of all true labels
    e, _ = ppi_ece_bootstrap(conf, bins, 5, y, y, lab, n_boot=50)
    from calibkit.measure.errors import ece

    assert e == pytest.approx(ece(conf, y, edges=[0, 0.2, 0.4, 0.6, 0.8, 1.0], closed="left"))


def test_ece_sums_bin_without_labels_uses_judge():
    lsum = np.array([[[0, 0, 0, 0, 0], [2, 1.6, 1, 2, 1]]], float)
    usum = np.array([[[4, 1.0, 1], [2, 1.6, 2]]], float)
    # bin 0: judge acc 1/4 vs conf 0.25 -> 0; bin 1: 1/2 + 1*(4/4 - 2/2) = 0.5 vs 0.8 -> 0.3*4
    assert _ece_from_sums(lsum, usum, False)[0] == pytest.approx(0.3 * 4 / 8)
