"""examples/score_decomposition.py prints docs/repair.md's table of CORP decompositions, and its
numbers agree with an isotonic fit computed here by scikit-learn."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from example_loader import load_example

PAGE = Path(__file__).resolve().parents[2] / "docs" / "repair.md"


@pytest.fixture(scope="module")
def example():
    return load_example("score_decomposition")


@pytest.fixture(scope="module")
def rows(example):
    return [example.row(*model) for model in example.models()]


def test_the_page_shows_the_table_the_script_prints(example, rows):
    assert example.markdown(rows) in PAGE.read_text(encoding="utf-8")


def test_brier_miscalibration_against_scikit_learn_isotonic(example, rows):
    sklearn = pytest.importorskip("sklearn.isotonic")
    name, conf, outcome = next(m for m in example.models() if m[0].startswith("WRN-16-4"))
    fit = sklearn.IsotonicRegression(y_min=0, y_max=1).fit(conf, outcome).predict(conf)
    brier, recalibrated = np.mean((conf - outcome) ** 2), np.mean((fit - outcome) ** 2)
    row = next(r for r in rows if r["model"] == name)
    assert row["brier"] == pytest.approx(brier, rel=1e-12)
    assert row["brier_mcb"] == pytest.approx(brier - recalibrated, rel=1e-9)


def test_an_infinite_log_loss_is_explained_by_certain_wrong_forecasts(rows):
    for r in rows:
        assert np.isfinite(r["log_loss"]) == (r["certain_and_wrong"] == 0), r["model"]
