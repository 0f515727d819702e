"""The result of a calibration slope fit (:mod:`calibkit.measure.slope`): slope, intercept and
calibration-in-the-large with their intervals, at any level."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any

from .distributions import normal_quantile

__all__ = ["CalibrationSlope"]


@dataclass(frozen=True)
class CalibrationSlope:
    """The logistic calibration fit, with Wald standard errors, intervals and p-values.

    ``slope_p`` tests slope = 1, ``intercept_p`` tests intercept = 0 in the joint fit, and
    ``in_the_large_p`` tests the calibration-in-the-large intercept = 0. When ``defined`` is
    False the numbers are NaN and ``note`` says why. Weighted, ``n``, ``n_certain`` and
    ``n_failed`` count the rows of positive weight and ``weight`` is their total weight.
    """

    slope: float
    slope_se: float
    slope_ci: tuple[float, float]
    slope_p: float
    intercept: float
    intercept_se: float
    intercept_ci: tuple[float, float]
    intercept_p: float
    in_the_large: float
    in_the_large_se: float
    in_the_large_ci: tuple[float, float]
    in_the_large_p: float
    level: float
    n: int
    n_certain: int
    n_failed: int = 0
    defined: bool = True
    note: str = ""
    weight: float | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if self.weight is None:  # unweighted: the dictionary it always was
            del d["weight"]
        return {k: _finite_or_none(x) for k, x in d.items()}

    def at_level(self, level: float) -> CalibrationSlope:
        """The same fit with its intervals at another ``level`` (the standard errors and
        p-values do not depend on it)."""
        if level == self.level or not self.defined:
            return replace(self, level=level)
        z = normal_quantile(0.5 + level / 2.0)

        def ci(x: float, se: float) -> tuple[float, float]:
            return (x - z * se, x + z * se)

        return replace(
            self,
            slope_ci=ci(self.slope, self.slope_se),
            intercept_ci=ci(self.intercept, self.intercept_se),
            in_the_large_ci=ci(self.in_the_large, self.in_the_large_se),
            level=level,
        )

    @property
    def spread(self) -> str | None:
        """``"too wide"`` (overconfident) or ``"too narrow"`` (underconfident) when the slope's
        interval excludes 1; None when it is consistent with 1 or undefined."""
        if not self.defined:
            return None
        low, high = self.slope_ci
        if high < 1.0:
            return "too wide"
        if low > 1.0:
            return "too narrow"
        return None

    @property
    def frequency(self) -> str | None:
        """``"too often"`` / ``"too rarely"`` (the event forecast more / less often than it
        happens) when the in-the-large interval excludes 0; None otherwise."""
        if not self.defined:
            return None
        low, high = self.in_the_large_ci
        if high < 0.0:
            return "too often"
        if low > 0.0:
            return "too rarely"
        return None

    def __str__(self) -> str:
        if not self.defined:
            return f"calibration slope: undefined ({self.note})"
        pct = f"{self.level * 100:g}%"
        return (
            f"calibration slope {self.slope:.4f} ({pct} CI {_ci(self.slope_ci)}; 1 = calibrated), "
            f"intercept {self.intercept:+.4f} ({_ci(self.intercept_ci)}); calibration-in-the-"
            f"large {self.in_the_large:+.4f} ({_ci(self.in_the_large_ci)}; 0 = calibrated), "
            f"N = {self.n}{'' if self.weight is None else f' (total weight {self.weight:g})'}"
        )


def _ci(ci: tuple[float, float]) -> str:
    return f"[{ci[0]:.4f}, {ci[1]:.4f}]"


def _finite_or_none(x: Any) -> Any:
    if isinstance(x, tuple):
        return [_finite_or_none(y) for y in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x
