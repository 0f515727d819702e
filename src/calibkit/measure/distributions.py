"""The few distribution functions an audit needs, from the standard library alone (importing
``scipy.stats`` costs most of a small audit's time): the normal quantile and tail, the
chi-squared tail for whole degrees of freedom, and the tails of the largest absolute value and
of the range of a standard Brownian motion on [0, 1] (the limits of the KS and Kuiper
calibration tests), and Kolmogorov's limit of the two-sample KS statistic, each exact to
rounding."""

from __future__ import annotations

import math
from collections.abc import Callable
from statistics import NormalDist

__all__ = [
    "brownian_max_abs_sf",
    "brownian_range_sf",
    "chi2_sf",
    "kolmogorov_sf",
    "normal_quantile",
    "normal_sf",
    "normal_two_sided",
]

#: Series terms below this share of the sum are dropped (below rounding).
_TINY = 1e-18
#: The most terms a series is summed over (each converges in fewer than 10 where it is used).
_MAX_TERMS = 100

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


def _alternating(term: Callable[[int], float], start: int = 0) -> float:
    """Sum ``term(k)`` from ``start`` until a term falls below rounding."""
    total = 0.0
    for k in range(start, start + _MAX_TERMS):
        t = term(k)
        total += t
        if abs(t) <= _TINY * abs(total):
            break
    return total


def brownian_max_abs_sf(x: float) -> float:
    """P(max |B_t| over 0 <= t <= 1 > x) for a standard Brownian motion B.

    The limit of the KS calibration statistic (the largest absolute cumulative gap over its
    standard deviation; Arrieta-Ibarra et al. 2022, after Darling and Siegert 1953). Two forms
    of the same function: for x < 1 the CDF's theta series
    (4 / pi) sum_k (-1)^k / (2k + 1) exp(-(2k + 1)^2 pi^2 / (8 x^2)); from 1 on, the
    reflection-principle series 4 sum_k (-1)^k Q((2k + 1) x) of the tail, Q the normal tail,
    which keeps tiny p-values exact. Each converges in a few terms on its side.

    Examples
    --------
    >>> from calibkit.measure.distributions import brownian_max_abs_sf
    >>> round(brownian_max_abs_sf(1.0), 4), round(brownian_max_abs_sf(2.0), 6)
    (0.6292, 0.091001)
    """
    if math.isnan(x):
        return math.nan
    if x <= 0.0:
        return 1.0
    if x < 1.0:
        c = math.pi**2 / (8.0 * x * x)
        cdf = (4.0 / math.pi) * _alternating(
            lambda k: (-1) ** k / (2 * k + 1) * math.exp(-((2 * k + 1) ** 2) * c)
        )
        return min(1.0, max(0.0, 1.0 - cdf))
    return min(1.0, 4.0 * _alternating(lambda k: (-1) ** k * normal_sf((2 * k + 1) * x)))


def brownian_range_sf(x: float) -> float:
    """P(max B_t - min B_t over 0 <= t <= 1 > x) for a standard Brownian motion B.

    The limit of the Kuiper calibration statistic (the range of the cumulative gap over its
    standard deviation; the range's law is Feller's 1951). For x < 2 the CDF's series
    sum_k (8 / x^2 + 2 / ((k + 1/2)^2 pi^2)) exp(-2 (k + 1/2)^2 pi^2 / x^2); from 2 on, the
    tail 8 sum_{k>=1} (-1)^(k-1) k Q(k x), the integral of Feller's density
    8 sum (-1)^(k-1) k^2 phi(k x).

    Examples
    --------
    >>> from calibkit.measure.distributions import brownian_range_sf
    >>> round(brownian_range_sf(1.0), 4), round(brownian_range_sf(3.0), 6)
    (0.9366, 0.010799)
    """
    if math.isnan(x):
        return math.nan
    if x <= 0.0:
        return 1.0
    if x < 2.0:
        c = 2.0 * math.pi**2 / (x * x)
        cdf = _alternating(
            lambda k: (
                (8.0 / (x * x) + 2.0 / ((k + 0.5) ** 2 * math.pi**2))
                * math.exp(-((k + 0.5) ** 2) * c)
            )
        )
        return min(1.0, max(0.0, 1.0 - cdf))
    return min(1.0, 8.0 * _alternating(lambda k: (-1) ** (k - 1) * k * normal_sf(k * x), start=1))


def kolmogorov_sf(x: float) -> float:
    """P(K > x) for Kolmogorov's distribution, the law of the largest absolute value of a
    Brownian bridge on [0, 1] (``scipy.special.kolmogorov``): the limit of the two-sample KS
    statistic sqrt(n m / (n + m)) D (Kolmogorov 1933; Smirnov 1948).

    For x < 1 the CDF's theta series sqrt(2 pi) / x sum_{k>=1} exp(-(2k - 1)^2 pi^2 / (8 x^2));
    from 1 on, the tail 2 sum_{k>=1} (-1)^(k-1) exp(-2 k^2 x^2). Each converges in a few terms.

    Examples
    --------
    >>> from calibkit.measure.distributions import kolmogorov_sf
    >>> round(kolmogorov_sf(1.3580986393225507), 6), round(kolmogorov_sf(0.5), 6)
    (0.05, 0.963945)
    """
    if math.isnan(x):
        return math.nan
    if x <= 0.0:
        return 1.0
    if x < 1.0:
        c = math.pi**2 / (8.0 * x * x)
        cdf = (
            math.sqrt(2.0 * math.pi)
            / x
            * _alternating(lambda k: math.exp(-((2 * k - 1) ** 2) * c), start=1)
        )
        return min(1.0, max(0.0, 1.0 - cdf))
    return min(
        1.0, 2.0 * _alternating(lambda k: (-1) ** (k - 1) * math.exp(-2.0 * k * k * x * x), 1)
    )
