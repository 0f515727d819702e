"""Prediction-powered inference (Angelopoulos, Bates, Fannjiang, Jordan and Zrnic 2023) with the
power tuning of PPI++ (Angelopoulos, Duchi and Zrnic 2023): calibration measures when most
outcomes come from a judge (a model that grades) and a person labels a small subset.

Notation: N items, each with a judge label f_i (0/1); a subset L of n items also has the
person's label y_i; U is the other N - n. The estimate of a mean outcome is

    theta = ybar_L + lam * (fbar_all - fbar_L)

(``lam = 1``: the PPI estimate mean_judge(all) + mean(person - judge on L); ``lam = 0``: the
person-only mean). Since fbar_all = (n fbar_L + (N - n) fbar_U) / N, theta = ybar_L - c (fbar_L -
fbar_U) with c = lam (1 - n / N), and L and U are disjoint, so its variance is exactly
Var_L(y - c f) / n + c^2 Var_U(f) / (N - n). The assumption behind the intervals: L is drawn
uniformly at random from the N items, independently of everything else (then within each
confidence bin it is uniform too). The judge may be wrong in any way; the rectifier corrects it.

Power tuning picks lam = Cov_L(y, f) / Var_L(f), which minimises that variance; lam = 0 is among
the choices, so (to first order) the tuned estimate is never worse than the person-only one, and a
perfect judge gets lam = 1. The calibration slope is the rectified logistic M-estimator (PPI's
GLM section) with a sandwich variance. Numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .distributions import normal_quantile

__all__ = ["PPIMean", "PPISlope", "ppi_bins", "ppi_ece_bootstrap", "ppi_mean", "ppi_slope"]


@dataclass(frozen=True)
class PPIMean:
    """A prediction-powered mean with its CLT interval (``ci`` None, ``note`` why, when n < 2)."""

    estimate: float | None
    se: float | None
    ci: tuple[float, float] | None
    lam: float
    n_labelled: int
    n: int
    note: str = ""


def _tuned_lam(sy: float, sf: float, syf: float, n: int) -> float:
    """Cov_L(y, f) / Var_L(f) of 0/1 labels from their sums (0 where the judge is constant)."""
    if n < 2:
        return 1.0
    var_f = (sf - sf * sf / n) / (n - 1)
    if var_f <= 0:
        return 0.0
    return float(((syf - sy * sf / n) / (n - 1)) / var_f)


def ppi_mean(
    judge: np.ndarray,
    person: np.ndarray,
    labelled: np.ndarray,
    *,
    level: float = 0.95,
    lam: float | None = None,
) -> PPIMean:
    """Prediction-powered mean outcome of checked arrays.

    ``judge`` (N,) 0/1 floats; ``person`` (N,) 0/1 where ``labelled`` (a boolean mask) is True;
    ``lam=None`` tunes lam (PPI++), a number fixes it (1: plain PPI, 0: person only).

    Examples
    --------
    Four items, two labelled; the judge is wrong on one labelled item:

    >>> import numpy as np
    >>> f = np.array([1.0, 1.0, 0.0, 1.0]); y = np.array([0.0, 1.0, 0.0, 0.0])
    >>> m = ppi_mean(f, y, np.array([True, True, False, False]), lam=1.0)
    >>> m.estimate  # 3/4 + (0 + 1)/2 - (1 + 1)/2
    0.25
    """
    n_all = int(judge.shape[0])
    y, fl, fu = person[labelled], judge[labelled], judge[~labelled]
    n = int(y.shape[0])
    if n == 0:
        return PPIMean(None, None, None, 0.0, 0, n_all, "no labelled items")
    if lam is None:
        lam = _tuned_lam(float(y.sum()), float(fl.sum()), float((y * fl).sum()), n)
    c = lam * (1.0 - n / n_all)
    est = float(y.mean() - c * (fl.mean() - (fu.mean() if fu.size else 0.0)))
    if n < 2:
        return PPIMean(est, None, None, float(lam), n, n_all, "fewer than 2 labelled items")
    var = float(np.var(y - c * fl, ddof=1)) / n
    if fu.size > 1:
        var += c * c * float(np.var(fu, ddof=1)) / fu.size
    se = float(np.sqrt(var))
    z = normal_quantile(0.5 + level / 2.0)
    return PPIMean(est, se, (est - z * se, est + z * se), float(lam), n, n_all)


def ppi_bins(
    bins: np.ndarray,
    n_bins: int,
    judge: np.ndarray,
    person: np.ndarray,
    labelled: np.ndarray,
    *,
    level: float = 0.95,
    power_tuning: bool = True,
) -> list[PPIMean | None]:
    """:func:`ppi_mean` in each bin (``bins`` the bin index of each item); None for an empty bin."""
    out: list[PPIMean | None] = []
    for b in range(n_bins):
        inside = bins == b
        if not inside.any():
            out.append(None)
            continue
        out.append(
            ppi_mean(
                judge[inside],
                person[inside],
                labelled[inside],
                level=level,
                lam=None if power_tuning else 1.0,
            )
        )
    return out


def _ece_from_sums(lab: np.ndarray, u: np.ndarray, power_tuning: bool) -> np.ndarray:
    """PPI ECE of per-bin sums. ``lab`` (..., B, 5): labelled count, sum conf, sum y, sum f,
    sum y f; ``u`` (..., B, 3): unlabelled count, sum conf, sum f. A bin with no labelled item
    takes the judge's accuracy (it cannot be corrected)."""
    nl, cl, sy, sf, syf = np.moveaxis(lab, -1, 0)
    nu, cu, fu = np.moveaxis(u, -1, 0)
    nb = nl + nu
    with np.errstate(divide="ignore", invalid="ignore"):
        if power_tuning:
            var_f = (sf - sf * sf / nl) / (nl - 1)
            cov = (syf - sy * sf / nl) / (nl - 1)
            lam = np.where((nl >= 2) & (var_f > 0), cov / var_f, np.where(nl >= 2, 0.0, 1.0))
        else:
            lam = np.ones_like(nl)
        acc_l = np.where(nl > 0, sy / nl + lam * ((sf + fu) / nb - sf / nl), (sf + fu) / nb)
        gap = np.abs(acc_l - (cl + cu) / nb) * nb
    gap = np.where(nb > 0, gap, 0.0)
    return gap.sum(axis=-1) / nb.sum(axis=-1)


