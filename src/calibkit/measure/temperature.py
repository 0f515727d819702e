"""The temperature objective and its derivatives in beta = 1 / T, and the exact solver (shared
by :class:`calibkit.TemperatureScaling` and every engine, which supplies the sums of one pass).

For multiclass logits z and labels y the mean negative log-likelihood at inverse temperature
beta is f(beta) = mean_i [logsumexp(beta z_i) - beta z_iy]. It is convex in beta:
f'(beta) = mean_i [E_p(z_i) - z_iy] (the expected logit minus the true one) and
f''(beta) = mean_i Var_p(z_i) >= 0, with p = softmax(beta z_i). For binary scores s with labels
in {0, 1}, f(beta) = mean_i softplus(-y_i s_i beta) with y_i = +-1; f' and f'' follow.

Every evaluation is one pass over the data (the numba kernel when installed, chunked float64
numpy otherwise), so the fit costs a handful of passes: a safeguarded Newton iteration that keeps
a bracket around the root of f' and falls back to bisection when a Newton step leaves it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .. import _kernels
from .._errors import InputError
from .temperature_sums import CHUNK_ELEMENTS, binary_sums, multiclass_sums


@dataclass(frozen=True)
class Objective:
    """Mean NLL and its first two derivatives in beta at one beta.

    A pass over arrays in memory also gives the third derivative (``third``, for Halley's
    step), the objective at beta = 0 (``origin``: from the same rows, so the solver needs no
    pass of its own there) and, for (N, C) logits on the numba path, the argmax check of the
    logits divided by 1 / beta (``argmax``: rows whose argmax moved, the first of them or -1,
    rows whose argmax is the label). An engine's aggregation gives the first three only.
    """

    beta: float
    value: float
    gradient: float
    curvature: float
    third: float | None = None
    origin: Objective | None = None
    argmax: tuple[int, int, int] | None = None


#: About how many passes a fit makes over its logits (4 to 6 from T = 1, the invariance check
#: folded into the last): the work by which it decides to load the numba kernels.
FIT_PASSES = 5


def evaluate(
    scores: np.ndarray,
    labels: np.ndarray,
    beta: float,
    sample_weight: np.ndarray | None = None,
) -> Objective:
    """The NLL and its first three derivatives at ``beta``, and at 0, in one pass (numba
    kernel or chunked numpy reference).

    With ``sample_weight`` (checked, positive) every sum weighs its row and the means divide
    by the total weight: the weighted mean NLL, whose derivatives are the weighted means of
    the rows' derivatives (numpy only).
    """
    argmax = None
    if sample_weight is None and _kernels.use_numba(scores.size):
        temperature = 1.0 / beta if beta else math.inf
        total = _kernels.temperature_sums(scores, labels, beta, temperature)
        if scores.ndim == 2:
            argmax = (int(total[7]), int(total[8]), int(total[9]))
    else:
        # logits beyond SPREAD_RANGE overflow to inf or NaN here, which the solver reports
        with np.errstate(over="ignore", invalid="ignore"):
            if scores.ndim == 1:
                total = binary_sums(scores, labels, beta, sample_weight)
            else:  # f at beta = 0 costs a second set of sums here: only at T = 1, the start
                total = multiclass_sums(
                    scores, labels, beta, origin=beta == 1.0, sample_weight=sample_weight
                )
    n = scores.shape[0] if sample_weight is None else float(np.sum(sample_weight))
    return objective_of_sums(total, n, beta, argmax=argmax)


def objective_of_sums(
    total: Any, n: float, beta: float, *, argmax: tuple[int, int, int] | None = None
) -> Objective:
    """The :class:`Objective` of the seven sums of one pass (the NLL and its first three
    derivatives at ``beta``; the NLL and two derivatives at 0, NaN when not summed) over ``n``
    rows (or their total weight)."""
    f, g, h, t, f0, g0, h0 = (float(x / n) for x in total[:7])
    origin = None if math.isnan(g0) else Objective(0.0, f0, g0, h0)
    return Objective(float(beta), f, g, h, t, origin=origin, argmax=argmax)


@dataclass(frozen=True)
class Solution:
    """The fitted inverse temperature and how the solver got there."""

    beta: float
    objective: Objective
    n_evaluations: int
    converged: bool
    at_one: Objective | None = None  # f at T = 1 (the first pass), when the solver kept it


def solve(
    scores: np.ndarray,
    labels: np.ndarray,
    *,
    where: str,
    max_evaluations: int = 100,
    step_tol: float = 1e-12,
    sample_weight: np.ndarray | None = None,
) -> Solution:
    """Exact minimiser of the mean NLL over beta > 0 for scores held in memory (the weighted
    mean with ``sample_weight``: checked positive weights, one per row).

    Newton's method on u = log beta (scale-free: logits at 1e-3 or 1e3 take the same number of
    steps, and beta stays positive; Halley's step, from the third derivative each pass also
    sums, where it is moderate), safeguarded by a bracket [lo, hi] with f'(lo) < 0 < f'(hi)
    that falls back to bisection in log beta whenever a step would leave it. Stops when a step
    moves beta by less than ``step_tol`` relative (near the optimum, Newton's step is the error
    itself), or the bracket shrinks to a few ulps; ``converged`` is False only if
    ``max_evaluations`` ran out first.

    Raises :class:`InputError` when no finite positive temperature minimises the NLL: logits
    with no information (f'' = 0), data separable at every temperature (T -> 0), or logits that
    do no better than uniform guessing (T -> infinity); and for logits whose spread lies outside
    :data:`SPREAD_RANGE`, saying how to rescale them.
    """

    if sample_weight is None:  # every pass on the kernels, judged by the whole fit's work
        _kernels.expect(scores.size * FIT_PASSES)

    def passed(beta: float) -> Objective:
        if sample_weight is None:
            return evaluate(scores, labels, beta)
        return evaluate(scores, labels, beta, sample_weight)

    return solve_by(
        passed,
        lambda: _separable(scores, labels),
        where=where,
        max_evaluations=max_evaluations,
        step_tol=step_tol,
    )


def solve_by(
    evaluate: Callable[[float], Objective],
    separable: Callable[[], bool],
    *,
    where: str,
    max_evaluations: int = 100,
    step_tol: float = 1e-12,
) -> Solution:
    """:func:`solve` with the passes over the data given as callables: ``evaluate(beta)`` the
    :class:`Objective` at beta, ``separable()`` whether the data are separable (a tensor's
    sums on its device, say). The objective at T = 1 is kept as ``at_one``."""
    seen: dict[float, Objective] = {}

    def recorded(beta: float) -> Objective:
        seen[beta] = point = evaluate(beta)
        return point

    solution = drive(
        newton(where=where, max_evaluations=max_evaluations, step_tol=step_tol),
        evaluate=recorded,
        separable=separable,
    )
    return replace(solution, at_one=seen.get(1.0))


#: Evaluations after which an iteration that has not bracketed the optimum from below checks
#: whether there is one at all (f'(0) < 0), instead of bisecting towards T = infinity.
EARLY_CHECK = 6

#: Below this curvature at T = 1 (f''(1), the curvature in log beta there up to f'(1)), T = 1 is
#: far from the scale of the logits: their softmax is saturated (logits of order 1e3 and up) or
#: flat (logits of order 1e-3 and down). The solver then evaluates f at beta = 0, whose
#: curvature is the logits' squared spread, and starts Newton's method at 1 / spread.
SCALE_JUMP = 1e-6

#: When the first pass also gave f at beta = 0, a spread of the logits (see below) beyond this
#: factor from 1 moves the start to 1 / spread at once: Newton's steps from T = 1 would take a
#: pass for every factor of about 7 between them.
FAR_SCALE = 8.0

#: The spread of the logits (sqrt f''(0): the root mean square over rows of the standard
#: deviation of a row's logits across its classes; for binary scores, half their root mean
#: square) that the fit supports. Outside it the squares of the logits, which f'' sums, leave
#: the range of float64.
SPREAD_RANGE = (1e-140, 1e140)

#: What the solver asks of the data: ("evaluate", beta) -> Objective, ("separable", None) -> bool.
Request = tuple[str, float | None]
Solver = Generator[Request, Any, Solution]


def newton(*, where: str, max_evaluations: int = 100, step_tol: float = 1e-12) -> Solver:
    """The solver of :func:`solve` as a generator that asks for what it needs from the data.

    Each request is one pass (or one aggregation) over the data, so the same iteration runs on
    arrays in memory, on a stream of chunks read again for each step, or inside DuckDB or Spark
    (one GROUP BY per step fits every group of a monitor at once): see :func:`drive`.

    The first request is beta = 1 (T = 1, whose NLL the calibrators report). When T = 1 is far
    from the logits' own scale (:data:`SCALE_JUMP`), the second is beta = 0, which gives that
    scale, and the iteration starts at beta = 1 / spread; every later bound is relative to it.
    So logits of order 3e8 or 1e-100 are fitted as exactly as logits of order 1, within
    :data:`SPREAD_RANGE`.
    """
    point = yield ("evaluate", 1.0)
    _check_range(point, where)
    evaluations = 1
    known = point.origin  # f at beta = 0, when the pass gave it
    lo, hi = 0.0, math.inf  # f'(lo) < 0 < f'(hi) once both are known
    scale = 1.0  # the inverse temperature at the logits' own scale
    ruled_out_separable = ruled_out_infinity = False
    if point.curvature < SCALE_JUMP or _far_from_one(known):
        if known is None:
            known = yield ("evaluate", 0.0)
            evaluations += 1
        scale = _scale(known, where)
        ruled_out_infinity = True  # _scale raised unless f'(0) < 0
        lo, hi = _bracket(point, lo, hi)
        start = scale if lo < scale < hi else math.sqrt(lo * hi) if lo > 0 else hi / 4.0
        point = yield ("evaluate", start)
        evaluations += 1
    while evaluations < max_evaluations:
        beta, g = point.beta, point.gradient
        lo, hi = _bracket(point, lo, hi)
        if g < 0 and math.isinf(hi) and not ruled_out_separable:
            # the optimum lies beyond every T tried so far towards 0: rule out T -> 0 first
            yield from _check_finite_optimum(lo, hi, where, lower=False)
            ruled_out_separable = True
        if lo == 0.0 and evaluations >= EARLY_CHECK and not ruled_out_infinity:
            # still falling towards T -> infinity after a few steps: rule that out now (one
            # pass) rather than after the bracket has been bisected down to beta = 1e-15
            yield from _check_finite_optimum(lo, hi, where, separable=False, origin=known)
            ruled_out_infinity = True
        step = _step(point)
        done = g == 0.0 or abs(step - beta) <= step_tol * beta
        done = done or bool(math.isfinite(hi) and hi - lo <= 4 * np.finfo(float).eps * hi)
        if done or not 1e-15 * scale < step < 1e15 * scale:
            yield from _check_finite_optimum(
                lo,
                hi,
                where,
                lower=not ruled_out_infinity,
                separable=not ruled_out_separable,
                origin=known,
            )
            if done:
                return Solution(beta, point, evaluations, True)
        if not lo < step < hi:  # Newton left the bracket: expand it, or bisect it in log beta
            step = 4.0 * beta if math.isinf(hi) else beta / 4.0 if lo == 0.0 else math.sqrt(lo * hi)
        point = yield ("evaluate", step)
        evaluations += 1
    return Solution(point.beta, point, evaluations, False)


def _step(point: Objective) -> float:
    """The next beta: Newton's step in u = log beta (NaN without curvature there), or, when the
    pass gave the third derivative, Halley's step (cubic convergence) in u or in beta itself,
    whichever's correction to Newton's step is the smaller (f' is nearer linear there: in beta
    for logits small against T, in log beta for saturated ones).

    In u, d/du f(e^u) = beta g, d2/du2 = beta^2 h + beta g and d3/du3 = beta^3 t + 3 beta^2 h
    + beta g (g, h, t the derivatives in beta).
    """
    beta, g, h, t = point.beta, point.gradient, point.curvature, point.third
    first = beta * g
    second = beta * beta * h + first
    newton_u = beta * math.exp(-first / second) if second > 0 else math.nan
    if t is None or not (h > 0 and math.isfinite(t)):
        if second > 0:
            return newton_u
        # f is not convex in u here (f' < 0 and steep against f'': beta far below the
        # optimum): Newton's step in beta, the root of f''s tangent (below the root where f'
        # is concave)
        return beta - g / h if g < 0 < h else math.nan
    # the corrections as products of ratios: h * h underflows for logits of order 1e-100
    correction_b = 1.0 - 0.5 * (g / h) * (t / h)
    correction_u = math.nan
    if second > 0:
        third_u = beta**3 * t + 3.0 * beta * beta * h + first
        correction_u = 1.0 - 0.5 * (first / second) * (third_u / second)
    in_u = 0.5 <= correction_u <= 2.0 and not abs(correction_b - 1.0) < abs(correction_u - 1.0)
    if in_u:
        return beta * math.exp(-first / second / correction_u)
    if 0.5 <= correction_b <= 2.0:
        return beta - g / h / correction_b
    return newton_u if second > 0 else beta - g / h if g < 0 else math.nan


def _far_from_one(origin: Objective | None) -> bool:
    """Whether f at beta = 0 shows a spread of the logits beyond :data:`FAR_SCALE` from 1."""
    if origin is None or not math.isfinite(origin.curvature) or origin.curvature <= 0:
        return False
    return not 1.0 / FAR_SCALE**2 <= origin.curvature <= FAR_SCALE**2


def _bracket(point: Objective, lo: float, hi: float) -> tuple[float, float]:
    """The bracket [lo, hi] narrowed by the sign of f' at ``point``."""
    if point.gradient < 0:
        return point.beta, hi
    if point.gradient > 0:
        return lo, point.beta
    return lo, hi


