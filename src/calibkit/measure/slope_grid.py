"""The logit histograms a calibration slope is fitted on, each made in one pass over the rows.

The count histogram (:func:`grid_counts`: rows per cell of 1/1024 logit unit and outcome) is
mergeable and small, so every engine makes it; the fit on its cells (each cell's rows at its
centre) is a start within about 1e-6 of the fit on the rows, which one more pass over the rows
then finishes.

The moment histogram (:func:`grid_moments`) keeps, per cell of 1/256 logit unit and outcome,
the sums of the powers d^0 .. d^6 of each row's distance d from its cell's centre
(|d| <= 1/512). Every sum the fit needs is a sum over the rows of a derivative of the sigmoid at
a + b (c + d) times a power of x = c + d, and Taylor's theorem in b d around the cell's centre
c turns it into sums over the cells (:func:`moment_terms`): the terms up to (b d)^4 / 4! are
kept, the remainder is below (b d)^5 / 5! of the sum (times a ratio of the sigmoid's
derivatives of order one), that is below 1e-12 of it while |b| <= :data:`MOMENT_SLOPE`. So
the fit, its log-likelihood and its information come from the cells alone, to rounding, after
one pass over the rows: each Newton step costs O(cells), not O(rows).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np

from .slope_fit import Evaluate, Point, counted_terms, fit_both

__all__ = [
    "GRID_CELLS",
    "GRID_SPAN",
    "GRID_STEPS",
    "MOMENTS",
    "MOMENT_CELLS",
    "MOMENT_SLOPE",
    "MOMENT_STEPS",
    "MomentCells",
    "grid_cells",
    "grid_counts",
    "grid_moments",
    "grid_start",
    "moment_evaluate",
    "moment_terms",
    "start_from",
]

#: The logit histogram a start is fitted on: cells of 1/GRID_STEPS of a logit unit, logits
#: clipped at +-GRID_SPAN (a start only: the fit is then polished on the rows themselves).
GRID_STEPS = 1024
GRID_SPAN = 37.0
GRID_CELLS = int(2 * GRID_SPAN * GRID_STEPS) + 1


def grid_cells(x: np.ndarray) -> np.ndarray:
    """The histogram cell of each finite logit."""
    return np.rint((np.clip(x, -GRID_SPAN, GRID_SPAN) + GRID_SPAN) * GRID_STEPS).astype(np.int64)


def grid_counts(x: np.ndarray, y: np.ndarray, weight: np.ndarray | None = None) -> np.ndarray:
    """(2, GRID_CELLS) counts of outcomes 0 and 1 per cell (mergeable: counts add); the sums
    of the weights (float) with ``weight``."""
    cells = grid_cells(x)
    hit = y == 1
    if weight is not None:
        return np.stack(
            [
                np.bincount(cells[~hit], weights=weight[~hit], minlength=GRID_CELLS),
                np.bincount(cells[hit], weights=weight[hit], minlength=GRID_CELLS),
            ]
        )
    return np.stack(
        [
            np.bincount(cells[~hit], minlength=GRID_CELLS),
            np.bincount(cells[hit], minlength=GRID_CELLS),
        ]
    )


def grid_start(counts: np.ndarray) -> tuple[Point, Point]:
    """Starts for :func:`fit_both`: the two fits made on the histogram's cells (each cell's rows
    at its centre), which lie within about 1e-6 of the fits on the rows (1e-7 from a million
    rows)."""
    x = np.arange(GRID_CELLS) / GRID_STEPS - GRID_SPAN
    neg, pos = counts[0].astype(np.float64), counts[1].astype(np.float64)
    used = (neg + pos) > 0
    x, neg, pos = x[used], neg[used], pos[used]

    def evaluate(points: list[Point]) -> list[np.ndarray]:
        return [counted_terms(x, neg, pos, a, b) for a, b, *_ in points]

    return start_from(evaluate)


def start_from(evaluate: Evaluate) -> tuple[Point, Point]:
    """Starts for :func:`fit_both`: the joint and the in-the-large fit on the sums ``evaluate``
    gives (those of a histogram's cells), from slope 1; slope 1 and intercept 0 where a fit
    fails."""
    (a, b, _), (a1, _, _) = fit_both(evaluate)
    if not (math.isfinite(a) and math.isfinite(b) and math.isfinite(a1)):
        return (0.0, 1.0), (0.0, 1.0)
    return (a, b), (a1, 1.0)


# ----------------------------------------------------------------------------- moments

#: The moment histogram's cells: 1/MOMENT_STEPS of a logit unit over [-GRID_SPAN, GRID_SPAN]
#: (a logit outside has no cell: the fit then takes the rows, see ``slope_of``).
MOMENT_STEPS = 256
MOMENT_CELLS = int(2 * GRID_SPAN * MOMENT_STEPS) + 1
#: The highest power of b d kept in the expansion of :func:`moment_terms`.
ORDER = 4
#: Powers d^0 .. d^(ORDER + 2) per cell: the information needs x^2 d^ORDER, its derivatives
#: (one order less) x^3 d^(ORDER - 1).
MOMENTS = ORDER + 3
#: The largest |slope| at which :func:`moment_terms` is used: |b d| <= 1/128, so the remainder
#: (b d)^5 / 5! is below 3e-13 of each sum.
MOMENT_SLOPE = 4.0


def moment_centres() -> np.ndarray:
    """The logit at each moment cell's centre (as the kernel computes it)."""
    return np.arange(MOMENT_CELLS) / MOMENT_STEPS - GRID_SPAN


def grid_moments(
    x: np.ndarray, y: np.ndarray, weight: np.ndarray | None = None
) -> tuple[np.ndarray, int]:
    """The (2, MOMENT_CELLS, MOMENTS) sums of d^j per cell for the rows of outcome 0 and 1
    (each times its weight with ``weight``; mergeable: the sums add), d the distance of the
    logit from its cell's centre; and the number of logits outside every cell (left out)."""
    inside = np.abs(x) <= GRID_SPAN
    n_outside = int(x.size - np.count_nonzero(inside))
    if n_outside:
        x, y = x[inside], y[inside]
        weight = None if weight is None else weight[inside]
    cells = np.rint((x + GRID_SPAN) * MOMENT_STEPS).astype(np.int64)
    d = x - (cells / MOMENT_STEPS - GRID_SPAN)
    out = np.zeros((2, MOMENT_CELLS, MOMENTS))
    hit = y == 1
    for o, rows in enumerate((~hit, hit)):
        power = np.ones(int(np.count_nonzero(rows))) if weight is None else weight[rows]
        dj = d[rows]
        for j in range(MOMENTS):
            out[o, :, j] = np.bincount(cells[rows], weights=power, minlength=MOMENT_CELLS)
            power = power * dj
    return out, n_outside


@cache
def _derivative_polynomials() -> tuple[np.ndarray, ...]:
    """Coefficients (lowest power first) of P_k with sigma^(k)(eta) = P_k(sigma(eta)), for
    k = 1 .. ORDER + 2: P_1 = s - s^2 and P_(k+1) = P_k' (s - s^2)."""
    from numpy.polynomial import polynomial as npp

    out = [np.array([0.0, 1.0, -1.0])]
    while len(out) < ORDER + 2:
        out.append(npp.polymul(npp.polyder(out[-1]), [0.0, 1.0, -1.0]))
    return tuple(out)


def sigmoid_derivatives(eta: np.ndarray) -> np.ndarray:
    """(ORDER + 3, len(eta)): sigma(eta) and its derivatives of order 1 .. ORDER + 2, each
    from the smaller of sigma(eta) and sigma(-eta) (sigma^(k)(-eta) = (-1)^(k+1) sigma^(k)(eta)
    for k >= 1), so without cancellation in the tails.

    >>> import numpy as np
    >>> s = sigmoid_derivatives(np.array([0.0]))[:, 0]
    >>> s[:4].tolist()  # 1/2, 1/4, 0 and -1/8 at 0
    [0.5, 0.25, 0.0, -0.125]
    """
    from numpy.polynomial import polynomial as npp

    e = np.exp(-np.abs(eta))
    r = e / (1.0 + e)  # sigma(-|eta|), at most 1/2
    out = np.empty((ORDER + 3, eta.size))
    out[0] = np.where(eta >= 0.0, 1.0 / (1.0 + e), r)
    for k, coef in enumerate(_derivative_polynomials(), start=1):
        sign = 1.0 if k % 2 else -1.0  # (-1)^(k+1) where eta > 0
        out[k] = npp.polyval(r, coef) * np.where(eta > 0.0, sign, 1.0)
    return out


@dataclass(frozen=True)
class MomentCells:
    """The occupied cells of a moment histogram: their centres c, the sums of d^j over all
    their rows and over those of outcome 1 ((cells, MOMENTS) each), and the x-weighted sums
    sum d^j x^m (x = c + d, m = 0 .. 3) the fit's sums need, which no point changes."""

    centre: np.ndarray
    every: np.ndarray
    hits: np.ndarray
    x_moments: tuple[np.ndarray, ...]

    @classmethod
    def of(cls, moments: np.ndarray) -> MomentCells:
        """The cells of a (2, MOMENT_CELLS, MOMENTS) histogram holding rows."""
        every = moments[0] + moments[1]
        used = every[:, 0] > 0
        centre, every, hits = moment_centres()[used], every[used], moments[1][used]

        def x_moments(m: int, terms: int) -> np.ndarray:
            """(cells, terms): sum d^j (c + d)^m = sum_i C(m, i) c^(m - i) moment_(j + i)."""
            out = np.zeros((centre.size, terms))
            for i in range(m + 1):
                out += math.comb(m, i) * centre[:, None] ** (m - i) * every[:, i : i + terms]
            return out

        # x^3 (the information's derivatives) one order less: MOMENTS holds d^(ORDER + 2)
        xm = tuple(x_moments(m, ORDER + 1 if m < 3 else ORDER) for m in range(4))
        return cls(centre, every, hits, xm)


def moment_terms(cells: MomentCells, a: float, b: float) -> np.ndarray:
    """The sums of :func:`~calibkit.measure.slope_fit.slope_terms` at (a, b) over the rows of
    moment ``cells``.

    With x = c + d, each sum over a cell's rows of f(a + b x) x^m is
    sum_j f^(j)(a + b c) b^j / j! sum_rows d^j (c + d)^m (Taylor in b d, j <= ORDER), and the
    inner sums expand by the binomial theorem into the cell's moments.
    """
    centre, every, hits = cells.centre, cells.every, cells.hits
    eta = a + b * centre
    s = sigmoid_derivatives(eta)
    scale = np.array([b**j / math.factorial(j) for j in range(ORDER + 2)])

    def total(derivative: int, m: int) -> float:
        """The sum over the rows of sigma^(derivative)(a + b x) x^m: over the cells and
        j < terms of scale_j sigma^(derivative + j)(eta) sum d^j x^m."""
        weighted = cells.x_moments[m]
        terms = weighted.shape[1]
        k = slice(derivative, derivative + terms)
        return float(np.sum((s[k].T * weighted) @ scale[:terms]))

    y_sum = float(hits[:, 0].sum())
    yx_sum = float((centre * hits[:, 0] + hits[:, 1]).sum())
    softplus = np.maximum(eta, 0.0) + np.log1p(np.exp(-np.abs(eta)))
    # log(1 - sigma) = -softplus has derivatives -sigma^(j - 1): terms j = 1 .. ORDER + 1
    tail = float(np.sum((s[: ORDER + 1].T * every[:, 1 : ORDER + 2]) @ scale[1 : ORDER + 2]))
    loglik = a * y_sum + b * yx_sum - float(np.sum(softplus * every[:, 0])) - tail
    return np.array(
        [
            loglik,
            y_sum - total(0, 0),
            yx_sum - total(0, 1),
            total(1, 0),
            total(1, 1),
            total(1, 2),
            # the information's derivatives move it along a last step of at most 1e-6
            # (slope_fit.ACCEPT_STEP): one order less is ample, and saves a moment
            *(total(2, m) for m in range(4)),
        ]
    )


def moment_evaluate(moments: np.ndarray) -> Evaluate:
    """An :data:`~calibkit.measure.slope_fit.Evaluate` on a moment histogram (from
    :func:`grid_moments` or the kernel): the sums at each point from the occupied cells.

    >>> import numpy as np
    >>> from calibkit.measure.slope_fit import slope_terms
    >>> x, y = np.array([-1.0, -0.2, 0.3, 1.5]), np.array([0, 1, 0, 1])
    >>> cells = moment_evaluate(grid_moments(x, y)[0])([(0.1, 0.8)])[0]
    >>> bool(np.allclose(cells, slope_terms(x, y, 0.1, 0.8), rtol=1e-12, atol=1e-15))
    True
    """
    cells = MomentCells.of(moments)

    def evaluate(points: list[Point]) -> list[np.ndarray]:
        return [moment_terms(cells, a, b) for a, b, *_ in points]

    return evaluate
