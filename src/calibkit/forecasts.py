"""Turn model outputs into forecasts of an event: link functions and the three reductions.

Every binned calibration measure works on pairs (confidence, outcome): a forecast probability and
whether the event happened. A multiclass prediction becomes such pairs in one of three ways:

* **top-label**: confidence = the largest class probability, outcome = the argmax was right;
* **class-wise**: for each class k, confidence = P(class k), outcome = the label is k;
* **binary**: confidence = P(label = 1), outcome = the label (1-D input, or column 1 of (N, 2)).

All arithmetic is done in float64, so float32 input loses nothing beyond its own precision.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np

from . import _kernels
from . import _validate as v

__all__ = [
    "Forecast",
    "Prepared",
    "batches_source",
    "binary",
    "classwise",
    "is_stream",
    "log_softmax",
    "logit",
    "prepare",
    "sigmoid",
    "sigmoid_of",
    "softmax",
    "softmax_of",
    "top_label",
]

_CHUNK_ROWS = 1 << 16


class Forecast(NamedTuple):
    """A binary forecast: ``confidence`` (float64, in [0, 1]) and ``outcome`` (bool)."""

    confidence: np.ndarray
    outcome: np.ndarray


def log_softmax(logits: Any, *, axis: int = -1) -> np.ndarray:
    """Log of the softmax, computed stably in float64 (log-sum-exp with the max subtracted).

    Examples
    --------
    >>> import calibkit as ck
    >>> ck.log_softmax([[0.0, 0.0]]).round(6).tolist()
    [[-0.693147, -0.693147]]
    """
    z = v.scores(logits, where="log_softmax", ndim=(1, 2)).astype(np.float64, copy=False)
    z = z - z.max(axis=axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


def softmax(logits: Any, *, axis: int = -1) -> np.ndarray:
    """Softmax in float64: ``exp(z - max z) / sum(exp(z - max z))``.

    Examples
    --------
    Logits (2, 1, 0) give confidence 0.665 at temperature 1.

    >>> import calibkit as ck
    >>> round(float(ck.softmax([2.0, 1.0, 0.0]).max()), 3)
    0.665
    """
    return softmax_of(v.scores(logits, where="softmax", ndim=(1, 2)), axis=axis)


def softmax_of(z: np.ndarray, *, axis: int = -1) -> np.ndarray:
    """:func:`softmax` of checked (finite) logits."""
    z = z.astype(np.float64, copy=False)
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def sigmoid(scores: Any) -> np.ndarray:
    """The logistic function ``1 / (1 + exp(-s))`` in float64, without overflow.

    Examples
    --------
    >>> import calibkit as ck
    >>> ck.sigmoid([0.0, -800.0, 800.0]).tolist()
    [0.5, 0.0, 1.0]
    """
    return sigmoid_of(v.scores(scores, where="sigmoid", name="scores", ndim=(1, 2)))


def sigmoid_of(s: np.ndarray) -> np.ndarray:
    """:func:`sigmoid` of checked (finite) scores."""
    s = s.astype(np.float64, copy=False)
    out = np.empty_like(s)
    pos = s >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-s[pos]))
    e = np.exp(s[~pos])
    out[~pos] = e / (1.0 + e)
    return out


def logit(probs: Any) -> np.ndarray:
    """The log-odds ``log(p / (1 - p))``; 0 and 1 map to -inf and +inf (no clipping).

    Examples
    --------
    >>> import calibkit as ck
    >>> ck.logit([0.5, 0.25]).round(6).tolist()
    [0.0, -1.098612]
    """
    p = v.confidence(probs, where="logit", name="probs").astype(np.float64, copy=False)
    with np.errstate(divide="ignore"):
        return np.log(p) - np.log1p(-p)


def top_label(probs: Any, labels: Any, *, from_logits: bool = False) -> Forecast:
    """Top-label forecast: confidence = max probability, outcome = (argmax == label).

    Ties go to the first class with the largest probability (``np.argmax``). With
    ``from_logits=True`` the softmax is taken in float64 chunk by chunk, never as a whole
    (N, C) float64 copy.

    Examples
    --------
    >>> import calibkit as ck
    >>> f = ck.top_label([[0.7, 0.3], [0.2, 0.8]], [0, 0])
    >>> f.confidence.tolist(), f.outcome.tolist()
    ([0.7, 0.8], [True, False])
    """
    return reduce_top_label(probs, labels, from_logits=from_logits, where="top_label")


def reduce_top_label(probs: Any, labels: Any, *, from_logits: bool, where: str) -> Forecast:
    """:func:`top_label`, with the caller's name in the error messages."""
    if from_logits:
        z = v.scores(probs, where=where, ndim=2)
        y = v.labels(labels, n=z.shape[0], n_classes=z.shape[1], where=where)
        return Forecast(*_top_label_logits(z, y))
    p = v.probability_matrix(probs, where=where)
    y = v.labels(labels, n=p.shape[0], n_classes=p.shape[1], where=where)
    conf, correct = _kernels.top_label(
        p,
        y,
        row_sum_atol=v.ROW_SUM_ATOL,
        validate=lambda p, y: v.probability_values(p, where=where),
    )
    return Forecast(conf, correct)


