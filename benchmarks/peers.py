"""Peer-library ECE functions for the calibkit side-by-side benchmark.

Every function takes numpy arrays and returns a Python float, and does *everything* a user of
that library must do to get the number from numpy arrays (torch.from_numpy / dtype casts /
reshaping / top-label reduction included), so timing the function is timing the user's path.
Setup that a user does once per process (imports, building a metric registry) is done at
import time or cached and is NOT timed.

Two tasks:

* top-label: ``probs`` (N, C) float32 rows summing to 1, ``labels`` (N,) int64.
  ECE of the top-label confidence ``max_c probs`` against correctness ``argmax == label``.
* binary: ``p`` (N,) float64 = P(label == 1), ``y`` (N,) int8 in {0, 1}.
  ECE of p against y (NOT top-label: a row with p = 0.2 is binned at 0.2, not at 0.8).

Unless stated otherwise: L1 ECE, 15 equal-width bins on [0, 1],
ECE = sum_b |sum_{i in b} (conf_i - outcome_i)| / N.

Bin-edge conventions (edges e_k = k/15) -- they only matter for values exactly on an edge:
  * ``ref_ece`` / sklearn / uncertainty-calibration: right-closed (e_{k-1}, e_k], 0 -> bin 0.
  * netcal (np.histogramdd): left-closed [e_{k-1}, e_k), last bin [e_14, 1].
  * torchmetrics / probmetrics (torch.bucketize right=True): left-closed [e_{k-1}, e_k) and
    conf == 1.0 falls in a 16th bin of its own (harmless: |1 - acc| of those rows is exact).
  * relplot.binnedECE: floor(conf / (1/15)), left-closed, 1.0 in a 16th bin.

``TOPLABEL`` and ``BINARY`` map names to functions; ``PLAIN_BINNED`` lists the names that
should agree with ``ref_ece`` (the others are different estimators).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable

import numpy as np

warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", category=FutureWarning)

N_BINS = 15

# --------------------------------------------------------------------------------------------
# reference
# --------------------------------------------------------------------------------------------


def ref_ece(conf: np.ndarray, outcome: np.ndarray, M: int = N_BINS) -> float:
    """Numpy reference: L1 ECE, M equal-width bins, right-closed, 0 in the first bin,
    float64 accumulation (np.bincount)."""
    edges = np.linspace(0, 1, M + 1)
    idx = np.clip(np.searchsorted(edges, conf, side="left") - 1, 0, M - 1)
    n = np.bincount(idx, minlength=M)
    s = np.bincount(idx, conf, M)
    o = np.bincount(idx, outcome, M)
    nz = n > 0
    return float(np.sum(np.abs(s[nz] - o[nz])) / len(conf))


def ref_toplabel(probs: np.ndarray, labels: np.ndarray, M: int = N_BINS) -> float:
    """ref_ece on (max prob, argmax == label)."""
    return ref_ece(probs.max(axis=1), probs.argmax(axis=1) == labels, M)


def ref_binary(p: np.ndarray, y: np.ndarray, M: int = N_BINS) -> float:
    """ref_ece on (p, y)."""
    return ref_ece(p, y, M)


# --------------------------------------------------------------------------------------------
# imports (lazy, so a peer that fails to import only removes itself)
# --------------------------------------------------------------------------------------------
from harness import IMPORT_ERRORS, try_import  # noqa: E402

torch = try_import("torch", lambda: __import__("torch"))
if torch is not None:
    torch.set_grad_enabled(False)
_tm = try_import("torchmetrics", lambda: __import__("torchmetrics.classification").classification)
_tmf = try_import(
    "torchmetrics",
    lambda: __import__("torchmetrics.functional.classification").functional.classification,
)
_netcal = try_import("netcal", lambda: __import__("netcal.metrics").metrics)
_pm = try_import("probmetrics", lambda: __import__("probmetrics.metrics").metrics)
_ucal = try_import("uncertainty-calibration", lambda: __import__("calibration"))
_rp = try_import("relplot", lambda: __import__("relplot"))
_skcal = try_import("scikit-learn", lambda: __import__("sklearn.calibration").calibration)


@functools.cache
def _pm_metrics():
    # Metrics.from_names builds the whole candidate registry (~0.1 s): one-time setup, not timed.
    return _pm.Metrics.from_names([f"ece-{N_BINS}"])


# --------------------------------------------------------------------------------------------
# top-label: probs (N, C) float32, labels (N,) int64
# --------------------------------------------------------------------------------------------


def torchmetrics_toplabel(probs: np.ndarray, labels: np.ndarray) -> float:
    """torchmetrics ``MulticlassCalibrationError(num_classes=C, n_bins=15, norm='l1')``,
    module API with default ``validate_args=True``: ``update(from_numpy(probs),
    from_numpy(labels)); compute()``.

    Computes: validation (label range, via torch.unique -- a sort), a full pass checking whether
    probs are in [0, 1] (else softmax), ``max``/``argmax`` over classes, confidences CAST TO
    float32 (``.float()`` -- always, even for float64 input), bins = torch.bucketize on float32
    linspace(0, 1, 16) with right=True (left-closed bins, conf == 1 in an extra bin), per-bin
    sums via scatter_add in float32 (counts in float32 too: exact only up to 2**24 per bin).
    Top-label, plain binned L1 ECE.  Time includes the tensor wrap (zero-copy) and the
    top-label reduction.
    """
    m = _tm.MulticlassCalibrationError(num_classes=probs.shape[1], n_bins=N_BINS, norm="l1")
    m.update(torch.from_numpy(probs), torch.from_numpy(labels))
    return float(m.compute())


def torchmetrics_fn_toplabel(probs: np.ndarray, labels: np.ndarray) -> float:
    """torchmetrics functional ``multiclass_calibration_error(..., validate_args=False)``:
    the fastest torchmetrics path (no torch.unique validation); otherwise identical to
    :func:`torchmetrics_toplabel` (float32 accumulation, left-closed bins)."""
    return float(
        _tmf.multiclass_calibration_error(
            torch.from_numpy(probs),
            torch.from_numpy(labels),
            num_classes=probs.shape[1],
            n_bins=N_BINS,
            norm="l1",
            validate_args=False,
        )
    )


def netcal_toplabel(probs: np.ndarray, labels: np.ndarray) -> float:
    """netcal ``ECE(bins=15).measure(probs, labels)`` (2-D input = multiclass softmax).

    Computes: ``np.unique(labels)`` (a sort; if it finds <= 2 distinct labels netcal treats the
    input as BINARY and uses column 1 instead of the top label!), clips probs to
    [eps, 1 - eps] (eps of the input dtype; a float32 copy), ``argmax == label`` and ``max``,
    then numpy ``histogramdd`` + scipy ``binned_statistic_dd`` (mean) on float64 edges
    linspace(0, 1, 16): left-closed bins, last bin closed; float64 accumulation.
    ECE = sum_b n_b/N |acc_b - conf_b|.  Top-label, plain binned L1 ECE.
    """
    return float(_netcal.ECE(bins=N_BINS).measure(probs, labels))


def probmetrics_toplabel(probs: np.ndarray, labels: np.ndarray) -> float:
    """probmetrics ``Metrics.from_names(['ece-15']).compute_all_from_labels_probs(
    torch.from_numpy(labels), torch.from_numpy(probs))['ece-15']``.

    Computes: ``torch.bincount(labels)`` to DROP classes absent from the labels, clamps probs
    to [1e-7, 1 - 1e-7] and renormalises rows (two full N*C copies), then torchmetrics
    ``CalibrationError(task='multiclass', n_bins=15, norm='l1').forward`` -- see
    :func:`torchmetrics_toplabel` (float32, left-closed bins, validation on).  Top-label plain
    binned L1 ECE of the clamped/renormalised probs (differs from the raw one by ~1e-7).
    The metric registry is built once and cached (not timed).
    """
    res = _pm_metrics().compute_all_from_labels_probs(
        torch.from_numpy(labels), torch.from_numpy(probs)
    )
    return float(res[f"ece-{N_BINS}"])


def ucal_toplabel(probs: np.ndarray, labels: np.ndarray) -> float:
    """uncertainty-calibration ``calibration.get_ece(probs, labels, num_bins=15,
    mode='top-label', debias=False)`` -- the plug-in ECE ("as computed by Guo et al.").

    Computes: argmax == label and max (numpy; correctness cast to the probs dtype), then
    ``data = list(zip(conf, correct))`` -- a Python list of N tuples -- then ``np.array(data)``,
    bins = upper edges [1/15, ..., 15/15] as Python floats with np.searchsorted(side='left'):
    right-closed bins (e_{k-1}, e_k], 0 in bin 0 -- the same convention as ref_ece;
    an argsort by bin and np.split, then per-bin np.mean (in float32 for float32 input).
    ECE = sum_b n_b/N |mean conf_b - mean correct_b|.  Top-label, plain binned L1 ECE.
    (Its ``get_calibration_error``/``lower_bound_scaling_ce`` are different, debiased L2
    estimators with equal-mass bins -- not used.)
    """
    return float(_ucal.get_ece(probs, labels, num_bins=N_BINS, mode="top-label", debias=False))


def relplot_smece_toplabel(probs: np.ndarray, labels: np.ndarray) -> float:
    """relplot ``smECE(*multiclass_logits_to_confidences(probs, labels, probs=True))``.

    A DIFFERENT ESTIMATOR: smooth ECE (Blasiok & Nakkiran 2023) -- kernel (reflected Gaussian)
    smoothing of the residuals conf - correct on a grid, with the bandwidth sigma found by a
    10-step bisection for the fixed point sigma = smECE_sigma; ~12 smoothing passes, each with
    np.add.at over N.  Top-label (max prob vs argmax == label, computed by relplot's helper).
    No bins; not comparable to the binned ECE value.
    """
    conf, correct = _rp.multiclass_logits_to_confidences(probs, labels, probs=True)
    return float(_rp.smECE(conf, correct))


def relplot_binned_toplabel(probs: np.ndarray, labels: np.ndarray) -> float:
    """relplot ``metrics.binnedECE(conf, correct, nbins=15)`` on relplot's top-label helper.

    Computes: bin = int(conf / (1/15)) (left-closed; 1.0 in a 16th bin), np.add.at of
    (conf - correct) per bin, sum |.| / N.  Top-label plain binned L1 ECE.
    """
    conf, correct = _rp.multiclass_logits_to_confidences(probs, labels, probs=True)
    return float(_rp.metrics.binnedECE(conf, correct, nbins=N_BINS))


def _sklearn_ece(y_true: np.ndarray, y_prob: np.ndarray) -> float:
    prob_true, prob_pred = _skcal.calibration_curve(
        y_true, y_prob, n_bins=N_BINS, strategy="uniform"
    )
    # calibration_curve drops empty bins and returns no counts: recount with ITS binning
    # (searchsorted on the 14 interior edges, side='left' = right-closed bins).
    edges = np.linspace(0.0, 1.0, N_BINS + 1)
    counts = np.bincount(np.searchsorted(edges[1:-1], y_prob), minlength=N_BINS)
    counts = counts[counts != 0]
    return float(np.sum(counts * np.abs(prob_true - prob_pred)) / len(y_prob))


def sklearn_toplabel(probs: np.ndarray, labels: np.ndarray) -> float:
    """scikit-learn ``calibration_curve(correct, conf, n_bins=15)`` + count-weighted mean of
    |prob_true - prob_pred|.

    Computes: conf = probs.max(1), correct = probs.argmax(1) == labels (numpy), then sklearn:
    checks (min/max of y_prob, ``np.unique(y_true)`` -- a sort), bins =
    searchsorted(linspace(0,1,16)[1:-1], conf) (right-closed, 0 in bin 0: same as ref_ece),
    three np.bincount (float64); then we recount bins (one more searchsorted + bincount,
    since sklearn returns no counts).  Top-label plain binned L1 ECE.
    """
    conf = probs.max(axis=1)
    correct = probs.argmax(axis=1) == labels
    return _sklearn_ece(correct, conf)


# --------------------------------------------------------------------------------------------
# binary: p (N,) float64 = P(y = 1), y (N,) int8
# --------------------------------------------------------------------------------------------


def torchmetrics_binary(p: np.ndarray, y: np.ndarray) -> float:
    """torchmetrics ``BinaryCalibrationError(n_bins=15, norm='l1')``, module API with default
    ``validate_args=True``: ``update(from_numpy(p), from_numpy(y)); compute()``.

    Computes: validation (``torch.unique(target)`` -- a sort), a pass checking p in [0, 1]
    (else sigmoid), then bins on p itself (not top-label) with torch.bucketize on
    linspace(0, 1, 16) in p's dtype (float64 here) right=True: left-closed bins, p == 1 in an
    extra bin; scatter_add sums in float64.  Plain binned L1 ECE of p vs y.
    """
    m = _tm.BinaryCalibrationError(n_bins=N_BINS, norm="l1")
    m.update(torch.from_numpy(p), torch.from_numpy(y))
    return float(m.compute())


def torchmetrics_fn_binary(p: np.ndarray, y: np.ndarray) -> float:
    """torchmetrics functional ``binary_calibration_error(..., validate_args=False)``: same as
    :func:`torchmetrics_binary` without the torch.unique validation."""
    return float(
        _tmf.binary_calibration_error(
            torch.from_numpy(p), torch.from_numpy(y), n_bins=N_BINS, norm="l1", validate_args=False
        )
    )


def netcal_binary(p: np.ndarray, y: np.ndarray) -> float:
    """netcal ``ECE(bins=15).measure(p, y)`` with 1-D p (= binary mode).

    Computes: ``np.unique(y)`` (sort), clip p to [eps, 1 - eps] (copy), a copy of y, a
    zeros_like(p) "uncertainty" array, then histogramdd + binned_statistic_dd on p (not
    top-label), float64 edges, left-closed bins (last closed), float64 accumulation.
    Plain binned L1 ECE of p vs y.
    """
    return float(_netcal.ECE(bins=N_BINS).measure(p, y))


def probmetrics_binary(p: np.ndarray, y: np.ndarray) -> float:
    """probmetrics ``compute_all_from_labels_probs(labels, probs2)['ece-15']`` with
    probs2 = np.stack([1 - p, p], 1) (N, 2) float64 and labels = y as int64.

    The (N, 2) array is required: passing 1-D p makes ``compute_all_from_labels_probs`` take
    ``n_classes = p.shape[-1] = N`` and fail.  Then: bincount class check, clamp to
    [1e-7, 1 - 1e-7] + row renormalisation, column 1 -> torchmetrics
    ``CalibrationError(task='binary').forward`` (see :func:`torchmetrics_binary`: float64,
    left-closed bins).  Plain binned L1 ECE of the clamped p vs y (diff ~1e-7).
    """
    probs2 = np.stack([1.0 - p, p], axis=1)
    res = _pm_metrics().compute_all_from_labels_probs(
        torch.from_numpy(y.astype(np.int64)), torch.from_numpy(probs2)
    )
    return float(res[f"ece-{N_BINS}"])


def ucal_binary(p: np.ndarray, y: np.ndarray) -> float:
    """uncertainty-calibration ``calibration.get_ece(p, y, num_bins=15, debias=False)`` with
    1-D p (binary: 'the regular calibration error', mode is ignored).

    Computes: min/max label checks, ``list(zip(p, y))`` (N Python tuples), ``np.array`` of it
    (float64), right-closed bins via np.searchsorted(side='left') on [1/15 .. 1] (= ref_ece
    convention), argsort by bin, np.split, per-bin np.mean.  Plain binned L1 ECE of p vs y.
    Requires integer labels (bool raises ValueError).
    """
    return float(_ucal.get_ece(p, y, num_bins=N_BINS, debias=False))


def relplot_smece_binary(p: np.ndarray, y: np.ndarray) -> float:
    """relplot ``smECE(p, y)``: smooth ECE of p vs y -- a DIFFERENT ESTIMATOR (kernel smoothing
    with bisection-chosen bandwidth, ~12 np.add.at passes over N); not a binned ECE."""
    return float(_rp.smECE(p, y))


def relplot_binned_binary(p: np.ndarray, y: np.ndarray) -> float:
    """relplot ``metrics.binnedECE(p, y, nbins=15)``: bin = int(p / (1/15)) (left-closed,
    1.0 in a 16th bin), np.add.at of (p - y), sum |.| / N.  Plain binned L1 ECE of p vs y."""
    return float(_rp.metrics.binnedECE(p, y, nbins=N_BINS))


def sklearn_binary(p: np.ndarray, y: np.ndarray) -> float:
    """scikit-learn ``calibration_curve(y, p, n_bins=15)`` + count-weighted mean
    |prob_true - prob_pred| (counts recomputed with sklearn's own searchsorted binning).
    Right-closed bins, 0 in bin 0 (= ref_ece); float64; ``np.unique(y)`` sort inside.
    Plain binned L1 ECE of p vs y."""
    return _sklearn_ece(y, p)


# --------------------------------------------------------------------------------------------
# registries
# --------------------------------------------------------------------------------------------
_LIB = {
    "torchmetrics": "torchmetrics",
    "torchmetrics_fn": "torchmetrics",
    "netcal": "netcal",
    "probmetrics": "probmetrics",
    "uncertainty_calibration": "uncertainty-calibration",
    "relplot_smece": "relplot",
    "relplot_binned": "relplot",
    "sklearn": "scikit-learn",
}

_ALL_TOPLABEL = {
    "torchmetrics": torchmetrics_toplabel,
    "torchmetrics_fn": torchmetrics_fn_toplabel,
    "netcal": netcal_toplabel,
    "probmetrics": probmetrics_toplabel,
    "uncertainty_calibration": ucal_toplabel,
    "relplot_smece": relplot_smece_toplabel,
    "relplot_binned": relplot_binned_toplabel,
    "sklearn": sklearn_toplabel,
}
_ALL_BINARY = {
    "torchmetrics": torchmetrics_binary,
    "torchmetrics_fn": torchmetrics_fn_binary,
    "netcal": netcal_binary,
    "probmetrics": probmetrics_binary,
    "uncertainty_calibration": ucal_binary,
    "relplot_smece": relplot_smece_binary,
    "relplot_binned": relplot_binned_binary,
    "sklearn": sklearn_binary,
}


def _available(d: dict[str, Callable]) -> dict[str, Callable]:
    out = {}
    for k, f in d.items():
        lib = _LIB[k]
        if lib in IMPORT_ERRORS or (
            lib in ("torchmetrics", "probmetrics") and "torch" in IMPORT_ERRORS
        ):
            continue
        out[k] = f
    return out


TOPLABEL: dict[str, Callable[[np.ndarray, np.ndarray], float]] = _available(_ALL_TOPLABEL)
BINARY: dict[str, Callable[[np.ndarray, np.ndarray], float]] = _available(_ALL_BINARY)
# Peers whose number should equal ref_ece (plain binned L1 ECE); relplot_smece is a different
# estimator and is only timed.
PLAIN_BINNED = [k for k in _ALL_TOPLABEL if k != "relplot_smece"]


def check_agreement(N: int = 200_000, seed: int = 0, tol: float = 1e-6) -> list[tuple]:
    """Compare every plain-binned peer with ref_ece on (a) random data and (b) data placed
    exactly ON the bin edges linspace(0, 1, 16) (and midway between them), which exposes the
    bin-edge conventions.  Returns rows (task, data, peer, value, ref, |diff|, ok)."""
    from harness import make_binary, make_topLabel

    rows = []
    probs, labels = make_topLabel(N, 10, seed=seed)
    p, y = make_binary(N, seed=seed, true_power=1.3)
    edges = np.linspace(0.0, 1.0, N_BINS + 1)
    grid = np.sort(np.concatenate([edges, (edges[:-1] + edges[1:]) / 2]))
    rng = np.random.default_rng(seed + 1)
    pe = grid[rng.integers(0, len(grid), N)]
    ye = (rng.random(N) < pe).astype(np.int8)
    cases = [
        ("toplabel", "random f32", TOPLABEL, (probs, labels), ref_toplabel(probs, labels)),
        ("binary", "random f64", BINARY, (p, y), ref_binary(p, y)),
        ("binary", "on edges", BINARY, (pe, ye), ref_binary(pe, ye)),
    ]
    for task, data, reg, args, ref in cases:
        for name in PLAIN_BINNED:
            if name not in reg:
                continue
            try:
                v = reg[name](*args)
                rows.append((task, data, name, v, ref, abs(v - ref), abs(v - ref) <= tol))
            except Exception as e:  # noqa: BLE001
                rows.append(
                    (task, data, name, float("nan"), ref, float("nan"), f"{type(e).__name__}: {e}")
                )
    return rows


if __name__ == "__main__":
    if IMPORT_ERRORS:
        print("import errors:", IMPORT_ERRORS)
    for r in check_agreement():
        task, data, name, v, ref, d, ok = r
        print(f"{task:9s} {data:11s} {name:24s} {v:.10f} ref {ref:.10f} diff {d:.2e} {ok}")
