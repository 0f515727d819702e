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
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _validate as v
from .._errors import InputError
from ..measure.change import ece_change_band
from ..measure.errors import ece_from_stats
from .document import record_name
from .signing import RecordTrust, check_record
from .verify import record_stats

__all__ = ["BinChange", "RecordComparison", "compare_records"]

_CONTEXT_SHOWN = ("model", "checkpoint", "population", "data_window")


@dataclass(frozen=True)
class BinChange:
    """One bin of two records: counts, mean confidence, accuracy and gap (accuracy minus
    confidence; negative is overconfident) of each, the change of accuracy with Newcombe's
    interval, and the change of gap with the same interval moved by the change of confidence.
    Changes are NaN unless both records have forecasts in the bin; ``moved`` is True when the
    gap change's interval excludes 0."""

    lo: float
    hi: float
    count_old: int
    count_new: int
    conf_old: float
    conf_new: float
    acc_old: float
    acc_new: float
    acc_change: float
    acc_low: float
    acc_high: float
    gap_old: float
    gap_new: float
    gap_change: float
    gap_low: float
    gap_high: float
    moved: bool

    @property
    def compared(self) -> bool:
        return self.count_old > 0 and self.count_new > 0

    @property
    def direction(self) -> str:
        """ "away from the diagonal", "toward the diagonal", or "" when not moved."""
        if not self.moved:
            return ""
        return (
            "away from the diagonal"
            if abs(self.gap_new) > abs(self.gap_old)
            else "toward the diagonal"
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            out[name] = None if isinstance(value, float) and not math.isfinite(value) else value
        out["direction"] = self.direction or None
        return out


@dataclass(frozen=True, eq=False)
class RecordComparison:
    """Two calibration records side by side: the change of ECE against its noise band, the
    per-bin changes, the change of the fitted temperature, and what else differs.

    ``ece_change`` = ECE(new) - ECE(old); ``noise_low``/``noise_high`` the central ``level``
    range of that change when calibration did not move (simulated from the records' per-bin
    sums, ``n_sims`` draws, ``seed``); ``p_value`` two-sided; ``moved`` True when the change
    lies outside the band.
    """

    old_name: str
    new_name: str
    n_old: int
    n_new: int
    event: str
    outcome_definition: str | None
    strategy: str
    closed: str
    edges: tuple[float, ...]
    ece_old: float
    ece_new: float
    ece_change: float
    noise_low: float
    noise_high: float
    p_value: float
    moved: bool
    level: float
    n_sims: int
    seed: int
    bins: tuple[BinChange, ...]
    temperature_old: float | None
    temperature_new: float | None
    differences: tuple[tuple[str, Any, Any], ...]
    trust_old: RecordTrust = RecordTrust("digest-only")
    trust_new: RecordTrust = RecordTrust("digest-only")

    @property
    def moved_bins(self) -> tuple[BinChange, ...]:
        return tuple(b for b in self.bins if b.moved)

    @property
    def n_compared(self) -> int:
        """Bins with forecasts in both records."""
        return sum(b.compared for b in self.bins)

    @property
    def temperature_change(self) -> float | None:
        if self.temperature_old is None or self.temperature_new is None:
            return None
        return self.temperature_new - self.temperature_old

    def bin_label(self, k: int) -> str:
        """Bin ``k`` as the reliability table writes it."""
        return _bin_label(self.bins[k], k, len(self.bins), self.closed)

    def verdict(self) -> str:
        """One line: moved beyond noise or within noise, with the numbers that say so."""
        pct = _pct(self.level)
        change = (
            f"ECE {self.ece_old:.4f} -> {self.ece_new:.4f} (change {self.ece_change:+.4f}; "
            f"{pct}% noise band [{self.noise_low:+.4f}, {self.noise_high:+.4f}], "
            f"{_p(self.p_value)})"
        )
        moved = self.moved_bins
        away = [b for b in moved if b.direction == "away from the diagonal"]
        expected = (1.0 - self.level) * self.n_compared
        bins = (
            f"{len(moved)} of {self.n_compared} bins changed beyond their {pct}% intervals "
            f"({len(away)} away from the diagonal; about {expected:.1f} expected by chance)"
        )
        if self.moved:
            worse = "worse" if self.ece_change > 0 else "better"
            head = f"calibration moved beyond noise ({worse})"
        else:
            head = "calibration within noise"
        tail = f"; {bins}" if moved else ""
        if self.temperature_change is not None:
            tail += f"; fitted temperature {self.temperature_old:.4g} -> {self.temperature_new:.4g}"
        return f"{head}: {change}{tail}."

    def header(self) -> list[str]:
        """Lines that say what is compared with what, and on which common contract."""
        kind = {"top-label": "top-label (the argmax is correct)", "binary": "label = 1"}
        lines = [
            f"old: {self.old_name}, N = {self.n_old}",
            f"new: {self.new_name}, N = {self.n_new}",
            f"old record: {self.trust_old}",
            f"new record: {self.trust_new}",
            f"same contract: event {kind.get(self.event, self.event)}, outcome definition "
            + (repr(self.outcome_definition) if self.outcome_definition else "(stated in neither)")
            + f", M = {len(self.edges) - 1} {self.strategy} bins, {self.closed}-closed",
        ]
        for name, old, new in self.differences:
            lines.append(f"differs: {name}: {_shown(old)} -> {_shown(new)}")
        return lines

    def notes(self) -> list[str]:
        """Lines under the bin table: the temperature and how the band was made."""
        lines = []
        if self.temperature_change is not None:
            t_old, t_new = self.temperature_old, self.temperature_new
            assert t_old is not None and t_new is not None
            lines.append(
                f"fitted temperature: {t_old:.4g} -> {t_new:.4g} ({t_new - t_old:+.4g}, "
                f"{(t_new / t_old - 1):+.1%}); a different T means the old calibrator no longer "
                "fits the new cohort."
            )
        elif self.temperature_old is not None or self.temperature_new is not None:
            which = "old" if self.temperature_old is not None else "new"
            lines.append(f"fitted temperature: only the {which} record carries one.")
        lines.append(
            f"noise band: {_pct(self.level)}% of the ECE changes when calibration does not move "
            f"(both records given their pooled per-bin gap; {self.n_sims} simulations, seed "
            f"{self.seed})."
        )
        lines.append(
            "bins: gap = accuracy - mean confidence (negative: overconfident); d acc with "
            "Newcombe's hybrid score interval; a bin moved (away from or toward the diagonal) "
            "when that interval, shifted by the change in mean confidence, excludes a zero "
            "change of gap; 'new': forecasts only in the new record, 'gone': only in the old."
        )
        return lines

    def table_rows(self) -> list[tuple[str, ...]]:
        """(bin, N old, N new, gap old, gap new, change of acc [interval], change of gap
        [interval], flag) for every bin with forecasts in either record."""
        rows: list[tuple[str, ...]] = []
        for k, b in enumerate(self.bins):
            if b.count_old == 0 and b.count_new == 0:
                continue
            label = self.bin_label(k)
            if b.compared:
                acc = f"{b.acc_change:+.3f} [{b.acc_low:+.3f}, {b.acc_high:+.3f}]"
                gap = f"{b.gap_change:+.3f} [{b.gap_low:+.3f}, {b.gap_high:+.3f}]"
                flag = f"MOVED {b.direction}" if b.moved else ""
            else:
                acc = gap = "-"
                flag = "new" if b.count_old == 0 else "gone"
            rows.append(
                (
                    label,
                    str(b.count_old),
                    str(b.count_new),
                    _fmt(b.gap_old, "+.3f"),
                    _fmt(b.gap_new, "+.3f"),
                    acc,
                    gap,
                    flag,
                )
            )
        return rows

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary of every number and setting."""
        return {
            "old": {
                "name": self.old_name,
                "n": self.n_old,
                "ece": self.ece_old,
                "trust": self.trust_old.to_dict(),
            },
            "new": {
                "name": self.new_name,
                "n": self.n_new,
                "ece": self.ece_new,
                "trust": self.trust_new.to_dict(),
            },
            "event": self.event,
            "outcome_definition": self.outcome_definition,
            "binning": {
                "strategy": self.strategy,
                "closed": self.closed,
                "edges": list(self.edges),
            },
            "ece_change": self.ece_change,
            "noise_band": {
                "low": self.noise_low,
                "high": self.noise_high,
                "level": self.level,
                "n_sims": self.n_sims,
                "seed": self.seed,
                "method": "simulated under no change: each record keeps its bin counts and "
                "confidences, both get the pooled per-bin gap",
            },
            "p_value": self.p_value,
            "moved": self.moved,
            "bins": [b.to_dict() for b in self.bins],
            "n_bins_compared": self.n_compared,
            "n_bins_moved": len(self.moved_bins),
            "temperature": {
                "old": self.temperature_old,
                "new": self.temperature_new,
                "change": self.temperature_change,
            },
            "differences": [{"field": f, "old": o, "new": n} for f, o, n in self.differences],
            "verdict": self.verdict(),
        }

    def __str__(self) -> str:
        head = ("bin", "N old", "N new", "gap old", "gap new", "d acc [CI]", "d gap [CI]", "")
        body = self.table_rows()
        widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
        lines = ["calibkit compare", *self.header(), ""]
        lines.append(
            f"ECE  old {self.ece_old:.4f}  new {self.ece_new:.4f}  change "
            f"{self.ece_change:+.4f}  {_pct(self.level)}% noise band "
            f"[{self.noise_low:+.4f}, {self.noise_high:+.4f}]  {_p(self.p_value)}"
        )
        lines.append("")
        for r in [head, *body]:
            cells = [f"{r[0]:<{widths[0]}}"]
            cells += [f"{c:>{w}}" for c, w in zip(r[1:-1], widths[1:-1], strict=True)]
            cells.append(r[-1])
            lines.append("  ".join(cells).rstrip())
        lines += ["", *self.notes(), "", self.verdict()]
        return "\n".join(lines)


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


# ----------------------------------------------------------------------------- text


def _shown(x: Any) -> str:
    return "(not stated)" if x is None else repr(x) if isinstance(x, str) else str(x)


def _pct(level: float) -> str:
    return f"{level * 100:g}"


def _p(p: float) -> str:
    return f"p = {p:.3g}"


def _fmt(x: float, spec: str) -> str:
    return "-" if not math.isfinite(x) else format(x, spec)


def _bin_label(b: BinChange, k: int, m: int, closed: str) -> str:
    """As the reliability table writes it: ``(0.1, 0.2]``, the first right-closed bin ``[0, ...]``
    and the last left-closed one ``[..., 1]``."""
    left = "[" if closed == "left" or k == 0 else "("
    right = "]" if closed == "right" or k == m - 1 else ")"
    return f"{left}{_num(b.lo)}, {_num(b.hi)}{right}"


def _num(x: float) -> str:
    return f"{x:.4f}".rstrip("0").rstrip(".") or "0"
