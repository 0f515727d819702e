"""A fitted vector or matrix scaling map (:mod:`calibkit.recalibrate.matrix`): its learned state,
``predict_proba``, the reading of its scores (logits, or logs of probabilities), and its JSON
persistence with the checks ``from_dict`` applies to the state."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate as v
from .._errors import InputError
from ._inputs import away_from_0_and_1, no_clip_for_logits
from ._linear_objective import _apply, _chunk_rows
from .base import Calibrator, Field, array, flag, integer, number, obj


class _LinearMap(Calibrator):
    """A fitted linear-softmax map ``softmax(A(z) + b)`` (:mod:`calibkit.recalibrate.matrix`):
    what it learned, how it is applied to new scores, and its JSON state."""

    _matrix: bool = False
    # settings of both subclasses
    from_logits: bool
    clip: float | None
    check_logits: bool

    # learned state, declared for type checkers
    weights_: np.ndarray
    bias_: np.ndarray
    n_classes_: int
    nll_before_: float
    nll_after_: float
    objective_: float
    gradient_norm_: float
    n_iter_: int
    n_evaluations_: int
    converged_: bool

    # ------------------------------------------------------------------ API
    def predict_proba(self, scores: Any) -> np.ndarray:
        """Calibrated probabilities (N, C), each row summing to 1."""
        where = f"{type(self).__name__}.predict_proba"
        self._check_fitted("predict_proba")
        z = self._logits(scores, where=where)
        if z.shape[1] != self.n_classes_:
            raise InputError(
                f"{where}: fitted on {self.n_classes_} classes, got {z.shape[1]} columns; pass "
                "scores with one column per class, in the order used at fit time."
            )
        out = np.empty(z.shape, dtype=np.float64)
        rows = _chunk_rows(self.n_classes_)
        for start in range(0, z.shape[0], rows):
            u = _apply(z[start : start + rows], self.weights_, self.bias_, self._matrix)
            u -= u.max(axis=1, keepdims=True)
            np.exp(u, out=u)
            u /= u.sum(axis=1, keepdims=True)
            out[start : start + rows] = u
        return out

    def _check_scores(self, scores: Any, *, where: str) -> None:
        if self.from_logits is False and self.clip is None:  # refuses 0, warns of nothing
            self._logits(scores, where=where)

    def _logits(self, scores: Any, *, where: str) -> np.ndarray:
        if not isinstance(self.from_logits, (bool, np.bool_)):
            raise InputError(
                f"{where}: from_logits must be True or False, got {self.from_logits!r}."
            )
        clip = v.clip_setting(self.clip, where=where)
        if self.from_logits:
            no_clip_for_logits(clip, where=where)
        return _logits(scores, from_logits=self.from_logits, clip=clip, where=where)

    # ------------------------------------------------------------------ persistence
    def _state(self) -> dict[str, Any]:
        return {
            "weights": self.weights_,
            "bias": self.bias_,
            "n_classes": self.n_classes_,
            "nll_before": self.nll_before_,
            "nll_after": self.nll_after_,
            "objective": self.objective_,
            "gradient_norm": self.gradient_norm_,
            "n_iter": self.n_iter_,
            "n_evaluations": self.n_evaluations_,
            "converged": self.converged_,
        }

    @classmethod
    def _state_fields(cls, weights: Field) -> Field:
        return obj(
            weights=weights,
            bias=array(number()),
            n_classes=integer(minimum=2),
            nll_before=number(),
            nll_after=number(),
            objective=number(),
            gradient_norm=number(),
            n_iter=integer(minimum=0),
            n_evaluations=integer(minimum=0),
            converged=flag(),
        )

    def _set_state(self, state: dict[str, Any]) -> None:
        # the types were checked against _state_spec (from_dict): finite numbers throughout
        n_classes = int(state["n_classes"])
        weights, bias = state["weights"], state["bias"]
        c = n_classes
        rows_ok = not self._matrix or all(len(row) == c for row in weights)
        if len(weights) != c or not rows_ok or len(bias) != c:
            shape = f"({c}, {c})" if self._matrix else f"({c},)"
            got = (
                f"{len(weights)} rows of lengths {sorted({len(r) for r in weights})}"
                if self._matrix
                else f"{len(weights)} entries"
            )
            raise InputError(
                f"expected weights of shape {shape} and bias of shape ({c},) for n_classes = "
                f"{c}, got weights with {got} and a bias of {len(bias)}."
            )
        self.weights_ = np.asarray(weights, dtype=np.float64)
        self.bias_ = np.asarray(bias, dtype=np.float64)
        self.n_classes_ = n_classes
        self.nll_before_ = float(state["nll_before"])
        self.nll_after_ = float(state["nll_after"])
        self.objective_ = float(state["objective"])
        self.gradient_norm_ = float(state["gradient_norm"])
        self.n_iter_ = int(state["n_iter"])
        self.n_evaluations_ = int(state["n_evaluations"])
        self.converged_ = bool(state["converged"])


def _logits(scores: Any, *, from_logits: bool, clip: float | None, where: str) -> np.ndarray:
    """(N, C) logits, float32 or float64, validated; logs of probabilities with
    ``from_logits=False`` (exact zeros under the ``clip`` policy)."""
    name = "logits" if from_logits else "probs"
    arr = v.to_numpy(scores, name=name, where=where)
    if arr.ndim != 2:
        raise InputError(
            f"{where}: {name} must be a 2-D array (N, C) with one column per class, got an array "
            f"of shape {arr.shape}. For 1-D binary scores use PlattScaling or TemperatureScaling; "
            "for a binary model's logits pass two columns (e.g. [-s/2, s/2])."
        )
    if from_logits:
        return v.scores(arr, where=where, name=name, ndim=2)
    p = v.probabilities(arr, where=where, name=name)
    p = away_from_0_and_1(p, clip=clip, where=where, name=name, takes="the log", ends=(0.0,))
    return np.log(p)
