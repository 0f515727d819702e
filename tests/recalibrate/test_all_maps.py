"""Properties every calibrator shares, checked across the registry (one test per property)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import calibkit as ck
from calibkit.recalibrate.methods import METHOD_NAMES

# what each method takes: logits, or probabilities
TAKES = {
    "temperature": "logits",
    "platt": "logits",
    "isotonic": "probs",
    "histogram": "probs",
    "beta": "probs",
    "vector": "logits",
    "matrix": "logits",
}


def data(n: int = 600, c: int = 4, seed: int = 0):
    rng = np.random.default_rng(seed)
    z = 2.0 * rng.normal(size=(n, c))
    y = (z / 2.0 + rng.gumbel(size=(n, c))).argmax(axis=1)
    return z, y


def inputs(method: str, z: np.ndarray) -> np.ndarray:
    return ck.softmax(z) if TAKES[method] == "probs" else z


def test_registry_covers_every_method():
    assert set(TAKES) == set(METHOD_NAMES)


@pytest.mark.parametrize("method", sorted(TAKES))
def test_outputs_are_probabilities_and_json_round_trips(method):
    z, y = data()
    x = inputs(method, z)
    calibrator = ck.make_calibrator(method).fit(x, y)
    probs = calibrator.predict_proba(x)
    assert probs.shape == z.shape
    assert np.all((probs >= 0) & (probs <= 1))
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-12)
    again = ck.Calibrator.from_dict(json.loads(json.dumps(calibrator.to_dict())))
    assert np.array_equal(again.predict_proba(x), probs)


@pytest.mark.parametrize("method", sorted(TAKES))
def test_binary_scores_give_one_probability_per_row(method):
    if method in ("vector", "matrix"):  # (N, C) maps: 1-D input is an error instead
        with pytest.raises(ck.InputError):
            ck.make_calibrator(method).fit(np.linspace(-2, 2, 50), np.arange(50) % 2)
        return
    z, y = data(c=2)
    x = inputs(method, z)[:, 1] if TAKES[method] == "probs" else z[:, 1] - z[:, 0]
    p = ck.make_calibrator(method).fit(x, y).predict_proba(x)
    assert p.shape == (len(y),) and np.all((p >= 0) & (p <= 1))


@pytest.mark.parametrize("method", sorted(TAKES))
def test_not_fitted_clone_and_pipeline(method):
    from sklearn.base import clone
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    with pytest.raises(ck.NotFittedError):
        ck.make_calibrator(method).predict_proba(np.zeros((3, 4)))
    z, y = data()
    x = inputs(method, z)
    fitted = ck.make_calibrator(method).fit(x, y)
    copy = clone(fitted)
    assert copy.get_params() == fitted.get_params() and not copy.is_fitted

    # the calibrator as the last step of a pipeline, on a classifier's outputs
    rng = np.random.default_rng(1)
    features = rng.normal(size=(400, 3))
    labels = (features @ [1.0, -1.0, 0.5] + rng.normal(size=400) > 0).astype(int) + (
        features[:, 0] > 1
    )
    model = LogisticRegression().fit(features, labels)
    output = model.predict_proba if TAKES[method] == "probs" else model.decision_function
    pipe = make_pipeline(FunctionTransformer(output), ck.make_calibrator(method))
    pipe.fit(features, labels)
    probs = pipe.predict_proba(features)
    assert probs.shape == (400, 3)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-12)
