"""The ledger as a result: one row per instrument (before, after, can move, did move) and the
ledger with its verdict, text and JSON form."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _display
from .._json import jsonable
from ..measure.uncertainty import NoiseFloor
from ._worse import Worse
from .invariance import InvarianceReport

__all__ = ["INSTRUMENTS", "CalibrationLedger", "LedgerRow"]

INSTRUMENTS = ("ECE", "NLL", "Brier", "accuracy", "AUC")


@dataclass(frozen=True)
class LedgerRow:
    """One instrument: its value before and after the map on the held-out rows, whether the map
    can move it (``can_move``, in words) and whether a theorem says it cannot (``guaranteed``).
    ``moved`` is the exact comparison ``before != after`` (None when a value is missing)."""

    instrument: str
    measures: str
    before: float | None
    after: float | None
    can_move: str
    guaranteed: bool

    @property
    def moved(self) -> bool | None:
        if self.before is None or self.after is None:
            return None
        return bool(self.before != self.after)

    def to_dict(self) -> dict[str, Any]:
        return {
            "instrument": self.instrument,
            "measures": self.measures,
            "before": _finite_or_none(self.before),
            "after": _finite_or_none(self.after),
            "can_move": self.can_move,
            "guaranteed": self.guaranteed,
            "moved": self.moved,
        }


@dataclass(frozen=True, eq=False)
class CalibrationLedger:
    """The BEFORE/AFTER ledger of one calibrator, judged on rows it never saw.

    ``design`` says how: ``"split"`` (fitted on a stratified calibration split, judged on the
    rest), ``"cross-fit"`` (each row judged by a map fitted on the other folds) or ``"given"``
    (fitted on all of ``scores``, judged on ``eval_scores``). ``calibrator`` is the fitted map
    to keep: the one judged (``"split"``, ``"given"``), or for ``"cross-fit"`` a map fitted on all
    rows (its numbers are estimated by the out-of-fold maps, whose states are
    ``fold_parameters``). ``fitted_on`` and ``judged_on`` say so in words. ``worse`` lists
    the instruments (ECE, NLL) the map made worse on the held-out rows beyond noise (see
    :mod:`calibkit.recalibrate._worse`); each also gave a :class:`~calibkit.CalibkitWarning`.
    ``n``, ``n_fit`` and ``n_eval`` count rows; ``weight_fit`` and ``weight_eval`` are the total
    sample weight of the rows fitted on and judged on (None when unweighted).
    """

    method: str
    calibrator_name: str
    kind: str
    n_classes: int
    scores: str
    design: str
    n: int
    n_fit: int
    n_eval: int
    calibration_fraction: float | None
    folds: int | None
    seed: int
    n_bins: int
    rows: tuple[LedgerRow, ...]
    noise_floor_before: NoiseFloor
    noise_floor_after: NoiseFloor
    parameters: dict[str, Any]
    fold_parameters: tuple[dict[str, Any], ...] | None
    invariance: InvarianceReport
    calibrator: Any
    fitted_on: str
    judged_on: str
    worse: tuple[Worse, ...] = ()
    weight_fit: float | None = None
    weight_eval: float | None = None

    def row(self, instrument: str) -> LedgerRow:
        """The row of one instrument: ``"ECE"``, ``"NLL"``, ``"Brier"``, ``"accuracy"``,
        ``"AUC"``."""
        for row in self.rows:
            if row.instrument == instrument:
                return row
        raise KeyError(f"no instrument {instrument!r}; the ledger has {', '.join(INSTRUMENTS)}")

    @property
    def before(self) -> dict[str, float | None]:
        return {row.instrument: row.before for row in self.rows}

    @property
    def after(self) -> dict[str, float | None]:
        return {row.instrument: row.after for row in self.rows}

    @property
    def broken_guarantees(self) -> tuple[str, ...]:
        """Instruments a theorem says the map cannot move but that moved (floating point)."""
        return tuple(row.instrument for row in self.rows if row.guaranteed and row.moved)

    def describe(self) -> str:
        """One phrase: the calibrator and the input, e.g. "TemperatureScaling (temperature) on
        10-class logits"."""
        what = (
            f"{self.n_classes}-class {self.scores}"
            if self.kind == "multiclass"
            else f"binary {'scores' if self.scores == 'logits' else 'probabilities'}"
        )
        return f"{self.calibrator_name} ({self.method}) on {what}"

    def header(self) -> str:
        return f"calibration ledger: {self.describe()}"

    def table_rows(self) -> list[tuple[str, str, str, str, str]]:
        """(instrument, what it measures, BEFORE, AFTER, can the map move it?) as text, shared
        by ``__str__`` and the terminal renderer. The ECE row is followed by its noise floor."""
        out = []
        for row in self.rows:
            can = row.can_move
            if row.guaranteed and row.moved:
                can += " - but it MOVED (see the invariance check)"
            out.append((row.instrument, row.measures, _fmt(row.before), _fmt(row.after), can))
            if row.instrument == "ECE":
                out.append(
                    (
                        "  floor",
                        "ECE of a calibrated forecaster",
                        f"{self.noise_floor_before.mean:.4f}",
                        f"{self.noise_floor_after.mean:.4f}",
                        "ECE near it is noise",
                    )
                )
        return out

    def notes(self) -> list[str]:
        """The lines printed under the table: data, binning, parameters, invariance."""
        floor_b, floor_a = self.noise_floor_before, self.noise_floor_after
        weight = "" if self.weight_eval is None else f" (weight {self.weight_eval:.6g})"
        lines = [
            f"fitted on {self.fitted_on}; judged on {self.judged_on}.",
            f"ECE: M = {self.n_bins} equal-width bins, N = {self.n_eval}{weight}, "
            f"{'top-label' if self.kind == 'multiclass' else 'P(label = 1)'}; floor = mean ECE "
            f"of a perfectly calibrated forecaster with the same confidences "
            f"({floor_b.n_sims} simulations; 95th percentile {floor_b.p95:.4f} before, "
            f"{floor_a.p95:.4f} after).",
            f"fitted parameters: {_fmt_state(self.parameters)}",
        ]
        if self.fold_parameters:
            lines.append(f"per fold: {_fmt_folds(self.fold_parameters)}")
        lines.append(str(self.invariance))
        if self.worse:
            lines.append(f"WORSE beyond noise on the held-out rows: {_fmt_worse(self.worse)}.")
        return lines

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary of every number and setting."""
        return {
            "method": self.method,
            "calibrator": self.calibrator_name,
            "kind": self.kind,
            "n_classes": self.n_classes,
            "scores": self.scores,
            "design": self.design,
            "n": self.n,
            "n_fit": self.n_fit,
            "n_eval": self.n_eval,
            **({} if self.weight_fit is None else {"weight_fit": self.weight_fit}),
            **({} if self.weight_eval is None else {"weight_eval": self.weight_eval}),
            "calibration_fraction": self.calibration_fraction,
            "folds": self.folds,
            "seed": self.seed,
            "n_bins": self.n_bins,
            "fitted_on": self.fitted_on,
            "judged_on": self.judged_on,
            "rows": [row.to_dict() for row in self.rows],
            "noise_floor": {
                "before": self.noise_floor_before.to_dict(),
                "after": self.noise_floor_after.to_dict(),
            },
            "parameters": jsonable(self.parameters),
            "fold_parameters": (
                None if self.fold_parameters is None else jsonable(list(self.fold_parameters))
            ),
            "invariance": self.invariance.to_dict(),
            "broken_guarantees": list(self.broken_guarantees),
            "worse": [w.to_dict() for w in self.worse],
        }

    def _repr_html_(self) -> str:
        """What a notebook shows: the HTML report's section for this result."""
        return _display.html(self)

    def __str__(self) -> str:
        head = ("instrument", "what it measures", "BEFORE", "AFTER", "can the map move it?")
        body = self.table_rows()
        widths = [max(len(r[i]) for r in [head, *body]) for i in range(4)]
        lines = [self.header(), ""]
        for r in [head, *body]:
            lines.append(
                "  ".join(
                    [
                        f"{r[0]:<{widths[0]}}",
                        f"{r[1]:<{widths[1]}}",
                        f"{r[2]:>{widths[2]}}",
                        f"{r[3]:>{widths[3]}}",
                        r[4],
                    ]
                ).rstrip()
            )
        return "\n".join([*lines, "", *self.notes()])


