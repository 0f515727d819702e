"""calibkit.torch.CalibrationError: the meter's state as a torchmetrics Metric."""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest

import calibkit as ck

torch = pytest.importorskip("torch")


def test_without_torchmetrics_the_import_names_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "torchmetrics", None)  # as if not installed
    monkeypatch.delitem(sys.modules, "calibkit.torch", raising=False)
    with pytest.raises(ImportError, match=r"needs torchmetrics, .*pip install 'calibkit\[torch\]'"):
        importlib.import_module("calibkit.torch")


@pytest.fixture()
def metric_class():
    pytest.importorskip("torchmetrics")
    from calibkit.torch import CalibrationError

    return CalibrationError


def _batches(n=2000, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    p = ck.softmax(rng.normal(size=(n, classes)) * 2.0)
    y = np.array([rng.choice(classes, p=row) for row in p])
    return p, y


def test_metric_ece_equals_the_audit_of_all_batches(metric_class):
    p, y = _batches()
    metric = metric_class(n_bins=15, num_classes=3)
    for i in range(0, 2000, 500):
        metric.update(torch.tensor(p[i : i + 500]), torch.tensor(y[i : i + 500]))
    value = metric.compute()
    assert value.dtype == torch.float64
    assert float(value) == pytest.approx(ck.audit(p, y).ece, rel=1e-12)
    assert metric.audit().table.count.tolist() == ck.audit(p, y).table.count.tolist()


def test_one_in_the_last_bin_float64_sums_and_a_state_of_fixed_size(metric_class):
    metric = metric_class(n_bins=10)
    sizes = {name: getattr(metric, name).numel() for name in metric.state_names}
    metric.update(torch.tensor([1.0, 1.0, 0.05]), torch.tensor([1, 1, 0]))
    assert metric.audit().table.count.tolist() == [1] + [0] * 8 + [2]
    assert float(metric.compute()) == pytest.approx(0.05 / 3)
    # float32 input: the sums are float64, so 10^6 copies of 0.1 add to 10^5 to 1e-9
    metric.reset()
    batch = torch.full((100_000,), 0.1, dtype=torch.float32)
    for _ in range(10):
        metric.update(batch, torch.zeros(100_000, dtype=torch.int64))
    assert metric.table_sums.dtype == torch.float64
    exact = 1e6 * float(np.float32(0.1))
    assert float(metric.table_sums[0].sum()) == pytest.approx(exact, rel=1e-12)
    # O(bins): the state's size is what it was before any batch
    assert {name: getattr(metric, name).numel() for name in metric.state_names} == sizes


def test_a_batch_of_the_wrong_shape_is_refused(metric_class):
    metric = metric_class(num_classes=3)
    with pytest.raises(ck.InputError, match=r"made for \(N, 3\) class probabilities"):
        metric.update(torch.tensor([0.2, 0.9]), torch.tensor([0, 1]))
    with pytest.raises(ck.InputError, match="num_classes is 1"):
        metric_class(num_classes=1)


def test_temperature_scaling_as_a_torch_module():
    rng = np.random.default_rng(4)
    z = rng.normal(size=(400, 3)) * 3.0
    y = np.array([rng.choice(3, p=row) for row in ck.softmax(z / 3.0)])
    ts = ck.TemperatureScaling().fit(z, y)
    module = ts.as_torch_module()
    assert isinstance(module, torch.nn.Module)
    assert float(module.state_dict()["temperature"]) == ts.temperature_
    assert not any(True for _ in module.parameters())  # a buffer: nothing to train
    logits = torch.tensor(z, dtype=torch.float32)
    out = module(logits)
    assert out.dtype == torch.float32
    np.testing.assert_allclose(
        torch.softmax(out.double(), dim=1).numpy(), ts.predict_proba(z), rtol=1e-6, atol=1e-7
    )
    with pytest.raises(ck.NotFittedError, match="as_torch_module"):
        ck.TemperatureScaling().as_torch_module()
