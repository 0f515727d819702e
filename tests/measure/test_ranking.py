"""The exact AUC: integer pair counts against brute force, ties, -0.0, and scikit-learn."""

from __future__ import annotations

import numpy as np
import pytest

import calibkit as ck
from calibkit.measure.ranking import Ranking, order_statistics, pair_counts, pair_counts_numpy


def _brute(s: np.ndarray, y: np.ndarray) -> int:
    pos, neg = s[y], s[~y]
    diff = pos[:, None] - neg[None, :]
    return int(2 * np.sum(diff > 0) + np.sum(diff == 0))


@pytest.mark.parametrize("seed", range(12))
def test_pair_counts_equal_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 400))
    s = np.round(rng.normal(0, 1, n), int(rng.integers(0, 3)))  # many ties
    y = rng.random(n) < rng.uniform(0.1, 0.9)
    if y.all() or not y.any():
        y[0] = not y[0]
    twice_u, n_pos, n_neg = pair_counts(s, y)
    assert (twice_u, n_pos, n_neg) == (_brute(s, y), int(y.sum()), int((~y).sum()))


def test_all_equal_scores_are_one_half_and_minus_zero_ties_zero() -> None:
    assert ck.auc([0.3] * 5, [0, 1, 0, 1, 1]) == 0.5
    assert ck.auc([-0.0, 0.0, 1.0], [1, 0, 1]) == 0.75  # -0.0 == 0.0: a tie, one half
    assert ck.auc(np.array([1.0, 2.0], dtype=np.float32), [0, 1]) == 1.0


def test_one_class_is_refused() -> None:
    with pytest.raises(ck.InputError, match="every label is positive"):
        ck.auc([0.1, 0.2], [1, 1])


def test_equals_scikit_learn_on_large_data() -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(7)
    s = rng.uniform(0, 1, 200_000).round(4)
    y = rng.random(s.size) < s
    assert ck.auc(s, y) == pytest.approx(metrics.roc_auc_score(y, s), abs=1e-15)


# ----------------------------------------------------------------------------- numba kernel


@pytest.fixture(params=["numpy", "numba"])
def kernel(request, monkeypatch):
    if request.param == "numba":
        pytest.importorskip("numba")
    monkeypatch.setenv("CALIBKIT_KERNEL", request.param)
    return request.param


def _scores(kind: str, n: int, rng: np.random.Generator, dtype=np.float64) -> np.ndarray:
    """Score sets that stress the bucketing: ties, one value, signed zeros, every magnitude,
    a dense cluster with outliers, values one ulp apart."""
    if kind == "uniform":
        return rng.random(n)
    if kind == "rounded":
        return np.round(rng.random(n), 2)
    if kind == "equal":
        return np.full(n, 0.3)
    if kind == "signed zeros":
        return rng.choice(np.array([-0.0, 0.0, -1.5, 2.0, 5e-324, -5e-324]), n)
    if kind == "magnitudes":
        top = np.log10(np.finfo(dtype).max) - 1
        return rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(-top - 8, top, n)
    if kind == "cluster":
        s = 0.5 + rng.random(n) * 1e-12
        s[rng.random(n) < 0.01] = rng.random() * 0.5
        return s
    s = np.nextafter(0.7, 1.0) + np.zeros(n)  # "ulps": a few neighbouring floats
    return np.nextafter(s, s + rng.integers(-3, 4, n))


