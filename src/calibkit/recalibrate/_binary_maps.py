"""What the binary recalibration maps share: reading the input, the multiclass wrapper, JSON
state, and a Newton solver for small logistic regressions.

Platt scaling, isotonic regression, histogram binning and beta calibration each learn a map
from one score to P(event). For multiclass (N, C) input, :class:`BinaryMapCalibrator` applies
such a map in one of two ways, chosen by ``multiclass``:

``"ovr"`` (one-vs-rest, scikit-learn's ``CalibratedClassifierCV``)
    One map per class k, fitted on (column k, label == k). The C outputs of a row are divided by
    their sum so that they add up to 1. A row whose C outputs are all exactly 0 (isotonic or
    histogram maps can output 0) gets the uniform distribution 1/C, as scikit-learn does, with a
    :class:`~calibkit.CalibkitWarning` counting those rows. Every class probability moves, and
    the argmax can change: the renormalised vector is a new forecast, with its own accuracy.
``"top-label"``
    One map, fitted on (top-label confidence, prediction correct): the pair the top-label ECE
    measures. The top class's probability is replaced by the calibrated confidence c' and the
    other classes share 1 - c' in proportion to their input probabilities (equally when those
    are all exactly 0). The ranking of the non-top classes is kept, and so is the argmax as long
    as c' stays the largest entry; but only the top-label confidence is calibrated, not the
    class-wise probabilities. The 2-D input must be probabilities (rows summing to 1), except
    for :class:`~calibkit.recalibrate.platt.PlattScaling` with ``from_logits=True``, which reads
    logits (the softmax gives the probabilities; the map sees the log-odds of the top class).

Both keep the output rows summing to 1 and every entry in [0, 1]. 1-D input is a binary
forecast (labels 0/1) and uses one map; ``multiclass`` does not apply. For a binary problem pass
1-D scores (the score or P(label = 1)), as scikit-learn's ``CalibratedClassifierCV`` does: (N, 2)
input is treated as two classes (two one-vs-rest maps, or the top label).
"""

from __future__ import annotations

import abc
import math
import warnings
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np

from .. import _validate as v
from .._errors import CalibkitWarning, InputError
from ._inputs import away_from_0_and_1, no_clip_for_logits
from .base import Calibrator, Field, array, integer, obj

__all__ = [
    "MULTICLASS",
    "BinaryMapCalibrator",
    "LogisticFit",
    "fit_logistic",
    "maps_state",
    "sigmoid",
]

MULTICLASS = ("ovr", "top-label")

#: How the four maps read their input. "scores": finite real scores (logits in top-label mode);
#: "logit": probabilities turned into their log-odds (0 and 1 under the ``clip`` policy of
#: :mod:`calibkit.recalibrate._inputs`); "probs": probabilities in [0, 1]; "real": finite real
#: scores in 1-D and one-vs-rest, probabilities in top-label mode.
DOMAINS = ("scores", "logit", "probs", "real")

MapT = TypeVar("MapT")


