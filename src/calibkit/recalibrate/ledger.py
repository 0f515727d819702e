"""The BEFORE/AFTER ledger of a recalibration map, on data the map never saw.

:func:`compare_calibration` fits a calibrator on a calibration split (or cross-fits it, or takes
a separate evaluation set) and reports, on the held-out rows, every instrument before and after
the map: ECE with the noise floor of each side, NLL, Brier, accuracy and AUC, the fitted
parameters, whether the map *can* move each instrument (a theorem about the map), and whether it
*did* (exact comparison, :func:`~calibkit.recalibrate.invariance.check_invariance`).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .. import _validate as v
from .._errors import CalibkitWarning, InputError
from ..forecasts import sigmoid, softmax, top_label
from ..measure.errors import ece as ece_score
from ..measure.ranking import auc as auc_score
from ..measure.scores import accuracy as accuracy_score
from ..measure.scores import brier as brier_score
from ..measure.scores import nll as nll_score
from ..measure.uncertainty import noise_floor
from ._movable import _MEASURES, LIKELIHOOD_FITS, SQUARED_ERROR_FITS, _can_move
from ._worse import row_losses, worse_beyond_noise
from .invariance import check_invariance
from .ledger_table import INSTRUMENTS, CalibrationLedger, LedgerRow, _fmt_worse
from .split import _cross_fit, fit_weighted, stratified_split

__all__ = [
    "LIKELIHOOD_FITS",
    "SQUARED_ERROR_FITS",
    "CalibrationLedger",
    "LedgerRow",
    "compare_calibration",
]

DESIGNS = ("split", "cross-fit", "given")


def compare_calibration(
    calibrator: Any,
    scores: Any,
    labels: Any,
    *,
    from_logits: bool = True,
    calibration_fraction: float = 0.5,
    seed: int = 0,
    folds: int | None = None,
    eval_scores: Any = None,
    eval_labels: Any = None,
    n_bins: int = 15,
    n_sims: int = 1000,
    check_logits: bool = True,
    sample_weight: Any = None,
    eval_sample_weight: Any = None,
) -> CalibrationLedger:
    """Fit a calibrator on calibration rows and judge it, BEFORE and AFTER, on rows it never saw.

    Parameters
    ----------
    calibrator : Calibrator
        An unfitted (or fitted: it is not touched) calibrator such as ``ck.TemperatureScaling()``;
        the ledger fits a copy with the same settings, returned as ``ledger.calibrator``.
    scores : array of shape (N, C) or (N,)
        What the calibrator takes. The BEFORE probabilities are read from them as follows:
        with ``from_logits=True`` (default), (N, C) logits give ``softmax(z)`` and (N,) binary
        scores give ``sigmoid(s)`` (the model's own reading of its scores; the NLL before
        is computed from the logits in log space); with ``from_logits=False`` the scores are
        probabilities, used as they are ((N, C) rows summing to 1, or (N,) P(label = 1)), and a
        calibrator with a ``from_logits`` setting must have it False (checked).
    labels : array of shape (N,)
        Class indices 0..C-1, or 0/1 for (N,) scores.
    calibration_fraction, seed
        The stratified split (:func:`~calibkit.recalibrate.split.stratified_split`): each class
        gives this share of its rows to the fit, the rest are judged. ``seed`` also seeds the
        folds and the noise floor.
    folds : int, optional
        Cross-fit instead (small data): every row is judged by a map fitted on the other folds.
        ``ledger.calibrator`` is then fitted on all rows.
    eval_scores, eval_labels : optional
        A separate evaluation set (say, a test split): the calibrator is fitted on all of
        ``scores`` and judged on these.
    n_bins, n_sims
        Equal-width bins of the ECE (top-label for (N, C), P(label = 1) for (N,)) and simulations
        of its noise floor.
    check_logits : bool
        With ``from_logits=True``, scores that look like probabilities ((N, C) rows in [0, 1]
        summing to 1, or (N,) scores all in [0, 1]) are refused: read as logits they would give
        a wrong BEFORE and a wrong map. ``False`` (here, or the calibrator's own
        ``check_logits=False``) insists that they are logits, for the ledger and its fits.
    sample_weight : array of shape (N,), optional
        Finite, non-negative weights of the rows of ``scores`` (not all zero). The split (or the
        folds) is drawn by label as without them and carries them: the map is fitted with the
        weights of its calibration rows (``fit(..., sample_weight=)``), and the held-out rows of
        ``scores`` are judged with theirs. With ``eval_scores`` they weigh the fit only.
    eval_sample_weight : array of shape (N_eval,), optional
        The weights of the rows of ``eval_scores`` (only with them).

    Returns
    -------
    CalibrationLedger
        ``str()`` prints the table (instrument, what it measures, BEFORE, AFTER, can the
        map move it?); ``to_dict()`` is JSON-ready.

    Notes
    -----
    **Weights.** Every point estimate of the ledger (ECE, NLL, Brier, accuracy, AUC before and
    after, the invariance check's accuracy and AUC) is the weighted measure of the held-out rows
    (:func:`calibkit.ece`, :func:`calibkit.nll`, ... with ``sample_weight=``): with integer
    weights, the number of the same split with each row repeated w times. ``n``, ``n_fit`` and
    ``n_eval`` count rows; ``weight_fit`` and ``weight_eval`` are their total weights. The noise
    floor keeps each row's weight (:func:`calibkit.noise_floor`), and the NLL test of ``worse``
    uses the weighted mean of the paired per-row differences with its standard error
    sqrt(n / (n - 1) sum w^2 (d - mean)^2) / sum w (n the rows of positive weight; the unweighted
    one for equal weights): neither reads whole weights as repeated rows.

    **Worse beyond noise.** When the map makes the held-out ECE worse by more than the 95th
    percentile of the noise floor after it, or the held-out NLL worse by more than 1.96 standard
    errors of the paired per-row differences, ``ledger.worse`` says so, its notes print a WORSE
    line, and a :class:`~calibkit.CalibkitWarning` is raised.

    **Which rows can move.** ECE, NLL and Brier: any map (that is what it is for). Accuracy:
    never for temperature scaling (z / T keeps every argmax and s / T every sign); any other map
    may move it (Platt's intercept shifts the 0.5 crossing, vector and matrix scaling and
    one-vs-rest maps change argmaxes). AUC of binary scores: never for temperature scaling
    (strictly increasing); Platt and beta only if the fitted map decreases; isotonic only by
    tying scores (flat steps); histogram binning freely. Top-label AUC of (N, C) input: any map,
    temperature included (confidences rescale unevenly across rows). With ``folds``, each fold
    has its own map, so the order across folds is not protected. What actually moved is in
    ``ledger.invariance``.

    Examples
    --------
    An overconfident binary scorer (scores three times too large): the temperature lowers the
    held-out NLL and cannot move the accuracy or the AUC.

    >>> import numpy as np, calibkit as ck
    >>> from calibkit.recalibrate.ledger import compare_calibration
    >>> rng = np.random.default_rng(0)
    >>> s = rng.normal(0, 2, 2000); y = (rng.random(2000) < ck.sigmoid(s)).astype(int)
    >>> ledger = compare_calibration(ck.TemperatureScaling(), 3 * s, y, n_sims=200)
    >>> ledger.after["NLL"] < ledger.before["NLL"], ledger.invariance.ok
    (True, True)
    >>> [(r.instrument, r.guaranteed) for r in ledger.rows if r.guaranteed]
    [('accuracy', True), ('AUC', True)]
    """
    where = "compare_calibration"
    _check_calibrator(calibrator, from_logits=from_logits, where=where)
    seed = v.positive_int(seed, name="seed", where=where, minimum=0)
    n_bins = v.n_bins(n_bins, where=where)
    n_sims = v.positive_int(n_sims, name="n_sims", where=where)
    template, check = _template(calibrator, check_logits=check_logits, where=where)
    x, y = _read(scores, labels, from_logits=from_logits, where=where, name="scores", check=check)
    check_scores = getattr(template, "_check_scores", None)
    if check_scores is not None:  # before the split: a message names the user's own row
        check_scores(x, where=f"{type(calibrator).__name__}.fit")
    n = int(x.shape[0])
    w = v.sample_weight(sample_weight, n=n, where=where)
    w_fit: np.ndarray | None = w
    w_eval: np.ndarray | None = w
    name = type(calibrator).__name__
    fold_parameters: tuple[dict[str, Any], ...] | None = None
    fraction: float | None = None

    if eval_scores is not None or eval_labels is not None:
        if eval_scores is None or eval_labels is None:
            raise InputError(f"{where}: pass eval_scores and eval_labels together.")
        if folds is not None:
            raise InputError(
                f"{where}: folds= cross-fits on scores; it does not combine with a separate "
                "evaluation set (eval_scores=). Pass one or the other."
            )
        design = "given"
        x_eval, y_eval = _read(
            eval_scores,
            eval_labels,
            from_logits=from_logits,
            where=where,
            name="eval_scores",
            check=check,
        )
        if x_eval.shape[1:] != x.shape[1:]:
            raise InputError(
                f"{where}: eval_scores has shape {x_eval.shape} but scores has {x.shape}; "
                "both must have the same columns."
            )
        if check_scores is not None:
            check_scores(x_eval, where=f"{type(calibrator).__name__}.predict_proba")
        w_eval = v.sample_weight(
            eval_sample_weight, n=int(x_eval.shape[0]), where=where, name="eval_sample_weight"
        )
        fitted = fit_weighted(_clone(template), x, y, w)
        after = _predict(fitted, x_eval, where=where)
        n_fit, n_eval = n, int(x_eval.shape[0])
        fitted_on = f"all {n} rows of scores"
        judged_on = f"the {n_eval} rows of eval_scores"
    elif eval_sample_weight is not None:
        raise InputError(
            f"{where}: eval_sample_weight weighs the rows of eval_scores, but none were given; "
            "the held-out rows of a split (or folds) are rows of scores and take their weights "
            "from sample_weight."
        )
    elif folds is not None:
        design = "cross-fit"
        folds = v.positive_int(folds, name="folds", where=where, minimum=2)
        after, maps, _ = _cross_fit(
            template, x, y, folds=folds, seed=seed, where=where, sample_weight=w
        )
        after = _checked_output(after, x, name=name, where=where)
        fold_parameters = tuple(_state(m) for m in maps)
        fitted = fit_weighted(_clone(template), x, y, w)
        x_eval, y_eval = x, y
        n_fit, n_eval = n, n
        fitted_on = (
            f"all {n} rows (the saved map); the numbers are out-of-fold estimates from "
            f"{folds} maps, each fitted on the other folds"
        )
        judged_on = f"all {n} rows, each by the map fitted on the {folds - 1} other folds"
    else:
        design = "split"
        if w is None:
            cal, held = stratified_split(y, calibration_fraction=calibration_fraction, seed=seed)
        else:
            cal, held, w_fit, w_eval = stratified_split(
                y, calibration_fraction=calibration_fraction, seed=seed, sample_weight=w
            )
        fraction = float(calibration_fraction)
        fitted = fit_weighted(_clone(template), x[cal], y[cal], w_fit)
        x_eval, y_eval = x[held], y[held]
        after = _predict(fitted, x_eval, where=where)
        n_fit, n_eval = int(cal.size), int(held.size)
        fitted_on = (
            f"the calibration split ({n_fit} of {n} rows, {fraction:.0%} of each class, "
            f"seed {seed})"
        )
        judged_on = f"the other {n_eval} rows, which the map never saw"

    before = _probabilities(x_eval, from_logits=from_logits)
    if after.shape != before.shape:
        raise InputError(
            f"{where}: {name}.predict_proba returned shape {after.shape} for scores of shape "
            f"{x_eval.shape}; the ledger compares probabilities of the same shape."
        )
    kind = "multiclass" if before.ndim == 2 else "binary"
    n_classes = 2 if before.ndim == 1 else int(before.shape[1])
    if w_fit is not None or w_eval is not None:
        fitted_on, judged_on = _weighted_words(fitted_on, w_fit), _weighted_words(judged_on, w_eval)
    nll_before = nll_score(x_eval, y_eval, from_logits=from_logits, sample_weight=w_eval)
    m_before = _measure(before, y_eval, n_bins=n_bins, n_sims=n_sims, seed=seed, w=w_eval)
    m_after = _measure(after, y_eval, n_bins=n_bins, n_sims=n_sims, seed=seed, w=w_eval)
    m_before["NLL"] = nll_before
    m_after["NLL"] = _nll_after(after, y_eval, name=name, where=where, w=w_eval)
    worse = worse_beyond_noise(
        ece_before=m_before["ECE"],
        ece_after=m_after["ECE"],
        floor_after=m_after["floor"],
        loss_before=row_losses(x_eval, y_eval, from_logits=from_logits),
        loss_after=row_losses(after, y_eval, from_logits=False),
        sample_weight=w_eval,
    )
    if worse:
        warnings.warn(
            f"{where}: {name} made the held-out numbers worse beyond noise: "
            f"{_fmt_worse(worse)}. The map does not suit these scores: keep the model's own "
            "probabilities, or try another map (and see any warning about the scores above).",
            CalibkitWarning,
            stacklevel=2,
        )
    method = str(getattr(calibrator, "kind", "") or name)
    params = calibrator.get_params()
    rows = tuple(
        LedgerRow(
            instrument,
            _MEASURES[kind][instrument],
            m_before[instrument],
            m_after[instrument],
            *_can_move(method, params, instrument, kind=kind, design=design),
        )
        for instrument in INSTRUMENTS
    )
    return CalibrationLedger(
        method=method,
        calibrator_name=name,
        kind=kind,
        n_classes=n_classes,
        scores="logits" if from_logits else "probabilities",
        design=design,
        n=n,
        n_fit=n_fit,
        n_eval=n_eval,
        calibration_fraction=fraction,
        folds=folds if design == "cross-fit" else None,
        seed=seed,
        n_bins=n_bins,
        rows=rows,
        noise_floor_before=m_before["floor"],
        noise_floor_after=m_after["floor"],
        parameters=_state(fitted),
        fold_parameters=fold_parameters,
        invariance=check_invariance(before, after, labels=y_eval, sample_weight=w_eval),
        calibrator=fitted,
        fitted_on=fitted_on,
        judged_on=judged_on,
        worse=worse,
        weight_fit=None if w_fit is None else float(w_fit.sum()),
        weight_eval=None if w_eval is None else float(w_eval.sum()),
    )


# ----------------------------------------------------------------------------- helpers


def _check_calibrator(calibrator: Any, *, from_logits: bool, where: str) -> None:
    if isinstance(calibrator, type):
        raise InputError(
            f"{where}: pass a calibrator instance, such as {calibrator.__name__}(), not the class."
        )
    missing = [
        attr for attr in ("fit", "predict_proba", "get_params") if not hasattr(calibrator, attr)
    ]
    if missing:
        raise InputError(
            f"{where}: calibrator must be a calibkit calibrator (fit, predict_proba, get_params); "
            f"{type(calibrator).__name__} has no {', '.join(missing)}."
        )
    params = calibrator.get_params()
    if "from_logits" in params and bool(params["from_logits"]) != bool(from_logits):
        name = type(calibrator).__name__
        if from_logits:
            raise InputError(
                f"{where}: from_logits=True says the scores are logits, but "
                f"{name}(from_logits=False) reads them as probabilities; pass {name}() or "
                "from_logits=False."
            )
        raise InputError(
            f"{where}: from_logits=False says the scores are probabilities, but "
            f"{name}(from_logits=True) would read them as logits; pass "
            f"{name}(from_logits=False), or logits with from_logits=True."
        )


def _template(calibrator: Any, *, check_logits: Any, where: str) -> tuple[Any, bool]:
    """The calibrator to copy for each fit, and whether logits are checked: both the ledger's
    ``check_logits`` and the calibrator's (where it has one) must be True; insisting on either
    reaches the ledger's own reading and every fit."""
    if not isinstance(check_logits, (bool, np.bool_)):
        raise InputError(f"{where}: check_logits must be True or False, got {check_logits!r}.")
    params = calibrator.get_params()
    check = bool(check_logits) and params.get("check_logits", True) is not False
    template = _clone(calibrator)
    if not check and "check_logits" in params:
        template.set_params(check_logits=False)
    return template, check


def _read(
    scores: Any, labels: Any, *, from_logits: bool, where: str, name: str, check: bool
) -> tuple[np.ndarray, np.ndarray]:
    arr = v.float_array(scores, name=name, where=where, ndim=(1, 2))
    if from_logits:
        x = v.scores(arr, where=where, name=name)
        v.logits_not_probabilities(x, where=where, name=name, check=check)
    elif arr.ndim == 2:
        x = v.probabilities(arr, where=where, name=name)
    else:
        x = v.confidence(arr, where=where, name=name)
    n_classes = 2 if x.ndim == 1 else int(x.shape[1])
    label_name = "labels" if name == "scores" else "eval_labels"
    y = v.labels(labels, n=x.shape[0], n_classes=n_classes, where=where, name=label_name)
    return x, y


def _clone(calibrator: Any) -> Any:
    return type(calibrator)(**calibrator.get_params())


def _predict(fitted: Any, x: np.ndarray, *, where: str) -> np.ndarray:
    return _checked_output(fitted.predict_proba(x), x, name=type(fitted).__name__, where=where)


def _checked_output(p: Any, x: np.ndarray, *, name: str, where: str) -> np.ndarray:
    arr = np.asarray(p, dtype=np.float64)
    if arr.shape != x.shape:
        raise InputError(
            f"{where}: {name}.predict_proba returned shape {arr.shape} for scores of shape "
            f"{x.shape}; the ledger compares probabilities of the same shape."
        )
    return arr


def _probabilities(x: np.ndarray, *, from_logits: bool) -> np.ndarray:
    if not from_logits:
        return x.astype(np.float64, copy=False)
    return softmax(x) if x.ndim == 2 else sigmoid(x)


def _weighted_words(words: str, w: np.ndarray | None) -> str:
    """The ledger's "fitted on" / "judged on" words, with the rows' total weight."""
    if w is None:
        return f"{words} (unweighted)"
    return f"{words} (weighted: total weight {float(w.sum()):.6g})"


def _measure(
    p: np.ndarray,
    y: np.ndarray,
    *,
    n_bins: int,
    n_sims: int,
    seed: int,
    w: np.ndarray | None = None,
) -> dict[str, Any]:
    """ECE, its noise floor, Brier, accuracy and AUC of held-out rows (weighted by ``w``; the
    AUC needs both outcomes among the rows of positive weight)."""
    if p.ndim == 2:
        conf, outcome = top_label(p, y)
    else:
        conf, outcome = p, y == 1
    counted = outcome if w is None else outcome[w > 0]
    both = bool(counted.any() and not counted.all())
    return {
        "ECE": ece_score(conf, outcome, n_bins=n_bins, sample_weight=w),
        "floor": noise_floor(conf, n_bins=n_bins, n_sims=n_sims, seed=seed, sample_weight=w),
        "Brier": brier_score(p, y, sample_weight=w),
        "accuracy": accuracy_score(p, y, sample_weight=w),
        "AUC": auc_score(conf, outcome, sample_weight=w) if both else None,
    }


def _nll_after(
    p: np.ndarray, y: np.ndarray, *, name: str, where: str, w: np.ndarray | None = None
) -> float:
    """The NLL of the calibrated probabilities (weighted by ``w``), with a warning in the
    ledger's words when a held-out row (of positive weight) gets probability exactly 0 for its
    label (the NLL is then infinite)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibkitWarning)
        value = nll_score(p, y, sample_weight=w)
    true = p[np.arange(p.shape[0]), y] if p.ndim == 2 else np.where(y == 1, p, 1.0 - p)
    zeros = true == 0.0
    if w is not None:
        zeros &= w > 0
    if zeros.any():
        count = int(np.count_nonzero(zeros))
        warnings.warn(
            f"{where}: {name} gives {count} held-out {'row' if count == 1 else 'rows'} "
            f"probability exactly 0 for the true label (first at held-out row "
            f"{int(np.argmax(zeros))}), so the NLL after is infinite. A map that outputs 0 or 1 "
            "(isotonic, histogram binning) is infinitely surprised by such rows; ECE, Brier "
            "and accuracy are unaffected.",
            CalibkitWarning,
            stacklevel=3,
        )
    return value


def _state(fitted: Any) -> dict[str, Any]:
    if hasattr(fitted, "to_dict"):
        return dict(fitted.to_dict().get("state", {}))
    return {}
