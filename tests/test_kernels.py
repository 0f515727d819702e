"""The numba kernels and the numpy reference give the same numbers and the same errors.

``CALIBKIT_KERNEL=numpy|numba`` forces a path (``src/calibkit/_kernels.py``); each test runs the
public API under both, on inputs below and above the size at which ``auto`` switches to numba,
and compares with an independent oracle (bins by counting the inner edges below each value,
sums by ``np.bincount`` in float64). Only the numba half is skipped when numba is missing.
"""

from __future__ import annotations

import numpy as np
import pytest

import calibkit as ck
from calibkit import _kernels

BIG = _kernels.NUMBA_MIN_ELEMENTS + 12_345  # above the auto threshold, not a block multiple
SMALL = 1_000
FIELDS = ("sum_conf", "sum_outcome", "sum_conf_sq", "sum_conf_outcome", "sum_var_weight")


@pytest.fixture(params=["numpy", "numba"])
def kernel(request, monkeypatch):
    if request.param == "numba":
        pytest.importorskip("numba")
    monkeypatch.setenv("CALIBKIT_KERNEL", request.param)
    return request.param


def _force(monkeypatch, mode: str) -> None:
    if mode == "numba":
        pytest.importorskip("numba")
    monkeypatch.setenv("CALIBKIT_KERNEL", mode)


# --------------------------------------------------------------------------- data and oracle

EDGE_KINDS = ("uniform", "explicit", "quantile", "many")


def _edges(kind: str, conf: np.ndarray) -> np.ndarray:
    if kind == "uniform":
        return np.linspace(0.0, 1.0, 11)
    if kind == "explicit":
        return np.array([0.0, 0.05, 0.3, 0.31, 0.5, 0.7, 0.9999, 1.0])
    if kind == "many":  # more bins than the kernel counts edge by edge: its bisection
        extra = np.random.default_rng(4).random(25)
        return np.unique(np.concatenate([np.linspace(0.0, 1.0, 21), extra]))
    return ck.bin_edges(conf, n_bins=7, strategy="quantile")


def _confidences(n: int, dtype, seed: int = 0) -> np.ndarray:
    """Uniform floats, grid values k/20 (ties), every candidate edge, the neighbours of each
    edge (one ulp either side), and exact 0 and 1."""
    rng = np.random.default_rng([seed, n])
    conf = rng.random(n)
    grid = rng.random(n) < 0.4
    conf[grid] = rng.integers(0, 21, grid.sum()) / 20
    special = np.unique(
        np.concatenate(
            [
                np.linspace(0.0, 1.0, 11),
                _edges("explicit", conf),
                [0.0, 1.0, 0.5],
            ]
        )
    )
    special = np.concatenate([special, np.nextafter(special, 0.0), np.nextafter(special, 1.0)])
    special = special.astype(dtype).astype(np.float64)  # representable in dtype
    pos = rng.choice(n, special.size, replace=False)
    conf[pos] = special
    conf[:2] = [0.0, 1.0]
    conf[-2:] = [1.0, 0.0]
    return conf.astype(dtype)


def _oracle(conf: np.ndarray, outcome: np.ndarray, edges: np.ndarray, closed: str):
    x = conf.astype(np.float64)
    o = outcome.astype(np.float64)
    inner = edges[1:-1]
    # right-closed: the bin is the number of inner edges strictly below x; left: at or below
    if closed == "right":
        idx = np.zeros(x.size, dtype=np.int64)
        for e in inner:
            idx += x > e
    else:
        idx = np.zeros(x.size, dtype=np.int64)
        for e in inner:
            idx += x >= e
    m = edges.size - 1
    count = np.bincount(idx, minlength=m)
    weights = (x, o, x * x, x * o, x * (1 - x) * (1 - 2 * x) ** 2)
    return count, [np.bincount(idx, weights=w, minlength=m) for w in weights]


def _check(stats: ck.BinStats, expected) -> None:
    count, sums = expected
    np.testing.assert_array_equal(stats.count, count)
    for field, want in zip(FIELDS, sums, strict=True):
        np.testing.assert_allclose(
            getattr(stats, field), want, rtol=1e-12, atol=1e-12, err_msg=field
        )


OUTCOME_DTYPES = {
    np.float64: (bool, np.int8, np.int64, np.float64),
    np.float32: (bool, np.float32),
}


# --------------------------------------------------------------------------- bin sums


