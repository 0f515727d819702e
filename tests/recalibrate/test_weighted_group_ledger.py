"""Sample weights in the group calibration ledger: with integer weights every per-group point
estimate (ECE and NLL before, pooled and own) equals that of the rows repeated w times, in a
given evaluation set and in the stratified split; the held-out weight stands beside the raw
row count; a group that weighs nothing held out is left out with a warning; bad weights are
refused."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import calibkit as ck
from calibkit.recalibrate.split import stratified_split

FAST = {"n_sims": 50, "n_bins": 10}
RTOL = 1e-6  # the two fits reach the same optimum to the optimiser's tolerance


def data(n: int, seed: int):
    """Logits three times too large at site a, calibrated at site b and c; weights 0..3."""
    rng = np.random.default_rng(seed)
    s = rng.normal(0.0, 2.0, n)
    y = (rng.random(n) < ck.sigmoid(s)).astype(np.int64)
    site = rng.choice(["a", "b", "c"], n)
    return np.where(site == "a", 3.0 * s, s), y, site, rng.integers(0, 4, n)


def numbers(ledger) -> list[tuple[float, ...]]:
    return [
        (g.ece_before, g.ece_pooled, g.ece_own, g.nll_before, g.nll_pooled, g.nll_own)
        for g in (*ledger.groups, ledger.overall)
    ]


def test_given_design_with_integer_weights_equals_the_repeated_rows():
    x, y, site, w = data(900, 1)
    xe, ye, se, we = data(600, 2)
    calibrator = ck.GroupCalibrator(by="site")
    weighted = ck.compare_group_calibration(
        calibrator, x, y, groups=site, eval_scores=xe, eval_labels=ye, eval_groups=se,
        sample_weight=w, eval_sample_weight=we, **FAST,
    )  # fmt: skip
    repeated = ck.compare_group_calibration(
        calibrator, np.repeat(x, w), np.repeat(y, w), groups=np.repeat(site, w),
        eval_scores=np.repeat(xe, we), eval_labels=np.repeat(ye, we),
        eval_groups=np.repeat(se, we), **FAST,
    )  # fmt: skip
    np.testing.assert_allclose(numbers(weighted), numbers(repeated), rtol=RTOL)
    assert [g.verdict for g in weighted.groups] == [g.verdict for g in repeated.groups]
    for g, r, name in zip(weighted.groups, repeated.groups, "abc", strict=True):
        assert (g.group, g.n_eval, g.weight_eval) == (
            name,
            (se == name).sum(),
            we[se == name].sum(),
        )
        assert g.weight_fit == w[site == name].sum() == r.n_fit
        assert r.weight_eval is None and r.n_eval == we[se == name].sum()
    assert weighted.overall.weight_eval == we.sum() and weighted.overall.weight_fit == w.sum()
    assert weighted.header()[3] == "weight" and "weight" not in repeated.header()
    d = weighted.to_dict()
    assert d["weighted"] is True and d["groups"][0]["weight_eval"] == we[se == "a"].sum()
    assert "weighted" not in repeated.to_dict()  # unweighted: the document as it was
    assert "weight_eval" not in repeated.to_dict()["groups"][0]
    assert "weighted: total weight" in weighted.judged_on


def test_the_split_measures_each_groups_held_out_rows_with_their_weights():
    x, y, site, w = data(1200, 3)
    ledger = ck.compare_group_calibration(
        ck.GroupCalibrator(by="site"), x, y, groups=site, sample_weight=w, seed=5, **FAST
    )
    codes = np.unique(site, return_inverse=True)[1]
    cal, held = stratified_split(codes, seed=5)  # weights do not move the split
    fitted = ledger.calibrator
    for g in ledger.groups:
        rows = held[site[held] == g.group]
        wr = w[rows]
        assert (g.n_eval, g.weight_eval) == (rows.size, wr.sum())
        assert g.weight_fit == w[cal][site[cal] == g.group].sum()
        pooled = fitted.pooled_.predict_proba(x[rows])
        own = fitted.predict_proba(x[rows], groups=site[rows])
        for p, ece, nll in ((pooled, g.ece_pooled, g.nll_pooled), (own, g.ece_own, g.nll_own)):
            rep_p, rep_y = np.repeat(p, wr), np.repeat(y[rows], wr)
            assert ece == pytest.approx(ck.ece(rep_p, rep_y, n_bins=10), abs=1e-12)
            loss = -np.log(np.where(rep_y == 1, rep_p, 1.0 - rep_p))
            assert nll == pytest.approx(loss.mean(), rel=1e-12)
        before = ck.sigmoid(np.repeat(x[rows], wr))
        assert g.ece_before == pytest.approx(ck.ece(before, rep_y, n_bins=10), abs=1e-12)
    # the fit was weighted: the pooled map equals one fitted on the calibration rows repeated
    again = ck.TemperatureScaling().fit(np.repeat(x[cal], w[cal]), np.repeat(y[cal], w[cal]))
    probe = np.linspace(-4, 4, 9)
    np.testing.assert_allclose(
        fitted.pooled_.predict_proba(probe), again.predict_proba(probe), rtol=RTOL
    )


def test_a_group_with_no_held_out_weight_is_left_out_with_a_warning():
    x, y, site, w = data(600, 4)
    xe, ye, se, we = data(300, 5)
    we = np.where(se == "c", 0, we + 1)
    with pytest.warns(ck.CalibkitWarning, match=r"1 group has only held-out rows of weight 0.*: c"):
        ledger = ck.compare_group_calibration(
            ck.GroupCalibrator(by="site"), x, y, groups=site, eval_scores=xe, eval_labels=ye,
            eval_groups=se, sample_weight=w, eval_sample_weight=we, **FAST,
        )  # fmt: skip
    assert [g.group for g in ledger.groups] == ["a", "b"]
    assert ledger.overall.n_eval == 300 and ledger.overall.weight_eval == we.sum()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"sample_weight": np.r_[np.ones(599), -1.0]}, r"sample_weight.*negative.*index 599"),
        ({"sample_weight": np.ones(10)}, r"sample_weight"),
        ({"sample_weight": np.zeros(600)}, r"sample_weight"),
        ({"eval_sample_weight": np.ones(600)}, r"eval_sample_weight weighs the rows of eval"),
    ],
)
def test_bad_weights_are_refused(options, message):
    x, y, site, _ = data(600, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ck.InputError, match=message):
            ck.compare_group_calibration(
                ck.GroupCalibrator(by="site"), x, y, groups=site, **options, **FAST
            )


def test_bad_eval_weights_name_eval_sample_weight():
    x, y, site, _ = data(600, 7)
    xe, ye, se, _ = data(100, 8)
    with pytest.raises(ck.InputError, match=r"eval_sample_weight.*index 3"):
        ck.compare_group_calibration(
            ck.GroupCalibrator(by="site"), x, y, groups=site, eval_scores=xe, eval_labels=ye,
            eval_groups=se, eval_sample_weight=np.r_[np.ones(3), np.nan, np.ones(96)], **FAST,
        )  # fmt: skip
