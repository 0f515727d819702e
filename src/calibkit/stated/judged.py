"""Honest intervals when most outcomes come from a judge: prediction-powered inference
(Angelopoulos et al. 2023) beside the naive numbers that take the judge as the truth.

The intervals of the PPI part assume the person-labelled items were drawn uniformly at random
from the N items, independently of the confidences, the judge and the answers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .. import _validate as v
from .._errors import InputError
from ..measure.bins import bin_edges, bin_index
from ..measure.intervals import proportion_interval
from ..measure.ppi import ppi_bins, ppi_ece_bootstrap, ppi_mean, ppi_slope
from ..measure.slope import calibration_slope
from ..measure.uncertainty import bootstrap_ece

__all__ = ["JudgedAudit", "JudgedBin", "JudgedMeasures", "judged_audit"]

Interval = tuple[float, float] | None


@dataclass(frozen=True)
class JudgedBin:
    """One confidence bin: its accuracy with interval (None with ``note`` where none exists)."""

    lo: float
    hi: float
    count: int
    n_labelled: int
    conf: float
    acc: float | None
    ci: Interval
    note: str = ""


@dataclass(frozen=True)
class JudgedMeasures:
    """Accuracy, per-bin accuracy, ECE, calibration slope and intercept, each with an interval."""

    accuracy: float
    accuracy_ci: Interval
    ece: float
    ece_ci: Interval
    slope: float
    slope_ci: Interval
    intercept: float
    intercept_ci: Interval
    bins: tuple[JudgedBin, ...]
    lam: float | None = None


@dataclass(frozen=True)
class JudgedAudit:
    """:func:`judged_audit`'s result: ``ppi`` (judge rectified by the person's labels) and
    ``naive`` (the judge taken as the truth)."""

    ppi: JudgedMeasures
    naive: JudgedMeasures
    n: int
    n_labelled: int
    level: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        def iv(ci: Interval) -> str:
            return "n/a" if ci is None else f"[{ci[0]:.4f}, {ci[1]:.4f}]"

        pct = int(round(self.level * 100))
        lines = [
            f"Judged audit: {self.n} items, {self.n_labelled} labelled by a person "
            f"({pct}% intervals)",
            f"{'measure':<10} {'PPI':>8} {'interval':>18}   {'naive':>8} {'interval':>18}",
        ]
        for name in ("accuracy", "ece", "slope", "intercept"):
            p, q = getattr(self.ppi, name), getattr(self.naive, name)
            pc, qc = getattr(self.ppi, name + "_ci"), getattr(self.naive, name + "_ci")
            lines.append(f"{name:<10} {p:>8.4f} {iv(pc):>18}   {q:>8.4f} {iv(qc):>18}")
        return "\n".join(lines)


def _person(person: Any, n: int, where: str) -> tuple[np.ndarray, np.ndarray]:
    arr = v.outcome_array(person, n=n, where=where, name="person")
    arr = arr.astype(np.float64)
    labelled = ~np.isnan(arr)
    bad = labelled & (arr != 0.0) & (arr != 1.0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"{where}: person must be 0/1 (NaN where unlabelled); row {i} holds {arr[i]!r}."
        )
    if not labelled.any():
        raise InputError(f"{where}: person has no labelled items (all NaN); label some items.")
    return np.where(labelled, arr, 0.0), labelled


def judged_audit(
    confidence: Any,
    judge: Any,
    person: Any,
    *,
    n_bins: int = 15,
    level: float = 0.95,
    seed: int = 0,
    n_boot: int = 1000,
    power_tuning: bool = True,
) -> JudgedAudit:
    """Calibration of a confidence whose outcomes a judge graded, a person checking a subset.

    Parameters
    ----------
    confidence : array of shape (N,)
        The stated confidence of each item.
    judge : array of shape (N,)
        The judge's 0/1 verdict on every item.
    person : array of shape (N,)
        The person's 0/1 label, NaN where the item was not labelled by the person.
    n_bins, level, seed, n_boot
        Uniform bins, interval level, bootstrap seed and resamples (ECE).
    power_tuning : bool
        PPI++ lam tuned on the labelled items (default: to first order never worse than the
        person-only estimate, and lam = 1 for a perfect judge); False gives plain PPI.

    Returns
    -------
    JudgedAudit

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.stated import judged_audit
    >>> rng = np.random.default_rng(0)
    >>> conf = rng.uniform(0.5, 1.0, 2000); truth = (rng.random(2000) < conf).astype(float)
    >>> judge = np.where(rng.random(2000) < 0.15, 1.0, truth)
    >>> person = np.where(np.arange(2000) < 300, truth, np.nan)
    >>> r = judged_audit(conf, judge, person, n_boot=200)
    >>> lo, hi = r.ppi.accuracy_ci
    >>> bool(lo < truth.mean() < hi), bool(r.naive.accuracy > truth.mean())
    (True, True)
    """
    where = "judged_audit"
    conf = v.confidence(confidence, where=where).astype(np.float64)
    n = conf.shape[0]
    f = v.outcome(judge, n=n, where=where, name="judge").astype(np.float64)
    y, lab = _person(person, n, where)
    level = v.level(level, where=where)
    n_boot = v.positive_int(n_boot, name="n_boot", where=where)
    edges = bin_edges(n_bins=n_bins)
    b = bin_index(conf, edges)
    lam = None if power_tuning else 1.0
    acc = ppi_mean(f, y, lab, level=level, lam=lam)
    rows = ppi_bins(b, edges.size - 1, f, y, lab, level=level, power_tuning=power_tuning)
    ece, ece_ci = ppi_ece_bootstrap(
        conf, b, edges.size - 1, f, y, lab, level=level, n_boot=n_boot, seed=seed,
        power_tuning=power_tuning,
    )  # fmt: skip
    n_lab = int(lab.sum())
    if np.count_nonzero(lab & (conf > 0) & (conf < 1)) < 3:
        raise InputError(
            f"{where}: the slope needs at least 3 labelled items with confidence strictly "
            f"between 0 and 1; {n_lab} are labelled. Label more items."
        )
    s = ppi_slope(conf, f, y, lab, level=level, lam=lam)
    bins = []
    for k, m in enumerate(rows):
        inside = b == k
        if m is None:
            continue
        c = float(conf[inside].mean())
        bins.append(
            JudgedBin(edges[k], edges[k + 1], m.n, m.n_labelled, c, m.estimate, m.ci, m.note)
        )
    ppi = JudgedMeasures(
        accuracy=float(acc.estimate),  # type: ignore[arg-type]
        accuracy_ci=acc.ci,
        ece=ece,
        ece_ci=ece_ci,
        slope=s.slope,
        slope_ci=s.slope_ci,
        intercept=s.intercept,
        intercept_ci=s.intercept_ci,
        bins=tuple(bins),
        lam=acc.lam,
    )
    return JudgedAudit(ppi, _naive(conf, f, b, edges, level, n_boot, seed), n, n_lab, level)


def _naive(
    conf: np.ndarray,
    f: np.ndarray,
    b: np.ndarray,
    edges: np.ndarray,
    level: float,
    n_boot: int,
    seed: int,
) -> JudgedMeasures:
    """The same measures with the judge taken as the truth, with calibkit's usual intervals
    (Wilson for accuracies, the row bootstrap for ECE, Wald for the slope)."""
    m = edges.size - 1
    count = np.bincount(b, minlength=m)
    hits = np.bincount(b, weights=f, minlength=m)
    sconf = np.bincount(b, weights=conf, minlength=m)
    lo, hi = proportion_interval(hits, count.astype(float), method="wilson", level=level)
    bins = tuple(
        JudgedBin(edges[k], edges[k + 1], int(count[k]), 0, sconf[k] / count[k],
                  hits[k] / count[k], (float(lo[k]), float(hi[k])))
        for k in range(m) if count[k]
    )  # fmt: skip
    alo, ahi = proportion_interval(
        np.array([f.sum()]), np.array([float(f.size)]), method="wilson", level=level
    )
    e = bootstrap_ece(conf, f, edges=edges, n_boot=n_boot, level=level, seed=seed)
    s = calibration_slope(conf, f, level=level)
    return JudgedMeasures(
        accuracy=float(f.mean()),
        accuracy_ci=(float(alo[0]), float(ahi[0])),
        ece=e.estimate,
        ece_ci=(e.low, e.high),
        slope=s.slope,
        slope_ci=s.slope_ci,
        intercept=s.intercept,
        intercept_ci=s.intercept_ci,
        bins=bins,
    )
