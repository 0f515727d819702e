"""Held-out calibration of ck.CalibratedClassifier and sklearn's CalibratedClassifierCV, side by
side on the same outer splits.

Three datasets that ship with scikit-learn (no download): breast cancer (binary, 569 rows),
digits (10 classes, 1797 rows) and a noisy ``make_classification`` problem (binary, 4000 rows,
10% of the labels flipped). Three base estimators: Gaussian naive Bayes and a random forest
(``predict_proba``) and an RBF SVC (``decision_function``; it has no probabilities of its own).
For each seed an outer stratified split keeps 30% of the rows for testing; each calibrator
uses 5-fold cross-validation on the other 70% with ``ensemble=False`` (one map on the
out-of-fold scores, the estimator refitted on all training rows) in both libraries.

Reported on the test rows: ECE (calibkit's default, 15 equal-width bins; binary on P(class 1),
multiclass on the top label) and log loss (scikit-learn's ``log_loss``, which clips
probabilities at float64 eps so that isotonic's zeros stay finite), mean and standard deviation
over the seeds, and the calibkit / scikit-learn ratio of the two ECEs where the maps are
comparable (platt vs sigmoid, isotonic vs isotonic). calibkit's temperature and Platt maps read
log-probabilities of ``predict_proba`` and are given ``clip=1e-7`` (calibkit refuses
probabilities of exactly 0 or 1 otherwise); scikit-learn's sigmoid reads the probabilities
themselves. A fit that refuses its data is counted and shown.

Run: ``python benchmarks/sklearn_heldout.py [--seeds 5]`` (a few minutes on two cores).
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import load_breast_cancer, load_digits, make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

import calibkit as ck


def datasets() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    noisy = make_classification(
        n_samples=4000, n_features=20, n_informative=6, flip_y=0.1, random_state=0
    )
    return {
        "breast_cancer": load_breast_cancer(return_X_y=True),
        "digits": load_digits(return_X_y=True),
        "make_classification": noisy,
    }


def estimators(seed: int) -> dict[str, Any]:
    return {
        "GaussianNB": GaussianNB(),
        "RandomForest": RandomForestClassifier(n_estimators=100, random_state=seed, n_jobs=1),
        "SVC": make_pipeline(StandardScaler(), SVC(kernel="rbf", random_state=seed)),
    }


def calibrators(base: Any) -> dict[str, Callable[[], Any]]:
    has_proba = hasattr(base, "predict_proba")
    clip = {"clip": 1e-7} if has_proba else {}
    return {
        "uncalibrated": (lambda: base) if has_proba else None,
        "sklearn sigmoid": lambda: CalibratedClassifierCV(
            base, method="sigmoid", cv=5, ensemble=False
        ),
        "sklearn isotonic": lambda: CalibratedClassifierCV(
            base, method="isotonic", cv=5, ensemble=False
        ),
        "ck temperature": lambda: ck.CalibratedClassifier(
            base, method=ck.TemperatureScaling(**clip), cv=5
        ),
        "ck platt": lambda: ck.CalibratedClassifier(base, method=ck.PlattScaling(**clip), cv=5),
        "ck isotonic": lambda: ck.CalibratedClassifier(base, method="isotonic", cv=5),
    }


def held_out_ece(p: np.ndarray, y: np.ndarray) -> float:
    if p.shape[1] == 2:
        return ck.ece(p[:, 1], y)
    conf, outcome = ck.top_label(p, y)
    return ck.ece(conf, outcome)


def run(n_seeds: int) -> None:
    results: dict[tuple[str, str, str], dict[str, list[float]]] = defaultdict(
        lambda: defaultdict(list)
    )
    refused: dict[tuple[str, str, str], int] = defaultdict(int)
    for data_name, (X, y) in datasets().items():
        for seed in range(n_seeds):
            X_tr, X_te, y_tr, y_te = train_test_split(
                X, y, test_size=0.3, stratify=y, random_state=seed
            )
            for est_name, base in estimators(seed).items():
                for cal_name, make in calibrators(base).items():
                    if make is None:
                        continue
                    key = (data_name, est_name, cal_name)
                    model = make()
                    start = time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")  # calibkit counts each clipped row
                        try:
                            model.fit(X_tr, y_tr)
                        except ck.InputError:
                            refused[key] += 1
                            continue
                        results[key]["seconds"].append(time.perf_counter() - start)
                        p = model.predict_proba(X_te)
                    results[key]["ece"].append(held_out_ece(p, y_te))
                    results[key]["log_loss"].append(log_loss(y_te, p, labels=np.unique(y)))
    print_table(results, refused, n_seeds)


def _cell(values: list[float], digits: int = 4) -> str:
    if not values:
        return "refused"
    return f"{np.mean(values):.{digits}f} ± {np.std(values):.{digits}f}"


def print_table(
    results: dict[tuple[str, str, str], dict[str, list[float]]],
    refused: dict[tuple[str, str, str], int],
    n_seeds: int,
) -> None:
    pairs = {"ck platt": "sklearn sigmoid", "ck isotonic": "sklearn isotonic"}
    print(f"held-out over {n_seeds} seeds (mean ± sd); ratio = ECE ck / ECE sklearn, per seed")
    print()
    print("| dataset | estimator | calibration | ECE | log loss | fit s | ECE ratio |")
    print("|---|---|---|---|---|---|---|")
    keys = sorted({k for k in results} | {k for k in refused}, key=_order)
    for key in keys:
        data_name, est_name, cal_name = key
        row = results.get(key, {})
        ratio = ""
        partner = results.get((data_name, est_name, pairs.get(cal_name, "")), {})
        if partner and row and len(partner["ece"]) == len(row["ece"]):
            r = np.asarray(row["ece"]) / np.asarray(partner["ece"])
            ratio = f"{np.mean(r):.2f}"
        note = f" ({refused[key]} refused)" if refused.get(key) and row else ""
        print(
            f"| {data_name} | {est_name} | {cal_name}{note} | {_cell(row.get('ece', []))} | "
            f"{_cell(row.get('log_loss', []))} | {_cell(row.get('seconds', []), 2)} | {ratio} |"
        )


_CAL_ORDER = [
    "uncalibrated",
    "sklearn sigmoid",
    "sklearn isotonic",
    "ck temperature",
    "ck platt",
    "ck isotonic",
]


def _order(key: tuple[str, str, str]) -> tuple[str, str, int]:
    return key[0], key[1], _CAL_ORDER.index(key[2])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    run(parser.parse_args().seeds)