def _range_error(where: str, spread: str) -> InputError:
    low, high = SPREAD_RANGE
    return InputError(
        f"{where}: the logits' spread (the root mean square of each row's standard deviation "
        f"across its classes; half the root mean square of binary scores) is {spread}, outside "
        f"the range temperature scaling supports, {low:g} to {high:g} (beyond it their squares "
        "leave the range of float64). Multiply the logits by a constant c (a power of 10) that "
        "brings them into range first: the temperature of c * logits is c times theirs."
    )


def _check_range(point: Objective, where: str) -> None:
    """Raise when f, f' or f'' at T = 1 overflowed (logits far above :data:`SPREAD_RANGE`)."""
    if not all(math.isfinite(x) for x in (point.value, point.gradient, point.curvature)):
        raise _range_error(where, f"above {SPREAD_RANGE[1]:g}")


def _scale(origin: Objective, where: str) -> float:
    """1 / spread of the logits from f at beta = 0, after ruling out what leaves no finite
    temperature: no information (f' = f'' = 0: every row's logits equal) or logits that do no
    better than uniform guessing (f'(0) >= 0, so f' > 0 at every beta > 0 by convexity)."""
    g0, h0 = origin.gradient, origin.curvature
    if not (math.isfinite(g0) and math.isfinite(h0)):
        raise _range_error(where, f"above {SPREAD_RANGE[1]:g}")
    if g0 == 0.0 and h0 == 0.0:
        raise InputError(
            f"{where}: the scores carry no information (every row's logits are equal, or every "
            "binary score is 0): the log-likelihood is the same at every temperature."
        )
    if g0 >= 0.0:
        raise _uniform_error(where)
    spread = math.sqrt(h0)
    low, high = SPREAD_RANGE
    if not low <= spread <= high:
        raise _range_error(where, f"{spread:.3g}" if spread > 0 else f"below {low:g}")
    return 1.0 / spread


