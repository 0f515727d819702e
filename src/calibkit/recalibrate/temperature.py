"""Temperature scaling (Guo et al. 2017): one positive scalar T divides every logit (or binary
score) before the softmax (sigmoid), fitted by the held-out negative log-likelihood."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import _validate as v
from .._errors import CalibkitWarning, InputError
from .._extras import require
from ..forecasts import sigmoid, softmax
from ..measure import temperature as tm
from ._inputs import away_from_0_and_1, no_clip_for_logits, warn_extreme_logits
from ._weights import fit_weights
from .base import Calibrator, flag, integer, number, obj, text
from .invariance import InvarianceReport, argmax_report, check_invariance
from .temperature_device import fit_on_device

__all__ = ["TemperatureScaling", "fit_temperature"]

METHODS = ("newton", "golden")
#: The bracket and iteration count of the golden-section search (method="golden").
GOLDEN_BRACKET = (0.05, 20.0)
GOLDEN_ITERATIONS = 80


class TemperatureScaling(Calibrator):
    """Divide logits by a fitted temperature: ``softmax(z / T)``, or ``sigmoid(s / T)`` for 1-D
    binary scores.

    Parameters
    ----------
    from_logits : bool
        ``True`` (default): the scores are logits (N, C) or binary scores (N,). ``False``: they
        are probabilities, whose logs are used as logits ((N, C) rows), or their log-odds (1-D
        P(label = 1)).
    method : {"newton", "golden"}
        ``"newton"`` (default): the exact maximum-likelihood T, from a safeguarded Newton
        iteration on beta = 1/T, where the NLL is convex (a handful of passes over the data).
        ``"golden"``: a golden-section search over T in [0.05, 20] with 80 iterations.
    clip : float, optional
        With ``from_logits=False``: ``None`` (default) refuses probabilities of exactly 0 or 1
        (their logs are infinite), naming the first row and value; a small eps such as 1e-7
        moves every probability into [eps, 1 - eps] first, in fit and predict alike, with a
        :class:`~calibkit.CalibkitWarning` counting the rows moved.
    check_logits : bool
        With ``from_logits=True``, ``fit`` refuses "logits" that look like probabilities
        (every entry in [0, 1] and every row summing to 1; 1-D scores all in [0, 1]): fitted as
        logits they give a wrong temperature without a word. ``False`` insists that they are
        logits.

    Attributes
    ----------
    temperature_ : float
        T > 1 softens an overconfident model, T < 1 sharpens an underconfident one.
    n_classes_ : int
        2 for 1-D binary scores.
    nll_before_, nll_after_ : float
        Mean NLL on the calibration data at T = 1 and at the fitted T.
    gradient_ : float
        d NLL / d T at the fitted T (zero up to rounding for ``"newton"``).
    n_evaluations_ : int
        Passes over the data the fit took.
    converged_ : bool
    invariance_ : InvarianceReport
        What the map changed on the calibration data, checked exactly after the fit on the
        logit scale (nothing: argmax and accuracy; for binary scores also the order, AUC and the
        decisions at 0.5). Not saved to JSON.

    Notes
    -----
    Logits far beyond what a softmax model produces (log-probabilities of Gaussian naive Bayes,
    down to -1e10) or whose log-loss a handful of rows dominate give a temperature fitted to
    those rows, which can make most others worse: ``fit`` warns
    (:func:`~calibkit.recalibrate._inputs.warn_extreme_logits`).

    The fit does not depend on the logits' units: logits of order 3e8 or 1e-100 are fitted as
    exactly as logits of order 1. Their spread (the root mean square of each row's standard
    deviation across its classes; half the root mean square of binary scores) must lie in
    1e-140 .. 1e140, where its square is a float64; outside it :class:`InputError` says so.
    Multiply such logits by a constant c first: the temperature of c * z is c times that of z.

    Examples
    --------
    Six examples: T = 1.22975, and the NLL falls from 0.82278 to 0.81243.

    >>> import calibkit as ck
    >>> logits = [[3, 1, 0], [2.5, 1, 0], [3, 0.5, 0], [1.5, 2, 0], [0.5, 0, 1.5], [2, 2.2, 0]]
    >>> ts = ck.TemperatureScaling().fit(logits, [0, 0, 1, 1, 2, 0])
    >>> round(ts.temperature_, 5), round(ts.nll_before_, 5), round(ts.nll_after_, 5)
    (1.22975, 0.82278, 0.81243)
    """

    kind = "temperature"
    _params_spec = {
        "from_logits": flag(),
        "method": text(*METHODS),
        "clip": number(minimum=0.0, maximum=0.5, nullable=True),
        "check_logits": flag(),
    }
    _state_spec = obj(
        temperature=number(),
        n_classes=integer(minimum=2),
        nll_before=number(),
        nll_after=number(),
        gradient=number(),
        n_evaluations=integer(minimum=0),
        converged=flag(),
    )

    def __init__(
        self,
        *,
        from_logits: bool = True,
        method: str = "newton",
        clip: float | None = None,
        check_logits: bool = True,
    ) -> None:
        self.from_logits = from_logits
        self.method = method
        self.clip = clip
        self.check_logits = check_logits

    def fit(self, scores: Any, labels: Any, *, sample_weight: Any = None) -> TemperatureScaling:
        """Fit T on calibration scores (logits (N, C) or binary scores (N,)) and labels.

        ``sample_weight`` (one finite weight >= 0 per row, not all 0) fits the weighted NLL
        ``sum_i w_i NLL_i / sum_i w_i``: integer weights fit what the rows repeated that many
        times fit, a row of weight 0 is left out, and w and c * w give the same T.
        ``nll_before_`` and ``nll_after_`` are then weighted means.
        """
        where = f"{type(self).__name__}.fit"
        method = v.choice(self.method, name="method", allowed=METHODS, where=where)
        on_device = None
        if method == "newton" and sample_weight is None and self.from_logits is True:
            _check_settings(self, where=where)
            on_device = fit_on_device(scores, labels, check_logits=self.check_logits, where=where)
        if on_device is not None:  # a tensor: each pass summed on its device
            solution, self.n_classes_, report = on_device
            at_one = solution.at_one or solution.objective
        else:
            z, y, w = _prepare(scores, labels, sample_weight, settings=self, where=where)
            if self.from_logits:
                warn_extreme_logits(z, y, where=where)
            if method == "newton":
                solution = tm.solve(z, y, where=where, sample_weight=w)
                at_one = solution.at_one or _evaluate(z, y, 1.0, w)
            else:
                at_one = _evaluate(z, y, 1.0, w)
                solution = _golden(z, y, w)
            self.n_classes_ = 2 if z.ndim == 1 else int(z.shape[1])
        beta = solution.beta
        self.temperature_ = 1.0 / beta
        self.nll_before_ = at_one.value
        self.nll_after_ = solution.objective.value
        self.gradient_ = -solution.objective.gradient * beta * beta  # chain rule: d beta / d T
        self.n_evaluations_ = solution.n_evaluations
        self.converged_ = solution.converged
        if not solution.converged:
            warnings.warn(
                f"{where}: the temperature fit did not converge in {solution.n_evaluations} "
                f"passes (d NLL / d T = {self.gradient_:.3g} at T = {self.temperature_:.6g}); "
                "the returned temperature is the last iterate.",
                CalibkitWarning,
                stacklevel=2,
            )
        if on_device is None:
            report = self._check_invariance(z, y, solution.objective)
        self.invariance_ = self._warn_if_moved(report)
        return self

    def fit_engine(
        self,
        data: Any,
        labels: Any = None,
        *,
        engine: str,
        columns: Mapping[str, Any] | None = None,
    ) -> TemperatureScaling:
        """Fit T where the logits are: ``engine="stream"`` (a callable returning a fresh iterator
        of ``(logits, labels)`` chunks, or a file read in batches), ``"duckdb"`` (a Parquet / CSV
        path or glob) or ``"spark"`` (a DataFrame); ``columns`` names the logit and label
        columns (:func:`calibkit.io.read_predictions`'s options). The Newton iteration of
        :meth:`fit`, with one pass or one aggregation per step; the invariance check is left out
        (it needs the rows: temperature scaling keeps every argmax by construction), and so are
        ``check_logits`` and the extreme-logit warning (they read the rows too): judge the map
        on held-out rows.
        """
        from ..engines.temperature import fit_temperature_with_engine

        where = f"{type(self).__name__}.fit_engine"
        if not self.from_logits or self.method != "newton" or self.clip is not None:
            raise InputError(
                f"{where}: an engine fits logits by Newton's method; from_logits=False, method= "
                "and clip= apply to arrays in memory."
            )
        fitted = fit_temperature_with_engine(
            data, labels, engine=engine, columns=columns, where=where
        )
        solution, beta = fitted.solution, fitted.solution.beta
        self.temperature_ = 1.0 / beta
        self.n_classes_ = fitted.n_classes
        self.nll_before_ = fitted.nll_before
        self.nll_after_ = solution.objective.value
        self.gradient_ = -solution.objective.gradient * beta * beta
        self.n_evaluations_ = solution.n_evaluations
        self.converged_ = solution.converged
        if not solution.converged:
            warnings.warn(
                f"{where}: the temperature fit did not converge in {solution.n_evaluations} "
                f"passes; the returned temperature is the last iterate.",
                CalibkitWarning,
                stacklevel=2,
            )
        return self

    def _check_scores(self, scores: Any, *, where: str) -> None:
        if self.from_logits is False and self.clip is None:  # refuses 0 and 1, warns of nothing
            _logits(scores, settings=self, where=where)

    def _check_invariance(
        self, z: np.ndarray, y: np.ndarray, final: tm.Objective
    ) -> InvarianceReport:
        """What the fitted map changed on the calibration data (nothing, for T > 0: the order of
        every row's logits, hence argmax and accuracy, and for binary scores the order of the
        scores, AUC and the 0.5 decisions). Checked exactly, not assumed (:meth:`fit` warns if
        anything moved: rounding can tie two nearly equal scaled logits).

        The numba pass at the fitted T checks every argmax of the logits divided by T as it
        goes (``final.argmax``); otherwise, or when a row moved, the logits are divided here."""
        report = None
        if final.argmax is not None and 1.0 / final.beta == self.temperature_:
            moved, first, correct = final.argmax
            if moved == 0:
                report = argmax_report(z.shape[0], z.shape[1], correct=correct)
        if report is None:
            # on the logit scale: probabilities saturate at 0 and 1 and would tie there
            report = check_invariance(z, self._scaled(z), labels=y, threshold=0.0)
        return report

    def _warn_if_moved(self, report: InvarianceReport) -> InvarianceReport:
        if not report.ok:
            warnings.warn(
                f"{type(self).__name__}.fit: the fitted temperature changed what it must not: "
                f"{report}",
                CalibkitWarning,
                stacklevel=3,
            )
        return report

    def predict_proba(self, scores: Any) -> np.ndarray:
        """Calibrated probabilities: (N,) P(label = 1) for 1-D scores, (N, C) otherwise."""
        where = f"{type(self).__name__}.predict_proba"
        self._check_fitted("predict_proba")
        z = _logits(scores, settings=self, where=where)
        expected = 1 if self.n_classes_ == 2 and z.ndim == 1 else self.n_classes_
        if (z.shape[1] if z.ndim == 2 else 1) != expected:
            raise InputError(
                f"{where}: fitted on {self.n_classes_} classes "
                f"({'1-D binary scores' if expected == 1 else f'{expected} columns'}), got "
                f"{'1-D scores' if z.ndim == 1 else f'{z.shape[1]} columns'}."
            )
        scaled = self._scaled(z)
        return sigmoid(scaled) if z.ndim == 1 else softmax(scaled)

    def as_torch_module(self) -> Any:
        """A ``torch.nn.Module`` that divides logits by the fitted temperature, for serving.

        The temperature is a 0-d float64 buffer ``temperature`` (saved in ``state_dict``, moved
        by ``.to(device)``, not trained); the output keeps the logits' dtype and device. Apply
        ``softmax`` (or ``sigmoid`` for 1-D binary logits) to the output for probabilities.

        Examples
        --------
        >>> import numpy as np, torch, calibkit as ck
        >>> z = np.array([[4.0, 0.0], [3.0, 1.0], [0.0, 2.0], [4.0, 1.0]])
        >>> ts = ck.TemperatureScaling().fit(z, np.array([0, 1, 1, 0]))
        >>> module = ts.as_torch_module()
        >>> logits = torch.tensor(z, dtype=torch.float32)
        >>> bool(torch.allclose(module(logits), logits / ts.temperature_)), module(logits).dtype
        (True, torch.float32)
        """
        self._check_fitted("as_torch_module")
        torch = require("torch", "TemperatureScaling.as_torch_module")
        module: Any = torch.nn.Module

        class TemperatureScaled(module):  # type: ignore[misc]
            """Logits divided by a fitted temperature (calibkit.TemperatureScaling)."""

            def __init__(self, temperature: float) -> None:
                super().__init__()
                self.register_buffer("temperature", torch.tensor(temperature, dtype=torch.float64))

            def forward(self, logits: Any) -> Any:
                return logits / self.temperature

        return TemperatureScaled(self.temperature_)

    def _scaled(self, z: np.ndarray) -> np.ndarray:
        # in float64: float32 logits divided in float32 would round nearby values into ties
        return z.astype(np.float64) / self.temperature_

    def _state(self) -> dict[str, Any]:
        return {
            "temperature": self.temperature_,
            "n_classes": self.n_classes_,
            "nll_before": self.nll_before_,
            "nll_after": self.nll_after_,
            "gradient": self.gradient_,
            "n_evaluations": self.n_evaluations_,
            "converged": self.converged_,
        }

    def _set_state(self, state: dict[str, Any]) -> None:
        # the types were checked against _state_spec (from_dict)
        temperature = float(state["temperature"])
        if not temperature > 0:
            raise InputError(f"state.temperature must be positive, got {temperature}.")
        self.temperature_ = temperature
        self.n_classes_ = int(state["n_classes"])
        self.nll_before_ = float(state["nll_before"])
        self.nll_after_ = float(state["nll_after"])
        self.gradient_ = float(state["gradient"])
        self.n_evaluations_ = int(state["n_evaluations"])
        self.converged_ = bool(state["converged"])


def fit_temperature(
    logits: Any,
    labels: Any = None,
    *,
    from_logits: bool = True,
    method: str = "newton",
    clip: float | None = None,
    check_logits: bool = True,
    engine: str | None = None,
    columns: Mapping[str, Any] | None = None,
    sample_weight: Any = None,
) -> float:
    """The maximum-likelihood temperature of held-out logits (softmax) or binary scores
    (sigmoid). See :class:`TemperatureScaling`.

    With ``engine`` the logits stay where they are: ``"stream"`` (a callable returning a fresh
    iterator of ``(logits, labels)`` chunks, or a file read in batches), ``"duckdb"`` (a
    Parquet/CSV path or glob) or ``"spark"`` (a DataFrame); ``columns`` names the columns as
    :func:`calibkit.io.read_predictions` takes them. The same Newton iteration runs with one
    pass (or one aggregation) per step and agrees with the in-memory fit to rounding.
    ``clip`` and ``check_logits`` are :class:`TemperatureScaling`'s (arrays in memory), and so
    is ``sample_weight`` (the weighted NLL; see :meth:`TemperatureScaling.fit`).

    Examples
    --------
    >>> import calibkit as ck
    >>> round(ck.fit_temperature([[2.0, 0.0], [0.0, 1.0], [1.0, 0.0]], [0, 1, 1]), 4)
    1.3222

    Weight 2 on the last row fits what that row given twice fits:

    >>> logits, labels = [[2.0, 0.0], [0.0, 1.0], [1.0, 0.0]], [0, 1, 1]
    >>> round(ck.fit_temperature(logits, labels, sample_weight=[1, 1, 2]), 4)
    3.4348
    >>> round(ck.fit_temperature(logits + [[1.0, 0.0]], labels + [1]), 4)
    3.4348
    """
    if engine is not None and engine != "memory":
        if sample_weight is not None:
            raise InputError(
                f"fit_temperature: with engine={engine!r} the weights are a column of the "
                "input: name it in columns= ({'weight': ...}) instead of passing an array."
            )
        if not from_logits or method != "newton" or clip is not None or check_logits is not True:
            raise InputError(
                "fit_temperature: an engine fits logits by Newton's method; from_logits=False, "
                "method=, clip= and check_logits= apply to arrays in memory."
            )
        return (
            TemperatureScaling()
            .fit_engine(logits, labels, engine=engine, columns=columns)
            .temperature_
        )
    if columns is not None:
        raise InputError(
            "fit_temperature: columns= names the columns of a file or table read by an "
            "engine; with arrays in memory pass the arrays (or engine='duckdb')."
        )
    if labels is None:
        raise InputError("fit_temperature: pass the labels (or an engine= and its columns=).")
    scaler = TemperatureScaling(
        from_logits=from_logits, method=method, clip=clip, check_logits=check_logits
    )
    return scaler.fit(logits, labels, sample_weight=sample_weight).temperature_


def _check_settings(ts: TemperatureScaling, *, where: str) -> None:
    if not isinstance(ts.from_logits, (bool, np.bool_)):
        raise InputError(f"{where}: from_logits must be True or False, got {ts.from_logits!r}.")
    v.clip_setting(ts.clip, where=where)
    if ts.from_logits:
        no_clip_for_logits(ts.clip, where=where)


def _logits(scores: Any, *, settings: TemperatureScaling, where: str) -> np.ndarray:
    """Logits as given, or those of probabilities (``from_logits=False``) under the ``clip`` policy:
    the log of (N, C) rows, the log-odds of a 1-D P(label = 1)."""
    _check_settings(settings, where=where)
    if settings.from_logits:
        return v.scores(scores, where=where)
    arr = v.to_numpy(scores, name="probs", where=where)
    if arr.ndim == 2:
        p = v.probabilities(arr, where=where)
        # a row with a 1 has zeros beside it: 0 is the value whose log is infinite
        p = away_from_0_and_1(
            p, clip=settings.clip, where=where, name="probs", takes="the log", ends=(0.0,)
        )
        return np.log(p)
    p = v.confidence(arr, where=where, name="probs")
    p = away_from_0_and_1(p, clip=settings.clip, where=where, name="probs", takes="the log-odds")
    p64 = p.astype(np.float64)
    return np.log(p64) - np.log1p(-p64)


def _prepare(
    scores: Any, labels: Any, sample_weight: Any, *, settings: TemperatureScaling, where: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The logits, labels and weights of the rows that count (weight > 0), every row checked."""
    z = _logits(scores, settings=settings, where=where)
    n_classes = 2 if z.ndim == 1 else z.shape[1]
    y = v.labels(labels, n=z.shape[0], n_classes=n_classes, where=where)
    weights = fit_weights(sample_weight, n=z.shape[0], where=where)
    if settings.from_logits:
        v.logits_not_probabilities(z, where=where, check=settings.check_logits)
    if weights is not None:
        z, y = weights.rows(z), weights.rows(y)
    if z.ndim == 1 and np.all(y == y[0]):
        counted = "" if weights is None else " with a positive weight"
        raise InputError(
            f"{where}: every label{counted} is {y[0]}; a calibration split needs both outcomes."
        )
    return z, y, None if weights is None else weights.w


def _evaluate(z: np.ndarray, y: np.ndarray, beta: float, w: np.ndarray | None) -> tm.Objective:
    """The objective at ``beta``, weighted when there are weights."""
    return tm.evaluate(z, y, beta) if w is None else tm.evaluate(z, y, beta, w)


def _golden(z: np.ndarray, y: np.ndarray, w: np.ndarray | None = None) -> tm.Solution:
    """A golden-section search in T over a fixed bracket (deterministic)."""
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = GOLDEN_BRACKET

    def nll(t: float) -> tm.Objective:
        return _evaluate(z, y, 1.0 / t, w)

    c, d = b - ratio * (b - a), a + ratio * (b - a)
    fc, fd = nll(c), nll(d)
    for _ in range(GOLDEN_ITERATIONS):
        if fc.value < fd.value:
            b, d, fd = d, c, fc
            c = b - ratio * (b - a)
            fc = nll(c)
        else:
            a, c, fc = c, d, fd
            d = a + ratio * (b - a)
            fd = nll(d)
    best = fc if fc.value < fd.value else fd
    inside = GOLDEN_BRACKET[0] < 1.0 / best.beta < GOLDEN_BRACKET[1]
    return tm.Solution(best.beta, best, GOLDEN_ITERATIONS + 2, bool(inside))
