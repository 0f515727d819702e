"""TemperatureScaling().fit of tensors: the objective's sums of every Newton step taken on the
tensor's device give the temperature of the numpy fit (to 1e-10 relative) and its report."""

from __future__ import annotations

import numpy as np
import pytest

import calibkit as ck
from calibkit.recalibrate.temperature_device import fit_on_device

torch = pytest.importorskip("torch")


def _logits(n, c, seed, scale=2.0):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, c, (n,), generator=g)
    z = scale * torch.randn(n, c, generator=g) + 1.5 * torch.nn.functional.one_hot(y, c)
    return z, y


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("classes", [2, 5])
def test_multiclass_fit_on_device_equals_the_numpy_fit(dtype, classes):
    z, y = _logits(4000, classes, seed=classes)
    z = z.to(getattr(torch, dtype)).requires_grad_(True)
    host = z.detach().double().numpy()
    device = ck.TemperatureScaling().fit(z, y)
    numpy = ck.TemperatureScaling().fit(host, y.numpy())
    assert device.temperature_ == pytest.approx(numpy.temperature_, rel=1e-10)
    assert device.nll_before_ == pytest.approx(numpy.nll_before_, rel=1e-12)
    assert device.nll_after_ == pytest.approx(numpy.nll_after_, rel=1e-12)
    assert device.converged_ and abs(device.gradient_) < 1e-8
    assert device.invariance_.ok and device.invariance_.to_dict() == numpy.invariance_.to_dict()
    assert ck.fit_temperature(z, y) == pytest.approx(numpy.temperature_, rel=1e-10)
    fitted = fit_on_device(z, y, check_logits=True, where="t")
    assert fitted is not None  # the device path took it: only scalars per step
    assert 1.0 / fitted.solution.beta == pytest.approx(numpy.temperature_, rel=1e-10)


def test_binary_scores_fit_on_device_equals_the_numpy_fit():
    z, y = _logits(3000, 2, seed=9)
    s = z[:, 1] - z[:, 0]
    device = ck.TemperatureScaling().fit(s, y)
    numpy = ck.TemperatureScaling().fit(s.numpy(), y.numpy())
    assert device.temperature_ == pytest.approx(numpy.temperature_, rel=1e-10)
    assert device.invariance_.to_dict() == numpy.invariance_.to_dict()


def test_by_hand_six_examples_and_a_tensor_of_labels_on_the_host():
    logits = [[3, 1, 0], [2.5, 1, 0], [3, 0.5, 0], [1.5, 2, 0], [0.5, 0, 1.5], [2, 2.2, 0]]
    ts = ck.TemperatureScaling().fit(torch.tensor(logits), np.array([0, 0, 1, 1, 2, 0]))
    assert round(ts.temperature_, 5) == 1.22975  # the docstring's worked example
    assert round(ts.nll_before_, 5) == 0.82278 and round(ts.nll_after_, 5) == 0.81243


def test_bad_tensors_are_refused_with_the_numpy_paths_words():
    z, y = _logits(50, 3, seed=1)
    z[7, 2] = float("inf")
    with pytest.raises(ck.InputError) as on_device:
        ck.TemperatureScaling().fit(z, y)
    with pytest.raises(ck.InputError) as on_host:
        ck.TemperatureScaling().fit(z.numpy(), y.numpy())
    assert str(on_device.value) == str(on_host.value) and "row 7, column 2: inf" in str(
        on_device.value
    )
    probs = torch.softmax(_logits(50, 3, seed=2)[0], dim=1)
    with pytest.raises(ck.InputError, match="these look like probabilities"):
        ck.TemperatureScaling().fit(probs, y)
    with pytest.raises(ck.InputError, match="must lie in 0..2"):
        ck.TemperatureScaling().fit(_logits(50, 3, seed=3)[0], torch.full((50,), 3))
    with pytest.raises(ck.InputError, match="every label is 1"):
        ck.TemperatureScaling().fit(torch.randn(20), torch.ones(20, dtype=torch.int64))


def test_separable_data_are_refused_on_the_device_as_on_the_host():
    z = torch.tensor([[5.0, 0.0], [0.0, 5.0], [4.0, 1.0]])
    y = torch.tensor([0, 1, 0])
    with pytest.raises(ck.InputError, match="separable"):
        ck.TemperatureScaling().fit(z, y)
