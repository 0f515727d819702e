"""Timing, bandwidth, memory and data helpers for the calibkit-vs-peers benchmark.

Everything here is plain numpy + stdlib, so it runs in the benchmark venv (.venv-bench) and
does not depend on calibkit or on any peer.

* ``timeit(fn, *args, repeat=3)``  -> :class:`Timing` (best wall time after one warm-up call;
  the warm-up's own time is kept as ``first`` -- it includes JIT compilation / lazy imports).
* ``read_bandwidth()``               -> :class:`Bandwidth` (bytes/s of one core reading float64).
* ``read_floor(*arrays, bw=...)``    -> seconds one read of those arrays takes at that bandwidth.
* ``peak_extra_memory(fn, *args)``  -> bytes of resident memory above the inputs during one call.
* ``make_topLabel(N, C, seed)`` / ``make_binary(N, seed)`` -> benchmark data.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "Timing",
    "timeit",
    "Bandwidth",
    "read_bandwidth",
    "read_floor",
    "peak_extra_memory",
    "make_topLabel",
    "make_binary",
    "fmt_seconds",
    "fmt_bytes",
]


# --------------------------------------------------------------------------------------------
# timing
# --------------------------------------------------------------------------------------------
@dataclass
class Timing:
    best: float  # best wall time (s) over `repeat` calls made after the warm-up
    first: float  # wall time (s) of the warm-up (first) call: includes JIT compile, lazy imports
    times: list[float] = field(default_factory=list)  # all timed calls (warm-up excluded)
    result: Any = None  # return value of the last call (to check the answer)


def timeit(fn: Callable[..., Any], *args: Any, repeat: int = 3, **kwargs: Any) -> Timing:
    """Best wall-clock time (``time.perf_counter``) of ``fn(*args, **kwargs)``.

    One warm-up call is made first and timed separately (``Timing.first``); it absorbs numba
    JIT compilation, lazy imports, first-touch page faults of caches etc.  Then ``repeat``
    timed calls; ``Timing.best`` is the minimum.  ``gc`` is collected before each call and
    disabled during it.  ``repeat=0`` means "only the first call" (best == first).
    """
    gc.collect()
    t0 = time.perf_counter()
    res = fn(*args, **kwargs)
    first = time.perf_counter() - t0
    times: list[float] = []
    gc_was_enabled = gc.isenabled()
    try:
        for _ in range(repeat):
            gc.collect()
            gc.disable()
            t0 = time.perf_counter()
            res = fn(*args, **kwargs)
            times.append(time.perf_counter() - t0)
            if gc_was_enabled:
                gc.enable()
    finally:
        if gc_was_enabled:
            gc.enable()
    best = min(times) if times else first
    return Timing(best=best, first=first, times=times, result=res)


# --------------------------------------------------------------------------------------------
# read bandwidth
# --------------------------------------------------------------------------------------------
@dataclass
class Bandwidth:
    bytes_per_s: float  # nbytes / best time
    nbytes: int  # size of the array that was read
    best_s: float  # best time of one np.add.reduce over it

    @property
    def gb_per_s(self) -> float:
        return self.bytes_per_s / 1e9

    def floor(self, *arrays_or_nbytes: Any) -> float:
        """Seconds to read these arrays once at this bandwidth (see :func:`read_floor`)."""
        return read_floor(*arrays_or_nbytes, bw=self)


def read_bandwidth(
    arr: np.ndarray | None = None, repeat: int = 5, nbytes: int = 1 << 30
) -> Bandwidth:
    """Measure this machine's single-core streaming read bandwidth, in this run.

    Times ``np.add.reduce(arr)`` (a single-threaded, SIMD, pairwise float64 sum: it is limited
    by memory reads, not arithmetic) ``repeat`` times after one warm-up and returns
    ``arr.nbytes / best``.  ``arr`` defaults to a freshly filled 1 GiB float64 array (much
    larger than any cache).  A float64 view of ``arr``'s buffer is used when ``arr`` is of
    another dtype, so the result is always bytes read per second.

    It is the bandwidth ONE numpy kernel can pull; torch may use more cores (2 here), so a
    multi-threaded peer can in principle beat the single-core floor.
    """
    own = arr is None
    if own:
        arr = np.empty(nbytes // 8, dtype=np.float64)
        arr.fill(1.0)  # first touch: pages resident before timing
    a = np.ascontiguousarray(arr).reshape(-1)
    if a.dtype != np.float64:
        usable = (a.nbytes // 8) * 8
        a = a.view(np.uint8)[:usable].view(np.float64)
    np.add.reduce(a)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        np.add.reduce(a)
        best = min(best, time.perf_counter() - t0)
    bw = Bandwidth(bytes_per_s=a.nbytes / best, nbytes=a.nbytes, best_s=best)
    if own:
        del arr, a
        gc.collect()
    return bw


def read_floor(*arrays_or_nbytes: Any, bw: Bandwidth | float) -> float:
    """Lower bound (s) for any algorithm that must read every byte of the given arrays once.

    Arguments are numpy arrays (their ``nbytes``) or ints (byte counts); ``bw`` is a
    :class:`Bandwidth` or bytes/s.
    """
    total = 0
    for a in arrays_or_nbytes:
        total += int(a) if isinstance(a, (int, np.integer)) else int(np.asarray(a).nbytes)
    rate = bw.bytes_per_s if isinstance(bw, Bandwidth) else float(bw)
    return total / rate


# --------------------------------------------------------------------------------------------
# memory
# --------------------------------------------------------------------------------------------
def _proc_status_kib(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)


def _malloc_trim() -> None:
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def peak_extra_memory(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> int:
    """Peak resident memory (bytes) that one ``fn(*args)`` call needs above what already exists.

    Method (in this process): ``gc.collect()`` and glibc ``malloc_trim(0)`` (so memory freed by
    earlier calls is handed back to the OS and cannot be silently reused), then
    ``/proc/self/clear_refs`` <- "5" resets the kernel's peak-RSS counter (VmHWM) to the current
    RSS; after the call the result is ``VmHWM - VmRSS(before)``.  This sees every allocation --
    numpy, torch's allocator, numba, Python objects -- unlike ``tracemalloc`` (numpy reports to
    tracemalloc, torch does not).  The inputs are already resident, so they are not counted;
    a copy of them is.  Call the function once beforehand (e.g. via :func:`timeit`) so lazy
    imports / JIT compilation / one-time caches are not counted.

    Where /proc/self/clear_refs is not writable it falls back to ``tracemalloc`` peak (numpy
    and Python allocations only).  A forked-child variant was tried and dropped: the child
    deadlocks on a lock held by torch/OpenMP threads of the parent at fork time.
    """
    gc.collect()
    _malloc_trim()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        import tracemalloc

        tracemalloc.start()
        try:
            fn(*args, **kwargs)
            return int(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    base = _proc_status_kib("VmRSS")
    fn(*args, **kwargs)
    peak = _proc_status_kib("VmHWM")
    return int(max(peak - base, 0) * 1024)


# --------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------
_CHUNK = 1 << 22  # rows per generation chunk (~4M)


def make_topLabel(
    N: int, C: int, seed: int = 0, true_temperature: float = 0.8, chunk: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Top-label benchmark data: ``probs`` float32 (N, C) C-contiguous, rows summing to 1
    (to float32 rounding), and ``labels`` int64 (N,).

    probs = softmax(z) with z_ij ~ N(0, 1) plus, on one random class per row, a margin
    ~ Uniform(0, 2 ln C + 4): the top-label confidences then spread over all of (1/C, 1).
    Labels are drawn from softmax(true_temperature * z) (inverse-CDF sampling, float64), i.e.
    the "model" is over-confident for true_temperature < 1 and the true ECE is non-zero;
    true_temperature = 1 gives a perfectly calibrated model.
    Generated in row chunks, so the transient memory is O(chunk * C), not O(N * C).
    """
    N, C = int(N), int(C)
    rng = np.random.default_rng(seed)
    probs = np.empty((N, C), dtype=np.float32)
    labels = np.empty(N, dtype=np.int64)
    if chunk is None:
        chunk = max(1, min(_CHUNK, (1 << 25) // C))  # <= 32M logits per chunk
    hi = 2.0 * np.log(C) + 4.0
    for s in range(0, N, chunk):
        e = min(N, s + chunk)
        n = e - s
        z = rng.standard_normal((n, C), dtype=np.float32)
        z[np.arange(n), rng.integers(0, C, n)] += rng.uniform(0.0, hi, n).astype(np.float32)
        zz = z - z.max(axis=1, keepdims=True)
        ez = np.exp(zz)
        probs[s:e] = ez / ez.sum(axis=1, keepdims=True)
        # labels ~ Categorical(softmax(true_temperature * z)), float64 CDF
        et = np.exp(true_temperature * zz.astype(np.float64))
        cdf = np.cumsum(et, axis=1)
        u = rng.random(n) * cdf[:, -1]
        lab = (cdf < u[:, None]).sum(axis=1)
        labels[s:e] = np.minimum(lab, C - 1)
        del z, zz, ez, et, cdf
    return probs, labels


def make_binary(
    N: int, seed: int = 0, true_power: float = 1.0, chunk: int = _CHUNK * 4
) -> tuple[np.ndarray, np.ndarray]:
    """Binary benchmark data: ``p`` float64 (N,) ~ Uniform[0, 1) -- the predicted probability
    of label 1 -- and ``y`` **int8** (N,) in {0, 1}, y ~ Bernoulli(p ** true_power).

    int8 (not bool) because uncertainty-calibration rejects non-integer labels and torch/
    sklearn accept int8; it costs 1 byte/row like bool.  ``true_power=1`` (default) is exactly
    y ~ Bernoulli(p), a calibrated predictor; other values give a miscalibrated one.
    Generated in chunks of 16M rows, so N = 1e8 needs 0.9 GB (the outputs) + ~0.3 GB transient.
    """
    N = int(N)
    rng = np.random.default_rng(seed)
    p = np.empty(N, dtype=np.float64)
    y = np.empty(N, dtype=np.int8)
    for s in range(0, N, chunk):
        e = min(N, s + chunk)
        ps = rng.random(e - s)
        p[s:e] = ps
        q = ps if true_power == 1.0 else ps**true_power
        np.less(rng.random(e - s), q, out=y[s:e], casting="unsafe")
        del ps, q
    return p, y


# --------------------------------------------------------------------------------------------
# formatting
# --------------------------------------------------------------------------------------------
def fmt_seconds(s: float | None) -> str:
    if s is None or not np.isfinite(s):
        return "-"
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.1f} ms"
    return f"{s * 1e6:.0f} us"


def fmt_bytes(b: float | None) -> str:
    if b is None:
        return "-"
    for unit, k in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(b) >= k:
            return f"{b / k:.2f} {unit}"
    return f"{b:.0f} B"


if __name__ == "__main__":  # quick self-check
    bw = read_bandwidth()
    print(
        f"read bandwidth: {bw.gb_per_s:.2f} GB/s "
        f"({fmt_seconds(bw.best_s)} for {fmt_bytes(bw.nbytes)})"
    )
    p, y = make_binary(10**6, seed=1)
    print("binary", p.dtype, y.dtype, p.mean(), y.mean())
    P, L = make_topLabel(10**5, 10, seed=1)
    print(
        "topLabel",
        P.dtype,
        L.dtype,
        np.abs(P.sum(1) - 1).max(),
        P.max(1).mean(),
        (P.argmax(1) == L).mean(),
    )
    print("extra mem of np.sort copy of 8 MB:", fmt_bytes(peak_extra_memory(np.sort, p)))
    print(os.getpid(), timeit(np.sort, p).best)


def on_kernel_path(kernel: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` run with ``CALIBKIT_KERNEL=kernel`` (numba or numpy), the setting restored after."""

    def run(*args: Any) -> Any:
        before = os.environ.get("CALIBKIT_KERNEL")
        os.environ["CALIBKIT_KERNEL"] = kernel
        try:
            return fn(*args)
        finally:
            if before is None:
                del os.environ["CALIBKIT_KERNEL"]
            else:
                os.environ["CALIBKIT_KERNEL"] = before

    return run


#: Peers that failed to import, with the reason (a failed peer only removes itself).
IMPORT_ERRORS: dict[str, str] = {}


def try_import(name: str, stmt: Callable[[], Any]) -> Any:
    """``stmt()`` (an import), or None with the error recorded in :data:`IMPORT_ERRORS`."""
    try:
        return stmt()
    except Exception as e:  # noqa: BLE001
        IMPORT_ERRORS[name] = f"{type(e).__name__}: {e}"
        return None
