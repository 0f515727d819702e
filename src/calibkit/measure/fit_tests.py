"""Goodness-of-fit tests of calibration: Spiegelhalter's Z and Hosmer-Lemeshow (with sample
weights too), and the :class:`TestResult` every calibration test returns."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .. import _validate as v
from .._errors import InputError
from .bins import BinStats
from .distributions import chi2_sf, normal_two_sided
from .reliability import binned

__all__ = [
    "TestResult",
    "format_p",
    "hosmer_lemeshow",
    "hosmer_lemeshow_from_stats",
    "spiegelhalter_from_stats",
    "spiegelhalter_variance",
    "spiegelhalter_z",
]


@dataclass(frozen=True)
class TestResult:
    """A goodness-of-fit test of calibration. A small ``p_value`` is evidence of
    miscalibration; ``statistic`` is NaN (with ``note``) when the test is undefined."""

    name: str
    statistic: float
    p_value: float
    df: int | None = None
    note: str = ""

    __test__ = False  # not a pytest test class

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for key in ("statistic", "p_value"):  # strict JSON has no NaN/Infinity; note says why
            if not np.isfinite(d[key]):
                d[key] = None
        return d

    def __str__(self) -> str:
        df = f", df = {self.df}" if self.df is not None else ""
        note = f" ({self.note})" if self.note else ""
        return f"{self.name}: {self.statistic:.3f}{df}, {format_p(self.p_value)}{note}"


def format_p(p: float) -> str:
    """``p = 0.0123``, or ``p < 1e-300`` where the p-value underflows to 0."""
    if np.isnan(p):
        return "p undefined"
    return "p < 1e-300" if p < 1e-300 else f"p = {p:.4g}"


def spiegelhalter_from_stats(stats: BinStats, *, variance: float | None = None) -> TestResult:
    """Spiegelhalter's Z from binned statistics (the bins play no role in the statistic).

    Weighted statistics hold the numerator sum w (y - p)(1 - 2p) but not the variance
    sum w^2 p (1 - p)(1 - 2p)^2 (their ``sum_var_weight`` is weighted by w, not w^2): pass it
    as ``variance`` (:func:`spiegelhalter_variance`)."""
    numerator = float(
        stats.sum_outcome.sum()
        - stats.sum_conf.sum()
        - 2.0 * stats.sum_conf_outcome.sum()
        + 2.0 * stats.sum_conf_sq.sum()
    )
    if variance is None:
        if stats.weighted:
            raise InputError(
                "spiegelhalter_from_stats: weighted statistics lack the variance "
                "sum w^2 p (1 - p)(1 - 2p)^2; pass variance=spiegelhalter_variance(confidence, "
                "sample_weight) computed from the rows."
            )
        variance = float(stats.sum_var_weight.sum())
    if variance <= 0.0:
        return TestResult(
            "Spiegelhalter Z",
            float("nan"),
            float("nan"),
            note="undefined: every forecast is 0, 0.5 or 1",
        )
    z = numerator / np.sqrt(variance)
    return TestResult("Spiegelhalter Z", float(z), normal_two_sided(float(z)))


def spiegelhalter_variance(confidence: np.ndarray, weight: np.ndarray) -> float:
    """sum w^2 p (1 - p)(1 - 2p)^2 of checked confidences and weights: the variance of the
    weighted Spiegelhalter numerator under calibration, rows independent."""
    p = confidence.astype(np.float64, copy=False)
    return float(np.sum(weight * weight * p * (1.0 - p) * (1.0 - 2.0 * p) ** 2))


def spiegelhalter_z(confidence: Any, outcome: Any, *, sample_weight: Any = None) -> TestResult:
    """Spiegelhalter's (1986) Z test: Z = sum (y - p)(1 - 2p) / sqrt(sum (1 - 2p)^2 p (1 - p)),
    standard normal under perfect calibration; two-sided p-value.

    With ``sample_weight`` w, Z = sum w (y - p)(1 - 2p) / sqrt(sum w^2 p (1 - p)(1 - 2p)^2):
    the weighted numerator over its standard deviation when the rows are independent draws
    each weighted by w (so multiplying every weight by a constant leaves Z as it is; integer
    weights are not the test of the rows repeated, whose copies would count as independent).
    The normal limit needs many rows of comparable weight: with a few dominant weights, it is
    an approximation.

    Examples
    --------
    Four forecasts of 0.9, three right: numerator (3 * 0.1 - 0.9) * (1 - 1.8) = 0.48, variance
    4 * 0.64 * 0.09 = 0.2304, so Z = 0.48 / 0.48 = 1.

    >>> import calibkit as ck
    >>> t = ck.spiegelhalter_z([0.9, 0.9, 0.9, 0.9], [1, 1, 1, 0])
    >>> round(t.statistic, 4)
    1.0

    Weights 1, 1, 1, 3 (the miss weighs 3): numerator (0.3 - 2.7) * (-0.8) = 1.92, variance
    (1 + 1 + 1 + 9) * 0.09 * 0.64 = 0.6912, so Z = 1.92 / 0.8314 = 2.3094.

    >>> round(ck.spiegelhalter_z([0.9] * 4, [1, 1, 1, 0], sample_weight=[1, 1, 1, 3]).statistic, 4)
    2.3094
    """
    where = "spiegelhalter_z"
    stats, _ = binned(
        confidence,
        outcome,
        n_bins=1,
        strategy="uniform",
        closed="right",
        edges=None,
        where=where,
        sample_weight=sample_weight,
    )
    if not stats.weighted:
        return spiegelhalter_from_stats(stats)
    conf = v.confidence(confidence, where=where)
    w = np.asarray(v.sample_weight(sample_weight, n=conf.shape[0], where=where))
    return spiegelhalter_from_stats(stats, variance=spiegelhalter_variance(conf, w))


def hosmer_lemeshow_from_stats(
    stats: BinStats, *, fitted: bool = False, requested: int | None = None
) -> TestResult:
    """Hosmer-Lemeshow C statistic over the bins of ``stats``; ``requested`` is the number of
    groups asked for, so the note can say how many tied confidences merged (a note, not a
    warning: ties are normal in real forecasts and the test is still defined). Weighted
    statistics: see :func:`hosmer_lemeshow`."""
    nz = stats.mass > 0
    n_g = stats.mass[nz].astype(np.float64, copy=False)
    observed, expected = stats.sum_outcome[nz], stats.sum_conf[nz]
    denom = expected * (1.0 - expected / n_g)
    if stats.weighted:  # the binomial variance of a weighted total: sum w^2 over sum w
        denom = denom * (stats.mass_sq[nz] / n_g)
    degenerate = denom <= 0.0
    note = f"{int(nz.sum())} equal-mass groups"
    if requested is not None and stats.n_bins < requested:
        note += f" of {requested} requested (tied confidences merged the others)"
    if np.any(degenerate & (observed != expected)):
        stat = float("inf")
        note += "; a group of forecasts all exactly 0 or 1 holds a contrary outcome"
    else:
        keep = ~degenerate
        stat = float(np.sum((observed[keep] - expected[keep]) ** 2 / denom[keep]))
    groups = int(nz.sum())
    df = groups - 2 if fitted else groups
    if df < 1:
        return TestResult(
            "Hosmer-Lemeshow",
            stat,
            float("nan"),
            df,
            note=f"undefined: only {groups} non-empty groups",
        )
    return TestResult("Hosmer-Lemeshow", stat, chi2_sf(stat, df), df, note=note)


def hosmer_lemeshow(
    confidence: Any,
    outcome: Any,
    *,
    n_bins: int = 10,
    fitted: bool = False,
    sample_weight: Any = None,
) -> TestResult:
    """Hosmer-Lemeshow test over ``n_bins`` equal-mass groups (quantile bins) of the forecasts.

    C = sum_g (O_g - E_g)^2 / (E_g (1 - E_g / n_g)), with O_g the observed and E_g the expected
    number of events in group g, compared with a chi-squared distribution with G degrees of
    freedom for forecasts judged on data they were not fitted to (``fitted=False``, the usual
    audit) or G - 2 for a model fitted on these same data (Hosmer and Lemeshow's original).

    With ``sample_weight`` w, the groups hold equal weight (weighted quantiles of the
    confidence), O_g and E_g are weighted totals and n_g = W_g the group's weight, and each
    term's denominator is the binomial variance of a weighted total of independent rows,
    E_g (1 - E_g / W_g) * sum_g w^2 / W_g (equal weights of 1 give the usual C; any common
    scale of the weights cancels). The chi-squared law of C with weights is an approximation,
    close when every group holds many rows of comparable weight.

    Examples
    --------
    >>> import calibkit as ck
    >>> t = ck.hosmer_lemeshow([0.2, 0.2, 0.8, 0.8], [0, 1, 1, 1], n_bins=2)
    >>> round(t.statistic, 4), t.df
    (1.625, 2)

    Weights 1, 3 in the lower group (its event weighs 3) and 1, 1 in the upper: O - E is
    3 - 0.8 and 2 - 1.6, the denominators 0.8 * 0.8 * 10 / 4 = 1.6 and 1.6 * 0.2 * 2 / 2 = 0.32,
    so C = 2.2^2 / 1.6 + 0.4^2 / 0.32 = 3.025 + 0.5.

    >>> w = [1, 3, 1, 1]
    >>> round(ck.hosmer_lemeshow([0.2, 0.2, 0.8, 0.8], [0, 1, 1, 1], n_bins=2, sample_weight=w)
    ...       .statistic, 4)
    3.525
    """
    where = "hosmer_lemeshow"
    n_bins = v.n_bins(n_bins, where=where)
    stats, _ = binned(
        confidence,
        outcome,
        n_bins=n_bins,
        strategy="quantile",
        closed="right",
        edges=None,
        where=where,
        warn=False,
        sample_weight=sample_weight,
    )
    return hosmer_lemeshow_from_stats(stats, fitted=fitted, requested=n_bins)
