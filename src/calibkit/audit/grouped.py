"""The result of an audit by group: the audit of all rows, one audit per group over the same
bins, and the groups whose ECE lies beyond their own noise floor at a family-wise level."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import _display
from ..engines.groups import group_label
from .result import Audit

__all__ = ["GroupedAudit"]

#: A group needs this many rows to be compared with its noise floor (and flagged).
MIN_GROUP_ROWS = 2
#: Rows at least that the calibration slope of a group is fitted from (as the audit's own fit).
MIN_SLOPE_ROWS = 3


@dataclass(frozen=True, eq=False)
class GroupedAudit:
    """An audit per group beside the audit of all rows.

    ``pooled`` is the :class:`Audit` of every row (what ``ck.audit`` without ``by=`` returns);
    ``groups`` maps each group value, in sorted order, to its :class:`Audit` over the pooled
    bins (the pooled quantile edges when ``strategy="quantile"``), so the groups are
    comparable. A group is flagged when its ECE exceeds ``thresholds[group]``: the
    ``per_group_level`` quantile of its own noise floor, ``per_group_level = 1 - (1 - level) /
    k`` for the ``k`` groups compared (Bonferroni), so that when every group is calibrated the
    chance of any flag is at most ``1 - level``. Groups of fewer than :data:`MIN_GROUP_ROWS`
    rows are audited but not compared; ``notes`` says so, and why a group has no slope.
    """

    by: str
    pooled: Audit
    groups: Mapping[Any, Audit]
    thresholds: Mapping[Any, float | None]
    level: float
    per_group_level: float
    n_sims_flag: int
    notes: Mapping[Any, tuple[str, ...]] = field(default_factory=dict)

    @property
    def compared(self) -> tuple[Any, ...]:
        """The groups compared with their noise floor (those with enough rows)."""
        return tuple(g for g, t in self.thresholds.items() if t is not None)

    @property
    def flagged(self) -> tuple[Any, ...]:
        """The groups whose ECE is beyond their noise floor at the family-wise level."""
        return tuple(g for g in self.compared if self.is_flagged(g))

    def is_flagged(self, group: Any) -> bool:
        threshold = self.thresholds[group]
        return threshold is not None and self.groups[group].ece > threshold

    def slope(self, group: Any) -> tuple[float, float] | None:
        """The group's calibration slope and intercept (calibration-in-the-large: the
        logistic intercept at slope 1), or None where it has none (:meth:`slope_note` says
        why)."""
        s = self.groups[group].calibration_slope
        if self.slope_note(group) is not None or s is None:
            return None
        return s.slope, s.in_the_large

    def slope_note(self, group: Any) -> str | None:
        """Why the group has no calibration slope, or None when it has one."""
        a = self.groups[group]
        if a.n < MIN_SLOPE_ROWS:
            return f"{a.n} {'row' if a.n == 1 else 'rows'}: too few to fit a slope"
        positives = float(a.stats.sum_outcome.sum())
        if positives in (0.0, float(a.n)):
            if a.kind == "top-label":
                one = "every prediction is right" if positives else "no prediction is right"
            else:
                one = f"every label is {1 if positives else 0}"
            return f"{one}: one outcome only, no slope"
        s = a.calibration_slope
        if s is None:
            return "the slope was not fitted"
        if not s.defined:
            return f"slope undefined: {s.note}"
        return None

    def verdict(self) -> str:
        """How many groups were compared, at what family-wise level, which are beyond noise;
        then the verdict of all rows."""
        k = len(self.compared)
        pooled = f"All rows: {self.pooled.verdict()}"
        if k == 0:
            return (
                f"No group by {self.by} has the {MIN_GROUP_ROWS} rows needed to compare its ECE "
                f"with its noise floor. {pooled}"
            )
        how = (
            f"{k} {'group' if k == 1 else 'groups'} by {self.by} compared at family-wise level "
            f"{self.level:.0%} (Bonferroni: each group's ECE against the "
            f"{self.per_group_level:.2%} quantile of its own noise floor)"
        )
        flagged = self.flagged
        if not flagged:
            return f"No group is miscalibrated beyond noise; {how}. {pooled}"
        names = ", ".join(str(group_label(g)) for g in flagged[:8])
        more = f" and {len(flagged) - 8} more" if len(flagged) > 8 else ""
        return (
            f"{len(flagged)} of {k} groups miscalibrated beyond noise: {names}{more}; {how}. "
            f"{pooled}"
        )

    #: Columns of :meth:`rows`.
    HEADER = ("group", "N", "acc", "conf", "ECE", "interval", "floor", "slope", "intercept", "")

    def rows(self) -> list[tuple[str, ...]]:
        """Rows of the table (one per group, then ``all`` for the pooled audit): group, N,
        observed frequency of the event, mean confidence, ECE, its interval, the noise floor's
        mean, the calibration slope and intercept, and the flag."""
        out = []
        for g, a in self.groups.items():
            fit = self.slope(g)
            if self.thresholds[g] is None:
                flag = "too small"
            else:
                flag = "BEYOND NOISE" if self.is_flagged(g) else ""
            out.append(_row(str(group_label(g)), a, fit, flag))
        p = self.pooled
        s = p.calibration_slope
        fit = (s.slope, s.in_the_large) if s is not None and s.defined else None
        out.append(_row("all", p, fit, ""))
        return out

    def note(self) -> str:
        """How to read the table."""
        table = self.pooled.table
        return (
            f"acc: observed frequency of the event; conf: mean confidence; M = "
            f"{self.pooled.n_bins} {table.strategy} bins of all rows, shared by every group; "
            f"interval: {self.pooled.ece_interval.level:.0%} bootstrap; floor: mean ECE of a "
            "calibrated forecaster with the group's confidences; slope and intercept: logistic "
            "calibration (1 and 0 = calibrated; intercept at slope 1); BEYOND NOISE: ECE above "
            f"the {self.per_group_level:.2%} quantile of the group's noise floor "
            f"({self.n_sims_flag} simulations)"
        )

    def table_lines(self) -> list[str]:
        """The header and :meth:`rows` as aligned text, one line each."""
        rows = [self.HEADER, *self.rows()]
        widths = [max(len(r[i]) for r in rows) for i in range(len(self.HEADER))]
        return [
            "  ".join(
                cell.ljust(w) if i == 0 else cell.rjust(w)
                for i, (cell, w) in enumerate(zip(r, widths, strict=True))
            ).rstrip()
            for r in rows
        ]

    def _repr_html_(self) -> str:
        """What a notebook shows: the HTML report's section for this result."""
        return _display.html(self)

    def __str__(self) -> str:
        lines = [*self.table_lines(), "", self.note()]
        lines += [
            f"note: {group_label(g)}: {text}" for g, texts in self.notes.items() for text in texts
        ]
        return "\n".join([f"calibkit audit by {self.by}", "", *lines, "", self.verdict()])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary: the settings, each group's numbers and full audit, the pooled
        audit, the flagged groups and the verdict."""
        groups = []
        for g, a in self.groups.items():
            fit = self.slope(g)
            groups.append(
                {
                    "group": group_label(g),
                    "n": a.n,
                    "accuracy": a.accuracy,
                    "observed": a.accuracy_of_event,
                    "mean_confidence": a.mean_confidence,
                    "ece": a.ece,
                    "ece_interval": a.ece_interval.to_dict(),
                    "noise_floor": a.noise_floor.to_dict(),
                    "flag_threshold": self.thresholds[g],
                    "compared": self.thresholds[g] is not None,
                    "flagged": self.is_flagged(g),
                    "slope": None if fit is None else fit[0],
                    "intercept": None if fit is None else fit[1],
                    "slope_note": self.slope_note(g),
                    "notes": list(self.notes.get(g, ())),
                    "audit": a.to_dict(),
                }
            )
        return {
            "by": self.by,
            "level": self.level,
            "per_group_level": self.per_group_level,
            "n_compared": len(self.compared),
            "n_sims_flag": self.n_sims_flag,
            "groups": groups,
            "flagged": [group_label(g) for g in self.flagged],
            "pooled": self.pooled.to_dict(),
            "verdict": self.verdict(),
        }


def _row(name: str, a: Audit, fit: tuple[float, float] | None, flag: str) -> tuple[str, ...]:
    ci = a.ece_interval
    return (
        name,
        str(a.n),
        f"{a.accuracy_of_event:.3f}",
        f"{a.mean_confidence:.3f}",
        f"{a.ece:.4f}",
        f"[{ci.low:.4f}, {ci.high:.4f}]",
        f"{a.noise_floor.mean:.4f}",
        "-" if fit is None else f"{fit[0]:.3f}",
        "-" if fit is None else f"{fit[1]:+.3f}",
        flag,
    )
