"""The result of comparing two calibration records (:func:`~calibkit.record.compare_records`):
each bin's change (:class:`BinChange`) and the whole comparison (:class:`RecordComparison`), with
the verdict, the table and the JSON they are read in."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .signing import RecordTrust

__all__ = ["BinChange", "RecordComparison"]


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
