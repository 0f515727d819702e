"""The two hot loops: per-bin sums of forecasts, and the top-label reduction.

Each has a plain numpy implementation (the reference, always available) and an optional fused
single-pass numba kernel (``pip install calibkit[fast]``) that also counts invalid values in the
same pass, so large inputs are read once. Tests check that both give the same numbers.

``CALIBKIT_KERNEL=numpy`` forces the reference path, ``CALIBKIT_KERNEL=numba`` requires numba;
the default (``auto``) uses numba when it is installed and the input is large enough to pay for
the call overhead.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from functools import cache
from types import ModuleType
from typing import Any, Literal

import numpy as np

from ._errors import InputError
from ._extras import missing_extra

#: Inputs smaller than this many elements use numpy: numba's call overhead would dominate.
NUMBA_MIN_ELEMENTS = 200_000
#: Until the compiled kernels are loaded in a process, inputs smaller than this many elements
#: use numpy: importing numba and loading the kernels from its disk cache takes about 0.6 s
#: (and the first run after installing compiles them, about 0.5 s per kernel and input dtype),
#: which the numpy path beats on anything smaller.
NUMBA_LOAD_ELEMENTS = 30_000_000
#: Rows per chunk on the numpy path: bounds the temporaries to a few MB whatever N is.
CHUNK = 1 << 18
#: The per-bin sums, in the order the kernels return them.
SUM_FIELDS = ("sum_conf", "sum_outcome", "sum_conf_sq", "sum_conf_outcome", "sum_var_weight")


def _mode() -> str:
    mode = os.environ.get("CALIBKIT_KERNEL", "auto").lower()
    if mode not in ("auto", "numpy", "numba"):
        raise InputError(f"CALIBKIT_KERNEL must be auto, numpy or numba, got {mode!r}.")
    return mode


@cache
def _numba_installed() -> bool:
    return importlib.util.find_spec("numba") is not None


@cache
def _numba_module() -> ModuleType | None:
    if not _numba_installed():
        return None
    try:
        from . import _numba_kernels
    except ImportError:
        return None
    return _numba_kernels


def _numba() -> ModuleType:
    module = _numba_module()
    if module is None:  # use_numba() said yes, so this cannot happen
        raise RuntimeError("calibkit bug: the numba kernels were chosen but are not importable")
    return module


@cache
def numba_ranking() -> ModuleType:
    """The ranking kernels (``_numba_ranking``), once :func:`use_numba` said yes."""
    _numba()
    from . import _numba_ranking

    return _numba_ranking


@cache
def numba_slabs() -> ModuleType:
    """The order a slab at a time (``_numba_slabs``), once :func:`use_numba` said yes."""
    _numba()
    from . import _numba_slabs

    return _numba_slabs


@cache
def numba_curve() -> ModuleType:
    """The risk-coverage curve's kernel (``_numba_curve``), once :func:`use_numba` said yes."""
    _numba()
    from . import _numba_curve

    return _numba_curve


@cache
def numba_slope() -> ModuleType:
    """The calibration slope's kernels (``_numba_slope``), once :func:`use_numba` said yes."""
    _numba()
    from . import _numba_slope

    return _numba_slope


@cache
def numba_temperature() -> ModuleType:
    """The temperature fit's kernels (``_numba_temperature``), once :func:`use_numba` said
    yes."""
    _numba()
    from . import _numba_temperature

    return _numba_temperature


@cache
def numba_capital() -> ModuleType:
    """The betting confidence sequence's kernel (``_numba_capital``), once :func:`use_numba`
    said yes."""
    _numba()
    from . import _numba_capital

    return _numba_capital


def numba_distinct() -> ModuleType:
    """The kernels over the distinct forecasts (``_numba_distinct``: PAV, CORP's score terms,
    the smooth ECE's spreading), once :func:`use_numba` said yes."""
    _numba()
    from . import _numba_distinct

    return _numba_distinct


