"""The generalized risk-coverage figure: its lines are the curve's generalized risks, the
oracle and random rejection, and the area under the drawn curve is the AUGRC."""

from __future__ import annotations

import numpy as np
import pytest

import calibkit as ck

pytest.importorskip("matplotlib")

from calibkit.report.selective import generalized_risk_coverage_plot  # noqa: E402

CONF = [0.95, 0.9, 0.8, 0.7, 0.6]
OUT = [1, 1, 0, 1, 0]


def by_gid(ax, gid):
    found = [line for line in ax.lines if line.get_gid() == gid]
    assert len(found) == 1, gid
    return found[0]


def test_five_predictions_drawn_by_hand():
    ax = generalized_risk_coverage_plot(ck.risk_coverage(CONF, OUT))
    curve = by_gid(ax, "calibkit-generalized-curve")
    assert curve.get_xdata().tolist() == pytest.approx([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    assert curve.get_ydata().tolist() == pytest.approx([0, 0, 0, 0.2, 0.2, 0.4])
    # the area under the drawn lines is the AUGRC
    x, y = np.asarray(curve.get_xdata()), np.asarray(curve.get_ydata())
    area = np.sum(np.diff(x) * (y[1:] + y[:-1]) / 2)
    assert area == pytest.approx(ck.augrc(CONF, OUT), abs=1e-15)
    oracle = by_gid(ax, "calibkit-oracle")
    assert list(oracle.get_xdata()) == pytest.approx([0, 0.6, 1])
    assert list(oracle.get_ydata()) == pytest.approx([0, 0, 0.4])
    random = by_gid(ax, "calibkit-random")
    assert random.get_ydata().tolist() == pytest.approx([0, 0.4])
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == [
        "confidence ranking (AUGRC 0.1200)",
        "oracle (AUGRC 0.0800)",
        "random rejection (AUGRC 0.2000)",
    ]
    assert "PRR 0.667" in ax.get_title()


def test_a_summary_draws_the_same_curve():
    s = ck.selective_prediction(CONF, OUT, target_coverages=())
    a = by_gid(generalized_risk_coverage_plot(s), "calibkit-generalized-curve")
    b = by_gid(generalized_risk_coverage_plot(s.curve), "calibkit-generalized-curve")
    assert np.array_equal(a.get_ydata(), b.get_ydata())


def test_large_curve_is_decimated_keeping_its_ends():
    rng = np.random.default_rng(1)
    conf = rng.random(50_000)
    out = (rng.random(50_000) < conf).astype(int)
    curve = by_gid(
        generalized_risk_coverage_plot(ck.risk_coverage(conf, out)), "calibkit-generalized-curve"
    )
    x, y = curve.get_xdata(), curve.get_ydata()
    assert x.size <= 2000
    assert (x[0], y[0]) == (0.0, 0.0) and (x[-1], y[-1]) == (1.0, pytest.approx(1 - out.mean()))


def test_undefined_prr_is_said():
    ax = generalized_risk_coverage_plot(ck.risk_coverage([0.9, 0.8], [1, 1]))
    assert "PRR undefined" in ax.get_title()


def test_wrong_result_type():
    with pytest.raises(
        ck.InputError,
        match=r"generalized_risk_coverage_plot: expected a SelectivePrediction "
        r"\(ck.selective_prediction\) or a RiskCoverage \(ck.risk_coverage\), got "
        "ReliabilityTable",
    ):
        generalized_risk_coverage_plot(ck.reliability_bins(CONF, OUT))
