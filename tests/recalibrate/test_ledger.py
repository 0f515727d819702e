"""compare_calibration: the BEFORE/AFTER ledger on held-out rows."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

import calibkit as ck
from calibkit.recalibrate.base import Calibrator
from calibkit.recalibrate.ledger import INSTRUMENTS, CalibrationLedger, compare_calibration

EXAMPLES = Path(__file__).parents[2] / "examples" / "data"
FAST = {"n_sims": 200}

SIX_LOGITS = np.array(
    [[3, 1, 0], [2.5, 1, 0], [3, 0.5, 0], [1.5, 2, 0], [0.5, 0, 1.5], [2, 2.2, 0]], dtype=float
)
SIX_LABELS = np.array([0, 0, 1, 1, 2, 0])


def overconfident_multiclass(n: int = 1500, c: int = 4, seed: int = 0):
    """Labels drawn from softmax(z); the model reports 3 z: overconfident, T near 3."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 1.5, (n, c))
    p = ck.softmax(z)
    y = (p.cumsum(axis=1) < rng.random((n, 1))).sum(axis=1)
    return 3.0 * z, y


def overconfident_binary(n: int = 1200, seed: int = 0):
    rng = np.random.default_rng(seed)
    s = rng.normal(-1.0, 2.0, n)
    y = (rng.random(n) < ck.sigmoid(s)).astype(int)
    return 3.0 * s, y


# ----------------------------------------------------------------------------- temperature


def test_temperature_ledger_on_an_overconfident_multiclass_model():
    z, y = overconfident_multiclass()
    ledger = compare_calibration(ck.TemperatureScaling(), z, y, **FAST)
    assert isinstance(ledger, CalibrationLedger)
    assert (ledger.design, ledger.kind, ledger.n_classes, ledger.scores) == (
        "split",
        "multiclass",
        4,
        "logits",
    )
    assert ledger.n_fit + ledger.n_eval == ledger.n == 1500
    assert 2.0 < ledger.parameters["temperature"] < 4.5
    before, after = ledger.before, ledger.after
    assert after["NLL"] < before["NLL"]  # on rows the map never saw
    assert after["ECE"] < before["ECE"]
    assert after["accuracy"] == before["accuracy"]  # exactly: no argmax moved
    assert ledger.invariance.ok and ledger.invariance.kind == "multiclass"
    acc, auc = ledger.row("accuracy"), ledger.row("AUC")
    assert acc.guaranteed and acc.moved is False and acc.can_move.startswith("never")
    assert not auc.guaranteed  # the top-label confidence order across rows can change
    assert ledger.broken_guarantees == ()


def test_the_ledger_judges_the_map_fitted_on_the_calibration_split():
    z, y = overconfident_multiclass()
    ledger = compare_calibration(ck.TemperatureScaling(), z, y, seed=3, **FAST)
    cal, held = ck_split(y, seed=3)
    ts = ck.TemperatureScaling().fit(z[cal], y[cal])
    assert ledger.calibrator.temperature_ == ts.temperature_
    assert ledger.after["NLL"] == ck.nll(ts.predict_proba(z[held]), y[held])
    assert ledger.before["NLL"] == ck.nll(z[held], y[held], from_logits=True)
    assert ledger.parameters == ts.to_dict()["state"]
    assert "calibration split (750 of 1500 rows, 50% of each class, seed 3)" in ledger.fitted_on


def ck_split(y, seed):
    from calibkit.recalibrate.split import stratified_split

    return stratified_split(y, seed=seed)


def test_binary_temperature_keeps_accuracy_and_auc_bit_identical():
    s, y = overconfident_binary()
    ledger = compare_calibration(ck.TemperatureScaling(), s, y, **FAST)
    assert ledger.kind == "binary" and ledger.parameters["temperature"] > 1.0
    for name in ("accuracy", "AUC"):
        row = ledger.row(name)
        assert row.guaranteed and row.before == row.after, name
    assert ledger.invariance.ok
    assert ledger.invariance.names == ("order", "decisions", "accuracy", "auc")
    assert ledger.after["NLL"] < ledger.before["NLL"]
    assert ledger.row("NLL").can_move == "yes: the fitting objective"


def test_the_calibrator_passed_in_is_not_fitted():
    s, y = overconfident_binary(300)
    ts = ck.TemperatureScaling(method="golden")
    ledger = compare_calibration(ts, s, y, **FAST)
    assert not ts.is_fitted and ledger.calibrator.is_fitted
    assert ledger.calibrator.method == "golden"


