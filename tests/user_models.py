"""The tables a new user brings: scikit-learn models fitted with fixed seeds on scikit-learn's
own data sets, their predictions written under the user's own column names."""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

MODELS = ("lr", "rf", "nb")


@functools.cache
def breast_cancer() -> pd.DataFrame:
    """Three models on the held-out half of ``load_breast_cancer``, side by side:
    ``image_id``, ``proba_malignant_lr``, ``_rf``, ``_nb`` (P(malignant); scikit-learn's
    target is 0 for malignant) and ``y_true`` (the target, 1 = benign)."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.naive_bayes import GaussianNB
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x, y = load_breast_cancer(return_X_y=True)
    x_fit, x_test, y_fit, y_test = train_test_split(x, y, test_size=0.5, random_state=0, stratify=y)
    models = {
        "lr": make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)),
        "rf": RandomForestClassifier(n_estimators=50, random_state=0),
        "nb": GaussianNB(),
    }
    columns = {}
    for name, model in models.items():
        model.fit(x_fit, y_fit)
        columns[f"proba_malignant_{name}"] = model.predict_proba(x_test)[:, 0]
    ids = [f"img_{i:04d}" for i in range(y_test.size)]
    return pd.DataFrame({"image_id": ids, **columns, "y_true": y_test})


def with_words(frame: pd.DataFrame) -> pd.DataFrame:
    """The same table with the diagnosis written as a word."""
    return frame.assign(y_true=np.where(frame["y_true"] == 0, "malignant", "benign"))


@functools.cache
def digits() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A logistic regression on the held-out half of ``load_digits``: its logits (N, 10), its
    probabilities (N, 10) and the labels."""
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    x_fit, x_test, y_fit, y_test = train_test_split(
        x / 16.0, y, test_size=0.5, random_state=0, stratify=y
    )
    model = LogisticRegression(max_iter=2000).fit(x_fit, y_fit)
    return model.decision_function(x_test), model.predict_proba(x_test), y_test


@functools.cache
def classification() -> tuple[np.ndarray, np.ndarray]:
    """A logistic regression's P(y = 1) on the held-out half of ``make_classification``."""
    from sklearn.datasets import make_classification
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split

    x, y = make_classification(n_samples=1000, n_features=8, random_state=0)
    x_fit, x_test, y_fit, y_test = train_test_split(x, y, test_size=0.5, random_state=0)
    model = LogisticRegression().fit(x_fit, y_fit)
    return model.predict_proba(x_test)[:, 1], y_test
