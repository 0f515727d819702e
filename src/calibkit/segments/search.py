"""Where is a model miscalibrated? A search over the segments of one or two features, found on
one half of the rows and confirmed on the other.

The rows are split once (seeded) into a search half and a held-out half. On the search half,
every segment (the rows at one level of a feature, then the rows at one level of each of two
features) with at least ``min_size`` rows in each half, and at least as many outside it, is
compared with the rest of the rows: its ECE against the rest's, over the same equal-width bins,
by a one-sided test that conditions the shared calibration out
(:func:`calibkit.measure.segment_change.segment_change`). A segment of
two features is searched only when neither of its one-feature parents was found (the more
general segment is the answer; search inside it on its own rows for more). The segments found
are ranked by their gap (ECE beyond the segment's own noise floor, so that a small segment's
noise does not rank it first) and the first ``max_segments`` are carried to the held-out half,
where each is tested again, at the family-wise ``level`` split over the carried segments
(Bonferroni). The search saw none of those rows, so the chance that any segment calibrated as
the rest is confirmed is at most ``1 - level`` whatever the search looked at.

With ``sample_weight``, every row keeps its weight: a segment's ECE, observed frequency and
mean confidence are weighted (with integer weights, those of the rows repeated), its noise
floor and bootstrap interval use each bin's effective size (Kish), and the test draws the
weighted outcome sums from their conditional normal law
(:data:`calibkit.measure.segment_change.WEIGHTED_SEGMENT_TEST`). The split is of rows (a row
goes to one half with its whole weight), ``min_size`` counts rows, and a segment is searched
only when it and the rest weigh more than 0 in each half.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _kernels
from .. import _validate as v
from .._errors import InputError
from ..measure.bins import BinStats, bin_index
from ..measure.errors import ece_from_stats
from ..measure.segment_change import SegmentChange, segment_change
from ..measure.uncertainty import (
    BOOTSTRAP_FROM_STATS,
    BootstrapInterval,
    bootstrap_from_stats,
    noise_floor_from_stats,
)
from .features import Feature, code_features
from .result import Segment, SegmentSearch

__all__ = ["find_miscalibrated_segments"]

_CLOSED = "right"


def find_miscalibrated_segments(
    confidence: Any,
    outcome: Any,
    features: Any,
    *,
    min_size: int = 100,
    max_segments: int = 10,
    depth: int = 2,
    n_quantiles: int = 4,
    categorical: Sequence[str] | str = (),
    max_levels: int = 50,
    n_bins: int = 10,
    level: float = 0.95,
    search_fraction: float = 0.5,
    n_sims: int = 2000,
    n_boot: int = 1000,
    seed: int = 0,
    sample_weight: Any = None,
) -> SegmentSearch:
    """Find the segments of one or two features where the forecasts are calibrated worse than
    elsewhere, and confirm each on rows the search never saw.

    Parameters
    ----------
    confidence, outcome : arrays of shape (N,)
        The binary forecast and whether the event happened (0/1): a top-label confidence and
        whether the prediction was right, or P(label = 1) and the label.
    features : dict of arrays, or a table
        The columns that define the segments: a dict ``name -> array of N values`` or a pandas
        or polars DataFrame or pyarrow Table (every column a feature; select the columns
        first). Text, booleans and numbers with at most ``n_quantiles`` distinct values are
        categorical; other numbers are cut at their quantiles (:mod:`calibkit.segments.features`).
    min_size : int
        The fewest rows a segment (and the rest of the rows) may have in each half.
    max_segments : int
        How many of the segments found are carried to the held-out half (the first by gap).
    depth : {1, 2}
        Segments of one feature, or of one or two.
    n_quantiles : int
        The number of quantile levels of a numeric feature (4: quartiles).
    categorical : list of str
        Numeric features to take value by value instead of cutting them.
    max_levels : int
        The most distinct values a categorical feature may have.
    n_bins : int
        Equal-width bins of every ECE.
    level : float
        Family-wise level of the confirmation, and the level of the intervals; the search
        itself flags at one-sided ``1 - level`` per segment.
    search_fraction : float
        The share of the rows the search sees.
    n_sims, n_boot : int
        Simulations of each test and each noise floor; bootstrap resamples of the
        held-out ECE intervals.
    seed : int
        Seeds the split and every simulation: the same seed, the same result. The search half
        is the first ``round(search_fraction * N)`` rows of
        ``np.random.default_rng(seed).permutation(N)``; the held-out half is the others.
    sample_weight : array of shape (N,), optional
        One finite, non-negative weight per row, not all 0. Every segment statistic is
        weighted (integer weights: the numbers of the rows repeated, on the same halves);
        numeric features are cut at their weighted quantiles; the noise floors, intervals and
        tests use Kish's effective size (see the module docstring and docs/weights.md). The
        split and ``min_size`` count rows; ``N`` stays the raw row count, with the weight
        beside it.

    Returns
    -------
    SegmentSearch
        ``segments`` (each with ``n``, ``ece``, ``gap``, ``gap_interval``, ``confirmed``),
        ``confirmed``, ``verdict()``; ``str()`` prints the table, ``to_dict()`` is JSON-ready.

    Examples
    --------
    Forecasts calibrated everywhere except at site C, where the event happens 0.25 less often
    than forecast:

    >>> import numpy as np, calibkit as ck
    >>> rng = np.random.default_rng(0)
    >>> conf = rng.uniform(0.3, 1.0, 6000)
    >>> site = rng.choice(["A", "B", "C", "D"], 6000)
    >>> hit = rng.random(6000) < conf - 0.25 * (site == "C")
    >>> found = ck.find_miscalibrated_segments(conf, hit, {"site": site}, n_sims=500, n_boot=200)
    >>> [s.name for s in found.confirmed]
    ['site = C']
    """
    where = "find_miscalibrated_segments"
    conf = v.confidence(confidence, where=where).astype(np.float64, copy=False)
    n = conf.shape[0]
    out = v.outcome(outcome, n=n, where=where).astype(np.float64, copy=False)
    min_size = v.positive_int(min_size, name="min_size", where=where)
    max_segments = v.positive_int(max_segments, name="max_segments", where=where)
    if depth not in (1, 2) or isinstance(depth, bool):
        raise InputError(f"{where}: depth must be 1 or 2 (features per segment), got {depth!r}.")
    n_quantiles = v.positive_int(n_quantiles, name="n_quantiles", where=where, minimum=2)
    max_levels = v.positive_int(max_levels, name="max_levels", where=where, minimum=2)
    n_bins = v.n_bins(n_bins, where=where)
    level = v.level(level, where=where)
    search_fraction = v.level(search_fraction, where=where, name="search_fraction")
    n_sims = v.positive_int(n_sims, name="n_sims", where=where)
    n_boot = v.positive_int(n_boot, name="n_boot", where=where)
    seed = v.positive_int(seed, name="seed", where=where, minimum=0)
    w = v.sample_weight(sample_weight, n=n, where=where)
    alpha = 1.0 - level
    if 1.0 / (n_sims + 1) > alpha / max_segments:
        raise InputError(
            f"{where}: n_sims={n_sims} is too few to confirm any of {max_segments} segments at "
            f"family-wise level {level}: the smallest p-value of {n_sims} simulations, "
            f"1/(n_sims + 1), exceeds (1 - level) / max_segments = {alpha / max_segments:.3g}. "
            f"Pass n_sims >= {math.ceil(max_segments / alpha) - 1} (2000 or more is usual), or "
            "fewer max_segments."
        )
    names = (categorical,) if isinstance(categorical, str) else tuple(categorical)
    coded, codes = code_features(
        features,
        n=n,
        n_quantiles=n_quantiles,
        categorical=names,
        max_levels=max_levels,
        where=where,
        sample_weight=w,
    )
    rng = np.random.default_rng(seed)
    in_search = np.zeros(n, dtype=bool)
    in_search[rng.permutation(n)[: int(round(search_fraction * n))]] = True
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    bins = bin_index(conf, edges, closed=_CLOSED)
    search = _Half(conf, out, bins, codes, in_search, edges, w)
    held = _Half(conf, out, bins, codes, ~in_search, edges, w)
    for half, name in ((search, "search"), (held, "held-out")):
        if half.w is not None and not half.w.any():
            raise InputError(
                f"{where}: every row of the {name} half weighs 0 ({half.n} rows, seed {seed}); "
                "the segments cannot be measured there. Give more rows a positive weight, or "
                "another seed."
            )

    found, n_searched = _search(search, held, coded, depth, min_size, alpha, n_sims, seed)
    ranked = sorted(found, key=lambda c: -c.gap)[:max_segments]
    confirm_alpha = alpha / max(len(ranked), 1)
    segments = [_confirm(c, held, confirm_alpha, level, n_sims, n_boot, seed) for c in ranked]
    segments.sort(key=lambda s: (not s.confirmed, -s.gap))
    return SegmentSearch(
        segments=tuple(segments),
        features=coded,
        n=n,
        n_search=search.n,
        n_eval=held.n,
        ece=ece_from_stats(
            BinStats.of_checked(conf, out, edges=edges, closed=_CLOSED, sample_weight=w)
        ),
        n_searched=n_searched,
        n_screened=len(found),
        n_bins=n_bins,
        min_size=min_size,
        max_segments=max_segments,
        depth=depth,
        level=level,
        confirm_level=confirm_alpha,
        search_fraction=search_fraction,
        n_sims=n_sims,
        n_boot=n_boot,
        seed=seed,
        total_weight=None if w is None else float(w.sum()),
    )


# ----------------------------------------------------------------------------- sums by segment


class _Half:
    """One half of the rows, with the per-bin sums of any grouping of its rows."""

    def __init__(
        self,
        conf: np.ndarray,
        out: np.ndarray,
        bins: np.ndarray,
        codes: np.ndarray,
        rows: np.ndarray,
        edges: np.ndarray,
        w: np.ndarray | None = None,
    ) -> None:
        self.edges, self.m = edges, edges.size - 1
        self.conf, self.out = conf[rows], out[rows]
        self.bins, self.codes = bins[rows].astype(np.int64), codes[:, rows]
        self.w = None if w is None else w[rows]
        terms = _kernels.sum_terms(self.conf, self.out)
        self.terms = terms if self.w is None else tuple(self.w * t for t in terms)
        self.n = int(self.conf.size)
        self.total = self.stats_of(np.zeros(self.n, dtype=np.int64), 1)[0]

    def key(self, features: tuple[int, ...], sizes: Sequence[int]) -> np.ndarray:
        """The group of every row under a grouping by ``features`` (their indices): the levels
        numbered in mixed radix, the last feature's fastest (see :func:`_parts`)."""
        key = np.zeros(self.n, dtype=np.int64)
        for f in features:
            key = key * sizes[f] + self.codes[f]
        return key

    def stats_of(self, key: np.ndarray, n_groups: int) -> list[BinStats]:
        """The :class:`BinStats` of every group 0..n_groups-1 of ``key``, one pass per sum."""
        cell = key * self.m + self.bins
        size = n_groups * self.m
        count = np.bincount(cell, minlength=size).reshape(n_groups, self.m)
        sums = [np.bincount(cell, weights=w, minlength=size).reshape(n_groups, self.m)
                for w in self.terms]  # fmt: skip
        if self.w is None:
            return [
                BinStats(self.edges, _CLOSED, count[g], *(s[g] for s in sums))
                for g in range(n_groups)
            ]
        mass, mass_sq = (
            np.bincount(cell, weights=w, minlength=size).reshape(n_groups, self.m)
            for w in (self.w, self.w * self.w)
        )
        return [
            BinStats.of_sums(
                self.edges,
                _CLOSED,
                count[g],
                [s[g] for s in sums],
                weight=mass[g],
                weight_sq=mass_sq[g],
            )
            for g in range(n_groups)
        ]

    def rest(self, stats: BinStats) -> BinStats:
        """The statistics of the rows outside a segment (weighted sums of a bin the rest has
        no rows in are exactly 0, not a rounding residue)."""
        t = self.total
        count = t.count - stats.count
        sums = [getattr(t, f) - getattr(stats, f) for f in _kernels.SUM_FIELDS]
        if not t.weighted:
            return BinStats(self.edges, _CLOSED, count, *sums)
        none = count == 0
        pairs = ((t.mass, stats.mass), (t.mass_sq, stats.mass_sq))
        mass, mass_sq = (np.where(none, 0.0, a - b) for a, b in pairs)
        return BinStats.of_sums(
            self.edges,
            _CLOSED,
            count,
            [np.where(none, 0.0, s) for s in sums],
            weight=mass,
            weight_sq=mass_sq,
        )

    def weight_of(self, key: np.ndarray, n_groups: int) -> np.ndarray | None:
        """The weight of every group of ``key`` (None when unweighted)."""
        return None if self.w is None else np.bincount(key, weights=self.w, minlength=n_groups)