# ----------------------------------------------------------------------------- text


def _finite_or_none(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def _fmt(x: float | None) -> str:
    if x is None:
        return "-"
    if not math.isfinite(x):
        return "inf" if x > 0 else str(x)
    return f"{x:.4f}"


def _fmt_worse(worse: tuple[Worse, ...]) -> str:
    return "; ".join(w.why for w in worse)


def _fmt_value(value: Any) -> str:
    if isinstance(value, (bool, str)) or value is None:
        return str(value)
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.6g}"
    if isinstance(value, dict):
        return f"{len(value)} fields"
    if isinstance(value, (list, tuple, np.ndarray)):
        try:
            arr = np.asarray(value, dtype=np.float64)
        except (ValueError, TypeError):
            return f"{len(value)} entries"
        if arr.ndim == 1 and arr.size <= 4:
            return "[" + ", ".join(f"{e:.4g}" for e in arr) + "]"
        return f"array of shape {arr.shape}"
    return str(value)


def _fmt_state(state: dict[str, Any]) -> str:
    return ", ".join(f"{key} = {_fmt_value(value)}" for key, value in state.items()) or "none"


def _fmt_folds(states: tuple[dict[str, Any], ...]) -> str:
    """The first scalar parameter of each fold's map (all of them are in ``to_dict``)."""
    keys = [k for k, x in states[0].items() if isinstance(x, (float, np.floating))]
    if not keys:
        return f"{len(states)} maps (all parameters under fold_parameters in to_dict / --json)"
    return f"{keys[0]} = " + ", ".join(_fmt_value(s.get(keys[0])) for s in states)
