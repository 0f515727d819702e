"""From an estimator's output to what a calibkit map takes, and back to class probabilities.

The response is ``decision_function`` (margins, logits: the logit scale) or ``predict_proba``.
Each calibkit map reads one kind of score:

============================  =================================  ================================
map (``kind``)                on ``decision_function``           on ``predict_proba``
============================  =================================  ================================
temperature, platt            the margins, ``from_logits=True``  log-probabilities (log-odds for
                                                                 binary): ``from_logits=False``
vector, matrix                the same; a binary margin s as     ``[1 - p, p]`` with
                              the two logits ``[-s/2, s/2]``     ``from_logits=False``
isotonic                      the margins as they are            the probabilities as they are
histogram, beta               ``sigmoid(s)`` (binary) or         the probabilities as they are
                              ``softmax(z)`` (multiclass)
============================  =================================  ================================

A binary problem gives 1-D scores (the margin, or P(the second class)) except to vector and
matrix scaling; a multiclass one gives (N, C) columns in the order of ``classes_``, which the
binary maps (platt, isotonic, histogram, beta) calibrate one-vs-rest and renormalise, as
scikit-learn's ``CalibratedClassifierCV`` does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._errors import InputError
from ..forecasts import sigmoid, softmax
from ..recalibrate.base import Calibrator
from ..recalibrate.methods import METHOD_NAMES, make_calibrator

__all__ = [
    "LOGIT_KINDS",
    "PROBABILITY_KINDS",
    "RESPONSE_METHODS",
    "as_class_probabilities",
    "map_input",
    "map_template",
    "raw_response",
    "reads_logits",
    "response_method_of",
]

RESPONSE_METHODS = ("auto", "decision_function", "predict_proba")
#: Maps that read scores on the logit scale (they have a ``from_logits`` setting).
LOGIT_KINDS = ("temperature", "platt", "vector", "matrix")
#: Maps that read probabilities.
PROBABILITY_KINDS = ("histogram", "beta")
#: Maps that read any real score.
REAL_KINDS = ("isotonic",)
#: Maps that need (N, C) logits even for a binary problem.
TWO_COLUMN_KINDS = ("vector", "matrix")


def response_method_of(estimator: Any, response_method: Any, *, where: str) -> str:
    """The method to call: ``"auto"`` takes ``decision_function`` when the estimator has it,
    else ``predict_proba``; a named one must exist."""
    if not isinstance(response_method, str) or response_method not in RESPONSE_METHODS:
        raise InputError(
            f"{where}: response_method must be one of {', '.join(RESPONSE_METHODS)}, got "
            f"{response_method!r}."
        )
    name = type(estimator).__name__
    if response_method == "auto":
        for method in ("decision_function", "predict_proba"):
            if hasattr(estimator, method):
                return method
        raise InputError(
            f"{where}: {name} has neither decision_function nor predict_proba, so there is no "
            "score to calibrate; wrap a classifier that has one of them."
        )
    if not hasattr(estimator, response_method):
        raise InputError(
            f"{where}: response_method={response_method!r} but {name} has no {response_method}; "
            "use response_method='auto'."
        )
    return response_method


def map_template(method: Any, *, response: str, where: str) -> Calibrator:
    """A new unfitted calibkit map for ``method`` (a name, or a calibrator instance whose
    settings are copied), set to read this response: ``from_logits`` follows the response and
    margins skip the "looks like probabilities" check (they are margins by construction)."""
    if isinstance(method, str):
        if method not in METHOD_NAMES:
            raise InputError(
                f"{where}: method={method!r} is not a calibkit map; choose one of "
                f"{', '.join(METHOD_NAMES)}, or pass a calibrator instance such as "
                "ck.PlattScaling(smooth_targets=False)."
            )
        calibrator = make_calibrator(method)
    elif isinstance(method, Calibrator):
        calibrator = type(method)(**method.get_params())
    else:
        raise InputError(
            f"{where}: method must be a calibkit map name ({', '.join(METHOD_NAMES)}) or a "
            f"calibkit calibrator instance, got {type(method).__name__}."
        )
    kind = calibrator.kind
    if kind not in (*LOGIT_KINDS, *PROBABILITY_KINDS, *REAL_KINDS):
        raise InputError(
            f"{where}: {type(calibrator).__name__} (kind {kind!r}) is not a map of one model's "
            f"scores that CalibratedClassifier can fit; use one of {', '.join(METHOD_NAMES)}."
        )
    if kind in LOGIT_KINDS:
        margins = response == "decision_function"
        calibrator.set_params(from_logits=margins)
        if margins:
            calibrator.set_params(check_logits=False)
    return calibrator


def reads_logits(calibrator: Calibrator, response: str) -> bool:
    """Whether the map input of this response is on the logit scale (``from_logits`` of the
    ledger): margins for the logit maps and isotonic; probabilities otherwise."""
    return response == "decision_function" and calibrator.kind not in PROBABILITY_KINDS


def raw_response(estimator: Any, X: Any, response: str, *, n_classes: int, where: str) -> Any:
    """The estimator's scores of ``X``: (N,) margins or P(second class) for a binary problem,
    (N, C) otherwise."""
    out = np.asarray(getattr(estimator, response)(X), dtype=np.float64)
    if n_classes == 2:
        if response == "predict_proba":
            if out.ndim != 2 or out.shape[1] != 2:
                raise InputError(
                    f"{where}: {type(estimator).__name__}.predict_proba returned shape "
                    f"{out.shape} for a binary problem; expected (N, 2)."
                )
            return out[:, 1]
        return out.reshape(-1) if out.ndim == 2 and out.shape[1] == 1 else out
    if out.ndim != 2 or out.shape[1] != n_classes:
        raise InputError(
            f"{where}: {type(estimator).__name__}.{response} returned shape {out.shape}; "
            f"expected (N, {n_classes}), one column per class."
        )
    return out


def map_input(raw: np.ndarray, *, kind: str, response: str, n_classes: int) -> np.ndarray:
    """What the map of ``kind`` reads (the table of the module docstring)."""
    if n_classes == 2 and kind in TWO_COLUMN_KINDS:
        if response == "decision_function":
            return np.column_stack([-raw / 2.0, raw / 2.0])
        return np.column_stack([1.0 - raw, raw])
    if kind in PROBABILITY_KINDS and response == "decision_function":
        return sigmoid(raw) if raw.ndim == 1 else softmax(raw)
    return raw


def as_class_probabilities(p: Any) -> np.ndarray:
    """(N, C) class probabilities from a map's output: 1-D P(label = 1) becomes two columns."""
    arr = np.asarray(p, dtype=np.float64)
    if arr.ndim == 1:
        return np.column_stack([1.0 - arr, arr])
    return arr
