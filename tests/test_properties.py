"""Property-based tests (hypothesis) of the identities calibkit's numbers must satisfy."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import calibkit as ck

SETTINGS = settings(max_examples=50, deadline=None)

# Confidences: arbitrary floats in [0, 1], grid values k/20 (ties, values on uniform edges for
# n_bins dividing 20), and the end points.
UNIT = st.one_of(
    st.floats(0.0, 1.0, allow_nan=False),
    st.integers(0, 20).map(lambda k: k / 20),
    st.sampled_from([0.0, 1.0]),
)
N_BINS = st.integers(1, 20)
STRATEGY = st.sampled_from(["uniform", "quantile"])
CLOSED = st.sampled_from(["right", "left"])
NORMS = ("l1", "l2", "max")


@st.composite
def forecasts(draw, min_size: int = 1, max_size: int = 60):
    n = draw(st.integers(min_size, max_size))
    conf = np.array(draw(st.lists(UNIT, min_size=n, max_size=n)), dtype=np.float64)
    out = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    return conf, out


@st.composite
def explicit_edges(draw):
    inner = draw(
        st.lists(
            st.one_of(
                st.floats(0.0, 1.0, exclude_min=True, exclude_max=True),
                st.integers(1, 19).map(lambda k: k / 20),
            ),
            max_size=8,
            unique=True,
        )
    )
    return np.array([0.0, *sorted(inner), 1.0])


@pytest.fixture(autouse=True)
def _no_calibkit_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ck.CalibkitWarning)
        yield


def _assert_stats_close(a: ck.BinStats, b: ck.BinStats) -> None:
    np.testing.assert_array_equal(a.edges, b.edges)
    assert a.closed == b.closed
    np.testing.assert_array_equal(a.count, b.count)
    for field in ("sum_conf", "sum_outcome", "sum_conf_sq", "sum_conf_outcome", "sum_var_weight"):
        np.testing.assert_allclose(
            getattr(a, field), getattr(b, field), rtol=1e-12, atol=1e-12, err_msg=field
        )
    assert a.allclose(b)


# --------------------------------------------------------------------------- BinStats


@st.composite
def chunked(draw):
    conf, out = draw(forecasts(min_size=1, max_size=80))
    n_chunks = draw(st.integers(1, min(4, conf.size)))
    cuts = (
        sorted(
            draw(
                st.lists(
                    st.integers(1, conf.size - 1),
                    min_size=n_chunks - 1,
                    max_size=n_chunks - 1,
                    unique=True,
                )
            )
        )
        if n_chunks > 1
        else []
    )
    return conf, out, cuts


@SETTINGS
@given(chunked(), N_BINS, STRATEGY, CLOSED)
def test_merged_binstats_equal_whole_data_binstats(data, n_bins, strategy, closed):
    conf, out, cuts = data
    edges = ck.bin_edges(conf, n_bins=n_bins, strategy=strategy)  # computed once on all data
    whole = ck.BinStats.from_forecasts(conf, out, edges=edges, closed=closed)
    parts = [
        ck.BinStats.from_forecasts(c, o, edges=edges, closed=closed)
        for c, o in zip(np.split(conf, cuts), np.split(out, cuts), strict=True)
    ]
    merged = parts[0]
    for part in parts[1:]:
        merged = merged + part
    _assert_stats_close(merged, whole)
    assert merged.n == conf.size
    # the empty statistics are the identity of +
    _assert_stats_close(ck.BinStats.empty(edges, closed=closed) + whole, whole)
    # streaming over the same chunks, one at a time
    streamed = ck.BinStats.from_chunks(
        ((c, o) for c, o in zip(np.split(conf, cuts), np.split(out, cuts), strict=True)),
        edges=edges,
        closed=closed,
    )
    _assert_stats_close(streamed, whole)


def test_from_chunks_accepts_an_empty_chunk():
    """A stream can yield an empty batch (a filter that kept no rows): it adds nothing."""
    edges = ck.bin_edges(n_bins=4)
    conf, out = np.array([0.1, 0.6, 0.9]), np.array([0, 1, 1])
    whole = ck.BinStats.from_forecasts(conf, out, edges=edges)
    chunks = [(conf[:2], out[:2]), (conf[:0], out[:0]), (conf[2:], out[2:])]
    _assert_stats_close(ck.BinStats.from_chunks(iter(chunks), edges=edges), whole)


@SETTINGS
@given(forecasts(), N_BINS, STRATEGY, CLOSED)
def test_binstats_match_a_direct_per_bin_computation(data, n_bins, strategy, closed):
    conf, out = data
    table = ck.reliability_bins(conf, out, n_bins=n_bins, strategy=strategy, closed=closed)
    e = table.edges
    inner = e[1:-1]
    # bin by counting inner edges below the value (an independent rule, no searchsorted)
    if closed == "right":
        idx = (conf[:, None] > inner[None, :]).sum(axis=1)
    else:
        idx = (conf[:, None] >= inner[None, :]).sum(axis=1)
    m = e.size - 1
    stats = table.stats
    for k in range(m):
        member = idx == k
        assert stats.count[k] == member.sum()
        np.testing.assert_allclose(stats.sum_conf[k], conf[member].sum(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(stats.sum_outcome[k], out[member].sum(), rtol=0, atol=0)
        np.testing.assert_allclose(
            stats.sum_conf_sq[k], (conf[member] ** 2).sum(), rtol=1e-12, atol=1e-12
        )
        np.testing.assert_allclose(
            stats.sum_conf_outcome[k], conf[member & out].sum(), rtol=1e-12, atol=1e-12
        )
        x = conf[member]
        np.testing.assert_allclose(
            stats.sum_var_weight[k], (x * (1 - x) * (1 - 2 * x) ** 2).sum(), rtol=1e-12, atol=1e-12
        )


# --------------------------------------------------------------------------- ECE family


@SETTINGS
@given(forecasts(), N_BINS, STRATEGY, CLOSED)
def test_ece_bounds_and_order_of_norms(data, n_bins, strategy, closed):
    conf, out = data
    kw = dict(n_bins=n_bins, strategy=strategy, closed=closed)
    ece, rmsce, mce = (ck.ece(conf, out, norm=norm, **kw) for norm in NORMS)
    for value in (ece, rmsce, mce):
        assert 0.0 <= value <= 1.0
    tol = 1e-12  # the inequalities are exact in real arithmetic; allow the last-bit rounding
    assert mce >= ece - tol
    assert ece - tol <= rmsce <= mce + tol


@SETTINGS
@given(forecasts(min_size=2), N_BINS, STRATEGY, CLOSED, st.randoms(use_true_random=False))
def test_ece_invariant_to_permuting_the_sample(data, n_bins, strategy, closed, rnd):
    conf, out = data
    perm = np.array(rnd.sample(range(conf.size), conf.size))
    kw = dict(n_bins=n_bins, strategy=strategy, closed=closed)
    a = ck.reliability_bins(conf, out, **kw)
    b = ck.reliability_bins(conf[perm], out[perm], **kw)
    np.testing.assert_array_equal(a.edges, b.edges)
    np.testing.assert_array_equal(a.count, b.count)
    for norm in NORMS:
        assert ck.ece(conf[perm], out[perm], norm=norm, **kw) == pytest.approx(
            ck.ece(conf, out, norm=norm, **kw), rel=1e-12, abs=1e-15
        )


@SETTINGS
@given(
    st.lists(st.floats(0.0, 1.0, width=32), min_size=1, max_size=60),
    st.data(),
    N_BINS,
    STRATEGY,
    CLOSED,
)
def test_float32_gives_the_same_ece_as_its_float64_copy(values, data, n_bins, strategy, closed):
    c32 = np.array(values, dtype=np.float32)
    c64 = c32.astype(np.float64)  # exact
    out = np.array(data.draw(st.lists(st.booleans(), min_size=c32.size, max_size=c32.size)))
    kw = dict(n_bins=n_bins, strategy=strategy, closed=closed)
    for norm in NORMS:
        assert ck.ece(c32, out, norm=norm, **kw) == ck.ece(c64, out, norm=norm, **kw)
    t32, t64 = ck.reliability_bins(c32, out, **kw), ck.reliability_bins(c64, out, **kw)
    np.testing.assert_array_equal(t32.count, t64.count)
    np.testing.assert_array_equal(t32.conf, t64.conf)


def test_quantile_edges_of_float32_equal_those_of_its_float64_copy():
    """The edges are reported (table, JSON) and reused on other chunks, so they must not depend
    on the storage type: np.quantile on a float32 array interpolates with a float32 difference.
    """
    c32 = np.array([1.0, 0.001], dtype=np.float32)
    np.testing.assert_array_equal(
        ck.bin_edges(c32, n_bins=2, strategy="quantile"),
        ck.bin_edges(c32.astype(np.float64), n_bins=2, strategy="quantile"),
    )


@SETTINGS
@given(forecasts(), st.one_of(N_BINS.map(lambda m: np.linspace(0.0, 1.0, m + 1)), explicit_edges()))
def test_closed_left_and_right_differ_only_on_edges(data, edges):
    conf, out = data
    # put some values exactly on the edges
    conf = np.concatenate([conf, edges])
    out = np.concatenate([out, np.zeros(edges.size, dtype=bool)])
    right = ck.bin_index(conf, edges, closed="right")
    left = ck.bin_index(conf, edges, closed="left")
    m = edges.size - 1
    on_inner = np.isin(conf, edges[1:-1])
    np.testing.assert_array_equal(left[~on_inner], right[~on_inner])
    np.testing.assert_array_equal(left[on_inner], right[on_inner] + 1)
    assert (right[conf == 0.0] == 0).all() and (left[conf == 0.0] == 0).all()
    assert (right[conf == 1.0] == m - 1).all() and (left[conf == 1.0] == m - 1).all()
    assert ((0 <= right) & (right < m)).all() and ((0 <= left) & (left < m)).all()
    # without values on inner edges, the two conventions give the same table and ECE
    keep = ~on_inner
    a = ck.reliability_bins(conf[keep], out[keep], edges=edges, closed="right")
    b = ck.reliability_bins(conf[keep], out[keep], edges=edges, closed="left")
    np.testing.assert_array_equal(a.count, b.count)
    assert ck.ece(conf[keep], out[keep], edges=edges, closed="right") == ck.ece(
        conf[keep], out[keep], edges=edges, closed="left"
    )


# --------------------------------------------------------------------------- Brier


@SETTINGS
@given(forecasts(), N_BINS, STRATEGY, CLOSED)
def test_brier_decomposition_identities(data, n_bins, strategy, closed):
    conf, out = data
    d = ck.brier_decomposition(conf, out, n_bins=n_bins, strategy=strategy, closed=closed)
    assert d.brier == pytest.approx(d.calibration + d.refinement + d.within_bin, abs=1e-12)
    assert d.refinement == pytest.approx(d.uncertainty - d.resolution, abs=1e-12)
    assert d.brier == pytest.approx(
        d.reliability - d.resolution + d.uncertainty + d.within_bin, abs=1e-12
    )
    assert d.brier == pytest.approx(ck.brier(conf, out.astype(int)), abs=1e-12)
    assert d.calibration == d.reliability
    assert d.calibration >= 0 and d.resolution >= 0 and d.refinement >= 0
    assert 0.0 <= d.uncertainty <= 0.25
    assert d.n == conf.size


@SETTINGS
@given(st.integers(1, 20), st.data())
def test_within_bin_vanishes_when_each_bin_holds_one_value(n_bins, data):
    bins = np.array(data.draw(st.lists(st.integers(0, n_bins - 1), min_size=1, max_size=80)))
    # one value per bin, strictly inside it (any point of the open interval will do)
    offset = np.array(data.draw(st.lists(st.floats(0.05, 0.95), min_size=n_bins, max_size=n_bins)))
    value = (np.arange(n_bins) + offset) / n_bins
    conf = value[bins]
    out = np.array(data.draw(st.lists(st.booleans(), min_size=bins.size, max_size=bins.size)))
    for closed in ("right", "left"):
        d = ck.brier_decomposition(conf, out, n_bins=n_bins, closed=closed)
        assert d.within_bin == pytest.approx(0.0, abs=1e-12)
        assert d.brier == pytest.approx(d.calibration + d.refinement, abs=1e-12)
        assert d.brier == pytest.approx(np.mean((conf - out) ** 2), abs=1e-12)


# --------------------------------------------------------------------------- AUC


@SETTINGS
@given(st.lists(st.integers(1, 999), min_size=2, max_size=80), st.data())
def test_auc_invariant_under_strictly_increasing_maps(ints, data):
    s = np.array(ints) / 1000.0  # well separated values: no map below can merge two of them
    labels = np.array(data.draw(st.lists(st.integers(0, 1), min_size=s.size, max_size=s.size)))
    assume(0 < labels.sum() < labels.size)
    base = ck.auc(s, labels)
    assert 0.0 <= base <= 1.0
    assert ck.auc(s**3, labels) == base
    for temperature in (0.5, 2.0):
        assert ck.auc(ck.sigmoid(ck.logit(s) / temperature), labels) == base
    assert ck.auc(2.0 * s - 7.0, labels) == base
    # reversing the order reflects the AUC
    assert ck.auc(-s, labels) == pytest.approx(1.0 - base, abs=1e-12)


# --------------------------------------------------------------------------- top label


@st.composite
def probability_rows(draw):
    n = draw(st.integers(1, 40))
    c = draw(st.integers(2, 6))
    # small integer weights: many ties within rows
    w = np.array(
        draw(st.lists(st.lists(st.integers(0, 3), min_size=c, max_size=c), min_size=n, max_size=n)),
        dtype=np.float64,
    )
    w[w.sum(axis=1) == 0, 0] = 1.0
    probs = w / w.sum(axis=1, keepdims=True)
    labels = np.array(draw(st.lists(st.integers(0, c - 1), min_size=n, max_size=n)))
    return probs, labels


@SETTINGS
@given(probability_rows(), st.sampled_from([np.float64, np.float32]))
def test_top_label_is_max_and_argmax(data, dtype):
    probs, labels = data
    p = probs.astype(dtype)
    f = ck.top_label(p, labels)
    np.testing.assert_array_equal(f.confidence, p.max(axis=1).astype(np.float64))
    np.testing.assert_array_equal(f.outcome, p.argmax(axis=1) == labels)
    assert f.confidence.dtype == np.float64 and f.outcome.dtype == bool


@SETTINGS
@given(forecasts())
def test_corp_decompositions_add_up_and_the_curve_is_monotone(data):
    conf, out = data
    r = ck.corp(conf, out, n_boot=0)
    assert np.all(np.diff(r.recalibrated) >= 0)
    # PAV keeps the mean: the recalibrated values average to the event rate
    assert np.dot(r.recalibrated, r.count) / r.n == pytest.approx(out.mean(), abs=1e-12)
    for d in (r.brier, r.log_loss):
        if np.isfinite(d.score):
            total = d.miscalibration - d.discrimination + d.uncertainty
            assert total == pytest.approx(d.score, abs=1e-12)
        assert d.miscalibration >= -1e-12 and d.discrimination >= -1e-12


@SETTINGS
@given(forecasts(min_size=2), st.randoms(use_true_random=False))
def test_cumulative_tests_ignore_row_order(data, rnd):
    conf, out = data
    order = list(range(conf.size))
    rnd.shuffle(order)
    a = ck.cumulative_calibration(conf, out)
    b = ck.cumulative_calibration(conf[order], out[order])
    assert np.allclose(a.gap, b.gap, atol=1e-12, rtol=0)
    assert a.ks.statistic == pytest.approx(b.ks.statistic, abs=1e-9, nan_ok=True)
