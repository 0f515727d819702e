"""CORP reliability (Dimitriadis, Gneiting and Jordan 2021): the isotonic recalibration of the
outcomes on the forecasts as the reliability curve, its consistency and confidence bands, and
the decomposition of a proper score into miscalibration, discrimination and uncertainty.

CORP stands for Consistent, Optimally binned, Reproducible and PAV-based: the curve is the
pool-adjacent-violators fit of the outcomes on the forecasts, so its "bins" (the PAV blocks)
are chosen by the data, not by a bin count, and the same data always give the same diagram.

For a proper score S (Brier or log loss) and the mean scores of the forecasts, of their
isotonic recalibration and of the climatology (the overall event rate, one value for all rows):

- MCB = S(forecasts) - S(recalibrated): miscalibration, what recalibration would remove;
- DSC = S(climatology) - S(recalibrated): discrimination;
- UNC = S(climatology): uncertainty of the outcomes alone;

so S = MCB - DSC + UNC exactly. The isotonic fit is the recalibration that minimises every
proper score at once among non-decreasing maps, which is why one fit serves both scores. A
recalibrated value is exactly 0 or 1 only on a block whose outcomes are all 0 or all 1, where
the log loss terms are 0 (0 log 0 = 0), so S(recalibrated) is always finite; a forecast of
exactly 0 or 1 whose outcome disagrees makes S(forecasts) and MCB of the log loss infinite,
and the decomposition's ``note`` counts them.

The functions take (confidence, outcome) pairs: P(y = 1) with the event y, or, for a
multiclass model, the top-label pairs (max probability, prediction correct) of
:func:`calibkit.top_label` (what the audit passes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .. import _kernels
from .. import _validate as v
from .._errors import InputError
from .corp_bands import Band, RowWeights, bands, plural
from .pooled import Pooled, isotonic_fit, pool_ties, step_at

__all__ = [
    "Band",
    "CorpResult",
    "ScoreDecomposition",
    "corp",
    "corp_of",
    "decompose",
]

# ----------------------------------------------------------------------------- results


@dataclass(frozen=True)
class ScoreDecomposition:
    """A mean proper score split as ``score = miscalibration - discrimination + uncertainty``
    (MCB - DSC + UNC) around the isotonic recalibration, whose mean score is
    ``recalibrated``."""

    name: str
    score: float
    miscalibration: float
    discrimination: float
    uncertainty: float
    recalibrated: float
    n: int
    note: str = ""
    weight: float | None = None

    @property
    def removable(self) -> float:
        """The share of the score recalibration would remove: MCB / score (NaN when the
        score is 0 or infinite)."""
        if not math.isfinite(self.score) or self.score <= 0.0:
            return math.nan
        return self.miscalibration / self.score

    def to_dict(self) -> dict[str, Any]:
        d = {
            "name": self.name,
            "score": self.score,
            "miscalibration": self.miscalibration,
            "discrimination": self.discrimination,
            "uncertainty": self.uncertainty,
            "recalibrated": self.recalibrated,
            "removable": self.removable,
            "n": self.n,
            "note": self.note,
        }
        if self.weight is not None:
            d["weight"] = self.weight
        return {k: _finite_or_none(x) for k, x in d.items()}

    def __str__(self) -> str:
        share = "" if math.isnan(self.removable) else f" ({self.removable:.1%} removable)"
        note = f" ({self.note})" if self.note else ""
        return (
            f"{self.name} {self.score:.4f} = MCB {self.miscalibration:.4f}{share} - DSC "
            f"{self.discrimination:.4f} + UNC {self.uncertainty:.4f}{note}"
        )


@dataclass(frozen=True)
class CorpResult:
    """The CORP reliability curve with its bands and score decompositions.

    ``x`` are the distinct forecasts (increasing), ``count`` the rows at each, ``observed``
    their event rate and ``recalibrated`` the isotonic fit there: the CORP curve, a
    non-decreasing step function of the forecast. ``brier`` and ``log_loss`` are the
    decompositions; ``consistency`` and ``confidence`` the bands (None when ``n_boot`` is 0).
    With sample weights ``weight`` is the sum of the weights at each ``x`` and ``observed``
    the weighted event rate (``count`` and ``n`` count the rows of positive weight).
    """

    x: np.ndarray
    count: np.ndarray
    observed: np.ndarray
    recalibrated: np.ndarray
    brier: ScoreDecomposition
    log_loss: ScoreDecomposition
    consistency: Band | None
    confidence: Band | None
    n: int
    level: float
    n_boot: int
    seed: int | None
    weight: np.ndarray | None = None

    @property
    def blocks(self) -> list[tuple[float, float, int, float]]:
        """The PAV blocks (CORP's bins): ``(lowest forecast, highest forecast, rows,
        recalibrated value)`` for each run of forecasts with one recalibrated value."""
        starts = np.flatnonzero(np.r_[True, self.recalibrated[1:] != self.recalibrated[:-1]])
        ends = np.r_[starts[1:], self.x.size] - 1
        rows = np.add.reduceat(self.count, starts)
        return [
            (float(self.x[s]), float(self.x[e]), int(c), float(self.recalibrated[s]))
            for s, e, c in zip(starts, ends, rows, strict=True)
        ]

    def recalibrate(self, confidence: Any) -> np.ndarray:
        """The CORP curve at new forecasts: the recalibrated value of the highest fitted
        forecast at or below each (the lowest one's value below the fitted range), the
        step function the bands are evaluated with.

        Examples
        --------
        >>> from calibkit.measure.corp import corp
        >>> r = corp([0.4, 0.3, 0.2, 0.1, 0.5, 0.9], [0, 0, 0, 1, 1, 1], n_boot=0)
        >>> r.recalibrate([0.05, 0.45, 0.95]).tolist()
        [0.25, 0.25, 1.0]
        """
        where = "CorpResult.recalibrate"
        conf = v.confidence(confidence, where=where)
        return step_at(self.x, self.recalibrated, conf.astype(np.float64))

    def to_dict(self) -> dict[str, Any]:
        return {
            "x": self.x.tolist(),
            "count": self.count.tolist(),
            "observed": self.observed.tolist(),
            "recalibrated": self.recalibrated.tolist(),
            "brier": self.brier.to_dict(),
            "log_loss": self.log_loss.to_dict(),
            "consistency": None if self.consistency is None else self.consistency.to_dict(),
            "confidence": None if self.confidence is None else self.confidence.to_dict(),
            "n": self.n,
            "level": self.level,
            "n_boot": self.n_boot,
            "seed": self.seed,
            **({} if self.weight is None else {"weight": self.weight.tolist()}),
        }

    def outside_consistency(self) -> int:
        """How many of the band's forecasts have a CORP value outside the consistency band
        (0 when there is no band)."""
        band = self.consistency
        if band is None:
            return 0
        fitted = step_at(self.x, self.recalibrated, band.x)
        return int(np.count_nonzero((fitted < band.low) | (fitted > band.high)))

    def __str__(self) -> str:
        blocks = self.blocks
        lines = [
            f"CORP reliability (isotonic recalibration): N = {self.n}{_weight_note(self.weight)}, "
            f"{plural(self.x.size, 'distinct forecast')}, {plural(len(blocks), 'PAV block')}",
            f"  {self.brier}",
            f"  {self.log_loss}",
        ]
        if self.consistency is not None:
            out, at = self.outside_consistency(), self.consistency.x.size
            lines.append(f"  {self.consistency}: the curve leaves it at {out} of {at}")
        shown = blocks if len(blocks) <= 12 else blocks[:6] + blocks[-6:]
        lines.append("  forecasts                   rows   recalibrated")
        for i, (lo, hi, rows, value) in enumerate(shown):
            if len(blocks) > 12 and i == 6:
                lines.append(f"  ... {len(blocks) - 12} more blocks ...")
            lines.append(f"  {lo:.6f} to {hi:.6f}  {rows:>9}   {value:.4f}")
        return "\n".join(lines)


def _weight_note(weight: Any) -> str:
    """`` (total weight W)`` beside a row count when the result is weighted."""
    return "" if weight is None else f" (total weight {float(np.sum(weight)):g})"


def _finite_or_none(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


# ----------------------------------------------------------------------------- scores


def _brier_terms(pooled: Pooled, p: np.ndarray) -> float:
    """Mean Brier score of forecasting ``p`` at each pooled value: each value's rows
    contribute count p^2 - 2 p hits + hits (weight p^2 - 2 p hits + hits, weighted)."""
    c = pooled.mass
    return float(np.sum(c * p * p - 2.0 * p * pooled.hits + pooled.hits) / c.sum())


def _log_terms(pooled: Pooled, p: np.ndarray) -> tuple[float, float]:
    """Mean log loss of forecasting ``p`` at each pooled value (0 log 0 = 0), and the number
    (weight, weighted) of rows whose outcome a forecast of exactly 0 or 1 contradicts (then
    the loss is inf)."""
    c = pooled.mass
    hits, misses = pooled.hits, c - pooled.hits
    failed = float(np.sum(misses[p >= 1.0]) + np.sum(hits[p <= 0.0]))
    if failed:
        return math.inf, failed
    # 0 log 0 = 0: a forecast of 0 (1) is logged only where it has events (non-events)
    total = np.sum(hits * np.log(np.where(hits > 0, p, 1.0))) + np.sum(
        misses * np.log1p(-np.where(misses > 0, p, 0.0))
    )
    return float(-total / c.sum()) + 0.0, 0  # + 0.0: no -0.0 when every term is 0


def _terms(pooled: Pooled, fitted: np.ndarray, rate: float) -> tuple[float, ...]:
    """The mean Brier scores and log losses of the forecasts, of their fit ``fitted`` and of
    the climatology ``rate``, and the (weight of the) rows the forecasts' log loss fails on.

    Many values take one pass of the numba kernel (``_numba_distinct.score_terms``);
    :func:`_brier_terms` and :func:`_log_terms`, three passes each, are its reference."""
    if not _kernels.use_numba(pooled.x.size):
        base = np.full(pooled.x.shape, rate)
        log, failed = _log_terms(pooled, pooled.x)
        return (
            _brier_terms(pooled, pooled.x),
            _brier_terms(pooled, fitted),
            _brier_terms(pooled, base),
            log,
            _log_terms(pooled, fitted)[0],
            _log_terms(pooled, base)[0],
            failed,
        )
    with np.errstate(divide="ignore"):  # log 0: a failed forecast, whose loss is inf
        log_x, log1m_x = np.log(pooled.x), np.log1p(-pooled.x)
    brier, log, fails, total = _kernels.numba_distinct().score_terms(
        pooled.x, log_x, log1m_x, pooled.hits, pooled.mass, fitted, rate
    )
    # as _log_terms: inf where a forecast of exactly 0 or 1 is contradicted; + 0.0: no -0.0
    logs = [math.inf if f else float(-s / total) + 0.0 for s, f in zip(log, fails, strict=True)]
    return (*(float(b / total) for b in brier), *logs, float(fails[0]))


def decompose(pooled: Pooled, fitted: np.ndarray) -> tuple[ScoreDecomposition, ...]:
    """The Brier and log-loss decompositions of the pooled forecasts around their isotonic
    recalibration ``fitted`` (what :func:`corp_of` computes; an engine holding pooled sums
    calls it directly)."""
    n = pooled.n
    mass = pooled.total_mass if pooled.weighted else n
    weight = pooled.total_mass if pooled.weighted else None
    rate = float(pooled.hits.sum()) / mass
    brier, brier_cal, brier_clim, log, log_cal, log_clim, failed = _terms(pooled, fitted, rate)
    out = []
    out.append(
        ScoreDecomposition(
            "Brier",
            brier,
            brier - brier_cal,
            brier_clim - brier_cal,
            brier_clim,
            brier_cal,
            n,
            weight=weight,
        )
    )
    note = ""
    if failed and pooled.weighted:
        note = (
            f"forecasts of exactly 0 or 1 of total weight {failed:g} are contradicted by the "
            "outcome: the log loss and its miscalibration are infinite"
        )
    elif failed:
        k = int(failed)
        note = (
            f"{k} {'forecast' if k == 1 else 'forecasts'} of exactly 0 or 1 "
            f"{'is' if k == 1 else 'are'} contradicted by the outcome: the log loss and "
            "its miscalibration are infinite"
        )
    out.append(
        ScoreDecomposition(
            "log loss",
            log,
            log - log_cal,
            log_clim - log_cal,
            log_clim,
            log_cal,
            n,
            note,
            weight=weight,
        )
    )
    return tuple(out)


# ----------------------------------------------------------------------------- entry points


def corp(
    confidence: Any,
    outcome: Any,
    *,
    n_boot: int = 100,
    level: float = 0.9,
    seed: int | np.random.Generator | None = 0,
    sample_weight: Any = None,
) -> CorpResult:
    """CORP reliability: the isotonic recalibration curve, its bands, and the Brier and
    log-loss decompositions into miscalibration, discrimination and uncertainty.

    Parameters
    ----------
    confidence : array of shape (N,)
        Forecast probabilities of the event, P(y = 1), or top-label confidences
        (``ck.top_label(probs, labels)``).
    outcome : array of shape (N,)
        Whether the event happened (0/1); for top-label pairs, whether the prediction was
        right.
    n_boot : int
        Resamples for the consistency and confidence bands; 0 computes no bands (the curve
        and the decompositions only).
    level : float
        Level of the pointwise bands (0.9, as in Dimitriadis et al. 2021).
    seed : int, Generator or None
        Randomness of the resamples; the same seed gives the same bands.
    sample_weight : array of shape (N,), optional
        Non-negative row weights: ties are pooled with their weights, the PAV fit is weighted
        by them and the decompositions are weighted means (integer weights give the numbers of
        the rows repeated that many times; a row of weight 0 is left out). The bands then
        resample the rows, each keeping its weight, and fit each resample by weighted PAV
        (a bootstrap of the rows as observed once each, not of the rows repeated).

    Returns
    -------
    CorpResult
        ``recalibrated`` at each distinct forecast ``x`` (the CORP curve), ``brier`` and
        ``log_loss`` (:class:`ScoreDecomposition`: score = MCB - DSC + UNC), and the
        ``consistency`` and ``confidence`` bands.

    Examples
    --------
    The published check of ``reliabilitydiag``: PAV pools the first four forecasts (one
    event in four) and keeps the last two (events):

    >>> import calibkit as ck
    >>> r = ck.corp([0.4, 0.3, 0.2, 0.1, 0.5, 0.9], [0, 0, 0, 1, 1, 1], n_boot=0)
    >>> r.recalibrated.tolist()  # at the sorted forecasts 0.1, 0.2, 0.3, 0.4, 0.5, 0.9
    [0.25, 0.25, 0.25, 0.25, 1.0, 1.0]
    >>> d = r.brier
    >>> round(d.score, 7), round(d.miscalibration, 7), round(d.discrimination, 7)
    (0.2266667, 0.1016667, 0.125)
    >>> round(d.uncertainty, 7)
    0.25

    Weighted, the event at 0.1 counting three times pools 0.1 to 0.4 at 3 / 6:

    >>> w = [1, 1, 1, 3, 1, 1]
    >>> ck.corp([0.4, 0.3, 0.2, 0.1, 0.5, 0.9], [0, 0, 0, 1, 1, 1], sample_weight=w,
    ...         n_boot=0).recalibrated.tolist()
    [0.5, 0.5, 0.5, 0.5, 1.0, 1.0]
    """
    where = "corp"
    conf = v.confidence(confidence, where=where)
    y = v.outcome(outcome, n=conf.shape[0], where=where)
    w = v.sample_weight(sample_weight, n=conf.shape[0], where=where)
    n_boot = v.positive_int(n_boot, name="n_boot", where=where, minimum=0)
    level = v.level(level, where=where)
    rng = v.seed_or_rng(seed, where=where)
    return corp_of(
        conf,
        y,
        n_boot=n_boot,
        level=level,
        rng=rng,
        seed=int(seed) if isinstance(seed, (int, np.integer)) else None,
        sample_weight=w,
    )


def corp_of(
    conf: np.ndarray,
    outcome: np.ndarray,
    *,
    n_boot: int = 100,
    level: float = 0.9,
    rng: np.random.Generator | None = None,
    seed: int | None = 0,
    sample_weight: np.ndarray | None = None,
) -> CorpResult:
    """:func:`corp` of checked arrays (weights checked too)."""
    pooled = pool_ties(conf, outcome, sample_weight=sample_weight)
    rows = None
    if sample_weight is not None and n_boot:
        keep = sample_weight > 0
        x = np.asarray(conf, dtype=np.float64)[keep] + 0.0
        rows = (np.searchsorted(pooled.x, x), sample_weight[keep])
    return corp_from_pooled(pooled, n_boot=n_boot, level=level, rng=rng, seed=seed, rows=rows)


def corp_from_pooled(
    pooled: Pooled,
    *,
    n_boot: int = 100,
    level: float = 0.9,
    rng: np.random.Generator | None = None,
    seed: int | None = 0,
    rows: RowWeights | None = None,
) -> CorpResult:
    """:func:`corp` of forecasts pooled by value (what the audit calls); the bands of weighted
    pooled forecasts need their ``rows`` (:data:`~calibkit.measure.corp_bands.RowWeights`)."""
    fitted = isotonic_fit(pooled)
    brier, log_loss = decompose(pooled, fitted)
    consistency = confidence = None
    if n_boot and pooled.weighted and rows is None:
        raise InputError(
            "corp: the bands of weighted pooled forecasts resample the rows with their "
            "weights, which pooled sums do not hold; pass n_boot=0, or call ck.corp on the rows."
        )
    if n_boot:
        rng = rng if rng is not None else np.random.default_rng(seed)
        consistency, confidence = bands(pooled, fitted, level, n_boot, rng, rows)
    return CorpResult(
        x=pooled.x,
        count=pooled.count,
        observed=pooled.mean,
        recalibrated=fitted,
        brier=brier,
        log_loss=log_loss,
        consistency=consistency,
        confidence=confidence,
        n=pooled.n,
        level=level,
        n_boot=n_boot,
        seed=seed,
        weight=pooled.weight,
    )


def with_bands(
    result: CorpResult, *, n_boot: int = 100, level: float = 0.9, seed: int | None = 0
) -> CorpResult:
    """``result`` with its consistency and confidence bands (resampled from its pooled
    forecasts: the same bands :func:`corp` draws from the rows, for the same seed); not for
    a weighted result."""
    if result.weight is not None:
        raise InputError(
            "with_bands: the bands of a weighted CORP result resample its rows with their "
            "weights, which the result does not hold; call ck.corp on the rows with n_boot=."
        )
    pooled = Pooled(result.x, result.count, result.observed * result.count)
    consistency, confidence = bands(
        pooled, result.recalibrated, level, n_boot, np.random.default_rng(seed)
    )
    return replace(
        result,
        consistency=consistency,
        confidence=confidence,
        level=level,
        n_boot=n_boot,
        seed=seed,
    )