@pytest.mark.parametrize("closed", ["right", "left"])
@pytest.mark.parametrize("edge_kind", EDGE_KINDS)
@pytest.mark.parametrize("conf_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [SMALL, BIG])
def test_bin_sums_agree_with_the_oracle(kernel, n, conf_dtype, edge_kind, closed):
    conf = _confidences(n, conf_dtype)
    edges = _edges(edge_kind, conf)
    rng = np.random.default_rng(n)
    y = rng.random(n) < conf
    for out_dtype in OUTCOME_DTYPES[conf_dtype]:
        outcome = y.astype(out_dtype)
        stats = ck.BinStats.from_forecasts(conf, outcome, edges=edges, closed=closed)
        _check(stats, _oracle(conf, outcome, edges, closed))


@pytest.mark.parametrize("closed", ["right", "left"])
@pytest.mark.parametrize("edge_kind", EDGE_KINDS)
@pytest.mark.parametrize("n", [SMALL, BIG])
def test_numba_and_numpy_paths_agree(monkeypatch, n, edge_kind, closed):
    pytest.importorskip("numba")
    conf = _confidences(n, np.float64, seed=1)
    edges = _edges(edge_kind, conf)
    y = np.random.default_rng(2).random(n) < conf
    results = {}
    for mode in ("numpy", "numba"):
        monkeypatch.setenv("CALIBKIT_KERNEL", mode)
        results[mode] = (
            ck.BinStats.from_forecasts(conf, y, edges=edges, closed=closed),
            ck.brier_decomposition(conf, y, edges=edges, closed=closed),
            ck.spiegelhalter_z(conf, y),
        )
    a, b = results["numpy"], results["numba"]
    np.testing.assert_array_equal(a[0].count, b[0].count)
    assert a[0].allclose(b[0], rtol=1e-12, atol=1e-12)
    # derived terms: within_bin subtracts sums of size ~N, so compare to 1e-12 absolute
    for field in ("brier", "reliability", "resolution", "refinement", "within_bin"):
        assert getattr(a[1], field) == pytest.approx(getattr(b[1], field), rel=1e-12, abs=1e-12)
    assert a[2].statistic == pytest.approx(b[2].statistic, rel=1e-10)


def test_edge_values_land_in_the_documented_bin(kernel):
    edges = np.linspace(0.0, 1.0, 11)
    conf = np.repeat(edges, 2)
    y = np.zeros(conf.size, dtype=bool)
    right = ck.BinStats.from_forecasts(conf, y, edges=edges, closed="right")
    left = ck.BinStats.from_forecasts(conf, y, edges=edges, closed="left")
    # right: 0 and 0.1 in the first bin, then each edge closes the bin below it
    assert right.count.tolist() == [4] + [2] * 9
    # left: each edge opens the bin above it, 0.9 and 1 in the last bin
    assert left.count.tolist() == [2] * 9 + [4]


def test_spiegelhalter_variance_near_one_half_agrees(kernel):
    """sum p(1-p)(1-2p)^2 for forecasts a hair from 0.5, where (1-2p)^2 is tiny: the variance
    of Spiegelhalter's Z. Compared with the float64 product written as the formula reads."""
    n = BIG
    rng = np.random.default_rng(5)
    conf = 0.5 + rng.integers(-1000, 1001, n) * 1e-10
    y = rng.random(n) < 0.5
    stats = ck.BinStats.from_forecasts(conf, y, edges=[0.0, 1.0])
    expected = np.sum(conf * (1 - conf) * (1 - 2 * conf) ** 2)
    np.testing.assert_allclose(stats.sum_var_weight, [expected], rtol=1e-9)


@pytest.mark.parametrize("out_dtype", [np.float16, np.uint8])
def test_other_outcome_dtypes_accepted_on_both_paths(monkeypatch, out_dtype):
    conf = _confidences(SMALL, np.float64, seed=3)
    y = (np.random.default_rng(3).random(SMALL) < conf).astype(out_dtype)
    expected = _oracle(conf, y, np.linspace(0, 1, 11), "right")
    for mode in ("numpy", "numba"):
        _force(monkeypatch, mode)
        _check(ck.BinStats.from_forecasts(conf, y, edges=np.linspace(0, 1, 11)), expected)


def test_float16_confidence_accepted_on_both_paths(monkeypatch):
    conf = _confidences(SMALL, np.float16, seed=4)
    y = np.random.default_rng(4).random(SMALL) < conf
    edges = np.linspace(0, 1, 11)
    expected = _oracle(conf, y, edges, "left")
    for mode in ("numpy", "numba"):
        _force(monkeypatch, mode)
        _check(ck.BinStats.from_forecasts(conf, y, edges=edges, closed="left"), expected)


def test_non_native_byte_order_accepted_on_both_paths(monkeypatch):
    """Arrays read from big-endian files (np.load, some HDF5/FITS) are ordinary input."""
    conf = _confidences(SMALL, np.float64, seed=6)
    y = (np.random.default_rng(6).random(SMALL) < conf).astype(np.int64)
    edges = np.linspace(0, 1, 11)
    expected = _oracle(conf, y, edges, "right")
    swapped_c = conf.astype(conf.dtype.newbyteorder())
    swapped_y = y.astype(y.dtype.newbyteorder())
    for mode in ("numpy", "numba"):
        _force(monkeypatch, mode)
        _check(ck.BinStats.from_forecasts(swapped_c, swapped_y, edges=edges), expected)
        probs = np.c_[1 - conf, conf]
        f = ck.top_label(probs.astype(probs.dtype.newbyteorder()), (conf > 0.3).astype(int))
        np.testing.assert_array_equal(f.confidence, probs.max(axis=1))


def test_strided_input_agrees(kernel):
    conf = _confidences(2 * SMALL, np.float64, seed=7)
    y = np.random.default_rng(7).random(2 * SMALL) < conf
    edges = np.linspace(0, 1, 11)
    _check(
        ck.BinStats.from_forecasts(conf[::2], y[::2], edges=edges),
        _oracle(conf[::2], y[::2], edges, "right"),
    )


# --------------------------------------------------------------------------- invalid input


def _bin_sums_error(conf, outcome) -> str:
    with pytest.raises(ck.InputError) as info:
        ck.ece(conf, outcome)
    return str(info.value)


@pytest.mark.parametrize("n", [SMALL, BIG])
@pytest.mark.parametrize(
    "what,value",
    [
        ("confidence", np.nan),
        ("confidence", 1.2),
        ("confidence", -0.1),
        ("confidence", np.inf),
        ("outcome", 0.5),
        ("outcome", 2.0),
        ("outcome", -1.0),
        ("outcome", np.nan),
        ("outcome", 1.5),
        ("outcome", 2),
    ],
)
def test_invalid_values_give_the_same_message_on_both_paths(monkeypatch, n, what, value):
    rng = np.random.default_rng(8)
    conf = rng.random(n)
    outcome = (rng.random(n) < conf).astype(np.int64 if isinstance(value, int) else float)
    target = conf if what == "confidence" else outcome
    middle = n // 2 + 7
    target[middle] = value
    target[middle + 100] = value
    messages = {}
    for mode in ("numpy", "numba"):
        _force(monkeypatch, mode)
        messages[mode] = _bin_sums_error(conf, outcome)
    assert messages["numpy"] == messages["numba"]
    assert f"index {middle}" in messages["numpy"]


# --------------------------------------------------------------------------- top label


def _probs(n: int, c: int, dtype, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng([seed, n, c])
    p = rng.dirichlet(np.ones(c), n)
    p[: n // 10] = 1.0 / c  # all classes tied
    tie = slice(n // 10, n // 5)
    p[tie] = 0.0
    p[tie, 1] = p[tie, c - 1] = 0.5  # two classes tied for the top
    p[n // 5 : n // 5 + 10] = np.eye(c)[np.arange(10) % c]  # one-hot rows: 1.0 and 0.0
    p = p.astype(dtype)
    labels = rng.integers(0, c, n)
    labels[n // 10 : n // 5] = 1  # the first of the tied classes
    return p, labels


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("c", [4, 40])  # the narrow and the wide (bit-pattern) kernel
@pytest.mark.parametrize("size", ["small", "big"])
def test_top_label_agrees_with_max_and_argmax(kernel, size, c, dtype):
    n = SMALL if size == "small" else BIG // c + 1  # above the threshold
    p, labels = _probs(n, c, dtype)
    f = ck.top_label(p, labels)
    np.testing.assert_array_equal(f.confidence, p.max(axis=1).astype(np.float64))
    np.testing.assert_array_equal(f.outcome, np.argmax(p, axis=1) == labels)
    assert f.confidence.dtype == np.float64 and f.outcome.dtype == bool
    # ties go to the first class: the rows tied between classes 1 and 3 are correct (label 1)
    assert f.outcome[n // 10 : n // 5].all()


def test_top_label_paths_agree(monkeypatch):
    pytest.importorskip("numba")
    for n, c in ((SMALL, 3), (BIG // 5 + 1, 5), (BIG // 40 + 1, 40)):
        p, labels = _probs(n, c, np.float32, seed=1)
        out = {}
        for mode in ("numpy", "numba"):
            monkeypatch.setenv("CALIBKIT_KERNEL", mode)
            out[mode] = ck.top_label(p, labels)
        np.testing.assert_array_equal(out["numpy"].confidence, out["numba"].confidence)
        np.testing.assert_array_equal(out["numpy"].outcome, out["numba"].outcome)


@pytest.mark.parametrize("c", [4, 40])
@pytest.mark.parametrize("size", ["small", "big"])
@pytest.mark.parametrize("case", ["nan", "above one", "negative", "row sum"])
def test_top_label_invalid_rows_give_the_same_message_on_both_paths(monkeypatch, size, c, case):
    n = SMALL if size == "small" else BIG // c + 1
    p, labels = _probs(n, c, np.float64, seed=2)
    row = n // 2 + 3
    p[row] = 0.0
    if case == "nan":
        p[row, :2] = [0.5, 0.5]
        p[row, 2] = np.nan
    elif case == "above one":
        p[row, [0, c - 1]] = [1.2, -0.2]
    elif case == "negative":
        p[row, :4] = [0.6, -0.1, 0.3, 0.2]
    else:
        p[row, :4] = [0.5, 0.3, 0.1, 0.2]  # sums to 1.1
    messages = {}
    for mode in ("numpy", "numba"):
        _force(monkeypatch, mode)
        with pytest.raises(ck.InputError) as info:
            ck.top_label(p, labels)
        messages[mode] = str(info.value)
    assert messages["numpy"] == messages["numba"]
    assert f"row {row}" in messages["numpy"]


@pytest.mark.parametrize("c", [4, 40])
def test_negative_zero_is_a_valid_probability_on_both_paths(monkeypatch, c):
    # -0.0 >= 0; the wide kernel's bit-pattern check flags it and hands over to numpy
    p, labels = _probs(BIG // c + 1, c, np.float32, seed=3)
    p[7] = 0.0
    p[7, 0] = 1.0
    p[7, 1] = -0.0
    out = {}
    for mode in ("numpy", "numba"):
        _force(monkeypatch, mode)
        out[mode] = ck.top_label(p, labels)
    np.testing.assert_array_equal(out["numpy"].confidence, out["numba"].confidence)
    np.testing.assert_array_equal(out["numpy"].outcome, out["numba"].outcome)


# --------------------------------------------------------------------------- dispatch


def test_auto_switches_at_the_threshold(monkeypatch):
    monkeypatch.setenv("CALIBKIT_KERNEL", "auto")
    assert not _kernels.use_numba(_kernels.NUMBA_MIN_ELEMENTS - 1)
    has_numba = _kernels._numba_module() is not None
    assert _kernels.use_numba(_kernels.NUMBA_MIN_ELEMENTS) is has_numba
    monkeypatch.setenv("CALIBKIT_KERNEL", "numpy")
    assert not _kernels.use_numba(10**9)
    monkeypatch.delenv("CALIBKIT_KERNEL")
    assert not _kernels.use_numba(_kernels.NUMBA_MIN_ELEMENTS - 1)


def test_forcing_a_path_really_uses_it(monkeypatch):
    """With the numpy reference disabled, numba must still answer when forced, and the numpy
    setting must reach the reference even for big input."""
    pytest.importorskip("numba")

    def boom(*args, **kwargs):
        raise AssertionError("numpy reference called")

    monkeypatch.setattr(_kernels, "_bin_sums_numpy", boom)
    monkeypatch.setattr(_kernels, "_top_label_numpy", boom)
    conf = _confidences(SMALL, np.float64, seed=9)
    y = conf > 0.5
    monkeypatch.setenv("CALIBKIT_KERNEL", "numba")
    ck.ece(conf, y)
    ck.top_label(np.c_[1 - conf, conf], y.astype(int))
    monkeypatch.setenv("CALIBKIT_KERNEL", "auto")
    ck.ece(np.resize(conf, BIG), np.resize(y, BIG))  # big: auto picks numba
    monkeypatch.setenv("CALIBKIT_KERNEL", "numpy")
    with pytest.raises(AssertionError, match="numpy reference"):
        ck.ece(np.resize(conf, BIG), np.resize(y, BIG))


def test_an_audit_loads_the_kernels_by_its_whole_work(monkeypatch):
    """An audit reads its N forecasts about 15 times, so it loads numba from N * 15 elements,
    where a single pass would wait for NUMBA_LOAD_ELEMENTS of its own (in a fresh process)."""
    pytest.importorskip("numba")
    import subprocess
    import sys

    code = (
        "import sys; from calibkit import _kernels as k; k.expect(k.NUMBA_LOAD_ELEMENTS - 1); "
        "a = 'calibkit._numba_kernels' in sys.modules; k.expect(k.NUMBA_LOAD_ELEMENTS); "
        "print(a, 'calibkit._numba_kernels' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]
    from calibkit.engines import memory

    asked = []
    monkeypatch.setattr(_kernels, "expect", asked.append)
    ck.audit(np.full(1000, 0.5), np.arange(1000) % 2, n_boot=10, n_sims=10)
    assert asked == [1000 * memory.AUDIT_PASSES]


def test_numba_setting_without_numba_is_an_input_error(monkeypatch):
    monkeypatch.setattr(_kernels, "_numba_module", lambda: None)
    monkeypatch.setenv("CALIBKIT_KERNEL", "numba")
    with pytest.raises(ck.InputError, match="numba is not installed"):
        ck.ece([0.5], [1])
    monkeypatch.setenv("CALIBKIT_KERNEL", "auto")
    assert ck.ece(np.full(BIG, 0.5), np.ones(BIG)) == pytest.approx(0.5)


# --------------------------------------------------------------------------- Brier and log loss


@pytest.mark.parametrize("y_dtype", [np.int64, np.int8, bool])
def test_binary_score_sums_agree_on_both_paths(monkeypatch, y_dtype):
    pytest.importorskip("numba")
    from calibkit.measure.scores import score_sums

    p = _confidences(BIG, np.float64, seed=6)
    y = (np.random.default_rng(7).random(BIG) < p).astype(y_dtype)
    sums = {}
    for mode in ("numpy", "numba"):
        monkeypatch.setenv("CALIBKIT_KERNEL", mode)
        sums[mode] = score_sums(p, p, y, from_logits=False, where="test")
    yy = y.astype(np.float64)
    by_hand = (np.sum((p - yy) ** 2), -np.sum(np.log(np.where(yy == 1, p, 1 - p))))
    for mode in ("numpy", "numba"):
        assert sums[mode] == pytest.approx(by_hand, rel=1e-12)


def test_an_impossible_outcome_warns_alike_on_both_paths(monkeypatch):
    pytest.importorskip("numba")
    from calibkit.measure.scores import score_sums

    p = np.full(BIG, 0.5)
    y = np.zeros(BIG, dtype=np.int64)
    p[[70_001, 200_000]] = [1.0, 0.0]
    y[200_000] = 1  # a forecast of 0 that happened, and one of 1 that did not
    for mode in ("numpy", "numba"):
        monkeypatch.setenv("CALIBKIT_KERNEL", mode)
        with pytest.warns(ck.CalibkitWarning, match=r"2 rows give .*\(first at index 70001\)"):
            brier, loss = score_sums(p, p, y, from_logits=False, where="test")
        assert loss == np.inf and brier == pytest.approx(0.25 * (BIG - 2) + 2.0, rel=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_unit_interval_check_counts_what_numpy_counts(kernel, dtype) -> None:
    """The one-pass check of [0, 1] (numba: a count of the values outside, NaN among them)
    accepts exactly what numpy's minimum and maximum accept, 1-D and 2-D, and the error it
    leads to names the same first bad value."""
    if kernel == "numba":
        from calibkit import _numba_kernels as nk
    rng = np.random.default_rng(3)
    x = rng.uniform(size=BIG).astype(dtype)
    x[[0, 7, -1]] = [0.0, 1.0, -0.0]  # the ends and a signed zero are inside
    assert _kernels.within_unit(x) and _kernels.within_unit(x.reshape(-1, 5))
    for bad in (np.nan, -np.inf, np.inf, 1.0 + np.finfo(dtype).eps, -np.finfo(dtype).tiny):
        y = x.copy()
        y[[5, 123_456]] = bad
        assert not _kernels.within_unit(y)
        if kernel == "numba":
            assert nk.outside_unit(y) == 2
        with pytest.raises(ck.InputError, match="first at index 5"):
            ck.ece(y, np.zeros(y.size, dtype=np.int8))