def use_numba(n_elements: int) -> bool:
    """Whether the numba kernel should handle an input of this many elements.

    ``auto`` (the default) uses numba when it is installed and the input has at least
    :data:`NUMBA_MIN_ELEMENTS` elements, and, while the kernels are not yet loaded in this
    process, at least :data:`NUMBA_LOAD_ELEMENTS` (loading them costs more than numpy's whole
    computation on smaller inputs). ``CALIBKIT_KERNEL=numba`` always uses them.
    """
    mode = _mode()
    if mode == "numpy":
        return False
    if mode == "numba":
        if _numba_module() is None:
            raise missing_extra("numba", "CALIBKIT_KERNEL=numba")
        return True
    if n_elements < NUMBA_MIN_ELEMENTS or not _numba_installed():
        return False
    loaded = f"{__package__}._numba_kernels" in sys.modules
    return (loaded or n_elements >= NUMBA_LOAD_ELEMENTS) and _numba_module() is not None


def expect(work_elements: int) -> None:
    """Load the numba kernels now when a computation that reads about ``work_elements``
    elements in all is coming (an audit reads its N forecasts some 15 times): its passes then
    all use them, where :func:`use_numba` would judge each pass alone against
    :data:`NUMBA_LOAD_ELEMENTS`. Nothing happens under ``CALIBKIT_KERNEL=numpy``, without
    numba, or below that size."""
    if _mode() == "auto" and work_elements >= NUMBA_LOAD_ELEMENTS and _numba_installed():
        _numba_module()


def is_uniform(edges: np.ndarray) -> bool:
    """True when ``edges`` is exactly ``np.linspace(0, 1, M + 1)``."""
    return bool(np.array_equal(edges, np.linspace(0.0, 1.0, edges.size)))


# ----------------------------------------------------------------------------- bin index


def bin_index(conf: np.ndarray, edges: np.ndarray, closed: str) -> np.ndarray:
    """Bin of each confidence by comparison with ``edges`` (numpy reference).

    ``closed="right"``: bins (e_k, e_k+1], a value equal to an edge goes to the lower bin and 0
    to the first bin. ``closed="left"``: bins [e_k, e_k+1), a value equal to an edge goes to the
    upper bin and 1 to the last bin.
    """
    m = edges.size - 1
    if not is_uniform(edges):
        return _search(conf, edges, closed)
    # equal widths: floor(x * m) is the bin unless x lies within rounding of an edge, where the
    # comparison with the edge array decides (a binary search on every value is 10x slower)
    scaled = conf * m
    idx = scaled.astype(np.int32)
    frac = scaled - idx
    near = (frac < 1e-12 * m) | (frac > 1.0 - 1e-12 * m) | (idx > m - 1)
    if near.any():
        idx[near] = _search(conf[near], edges, closed)
    return idx


def _search(conf: np.ndarray, edges: np.ndarray, closed: str) -> np.ndarray:
    side: Literal["left", "right"] = "left" if closed == "right" else "right"
    idx = np.searchsorted(edges, conf, side=side) - 1
    np.clip(idx, 0, edges.size - 2, out=idx)
    return idx


def _bin_sums_numpy(
    conf: np.ndarray, outcome: np.ndarray, edges: np.ndarray, closed: str
) -> tuple[np.ndarray, np.ndarray]:
    m = edges.size - 1
    count = np.zeros(m, dtype=np.int64)
    sums = np.zeros((len(SUM_FIELDS), m), dtype=np.float64)
    for start in range(0, conf.shape[0], CHUNK):
        x = conf[start : start + CHUNK].astype(np.float64)
        o = outcome[start : start + CHUNK].astype(np.float64)
        idx = bin_index(x, edges, closed)
        count += np.bincount(idx, minlength=m)
        for row, w in enumerate(sum_terms(x, o)):
            sums[row] += np.bincount(idx, weights=w, minlength=m)
    return count, sums


def sum_terms(x: np.ndarray, o: np.ndarray) -> tuple[np.ndarray, ...]:
    """The per-forecast terms of :data:`SUM_FIELDS` for confidences ``x`` and outcomes ``o``."""
    return (x, o, x * x, x * o, x * (1.0 - x) * (1.0 - 2.0 * x) ** 2)


def bin_sums(
    conf: np.ndarray, outcome: np.ndarray, edges: np.ndarray, closed: str, *, validate: Any
) -> tuple[np.ndarray, np.ndarray]:
    """Per-bin count and the sums of :data:`SUM_FIELDS`.

    ``validate(conf, outcome)`` is the input check that raises :class:`InputError`. The numpy
    path calls it first; the numba path counts suspect values inside its single pass and, only
    when there are some, hands over to validation and the numpy path. ``validate=None`` is for
    input checked already.
    """
    if use_numba(conf.shape[0]):
        count, sums, n_bad = _numba().bin_sums(
            conf, outcome, edges, closed == "right", is_uniform(edges)
        )
        if not n_bad:
            return count, sums
    if validate is not None:  # raises on bad input; the kernel's check is only a quick filter
        validate(conf, outcome)
    return _bin_sums_numpy(conf, outcome, edges, closed)


