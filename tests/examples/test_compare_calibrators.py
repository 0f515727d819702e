"""examples/compare_calibrators.py reads both models from examples/data (nothing outside the
repository) and reproduces docs/repair.md's uncalibrated CIFAR-100 row, recomputed here in numpy."""

from __future__ import annotations

import numpy as np
import pytest
from example_loader import load_example

import calibkit as ck


@pytest.fixture(scope="module")
def models():
    return dict(load_example("compare_calibrators").models())


def test_both_models_come_from_the_shipped_data(models):
    assert list(models) == [
        "DenseNet-40, CIFAR-10 (fit: 5,000 validation; judged: 10,000 test)",
        "WRN-16-4, CIFAR-100 (10,000 test probabilities split in half, stratified)",
    ]
    dense = models["DenseNet-40, CIFAR-10 (fit: 5,000 validation; judged: 10,000 test)"]
    assert dense["fit_logits"].shape == (5000, 10) and dense["eval_logits"].shape == (10000, 10)


def test_cifar100_uncalibrated_row_of_the_readme(models):
    """| uncalibrated | 0.0573 (0.0127) | 0.9555 | 0.3508 | 0.7526 |, by hand in numpy: 15
    equal-width bins closed on the right, the multiclass Brier score, the log loss."""
    wrn = models["WRN-16-4, CIFAR-100 (10,000 test probabilities split in half, stratified)"]
    z, y = wrn["eval_logits"], wrn["eval_labels"]
    assert z.shape == (5000, 100) and wrn["fit_logits"].shape == (5000, 100)
    p = np.exp(z)  # the logits are log-probabilities of rows renormalised in float64
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    rows = np.arange(y.size)
    conf, correct = p.max(axis=1), p.argmax(axis=1) == y
    bins = np.clip(np.ceil(conf * 15).astype(int) - 1, 0, 14)
    ece = sum(
        (bins == b).sum() / y.size * abs(correct[bins == b].mean() - conf[bins == b].mean())
        for b in range(15)
        if (bins == b).any()
    )
    onehot = np.zeros_like(p)
    onehot[rows, y] = 1.0
    brier = ((p - onehot) ** 2).sum(axis=1).mean()
    nll = -np.log(p[rows, y]).mean()
    assert (round(ece, 4), round(nll, 4), round(brier, 4)) == (0.0573, 0.9555, 0.3508)
    assert round(correct.mean(), 4) == 0.7526
    # and calibkit's ledger reads the same held-out rows the same way
    ledger = ck.compare_calibration(
        ck.TemperatureScaling(),
        wrn["fit_logits"],
        wrn["fit_labels"],
        eval_scores=z,
        eval_labels=y,
        n_sims=50,
    )
    assert ledger.before["ECE"] == pytest.approx(ece, abs=1e-12)
    assert ledger.before["NLL"] == pytest.approx(nll, rel=1e-12)
    assert round(ledger.after["ECE"], 4) == 0.0405  # docs/repair.md's temperature row
