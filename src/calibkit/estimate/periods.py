"""Estimated performance period by period, with shift alarms that need no label: the label-free
monitor of :meth:`PerformanceEstimator.by_period` and :func:`estimate_by_period`."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._errors import InputError
from ..measure.change import per_test_level
from .inputs import Scores
from .result import PerformanceEstimate
from .shift import ShiftTest, shift_test

__all__ = ["PeriodEstimate", "PeriodEstimates"]


@dataclass(frozen=True, eq=False)
class PeriodEstimate:
    """One period: its estimate, its shift tests against the reference, and, where the period
    has labels, the accuracy they show.

    ``shifted``: a test's p-value is below the family-wise per-test level (the confidence
    distribution, or the predicted-class mix, moved beyond chance). ``outside``: a trust rule
    of the estimate fired, so the period left the region where the estimate was validated
    (its confidences outside the reference's range, or a large shift: KS distance above 0.1).
    """

    period: Any
    estimate: PerformanceEstimate
    test: ShiftTest
    shifted: bool
    accuracy: float | None = None

    @property
    def n(self) -> int:
        return self.estimate.n_target

    @property
    def outside(self) -> bool:
        return not self.estimate.trusted

    @property
    def covered(self) -> bool | None:
        """Whether the interval holds the labelled accuracy (None without labels)."""
        if self.accuracy is None:
            return None
        a = self.estimate.accuracy
        return bool(a.low <= self.accuracy <= a.high)

    def to_dict(self) -> dict[str, Any]:
        return {
            "period": _plain(self.period),
            "n": self.n,
            "estimate": self.estimate.to_dict(),
            "test": self.test.to_dict(),
            "shifted": self.shifted,
            "outside": self.outside,
            "accuracy": self.accuracy,
            "covered": self.covered,
        }


@dataclass(frozen=True, eq=False)
class PeriodEstimates:
    """Every period's estimate and alarms (see :meth:`PerformanceEstimator.by_period`).

    ``level`` is the family-wise level of the alarms: when nothing moved, the chance that any
    period's test fires is at most 1 - level (Bonferroni over the periods and tests, each at
    ``per_test_level``).
    """

    method: str
    n_reference: int
    reference_accuracy: float
    periods: tuple[PeriodEstimate, ...]
    level: float
    per_test_level: float
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def shifted(self) -> tuple[PeriodEstimate, ...]:
        return tuple(p for p in self.periods if p.shifted)

    @property
    def outside(self) -> tuple[PeriodEstimate, ...]:
        return tuple(p for p in self.periods if p.outside)

    def verdict(self) -> str:
        n = len(self.periods)
        parts = []
        if self.shifted:
            names = ", ".join(str(_plain(p.period)) for p in self.shifted[:5])
            more = "" if len(self.shifted) <= 5 else f" and {len(self.shifted) - 5} more"
            parts.append(
                f"the traffic moved from the reference in {len(self.shifted)} of {n} periods "
                f"({names}{more}; family-wise level {self.level:g})"
            )
        else:
            parts.append(
                f"no period's confidences moved from the reference beyond chance "
                f"({_count(n, 'period')}, family-wise level {self.level:g})"
            )
        if self.outside:
            parts.append(
                f"the estimate is not to be trusted in {len(self.outside)} (a trust rule fired)"
            )
        labelled = [p for p in self.periods if p.accuracy is not None]
        if labelled:
            missed = sum(1 for p in labelled if not p.covered)
            parts.append(
                f"of {_count(len(labelled), 'labelled period')}, {missed} had an accuracy "
                "outside the estimate's interval"
            )
        return "; ".join(parts) + "."

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "n_reference": self.n_reference,
            "reference_accuracy": self.reference_accuracy,
            "level": self.level,
            "per_test_level": self.per_test_level,
            "verdict": self.verdict(),
            "periods": [p.to_dict() for p in self.periods],
            "notes": list(self.notes),
        }

    def rows(self) -> list[tuple[str, ...]]:
        """One row of text per period, for the terminal and the report."""
        out: list[tuple[str, ...]] = []
        for p in self.periods:
            a = p.estimate.accuracy
            out.append(
                (
                    str(_plain(p.period)),
                    str(p.n),
                    f"{a.estimate:.4f}",
                    f"{a.low:.4f} to {a.high:.4f}",
                    "" if p.accuracy is None else f"{p.accuracy:.4f}",
                    f"{p.test.ks:.3f}",
                    _p(p.test.ks_p),
                    "" if p.test.mix_p is None else _p(p.test.mix_p),
                    ("SHIFT" if p.shifted else "") + (" OUTSIDE" if p.outside else ""),
                )
            )
        return out

    def __str__(self) -> str:
        pct = int(round(self.periods[0].estimate.accuracy.level * 100)) if self.periods else 95
        head = (
            f"Estimated accuracy by period ({self.method.upper()}; reference {self.n_reference} "
            f"rows at accuracy {self.reference_accuracy:.4f})"
        )
        names = (
            "period",
            "rows",
            "estimate",
            f"{pct}% interval",
            "labelled",
            "KS",
            "KS p",
            "mix p",
            "flags",
        )
        rows = [names, *self.rows()]
        widths = [max(len(r[i]) for r in rows) for i in range(len(names))]
        lines = [head]
        lines += [
            "  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows
        ]
        lines += textwrap.wrap(self.verdict(), 96, initial_indent="  ", subsequent_indent="  ")
        for p in self.outside:
            for note in p.estimate.trust:
                lines += textwrap.wrap(
                    f"{_plain(p.period)}: {note}", 96, initial_indent="  ", subsequent_indent="    "
                )
        for note in self.notes:
            lines += textwrap.wrap(note, 96, initial_indent="  ", subsequent_indent="    ")
        return "\n".join(lines)


def period_keys(by: Any, n: int, *, where: str) -> tuple[list[Any], list[np.ndarray]]:
    """The periods in order of first appearance (sorted when they sort) and each one's rows."""
    keys = np.asarray(by)
    if keys.ndim != 1 or keys.shape[0] != n:
        raise InputError(
            f"{where}: by must hold one period per target row ({n}); it has shape {keys.shape}."
        )
    if keys.dtype.kind == "f" and np.isnan(keys).any():
        row = int(np.flatnonzero(np.isnan(keys))[0])
        raise InputError(f"{where}: by is missing (NaN) at target row {row}; give every row one.")
    if keys.dtype == object and any(k is None for k in keys):
        row = next(i for i, k in enumerate(keys) if k is None)
        raise InputError(f"{where}: by is missing (None) at target row {row}; give every row one.")
    try:
        unique, inverse = np.unique(keys, return_inverse=True)
    except TypeError:
        raise InputError(
            f"{where}: the periods in by cannot be ordered (mixed types?); pass one kind of value."
        ) from None
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(unique.shape[0] + 1))
    rows = [order[bounds[i] : bounds[i + 1]] for i in range(unique.shape[0])]
    return [_plain(k) for k in unique], rows


