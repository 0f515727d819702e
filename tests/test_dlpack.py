"""Arrays of other libraries: any object with ``__dlpack__`` (JAX, CuPy, ...) or the array
API (``array-api-strict``) gives the numbers of the numpy array it holds."""

from __future__ import annotations

import numpy as np
import pytest

import calibkit as ck


class DLPackOnly:
    """An array that offers nothing but DLPack (as another library's array would)."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def _forecasts(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    conf = rng.uniform(size=n)
    return conf, (rng.uniform(size=n) < conf).astype(np.int64)


def test_numpys_own_dlpack_reads_as_the_array():
    conf, hit = _forecasts()
    wrapped_conf, wrapped_hit = DLPackOnly(conf), DLPackOnly(hit)
    assert ck.ece(wrapped_conf, wrapped_hit) == ck.ece(conf, hit)
    table = ck.reliability_bins(wrapped_conf, wrapped_hit, n_bins=10)
    assert [r.count for r in table.rows] == [
        r.count for r in ck.reliability_bins(conf, hit, n_bins=10).rows
    ]
    meter = ck.CalibrationMeter(n_bins=10)
    meter.update(wrapped_conf, wrapped_hit)
    assert meter.compute().ece == pytest.approx(ck.ece(conf, hit, n_bins=10), rel=1e-12)
    z = np.random.default_rng(1).normal(size=(300, 4))
    y = np.arange(300) % 4
    assert ck.fit_temperature(DLPackOnly(z), DLPackOnly(y)) == ck.fit_temperature(z, y)


def test_bad_values_behind_dlpack_are_named_as_in_numpy():
    conf, hit = _forecasts(50)
    conf[9] = 1.5
    with pytest.raises(ck.InputError, match="1 value does not, first at index 9: 1.5"):
        ck.ece(DLPackOnly(conf), DLPackOnly(hit))


def test_a_dlpack_array_numpy_cannot_read_goes_through_torch():
    torch = pytest.importorskip("torch")
    conf, hit = _forecasts()
    low = torch.tensor(conf).to(torch.bfloat16)  # numpy has no bfloat16
    exact = low.float().numpy()
    assert ck.ece(DLPackOnly(low), hit) == pytest.approx(ck.ece(exact, hit), rel=1e-12)


def test_array_api_strict_arrays():
    xp = pytest.importorskip("array_api_strict")
    conf, hit = _forecasts()
    assert ck.ece(xp.asarray(conf), xp.asarray(hit)) == ck.ece(conf, hit)
    z = np.random.default_rng(2).normal(size=(400, 3))
    y = np.arange(400) % 3
    a = ck.audit(xp.asarray(z), xp.asarray(y), from_logits=True, n_boot=20, n_sims=20)
    b = ck.audit(z, y, from_logits=True, n_boot=20, n_sims=20)
    assert a.ece == b.ece and a.nll == b.nll
    meter = ck.CalibrationMeter()
    meter.update(xp.asarray(z), xp.asarray(y), from_logits=True)
    assert meter.compute().ece == pytest.approx(b.ece, rel=1e-12)
