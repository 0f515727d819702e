"""PyTorch tensors handed to calibkit as they come out of a model: with autograd, in bfloat16
or float16, and as a list of validation batches. Each gives the numbers of the numpy arrays."""

from __future__ import annotations

import numpy as np
import pytest

import calibkit as ck

torch = pytest.importorskip("torch")


def _model_output(n: int = 3000, c: int = 5) -> tuple:
    g = torch.Generator().manual_seed(0)
    labels = torch.randint(0, c, (n,), generator=g)
    logits = torch.randn(n, c, generator=g) + 2.0 * torch.nn.functional.one_hot(labels, c)
    return logits.requires_grad_(True), labels


def test_tensors_that_require_grad_are_read_without_the_user_detaching() -> None:
    logits, labels = _model_output()
    z, y = logits.detach().numpy(), labels.numpy()
    a = ck.audit(logits, labels, from_logits=True, n_boot=50, n_sims=50)
    b = ck.audit(z, y, from_logits=True, n_boot=50, n_sims=50)
    assert a.ece == b.ece and a.nll == b.nll and a.auc == b.auc
    assert ck.fit_temperature(logits, labels) == ck.fit_temperature(z, y)
    p = torch.softmax(logits, dim=1)
    assert ck.brier(p, labels) == ck.brier(p.detach().numpy(), y)
    assert logits.requires_grad  # the caller's tensor is untouched


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_tensors_equal_their_float32_values(dtype: str) -> None:
    logits, labels = _model_output()
    low = logits.detach().to(getattr(torch, dtype))
    exact = low.float().numpy()  # every bfloat16 / float16 is a float32 exactly
    a = ck.audit(low, labels, from_logits=True, n_boot=50, n_sims=50)
    b = ck.audit(exact, labels.numpy(), from_logits=True, n_boot=50, n_sims=50)
    assert a.ece == pytest.approx(b.ece, abs=1e-12)
    assert a.nll == pytest.approx(b.nll, rel=1e-6)


def test_a_list_of_batches_is_audited_like_the_whole() -> None:
    logits, labels = _model_output()
    p = torch.softmax(logits.detach(), dim=1)
    batches = [(p[i : i + 700], labels[i : i + 700]) for i in range(0, len(labels), 700)]
    whole = ck.audit(p, labels, n_boot=50, n_sims=50, strategy="quantile")
    listed = ck.audit(batches, n_boot=50, n_sims=50, strategy="quantile")
    assert listed.ece == pytest.approx(whole.ece, abs=1e-12)  # exact edges: read twice
    np.testing.assert_array_equal(listed.stats.count, whole.stats.count)
    assert listed.n == len(labels)


def test_a_list_of_number_pairs_is_not_mistaken_for_batches() -> None:
    with pytest.raises(ck.InputError, match="pass the labels"):
        ck.audit([(0.2, 0.8), (0.6, 0.4)])