@dataclass(frozen=True)
class _Found:
    """A segment flagged on the search half."""

    parts: tuple[tuple[int, int], ...]
    levels: tuple[Any, ...]
    stats: BinStats
    test: SegmentChange
    gap: float


def _search(
    search: _Half,
    held: _Half,
    coded: tuple[Feature, ...],
    depth: int,
    min_size: int,
    alpha: float,
    n_sims: int,
    seed: int,
) -> tuple[list[_Found], int]:
    """The segments calibrated worse than the rest on the search half, and how many were
    compared."""
    sizes = [len(f.levels) for f in coded]
    groupings: list[tuple[int, ...]] = [(f,) for f in range(len(coded))]
    if depth == 2:
        groupings += [(f, g) for f in range(len(coded)) for g in range(f + 1, len(coded))]
    found: list[_Found] = []
    flagged: set[tuple[int, int]] = set()
    counts: dict[tuple[tuple[int, int], ...], tuple[int, int]] = {}
    n_searched = 0
    for features in groupings:
        n_groups = int(np.prod([sizes[f] for f in features]))
        stats = search.stats_of(search.key(features, sizes), n_groups)
        held_key = held.key(features, sizes)
        held_n = np.bincount(held_key, minlength=n_groups)
        held_w = held.weight_of(held_key, n_groups)
        for g, seg in enumerate(stats):
            parts = _parts(features, g, sizes)
            n_s, n_h = seg.n, int(held_n[g])
            counts[parts] = (n_s, n_h)
            if min(n_s, n_h, search.n - n_s, held.n - n_h) < min_size:
                continue
            if held_w is not None and not _weighs(seg, search.total, held_w[g], held.total):
                continue  # a side with no weight in a half has no ECE
            if len(parts) == 2 and (
                any(p in flagged for p in parts) or any(counts[(p,)] == (n_s, n_h) for p in parts)
            ):
                continue  # inside a segment found already, or the same rows as a parent
            n_searched += 1
            test = segment_change(seg, search.rest(seg), alpha=alpha, n_sims=n_sims, seed=seed)
            if test.worse:
                if len(parts) == 1:
                    flagged.add(parts[0])
                floor = noise_floor_from_stats(seg, n_sims=n_sims, seed=seed)
                levels = tuple(coded[f].levels[k] for f, k in parts)
                found.append(_Found(parts, levels, seg, test, ece_from_stats(seg) - floor.mean))
    return found, n_searched