KINDS = ["uniform", "rounded", "equal", "signed zeros", "magnitudes", "cluster", "ulps"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_numba_pair_counts_equal_the_numpy_reference(monkeypatch, kind: str, dtype) -> None:
    """Above the block size (several blocks and threads), integer for integer."""
    pytest.importorskip("numba")
    monkeypatch.setenv("CALIBKIT_KERNEL", "numba")
    rng = np.random.default_rng(KINDS.index(kind))
    s = _scores(kind, 300_017, rng, dtype).astype(dtype)
    for share in (0.5, 0.003, 0.0, 1.0):  # balanced, rare positives, one class only
        y = rng.random(s.size) < share
        assert pair_counts(s, y) == pair_counts_numpy(s, y)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", range(4))
def test_pair_counts_of_small_inputs_equal_brute_force_on_both_paths(kernel, kind, seed) -> None:
    rng = np.random.default_rng([seed, KINDS.index(kind)])
    s = _scores(kind, int(rng.integers(1, 300)), rng)
    y = rng.random(s.size) < rng.uniform(0, 1)
    assert pair_counts(s, y) == (_brute(s + 0, y), int(y.sum()), int((~y).sum()))


def test_a_dense_cluster_in_one_bucket_is_sorted(monkeypatch) -> None:
    """Most values within 1e-12 of one another (one coarse bucket holds them, one thread sorts
    it), ties among them, and the rest spread: the pairs and order statistics are still exact."""
    pytest.importorskip("numba")
    monkeypatch.setenv("CALIBKIT_KERNEL", "numba")
    rng = np.random.default_rng(5)
    cluster = 0.5 + np.round(rng.random(200_000) * 1e-12, 15)
    s = rng.permutation(np.r_[cluster, rng.random(50_000)])
    y = rng.random(s.size) < 0.4
    assert pair_counts(s, y) == pair_counts_numpy(s, y)
    ranks = np.array([0, 17, 124_999, 249_999])
    assert np.array_equal(Ranking(s, y).order_statistics(ranks), np.sort(s)[ranks])


@pytest.mark.parametrize("kind", KINDS)
def test_order_statistics_equal_np_partition_on_both_paths(kernel, kind) -> None:
    rng = np.random.default_rng(KINDS.index(kind) + 20)
    s = _scores(kind, 250_003, rng)
    ranks = np.unique(np.r_[0, rng.integers(0, s.size, 17), s.size - 1])
    want = np.sort(s)[ranks]
    assert np.array_equal(order_statistics(s, ranks), want)
    y = rng.random(s.size) < 0.3
    assert np.array_equal(Ranking(s, y).order_statistics(ranks), want)


def test_float32_order_statistics_are_the_float32_values(kernel) -> None:
    s = np.random.default_rng(3).random(300_000).astype(np.float32)
    ranks = np.array([5, 150_000, 299_990])
    got = order_statistics(s, ranks)
    assert got.dtype == np.float64
    assert np.array_equal(got, np.sort(s)[ranks].astype(np.float64))


def test_the_audit_auc_and_deciles_are_the_same_on_both_paths(monkeypatch) -> None:
    """One ordering serves the AUC and the Hosmer-Lemeshow deciles' edges: the same numbers."""
    pytest.importorskip("numba")
    from calibkit.engines.memory import Binning, summarize
    from calibkit.forecasts import prepare

    rng = np.random.default_rng(9)
    p = np.round(rng.random(400_000), 3)
    y = (rng.random(p.size) < p).astype(np.int8)
    f = prepare(p, y, from_logits=False, where="test")
    out = {}
    for mode in ("numpy", "numba"):
        monkeypatch.setenv("CALIBKIT_KERNEL", mode)
        s = summarize(f, Binning(n_bins=15, strategy="quantile"))
        out[mode] = (s.auc, s.deciles.edges.tolist(), s.deciles.count.tolist())
        out[mode] += (s.binning.values.tolist(), s.stats.count.tolist())
    assert out["numba"] == out["numpy"]
    assert out["numpy"][0] == pair_counts_numpy(p, y == 1)[0] / (
        2.0 * np.count_nonzero(y) * np.count_nonzero(y == 0)
    )
    assert out["numpy"][1][1:-1] == np.quantile(p, np.arange(1, 10) / 10).tolist()


@pytest.fixture(params=["whole", "slabs"])
def order(request, monkeypatch):
    """The numba path's order of the scores held whole, or made a slab at a time (every size
    above 0 rows: the slabs' path however small the input)."""
    pytest.importorskip("numba")
    from calibkit.measure import ranking

    monkeypatch.setenv("CALIBKIT_KERNEL", "numba")
    if request.param == "slabs":
        monkeypatch.setattr(ranking, "SLAB_ROWS", 0)
    return request.param


def _swept(p, y, edges, closed, **kwargs):
    auc, sums = Ranking(p, y, **kwargs).sweep([(edges, closed)], auc=False)
    assert auc is None
    return None if sums is None else sums[0]


@pytest.mark.parametrize("closed", ["right", "left"])
@pytest.mark.parametrize(
    "edges",
    [np.linspace(0, 1, 16), np.array([0.0, 0.2, 0.2, 0.5, 1.0]), "deciles"],
    ids=["uniform", "a repeated edge", "deciles"],
)
def test_bins_read_off_the_order_equal_the_binning_pass(order, closed, edges) -> None:
    """Each bin a run of each class's sorted scores: the counts of the binning kernel exactly
    (values on the edges, both sides closed), its sums to rounding."""
    from calibkit import _kernels

    rng = np.random.default_rng(11)
    p = np.round(rng.random(300_001), 3)  # ties, many of them on the edges
    p[:5] = [0.0, 1.0, 0.2, 0.5, -0.0]
    y = (rng.random(p.size) < p).astype(np.int8)
    if isinstance(edges, str):
        edges = np.quantile(p, np.linspace(0, 1, 11))
    count, sums = _swept(p, y == 1, edges, closed)
    want_count, want_sums = _kernels.bin_sums(p, y, edges, closed, validate=None)
    assert count.tolist() == want_count.tolist()
    np.testing.assert_allclose(sums, want_sums, rtol=1e-12, atol=1e-12)
    assert sums[1].tolist() == want_sums[1].tolist()  # the events per bin: counts


def test_bins_off_the_order_only_where_it_holds_them(monkeypatch) -> None:
    p = np.array([0.1, 0.4, 0.4, 0.8])
    y = np.array([False, False, True, True])
    monkeypatch.setenv("CALIBKIT_KERNEL", "numpy")
    assert _swept(p, y, np.array([0.0, 0.5, 1.0]), "right") is None
    pytest.importorskip("numba")
    from calibkit.measure import ranking

    monkeypatch.setenv("CALIBKIT_KERNEL", "numba")
    for slab_rows in (ranking.SLAB_ROWS, 0):
        monkeypatch.setattr(ranking, "SLAB_ROWS", slab_rows)
        assert _swept(p, y, np.array([0, 1.0]), "right", sample_weight=np.ones(4)) is None
        assert _swept(p - 0.2, y, np.array([0, 1.0]), "right") is None  # below 0
        count, sums = _swept(p, y, np.array([0.0, 0.4, 1.0]), "right")
        assert count.tolist() == [3, 1] and sums[1].tolist() == [1.0, 1.0]  # 0.4 closes bin 1
        assert sums[0].tolist() == pytest.approx([0.9, 0.8])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("slabs", [2, 5])
def test_the_order_in_slabs_equals_the_reference(monkeypatch, kind, slabs) -> None:
    """Made a slab at a time, the pair counts are the reference's integer for integer, the
    order statistics np.partition's and the bins the binning kernel's counts, for every kind
    of score set (one coarse bucket for all-equal scores: one slab)."""
    pytest.importorskip("numba")
    from calibkit import _kernels
    from calibkit.measure import ranking

    monkeypatch.setenv("CALIBKIT_KERNEL", "numba")
    monkeypatch.setattr(ranking, "SLAB_ROWS", 0)
    monkeypatch.setattr(ranking, "SLABS", slabs)
    rng = np.random.default_rng([KINDS.index(kind), slabs])
    s = _scores(kind, 200_003, rng)
    edges = np.linspace(0, 1, 11)
    for share in (0.4, 0.002):
        y = rng.random(s.size) < share
        r = Ranking(s, y)
        ranks = np.unique(np.r_[0, rng.integers(0, s.size, 9), s.size - 1])
        assert np.array_equal(r.order_statistics(ranks), np.sort(s)[ranks])
        auc, sums = r.sweep([(edges, "right")], auc=True)
        twice_u, n_pos, n_neg = pair_counts_numpy(s, y)
        assert auc == twice_u / (2.0 * n_pos * n_neg)
        if s.min() < 0:
            assert sums is None
        else:
            want, _ = _kernels.bin_sums(s, y.astype(np.int8), edges, "right", validate=None)
            assert sums[0][0].tolist() == want.tolist()


def test_a_large_input_is_ordered_in_slabs_holding_half_of_it(monkeypatch) -> None:
    """Above SLAB_ROWS the Ranking keeps the layout, not the whole order: its buffers hold
    the largest slab's keys (here about half the scores), and the order statistics and the
    AUC are the exact ones."""
    pytest.importorskip("numba")
    from calibkit import _numba_slabs
    from calibkit.measure import ranking

    monkeypatch.setenv("CALIBKIT_KERNEL", "numba")
    monkeypatch.setattr(ranking, "SLAB_ROWS", 100_000)
    rng = np.random.default_rng(4)
    s = rng.random(400_000)
    y = rng.random(s.size) < s
    held = []
    fill = _numba_slabs.fill
    monkeypatch.setattr(
        _numba_slabs, "fill", lambda *a: (held.append(a[5].size + a[6].size), fill(*a))
    )
    r = Ranking(s, y)
    ranks = np.array([0, 40_000, 200_000, 399_999])
    assert np.array_equal(r.order_statistics(ranks), np.sort(s)[ranks])
    auc, _ = r.sweep([], auc=True)
    twice_u, n_pos, n_neg = pair_counts_numpy(s, y)
    assert auc == twice_u / (2.0 * n_pos * n_neg)
    # two passes over the rows: the order statistics' one placed the first slab
    assert r._classes is None and len(held) == 2 and sum(held) == s.size
    assert max(held) < 0.6 * s.size


def test_the_audit_bins_are_those_of_the_binning_pass(monkeypatch) -> None:
    """The memory engine takes its table and deciles off the ranking's order on the numba
    path: the same as a binning pass each."""
    pytest.importorskip("numba")
    from calibkit.engines.memory import Binning, summarize
    from calibkit.forecasts import prepare
    from calibkit.measure.bins import BinStats

    monkeypatch.setenv("CALIBKIT_KERNEL", "numba")
    rng = np.random.default_rng(12)
    p = np.round(rng.random(300_000), 4)
    y = (rng.random(p.size) < p**1.2).astype(np.int8)
    f = prepare(p, y, from_logits=False, where="test")
    s = summarize(f, Binning(n_bins=15))
    for got in (s.stats, s.deciles):
        want = BinStats.of_checked(p, y, edges=got.edges, closed=got.closed)
        assert got.count.tolist() == want.count.tolist()
        for field in ("sum_conf", "sum_outcome", "sum_conf_sq", "sum_conf_outcome"):
            np.testing.assert_allclose(getattr(got, field), getattr(want, field), rtol=1e-12)
        np.testing.assert_allclose(got.sum_var_weight, want.sum_var_weight, rtol=1e-11)
    assert ck.audit(p, y).ece == pytest.approx(ck.ece(p, y), rel=1e-12)


def test_an_audit_ordered_in_slabs_is_the_audit_of_the_reference(monkeypatch) -> None:
    """The whole audit with its order made a slab at a time (every size: SLAB_ROWS 0) against
    the numpy path: the same AUC, table, deciles and Hosmer-Lemeshow statistic."""
    pytest.importorskip("numba")
    from calibkit.measure import ranking

    rng = np.random.default_rng(13)
    p = np.round(rng.random(300_000), 4)
    y = (rng.random(p.size) < p**1.3).astype(np.int64)
    monkeypatch.setenv("CALIBKIT_KERNEL", "numpy")
    want = ck.audit(p, y)
    monkeypatch.setenv("CALIBKIT_KERNEL", "numba")
    monkeypatch.setattr(ranking, "SLAB_ROWS", 0)
    got = ck.audit(p, y)
    assert got.auc == want.auc
    assert got.ece == pytest.approx(want.ece, rel=1e-12)
    for mine, theirs in zip(got.tests, want.tests, strict=True):
        assert mine.name == theirs.name
        assert mine.statistic == pytest.approx(theirs.statistic, rel=1e-10)
    assert got.stats.count.tolist() == want.stats.count.tolist()
