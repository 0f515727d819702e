"""Anytime-valid calibration monitoring as labels arrive: confidence sequences for the gap
``mean(outcome - confidence)``, in the large and per bin, that may be checked after every batch.

A *confidence sequence* at level ``1 - a`` is a sequence of intervals ``C_1, C_2, ...`` with
``P(the truth lies outside some C_t) <= a``: valid at all times simultaneously, so looking after
every batch, and stopping at any time, costs nothing (Robbins 1970; Howard et al. 2021). The
null it covers is that every row's conditional gap ``E[outcome - confidence | confidence,
past rows]`` equals one constant ``m``; under calibration ``m = 0`` whatever the confidences do
over time, so the alarm "0 has left a confidence sequence" fires with probability at most
``1 - level`` over the whole (unbounded) run when the forecasts stay calibrated.

Two constructions, both exact to their definitions:

``"betting"``
    The hedged capital process of Waudby-Smith and Ramdas (2023, JRSSB, "Estimating means of
    bounded random variables by betting"), Theorem 3 with the predictable plug-in bets of their
    eq. (26)-(27) (``c = 1/2``, ``theta = 1/2``). Each gap ``z`` in ``[lo, hi]`` is mapped to
    ``x = (z - lo) / (hi - lo)`` in [0, 1]; for a candidate mean ``m`` the two capitals are
    ``K+(m) = prod(1 + min(lam_i, c/m) (x_i - m))`` and ``K-(m) = prod(1 - min(lam_i, c/(1-m))
    (x_i - m))``, and ``m`` is excluded once ``max(theta K+(m), (1-theta) K-(m)) >= 1/a``.
    The capitals are kept on a grid of candidate gaps (``grid`` points in [-1, 1], 0 among
    them); ``K+`` falls and ``K-`` rises with ``m``, so the set is an interval and the reported
    ends are the first excluded grid points around it (rounded outward). Adapts to the variance.
``"mixture"``
    The two-sided normal-mixture boundary (Robbins 1970; Howard et al. 2021, "Time-uniform,
    nonparametric, nonasymptotic confidence sequences", Section 3.2): a gap in ``[lo, hi]`` is
    sub-Gaussian with variance proxy ``s2 = ((hi - lo) / 2)^2`` (Hoeffding), the intrinsic time
    is ``V = s2 t``, and ``|sum(z_i - m)| < sqrt((V + rho) log((V + rho) / (rho a^2)))`` holds
    at all times with probability ``1 - a``. ``rho`` makes the boundary tightest at ``horizon``
    rows. Closed form, order-free, conservative when the variance is small.

Per-bin sequences use the bin's own gap range ``[-b, 1 - a']`` for a bin of confidences
``[a', b]``, and a union bound: with bins, the in-the-large sequence gets half of the error
``1 - level`` and each of the ``n_bins`` bins an equal share of the other half, so the alarm
(any sequence excluding 0) keeps ``1 - level`` in all.
"""

from .monitor import GapSequence, SequentialMonitor, SequentialStatus

__all__ = ["GapSequence", "SequentialMonitor", "SequentialStatus"]
