"""The generalized risk-coverage curve (Traub et al. 2024): the share of all predictions that
are acted on and wrong, against coverage, whose area is the AUGRC. Compute, then draw, as in
:mod:`calibkit.report.figures`: matplotlib is imported inside the function, nothing global is
touched, and the curve is decimated for drawing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._errors import InputError
from ._figure_parts import _BLUE, _GREEN, _GREY, _SMALL, _new_axes, decimate

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["generalized_risk_coverage_plot"]


def generalized_risk_coverage_plot(result: Any, *, ax: Axes | None = None) -> Axes:
    """Draw the generalized risk-coverage curve with random rejection and the oracle.

    - the curve: the share of all N predictions acted on and wrong (selective risk times
      coverage) at every distinct threshold, joined by straight lines from (0, 0) to
      (1, error rate): the area under it is the AUGRC, in the legend;
    - random rejection: the straight line to (1, error rate) (AUGRC error rate / 2);
    - the oracle, which defers the errors first: 0 up to coverage 1 - error rate, then up to
      the error rate (AUGRC error rate ** 2 / 2).

    The prediction rejection ratio, the share of the area between random rejection and the
    oracle that the confidence recovers, is in the title.

    Parameters
    ----------
    result : SelectivePrediction or RiskCoverage
        From :func:`~calibkit.decide.selective_prediction` or
        :func:`~calibkit.decide.risk_coverage`.
    ax : matplotlib Axes, optional
        Drawn into; a new Figure's Axes otherwise.

    Examples
    --------
    >>> import calibkit as ck
    >>> rc = ck.risk_coverage([0.95, 0.9, 0.8, 0.7, 0.6], [1, 1, 0, 1, 0])
    >>> ax = ck.generalized_risk_coverage_plot(rc)
    >>> [line.get_gid() for line in ax.lines]
    ['calibkit-generalized-curve', 'calibkit-oracle', 'calibkit-random']
    >>> ax.lines[0].get_ydata().round(2).tolist()
    [0.0, 0.0, 0.0, 0.2, 0.2, 0.4]
    """
    from ..decide.coverage import RiskCoverage
    from ..decide.operating import curve_counts
    from ..decide.selective import SelectivePrediction, augrc_of, prr_of

    if isinstance(result, SelectivePrediction):
        rc, augrc, prr = result.curve, result.augrc, result.prr
    elif isinstance(result, RiskCoverage):
        rc = result
        augrc = augrc_of(rc)
        prr = prr_of(augrc, rc.n, rc.errors)
    else:
        raise InputError(
            "generalized_risk_coverage_plot: expected a SelectivePrediction "
            "(ck.selective_prediction) or a RiskCoverage (ck.risk_coverage), got "
            f"{type(result).__name__}."
        )
    if ax is None:
        ax = _new_axes((6.0, 4.5))
    _, wrong = curve_counts(rc)
    coverage, risk = rc.coverage, wrong / rc.n
    keep = decimate(coverage, risk)
    (line,) = ax.plot(
        coverage[keep],
        risk[keep],
        color=_BLUE,
        lw=1.5,
        label=f"confidence ranking (AUGRC {augrc:.4f})",
        zorder=3,
    )
    line.set_gid("calibkit-generalized-curve")
    e = rc.error_rate
    (oracle,) = ax.plot(
        [0.0, 1.0 - e, 1.0],
        [0.0, 0.0, e],
        color=_GREEN,
        lw=1.2,
        ls="-.",
        label=f"oracle (AUGRC {e * e / 2:.4f})",
        zorder=2,
    )
    oracle.set_gid("calibkit-oracle")
    (random,) = ax.plot(
        [0.0, 1.0],
        [0.0, e],
        color=_GREY,
        lw=1.2,
        ls="--",
        label=f"random rejection (AUGRC {e / 2:.4f})",
        zorder=1,
    )
    random.set_gid("calibkit-random")
    ax.fill_between(coverage[keep], risk[keep], color=_BLUE, alpha=0.12, lw=0, zorder=0)
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(0.0, max(float(np.max(risk)), e) * 1.45 + 1e-3)  # room for the legend
    ax.set_xlabel("coverage (share of cases acted on)")
    ax.set_ylabel("generalized risk (acted on and wrong, share of all)")
    shown = "undefined" if prr is None else f"{prr:.3f}"
    ax.set_title(
        f"generalized risk-coverage: N = {rc.n:,}, {rc.errors:,} wrong (PRR {shown})",
        fontsize=10,
    )
    ax.legend(loc="upper left", fontsize=_SMALL, frameon=True, framealpha=0.9, edgecolor="none")
    ax.grid(True, lw=0.3, alpha=0.5)
    return ax
