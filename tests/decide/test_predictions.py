"""decide_predictions: every threshold chosen on one split of a prediction file's rows and
reported on the other, each part equal to the decide function called on those halves."""

from __future__ import annotations

import warnings

import numpy as np
import pyarrow as pa
import pytest

import calibkit as ck
from calibkit.decide import (
    binary_policy_table,
    choose_actions,
    decide_predictions,
    decision_report,
    guaranteed_threshold,
    policy_table,
)
from calibkit.io import read_predictions
from calibkit.recalibrate.split import stratified_split

rng = np.random.default_rng(7)
N = 600
P1 = rng.uniform(0.02, 0.98, N)
Y = (rng.uniform(size=N) < P1).astype(int)


def _probs():
    return read_predictions(pa.table({"prob_0": 1 - P1, "prob_1": P1, "label": Y}))


def _logits():
    z = np.log(P1 / (1 - P1))
    return read_predictions(pa.table({"logit_0": np.zeros(N), "logit_1": z, "label": Y}))


def _confidence(conf=None):
    conf = np.maximum(P1, 1 - P1) if conf is None else conf
    right = (rng.uniform(size=N) < conf).astype(int)
    return read_predictions(pa.table({"confidence": conf, "correct": right}))


def _halves(labels, seed=0):
    return stratified_split(labels, calibration_fraction=0.5, seed=seed)


def test_the_policy_table_of_probabilities_is_policy_tables_on_the_two_halves():
    preds = _probs()
    got = decide_predictions(preds, l_wrong=10, l_defer=1, seed=3)
    a, b = _halves(preds.labels, seed=3)
    want = policy_table(
        probs=preds.scores[a],
        labels=preds.labels[a],
        eval_probs=preds.scores[b],
        eval_labels=preds.labels[b],
        l_wrong=10,
        l_defer=1,
    )
    assert got.table.to_dict() == want.to_dict()
    assert got.split == {
        "calibration_fraction": 0.5,
        "seed": 3,
        "n_choose": a.size,
        "n_report": b.size,
        "stratified_by": "label",
    }
    assert a.size + b.size == N and got.actions is got.guarantee is got.binary is None


def test_logits_get_the_decision_report_with_temperature_scaling():
    preds = _logits()
    got = decide_predictions(preds, l_wrong=10, l_defer=1)
    a, b = _halves(preds.labels)
    s, y = preds.scores, preds.labels
    want = decision_report(s[a], y[a], s[b], y[b], l_wrong=10, l_defer=1)
    assert got.table.to_dict() == want.to_dict()
    assert "chow_calibrated" in [r.key for r in got.table.rows]


def test_three_actions_and_the_guarantee_are_chosen_on_one_half_and_judged_on_the_other():
    preds = _confidence()
    got = decide_predictions(
        preds, l_wrong=10, l_defer=2, l_ask=1, l_ask_wrong=4, target_risk=0.2, delta=0.1
    )
    a, b = _halves(preds.labels)
    c, o = preds.scores, preds.labels
    actions = choose_actions(c[a], o[a], l_wrong=10, l_defer=2, l_ask=1, l_ask_wrong=4)
    guarantee = guaranteed_threshold(c[a], o[a], target_risk=0.2, delta=0.1)
    assert got.actions.to_dict() == actions.evaluate(c[b], o[b]).to_dict()
    assert got.guarantee.to_dict() == guarantee.evaluate(c[b], o[b]).to_dict()
    assert got.split["stratified_by"] == "outcome" and got.target_risk == 0.2
    document = got.to_dict()
    assert document["actions"] == {
        **actions.to_dict(),
        "on_reporting_half": actions.evaluate(c[b], o[b]).to_dict(),
    }
    assert document["guarantee"]["threshold"] == guarantee.threshold
    assert list(document) == [
        "source",
        "kind",
        "split",
        "policy_table",
        "actions",
        "guarantee",
        "binary_policy",
    ]


def test_a_binary_models_threshold_on_p1():
    preds = read_predictions(pa.table({"p": P1, "label": Y}), probs="p", label="label")
    got = decide_predictions(preds, l_false_positive=1, l_false_negative=5)
    a, b = _halves(preds.labels)
    s, y = preds.scores, preds.labels
    want = binary_policy_table(s[a], y[a], s[b], y[b], l_false_positive=1, l_false_negative=5)
    assert got.binary.to_dict() == want.to_dict() and got.table is None
    assert got.binary.row("bayes").threshold == pytest.approx(1 / 6)  # l_fp / (l_fp + l_fn)


def test_binary_costs_need_a_binary_models_scores():
    with pytest.raises(ck.InputError, match=r"^decide: --false-positive-cost and .* gives a "):
        decide_predictions(_confidence(), l_false_positive=1, l_false_negative=5)
    three = np.stack([P1 / 2, P1 / 2, 1 - P1], axis=1)
    labels = rng.integers(0, 3, N)
    cols = {f"prob_{k}": three[:, k] for k in range(3)}
    preds = read_predictions(pa.table({**cols, "label": labels}))
    with pytest.raises(ck.InputError, match=r"need a binary model, but .* has 3 classes"):
        decide_predictions(preds, l_false_positive=1, l_false_negative=5)


def test_costs_are_checked_and_something_must_be_asked():
    preds = _probs()
    with pytest.raises(ck.InputError, match=r"^d: nothing to decide: pass l_wrong and l_defer"):
        decide_predictions(preds, where="d")
    with pytest.raises(ck.InputError, match=r"^d: l_ask and l_ask_wrong need l_wrong and l_defer"):
        decide_predictions(
            preds, l_ask=1, l_ask_wrong=2, l_false_positive=1, l_false_negative=2, where="d"
        )
    with pytest.raises(ck.InputError, match=r"^d: l_defer is required"):
        decide_predictions(preds, l_wrong=10, where="d")


def test_a_confidence_that_looks_like_p1_is_warned_about_once():
    low = np.where(np.arange(N) % 3 == 0, 0.01, 0.9)  # a third of the values below 0.05
    preds = _confidence(low)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        decide_predictions(preds, l_wrong=10, l_defer=1, target_risk=0.3)
    said = [str(w.message) for w in caught if "look like P(y = 1)" in str(w.message)]
    assert len(said) == 1
    assert said[0].startswith("decide: 33% of the confidences (200 of 600, first at index 0")
    assert "pass it with --probs COLUMN" in said[0]


def test_str_lists_what_was_decided():
    got = decide_predictions(_probs(), l_wrong=10, l_defer=1)
    text = str(got)
    assert text.startswith(f"decisions for {got.source}: chosen on 300 rows, reported on 300")
    assert str(got.table) in text
