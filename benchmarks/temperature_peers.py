"""Peer temperature-scaling fits, the independent reference and the data, for
``bench_temperature.py``.

Every peer function takes ``(X, labels)`` -- ``X`` being the input that peer's user holds (the
float32 logits, or float64 / float32 probabilities for netcal, which only takes probabilities) --
and returns the fitted temperature T as a Python float, where the logits are divided by T.  The
function does everything the user must do to get T from numpy arrays (``torch.from_numpy``,
parameter set-up, the optimiser loop); one-time imports are not timed.

Conventions of the peers (T = what the logits are divided by):

* torch LBFGS (strong Wolfe): our own fit on u = log T, start T = 1 (calibkit's start), float32
  autograd through ``F.cross_entropy``, tight tolerances, ``.step`` repeated until u stops moving.
  Also a float64 variant (a timed float64 copy of the logits): the float32 loss is too coarse
  for the strong-Wolfe line search to resolve the last 1e-4 of T (it stalls, gradient != 0).
* Guo et al. (gpleiss/temperature_scaling): ``nn.Parameter(ones(1) * 1.5)``,
  ``optim.LBFGS([T], lr=0.01, max_iter=50)``, ONE ``.step(closure)`` on
  ``CrossEntropyLoss(logits / T)`` -- copied from the repo, including its fixed budget.
* netcal ``TemperatureScaling`` (method "mle"): takes probabilities, clips them to
  [eps, 1 - eps] with eps = finfo(dtype).eps, logs them, and fits a multiplier w on the log
  probabilities with ``scipy.optimize.minimize`` (L-BFGS-B, finite-difference gradient) on a torch
  NLL in the input's dtype: T = 1 / w (``.weights`` / ``.temperature`` hold w).
* probmetrics ``TemperatureScalingCalibrator`` (default ``opt="bisection"``): 30 bisection steps
  on the sign of dNLL/d(log beta) over log beta in [-16, 16], torch float32; called through
  ``fit_torch(CategoricalLogits(...))`` so it sees the logits themselves: T = 1 / invtemp_.
* scikit-learn ``_TemperatureScaling().fit(logits, y)`` (what
  ``CalibratedClassifierCV(method="temperature")`` fits per calibration fold):
  ``minimize_scalar`` bounded over log beta in [-10, 10], xatol = 64 eps(dtype), the NLL by
  ``HalfMultinomialLoss`` in the logits' dtype (float32 here): T = 1 / beta_.
"""

from __future__ import annotations

import contextlib
import io
import math
import warnings
from collections.abc import Callable

import numpy as np
from scipy.optimize import minimize_scalar

warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", category=FutureWarning)
warnings.filterwarnings("ignore", category=UserWarning)

from harness import IMPORT_ERRORS, try_import  # noqa: E402

torch = try_import("torch", lambda: __import__("torch"))
_netcal = try_import("netcal", lambda: __import__("netcal.scaling").scaling)
_pm_cal = try_import("probmetrics", lambda: __import__("probmetrics.calibrators").calibrators)
_pm_dist = try_import("probmetrics", lambda: __import__("probmetrics.distributions").distributions)
_skcal = try_import("scikit-learn", lambda: __import__("sklearn.calibration").calibration)