def sigmoid(z: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-z))`` in float64 without overflow (no warning for any finite z)."""
    return np.exp(-np.logaddexp(0.0, -z))


# --------------------------------------------------------------------------- input


@dataclass(frozen=True)
class Inputs:
    """Scores read and checked, as the maps see them.

    ``x`` is (N,) for 1-D input and for top-label mode, (N, C) for one-vs-rest. In top-label
    mode ``top`` is each row's predicted class and ``rest`` the distribution of the other
    classes (zero at ``top``, rows summing to 1).
    """

    ndim: int
    n_classes: int
    x: np.ndarray
    top: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.intp))
    rest: np.ndarray = field(default_factory=lambda: np.empty((0, 0)))


def read_inputs(
    raw: Any,
    *,
    domain: str,
    mode: str,
    where: str,
    clip: float | None = None,
    logs: bool = False,
    check_logits: bool = False,
) -> Inputs:
    """The scores as the maps see them. ``logs``: the map takes logs of the probabilities
    (domain "logit", or beta calibration's log p and log(1 - p)), so exact 0 and 1 follow the
    ``clip`` policy (:func:`~calibkit.recalibrate._inputs.away_from_0_and_1`).
    ``check_logits``: logits that look like probabilities are refused (fit)."""
    name = "probs" if domain in ("probs", "logit") else "scores"
    takes = "the log-odds" if domain == "logit" else "log p or log(1 - p)"
    # beta calibration has no from_logits: a model with logits goes to a map of logits
    instead = (
        "the model's logits with from_logits=True"
        if domain == "logit"
        else "the model's logits to a map that reads them (PlattScaling, TemperatureScaling)"
    )
    arr = v.float_array(raw, name=name, where=where, ndim=(1, 2))
    if arr.ndim == 1:
        if domain in ("probs", "logit"):
            p = v.confidence(arr, where=where, name=name).astype(np.float64, copy=False)
            if logs:
                p = away_from_0_and_1(
                    p, clip=clip, where=where, name=name, takes=takes, instead=instead
                )
            return Inputs(1, 2, _logit(p) if domain == "logit" else p)
        s = v.scores(arr, where=where, name=name, ndim=1).astype(np.float64, copy=False)
        if domain == "scores":
            v.logits_not_probabilities(s, where=where, name=name, check=check_logits)
        return Inputs(1, 2, s)
    n_classes = int(arr.shape[1])
    if mode == "ovr":
        if domain in ("probs", "logit"):
            p = v.probabilities(arr, where=where, name=name).astype(np.float64, copy=False)
            if logs:
                p = away_from_0_and_1(
                    p, clip=clip, where=where, name=name, takes=takes, instead=instead
                )
            return Inputs(2, n_classes, _logit(p) if domain == "logit" else p)
        s = v.scores(arr, where=where, name=name, ndim=2).astype(np.float64, copy=False)
        if domain == "scores":
            v.logits_not_probabilities(s, where=where, name=name, check=check_logits)
        return Inputs(2, n_classes, s)
    rows = np.arange(arr.shape[0])
    if domain == "scores":  # logits: the softmax, computed without forming 1 - p
        z = v.scores(arr, where=where, name="logits", ndim=2).astype(np.float64)
        v.logits_not_probabilities(z, where=where, check=check_logits)
        top = np.argmax(z, axis=1)
        best = z[rows, top]
        z[rows, top] = -np.inf
        runner = z.max(axis=1)
        e = np.exp(z - runner[:, None])  # the top entry is exp(-inf) = 0
        total = e.sum(axis=1)  # >= 1
        margin = (best - runner) - np.log(total)  # log(p_top / (1 - p_top))
        return Inputs(2, n_classes, margin, top, e / total[:, None])
    given = v.probabilities(arr, where=where, name="probs")
    probs = given.astype(np.float64)
    top = np.argmax(probs, axis=1)
    conf = probs[rows, top]
    probs[rows, top] = 0.0
    others = probs.sum(axis=1)
    empty = others == 0.0
    if logs:
        # the confidence is at least 1/C, so only a certain top class has an infinite log: for
        # the log-odds log(conf / others), a row whose other classes are all exactly 0
        given_conf = given[rows, top]
        infinite = empty if domain == "logit" else given_conf == 1.0
        moved = away_from_0_and_1(
            given_conf,
            clip=clip,
            where=where,
            name="probs",
            takes=f"{takes} of the top-label confidence",
            infinite=infinite,
            when="when it is 1 (every other class exactly 0)",
            instead=instead,
            columns=top,
        )
        if moved is not given_conf:
            changed = infinite | (moved != conf)
            conf = np.asarray(moved, dtype=np.float64)
            others = np.where(changed, 1.0 - conf, others)
    rest = np.divide(probs, others[:, None], out=probs, where=~empty[:, None])
    if empty.any():  # every other class has probability exactly 0: they share equally
        rest[empty] = 1.0 / (n_classes - 1)
        rest[rows[empty], top[empty]] = 0.0
    feature = np.log(conf) - np.log(others) if domain == "logit" else conf
    return Inputs(2, n_classes, feature, top, rest)


def _logit(p: np.ndarray) -> np.ndarray:
    """log(p / (1 - p)) of probabilities strictly inside (0, 1)."""
    return np.log(p) - np.log1p(-p)


# --------------------------------------------------------------------------- the wrapper


def maps_state(**map_fields: Field) -> Field:
    """The state of a :class:`BinaryMapCalibrator` whose every map has these fields."""
    return obj(
        n_classes=integer(minimum=2),
        input_ndim=integer(minimum=1, maximum=2),
        maps=array(obj(**map_fields)),
    )


class BinaryMapCalibrator(Calibrator, Generic[MapT]):
    """A calibrator built from a binary map: one map for 1-D scores, one per class
    (``multiclass="ovr"``) or one on the top label (``"top-label"``) for (N, C) input.

    Subclasses set ``kind`` and ``domain`` and implement ``_fit_map``, ``_apply_map``,
    ``_map_state`` and ``_map_from_state``; ``_learned`` may copy fields of ``maps_`` into
    convenience attributes.
    """

    multiclass: str
    # learned in fit (annotations only: the attributes exist once fitted)
    maps_: tuple[MapT, ...]
    n_classes_: int
    input_ndim_: int
    #: How 1-D and 2-D input is read (see :data:`DOMAINS`).
    domain: ClassVar[str] = "probs"
    #: The map takes logs of probabilities (beta calibration's log p and log(1 - p)), so it has
    #: a ``clip`` setting; the "logit" domain takes them too.
    takes_logs: ClassVar[bool] = False

    # ------------------------------------------------------------------ hooks
    def _domain(self) -> str:
        return self.domain

    def _check_scores(self, scores: Any, *, where: str) -> None:
        logs = self._domain() == "logit" or self.takes_logs
        if logs and getattr(self, "clip", None) is None:  # refuses 0 and 1, warns of nothing
            mode = v.choice(self.multiclass, name="multiclass", allowed=MULTICLASS, where=where)
            self._read(scores, mode=mode, where=where, fitting=False)

    def _read(self, scores: Any, *, mode: str, where: str, fitting: bool) -> Inputs:
        """The scores read under this map's settings: ``clip`` where it takes logs of
        probabilities, ``check_logits`` (at fit) where it reads logits."""
        domain = self._domain()
        clip = v.clip_setting(getattr(self, "clip", None), where=where)
        logs = domain == "logit" or self.takes_logs
        if not logs:
            no_clip_for_logits(clip, where=where)
        check = bool(getattr(self, "check_logits", False)) and fitting
        return read_inputs(
            scores, domain=domain, mode=mode, where=where, clip=clip, logs=logs, check_logits=check
        )

    def _check_settings(self, where: str) -> None:
        """Validate the settings given to ``__init__`` (raise :class:`InputError`)."""

    def _features(self, x: np.ndarray, *, where: str) -> np.ndarray:
        """Last transformation of the map inputs (all maps at once); identity by default."""
        return x

    @abc.abstractmethod
    def _fit_map(self, x: np.ndarray, y: np.ndarray, *, where: str) -> MapT:
        """Fit one binary map on float64 scores ``x`` and 0/1 outcomes ``y`` (int64)."""

    @abc.abstractmethod
    def _apply_map(self, fitted: MapT, x: np.ndarray, *, where: str) -> np.ndarray:
        """P(event) in [0, 1] for float64 scores ``x``."""

    @abc.abstractmethod
    def _map_state(self, fitted: MapT) -> dict[str, Any]:
        """One map as JSON-ready values."""

    @abc.abstractmethod
    def _map_from_state(self, state: dict[str, Any]) -> MapT:
        """One map from :meth:`_map_state` output (raise on malformed values)."""

    def _learned(self) -> None:
        """Set convenience attributes from ``maps_`` (after fit and after loading)."""

    # ------------------------------------------------------------------ scikit-learn
    # ------------------------------------------------------------------ API
    def fit(self, scores: Any, labels: Any) -> BinaryMapCalibrator[MapT]:
        """Fit on a calibration split: 1-D scores with labels 0/1, or (N, C) scores with labels
        0..C-1. Returns ``self``."""
        where = f"{type(self).__name__}.fit"
        mode = v.choice(self.multiclass, name="multiclass", allowed=MULTICLASS, where=where)
        self._check_settings(where)
        inputs = self._read(scores, mode=mode, where=where, fitting=True)
        y = v.labels(labels, n=inputs.x.shape[0], n_classes=inputs.n_classes, where=where)
        x = self._features(inputs.x, where=where)
        maps: list[MapT] = []
        if inputs.ndim == 1:
            if np.all(y == y[0]):
                raise InputError(
                    f"{where}: every label is {y[0]}; a calibration split needs both outcomes."
                )
            maps.append(self._fit_map(x, y, where=where))
        elif mode == "ovr":
            for k in range(inputs.n_classes):
                event = (y == k).astype(np.int64)
                sub = f"{where} (class {k} vs rest)"
                _warn_one_outcome(event, sub, f"class {k}")
                maps.append(self._fit_map(np.ascontiguousarray(x[:, k]), event, where=sub))
        else:
            correct = (inputs.top == y).astype(np.int64)
            sub = f"{where} (top label)"
            _warn_one_outcome(correct, sub, "the top-label prediction")
            maps.append(self._fit_map(x, correct, where=sub))
        self.n_classes_ = inputs.n_classes
        self.input_ndim_ = inputs.ndim
        self.maps_ = tuple(maps)
        self._learned()
        return self

    def predict_proba(self, scores: Any) -> np.ndarray:
        """Calibrated probabilities: (N,) P(label = 1) for 1-D scores, (N, C) with rows summing
        to 1 for (N, C) scores."""
        where = f"{type(self).__name__}.predict_proba"
        self._check_fitted("predict_proba")
        mode = v.choice(self.multiclass, name="multiclass", allowed=MULTICLASS, where=where)
        self._check_settings(where)
        inputs = self._read(scores, mode=mode, where=where, fitting=False)
        self._check_shape(inputs, mode, where)
        x = self._features(inputs.x, where=where)
        if inputs.ndim == 1:
            return self._apply_map(self.maps_[0], x, where=where)
        if mode == "ovr":
            out = np.empty(x.shape, dtype=np.float64)
            for k, fitted in enumerate(self.maps_):
                out[:, k] = self._apply_map(fitted, np.ascontiguousarray(x[:, k]), where=where)
            return _renormalise(out, where=where)
        conf = self._apply_map(self.maps_[0], x, where=where)
        probs: np.ndarray = inputs.rest * (1.0 - conf)[:, None]
        probs[np.arange(conf.size), inputs.top] = conf
        return probs

    def _check_shape(self, inputs: Inputs, mode: str, where: str) -> None:
        expected = self.n_classes_ if self.input_ndim_ == 2 and mode == "ovr" else 1
        if len(self.maps_) != expected:
            raise InputError(
                f"{where}: fitted with {len(self.maps_)} map(s) but multiclass={mode!r} needs "
                f"{expected}; multiclass was changed after fit: fit again."
            )
        fitted_on = (
            "1-D binary scores"
            if self.input_ndim_ == 1
            else f"{self.n_classes_} classes ({self.n_classes_} columns)"
        )
        got = "1-D scores" if inputs.ndim == 1 else f"{inputs.n_classes} columns"
        if inputs.ndim != self.input_ndim_ or inputs.n_classes != self.n_classes_:
            raise InputError(
                f"{where}: fitted on {fitted_on}, got {got}; pass scores shaped like the "
                "calibration split."
            )

    # ------------------------------------------------------------------ JSON
    def _state(self) -> dict[str, Any]:
        return {
            "n_classes": self.n_classes_,
            "input_ndim": self.input_ndim_,
            "maps": [self._map_state(m) for m in self.maps_],
        }

    def _set_state(self, state: dict[str, Any]) -> None:
        # the types were checked against _state_spec (from_dict, see maps_state)
        n_classes = int(state["n_classes"])
        ndim = int(state["input_ndim"])
        maps = state["maps"]
        if ndim == 1 and n_classes != 2:
            raise InputError(
                f"inconsistent shape in the {self.kind!r} state: 1-D binary scores have 2 "
                f"classes, got input_ndim = 1 and n_classes = {n_classes}."
            )
        expected = n_classes if ndim == 2 and self.multiclass == "ovr" else 1
        if len(maps) != expected:
            raise InputError(
                f"a {self.kind!r} calibrator with these settings needs {expected} "
                f"map(s), the file holds {len(maps)}."
            )
        fitted = []
        for k, m in enumerate(maps):
            try:
                fitted.append(self._map_from_state(m))
            except InputError as exc:
                raise InputError(f"state.maps[{k}]: {exc}") from None
        self.n_classes_ = n_classes
        self.input_ndim_ = ndim
        self.maps_ = tuple(fitted)
        self._learned()


def _warn_one_outcome(event: np.ndarray, where: str, what: str) -> None:
    positives = int(event.sum())
    if positives in (0, event.size):
        happened = "never" if positives == 0 else "always"
        warnings.warn(
            f"{where}: {what} is {happened} the event in the calibration labels; its map is "
            "fitted on one outcome only and predicts (nearly) a constant.",
            CalibkitWarning,
            stacklevel=3,
        )


def _renormalise(out: np.ndarray, *, where: str) -> np.ndarray:
    sums = out.sum(axis=1)
    zero = sums == 0.0
    out = np.divide(out, sums[:, None], out=out, where=~zero[:, None])
    if zero.any():
        count = int(zero.sum())
        warnings.warn(
            f"{where}: every one-vs-rest map gave probability 0 in {count} "
            f"{'row' if count == 1 else 'rows'} (first row {int(np.argmax(zero))}); "
            "those rows get the uniform distribution 1/C, as scikit-learn does.",
            CalibkitWarning,
            stacklevel=3,
        )
        out[zero] = 1.0 / out.shape[1]
    return out


# --------------------------------------------------------------------------- Newton solver

#: Newton decrement (g' H^-1 g, in units of the mean log-loss) below which the fit has converged.
NEWTON_TOL = 1e-20
NEWTON_MAX_ITER = 100


@dataclass(frozen=True)
class LogisticFit:
    """Coefficients of a logistic regression and how the solver got there. ``separable``: the
    0/1 labels are (quasi-)separated by the features, so no finite maximum exists."""

    coef: np.ndarray
    converged: bool
    n_iter: int
    decrement: float
    loss: float
    separable: bool = False


#: A fit on 0/1 labels that takes more Newton iterations than this is checked for separation
#: by a linear program (separable data converge only linearly, in 30 or more iterations; data
#: with a finite optimum, quadratically, in under 20).
_SEPARATION_ITERATIONS = 20


def fit_logistic(
    features: np.ndarray,
    targets: np.ndarray,
    start: np.ndarray | None = None,
    *,
    max_iter: int = NEWTON_MAX_ITER,
    tol: float = NEWTON_TOL,
) -> LogisticFit:
    """Minimise the mean log-loss ``mean(log(1 + exp(X w)) - t * X w)`` by Newton's method.

    ``features`` is (n, k) float64 (include a column of ones for an intercept) and ``targets``
    lie in [0, 1] (Platt's smoothed targets or 0/1 labels). Columns are scaled by their largest
    absolute value for conditioning (Newton's iterates do not depend on it otherwise). Each step
    solves with the pseudo-inverse of the Hessian (so collinear columns are harmless) and
    backtracks until the loss falls enough, except once the Newton decrement is below 1e-10, in
    the region of quadratic convergence, where the full step is taken. Convergence: the Newton
    decrement ``g' H^-1 g`` (affine invariant) falls below ``tol``; that last step is taken too.

    With 0/1 targets the maximum may not exist: when the features separate the labels the loss
    only approaches 0 as the coefficients grow without bound (and the decrement shrinks with
    it). A fit whose coefficients grow large is therefore checked with the linear program of
    Konis (2007): is there a direction w with (2 y_i - 1) x_i . w >= 0 for every row and > 0
    for some? If so the result has ``separable=True`` and ``converged=False``.
    """
    scale = np.abs(features).max(axis=0)
    scale[scale == 0.0] = 1.0
    x = features / scale
    w = np.zeros(x.shape[1]) if start is None else np.asarray(start, dtype=np.float64) * scale
    fit = _newton(x, targets, w, max_iter=max_iter, tol=tol)
    hard = bool(np.all((targets == 0.0) | (targets == 1.0)))
    if hard and _separable(x, targets, slow=fit.n_iter > _SEPARATION_ITERATIONS):
        fit = LogisticFit(fit.coef, False, fit.n_iter, fit.decrement, fit.loss, True)
    return LogisticFit(
        fit.coef / scale, fit.converged, fit.n_iter, fit.decrement, fit.loss, fit.separable
    )


def _evaluate(z: np.ndarray, targets: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Mean log-loss, sigmoid(z) and sigmoid'(z) = p (1 - p), from one exp and one log1p."""
    e = np.exp(-np.abs(z))
    loss = float(np.mean(np.maximum(z, 0.0) + np.log1p(e) - targets * z))
    inverse = 1.0 / (1.0 + e)
    p = np.where(z >= 0.0, inverse, e * inverse)
    return loss, p, e * inverse * inverse


def _newton(
    x: np.ndarray, targets: np.ndarray, w: np.ndarray, *, max_iter: int, tol: float
) -> LogisticFit:
    n = x.shape[0]
    decrement = math.inf
    current, p, slope = _evaluate(x @ w, targets)
    for iteration in range(1, max_iter + 1):
        gradient = x.T @ (p - targets) / n
        hessian = (x.T * slope) @ x / n
        step = np.linalg.pinv(hessian, rcond=1e-13, hermitian=True) @ gradient
        decrement = float(gradient @ step)
        if not math.isfinite(decrement):
            return LogisticFit(w, False, iteration, decrement, current)
        if decrement <= tol:  # converged; the last (tiny) step squares the error once more
            return LogisticFit(w - step, True, iteration, max(decrement, 0.0), current)
        t = 1.0
        while True:
            trial = w - t * step
            value, p_trial, slope_trial = _evaluate(x @ trial, targets)
            # in the region of quadratic convergence the full step is taken: the decrease is
            # then below what the loss can resolve
            if decrement < 1e-10 or value <= current - 0.25 * t * decrement:
                break
            t *= 0.5
            if t < 1e-10:
                return LogisticFit(w, False, iteration, decrement, current)
        w, current, p, slope = trial, value, p_trial, slope_trial
    return LogisticFit(w, False, max_iter, decrement, current)


def _separable(x: np.ndarray, labels: np.ndarray, *, slow: bool) -> bool:
    """Whether the rows' features (quasi-)completely separate the 0/1 labels: some direction w
    gives every row a margin (2 y_i - 1) x_i . w >= 0, and some row a positive one.

    One feature plus an intercept (Platt scaling, the one-feature refits of beta calibration),
    one feature alone, or the intercept alone: an exact O(n) comparison. Otherwise, when
    ``slow`` (the Newton iteration was slow to converge, as it is on separable data), Konis's
    (2007) linear program: maximise sum_i m_i . w subject to m_i . w >= 0 and -1 <= w_j <= 1,
    with m_i = (2 y_i - 1) x_i; a positive optimum means separation.
    """
    positive = labels == 1.0
    if positive.all() or not positive.any():
        return True  # one outcome: the intercept alone runs off to +-infinity
    constant = np.all(x == x[:1], axis=0)
    varying = np.flatnonzero(~constant)
    if varying.size == 1 and x.shape[1] - 1 <= 1:
        f = x[:, varying[0]]
        if x.shape[1] == 1:  # one feature through the origin: margins of one sign
            signed = f * np.where(positive, 1.0, -1.0)
            return bool(np.all(signed >= 0) or np.all(signed <= 0))
        return bool(
            f[~positive].max() <= f[positive].min() or f[positive].max() <= f[~positive].min()
        )
    if varying.size == 0 or not slow:
        return False
    from scipy.optimize import linprog

    margins = x * np.where(positive, 1.0, -1.0)[:, None]
    result = linprog(
        -margins.sum(axis=0),
        A_ub=-margins,
        b_ub=np.zeros(x.shape[0]),
        bounds=[(-1.0, 1.0)] * x.shape[1],
        method="highs",
    )
    return bool(result.status == 0 and -result.fun > 1e-9 * x.shape[0])


def warn_not_converged(fit: LogisticFit, where: str, hint: str) -> None:
    if fit.separable:
        reason = (
            "the features separate the labels, so the maximum-likelihood map is a step "
            "(infinite coefficients); the returned map is the last Newton iterate, nearly that "
            "step."
        )
    else:
        reason = (
            f"Newton's method did not converge after {fit.n_iter} iterations (Newton "
            f"decrement {fit.decrement:.3g})."
        )
    warnings.warn(
        f"{where}: {reason} {hint} converged_ is False.",
        CalibkitWarning,
        stacklevel=4,
    )
