"""Figures: checked structurally from fixed data (worked predictions, a synthetic model)."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import calibkit as ck

matplotlib = pytest.importorskip("matplotlib")
from matplotlib.figure import Figure  # noqa: E402

from calibkit.report.figures import (  # noqa: E402
    MAX_CURVE_POINTS,
    before_after,
    cost_curve,
    decimate,
    reliability_diagram,
    risk_coverage_plot,
    save_figure,
)

# ten predictions (ECE 0.12 in two bins) and five predictions (the third and fifth wrong)
CONF10 = [0.3, 0.4, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.9, 0.9]
HIT10 = [1, 0, 1, 0, 1, 1, 0, 1, 0, 1]
CONF5 = [0.95, 0.9, 0.8, 0.7, 0.6]
HIT5 = [1, 1, 0, 1, 0]


@pytest.fixture(scope="module")
def overconfident():
    """10,000 predictions whose accuracy rises half as fast as their confidence."""
    rng = np.random.default_rng(0)
    conf = rng.uniform(0.5, 1.0, 10_000)
    hit = (rng.random(10_000) < 0.5 + 0.6 * (conf - 0.5)).astype(int)
    return conf, hit


@pytest.fixture(scope="module")
def overconfident_audit(overconfident):
    return ck.audit(*overconfident, n_boot=50, n_sims=50)


def by_gid(artists, gid):
    found = [a for a in artists if a.get_gid() == gid]
    assert len(found) == 1, f"expected one artist with gid {gid!r}, found {len(found)}"
    return found[0]


def counts_axes(ax):
    """The histogram under a diagram: the axes labelled so that shares its x-axis."""
    siblings = ax.get_shared_x_axes().get_siblings(ax)
    return next(a for a in siblings if a.get_label() == "calibkit-counts")


def check_diagram(ax, table):
    full = table.count > 0
    dots = by_gid(ax.collections, "calibkit-bins")
    np.testing.assert_allclose(
        dots.get_offsets(), np.column_stack([table.conf[full], table.acc[full]])
    )
    # areas grow with the count
    sizes = dots.get_sizes()
    assert np.all(np.diff(sizes[np.argsort(table.count[full])]) >= 0)
    gaps = by_gid(ax.collections, "calibkit-gaps")
    segments = gaps.get_segments()
    assert len(segments) == int(full.sum())
    for seg, conf, gap in zip(segments, table.conf[full], table.gap[full], strict=True):
        np.testing.assert_allclose(seg[:, 0], [conf, conf])  # vertical, at the bin's confidence
        assert seg[0, 1] == pytest.approx(conf)  # starts on the diagonal
        assert seg[1, 1] - seg[0, 1] == pytest.approx(gap)  # and is the bin's gap long
    whiskers = by_gid(ax.collections, "calibkit-intervals")
    for seg, lo, hi in zip(
        whiskers.get_segments(), table.ci[0][full], table.ci[1][full], strict=True
    ):
        np.testing.assert_allclose(seg[:, 1], [lo, hi])
    assert ax.get_xlabel() == "confidence (mean per bin)"
    assert ax.get_ylabel() == "accuracy (observed per bin)"
    bars = [p for p in counts_axes(ax).patches if p.get_gid() == "calibkit-count"]
    assert [int(b.get_height()) for b in bars] == table.count[full].tolist()
    np.testing.assert_allclose([b.get_x() for b in bars], table.lo[full])
    np.testing.assert_allclose([b.get_width() for b in bars], (table.hi - table.lo)[full])


# ----------------------------------------------------------------------------- reliability


def test_ten_predictions_two_bins():
    table = ck.reliability_bins(CONF10, HIT10, n_bins=2)
    ax = reliability_diagram(table)
    check_diagram(ax, table)
    assert len(by_gid(ax.collections, "calibkit-bins").get_offsets()) == 2
    gaps = [s[1, 1] - s[0, 1] for s in by_gid(ax.collections, "calibkit-gaps").get_segments()]
    assert gaps == pytest.approx([0.10, 2 / 3 - 0.8])  # worked by hand: 0.5 - 0.4, 4/6 - 0.8
    title = ax.get_title()
    assert "ECE 0.1200" in title and "M = 2" in title and "N = 10" in title
    assert counts_axes(ax).get_yscale() == "linear"
    texts = [t.get_text() for t in counts_axes(ax).texts]
    assert texts == ["4", "6"]


def test_audit_title_has_noise_floor_and_counts_go_log(overconfident_audit):
    a = overconfident_audit
    ax = reliability_diagram(a, title="synthetic")
    check_diagram(ax, a.table)
    lines = ax.get_title().splitlines()
    assert lines[0] == "synthetic"
    assert lines[1] == f"ECE {a.ece:.4f}  (M = 15 uniform, N = 10,000)"
    assert f"{a.noise_floor.mean:.4f}" in lines[2] and f"{a.noise_floor.p95:.4f}" in lines[2]
    # the lowest non-empty bin holds only a few points against ~1,300: linear scale (ratio < 50)
    assert counts_axes(ax).get_yscale() == "linear"
    dominated = ck.reliability_bins([0.05] * 2 + [0.95] * 500, [0, 1] + [1] * 500, n_bins=10)
    ax2 = reliability_diagram(dominated)
    assert counts_axes(ax2).get_yscale() == "log"
    check_diagram(ax2, dominated)


def test_empty_bins_draw_nothing():
    table = ck.reliability_bins([0.12, 0.15, 0.81, 0.86, 0.88], [0, 1, 1, 1, 0], n_bins=10)
    assert int((table.count > 0).sum()) == 2
    ax = reliability_diagram(table)
    check_diagram(ax, table)
    assert len(counts_axes(ax).texts) == 2


def test_one_point_bins_and_no_interval():
    table = ck.reliability_bins([0.2, 0.9], [1, 1], n_bins=5, interval=None)
    ax = reliability_diagram(table, histogram=False)
    assert len(ax.get_figure().axes) == 1
    assert not [c for c in ax.collections if c.get_gid() == "calibkit-intervals"]
    assert len(by_gid(ax.collections, "calibkit-bins").get_offsets()) == 2


def test_draws_into_a_given_axes():
    fig = Figure()
    ax = fig.add_subplot()
    table = ck.reliability_bins(CONF10, HIT10, n_bins=2)
    assert reliability_diagram(table, ax=ax) is ax
    assert ax.collections and len(fig.axes) == 2  # the diagram and its counts underneath
    placed = Figure().add_axes((0.1, 0.1, 0.8, 0.8))  # not a subplot: shrunk in place
    assert reliability_diagram(table, ax=placed) is placed
    assert len(placed.get_figure().axes) == 2


def test_refuses_other_results():
    with pytest.raises(ck.InputError, match="expected a ReliabilityTable"):
        reliability_diagram([0.1, 0.2])


def test_ledger_cannot_be_drawn():
    rng = np.random.default_rng(1)
    s = rng.normal(0, 2, 400)
    y = (rng.random(400) < ck.sigmoid(s)).astype(int)
    ledger = ck.compare_calibration(ck.TemperatureScaling(), 3 * s, y, n_sims=20)
    with pytest.raises(ck.InputError, match="a CalibrationLedger keeps the value of each"):
        before_after(ledger, ledger)


def test_before_after(overconfident, overconfident_audit):
    conf, hit = overconfident
    after = ck.reliability_bins(0.5 + 0.6 * (conf - 0.5), hit)
    fig = before_after(overconfident_audit, after, titles=("raw", "recalibrated"))
    assert isinstance(fig, Figure)
    left, right = fig.axes[:2]
    assert left.get_title().splitlines()[0] == "raw"
    assert right.get_title().splitlines()[0] == "recalibrated"
    check_diagram(left, overconfident_audit.table)
    check_diagram(right, after)
    assert len(fig.axes) == 4


# ----------------------------------------------------------------------------- risk-coverage


def test_risk_coverage_seed_five():
    rc = ck.risk_coverage(CONF5, HIT5)
    choice = ck.choose_threshold(CONF5, HIT5, 10, 1)
    ax = risk_coverage_plot(
        rc, thresholds={"Chow": ck.chow_threshold(10, 1), "chosen": choice, "never": 2.0}
    )
    baseline = by_gid(ax.lines, "calibkit-random")
    assert set(baseline.get_ydata()) == {rc.error_rate} == {0.4}
    curve = by_gid(ax.lines, "calibkit-curve")
    drawn = set(zip(curve.get_xdata(), curve.get_ydata(), strict=True))
    for name, expected in (("Chow", (0.4, 0.0)), ("chosen", (0.4, 0.0))):
        point = by_gid(ax.lines, f"calibkit-threshold-{name}")
        xy = (float(point.get_xdata()[0]), float(point.get_ydata()[0]))
        assert xy == pytest.approx(expected)
        assert xy in drawn  # a vertex of the curve
    assert not [line for line in ax.lines if line.get_gid() == "calibkit-threshold-never"]
    labels = ax.get_legend_handles_labels()[1]
    assert any("AURC 0.1967" in label for label in labels)
    assert any(label.startswith("never: threshold 2, acts on nothing") for label in labels)
    oracle = by_gid(ax.lines, "calibkit-oracle")
    x, y = oracle.get_xdata(), oracle.get_ydata()
    assert y[np.isclose(x, 0.8)] == pytest.approx(0.25)  # 1 wrong among the 4 acted on


def test_marked_point_lies_on_the_curve(overconfident):
    conf, hit = overconfident
    rc = ck.risk_coverage(conf, hit)
    ax = risk_coverage_plot(rc, thresholds={"t": 0.8})
    point = by_gid(ax.lines, "calibkit-threshold-t")
    acted = conf >= 0.8
    assert point.get_xdata()[0] == pytest.approx(acted.mean())
    assert point.get_ydata()[0] == pytest.approx(1 - hit[acted].mean())


def test_risk_coverage_is_decimated_keeping_its_shape():
    rng = np.random.default_rng(2)
    conf = rng.random(100_000)
    hit = (rng.random(100_000) < conf).astype(int)
    rc = ck.risk_coverage(conf, hit)
    ax = risk_coverage_plot(rc)
    curve = by_gid(ax.lines, "calibkit-curve")
    x, y = np.asarray(curve.get_xdata()), np.asarray(curve.get_ydata())
    assert x.size <= MAX_CURVE_POINTS
    assert (x[-1], y[-1]) == (1.0, rc.error_rate)
    assert y.max() == np.nanmax(rc.risk) and y.min() == np.nanmin(rc.risk)


def test_decimate_keeps_extremes_and_order():
    x = np.sort(np.random.default_rng(3).random(50_000))
    y = np.cumsum(np.random.default_rng(4).normal(size=50_000))
    keep = decimate(x, y, buckets=100)
    assert keep.size <= 400 and np.all(np.diff(keep) > 0)
    assert keep[0] == 0 and keep[-1] == x.size - 1
    assert y[keep].max() == y.max() and y[keep].min() == y.min()
    np.testing.assert_array_equal(decimate(x[:10], y[:10]), np.arange(10))


def test_risk_coverage_refuses_other_results():
    with pytest.raises(ck.InputError, match="expected a RiskCoverage"):
        risk_coverage_plot(ck.reliability_bins(CONF5, HIT5))
    rc = ck.risk_coverage(CONF5, HIT5)
    with pytest.raises(ck.InputError, match=r"thresholds\['x'\] must be a number"):
        risk_coverage_plot(rc, thresholds={"x": "high"})


# ----------------------------------------------------------------------------- cost curve


def test_cost_curve_seed_five():
    ax = cost_curve(CONF5, HIT5, l_wrong=10, l_defer=1)
    curve = by_gid(ax.lines, "calibkit-cost")
    # by hand: 4.0 acting on all, 2.2, 2.4, 0.6 at 0.9, 0.8 at 0.95, 1.0 above
    assert np.asarray(curve.get_ydata()).tolist() == pytest.approx(
        [4.0, 4.0, 2.2, 2.4, 0.6, 0.8, 1.0]
    )
    best = by_gid(ax.lines, "calibkit-minimum")
    chow = by_gid(ax.lines, "calibkit-chow")
    assert (best.get_xdata()[0], best.get_ydata()[0]) == pytest.approx((0.9, 0.6))
    assert (chow.get_xdata()[0], chow.get_ydata()[0]) == pytest.approx((0.9, 0.6))
    assert ax.get_xscale() == "linear"


def test_cost_curve_minimum_is_choose_thresholds(overconfident):
    conf, hit = overconfident
    choice = ck.choose_threshold(conf, hit, 5, 1)
    ax = cost_curve(conf, hit, l_wrong=5, l_defer=1)
    best = by_gid(ax.lines, "calibkit-minimum")
    assert best.get_ydata()[0] == choice.cost
    assert best.get_xdata()[0] == choice.threshold
    assert min(by_gid(ax.lines, "calibkit-cost").get_ydata()) == choice.cost
    assert by_gid(ax.lines, "calibkit-chow").get_xdata()[0] == pytest.approx(0.8)


def test_cost_curve_logit_axis_for_saturated_confidences():
    rng = np.random.default_rng(5)
    z = rng.normal(8, 4, 5000)
    conf = np.concatenate([1 / (1 + np.exp(-z)), np.ones(50)])  # many near 1, some exactly 1
    hit = (rng.random(conf.size) < 0.97).astype(int)
    ax = cost_curve(conf, hit, l_wrong=20, l_defer=1)
    assert ax.get_xscale() == "logit"
    lo, hi = ax.get_xlim()
    assert 0 < lo and hi < 1
    choice = ck.choose_threshold(conf, hit, 20, 1)
    assert min(by_gid(ax.lines, "calibkit-cost").get_ydata()) == choice.cost
    assert cost_curve(conf, hit, l_wrong=20, l_defer=1, xscale="linear").get_xscale() == "linear"


def test_cost_curve_checks_costs():
    with pytest.raises(ck.InputError, match="cost_curve: deferring must cost less"):
        cost_curve(CONF5, HIT5, l_wrong=1, l_defer=2)


# ----------------------------------------------------------------------------- files, state


def test_save_png_and_svg(tmp_path):
    def draw():
        return reliability_diagram(ck.reliability_bins(CONF10, HIT10, n_bins=2))

    ax = draw()
    png = save_figure(tmp_path / "diagram.png", ax.get_figure())
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = save_figure(tmp_path / "diagram.svg", draw())
    root = ET.fromstring(svg.read_bytes())
    assert root.tag.endswith("svg")
    again = save_figure(tmp_path / "again.svg", draw())
    assert again.read_bytes() == svg.read_bytes()  # same data, same bytes (no date, fixed salt)
    names = sorted(os.listdir(tmp_path))
    assert names == ["again.svg", "diagram.png", "diagram.svg"]  # no temporary file left
    plain = tmp_path / "plain"
    plain.write_bytes(b"")
    assert png.stat().st_mode == plain.stat().st_mode  # the umask's, not owner-only


def test_save_refuses_unknown_format(tmp_path):
    ax = reliability_diagram(ck.reliability_bins(CONF10, HIT10, n_bins=2))
    with pytest.raises(ck.InputError, match=r"must end in \.png or \.svg"):
        save_figure(tmp_path / "diagram.pdf", ax)
    with pytest.raises(ck.InputError, match="does not exist"):
        save_figure(tmp_path / "missing" / "diagram.png", ax)
    assert os.listdir(tmp_path) == []


def test_global_style_untouched(tmp_path, overconfident, overconfident_audit):
    conf, hit = overconfident
    before = {k: matplotlib.rcParams[k] for k in matplotlib.rcParams}
    reliability_diagram(overconfident_audit)
    before_after(overconfident_audit, overconfident_audit.table)
    risk_coverage_plot(ck.risk_coverage(conf, hit), thresholds={"t": 0.9})
    ax = cost_curve(conf, hit, l_wrong=10, l_defer=1)
    save_figure(tmp_path / "cost.svg", ax)
    save_figure(tmp_path / "cost.png", ax)
    after = {k: matplotlib.rcParams[k] for k in matplotlib.rcParams}
    assert after == before


def test_lazy_import_and_no_pyplot(tmp_path):
    code = (
        "import sys, calibkit as ck, calibkit.report.figures as f\n"
        "assert 'matplotlib' not in sys.modules, 'imported at import time'\n"
        "ax = f.reliability_diagram(ck.reliability_bins([0.2, 0.9], [0, 1], n_bins=2))\n"
        f"f.save_figure({str(tmp_path / 'd.png')!r}, ax)\n"
        "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot was imported'\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr


def test_before_after_draws_into_given_axes():
    import matplotlib.pyplot as plt

    t = ck.reliability_bins([0.9, 0.9, 0.6, 0.6], [1, 0, 1, 1], n_bins=10)
    fig, axes = plt.subplots(1, 2)
    try:
        assert before_after(t, t, ax=axes) is fig
        assert [a.get_title().splitlines()[0] for a in axes] == ["before", "after"]
        with pytest.raises(ck.InputError, match="ax must be a pair of matplotlib Axes"):
            before_after(t, t, ax=axes[0])
    finally:
        plt.close(fig)