def test_cross_fit_ledger():
    s, y = overconfident_binary(300)
    ledger = compare_calibration(ck.TemperatureScaling(), s, y, folds=5, **FAST)
    assert ledger.design == "cross-fit" and ledger.folds == 5 and ledger.n_eval == 300
    assert ledger.fold_parameters is not None and len(ledger.fold_parameters) == 5
    # the kept map is fitted on all rows
    assert ledger.calibrator.temperature_ == ck.fit_temperature(s, y)
    # decisions are row-wise: still guaranteed; the order across folds is not
    assert ledger.row("accuracy").guaranteed and not ledger.row("accuracy").moved
    assert not ledger.row("AUC").guaranteed
    assert ledger.row("AUC").can_move == "yes: one map per fold"
    assert ledger.invariance["decisions"].held
    assert "out-of-fold" in ledger.fitted_on and "per fold: temperature = " in str(ledger)


def test_separate_evaluation_set_densenet():
    data = np.load(EXAMPLES / "densenet40_cifar10_logits.npz")
    ledger = compare_calibration(
        ck.TemperatureScaling(),
        data["val_logits"],
        data["val_labels"],
        eval_scores=data["test_logits"],
        eval_labels=data["test_labels"],
        **FAST,
    )
    assert ledger.design == "given" and (ledger.n_fit, ledger.n_eval) == (5000, 10000)
    assert ledger.calibrator.temperature_ == ck.fit_temperature(
        data["val_logits"], data["val_labels"]
    )
    assert ledger.after["NLL"] < ledger.before["NLL"]
    assert ledger.after["ECE"] < ledger.before["ECE"]
    assert ledger.after["accuracy"] == ledger.before["accuracy"]


def test_six_predictions_in_sample():
    """Six worked predictions, fitted and reported on the same rows (optimistic, and said
    so): the ledger reproduces their numbers when given them as the evaluation set."""
    ledger = compare_calibration(
        ck.TemperatureScaling(),
        SIX_LOGITS,
        SIX_LABELS,
        eval_scores=SIX_LOGITS,
        eval_labels=SIX_LABELS,
        n_bins=4,
        **FAST,
    )
    assert round(ledger.parameters["temperature"], 5) == 1.22975
    assert round(ledger.before["NLL"], 5) == 0.82278 and round(ledger.after["NLL"], 5) == 0.81243
    assert ledger.before["accuracy"] == ledger.after["accuracy"] == 4 / 6
    # six rows are too few to split: class 2 has one row
    with pytest.raises(ck.InputError, match="class 2 has only 1"):
        compare_calibration(ck.TemperatureScaling(), SIX_LOGITS, SIX_LABELS, **FAST)


def test_probabilities_are_taken_as_they_are():
    z, y = overconfident_multiclass(600)
    p = ck.softmax(z)
    ledger = compare_calibration(
        ck.TemperatureScaling(from_logits=False), p, y, from_logits=False, **FAST
    )
    assert ledger.scores == "probabilities" and ledger.invariance.ok
    reference = compare_calibration(ck.TemperatureScaling(), z, y, **FAST)
    assert ledger.parameters["temperature"] == pytest.approx(
        reference.parameters["temperature"], rel=1e-6
    )


def test_logit_and_probability_settings_must_agree():
    z, y = overconfident_multiclass(200)
    with pytest.raises(ck.InputError, match=r"from_logits=False says the scores are probabilities"):
        compare_calibration(ck.TemperatureScaling(), ck.softmax(z), y, from_logits=False)
    with pytest.raises(ck.InputError, match=r"from_logits=True says the scores are logits"):
        compare_calibration(ck.TemperatureScaling(from_logits=False), z, y)
    with pytest.raises(ck.InputError, match=r"scores must lie in \[0, 1\]"):
        compare_calibration(ck.TemperatureScaling(from_logits=False), z, y, from_logits=False)


# ----------------------------------------------------------------------------- a map that moves


class SwapFirstTwo(Calibrator):
    """Not a calibration map at all: swaps classes 0 and 1 (changes argmaxes on purpose)."""

    def __init__(self) -> None:
        pass

    def fit(self, scores, labels):
        self.n_classes_ = np.asarray(scores).shape[1]
        return self

    def predict_proba(self, scores):
        z = np.asarray(scores, dtype=float)
        return ck.softmax(z[:, [1, 0, *range(2, z.shape[1])]])

    def _state(self):
        return {"n_classes": self.n_classes_}

    def _set_state(self, state):
        self.n_classes_ = state["n_classes"]


