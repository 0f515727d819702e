"""Label-free monitoring of a file or table: fit on the labelled reference period, estimate
and test every other period from its scores, and show the accuracy of the periods that have
labels (``calibkit monitor --no-labels``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._errors import InputError
from ..engines.groups import table_groups
from ..io import open_any, read_partly_labelled
from .estimator import PerformanceEstimator
from .periods import PeriodEstimates, period_keys

__all__ = ["estimate_by_period"]


def estimate_by_period(
    data: Any,
    *,
    by: Any,
    reference: Any = None,
    time: str | None = None,
    format: str | None = None,
    probs: Any = None,
    logits: Any = None,
    confidence: str | None = None,
    label: str | None = None,
    correct: str | None = None,
    method: str = "cbpe",
    calibrator: Any = "isotonic",
    threshold: float | None = None,
    level: float = 0.95,
    n_boot: int = 200,
    seed: int = 0,
) -> PeriodEstimates:
    """Estimate every period of a file (or table) from confidence alone, with shift alarms.

    The ``reference`` period (default: the first) must have a label on every row: the
    estimator (``method``, ``calibrator``: as :class:`PerformanceEstimator`) is fitted on it.
    Every other period is estimated from its scores and tested against the reference (see
    :meth:`PerformanceEstimator.by_period`); labels, where a period has them all, are shown
    beside its estimate. Empty, NA or null label cells mean "no label yet".

    Parameters
    ----------
    data : path, DataFrame or pyarrow Table
        Predictions read as :func:`calibkit.io.read_predictions` reads them (columns
        detected, or named by ``probs``, ``logits``, ``confidence``, ``label``, ``correct``).
    by : str or array
        A column, or ``"day"``, ``"week"``, ``"month"`` of the ``time`` column (as for
        :func:`calibkit.monitor`).

    Examples
    --------
    >>> import pathlib, tempfile, numpy as np, calibkit as ck
    >>> rng = np.random.default_rng(1)
    >>> conf = rng.uniform(0.5, 1, 1500); right = (rng.random(1500) < conf).astype(int)
    >>> week = np.repeat(["w1", "w2", "w3"], 500)
    >>> lines = ["week,confidence,correct"] + [
    ...     f"{w},{c:.4f},{r if w == 'w1' else ''}" for w, c, r in zip(week, conf, right)
    ... ]
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "late.csv"
    >>> _ = path.write_text("\\n".join(lines) + "\\n")
    >>> m = ck.estimate_by_period(path, by="week", n_boot=50)
    >>> [p.period for p in m.periods], m.shifted
    (['w2', 'w3'], ())
    """
    where = "estimate_by_period"
    src = open_any(data, format)
    keys, _ = table_groups(src, by, time, where)
    read = read_partly_labelled(
        src, probs=probs, logits=logits, confidence=confidence, label=label, correct=correct
    )
    names, rows = period_keys(keys, read.scores.shape[0], where=where)
    if len(names) < 2:
        raise InputError(
            f"{where}: by={by!r} gives one period ({names[0]!r}); label-free monitoring "
            "compares the periods with a labelled reference period, so it needs two or more."
        )
    if reference is None:
        i = 0
    else:
        found = [j for j, k in enumerate(names) if k == reference or str(k) == str(reference)]
        if not found:
            shown = ", ".join(str(k) for k in names[:10])
            raise InputError(f"{where}: no period {reference!r}; the periods are {shown}.")
        i = found[0]
    ref_rows = rows[i]
    missing = np.isnan(read.labels[ref_rows])
    if missing.any():
        row = int(ref_rows[np.flatnonzero(missing)[0]])
        raise InputError(
            f"{where}: the reference period {names[i]!r} has {int(missing.sum())} rows without "
            f"a label (first at row {row}); the estimator is fitted on it, so every row needs "
            "one. Pick a labelled period with reference= (--reference)."
        )
    estimator = PerformanceEstimator(
        method=method, calibrator=calibrator, from_logits=read.kind == "logits"
    )
    estimator.fit(read.scores[ref_rows], read.labels[ref_rows].astype(np.int64))
    rest = np.sort(np.concatenate([r for j, r in enumerate(rows) if j != i]))
    return estimator.by_period(
        read.scores[rest],
        np.asarray(keys)[rest] if not isinstance(keys, list) else [keys[k] for k in rest],
        target_labels=read.labels[rest],
        threshold=threshold,
        level=level,
        n_boot=n_boot,
        seed=seed,
    )