# --------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------
def make_logits(
    N: int, C: int, *, t_true: float = 2.5, seed: int = 0, chunk_elements: int = 1 << 24
) -> tuple[np.ndarray, np.ndarray]:
    """float32 logits z (N, C) and int64 labels with labels ~ softmax(z / t_true) exactly
    (Gumbel-max on the stored float32 z), so the maximum-likelihood T is near t_true.

    z = t_true * z*, z* = 1.5 N(0, 1) for C <= 10; for wide C, z* = N(0, 1) plus, on one random
    class per row, a margin ~ U(0, ln C + 4) (a confident model: top-label probabilities of
    softmax(z*) spread over (1/C, 1)). Generated in row chunks (transient O(chunk), not O(N C)).
    """
    rng = np.random.default_rng(seed)
    z = np.empty((N, C), dtype=np.float32)
    y = np.empty(N, dtype=np.int64)
    rows = max(1, chunk_elements // C)
    for s in range(0, N, rows):
        e = min(N, s + rows)
        n = e - s
        if C <= 10:
            zs = 1.5 * rng.standard_normal((n, C), dtype=np.float32)
        else:
            zs = rng.standard_normal((n, C), dtype=np.float32)
            hot = rng.integers(0, C, n)
            zs[np.arange(n), hot] += rng.uniform(0.0, math.log(C) + 4.0, n).astype(np.float32)
        zs *= np.float32(t_true)
        z[s:e] = zs
        g = rng.gumbel(size=(n, C))
        g += z[s:e] / t_true  # float64: the exact model softmax(z / t_true)
        y[s:e] = g.argmax(axis=1)
        del zs, g
    return z, y


def _mulberry32(seed: int):
    s = seed & 0xFFFFFFFF

    def rand() -> float:
        nonlocal s
        s = (s + 0x6D2B79F5) & 0xFFFFFFFF
        t = ((s ^ (s >> 15)) * (1 | s)) & 0xFFFFFFFF
        t = ((t + (((t ^ (t >> 7)) * (61 | t)) & 0xFFFFFFFF)) & 0xFFFFFFFF) ^ t
        return ((t ^ (t >> 14)) & 0xFFFFFFFF) / 4294967296.0

    return rand


def demo_4000x4() -> tuple[np.ndarray, np.ndarray]:
    """A small demo, bit for bit as a JavaScript demo draws it (mulberry32 generator, seed 11):
    4,000 four-class rows, z* = 1.5 N(0, 1), y ~ softmax(z*) by inverse CDF, reported z = 2.5 z*.
    Returns float64 logits (the demo's numbers) and int64 labels."""
    rand = _mulberry32(11)

    def gauss() -> float:
        a = rand()  # JavaScript evaluates the left operand first
        return math.sqrt(-2.0 * math.log(1.0 - a)) * math.cos(2.0 * math.pi * rand())

    z = np.empty((4000, 4))
    y = np.empty(4000, dtype=np.int64)
    for i in range(4000):
        zs = [1.5 * gauss() for _ in range(4)]
        m = max(zs)
        e = [math.exp(v - m) for v in zs]
        t = sum(e)
        p = [v / t for v in e]
        u, k = rand(), 0
        while k < 3 and u > p[k]:
            u -= p[k]
            k += 1
        z[i] = [2.5 * v for v in zs]
        y[i] = k
    return z, y


def softmax_probs(z: np.ndarray, dtype, chunk_elements: int = 1 << 23) -> np.ndarray:
    """softmax(z) in float64 per chunk, stored as ``dtype`` (netcal's input)."""
    out = np.empty(z.shape, dtype=dtype)
    rows = max(1, chunk_elements // z.shape[1])
    for s in range(0, z.shape[0], rows):
        b = z[s : s + rows].astype(np.float64)
        b -= b.max(axis=1, keepdims=True)
        np.exp(b, out=b)
        b /= b.sum(axis=1, keepdims=True)
        out[s : s + rows] = b
    return out


# --------------------------------------------------------------------------------------------
# the independent reference
# --------------------------------------------------------------------------------------------
def reference_temperature(
    X: np.ndarray,
    y: np.ndarray,
    *,
    transform: Callable[[np.ndarray], np.ndarray] | None = None,
    chunk_elements: int = 1 << 22,
) -> tuple[float, int]:
    """Maximum-likelihood T by ``minimize_scalar(method="bounded")`` over log T in [-12, 12],
    xatol = 1e-12, on the float64 mean NLL computed in row chunks (no float64 copy of X).

    ``transform`` maps a float64 chunk of X to the logits the NLL uses (default: X itself);
    netcal's rows use it to get netcal's own input, log(clip(p, eps, 1 - eps)).
    Returns (T, number of NLL evaluations).
    """
    N, C = X.shape
    rows = max(1, chunk_elements // C)
    # per row: the shifted true logit (fixed), so each evaluation is one exp pass per chunk
    true = np.empty(N)
    for s in range(0, N, rows):
        b = X[s : s + rows].astype(np.float64)
        if transform is not None:
            b = transform(b)
        b -= b.max(axis=1, keepdims=True)
        true[s : s + rows] = b[np.arange(b.shape[0]), y[s : s + rows]]
    count = 0

    def nll(log_t: float) -> float:
        nonlocal count
        count += 1
        beta = math.exp(-log_t)
        total = 0.0
        for s in range(0, N, rows):
            b = X[s : s + rows].astype(np.float64)
            if transform is not None:
                b = transform(b)
            b -= b.max(axis=1, keepdims=True)
            b *= beta
            np.exp(b, out=b)
            total += float(np.log(b.sum(axis=1)).sum())
        return (total - beta * float(true.sum())) / N

    res = minimize_scalar(
        nll, bounds=(-12.0, 12.0), method="bounded", options={"xatol": 1e-12, "maxiter": 2000}
    )
    return float(math.exp(res.x)), count


def netcal_transform(dtype) -> Callable[[np.ndarray], np.ndarray]:
    """netcal's preprocessing of probabilities of ``dtype``: log(clip(p, eps, 1 - eps))."""
    eps = float(np.finfo(dtype).eps)

    def f(b: np.ndarray) -> np.ndarray:
        np.clip(b, eps, 1.0 - eps, out=b)
        return np.log(b, out=b)

    return f


# --------------------------------------------------------------------------------------------
# peers: (X, labels) -> T
# --------------------------------------------------------------------------------------------
def torch_lbfgs(z: np.ndarray, y: np.ndarray, *, float64: bool = False) -> float:
    """torch.optim.LBFGS on u = log T with line_search_fn="strong_wolfe", lr=1, max_iter=100,
    tolerance_grad=1e-12, tolerance_change=1e-15; ``.step`` repeated (at most 10 times) until u
    moves by less than 1e-12. Float32 logits (zero-copy ``from_numpy``), float32 autograd; with
    ``float64=True`` a float64 copy of the logits (timed) and float64 autograd."""
    F = torch.nn.functional
    with torch.enable_grad():
        zt = torch.from_numpy(z)
        if float64:
            zt = zt.double()
        yt = torch.from_numpy(y)
        u = torch.zeros(1, dtype=zt.dtype, requires_grad=True)  # T = 1
        opt = torch.optim.LBFGS(
            [u],
            lr=1.0,
            max_iter=100,
            tolerance_grad=1e-12,
            tolerance_change=1e-15,
            line_search_fn="strong_wolfe",
        )

        def closure():
            opt.zero_grad()
            loss = F.cross_entropy(zt * torch.exp(-u), yt)
            loss.backward()
            return loss

        for _ in range(10):
            before = float(u.item())
            opt.step(closure)
            if abs(float(u.item()) - before) < 1e-12:
                break
        return float(math.exp(u.item()))


def torch_lbfgs64(z: np.ndarray, y: np.ndarray) -> float:
    """:func:`torch_lbfgs` on a float64 copy of the logits (the copy is timed)."""
    return torch_lbfgs(z, y, float64=True)


def guo_recipe(z: np.ndarray, y: np.ndarray) -> float:
    """gpleiss/temperature_scaling ``ModelWithTemperature.set_temperature``, verbatim:
    T = nn.Parameter(ones(1) * 1.5), LBFGS([T], lr=0.01, max_iter=50), one step(closure)."""
    nn = torch.nn
    with torch.enable_grad():
        logits = torch.from_numpy(z)
        labels = torch.from_numpy(y)
        temperature = nn.Parameter(torch.ones(1) * 1.5)
        nll_criterion = nn.CrossEntropyLoss()
        optimizer = torch.optim.LBFGS([temperature], lr=0.01, max_iter=50)

        def temperature_scale(lg):
            t = temperature.unsqueeze(1).expand(lg.size(0), lg.size(1))
            return lg / t

        def closure():
            optimizer.zero_grad()
            loss = nll_criterion(temperature_scale(logits), labels)
            loss.backward()
            return loss

        optimizer.step(closure)
        return float(temperature.item())


def netcal_ts(p: np.ndarray, y: np.ndarray) -> float:
    """netcal ``TemperatureScaling().fit(probs, labels)`` (method "mle"); T = 1 / weights."""
    ts = _netcal.TemperatureScaling()
    with contextlib.redirect_stdout(io.StringIO()):  # its "not all class labels" print()s
        ts.fit(p, y, tensorboard=False)
    w = float(np.asarray(ts.weights).reshape(-1)[0])
    return 1.0 / w


def probmetrics_ts(z: np.ndarray, y: np.ndarray) -> float:
    """probmetrics ``TemperatureScalingCalibrator()`` (bisection, 30 steps) on the logits:
    ``fit_torch(CategoricalLogits(from_numpy(z)), from_numpy(y))``; T = 1 / invtemp_."""
    cal = _pm_cal.TemperatureScalingCalibrator()
    with torch.no_grad():
        cal.fit_torch(_pm_dist.CategoricalLogits(torch.from_numpy(z)), torch.from_numpy(y))
    return 1.0 / float(cal.invtemp_)


def sklearn_ts(z: np.ndarray, y: np.ndarray) -> float:
    """scikit-learn ``calibration._TemperatureScaling().fit(logits, y)``; T = 1 / beta_."""
    return 1.0 / float(_skcal._TemperatureScaling().fit(z, y).beta_)


# name -> (function, input kind, library)
#   input kinds: "logits" (float32 logits as given), "probs64" / "probs32" (softmax(z) stored
#   in that dtype; built once per case, not timed: it is what a netcal user holds)
_ALL: dict[str, tuple[Callable[[np.ndarray, np.ndarray], float], str, str]] = {
    "torch LBFGS strong-Wolfe": (torch_lbfgs, "logits", "torch"),
    "torch LBFGS strong-Wolfe f64": (torch_lbfgs64, "logits", "torch"),
    "Guo et al. recipe (torch)": (guo_recipe, "logits", "torch"),
    "netcal (float64 probs)": (netcal_ts, "probs64", "netcal"),
    "netcal (float32 probs)": (netcal_ts, "probs32", "netcal"),
    "probmetrics (bisection)": (probmetrics_ts, "logits", "probmetrics"),
    "sklearn _TemperatureScaling": (sklearn_ts, "logits", "scikit-learn"),
}


def _needs(lib: str) -> tuple[str, ...]:
    return {"netcal": ("torch", "netcal"), "probmetrics": ("torch", "probmetrics")}.get(lib, (lib,))


PEERS = {
    k: (f, kind)
    for k, (f, kind, lib) in _ALL.items()
    if not any(n in IMPORT_ERRORS for n in _needs(lib))
}
