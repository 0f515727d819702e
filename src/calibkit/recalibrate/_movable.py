"""What a map can move: the theorems behind the ledger's "can move" column (a map that keeps
the argmax keeps accuracy; a monotone one keeps the AUC; ...)."""

from __future__ import annotations

from typing import Any

_SIGN_AND_ARGMAX_KEEPING = {"temperature"}
#: Methods fitted by maximum likelihood (the NLL is their objective on the calibration rows).
LIKELIHOOD_FITS = {"temperature", "platt", "beta", "vector", "matrix"}
#: Methods fitted by least squares (the Brier score is their objective).
SQUARED_ERROR_FITS = {"isotonic", "histogram"}

_BINARY_MAPS = {"platt", "isotonic", "histogram", "beta"}


# ----------------------------------------------------------------------------- what can move

_MEASURES = {
    "binary": {
        "ECE": "mean absolute reliability gap",
        "NLL": "log-likelihood of the labels",
        "Brier": "squared error = calibration + refinement",
        "accuracy": "threshold decisions (p >= 0.5)",
        "AUC": "pairwise ranking",
    },
    "multiclass": {
        "ECE": "mean absolute reliability gap",
        "NLL": "log-likelihood of the labels",
        "Brier": "squared error, sum over classes",
        "accuracy": "argmax decisions",
        "AUC": "confidence ranks right above wrong",
    },
}


def _can_move(
    method: str, params: dict[str, Any], instrument: str, *, kind: str, design: str
) -> tuple[str, bool]:
    """(what the map can do to an instrument, in words; whether a theorem says it cannot)."""
    if instrument == "ECE":
        return "yes: the target", False
    if instrument == "NLL":
        return ("yes: the fitting objective" if method in LIKELIHOOD_FITS else "yes"), False
    if instrument == "Brier":
        if method in SQUARED_ERROR_FITS:
            return "yes: the fitting objective (squared error)", False
        return "yes, either direction", False
    if instrument == "accuracy":
        return _can_move_accuracy(method, params, kind)
    return _can_move_auc(method, kind, design)


def _can_move_accuracy(method: str, params: dict[str, Any], kind: str) -> tuple[str, bool]:
    if method in _SIGN_AND_ARGMAX_KEEPING:
        if kind == "multiclass":
            return "never (argmax-preserving)", True
        return "never (sign-preserving)", True
    if kind == "binary":
        reasons = {
            "platt": "yes: the intercept moves 0.5",
            "beta": "yes: fitted 0.5 crossing",
            "isotonic": "yes: steps cross 0.5 anywhere",
            "histogram": "yes: a frequency per bin",
            "vector": "yes: offsets move decisions",
            "matrix": "yes: offsets move decisions",
        }
        return reasons.get(method, _UNKNOWN), False
    if method == "vector":
        return "yes: per-class scales move argmaxes", False
    if method == "matrix":
        return "yes: mixing classes moves argmaxes", False
    if method in _BINARY_MAPS:
        if params.get("multiclass") == "top-label":
            return "rarely: only if the top falls below another", False
        return "yes: per-class maps move argmaxes", False
    return _UNKNOWN, False


def _can_move_auc(method: str, kind: str, design: str) -> tuple[str, bool]:
    if kind == "multiclass":
        if method in _SIGN_AND_ARGMAX_KEEPING:
            return "yes: rows' confidences reorder", False
        return "yes", False
    if design == "cross-fit":
        return "yes: one map per fold", False
    reasons = {
        "temperature": ("never (order-preserving)", True),
        "platt": ("no while the slope a > 0", False),
        "beta": ("no while the map increases", False),
        "isotonic": ("only by ties (flat steps)", False),
        "histogram": ("yes: bins tie and reorder", False),
    }
    return reasons.get(method, (_UNKNOWN, False))


_UNKNOWN = "yes: no known guarantee"