def _weighs(seg: BinStats, total: BinStats, held_weight: float, held_total: BinStats) -> bool:
    """Whether a segment and its rest weigh more than 0 in each half."""
    search_w, held_all = seg.total_mass, held_total.total_mass
    return min(search_w, total.total_mass - search_w, held_weight, held_all - held_weight) > 0


def _parts(
    features: tuple[int, ...], group: int, sizes: Sequence[int]
) -> tuple[tuple[int, int], ...]:
    """(feature, level) of each feature of a grouping, from the group's index."""
    levels = []
    for f in reversed(features):
        group, k = divmod(group, sizes[f])
        levels.append((f, k))
    return tuple(reversed(levels))


def _confirm(
    found: _Found,
    held: _Half,
    alpha: float,
    level: float,
    n_sims: int,
    n_boot: int,
    seed: int,
) -> Segment:
    """The held-out numbers of a segment found on the search half, and its test there."""
    rows = np.ones(held.n, dtype=bool)
    for f, k in found.parts:
        rows &= held.codes[f] == k
    key = rows.astype(np.int64)
    stats = held.stats_of(key, 2)[1]
    rest = held.rest(stats)
    test = segment_change(stats, rest, alpha=alpha, n_sims=n_sims, seed=seed)
    ece = ece_from_stats(stats)
    values = bootstrap_from_stats(stats, "l1", n_boot, np.random.default_rng(seed))
    low, high = np.percentile(values, [50 * (1 - level), 100 - 50 * (1 - level)])
    return Segment(
        levels=found.levels,
        n=stats.n,
        observed=float(stats.sum_outcome.sum() / stats.total_mass),
        mean_confidence=float(stats.sum_conf.sum() / stats.total_mass),
        ece=ece,
        interval=BootstrapInterval(
            ece, float(low), float(high), level, n_boot, seed, BOOTSTRAP_FROM_STATS
        ),
        noise_floor=noise_floor_from_stats(stats, n_sims=n_sims, seed=seed),
        rest_n=rest.n,
        rest_ece=ece_from_stats(rest),
        as_rest=_as_rest(stats, rest),
        test=test,
        confirmed=test.worse,
        n_search=found.stats.n,
        search_ece=ece_from_stats(found.stats),
        search_gap=found.gap,
        search_test=found.test,
        weight=stats.total_mass if stats.weighted else None,
        rest_weight=rest.total_mass if rest.weighted else None,
        search_weight=found.stats.total_mass if found.stats.weighted else None,
    )


def _as_rest(segment: BinStats, rest: BinStats) -> float:
    """The segment's ECE were each of its bins off by the rest's gap there (0 where the rest
    has no rows, or no weight)."""
    if not segment.weighted:
        has = rest.count > 0
        gap = np.zeros(rest.n_bins)
        gap[has] = (rest.sum_outcome[has] - rest.sum_conf[has]) / rest.count[has]
        return float(np.sum(segment.count * np.abs(gap)) / segment.n)
    mass = rest.mass
    has = mass > 0
    gap = np.zeros(rest.n_bins)
    gap[has] = (rest.sum_outcome[has] - rest.sum_conf[has]) / mass[has]
    return float(np.sum(segment.mass * np.abs(gap)) / segment.total_mass)