def drive(
    solver: Solver, *, evaluate: Callable[[float], Objective], separable: Callable[[], bool]
) -> Solution:
    """Run one solver, answering its requests with the two callables."""
    try:
        kind, beta = next(solver)
        while True:
            answer = evaluate(float(beta)) if kind == "evaluate" else separable()  # type: ignore[arg-type]
            kind, beta = solver.send(answer)
    except StopIteration as stop:
        return stop.value


def drive_many(
    solvers: dict[Any, Solver],
    *,
    evaluate: Callable[[dict[Any, float]], dict[Any, Objective]],
    separable: Callable[[list[Any]], dict[Any, bool]],
) -> dict[Any, Solution | InputError]:
    """Run one solver per group in lock-step: each round answers every group's request with one
    call (one aggregation over all the data). A group whose fit fails gets its InputError."""
    results: dict[Any, Solution | InputError] = {}
    pending: dict[Any, Request] = {}

    def advance(key: Any, answer: Any = None, first: bool = False) -> None:
        try:
            pending[key] = next(solvers[key]) if first else solvers[key].send(answer)
        except StopIteration as stop:
            results[key] = stop.value
            pending.pop(key, None)
        except InputError as exc:
            results[key] = exc
            pending.pop(key, None)

    for key in list(solvers):
        advance(key, first=True)
    while pending:
        wanted = {k: float(b) for k, (kind, b) in pending.items() if kind == "evaluate"}  # type: ignore[arg-type]
        asked = [k for k, (kind, _) in pending.items() if kind == "separable"]
        answers: dict[Any, Any] = {}
        if wanted:
            answers.update(evaluate(wanted))
        if asked:
            answers.update(separable(asked))
        for key in list(pending):
            advance(key, answers[key])
    return results


