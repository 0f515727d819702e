"""A new user's binary model: scikit-learn's LogisticRegression on load_breast_cancer, with a
fixed split into training, validation and test rows, read as P(malignant)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np


@lru_cache(maxsize=1)
def malignancy() -> dict[str, np.ndarray]:
    """P(malignant) and the labels (1 = malignant) of the validation and test rows."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split

    x, target = load_breast_cancer(return_X_y=True)
    y = (target == 0).astype(int)  # scikit-learn codes malignant as 0
    x_fit, x_rest, y_fit, y_rest = train_test_split(x, y, test_size=0.5, random_state=0, stratify=y)
    x_val, x_test, y_val, y_test = train_test_split(
        x_rest, y_rest, test_size=0.5, random_state=0, stratify=y_rest
    )
    model = LogisticRegression(max_iter=10_000).fit(x_fit, y_fit)
    return {
        "p_val": model.predict_proba(x_val)[:, 1],
        "y_val": y_val,
        "p_test": model.predict_proba(x_test)[:, 1],
        "y_test": y_test,
    }
