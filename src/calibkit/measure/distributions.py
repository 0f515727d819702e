"""The few distribution functions an audit needs, from the standard library alone (importing
``scipy.stats`` costs most of a small audit's time): the normal quantile and tail, and the
chi-squared tail for whole degrees of freedom, each exact to rounding."""

from __future__ import annotations

import math
from statistics import NormalDist

__all__ = ["chi2_sf", "normal_quantile", "normal_two_sided", "normal_sf"]

_STANDARD = NormalDist()


def normal_quantile(p: float) -> float:
    """The standard normal quantile (``scipy.special.ndtri``).

    Examples
    --------
    >>> from calibkit.measure.distributions import normal_quantile
    >>> round(normal_quantile(0.975), 6)
    1.959964
    """
    return _STANDARD.inv_cdf(p)


def normal_sf(z: float) -> float:
    """P(Z > z) for a standard normal Z, accurate far in the tail (``erfc``)."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def normal_two_sided(z: float) -> float:
    """P(|Z| > |z|)."""
    return math.erfc(abs(z) / math.sqrt(2.0))


def chi2_sf(x: float, df: int) -> float:
    """P(X > x) for X chi-squared with a whole number ``df`` of degrees of freedom.

    The closed forms of the regularised upper incomplete gamma function at half-integers:
    for even df = 2m, exp(-x/2) sum_{k<m} (x/2)^k / k!; for odd df = 2m + 1,
    erfc(sqrt(x/2)) + exp(-x/2) sum_{k=1..m} (x/2)^(k - 1/2) / Gamma(k + 1/2). The terms are
    summed in log space, so a large statistic gives a tiny p-value rather than an overflow.

    Examples
    --------
    >>> from calibkit.measure.distributions import chi2_sf
    >>> round(chi2_sf(3.841458820694124, 1), 6), round(chi2_sf(2.0, 2), 6)  # exp(-1)
    (0.05, 0.367879)
    """
    if df < 1 or int(df) != df:
        raise ValueError(f"chi2_sf needs whole degrees of freedom >= 1, got {df}")
    if math.isinf(x):
        return 0.0
    if x <= 0.0:
        return 1.0
    half = x / 2.0
    m = int(df) // 2
    if df % 2 == 0:
        logs = [k * math.log(half) - math.lgamma(k + 1) - half for k in range(m)]
        head = 0.0
    else:
        logs = [(k - 0.5) * math.log(half) - math.lgamma(k + 0.5) - half for k in range(1, m + 1)]
        head = math.erfc(math.sqrt(half))
    top = max(logs, default=-math.inf)
    if top == -math.inf:
        return head
    return min(1.0, head + math.exp(top) * sum(math.exp(v - top) for v in logs))