def _cell_sums(cols: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unique rows of ``cols`` (bin first), their counts and inverse."""
    cells, counts = np.unique(cols, axis=0, return_counts=True)
    return cells, counts, cells[:, 0].astype(np.int64)


def ppi_ece_bootstrap(
    conf: np.ndarray,
    bins: np.ndarray,
    n_bins: int,
    judge: np.ndarray,
    person: np.ndarray,
    labelled: np.ndarray,
    *,
    level: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
    power_tuning: bool = True,
) -> tuple[float, tuple[float, float]]:
    """PPI ECE (L1, binned) and its percentile bootstrap interval.

    ECE is a sum of absolute values, not a mean, so no CLT interval applies; the bootstrap
    resamples the labelled and the unlabelled items separately (stratified), each with
    replacement at its own size, and recomputes the PPI ECE. It is exact: items with equal
    (bin, confidence, labels) are one cell, and a resample is a multinomial draw of cell counts.
    Like every binned ECE, the estimate is biased upward (|noise| adds to each bin's gap).
    """
    lab = labelled
    lcols = np.column_stack([bins[lab], conf[lab], person[lab], judge[lab]])
    ucols = np.column_stack([bins[~lab], conf[~lab], judge[~lab]])
    lc, lk, lb = _cell_sums(lcols)
    uc, uk, ub = _cell_sums(ucols) if ucols.shape[0] else (ucols, np.zeros(0), np.zeros(0, int))
    lval = np.column_stack(
        [np.ones(lc.shape[0]), lc[:, 1], lc[:, 2], lc[:, 3], lc[:, 2] * lc[:, 3]]
    )
    uval = np.column_stack([np.ones(uc.shape[0]), uc[:, 1], uc[:, 2]])
    lmap = np.zeros((lc.shape[0], n_bins))
    lmap[np.arange(lc.shape[0]), lb] = 1.0
    umap = np.zeros((uc.shape[0], n_bins))
    umap[np.arange(uc.shape[0]), ub] = 1.0

    def sums(wl: np.ndarray, wu: np.ndarray) -> np.ndarray:
        ls = np.einsum("rk,kb,kj->rbj", wl, lmap, lval)
        us = np.einsum("rk,kb,kj->rbj", wu, umap, uval)
        return _ece_from_sums(ls, us, power_tuning)

    est = float(sums(lk[None, :].astype(float), uk[None, :].astype(float))[0])
    rng = np.random.default_rng(seed)
    n_l, n_u = int(lk.sum()), int(uk.sum())
    draws = []
    step = max(1, 2**20 // max(1, lc.shape[0] + uc.shape[0]))
    for start in range(0, n_boot, step):
        r = min(step, n_boot - start)
        wl = rng.multinomial(n_l, lk / n_l, size=r).astype(float)
        wu = rng.multinomial(n_u, uk / n_u, size=r).astype(float) if n_u else np.zeros((r, 0))
        draws.append(sums(wl, wu))
    d = np.concatenate(draws)
    alpha = 1.0 - level
    lo, hi = np.quantile(d, [alpha / 2.0, 1.0 - alpha / 2.0])
    return est, (float(lo), float(hi))


@dataclass(frozen=True)
class PPISlope:
    """Prediction-powered calibration slope and intercept with sandwich intervals."""

    slope: float
    slope_se: float
    slope_ci: tuple[float, float]
    intercept: float
    intercept_se: float
    intercept_ci: tuple[float, float]
    lam: float
    n_labelled: int
    n: int
    n_certain: int


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def _rectified_fit(
    xl: np.ndarray, y: np.ndarray, fl: np.ndarray, xu: np.ndarray, fu: np.ndarray, c: float
) -> tuple[np.ndarray, np.ndarray]:
    """Newton solve of c mean_U[x (s - f)] + mean_L[x (s - y) - c x (s - f)] = 0; theta, H."""
    theta = np.zeros(2)
    h = np.eye(2)
    for _ in range(100):
        sl, su = _sigmoid(xl @ theta), _sigmoid(xu @ theta) if xu.size else np.zeros(0)
        g = (xl * ((sl - y) - c * (sl - fl))[:, None]).mean(axis=0)
        h = (1 - c) * (xl.T * (sl * (1 - sl))) @ xl / xl.shape[0]
        if xu.shape[0]:
            g = g + c * (xu * (su - fu)[:, None]).mean(axis=0)
            h = h + c * (xu.T * (su * (1 - su))) @ xu / xu.shape[0]
        step = np.linalg.solve(h, g)
        theta = theta - step
        if np.max(np.abs(step)) < 1e-12:
            break
    return theta, h


def ppi_slope(
    conf: np.ndarray,
    judge: np.ndarray,
    person: np.ndarray,
    labelled: np.ndarray,
    *,
    level: float = 0.95,
    lam: float | None = None,
) -> PPISlope:
    """Rectified logistic fit of the outcome on logit(confidence) (PPI for M-estimators).

    The estimating equation is the all-items judge score, rectified on the labelled items:
    lam mean_all[x (s - f)] + mean_L[x (s - y) - lam x (s - f)] = 0 with x = (1, logit p) and
    s = sigmoid(x theta). Its sandwich variance is H^-1 (Cov_L(x(s - y) - c x(s - f)) / n +
    c^2 Cov_U(x (s - f)) / (N - n)) H^-1, c = lam (1 - n / N). ``lam=None`` tunes lam to minimise
    the trace of that variance (PPI++). Forecasts of exactly 0 or 1 are left out, as
    :func:`calibkit.measure.slope.calibration_slope` leaves them (``n_certain`` counts them).
    Needs at least 3 labelled items strictly inside (0, 1) (the caller checks).
    """
    inner = (conf > 0.0) & (conf < 1.0)
    n_certain = int(np.count_nonzero(~inner))
    x = np.log(conf[inner]) - np.log1p(-conf[inner])
    xa = np.column_stack([np.ones(x.size), x])
    lab = labelled[inner]
    xl, xu = xa[lab], xa[~lab]
    y, fl, fu = person[inner][lab], judge[inner][lab], judge[inner][~lab]
    n, n_all = xl.shape[0], xa.shape[0]
    share = 1.0 - n / n_all

    def variance(theta: np.ndarray, h: np.ndarray, c: float) -> np.ndarray:
        sl = _sigmoid(xl @ theta)
        gl = xl * ((sl - y) - c * (sl - fl))[:, None]
        meat = np.cov(gl, rowvar=False) / n
        if xu.shape[0] > 1:
            gu = xu * (_sigmoid(xu @ theta) - fu)[:, None]
            meat = meat + c * c * np.cov(gu, rowvar=False) / xu.shape[0]
        hi = np.linalg.inv(h)
        return hi @ meat @ hi.T

    if lam is None:
        theta, h = _rectified_fit(xl, y, fl, xu, fu, share)
        hi = np.linalg.inv(h)
        sl = _sigmoid(xl @ theta)
        gy, gf = xl * (sl - y)[:, None], xl * (sl - fl)[:, None]
        cross = np.cov(gy.T, gf.T)[:2, 2:]
        vf = np.cov(gf, rowvar=False) / n
        if xu.shape[0] > 1:
            vf = vf + np.cov(xu * (_sigmoid(xu @ theta) - fu)[:, None], rowvar=False) / xu.shape[0]
        denom = 2.0 * n * np.trace(hi @ vf @ hi.T)
        c = float(np.trace(hi @ (cross + cross.T) @ hi.T) / denom) if denom > 0 else 0.0
        c = min(max(c, 0.0), 1.0)  # keeps the Hessian positive definite
        lam = c / share if share > 0 else 0.0
    c = lam * share
    theta, h = _rectified_fit(xl, y, fl, xu, fu, c)
    se = np.sqrt(np.diag(variance(theta, h, c)))
    z = normal_quantile(0.5 + level / 2.0)
    a, b = float(theta[0]), float(theta[1])
    return PPISlope(
        slope=b,
        slope_se=float(se[1]),
        slope_ci=(b - z * float(se[1]), b + z * float(se[1])),
        intercept=a,
        intercept_se=float(se[0]),
        intercept_ci=(a - z * float(se[0]), a + z * float(se[0])),
        lam=float(lam),
        n_labelled=int(n),
        n=int(n_all),
        n_certain=n_certain,
    )
