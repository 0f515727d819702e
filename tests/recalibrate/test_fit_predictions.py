"""fit_predictions / fit_at_scale / check_clip: a calibrator set up for a prediction file's
scores, fitted and judged as compare_calibration does; the temperature fitted by an engine."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import calibkit as ck
from calibkit.io import read_predictions
from calibkit.recalibrate import PlattScaling, TemperatureScaling, compare_calibration
from calibkit.recalibrate.fit_predictions import check_clip, fit_at_scale, fit_predictions

rng = np.random.default_rng(11)
N = 1200
Z = rng.normal(-0.5, 2.0, N)
Y = (rng.uniform(size=N) < ck.sigmoid(Z)).astype(int)
FAST = {"n_sims": 100}


def test_logit_columns_are_fitted_as_logits_and_the_ledger_is_compare_calibrations():
    preds = read_predictions(pa.table({"logit_1": 3 * Z, "label": Y}))
    got = fit_predictions(preds, "temperature", seed=2, **FAST)
    want = compare_calibration(TemperatureScaling(), 3 * Z, Y, from_logits=True, seed=2, **FAST)
    assert got.to_dict() == want.to_dict()
    assert got.calibrator.temperature_ == pytest.approx(3.0, rel=0.25)  # the logits were 3 z


def test_probability_columns_go_to_the_map_as_probabilities_and_clip_is_saved():
    p = ck.sigmoid(Z)
    p[:3] = [0.0, 1.0, 0.0]  # exact 0 and 1: refused by Platt's logs unless clipped
    preds = read_predictions(pa.table({"p": p, "label": Y}), probs="p", label="label")
    with pytest.raises(ck.InputError, match=r"infinite for a probability of exactly 0 or 1; 3 "):
        fit_predictions(preds, "platt", **FAST)
    with pytest.warns(ck.CalibkitWarning):
        got = fit_predictions(preds, "platt", clip=1e-6, **FAST)
    params = got.calibrator.get_params()
    assert params["from_logits"] is False and params["clip"] == 1e-6
    want_map = PlattScaling(from_logits=False, clip=1e-6)
    with pytest.warns(ck.CalibkitWarning):
        want = compare_calibration(want_map, p, Y, from_logits=False, **FAST)
    assert got.to_dict() == want.to_dict()


def test_a_calibrator_given_is_copied_not_changed():
    preds = read_predictions(pa.table({"p": ck.sigmoid(Z), "label": Y}), probs="p", label="label")
    mine = PlattScaling()
    got = fit_predictions(preds, mine, **FAST)
    assert mine.get_params()["from_logits"] is True and not mine.is_fitted
    assert got.calibrator.get_params()["from_logits"] is False


def test_clip_goes_with_a_map_that_takes_logs_of_probabilities():
    with pytest.raises(
        ck.InputError,
        match=r"^fit: --clip moves probabilities away from 0 and 1 before a map takes their "
        r"logs; isotonic uses probabilities as they are \(0 and 1 included\) and needs none\. "
        r"Leave out --clip\.$",
    ):
        check_clip("isotonic", {}, "probs", "p.csv")
    with pytest.raises(ck.InputError, match=r"^w: .* but p\.csv gives logits, which need none"):
        check_clip("platt", {"clip": None}, "logits", "p.csv", where="w")
    check_clip("platt", {"clip": None}, "probs", "p.csv")  # a map that takes logs: no error
    preds = read_predictions(pa.table({"logit_1": Z, "label": Y}))
    with pytest.raises(ck.InputError, match="gives logits, which need none"):
        fit_predictions(preds, "platt", clip=1e-6, **FAST)


def test_logit_columns_that_look_like_probabilities_are_refused_unless_insisted():
    preds = read_predictions(pa.table({"logit_1": ck.sigmoid(Z), "label": Y}))
    with pytest.raises(ck.InputError, match=r"lies in \[0, 1\] .*: these look like probabilities"):
        fit_predictions(preds, "temperature", **FAST)
    got = fit_predictions(preds, "temperature", check_logits=False, **FAST)
    assert got.calibrator.get_params()["check_logits"] is False


def test_fit_at_scale_gives_the_in_memory_temperature(tmp_path):
    logits = np.stack([np.zeros(N), 3 * Z], axis=1)
    path = tmp_path / "log.parquet"
    pq.write_table(pa.table({"logit_0": logits[:, 0], "logit_1": logits[:, 1], "label": Y}), path)
    got = fit_at_scale(str(path), engine="duckdb", columns={})
    expected = ck.fit_temperature(logits, Y)
    assert got.temperature == pytest.approx(expected, rel=1e-9)
    document = got.to_dict()
    assert list(document) == [
        "method",
        "engine",
        "temperature",
        "nll_before",
        "nll_after",
        "gradient",
        "n_evaluations",
        "converged",
    ]
    assert document["method"] == "temperature" and document["engine"] == "duckdb"
    assert document["nll_before"] == pytest.approx(ck.nll(ck.softmax(logits), Y), rel=1e-9)
    assert document["nll_after"] == pytest.approx(
        ck.nll(ck.softmax(logits / expected), Y), rel=1e-9
    )
    assert str(got).startswith(f"T = {expected:.6g} fitted with engine duckdb (")
