"""calibkit.stated.judged_audit: PPI beside the naive judge-as-truth numbers; input errors."""

from __future__ import annotations

import numpy as np
import pytest

import calibkit as ck
from calibkit._errors import InputError
from calibkit.stated import JudgedAudit, judged_audit


def _data(n_all=2000, n=300, seed=0):
    rng = np.random.default_rng(seed)
    conf = rng.uniform(0.3, 0.99, n_all)
    truth = (rng.random(n_all) < conf - 0.1).astype(float)
    judge = np.where(rng.random(n_all) < 0.05 + 0.2 * (1 - conf), 1 - truth, truth)
    person = np.full(n_all, np.nan)
    idx = rng.choice(n_all, n, replace=False)
    person[idx] = truth[idx]
    return conf, judge, person, truth


def test_perfect_judge_all_labelled_equals_classical():
    conf, judge, person, truth = _data()
    r = judged_audit(conf, truth, truth, n_boot=100)
    assert isinstance(r, JudgedAudit)
    assert r.ppi.accuracy == pytest.approx(truth.mean())
    assert r.ppi.ece == pytest.approx(ck.ece(conf, truth))
    from calibkit.measure.slope import calibration_slope

    s = calibration_slope(conf, truth)
    assert r.ppi.slope == pytest.approx(s.slope, abs=1e-7)
    assert r.naive.accuracy == pytest.approx(truth.mean())
    assert r.naive.ece == pytest.approx(ck.ece(conf, truth))


def test_naive_is_the_judge_and_ppi_corrects():
    conf, judge, person, truth = _data()
    r = judged_audit(conf, judge, person, n_boot=200)
    assert r.naive.accuracy == pytest.approx(judge.mean())
    table = ck.reliability_bins(conf, judge, n_bins=15)
    accs = [row.acc for row in table.rows if row.count]
    assert [b.acc for b in r.naive.bins] == pytest.approx(accs)
    lo, hi = r.ppi.accuracy_ci
    assert lo < truth.mean() < hi
    assert r.n == 2000 and r.n_labelled == 300
    d = r.to_dict()
    assert d["ppi"]["accuracy"] == r.ppi.accuracy and len(d["ppi"]["bins"]) == len(r.ppi.bins)
    assert "accuracy" in str(r) and "PPI" in str(r)


def test_bin_with_one_label_has_no_interval():
    conf, judge, person, truth = _data()
    inside = (conf > 5 / 15) & (conf <= 6 / 15)  # the bin (1/3, 2/5]
    person[inside] = np.nan
    i = int(np.flatnonzero(inside)[0])
    person[i] = truth[i]
    r = judged_audit(conf, judge, person, n_boot=50)
    [b] = [b for b in r.ppi.bins if b.lo < conf[i] <= b.hi]
    assert b.n_labelled == 1 and b.ci is None and "fewer than 2" in b.note
    assert all(b.ci is None or np.all(np.isfinite(b.ci)) for b in r.ppi.bins)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("length", "199 entries but the forecasts have 200"),
        ("label", "person must be 0/1"),
        ("none", "no labelled items"),
        ("judge", "judge"),
    ],
)
def test_input_errors(change, message):
    conf, judge, person, _ = _data(n_all=200, n=50)
    if change == "length":
        person = person[:-1]
    elif change == "label":
        person[np.flatnonzero(~np.isnan(person))[0]] = 2.0
    elif change == "none":
        person[:] = np.nan
    else:
        judge = judge.copy()
        judge[3] = 0.5
    with pytest.raises(InputError, match=message):
        judged_audit(conf, judge, person, n_boot=20)
