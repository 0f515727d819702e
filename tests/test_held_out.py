"""held_out_audits: the BEFORE/AFTER audits of the rows a ledger held out, equal to ck.audit of
those rows (redrawn from the ledger's split) before and after its map."""

from __future__ import annotations

import numpy as np
import pytest

import calibkit as ck
from calibkit.held_out import held_out_audits
from calibkit.recalibrate import TemperatureScaling, compare_calibration, stratified_split

rng = np.random.default_rng(4)
N, C = 900, 3
Z = rng.normal(0, 1.5, (N, C))
Y = (ck.softmax(Z).cumsum(axis=1) < rng.random((N, 1))).sum(axis=1)
FAST = {"n_boot": 50, "n_sims": 50}


def test_the_audits_are_those_of_the_held_out_rows_before_and_after_the_map():
    ledger = compare_calibration(
        TemperatureScaling(), 2 * Z, Y, from_logits=True, calibration_fraction=0.4, seed=5
    )
    got = held_out_audits(ledger, 2 * Z, Y, from_logits=True, n_bins=10, **FAST)
    _, held = stratified_split(Y, calibration_fraction=0.4, seed=5)
    x, y = 2 * Z[held], Y[held]
    before = ck.audit(x, y, from_logits=True, n_bins=10, seed=5, **FAST)
    after = ck.audit(ck.softmax(x / ledger.calibrator.temperature_), y, n_bins=10, seed=5, **FAST)
    assert got.before.to_dict() == before.to_dict()
    assert got.after.ece == pytest.approx(after.ece, rel=1e-12)
    assert got.before.n == got.after.n == held.size == ledger.n_eval
    assert got.to_dict()["before"] == before.to_dict()
    assert str(got).splitlines()[0] == f"BEFORE: {before.verdict()}"


def test_no_audits_when_the_ledger_did_not_hold_out_rows_by_one_split():
    folds = compare_calibration(TemperatureScaling(), Z, Y, from_logits=True, folds=3, n_sims=50)
    none = held_out_audits(folds, Z, Y, from_logits=True, **FAST)
    assert none.before is None and none.after is None
    assert none.to_dict() == {"before": None, "after": None}
    split = compare_calibration(TemperatureScaling(), Z, Y, from_logits=True, n_sims=50)
    other = held_out_audits(split, Z[:600], Y[:600], from_logits=True, **FAST)  # not its data
    assert other.before is None and other.after is None