def weighted_bin_sums(
    conf: np.ndarray, outcome: np.ndarray, weight: np.ndarray, edges: np.ndarray, closed: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-bin raw count, the weighted sums of :data:`SUM_FIELDS` (each term times its row's
    weight), the sum of the weights and the sum of their squares (checked input; numpy)."""
    m = edges.size - 1
    count = np.zeros(m, dtype=np.int64)
    sums = np.zeros((len(SUM_FIELDS), m), dtype=np.float64)
    wsum = np.zeros(m, dtype=np.float64)
    wsq = np.zeros(m, dtype=np.float64)
    for start in range(0, conf.shape[0], CHUNK):
        x = conf[start : start + CHUNK].astype(np.float64)
        o = outcome[start : start + CHUNK].astype(np.float64)
        w = weight[start : start + CHUNK]
        idx = bin_index(x, edges, closed)
        count += np.bincount(idx, minlength=m)
        wsum += np.bincount(idx, weights=w, minlength=m)
        wsq += np.bincount(idx, weights=w * w, minlength=m)
        for row, term in enumerate(sum_terms(x, o)):
            sums[row] += np.bincount(idx, weights=term * w, minlength=m)
    return count, sums, wsum, wsq


# ----------------------------------------------------------------------------- top label


def _top_label_numpy(p: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    conf = np.empty(p.shape[0], dtype=np.float64)
    correct = np.empty(p.shape[0], dtype=bool)
    for start in range(0, p.shape[0], CHUNK):
        block = p[start : start + CHUNK]
        pred = block.argmax(axis=1)
        conf[start : start + len(block)] = np.take_along_axis(block, pred[:, None], axis=1)[:, 0]
        correct[start : start + len(block)] = pred == y[start : start + len(block)]
    return conf, correct


def top_label(
    p: np.ndarray, y: np.ndarray, *, row_sum_atol: float, validate: Any
) -> tuple[np.ndarray, np.ndarray]:
    """Confidence (max probability, float64) and correctness (argmax == label) per row.

    Ties go to the first largest class, as ``np.argmax``. ``validate(p, y)`` raises on bad input;
    see :func:`bin_sums` for when it runs.
    """
    if use_numba(p.size):
        conf, correct, n_bad = _numba().top_label(p, y, row_sum_atol)
        if not n_bad:
            return conf, correct
    if validate is not None:  # raises on bad input; the kernel's check is only a quick filter
        validate(p, y)
    return _top_label_numpy(p, y)


# ----------------------------------------------------------------------------- temperature


def within_unit(x: np.ndarray) -> bool:
    """Whether every value of ``x`` lies in [0, 1] (False for NaN): one threaded pass of the
    numba kernel for a large contiguous float array once the kernels are loaded (a check
    alone does not load them), else numpy's minimum and maximum."""
    loaded = f"{__package__}._numba_kernels" in sys.modules
    if loaded and x.dtype.kind == "f" and x.flags.c_contiguous and use_numba(x.size):
        return int(_numba().outside_unit(x)) == 0
    return bool(x.min() >= 0.0 and x.max() <= 1.0)


def binary_scores(p: np.ndarray, y: np.ndarray) -> tuple[float, float, int, int]:
    """Brier and log-loss sums of binary probabilities, the rows whose true class has
    probability 0 and the first of them (numba kernel: one pass)."""
    brier, loss, zeros, first = _numba().binary_scores(p, y)
    return float(brier), float(loss), int(zeros), int(first)


def temperature_sums(
    scores: np.ndarray, labels: np.ndarray, beta: float, temperature: float
) -> np.ndarray:
    """Sums of the NLL and its first three derivatives in beta = 1/T, the first three at
    beta = 0, and for (N, C) logits the argmax check at ``temperature`` (numba kernel)."""
    return np.asarray(numba_temperature().temperature_sums(scores, labels, beta, temperature))
