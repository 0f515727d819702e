"""What a segment search returns: the segments carried from the search half to the held-out
half, each with its held-out numbers and whether it was confirmed there."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..measure.segment_change import SegmentChange
from ..measure.uncertainty import BootstrapInterval, NoiseFloor
from .features import Feature, Level

__all__ = ["Segment", "SegmentSearch"]


@dataclass(frozen=True, eq=False)
class Segment:
    """One segment (the rows at one level of one feature, or at one level of each of two),
    measured on the held-out half.

    ``ece`` is the segment's ECE over the search's equal-width bins, ``interval`` its bootstrap
    interval, ``noise_floor`` the ECE a calibrated forecaster with the segment's confidences
    would show; ``gap`` is ``ece - noise_floor.mean``, the miscalibration beyond noise that
    ranks the segments. ``test`` compares the segment's ECE with the ECE of the other rows
    (``rest_ece``, :func:`calibkit.measure.segment_change.segment_change`): ``confirmed`` when
    it is worse beyond noise at the one-sided level of the confirmation. ``as_rest`` is the ECE
    the segment would have if its forecasts in each bin were off by the rest's gap there (its
    own confidences, the rest's calibration): what the test measures the segment against.
    ``search_*`` are the numbers of the search half, where the segment was found. With sample
    weights, ``n`` (``rest_n``, ``n_search``) stays the raw row count and ``weight``
    (``rest_weight``, ``search_weight``) is the rows' total weight; unweighted, those are None.
    """

    levels: tuple[Level, ...]
    n: int
    observed: float
    mean_confidence: float
    ece: float
    interval: BootstrapInterval
    noise_floor: NoiseFloor
    rest_n: int
    rest_ece: float
    as_rest: float
    test: SegmentChange
    confirmed: bool
    n_search: int
    search_ece: float
    search_gap: float
    search_test: SegmentChange
    weight: float | None = None
    rest_weight: float | None = None
    search_weight: float | None = None

    @property
    def name(self) -> str:
        """The segment in words: ``qset = lsat_ar_test & llm = gpt-4o``."""
        return " & ".join(level.label for level in self.levels)

    @property
    def gap(self) -> float:
        """ECE beyond the noise floor (held-out)."""
        return self.ece - self.noise_floor.mean

    @property
    def gap_interval(self) -> tuple[float, float]:
        """The bootstrap interval of the ECE, less the noise floor."""
        return (
            self.interval.low - self.noise_floor.mean,
            self.interval.high - self.noise_floor.mean,
        )

    def to_dict(self) -> dict[str, Any]:
        return (
            {
                "segment": self.name,
                "levels": [level.to_dict() for level in self.levels],
                "n": self.n,
                "observed": self.observed,
                "mean_confidence": self.mean_confidence,
                "ece": self.ece,
                "ece_interval": self.interval.to_dict(),
                "noise_floor": self.noise_floor.to_dict(),
                "gap": self.gap,
                "gap_interval": list(self.gap_interval),
                "rest_n": self.rest_n,
                "rest_ece": self.rest_ece,
                "ece_as_rest": self.as_rest,
                "test": self.test.to_dict(),
                "confirmed": self.confirmed,
                "search": {
                    "n": self.n_search,
                    **_weight("weight", self.search_weight),
                    "ece": self.search_ece,
                    "gap": self.search_gap,
                    "test": self.search_test.to_dict(),
                },
            }
            | _weight("weight", self.weight)
            | _weight("rest_weight", self.rest_weight)
        )


@dataclass(frozen=True, eq=False)
class SegmentSearch:
    """The segments found on the search half and judged on the held-out half.

    ``segments`` holds the (at most ``max_segments``) segments carried to the held-out half,
    confirmed ones first, each group by held-out gap. ``n_searched`` segments were compared
    with the rest on the search half, ``n_screened`` of them were calibrated worse than the
    rest there; ``confirm_level`` is the one-sided level each carried segment was tested at on
    the held-out half (Bonferroni over the carried segments, family-wise ``level``).
    """

    segments: tuple[Segment, ...]
    features: tuple[Feature, ...]
    n: int
    n_search: int
    n_eval: int
    ece: float
    n_searched: int
    n_screened: int
    n_bins: int
    min_size: int
    max_segments: int
    depth: int
    level: float
    confirm_level: float
    search_fraction: float
    n_sims: int
    n_boot: int
    seed: int
    total_weight: float | None = None

    @property
    def weighted(self) -> bool:
        """Whether the rows carried sample weights."""
        return self.total_weight is not None

    @property
    def confirmed(self) -> tuple[Segment, ...]:
        return tuple(s for s in self.segments if s.confirmed)

    def verdict(self) -> str:
        """One sentence: the confirmed segments, or that none held up."""
        n_features = len(self.features)
        searched = (
            f"{self.n_searched} segments searched, of {_one_or_two(self.depth)} among "
            f"{n_features} feature{'s' if n_features != 1 else ''}"
        )
        confirmed = self.confirmed
        if not self.segments:
            return (
                f"no segment was calibrated worse than the rest on the search half ({searched}, "
                f"at least {self.min_size} rows in each half)."
            )
        if not confirmed:
            return (
                f"none of the {len(self.segments)} segments found on the search half held up on "
                f"the held-out half ({searched}; family-wise level {self.level:.0%})."
            )
        names = "; ".join(f"{s.name} (gap {s.gap:.3f})" for s in confirmed[:5])
        more = f" and {len(confirmed) - 5} more" if len(confirmed) > 5 else ""
        return (
            f"{len(confirmed)} of {len(self.segments)} segments found on the search half held "
            f"up on the held-out half: {names}{more} ({searched})."
        )

    #: Columns of :meth:`rows`; ``wide`` adds the gap's interval, the test's p-value and the
    #: search half's numbers.
    HEADER = ("segment", "N", "acc", "conf", "ECE", "floor", "gap", "as rest", "")
    WIDE_HEADER = (
        *("segment", "N", "acc", "conf", "ECE", "floor", "gap", "gap interval", "as rest"),
        *("rest", "p", "search N", "search gap", "search p", ""),
    )

    def header(self, *, wide: bool = False) -> tuple[str, ...]:
        """The columns of :meth:`rows`: :attr:`HEADER` or :attr:`WIDE_HEADER`, with a
        ``weight`` column after ``N`` when the rows carried sample weights."""
        head = self.WIDE_HEADER if wide else self.HEADER
        return (*head[:2], "weight", *head[2:]) if self.weighted else head

    def rows(self, *, wide: bool = False) -> list[tuple[str, ...]]:
        """Rows of the table, as text (held-out numbers; ``acc`` is the observed frequency of
        the event, ``rest`` the ECE of the other rows; weighted: ``N`` raw rows, then their
        weight, and every other number weighted)."""
        out: list[tuple[str, ...]] = []
        for s in self.segments:
            weight = () if s.weight is None else (f"{s.weight:.4g}",)
            head = (s.name, str(s.n), *weight, f"{s.observed:.3f}", f"{s.mean_confidence:.3f}")
            ece = (f"{s.ece:.4f}", f"{s.noise_floor.mean:.4f}", f"{s.gap:+.4f}")
            flag = "CONFIRMED" if s.confirmed else ""
            if not wide:
                out.append((*head, *ece, f"{s.as_rest:.4f}", flag))
                continue
            low, high = s.gap_interval
            extra = (f"[{low:+.4f}, {high:+.4f}]", f"{s.as_rest:.4f}", f"{s.rest_ece:.4f}")
            search = (str(s.n_search), f"{s.search_gap:+.4f}", f"{s.search_test.p_value:.4f}")
            out.append((*head, *ece, *extra, f"{s.test.p_value:.4f}", *search, flag))
        return out

    def note(self) -> str:
        """How the search ran and how to read the table."""
        weights = (
            f"sample weights (total {self.total_weight:.6g}): every number is weighted, N counts "
            "rows, and the floors, intervals and tests use Kish's effective size. "
            if self.total_weight is not None
            else ""
        )
        return weights + (
            f"search: {self.n_search} rows ({self.search_fraction:.0%}, seed {self.seed}); "
            f"held-out: the other {self.n_eval}, where every number in the table is measured. "
            f"ECE over {self.n_bins} equal-width bins (all rows: {self.ece:.4f}); floor: mean ECE "
            "of a calibrated forecaster with the segment's confidences; gap = ECE - floor; "
            "as rest: the segment's ECE were it off by the other rows' gap in each bin. A "
            "segment is found when its ECE exceeds the rest's beyond what a segment calibrated "
            "as the rest reaches (one-sided "
            f"{1 - self.level:.0%} on the search half), and CONFIRMED when it does so again on "
            f"the held-out half at one-sided {self.confirm_level:.2%} (Bonferroni over the "
            f"{len(self.segments)} carried: family-wise {self.level:.0%})."
        )

    def __str__(self) -> str:
        lines = []
        if self.segments:
            head = self.header()
            table = [head, *self.rows()]
            widths = [max(len(r[i]) for r in table) for i in range(len(head))]
            for r in table:
                cells = [r[0].ljust(widths[0])]
                cells += [c.rjust(w) for c, w in zip(r[1:], widths[1:], strict=True)]
                lines.append("  ".join(cells).rstrip())
            lines.append("")
        lines.append(self.note())
        return "\n".join([*lines, "", self.verdict()])

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "n_search": self.n_search,
            "n_eval": self.n_eval,
            **_weight("total_weight", self.total_weight),
            "ece": self.ece,
            "features": [f.to_dict() for f in self.features],
            "settings": {
                "n_bins": self.n_bins,
                "min_size": self.min_size,
                "max_segments": self.max_segments,
                "depth": self.depth,
                "level": self.level,
                "confirm_level": self.confirm_level,
                "search_fraction": self.search_fraction,
                "n_sims": self.n_sims,
                "n_boot": self.n_boot,
                "seed": self.seed,
            },
            "n_searched": self.n_searched,
            "n_screened": self.n_screened,
            "segments": [s.to_dict() for s in self.segments],
            "confirmed": [s.name for s in self.confirmed],
            "verdict": self.verdict(),
        }


def _weight(key: str, value: float | None) -> dict[str, float]:
    """``{key: value}`` when there is a weight, else nothing (unweighted output unchanged)."""
    return {} if value is None else {key: value}


def _one_or_two(depth: int) -> str:
    return "one feature" if depth == 1 else "one or two features"