def estimate_periods(
    estimator: Any,
    target: Scores,
    by: Any,
    *,
    labels: np.ndarray | None,
    level: float,
    where: str,
    **options: Any,
) -> PeriodEstimates:
    """Each period's estimate (``estimator.estimate`` on its rows, with ``options``), its shift
    tests against the estimator's reference, and the accuracy of the periods with labels."""
    keys, rows = period_keys(by, target.n, where=where)
    ref = estimator.reference_
    tests = [shift_test(ref, target.rows(r)) for r in rows]
    n_tests = sum(len(t.p_values) for t in tests)
    each = per_test_level(level, n_tests)
    periods, notes = [], []
    for key, index, test in zip(keys, rows, tests, strict=True):
        est = estimator._estimate_scores(target.rows(index), level=level, where=where, **options)
        accuracy = None
        if labels is not None:
            known = ~np.isnan(labels[index])
            if known.all():
                right = labels[index].astype(np.int64)
                if target.probs is not None:
                    right = right == target.predicted[index]
                accuracy = float(np.mean(right))
            elif known.any():
                notes.append(
                    f"period {_plain(key)}: {int(known.sum())} of {index.shape[0]} rows have "
                    "labels; a period's accuracy is shown only when all its rows have one"
                )
        shifted = any(p < 1.0 - each for p in test.p_values)
        periods.append(PeriodEstimate(key, est, test, shifted, accuracy))
    return PeriodEstimates(
        method=estimator.method,
        n_reference=ref.n,
        reference_accuracy=estimator.reference_accuracy_,
        periods=tuple(periods),
        level=level,
        per_test_level=each,
        notes=tuple(notes),
    )


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _p(p: float) -> str:
    return f"{p:.2g}" if p >= 1e-4 else "<1e-4"


def _plain(x: Any) -> Any:
    return x.item() if isinstance(x, np.generic) else x
