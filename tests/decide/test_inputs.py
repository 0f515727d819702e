"""The two input forms of every decide function: (confidence, outcome) positionally, or
probs=, labels= (reduced to acting on the predicted class); both, neither or half of one is
refused, a 2-D confidence points to probs=, and a P(y = 1) passed as a confidence warns."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from breast_cancer import malignancy

import calibkit as ck
from calibkit.decide.actions import choose_actions
from calibkit.decide.guarantee import guaranteed_threshold
from calibkit.decide.policy import policy_table

ACTIONS = {"l_wrong": 9, "l_defer": 3, "l_ask": 1, "l_ask_wrong": 5}


def brute_force_threshold(conf, right, l_wrong, l_defer):
    """Every observed confidence and "above all", cost per case worked out directly; the
    cheapest, ties to the lower threshold (acting on more)."""
    best = (l_defer, np.inf)  # act on nothing
    for t in np.unique(conf)[::-1]:
        acted = conf >= t
        cost = (np.sum(acted & ~right) * l_wrong + np.sum(~acted) * l_defer) / conf.size
        if cost <= best[0]:
            best = (cost, t)
    return best


# ----------------------------------------------------------------------------- the case


def test_breast_cancer_keyword_form_gives_the_top_label_answer():
    """P(malignant) and labels of a LogisticRegression, costs 20 / 1: probs=, labels= acts on
    the predicted class (confidence max(p, 1 - p), right when (p >= 0.5) == y)."""
    d = malignancy()
    p, y = d["p_val"], d["y_val"]
    conf, right = np.maximum(p, 1 - p), (p >= 0.5) == (y == 1)
    cost, threshold = brute_force_threshold(conf, right, 20, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the keyword form does not warn
        c = ck.choose_threshold(probs=p, labels=y, l_wrong=20, l_defer=1)
    assert c.threshold == threshold
    assert c.n_acted == int(np.sum(conf >= threshold))
    assert c.cost == pytest.approx(cost, abs=1e-12)
    assert c.coverage > 0.8  # most of the model's predictions are confident and right


def test_breast_cancer_positional_form_warns_and_names_the_share():
    d = malignancy()
    p, y = d["p_val"], d["y_val"]
    share = np.mean(p < 0.05)
    assert share >= 0.1  # half of the cases are benign with P(malignant) near 0
    with pytest.warns(ck.CalibkitWarning, match="pass probs=p, labels=y") as record:
        wrong = ck.choose_threshold(p, y, 20, 1)
    message = str(record[0].message)
    assert f"{share:.0%} of the confidences ({np.sum(p < 0.05)} of {p.size}" in message
    assert record[0].filename == __file__  # points at the caller's line
    right = ck.choose_threshold(probs=p, labels=y, l_wrong=20, l_defer=1)
    assert wrong.n_acted < right.n_acted / 2  # read as correctness, P(malignant) acts on few


# ----------------------------------------------------------------------------- every function


def _binary_case():
    rng = np.random.default_rng(4)
    p = ck.sigmoid(rng.normal(0, 4, 400))  # about a fifth below 0.05
    y = (rng.random(400) < p).astype(int)
    return p, y, np.maximum(p, 1 - p), ((p >= 0.5) == (y == 1)).astype(int)


def test_every_function_reads_probs_and_labels_as_the_predicted_class():
    p, y, conf, right = _binary_case()
    rc_kw, rc_pos = ck.risk_coverage(probs=p, labels=y), ck.risk_coverage(conf, right)
    assert np.array_equal(rc_kw.risk, rc_pos.risk, equal_nan=True) and rc_kw.aurc == rc_pos.aurc
    assert ck.choose_threshold(probs=p, labels=y, l_wrong=10, l_defer=1) == ck.choose_threshold(
        conf, right, 10, 1
    )
    assert choose_actions(probs=p, labels=y, **ACTIONS) == choose_actions(conf, right, **ACTIONS)
    g = guaranteed_threshold(probs=p, labels=y, target_risk=0.2)
    assert g == guaranteed_threshold(conf, right, target_risk=0.2)
    kw = policy_table(
        probs=p[:200],
        labels=y[:200],
        eval_probs=p[200:],
        eval_labels=y[200:],
        l_wrong=10,
        l_defer=1,
    )
    pos = policy_table(conf[:200], right[:200], conf[200:], right[200:], l_wrong=10, l_defer=1)
    assert kw.rows == pos.rows


def test_two_dimensional_probs_and_logits_are_read_top_label():
    rng = np.random.default_rng(5)
    z = rng.normal(0, 2, (300, 4))
    y = rng.integers(0, 4, 300)
    probs = ck.softmax(z)
    conf, right = probs.max(axis=1), probs.argmax(axis=1) == y
    cost, threshold = brute_force_threshold(conf, right, 10, 1)
    c = ck.choose_threshold(probs=probs, labels=y, l_wrong=10, l_defer=1)
    assert (c.threshold, c.cost) == (pytest.approx(threshold), pytest.approx(cost))
    from_logits = ck.choose_threshold(probs=z, labels=y, l_wrong=10, l_defer=1, from_logits=True)
    assert from_logits.n_acted == c.n_acted and from_logits.cost == pytest.approx(c.cost)


def test_evaluate_takes_either_form():
    p, y, conf, right = _binary_case()
    choice = choose_actions(conf[:200], right[:200], **ACTIONS)
    assert choice.evaluate(probs=p[200:], labels=y[200:]) == choice.evaluate(
        conf[200:], right[200:]
    )
    g = guaranteed_threshold(conf[:200], right[:200], target_risk=0.2)
    assert g.evaluate(probs=p[200:], labels=y[200:]) == g.evaluate(conf[200:], right[200:])


# ----------------------------------------------------------------------------- the warning


def test_the_warning_starts_at_ten_percent_below_0_05():
    right = np.ones(100, dtype=int)
    at_ten = np.r_[np.full(10, 0.04), np.full(90, 0.9)]
    with pytest.warns(ck.CalibkitWarning, match=r"risk_coverage: 10% of the confidences \(10 of"):
        ck.risk_coverage(at_ten, right)
    below = np.r_[np.full(9, 0.04), np.full(91, 0.9)]
    exactly = np.r_[np.full(10, 0.05), np.full(90, 0.9)]  # 0.05 is not below 0.05
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ck.risk_coverage(below, right)
        ck.risk_coverage(exactly, right)


@pytest.mark.parametrize(
    "call",
    [
        lambda c, o: ck.choose_threshold(c, o, 10, 1),
        lambda c, o: choose_actions(c, o, **ACTIONS),
        lambda c, o: guaranteed_threshold(c, o, target_risk=0.2),
        lambda c, o: policy_table(c, o, c, o, l_wrong=10, l_defer=1),
    ],
)
def test_every_function_warns_on_a_probability_of_class_one(call):
    p, y, _, _ = _binary_case()
    with pytest.warns(ck.CalibkitWarning, match="look like P\\(y = 1\\)"):
        call(p, y)


def test_policy_table_warns_once_per_split():
    p, y, _, _ = _binary_case()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        policy_table(p, y, p, y, l_wrong=10, l_defer=1)
    wheres = [str(w.message).split(":")[0] for w in caught]
    assert wheres == ["policy_table (validation)", "policy_table (test)"]


# ----------------------------------------------------------------------------- refused


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (
            {"confidence": [0.9], "outcome": [1], "probs": [0.9], "labels": [1]},
            r"choose_threshold: pass either \(confidence, outcome\).*; not both",
        ),
        ({}, r"choose_threshold: nothing to decide on; pass either \(confidence, outcome\)"),
        ({"probs": [0.9, 0.2]}, "choose_threshold: probs= and labels= go together; labels="),
        ({"labels": [1, 0]}, "choose_threshold: probs= and labels= go together; probs="),
        ({"confidence": [0.9]}, "choose_threshold: confidence and outcome go together"),
        (
            {"confidence": [0.9], "outcome": [1], "from_logits": True},
            "from_logits=True reads probs= as logits",
        ),
        (
            {"probs": [0.9], "labels": [1], "from_logits": 1},
            "from_logits must be True or False",
        ),
    ],
)
def test_forms_mixed_or_missing(kwargs, match):
    with pytest.raises(ck.InputError, match=match):
        ck.choose_threshold(l_wrong=10, l_defer=1, **kwargs)


def test_a_two_dimensional_confidence_points_to_probs():
    probs = [[0.7, 0.3], [0.2, 0.8]]
    for call, where in [
        (lambda: ck.choose_threshold(probs, [0, 1], 10, 1), "choose_threshold"),
        (lambda: ck.risk_coverage(probs, [0, 1]), "risk_coverage"),
        (lambda: choose_actions(probs, [0, 1], **ACTIONS), "choose_actions"),
        (lambda: guaranteed_threshold(probs, [0, 1], target_risk=0.1), "guaranteed_threshold"),
    ]:
        with pytest.raises(
            ck.InputError, match=rf"{where}: confidence is 2-D \(shape \(2, 2\)\).*pass probs="
        ):
            call()
    with pytest.raises(ck.InputError, match=r"policy_table \(validation\): confidence is 2-D"):
        policy_table(probs, [0, 1], [0.9], [1], l_wrong=10, l_defer=1)


def test_class_labels_as_outcome_point_to_probs_and_labels():
    with pytest.raises(
        ck.InputError,
        match=r"choose_threshold: outcome must be 0 or 1 .*first at index 2: 2\. If these are "
        r"class labels 0\.\.C-1, pass the class probabilities and the labels instead: probs=",
    ):
        ck.choose_threshold([0.9, 0.8, 0.7], [1, 0, 2], 10, 1)


def test_keyword_form_checks_its_labels():
    with pytest.raises(ck.InputError, match="choose_threshold: labels must be 0 or 1"):
        ck.choose_threshold(probs=[0.9, 0.2], labels=[1, 2], l_wrong=10, l_defer=1)
    with pytest.raises(ck.InputError, match=r"choose_threshold: labels must lie in 0\.\.2"):
        ck.choose_threshold(probs=[[0.8, 0.1, 0.1]], labels=[3], l_wrong=10, l_defer=1)


def test_costs_are_required_by_name_in_the_keyword_form():
    with pytest.raises(ck.InputError, match="choose_threshold: l_wrong is required"):
        ck.choose_threshold(probs=[0.9], labels=[1])