def _probs_and_labels(probs: Any, labels: Any, *, where: str) -> tuple[np.ndarray, np.ndarray]:
    p = v.probabilities(probs, where=where)
    y = v.labels(labels, n=p.shape[0], n_classes=p.shape[1], where=where)
    return p, y


def _top_label_logits(z: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = z.shape[0]
    conf = np.empty(n, dtype=np.float64)
    correct = np.empty(n, dtype=bool)
    for start in range(0, n, _CHUNK_ROWS):
        block = z[start : start + _CHUNK_ROWS].astype(np.float64, copy=False)
        pred = block.argmax(axis=1)
        top = np.take_along_axis(block, pred[:, None], axis=1)
        # max softmax probability = 1 / sum_c exp(z_c - z_max)
        conf[start : start + len(block)] = 1.0 / np.exp(block - top).sum(axis=1)
        correct[start : start + len(block)] = pred == y[start : start + len(block)]
    return conf, correct


def classwise(probs: Any, labels: Any, *, from_logits: bool = False) -> Iterator[Forecast]:
    """One binary forecast per class k: confidence = P(class k), outcome = (label == k).

    Examples
    --------
    >>> import calibkit as ck
    >>> [f.outcome.tolist() for f in ck.classwise([[0.7, 0.3], [0.2, 0.8]], [0, 1])]
    [[True, False], [False, True]]
    """
    where = "classwise"
    if from_logits:
        z = v.scores(probs, where=where, ndim=2)
        y = v.labels(labels, n=z.shape[0], n_classes=z.shape[1], where=where)
        p = softmax(z)
    else:
        p, y = _probs_and_labels(probs, labels, where=where)
    return (Forecast(p[:, k].astype(np.float64), y == k) for k in range(p.shape[1]))


def binary(probs: Any, labels: Any, *, from_logits: bool = False) -> Forecast:
    """Binary forecast of label 1: 1-D P(label = 1), or column 1 of an (N, 2) matrix.

    Examples
    --------
    >>> import calibkit as ck
    >>> ck.binary([[0.9, 0.1], [0.4, 0.6]], [0, 1]).confidence.tolist()
    [0.1, 0.6]
    """
    return reduce_binary(probs, labels, from_logits=from_logits, where="binary")


def reduce_binary(probs: Any, labels: Any, *, from_logits: bool, where: str) -> Forecast:
    """:func:`binary`, with the caller's name in the error messages."""
    if from_logits:
        s = v.scores(probs, where=where, ndim=(1, 2))
        if s.ndim == 2:
            if s.shape[1] != 2:
                raise v.InputError(f"{where}: expected 1-D scores or (N, 2) logits, got {s.shape}.")
            s = s[:, 1].astype(np.float64) - s[:, 0]
        conf = sigmoid(s)
    else:
        arr = v.to_numpy(probs, name="probs", where=where)
        if arr.ndim == 2:
            if arr.shape[1] != 2:
                raise v.InputError(
                    f"{where}: expected 1-D P(label = 1) or an (N, 2) matrix, got {arr.shape}; "
                    "for more classes use ck.top_label or ck.classwise."
                )
            conf = v.probabilities(arr, where=where)[:, 1].astype(np.float64, copy=False)
        else:
            conf = v.confidence(arr, where=where, name="probs").astype(np.float64, copy=False)
    y = v.labels(labels, n=conf.shape[0], n_classes=2, where=where)
    return Forecast(conf, y == 1)


# ----------------------------------------------------------------------------- input preparation


@dataclass(frozen=True, eq=False)
class Prepared:
    """Validated input reduced to the audit's event: ``conf`` and ``outcome`` (the binary event
    of the table), ``p`` the forecast as probabilities, ``y`` the labels, ``correct`` whether
    each prediction was right, ``scores`` the input as given (logits stay logits), ``weight``
    the checked sample weights (None: every row counts once)."""

    kind: str
    n_classes: int
    scores: np.ndarray
    p: np.ndarray
    y: np.ndarray
    conf: np.ndarray
    outcome: np.ndarray
    correct: np.ndarray
    from_logits: bool
    weight: np.ndarray | None = None


def prepare(
    probs: Any, labels: Any, *, from_logits: bool, where: str, sample_weight: Any = None
) -> Prepared:
    """Check the input once and reduce it to the audit's binary event (shared by every engine
    that sees arrays: memory, and each chunk of a stream). What it returns is checked: the
    engines' measures take it as it is, without checking it again."""
    f = _prepared(probs, labels, from_logits=from_logits, where=where)
    if sample_weight is None:
        return f
    w = v.sample_weight(sample_weight, n=f.conf.shape[0], where=where)
    return replace(f, weight=w)


def _prepared(probs: Any, labels: Any, *, from_logits: bool, where: str) -> Prepared:
    x = v.to_numpy(probs, name="probs", where=where)
    if x.ndim == 2:
        if from_logits:
            z = v.scores(x, where=where, ndim=2)
            y = v.labels(labels, n=z.shape[0], n_classes=z.shape[1], where=where)
            p = softmax_of(z)
            check = None  # a softmax is a probability matrix by construction
        else:
            p = v.probability_matrix(x, where=where)
            y = v.labels(labels, n=p.shape[0], n_classes=p.shape[1], where=where)

            def check(p: np.ndarray, y: np.ndarray) -> None:
                v.probability_values(p, where=where)

        conf, outcome = _kernels.top_label(p, y, row_sum_atol=v.ROW_SUM_ATOL, validate=check)
        return Prepared("top-label", p.shape[1], x, p, y, conf, outcome, outcome, from_logits)
    if x.ndim == 1:
        if from_logits:
            conf = sigmoid_of(v.scores(x, where=where, ndim=1))
        else:
            conf = v.confidence(x, where=where, name="probs").astype(np.float64, copy=False)
        y = v.labels(labels, n=conf.shape[0], n_classes=2, where=where)
        # checked 0/1 bytes are already booleans: a view, not a copy
        outcome = y.view(np.bool_) if y.dtype.itemsize == 1 else y == 1
        pred = x >= 0 if from_logits else conf >= 0.5
        return Prepared("binary", 2, x, conf, y, conf, outcome, pred == outcome, from_logits)
    raise v.InputError(f"{where}: probs must be 1-D (binary) or 2-D (N, C), got shape {x.shape}.")


def is_stream(data: Any) -> bool:
    """An iterator (or a callable that makes one) of chunks, not an array-like; or a list of
    ``(probs, labels)`` or ``(probs, labels, sample_weight)`` batches (see
    :func:`batches_source`)."""
    if hasattr(data, "__dlpack__") or hasattr(data, "__array_namespace__"):
        return False  # an array of some library (some refuse to be iterated)
    if callable(data) or batches_source(data) is not None:
        return True
    return isinstance(data, Iterable) and iter(data) is data


def batches_source(data: Any) -> Callable[[], Any] | None:
    """A list or tuple of ``(probs, labels)`` pairs or ``(probs, labels, sample_weight)``
    triples (batches collected in a loop) as a callable stream that can be read twice (so
    quantile edges stay exact); None for anything else."""
    if not isinstance(data, (list, tuple)) or not data:
        return None
    if not all(isinstance(b, (tuple, list)) and len(b) in (2, 3) for b in data):
        return None
    if all(np.ndim(b[0]) == 0 for b in data):  # a list of (p, y) number pairs, not batches
        return None
    batches = list(data)
    return lambda: iter(batches)
