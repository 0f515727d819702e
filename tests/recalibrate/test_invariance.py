"""check_invariance: exact comparisons of what a map must not change, and what moved."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import calibkit as ck
from calibkit.recalibrate.invariance import check_invariance

# Six worked predictions: T = 1.22975, accuracy 4/6 at every temperature.
SIX_LOGITS = np.array(
    [[3, 1, 0], [2.5, 1, 0], [3, 0.5, 0], [1.5, 2, 0], [0.5, 0, 1.5], [2, 2.2, 0]], dtype=float
)
SIX_LABELS = np.array([0, 0, 1, 1, 2, 0])


def overconfident_binary(n: int = 126, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A link-predictor-like scorer whose probabilities sigma(s) are pushed too far from 1/2."""
    rng = np.random.default_rng(seed)
    s = rng.normal(-2.0, 2.0, n)
    y = (rng.random(n) < ck.sigmoid(s)).astype(int)
    return 3.0 * s, y


# ----------------------------------------------------------------------------- maps that keep


def test_temperature_of_binary_scores_keeps_order_auc_and_decisions_bit_identically():
    s, y = overconfident_binary()
    ts = ck.TemperatureScaling().fit(s, y)
    assert ts.temperature_ > 1.0  # overconfident: tau > 1 softens
    p_before, p_after = ck.sigmoid(s), ts.predict_proba(s)
    report = check_invariance(p_before, p_after, labels=y)
    assert report.ok and report.moved == ()
    assert report.kind == "binary"
    assert report.names == ("order", "decisions", "accuracy", "auc")
    # the same exact asserts as examples/knowledge_graph_audit.py
    assert np.array_equal(p_before >= 0.5, p_after >= 0.5)
    assert np.array_equal(np.argsort(p_before, kind="stable"), np.argsort(p_after, kind="stable"))
    assert report["auc"].before == report["auc"].after == ck.auc(p_before, y)
    assert report["accuracy"].before == report["accuracy"].after


def test_softmax_temperature_keeps_argmax_on_six_predictions():
    ts = ck.TemperatureScaling().fit(SIX_LOGITS, SIX_LABELS)
    assert round(ts.temperature_, 5) == 1.22975
    report = check_invariance(
        ck.softmax(SIX_LOGITS), ts.predict_proba(SIX_LOGITS), labels=SIX_LABELS
    )
    assert report.ok
    assert report.kind == "multiclass" and report.n_classes == 3
    assert report.names == ("argmax", "accuracy")
    assert report["argmax"].changed == 0 and report["argmax"].first is None
    assert report["accuracy"].before == report["accuracy"].after == 4 / 6


@settings(max_examples=60, deadline=None)
@given(
    z=arrays(np.float64, (20, 4), elements=st.integers(-40, 40).map(lambda k: k / 4)),
    t=st.floats(0.05, 20.0),
)
def test_any_temperature_never_changes_an_argmax(z, t):
    report = check_invariance(ck.softmax(z), ck.softmax(z / t))
    assert report.ok, str(report)


def test_logits_can_be_compared_with_threshold_zero():
    s, y = overconfident_binary()
    report = check_invariance(s, s / 2.5, labels=y, threshold=0.0)
    assert report.ok and report.threshold == 0.0


# ----------------------------------------------------------------------------- maps that move


def test_changed_argmax_is_counted_with_its_first_row():
    p = ck.softmax(SIX_LOGITS)
    q = p.copy()
    q[[1, 4]] = q[[1, 4]][:, [1, 0, 2]]  # rows 1 and 4 swap classes 0 and 1
    report = check_invariance(p, q, labels=SIX_LABELS)
    assert not report.ok
    argmax = report["argmax"]
    assert (argmax.held, argmax.changed, argmax.first) == (False, 1, 1)  # row 4's argmax is 2
    assert report.moved == ("argmax", "accuracy")
    assert report["accuracy"].before == 4 / 6 and report["accuracy"].after == 3 / 6
    assert "MOVED: 1 rows differ, first at row 1" in str(report)


def test_changed_order_and_decision_are_counted():
    before = np.array([0.1, 0.2, 0.3, 0.9, 0.6])
    after = np.array([0.1, 0.3, 0.2, 0.4, 0.6])  # rows 1 and 2 swap; row 3 drops below 0.5
    y = np.array([0, 1, 0, 1, 1])
    report = check_invariance(before, after, labels=y)
    order, decisions = report["order"], report["decisions"]
    # sorted order before: 0 1 2 4 3; after: 0 2 1 3 4 -> positions 1, 2, 3, 4 differ
    assert (order.held, order.changed, order.first) == (False, 4, 1)
    assert (decisions.held, decisions.changed, decisions.first) == (False, 1, 3)
    assert report["accuracy"].before == 0.8 and report["accuracy"].after == 0.6
    assert report["auc"].before == 5 / 6 and report["auc"].after == 1.0  # 0.3 now above 0.2
    assert report.moved == ("order", "decisions", "accuracy", "auc")


def test_ties_created_by_a_flat_map_are_named():
    before = np.array([0.1, 0.3, 0.2, 0.8])
    after = np.array([0.25, 0.25, 0.25, 0.8])  # a flat step ties the three lowest
    report = check_invariance(before, after)
    assert not report["order"].held
    assert "4 distinct values before, 2 after" in report["order"].note
    assert report["decisions"].held


def test_auc_is_skipped_when_one_class_is_missing():
    report = check_invariance([0.2, 0.7], [0.3, 0.6], labels=[1, 1])
    assert "auc" not in report and "accuracy" in report


def test_report_is_json_ready_and_readable():
    p = ck.softmax(SIX_LOGITS)
    report = check_invariance(p, p[:, [1, 0, 2]], labels=SIX_LABELS)
    data = json.loads(json.dumps(report.to_dict(), allow_nan=False))
    assert data["ok"] is False and data["moved"] == ["argmax", "accuracy"]
    assert data["checks"][0]["changed"] == 5
    text = str(report)
    assert text.startswith("invariance check on 6 rows of 3-class probabilities: moved:")
    with pytest.raises(KeyError, match="no check 'auc'"):
        report["auc"]


# ----------------------------------------------------------------------------- bad input


def test_shape_mismatch_is_an_input_error():
    with pytest.raises(ck.InputError, match=r"before has shape \(6, 3\) but after has shape"):
        check_invariance(ck.softmax(SIX_LOGITS), ck.softmax(SIX_LOGITS)[:, 0])


def test_nan_and_bad_labels_are_input_errors():
    with pytest.raises(ck.InputError, match="check_invariance: after must be finite"):
        check_invariance([0.1, 0.2], [0.1, np.nan])
    with pytest.raises(ck.InputError, match="labels must lie in 0..2"):
        check_invariance(ck.softmax(SIX_LOGITS), ck.softmax(SIX_LOGITS), labels=[0, 1, 2, 3, 0, 0])
    with pytest.raises(ck.InputError, match="threshold must be a finite number"):
        check_invariance([0.1, 0.2], [0.1, 0.2], threshold=float("nan"))
