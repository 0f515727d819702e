"""Tensors summed on their own device (calibkit._torch_kernels): the meter's state, BinStats,
ck.ece and the reliability table of a tensor equal the numpy path's numbers, and bad values
are refused with the numpy path's words."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import calibkit as ck
from calibkit.forecasts import prepare
from calibkit.meter.state import (
    add_tensor_batch,
    batch_state,
    bin_sets,
    tensor_batch,
    tensor_zero_state,
)

torch = pytest.importorskip("torch")

DTYPES = ["float16", "bfloat16", "float32", "float64"]


def _logits(n=3000, c=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, c, (n,), generator=g)
    z = 1.5 * torch.randn(
        n, c, generator=g, dtype=torch.float64
    ) + 2.0 * torch.nn.functional.one_hot(y, c)
    return z, y


def _host(t):
    """The values of a tensor as the numpy path reads them (half precision widened)."""
    return t.detach().to(torch.float64).numpy()


def _assert_same_state(tensor_input, labels, *, from_logits, binning):
    batch = tensor_batch(tensor_input, labels, from_logits=from_logits, where="test")
    assert batch is not None  # the device path took it
    kind, n_classes = batch[0].kind, batch[0].n_classes
    device_state = tensor_zero_state(binning, kind=kind, n_classes=n_classes, device="cpu")
    add_tensor_batch(batch, binning, device_state)
    f = prepare(_host(tensor_input), labels.numpy(), from_logits=from_logits, where="test")
    assert (kind, n_classes) == (f.kind, f.n_classes)
    host_state = batch_state(f, binning)
    assert set(device_state) == set(host_state)
    sets = bin_sets(binning, kind=kind, n_classes=n_classes)
    # a confidence exactly on an edge (half-precision logits are dyadic, and so are the points
    # of the deciles' logit grid) may fall either side of it: exp and log round differently on
    # the device; those bins are compared by their totals
    on_edge = {
        name: _bins_beside_edges(f.conf, sets[name][1].values) for name in ("table", "deciles")
    }
    for name, expected in host_state.items():
        got = device_state[name].cpu().numpy()
        assert (got.shape, got.dtype) == (expected.shape, expected.dtype), name
        beside = on_edge.get(name.split("_")[0])
        if beside is not None and beside.size:
            keep = np.ones(got.shape[-1], dtype=bool)
            keep[beside] = False
            np.testing.assert_allclose(
                got[..., beside].sum(axis=-1), expected[..., beside].sum(axis=-1), rtol=1e-12
            )
            got, expected = got[..., keep], expected[..., keep]
        if expected.dtype == np.int64:
            np.testing.assert_array_equal(got, expected, err_msg=name)
        else:
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12, err_msg=name)


def _bins_beside_edges(conf, edges):
    """The bins on either side of an edge that some confidence lies on (to 4 ulps)."""
    j = np.searchsorted(edges, conf)
    beside: set[int] = set()
    for k in (np.clip(j - 1, 0, edges.size - 1), np.clip(j, 0, edges.size - 1)):
        close = np.abs(conf - edges[k]) <= 4 * np.spacing(edges[k])
        for e in np.unique(k[close]):
            beside |= {int(e) - 1, int(e)}
    return np.array(sorted(b for b in beside if 0 <= b < edges.size - 1), dtype=np.int64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("from_logits", [True, False])
def test_top_label_state_on_device_equals_the_numpy_state(dtype, from_logits):
    z, y = _logits()
    x = z if from_logits else torch.softmax(z, dim=1)
    x = x.to(getattr(torch, dtype))
    binning = ck.CalibrationMeter(n_bins=15).binning
    if not from_logits and dtype == "bfloat16":  # 3 digits: rows cannot sum to 1 within 1e-3
        words = _message(tensor_batch, x, y, from_logits=False, where="t")
        assert "each row of probs must sum to 1 (within 0.001)" in words
        assert words == _message(prepare, _host(x), y.numpy(), from_logits=False, where="t")
        return
    _assert_same_state(x, y, from_logits=from_logits, binning=binning)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("from_logits", [True, False])
def test_binary_state_on_device_equals_the_numpy_state(dtype, from_logits):
    z, y = _logits(c=2)
    s = z[:, 1] - z[:, 0]
    x = (s if from_logits else torch.sigmoid(s)).to(getattr(torch, dtype))
    binning = ck.CalibrationMeter(n_bins=10, closed="left").binning
    _assert_same_state(x, y, from_logits=from_logits, binning=binning)


def test_views_that_require_grad_and_explicit_edges():
    z, y = _logits(n=4000)
    wide = torch.cat([z, z], dim=1).requires_grad_(True)
    view = wide[::2, ::2]  # strided both ways: not contiguous
    assert not view.is_contiguous() and view.requires_grad
    binning = ck.CalibrationMeter(edges=[0.0, 0.3, 0.5, 0.6, 0.9, 1.0]).binning
    _assert_same_state(view, y[::2], from_logits=True, binning=binning)
    assert wide.grad is None  # nothing flowed back into the caller's graph


def test_a_meter_fed_tensors_equals_a_meter_fed_arrays():
    z, y = _logits(n=5000, c=3)
    on_device, on_host = ck.CalibrationMeter(n_bins=12), ck.CalibrationMeter(n_bins=12)
    for i in range(0, 5000, 1024):
        on_device.update(z[i : i + 1024], y[i : i + 1024], from_logits=True)
        on_host.update(z[i : i + 1024].numpy(), y[i : i + 1024].numpy(), from_logits=True)
    a, b = on_device.compute(), on_host.compute()
    np.testing.assert_array_equal(a.table.count, b.table.count)
    assert a.ece == pytest.approx(b.ece, rel=1e-12)
    assert a.nll == pytest.approx(b.nll, rel=1e-12) and a.brier == pytest.approx(b.brier, rel=1e-12)
    assert a.auc == b.auc and a.accuracy == b.accuracy
    # the exact in-memory audit of all of it
    exact = ck.audit(z.numpy(), y.numpy(), from_logits=True, n_bins=12)
    assert a.ece == pytest.approx(exact.ece, rel=1e-12)
    on_device.merge(on_host)  # device sums and host sums add
    assert on_device.n == 10_000


def test_zero_one_edges_and_ties_land_where_bin_index_puts_them():
    edges = np.linspace(0.0, 1.0, 11)
    conf = np.concatenate([edges, edges, [0.0, 1.0, 0.35, 0.35, 0.35]])
    out = np.arange(conf.size) % 2
    for closed in ("right", "left"):
        host = ck.BinStats.from_forecasts(conf, out, edges=edges, closed=closed)
        tensor = ck.BinStats.from_forecasts(
            torch.tensor(conf), torch.tensor(out), edges=edges, closed=closed
        )
        np.testing.assert_array_equal(tensor.count, host.count)
        expected = np.bincount(ck.bin_index(conf, edges, closed=closed), minlength=10)
        np.testing.assert_array_equal(tensor.count, expected)
        assert tensor.allclose(host, rtol=1e-15, atol=0.0)
    # by hand: closed right puts 0 and 0.1 in bin 0, 1.0 in bin 9; closed left 0.1 in bin 1
    right = ck.BinStats.from_forecasts(
        torch.tensor([0.0, 0.1, 1.0], dtype=torch.float64), torch.tensor([0, 1, 1]), edges=edges
    )
    left = ck.BinStats.from_forecasts(
        torch.tensor([0.0, 0.1, 1.0], dtype=torch.float64),
        torch.tensor([0, 1, 1]),
        edges=edges,
        closed="left",
    )
    assert right.count.tolist() == [2] + [0] * 8 + [1]
    assert left.count.tolist() == [1, 1] + [0] * 7 + [1]


@pytest.mark.parametrize("dtype", DTYPES)
def test_ece_and_reliability_bins_of_tensors(dtype):
    g = torch.Generator().manual_seed(3)
    conf = torch.rand(2000, generator=g).to(getattr(torch, dtype))
    hit = torch.rand(2000, generator=g) < conf.float()
    c, o = _host(conf), hit.numpy()
    for norm in ("l1", "l2", "max"):
        assert ck.ece(conf, hit, norm=norm) == pytest.approx(ck.ece(c, o, norm=norm), rel=1e-12)
    table = ck.reliability_bins(conf.clone().requires_grad_(True), hit.int())
    ref = ck.reliability_bins(c, o.astype(int))
    assert [r.count for r in table.rows] == [r.count for r in ref.rows]
    np.testing.assert_allclose([r.acc for r in table.rows], [r.acc for r in ref.rows])
    # quantile edges are computed on the host from the same values
    assert ck.ece(conf, hit, strategy="quantile") == pytest.approx(
        ck.ece(c, o, strategy="quantile"), rel=1e-12
    )


def _message(call, *args, **kwargs):
    with pytest.raises(ck.InputError) as info:
        call(*args, **kwargs)
    return str(info.value)


def test_bad_values_are_refused_with_the_numpy_paths_words():
    p = np.full(40, 0.5)
    p[17], p[30] = 1.2, -0.1
    y = np.zeros(40, dtype=int)
    m = ck.CalibrationMeter()
    words = _message(m.update, torch.tensor(p), torch.tensor(y))
    assert words == _message(m.update, p, y)
    assert "2 values do not, first at index 17: 1.2" in words
    assert _message(ck.ece, torch.tensor(p), torch.tensor(y)) == _message(ck.ece, p, y)
    nan = np.full((5, 3), 1 / 3)
    nan[3, 1] = np.nan
    labels = np.array([0, 1, 2, 0, 1])
    words = _message(m.update, torch.tensor(nan), torch.tensor(labels), from_logits=True)
    assert words == _message(m.update, nan, labels, from_logits=True)
    assert "row 3, column 1: nan" in words
    rows = np.array([[0.5, 0.6], [0.5, 0.5]])
    assert _message(m.update, torch.tensor(rows), torch.tensor([0, 1])) == _message(
        m.update, rows, np.array([0, 1])
    )
    out_of_range = torch.tensor([0, 3, 1, 7])
    words = _message(m.update, torch.randn(4, 3), out_of_range, from_logits=True)
    assert "2 values do not, first at index 1: 3" in words
    assert words == _message(m.update, np.zeros((4, 3)), out_of_range.numpy(), from_logits=True)
    outcome = _message(ck.ece, torch.tensor([0.2, 0.7]), torch.tensor([0.0, 0.5]))
    assert outcome == _message(ck.ece, np.array([0.2, 0.7]), np.array([0.0, 0.5]))
    assert m.n == 0  # nothing refused was added


def test_a_true_class_of_probability_zero_warns_as_the_numpy_path():
    p = torch.tensor([0.0, 0.7, 0.2], dtype=torch.float64)
    y = torch.tensor([1, 1, 0])
    m = ck.CalibrationMeter(n_bins=5)
    with pytest.warns(ck.CalibkitWarning, match="first at index 0"):
        m.update(p, y)
    assert m.compute().nll == float("inf")


def test_import_calibkit_does_not_import_torch():
    import subprocess
    import sys

    code = "import sys, calibkit; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_metric_states_stay_float64_on_the_device():
    pytest.importorskip("torchmetrics")
    from calibkit.torch import CalibrationError

    z, y = _logits(n=3000, c=3)
    metric = CalibrationError(n_bins=15, num_classes=3, from_logits=True)
    for i in range(0, 3000, 1000):
        metric.update(z[i : i + 1000].to(torch.bfloat16), y[i : i + 1000])
    assert metric.table_sums.dtype == torch.float64
    exact = ck.audit(z.to(torch.bfloat16).double().numpy(), y.numpy(), from_logits=True)
    assert float(metric.compute()) == pytest.approx(exact.ece, rel=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert metric.audit().table.count.tolist() == exact.table.count.tolist()


def test_tied_classes_go_to_the_first_as_np_argmax():
    p = torch.tensor([[0.4, 0.4, 0.2], [0.3, 0.35, 0.35], [0.2, 0.2, 0.6]], dtype=torch.float64)
    y = torch.tensor([1, 1, 2])
    binning = ck.CalibrationMeter(n_bins=5).binning
    _assert_same_state(p, y, from_logits=False, binning=binning)
    f = tensor_batch(p, y, from_logits=False, where="t")[0]
    assert f.correct.tolist() == [False, True, True]  # argmax 0, 1, 2: the first of each tie
