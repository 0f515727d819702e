"""Fit a calibrator to a prediction file (what ``calibkit fit`` does): the method's map set up
for the file's kind of scores and judged by the BEFORE/AFTER ledger, or the temperature fitted
where the logits are, by an engine.

:func:`fit_predictions` takes what :func:`calibkit.io.read_predictions` read: logit columns go
to the map as logits, probability columns as probabilities (``from_logits=False`` where the
method has that setting), and :func:`calibkit.recalibrate.compare_calibration` fits it on a
calibration split and judges it on the held-out rows. :func:`fit_at_scale` fits the temperature
on every row of a file with an engine (no split, no ledger).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._errors import InputError
from .base import Calibrator
from .ledger import CalibrationLedger, compare_calibration
from .methods import make_calibrator
from .temperature import TemperatureScaling

__all__ = ["ScaleFit", "check_clip", "fit_at_scale", "fit_predictions"]


def check_clip(
    method: str, params: dict[str, Any], kind: str, source: str, *, where: str = "fit"
) -> None:
    """``clip`` goes to a map that takes logs of probabilities, and with probability columns.

    ``params`` are the map's settings (``get_params()``), ``kind`` and ``source`` the
    predictions' ``kind`` and ``describe()``.

    Examples
    --------
    >>> from calibkit.recalibrate.fit_predictions import check_clip
    >>> check_clip("platt", {"clip": None}, "probs", "p.csv")  # a map that takes logs: fine
    >>> check_clip("isotonic", {}, "probs", "p.csv")
    Traceback (most recent call last):
    calibkit._errors.InputError: fit: --clip moves probabilities away from 0 and 1 before a map \
takes their logs; isotonic uses probabilities as they are (0 and 1 included) and needs none. \
Leave out --clip.
    """
    if "clip" not in params:
        raise InputError(
            f"{where}: --clip moves probabilities away from 0 and 1 before a map takes their "
            f"logs; {method} uses probabilities as they are (0 and 1 included) and needs none. "
            "Leave out --clip."
        )
    if kind == "logits":
        raise InputError(
            f"{where}: --clip moves probabilities away from 0 and 1 before a map takes their "
            f"logs, but {source} gives logits, which need none. Leave out --clip, or pass "
            "probability columns with --probs."
        )


def fit_predictions(
    preds: Any,
    method: str | Calibrator,
    *,
    calibration_fraction: float = 0.5,
    seed: int = 0,
    folds: int | None = None,
    n_bins: int = 15,
    n_sims: int = 1000,
    clip: float | None = None,
    check_logits: bool = True,
    where: str = "fit",
) -> CalibrationLedger:
    """Fit ``method`` to a :class:`calibkit.io.Predictions` and judge it: the ledger of
    :func:`~calibkit.recalibrate.compare_calibration` (``ledger.calibrator`` is the map to
    save: fitted on the calibration split, or with ``folds`` on all rows).

    ``method`` is a method name (:func:`~calibkit.recalibrate.make_calibrator`) or an unfitted
    calibrator, whose settings are copied (the copy, not it, is set up for the scores).

    ``clip`` moves probabilities into [clip, 1 - clip] before a map takes their logs (see
    :func:`check_clip`); ``check_logits=False`` insists that logit columns are logits.

    A weight column (``read_predictions(..., weight=COLUMN)``, so ``preds.sample_weight``)
    weighs everything: the split carries the weights, the map is fitted with those of the
    calibration rows and the ledger judged with those of the held-out rows (with ``folds``,
    each fold's map with the other folds' weights). The saved map is a map like any other: the
    weights are not part of it.

    Examples
    --------
    >>> import numpy as np, pyarrow as pa
    >>> from calibkit.io import read_predictions
    >>> from calibkit.recalibrate.fit_predictions import fit_predictions
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(0, 3, 2000)
    >>> y = (rng.uniform(size=2000) < 1 / (1 + np.exp(-z / 3))).astype(int)
    >>> preds = read_predictions(pa.table({"logit_1": z, "label": y}))
    >>> ledger = fit_predictions(preds, "temperature", n_sims=50)
    >>> ledger.n_eval, round(ledger.calibrator.temperature_)  # the logits were 3 times too large
    (1000, 3)
    """
    from ..io import check_scale

    if isinstance(method, str):
        calibrator = make_calibrator(method)
    else:
        calibrator = type(method)(**method.get_params())
        method = str(getattr(calibrator, "kind", type(calibrator).__name__))
    from_logits = preds.kind == "logits"
    params = calibrator.get_params()
    if not from_logits and "from_logits" in params:
        calibrator.set_params(from_logits=False)
    if clip is not None:
        check_clip(method, params, preds.kind, preds.describe(), where=where)
        calibrator.set_params(clip=clip)
    if not check_logits and "check_logits" in params:
        calibrator.set_params(check_logits=False)
    check_scale(calibrator, preds.kind, preds.describe(), where=where)
    return compare_calibration(
        calibrator,
        preds.scores,
        preds.labels,
        from_logits=from_logits,
        calibration_fraction=calibration_fraction,
        seed=seed,
        folds=folds,
        n_bins=n_bins,
        n_sims=n_sims,
        check_logits=check_logits,
        sample_weight=getattr(preds, "sample_weight", None),
    )


@dataclass(frozen=True, eq=False)
class ScaleFit:
    """A temperature fitted with an engine on every row of a file: ``calibrator`` (the fitted
    :class:`TemperatureScaling`, to save), the ``engine``, and the fit's numbers (the NLL of
    these rows at T = 1 and at T, the derivative of the NLL in T at T, the aggregations run and
    whether Newton's method converged)."""

    calibrator: TemperatureScaling
    engine: str

    @property
    def temperature(self) -> float:
        return float(self.calibrator.temperature_)

    def to_dict(self) -> dict[str, Any]:
        c = self.calibrator
        return {
            "method": "temperature",
            "engine": self.engine,
            "temperature": c.temperature_,
            "nll_before": c.nll_before_,
            "nll_after": c.nll_after_,
            "gradient": c.gradient_,
            "n_evaluations": c.n_evaluations_,
            "converged": c.converged_,
        }

    def __str__(self) -> str:
        c = self.calibrator
        return (
            f"T = {c.temperature_:.6g} fitted with engine {self.engine} ({c.n_evaluations_} "
            f"aggregations): NLL {c.nll_before_:.5f} at T = 1 -> {c.nll_after_:.5f} at T"
        )


def fit_at_scale(data: Any, *, engine: str, columns: dict[str, Any] | None = None) -> ScaleFit:
    """The temperature by Newton's method where the logits are, one aggregation a step
    (:meth:`TemperatureScaling.fit_engine`): ``data`` and ``columns`` as that method takes
    them. Every row is a calibration row: judge the map on held-out rows."""
    scaler = TemperatureScaling().fit_engine(data, engine=engine, columns=columns)
    return ScaleFit(scaler, engine)