def _check_finite_optimum(
    lo: float,
    hi: float,
    where: str,
    *,
    lower: bool = True,
    separable: bool = True,
    origin: Objective | None = None,
) -> Generator[Request, Any, None]:
    """Raise when the NLL has no minimiser at a finite positive beta, decided exactly.

    Separable data (every row's true class strictly ahead of the others, or every binary margin
    positive) make f' < 0 for every beta (T -> 0); f'(0) >= 0 makes f' > 0 for every beta > 0
    (T -> infinity). Called only when the bracket never closed on that side.
    """
    if separable and math.isinf(hi) and (yield ("separable", None)):
        raise InputError(
            f"{where}: the calibration data are separable: the NLL keeps falling as the "
            "temperature goes to 0 (every prediction is right with a margin), so there is no "
            "finite maximum-likelihood temperature. Fit on held-out data with errors in it."
        )
    if lower and lo == 0.0:
        at_zero = origin if origin is not None else (yield ("evaluate", 0.0))
        if at_zero.gradient >= 0.0:
            raise _uniform_error(where)


def _uniform_error(where: str) -> InputError:
    return InputError(
        f"{where}: the scores do no better than uniform guessing: the NLL keeps falling as the "
        "temperature grows without bound. Check that the labels match the columns of the "
        "logits."
    )


def _separable(scores: np.ndarray, labels: np.ndarray) -> bool:
    if scores.ndim == 1:
        return bool(np.all(np.where(labels == 1, scores, -scores) > 0))
    rows = max(1, CHUNK_ELEMENTS // scores.shape[1])
    for start in range(0, scores.shape[0], rows):
        block = scores[start : start + rows]
        y = labels[start : start + rows]
        true = np.take_along_axis(block, y[:, None], axis=1)[:, 0]
        others = np.where(np.arange(block.shape[1]) == y[:, None], -np.inf, block).max(axis=1)
        if not np.all(true > others):
            return False
    return True
