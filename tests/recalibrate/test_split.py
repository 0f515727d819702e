"""Stratified split, stratified folds and cross-fitting: deterministic, proportional, and no row
is ever calibrated by a map that saw it."""

from __future__ import annotations

import numpy as np
import pytest

import calibkit as ck
from calibkit.recalibrate.base import Calibrator
from calibkit.recalibrate.split import cross_fit, stratified_folds, stratified_split


def labels_with_counts(counts: dict[int, int], seed: int = 0) -> np.ndarray:
    y = np.concatenate([np.full(n, k) for k, n in counts.items()])
    return np.random.default_rng(seed).permutation(y)


# ----------------------------------------------------------------------------- split


def test_18_and_108_split_halves_keep_the_class_ratio():
    y = np.array([1] * 18 + [0] * 108)  # 18 true triples, 6 corruptions of each
    cal, ev = stratified_split(y, seed=0)
    assert (cal.size, ev.size) == (63, 63)
    assert (int(y[cal].sum()), int(y[ev].sum())) == (9, 9)  # 1 : 6 in both halves


def test_split_is_deterministic_and_disjoint_and_complete():
    y = labels_with_counts({0: 40, 1: 25, 2: 7, 3: 2})
    a = stratified_split(y, calibration_fraction=0.3, seed=7)
    b = stratified_split(y, calibration_fraction=0.3, seed=7)
    assert all(np.array_equal(x, z) for x, z in zip(a, b, strict=True))
    cal, ev = a
    assert cal.dtype == np.int64 and np.all(np.diff(cal) > 0) and np.all(np.diff(ev) > 0)
    assert np.intersect1d(cal, ev).size == 0
    assert np.array_equal(np.union1d(cal, ev), np.arange(y.size))
    other = stratified_split(y, calibration_fraction=0.3, seed=8)[0]
    assert not np.array_equal(cal, other)


@pytest.mark.parametrize("fraction", [0.5, 0.3, 0.8])
def test_split_is_proportional_in_every_class(fraction):
    counts = {0: 101, 1: 33, 2: 10, 3: 7, 4: 3}
    y = labels_with_counts(counts, seed=3)
    cal, _ = stratified_split(y, calibration_fraction=fraction, seed=1)
    for k, n_k in counts.items():
        got = int(np.count_nonzero(y[cal] == k))
        assert abs(got - fraction * n_k) < 1, (k, got)  # floor or ceil of the exact share
        assert 1 <= got <= n_k - 1  # the class is in both parts
    assert cal.size == int(np.floor(fraction * y.size + 0.5))


def test_every_class_with_two_rows_lands_in_both_parts_even_at_extreme_fractions():
    y = labels_with_counts({0: 200, 1: 2, 2: 3})
    for fraction in (0.01, 0.99):
        cal, ev = stratified_split(y, calibration_fraction=fraction, seed=0)
        assert set(y[cal]) == set(y[ev]) == {0, 1, 2}


def test_a_generator_seed_works():
    y = labels_with_counts({0: 10, 1: 10})
    cal, ev = stratified_split(y, seed=np.random.default_rng(5))
    assert cal.size == ev.size == 10


def test_a_class_with_one_row_is_a_clear_error():
    y = np.array([0, 0, 0, 1, 1, 2])
    with pytest.raises(
        ck.InputError,
        match=r"stratified_split: every class needs at least 2 rows so that both parts contain "
        r"it; class 2 has only 1\. Remove or merge those rows",
    ):
        stratified_split(y)


@pytest.mark.parametrize("fraction", [0, 1, 1.5, -0.1, "half", True, float("nan")])
def test_bad_fraction_is_an_input_error(fraction):
    with pytest.raises(ck.InputError, match="calibration_fraction must be a number strictly"):
        stratified_split([0, 0, 1, 1], calibration_fraction=fraction)


@pytest.mark.parametrize(
    ("labels", "match"),
    [
        ([], "labels is empty"),
        ([[0, 1], [1, 0]], "labels must be 1-D"),
        ([0, 1, -1, 1], "first at index 2: -1"),
        ([0.0, 1.5, 1.0, 0.0], "whole class indices"),
        (["a", "b"], "must hold numbers"),
    ],
)
def test_bad_labels_are_input_errors(labels, match):
    with pytest.raises(ck.InputError, match=match):
        stratified_split(labels)


