"""What the binary recalibration maps share: the multiclass wrapper and its JSON state. How
they read their input is :mod:`calibkit.recalibrate._binary_inputs`; the Newton solver for small
logistic regressions, :mod:`calibkit.recalibrate._logistic`.

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
import warnings
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np

from .. import _validate as v
from .._errors import CalibkitWarning, InputError
from ._binary_inputs import Inputs, read_inputs
from ._inputs import no_clip_for_logits
from ._logistic import LogisticFit, fit_logistic, sigmoid
from ._weights import fit_weights
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

MapT = TypeVar("MapT")


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
    #: How 1-D and 2-D input is read (see :data:`~calibkit.recalibrate._binary_inputs.DOMAINS`).
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
    def _fit_map(
        self, x: np.ndarray, y: np.ndarray, *, where: str, w: np.ndarray | None = None
    ) -> MapT:
        """Fit one binary map on float64 scores ``x`` and 0/1 outcomes ``y`` (int64), each row
        weighed by ``w`` (positive weights, or None: every row once)."""

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
    def fit(
        self, scores: Any, labels: Any, *, sample_weight: Any = None
    ) -> BinaryMapCalibrator[MapT]:
        """Fit on a calibration split: 1-D scores with labels 0/1, or (N, C) scores with labels
        0..C-1. Returns ``self``.

        ``sample_weight`` (one finite weight >= 0 per row, not all 0) weighs each row in every
        map's fit: integer weights fit what the rows repeated that many times fit, a row of
        weight 0 is left out (as scikit-learn does), and w and c * w fit the same map.
        """
        where = f"{type(self).__name__}.fit"
        mode = v.choice(self.multiclass, name="multiclass", allowed=MULTICLASS, where=where)
        self._check_settings(where)
        inputs = self._read(scores, mode=mode, where=where, fitting=True)
        y = v.labels(labels, n=inputs.x.shape[0], n_classes=inputs.n_classes, where=where)
        weights = fit_weights(sample_weight, n=y.size, where=where)
        x = self._features(inputs.x, where=where)
        top = inputs.top
        w = None
        if weights is not None:
            x, y, w = weights.rows(x), weights.rows(y), weights.w
            top = weights.rows(top) if top.size else top
        counted = "" if weights is None else " with a positive weight"
        maps: list[MapT] = []
        if inputs.ndim == 1:
            if np.all(y == y[0]):
                raise InputError(
                    f"{where}: every label{counted} is {y[0]}; a calibration split needs both "
                    "outcomes."
                )
            maps.append(self._fit_map(x, y, where=where, w=w))
        elif mode == "ovr":
            for k in range(inputs.n_classes):
                event = (y == k).astype(np.int64)
                sub = f"{where} (class {k} vs rest)"
                _warn_one_outcome(event, sub, f"class {k}")
                maps.append(self._fit_map(np.ascontiguousarray(x[:, k]), event, where=sub, w=w))
        else:
            correct = (top == y).astype(np.int64)
            sub = f"{where} (top label)"
            _warn_one_outcome(correct, sub, "the top-label prediction")
            maps.append(self._fit_map(x, correct, where=sub, w=w))
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
