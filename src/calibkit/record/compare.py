"""Comparing two calibration records: did calibration move beyond noise between two cohorts or
time windows? A calibration estimate describes one population: when a new cohort moves the
reliability points away from the diagonal, it needs its own audit, not a defence of the old ECE.

:func:`compare_records` works from the records alone (their per-bin sufficient statistics), so
an old audit can be challenged without its data. It refuses records that do not measure the
same thing: other bins (edges or closed side), another event, another outcome definition.

How "beyond noise" is decided
-----------------------------
ECE is biased upward by an amount that shrinks with N, so two cohorts of one perfectly
calibrated model have different ECEs when their sizes differ, and a bootstrap interval of
``ECE_new - ECE_old`` excludes 0 far too often (simulated, 15 equal-width bins, calibrated model:
23% of the time for N = 5000 against 1000 with the basic bootstrap, 98% with the percentile
bootstrap, where 5% is promised). So the observed change is read against its *noise band*: the
central ``level`` range of the changes that arise when calibration did not move. It is simulated
as the noise floor of an audit is: each record keeps its bin counts and confidence sums, both get
the same per-bin gap (the pooled gap of the two), and each bin's sum of ``y - p`` is drawn from
its normal limit with the Bernoulli variance of those forecasts, ``sum (p + g)(1 - p - g)``
(from the recorded sums of p and p^2). The change moved beyond noise when it lies outside the
band (two-sided ``p`` below ``1 - level``); in the same simulation the false-alarm rate stayed
between 3% and 7% at a nominal 5% for equal and unequal N.

Each bin's change of accuracy has Newcombe's hybrid score interval (from the two Wilson
intervals); a bin is flagged when the interval of its change of *gap* (accuracy minus mean
confidence: the accuracy interval moved by the change in the bin's mean confidence) excludes 0,
so a bin whose points only slid along the diagonal is not flagged. With many bins some flags
are expected by chance alone; the text says how many.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import _validate as v
from .._errors import InputError
from ..measure.change import ece_change_band
from ..measure.errors import ece_from_stats
from .comparison import BinChange, RecordComparison, _shown
from .document import record_name
from .signing import check_record
from .verify import record_stats

__all__ = ["BinChange", "RecordComparison", "compare_records"]


_CONTEXT_SHOWN = ("model", "checkpoint", "population", "data_window")


def compare_records(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    *,
    level: float = 0.95,
    n_sims: int = 2000,
    seed: int = 0,
    key: str | bytes | None = None,
    verify: bool = True,
    require_signature: bool = False,
) -> RecordComparison:
    """Whether calibration moved beyond noise from the ``old`` record to the ``new`` one.

    Parameters
    ----------
    old, new : dict
        Calibration records (:func:`~calibkit.record.calibration_record`,
        :func:`~calibkit.record.read_record`); both are checked against the schema.
    level : float
        Level of the noise band of the ECE change and of every bin's interval.
    n_sims : int
        Simulated pairs of cohorts behind the noise band.
    seed : int
        Seed of the simulation (same seed, same band).
    key, verify, require_signature
        How each record's integrity is checked (:func:`~calibkit.record.check_record`):
        an edited record, or one whose signature does not verify with the key (by default the
        one in ``CALIBKIT_RECORD_KEY``), is refused unless ``verify=False``; with
        ``require_signature=True`` an unsigned or unverifiable one is refused too. The result
        says for each record whether it was signed and verified, signed but not verified, or
        only digest-checked (``trust_old``, ``trust_new``).

    Raises
    ------
    InputError
        When a record was edited or its signature does not verify (see above), or the records
        do not measure the same thing, saying why: other bin edges or closed side, another
        event (top-label against binary), another outcome definition.

    Examples
    --------
    Two halves of one calibrated model's predictions are within noise:

    >>> import numpy as np, calibkit as ck
    >>> from calibkit.record import calibration_record
    >>> from calibkit.record import compare_records
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0, 1, 4000); y = (rng.random(4000) < p).astype(int)
    >>> a, b = (ck.audit(p[s], y[s], n_boot=100, n_sims=100) for s in (slice(0, 2000),
    ...                                                                    slice(2000, None)))
    >>> c = compare_records(calibration_record(a), calibration_record(b))
    >>> c.moved, c.verdict().startswith("calibration within noise")
    (False, True)
    """
    where = "compare_records"
    trust_old, trust_new = (
        check_record(
            record,
            key=key,
            verify=verify,
            require_signature=require_signature,
            where=f"{where}: {which} record",
        )
        for which, record in (("old", old), ("new", new))
    )
    level = v.level(level, where=where)
    n_sims = v.positive_int(n_sims, name="n_sims", where=where)
    seed = v.positive_int(seed, name="seed", where=where, minimum=0)
    _refuse_if_incomparable(old, new, where=where)

    s_old, s_new = record_stats(old), record_stats(new)
    ece_old, ece_new = float(ece_from_stats(s_old)), float(ece_from_stats(s_new))
    band = ece_change_band(s_old, s_new, level=level, n_sims=n_sims, seed=seed)
    change, low, high, p_value, moved = (
        band.change,
        band.low,
        band.high,
        band.p_value,
        band.moved,
    )

    return RecordComparison(
        old_name=record_name(old),
        new_name=record_name(new),
        n_old=s_old.n,
        n_new=s_new.n,
        event=old["data"]["event"],
        outcome_definition=old["context"]["outcome_definition"],
        strategy=old["binning"]["strategy"],
        closed=s_old.closed,
        edges=tuple(float(e) for e in s_old.edges),
        ece_old=ece_old,
        ece_new=ece_new,
        ece_change=change,
        noise_low=low,
        noise_high=high,
        p_value=p_value,
        moved=moved,
        level=level,
        n_sims=n_sims,
        seed=seed,
        bins=_bin_changes(s_old, s_new, level),
        temperature_old=_temperature(old),
        temperature_new=_temperature(new),
        differences=_differences(old, new),
        trust_old=trust_old,
        trust_new=trust_new,
    )


# ----------------------------------------------------------------------------- refusal


def _refuse_if_incomparable(old: Mapping[str, Any], new: Mapping[str, Any], *, where: str) -> None:
    b_old, b_new = old["binning"], new["binning"]
    if b_old["closed"] != b_new["closed"]:
        raise InputError(
            f"{where}: refusing to compare: the records bin differently (old bins are "
            f"{b_old['closed']}-closed, new bins {b_new['closed']}-closed), so a confidence on an "
            "edge falls in different bins; audit both with the same --closed."
        )
    if b_old["edges"] != b_new["edges"]:
        fix = (
            "quantile edges come from each cohort's own confidences; audit both with "
            "--strategy uniform (or the same explicit edges)"
            if "quantile" in (b_old["strategy"], b_new["strategy"])
            else f"audit both with the same --bins and --strategy (old: --bins "
            f"{b_old['n_bins']} --strategy {b_old['strategy']})"
        )
        raise InputError(
            f"{where}: refusing to compare: the bin edges differ (old: {_binning(b_old)}; new: "
            f"{_binning(b_new)}), so the bins are not the same forecasts; {fix}."
        )
    e_old, e_new = old["data"]["event"], new["data"]["event"]
    if e_old != e_new:
        raise InputError(
            f"{where}: refusing to compare: the records forecast different events (old: "
            f"{e_old}, new: {e_new}); audit both from the same kind of predictions."
        )
    d_old = old["context"]["outcome_definition"]
    d_new = new["context"]["outcome_definition"]
    if d_old != d_new:
        raise InputError(
            f"{where}: refusing to compare: the outcome definitions differ (old: "
            f"{_shown(d_old)}; new: {_shown(d_new)}), so the records measure different things; "
            "a calibrator belongs to one measurement contract. Audit both under one definition "
            "(--outcome-definition)."
        )


def _binning(b: Mapping[str, Any]) -> str:
    return f"{b['n_bins']} {b['strategy']} bins, {b['closed']}-closed"


# ----------------------------------------------------------------------------- numbers


def _bin_changes(s_old: Any, s_new: Any, level: float) -> tuple[BinChange, ...]:
    from ..measure.intervals import binomial_interval

    n1, n2 = s_old.count, s_new.count
    k1, k2 = np.rint(s_old.sum_outcome), np.rint(s_new.sum_outcome)
    l1, u1 = binomial_interval(k1, n1, method="wilson", level=level)
    l2, u2 = binomial_interval(k2, n2, method="wilson", level=level)
    p1, p2 = s_old.acc, s_new.acc
    c1, c2 = s_old.conf, s_new.conf
    change = p2 - p1
    # Newcombe (1998), method 10: hybrid score interval for p2 - p1 from the Wilson limits
    low = change - np.sqrt((p2 - l2) ** 2 + (u1 - p1) ** 2)
    high = change + np.sqrt((u2 - p2) ** 2 + (p1 - l1) ** 2)
    shift = c2 - c1
    g1, g2 = p1 - c1, p2 - c2
    out = []
    for b in range(s_old.n_bins):
        both = n1[b] > 0 and n2[b] > 0
        gap_low, gap_high = low[b] - shift[b], high[b] - shift[b]
        out.append(
            BinChange(
                lo=float(s_old.edges[b]),
                hi=float(s_old.edges[b + 1]),
                count_old=int(n1[b]),
                count_new=int(n2[b]),
                conf_old=float(c1[b]),
                conf_new=float(c2[b]),
                acc_old=float(p1[b]),
                acc_new=float(p2[b]),
                acc_change=float(change[b]) if both else math.nan,
                acc_low=float(low[b]) if both else math.nan,
                acc_high=float(high[b]) if both else math.nan,
                gap_old=float(g1[b]),
                gap_new=float(g2[b]),
                gap_change=float(g2[b] - g1[b]) if both else math.nan,
                gap_low=float(gap_low) if both else math.nan,
                gap_high=float(gap_high) if both else math.nan,
                moved=bool(both and (gap_low > 0 or gap_high < 0)),
            )
        )
    return tuple(out)


def _temperature(record: Mapping[str, Any]) -> float | None:
    calibrator = record["calibrator"]
    if calibrator is None or calibrator["kind"] != "temperature":
        return None
    value = calibrator["state"].get("temperature")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _differences(
    old: Mapping[str, Any], new: Mapping[str, Any]
) -> tuple[tuple[str, Any, Any], ...]:
    pairs: list[tuple[str, Any, Any]] = []
    for name in _CONTEXT_SHOWN:
        pairs.append((name, old["context"][name], new["context"][name]))
    pairs.append(("scores_kind", old["data"]["scores_kind"], new["data"]["scores_kind"]))
    pairs.append(("n_classes", old["data"]["n_classes"], new["data"]["n_classes"]))
    c_old, c_new = old["calibrator"], new["calibrator"]
    pairs.append(
        (
            "calibrator",
            None if c_old is None else c_old["kind"],
            None if c_new is None else c_new["kind"],
        )
    )
    pairs.append(("calibkit", old["software"]["calibkit"], new["software"]["calibkit"]))
    return tuple((name, a, b) for name, a, b in pairs if a != b)