# ----------------------------------------------------------------------------- folds


def test_folds_are_stratified_balanced_and_deterministic():
    counts = {0: 53, 1: 21, 2: 4}
    y = labels_with_counts(counts, seed=2)
    fold = stratified_folds(y, folds=5, seed=0)
    assert np.array_equal(fold, stratified_folds(y, folds=5, seed=0))
    sizes = np.bincount(fold, minlength=5)
    assert sizes.max() - sizes.min() <= 1
    for k in counts:
        per_fold = np.bincount(fold[y == k], minlength=5)
        assert per_fold.max() - per_fold.min() <= 1


def test_folds_need_at_least_two_and_at_most_n():
    with pytest.raises(ck.InputError, match="folds must be an integer >= 2"):
        stratified_folds([0, 1, 0, 1], folds=1)
    with pytest.raises(ck.InputError, match="folds = 5 but there are only 4 rows"):
        stratified_folds([0, 1, 0, 1], folds=5)


# ----------------------------------------------------------------------------- cross-fit


class Spy(Calibrator):
    """Records the scores it was fitted on and the scores it was asked to calibrate."""

    log: list[tuple[set[float], np.ndarray]] = []

    def __init__(self) -> None:
        pass

    def fit(self, scores, labels):
        self.seen_ = {float(s) for s in scores}
        return self

    def predict_proba(self, scores):
        Spy.log.append((self.seen_, np.asarray(scores, dtype=float)))
        return ck.sigmoid(scores)

    def _state(self):
        return {}

    def _set_state(self, state):
        pass


def test_cross_fit_never_calibrates_a_row_with_a_map_that_saw_it():
    rng = np.random.default_rng(0)
    scores = rng.permutation(np.arange(60, dtype=float) / 7 - 4)  # distinct: a score names its row
    y = (rng.random(60) < ck.sigmoid(scores)).astype(int)
    Spy.log.clear()
    out = cross_fit(Spy, scores, y, folds=4, seed=0)
    assert len(Spy.log) == 4  # one map per fold
    predicted = np.concatenate([asked for _, asked in Spy.log])
    assert np.array_equal(np.sort(predicted), np.sort(scores))  # every row exactly once
    for seen, asked in Spy.log:
        assert not seen & set(asked.tolist())  # never a row the map saw
        assert len(seen) + asked.size == scores.size  # and it saw every other row
    assert np.array_equal(out, ck.sigmoid(scores))


def test_cross_fit_equals_the_maps_fitted_on_the_other_folds():
    rng = np.random.default_rng(1)
    z = rng.normal(0, 3, (90, 3))
    y = np.array([rng.choice(3, p=row) for row in ck.softmax(z / 3)])
    out = cross_fit(ck.TemperatureScaling(), z, y, folds=3, seed=4)
    fold = stratified_folds(y, folds=3, seed=4)
    for k in range(3):
        ts = ck.TemperatureScaling().fit(z[fold != k], y[fold != k])
        assert np.array_equal(out[fold == k], ts.predict_proba(z[fold == k]))


def test_cross_fit_copies_a_calibrator_instance_and_leaves_it_unfitted():
    s = np.linspace(-3, 3, 40)
    y = (np.arange(40) % 3 == 0).astype(int)
    ts = ck.TemperatureScaling(method="golden")
    out = cross_fit(ts, s, y, folds=4)
    assert out.shape == (40,) and not ts.is_fitted


def test_cross_fit_rejects_what_is_not_a_calibrator():
    with pytest.raises(ck.InputError, match="make must be a calibrator or a callable"):
        cross_fit(3, [0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1], folds=2)
    with pytest.raises(ck.InputError, match="labels has 3 entries but the forecasts have 4"):
        cross_fit(ck.TemperatureScaling, [0.1, 0.2, 0.3, 0.4], [0, 1, 0], folds=2)
