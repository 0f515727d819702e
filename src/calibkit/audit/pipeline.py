"""One call that runs a whole calibration audit and returns an :class:`Audit`: validate once,
reduce to a forecast, let the engine sum it, compute the audit from the sums."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping
from typing import Any, overload

from .. import _validate as v
from ..engines import Binning, summarize_with_engine
from ..forecasts import batches_source, is_stream
from ..io import column_options, entry, naming_columns
from .grouped import GroupedAudit
from .result import Audit
from .summary import AUDIT_STAGES, Stages, audit_from_summary, checked_settings

__all__ = ["AUDIT_STAGES", "audit", "audit_from_summary"]


@overload
def audit(
    probs: Any,
    labels: Any = None,
    *,
    from_logits: bool = False,
    n_bins: int = 15,
    strategy: str = "uniform",
    closed: str = "right",
    edges: Any = None,
    interval: str | None = "wilson",
    level: float = 0.95,
    n_boot: int = 1000,
    n_sims: int = 1000,
    seed: int = 0,
    progress: Callable[[str, int, int], None] | None = None,
    engine: str | None = None,
    columns: Mapping[str, Any] | None = None,
    pos_label: Any = None,
    sample_weight: Any = None,
    by: None = None,
) -> Audit: ...


@overload
def audit(
    probs: Any,
    labels: Any = None,
    *,
    from_logits: bool = False,
    n_bins: int = 15,
    strategy: str = "uniform",
    closed: str = "right",
    edges: Any = None,
    interval: str | None = "wilson",
    level: float = 0.95,
    n_boot: int = 1000,
    n_sims: int = 1000,
    seed: int = 0,
    progress: Callable[[str, int, int], None] | None = None,
    engine: str | None = None,
    columns: Mapping[str, Any] | None = None,
    pos_label: Any = None,
    sample_weight: Any = None,
    by: Any,
) -> GroupedAudit: ...


def audit(
    probs: Any,
    labels: Any = None,
    *,
    from_logits: bool = False,
    n_bins: int = 15,
    strategy: str = "uniform",
    closed: str = "right",
    edges: Any = None,
    interval: str | None = "wilson",
    level: float = 0.95,
    n_boot: int = 1000,
    n_sims: int = 1000,
    seed: int = 0,
    progress: Callable[[str, int, int], None] | None = None,
    engine: str | None = None,
    columns: Mapping[str, Any] | None = None,
    pos_label: Any = None,
    sample_weight: Any = None,
    by: Any = None,
) -> Audit | GroupedAudit:
    """Audit the calibration of a model's predictions (with ``by=``, of each group too).

    Parameters
    ----------
    probs : array of shape (N,) or (N, C), or a table
        1-D: P(label = 1) for binary labels, or a confidence with ``labels`` as its 0/1 outcome.
        2-D: class probabilities (rows sum to 1), audited top-label. With ``from_logits=True``,
        scores/logits instead (sigmoid for 1-D, softmax for 2-D). A pandas or polars DataFrame
        or a pyarrow Table without ``labels`` is read like a prediction file: its columns are
        detected by the rules of :mod:`calibkit.io` (``prob_*``, ``logit_*``, ``label``,
        ``y_true``, ...) or named by ``columns``, and every message names the column and row.
    labels : array of shape (N,)
        0/1 for 1-D input, class indices 0..C-1 for 2-D input; with ``pos_label``, any two
        values (text too).
    pos_label : optional
        For a 1-D forecast, the label value it is the probability of: the outcome is
        ``labels == pos_label``. Labels written as text (``"benign"``/``"malignant"``) need it;
        without it the message lists their values.
    n_bins, strategy, closed, edges
        Binning of the reliability table and every binned measure (see :func:`reliability_bins`).
    interval, level
        Per-bin interval and the level of every interval.
    n_boot, n_sims, seed
        Bootstrap resamples for the ECE interval, simulations for its noise floor, and the seed
        of both (same seed, same numbers).
    progress : callable, optional
        Called as ``progress(stage, done, total)`` before each of the audit's stages and once at
        the end (``done == total``), e.g. to drive a progress bar on large inputs.
    engine : {"memory", "stream", "duckdb", "spark"}, optional
        Where the sums are computed (see :mod:`calibkit.engines`). Arrays default to
        ``"memory"``; an iterator of ``(probs, labels)`` chunks, or a callable returning one,
        to ``"stream"`` (never holding more than one chunk). With ``"duckdb"`` ``probs`` is a
        Parquet/CSV path or glob, with ``"spark"`` a Spark DataFrame (or a path); ``columns``
        names the columns as :func:`calibkit.io.read_predictions` takes them (``label``,
        ``probs``, ``logits``, ``confidence``, ``correct``, ``prediction``), detected when
        omitted. Every engine gives the in-memory numbers up to float rounding; the interval
        and the noise floor come from the bin sums there (their ``method`` says so).
    sample_weight : array of shape (N,) or str, optional
        One non-negative weight per row (arrays), or the name of the weight column of a table
        or file (the same as ``columns={"weight": name}``). Every measure is weighted: with
        integer weights, the numbers of the rows repeated; intervals, noise floor and tests
        use Kish's effective sample size (see docs/weights.md). The table keeps the raw count
        of each bin beside its weight.
    by : str or array, optional
        Audit each group as well: an array of one group value per row, or the name of a column
        of the table or file audited. Returns a :class:`GroupedAudit`: the audit of all rows
        (``.pooled``), one per group over the same bins (``.groups``; the quantile edges of all
        rows with ``strategy="quantile"``), and the groups whose ECE exceeds their own noise
        floor at the family-wise ``level`` (``.flagged``; Bonferroni over the groups compared,
        as :func:`calibkit.monitor` corrects). Runs on the memory engine; a missing group
        value is refused with its row.

    Examples
    --------
    >>> import numpy as np, calibkit as ck
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0, 1, 500); y = (rng.random(500) < p).astype(int)
    >>> a = ck.audit(p, y, n_boot=200, n_sims=200)
    >>> a.kind, a.n, a.n_bins, a.within_noise
    ('binary', 500, 15, True)

    A DataFrame with its own column names, labels written as words:

    >>> import pandas as pd
    >>> df = pd.DataFrame({"id": range(500), "p_spam": p, "truth": np.where(y, "spam", "ham")})
    >>> b = ck.audit(df, columns={"probs": "p_spam", "label": "truth"}, pos_label="spam",
    ...              n_boot=200, n_sims=200)
    >>> b.ece == a.ece
    True

    By group: the second half of the rows is overconfident (the event happens far less often
    than forecast), the first half is calibrated:

    >>> half = np.repeat(["calibrated", "drifted"], 250)
    >>> y2 = np.where(half == "drifted", (rng.random(500) < p**3).astype(int), y)
    >>> g = ck.audit(p, y2, by=half, n_boot=200, n_sims=200)
    >>> g.flagged, [a.n for a in g.groups.values()], g.pooled.n
    (('drifted',), [250, 250], 500)
    """
    where = "audit"
    if by is not None and (engine not in (None, "memory") or is_stream(probs)):
        raise v.InputError(
            f"{where}: by= runs on the memory engine (arrays, a table, or a file read into "
            f"memory), not on {'a stream' if engine in (None, 'stream') else repr(engine)}; "
            "leave engine= out, or use ck.monitor(data, by=..., engine=...) for each group's "
            "ECE and noise floor at scale."
        )
    if columns is not None:  # checked first: format= and weight= are read from it here
        columns = column_options(columns, where=where)
    path = probs if isinstance(probs, (str, os.PathLike)) else None
    fmt = None if columns is None else columns.get("format")
    if labels is None and (source := batches_source(probs)) is not None:
        probs = source
    if isinstance(sample_weight, str):  # a column of the table or file
        if dict(columns or {}).get("weight", sample_weight) != sample_weight:
            raise v.InputError(
                f"{where}: sample_weight={sample_weight!r} and columns['weight']="
                f"{dict(columns or {})['weight']!r} name two weight columns; give one."
            )
        columns, sample_weight = {**dict(columns or {}), "weight": sample_weight}, None
    given = entry(
        probs,
        labels,
        engine=engine,
        columns=columns,
        pos_label=pos_label,
        from_logits=from_logits,
        where=where,
    )
    probs, labels, columns = given.data, given.labels, given.columns
    from_logits = given.from_logits
    if given.read is not None and given.read.sample_weight is not None:
        sample_weight = given.read.sample_weight
    binning = Binning.checked(
        n_bins=n_bins, strategy=strategy, closed=closed, edges=edges, where=where
    )
    checked = checked_settings(
        interval=interval, level=level, n_boot=n_boot, n_sims=n_sims, seed=seed
    )
    in_memory = engine in (None, "memory") and not is_stream(probs)
    stages = Stages(progress if in_memory else None)
    stages.next()
    if by is not None:
        from .groups import audit_by

        return audit_by(
            given,
            path,
            fmt,
            by,
            binning=binning,
            checked=checked,
            stages=stages,
            where=where,
            sample_weight=sample_weight,
        )
    named = (
        naming_columns(given.read.columns, labels=given.labels)
        if given.read is not None
        else contextlib.nullcontext()
    )
    with named:
        summary = summarize_with_engine(
            probs,
            labels,
            engine=engine,
            columns=columns,
            from_logits=from_logits,
            binning=binning,
            where=where,
            progress=None if in_memory else progress,
            sample_weight=sample_weight,
        )
    return audit_from_summary(summary, **checked, stages=stages)
