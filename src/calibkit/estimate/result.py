"""A label-free estimate's result: each quantity with its interval, and when not to trust it."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import Any

from ..measure.uncertainty import BootstrapInterval
from .metrics import NAMES

__all__ = ["PerformanceEstimate"]

_LABELS = {
    "accuracy": "accuracy",
    "coverage": "coverage (confidence >= threshold)",
    "selective_risk": "selective risk (error when acting)",
    "cost": "expected cost per row",
    "precision": "precision (class 1)",
    "recall": "recall (class 1)",
    "f1": "F1 (class 1)",
    "roc_auc": "ROC AUC",
}


@dataclass(frozen=True, eq=False)
class PerformanceEstimate:
    """Estimated performance on unlabelled target rows (see :class:`PerformanceEstimator`).

    Each quantity is a :class:`~calibkit.BootstrapInterval` (estimate, low, high) or ``None``
    where it does not apply (no threshold given, not a two-class model, a method without
    per-row probabilities, nothing acted on). ``trust`` lists the reasons not to trust the
    estimate; empty when none of the stated rules fired.
    """

    method: str
    n_reference: int
    n_target: int
    reference_accuracy: float
    estimand: str
    accuracy: BootstrapInterval
    coverage: BootstrapInterval | None = None
    selective_risk: BootstrapInterval | None = None
    cost: BootstrapInterval | None = None
    precision: BootstrapInterval | None = None
    recall: BootstrapInterval | None = None
    f1: BootstrapInterval | None = None
    roc_auc: BootstrapInterval | None = None
    threshold: float | None = None
    trust: tuple[str, ...] = field(default_factory=tuple)

    @property
    def trusted(self) -> bool:
        """True when no rule in ``trust`` fired."""
        return not self.trust

    def intervals(self) -> dict[str, BootstrapInterval]:
        """The quantities that apply, by name."""
        found = {name: getattr(self, name) for name in NAMES}
        return {name: value for name, value in found.items() if value is not None}

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "n_reference": self.n_reference,
            "n_target": self.n_target,
            "reference_accuracy": self.reference_accuracy,
            "estimand": self.estimand,
            "threshold": self.threshold,
            **{name: value.to_dict() for name, value in self.intervals().items()},
            "trusted": self.trusted,
            "trust": list(self.trust),
        }

    def __str__(self) -> str:
        any_interval = self.accuracy
        head = (
            f"Estimated performance ({self.method.upper()}, {self.n_target} target rows, "
            f"reference {self.n_reference} rows at accuracy {self.reference_accuracy:.4f})"
        )
        pct = int(round(any_interval.level * 100))
        lines = [head, f"  {'quantity':36} {'estimate':>9} {f'{pct}% interval':>21}"]
        for name, value in self.intervals().items():
            label = _LABELS[name]
            lines.append(
                f"  {label:36} {value.estimate:9.4f} {value.low:10.4f} to {value.high:.4f}"
            )
        how = f"interval: {any_interval.method} ({any_interval.n_boot} resamples)"
        lines.extend(textwrap.wrap(how, 96, initial_indent="  ", subsequent_indent="    "))
        if self.threshold is not None:
            lines.append(f"  acting when the top-label confidence >= {self.threshold:g}")
        if self.trust:
            for note in self.trust:
                wrapped = textwrap.wrap(f"do not trust: {note}", 96)
                lines.extend(["  " + wrapped[0], *("    " + rest for rest in wrapped[1:])])
        else:
            lines.append("  trust: no rule fired (see PerformanceEstimator, Notes)")
        return "\n".join(lines)