def test_a_map_that_moves_argmaxes_is_reported():
    z, y = overconfident_multiclass(400)
    ledger = compare_calibration(SwapFirstTwo(), z, y, **FAST)
    assert ledger.method == "SwapFirstTwo"  # no kind: named by its class
    acc = ledger.row("accuracy")
    assert not acc.guaranteed and acc.moved and acc.can_move == "yes: no known guarantee"
    assert ledger.invariance.moved == ("argmax", "accuracy")
    assert ledger.invariance["argmax"].changed > 0


def test_a_broken_guarantee_is_flagged_in_the_table():
    s, y = overconfident_binary(300)
    ledger = compare_calibration(ck.TemperatureScaling(), s, y, **FAST)
    rows = tuple(
        dataclasses.replace(r, after=0.5) if r.instrument == "AUC" else r for r in ledger.rows
    )
    broken = dataclasses.replace(ledger, rows=rows)
    assert broken.broken_guarantees == ("AUC",)
    assert "but it MOVED" in str(broken)


# ----------------------------------------------------------------------------- output


def test_str_is_the_before_after_table():
    s, y = overconfident_binary(300)
    text = str(compare_calibration(ck.TemperatureScaling(), s, y, **FAST))
    lines = text.splitlines()
    assert lines[0] == "calibration ledger: TemperatureScaling (temperature) on binary scores"
    header = lines[2].split()
    assert header[:2] == ["instrument", "what"] and "BEFORE" in header and "AFTER" in header
    assert lines[2].endswith("can the map move it?")
    for name, can in [
        ("ECE", "yes: the target"),
        ("NLL", "yes: the fitting objective"),
        ("Brier", "yes, either direction"),
        ("accuracy", "never (sign-preserving)"),
        ("AUC", "never (order-preserving)"),
    ]:
        line = next(x for x in lines if x.startswith(name + " "))
        assert line.endswith(can), line
    assert "  floor" in text and "fitted parameters: temperature = " in text
    assert "invariance check on 150 binary forecasts: nothing moved" in text


def test_to_dict_is_json_ready():
    s, y = overconfident_binary(300)
    data = compare_calibration(ck.TemperatureScaling(), s, y, **FAST).to_dict()
    again = json.loads(json.dumps(data, allow_nan=False))
    assert [r["instrument"] for r in again["rows"]] == list(INSTRUMENTS)
    assert again["design"] == "split" and again["calibration_fraction"] == 0.5
    assert again["invariance"]["ok"] is True
    assert set(again["noise_floor"]) == {"before", "after"}
    assert again["parameters"]["temperature"] > 1


# ----------------------------------------------------------------------------- bad input


def test_bad_input_is_an_input_error():
    s, y = overconfident_binary(100)
    with pytest.raises(ck.InputError, match="pass a calibrator instance, such as"):
        compare_calibration(ck.TemperatureScaling, s, y)
    with pytest.raises(ck.InputError, match="calibrator must be a calibkit calibrator"):
        compare_calibration(object(), s, y)
    with pytest.raises(ck.InputError, match="labels has 99 entries"):
        compare_calibration(ck.TemperatureScaling(), s, y[:99])
    with pytest.raises(ck.InputError, match="pass eval_scores and eval_labels together"):
        compare_calibration(ck.TemperatureScaling(), s, y, eval_scores=s)
    with pytest.raises(ck.InputError, match="does not combine with a separate evaluation"):
        compare_calibration(ck.TemperatureScaling(), s, y, folds=3, eval_scores=s, eval_labels=y)
    with pytest.raises(ck.InputError, match="folds must be an integer >= 2"):
        compare_calibration(ck.TemperatureScaling(), s, y, folds=1)
    with pytest.raises(ck.InputError, match="scores must be finite"):
        compare_calibration(ck.TemperatureScaling(), np.where(s > 0, np.nan, s), y)


class Hard(Calibrator):
    """Outputs exactly 0 or 1: the NLL of a wrong row is infinite."""

    def __init__(self) -> None:
        pass

    def fit(self, scores, labels):
        self.fitted_ = True
        return self

    def predict_proba(self, scores):
        return (np.asarray(scores) >= 0).astype(float)

    def _state(self):
        return {}

    def _set_state(self, state):
        self.fitted_ = True


def test_an_infinite_nll_after_is_warned_about_and_json_ready():
    s, y = overconfident_binary(300)
    with pytest.warns(
        ck.CalibkitWarning, match=r"Hard gives \d+ held-out rows probability exactly 0"
    ):
        ledger = compare_calibration(Hard(), s, y, **FAST)
    assert ledger.after["NLL"] == np.inf
    assert ledger.row("NLL").to_dict()["after"] is None
    json.dumps(ledger.to_dict(), allow_nan=False)
    assert "inf" in str(ledger)
