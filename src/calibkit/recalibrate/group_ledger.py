"""Does calibrating each group on its own beat one map for all? The per-group ledger, on rows
neither map saw.

:func:`compare_group_calibration` fits a :class:`~calibkit.GroupCalibrator` on a calibration
split (stratified by group) and judges, group by group on the other rows, three forecasts: the
model's own probabilities, the pooled map (its ``base`` fitted on all the calibration rows) and
each group's own map. A map beats the other in a group when the other is worse there beyond
noise, by the tests of the ledger (:mod:`calibkit.recalibrate._worse`): a rise of ECE beyond the
95th percentile of the noise floor, or a mean per-row rise of log-loss beyond 1.96 paired
standard errors.

With sample weights, every held-out number is weighted (ECE, NLL; with integer weights those
of the rows repeated), the noise floors simulate the weighted ECE with each row keeping its
weight, and the NLL test uses the weighted paired standard error; the split is of rows (each
group's rows divided as without weights), each side taking its rows' weights.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _validate as v
from .._errors import CalibkitWarning, InputError
from .._json import jsonable
from ..measure.uncertainty import NoiseFloor
from ._worse import Worse, row_losses, worse_beyond_noise
from .group import GroupCalibrator
from .ledger import (
    _check_calibrator,
    _clone,
    _measure,
    _probabilities,
    _read,
    _template,
    _weighted_words,
)
from .ledger_table import _fmt
from .split import stratified_split

__all__ = ["GroupCalibrationLedger", "GroupComparison", "compare_group_calibration"]


@dataclass(frozen=True)
class GroupComparison:
    """One group's held-out rows judged three ways: ``before`` (the model's own probabilities),
    ``pooled`` (the pooled map) and ``own`` (the group's own map, which is the pooled map when
    ``fallback`` says why the group has none). ``own_better`` lists the instruments on which
    the pooled map is worse than the group's own beyond noise, ``pooled_better`` the reverse.
    With sample weights, ``n_fit`` and ``n_eval`` stay raw row counts and ``weight_fit`` and
    ``weight_eval`` are the rows' total weights (None when unweighted).
    """

    group: Any
    n_fit: int
    n_eval: int
    fallback: str | None
    ece_before: float
    ece_pooled: float
    ece_own: float
    floor_pooled: NoiseFloor
    floor_own: NoiseFloor
    nll_before: float
    nll_pooled: float
    nll_own: float
    own_better: tuple[Worse, ...]
    pooled_better: tuple[Worse, ...]
    weight_fit: float | None = None
    weight_eval: float | None = None

    @property
    def verdict(self) -> str:
        """``"own map"`` (it beats the pooled map beyond noise), ``"pooled map"``, ``"mixed"``
        (each wins one instrument), ``"within noise"``, or ``"no own map"``."""
        if self.fallback is not None:
            return "no own map"
        if self.own_better and self.pooled_better:
            return "mixed"
        if self.own_better:
            return "own map"
        return "pooled map" if self.pooled_better else "within noise"

    def to_dict(self) -> dict[str, Any]:
        return {
            "group": jsonable(self.group),
            "n_fit": self.n_fit,
            "n_eval": self.n_eval,
            **({} if self.weight_fit is None else {"weight_fit": self.weight_fit}),
            **({} if self.weight_eval is None else {"weight_eval": self.weight_eval}),
            "fallback": self.fallback,
            "ece": {"before": self.ece_before, "pooled": self.ece_pooled, "own": self.ece_own},
            "noise_floor": {"pooled": self.floor_pooled.to_dict(), "own": self.floor_own.to_dict()},
            "nll": jsonable(
                {"before": self.nll_before, "pooled": self.nll_pooled, "own": self.nll_own}
            ),
            "own_better": [w.instrument for w in self.own_better],
            "pooled_better": [w.instrument for w in self.pooled_better],
            "verdict": self.verdict,
        }


@dataclass(frozen=True, eq=False)
class GroupCalibrationLedger:
    """Per-group calibration against the pooled map, judged on rows neither saw.

    ``groups`` has one :class:`GroupComparison` per group of the held-out rows and ``overall``
    the same over all of them (its group is ``"all"``). ``calibrator`` is the fitted
    :class:`~calibkit.GroupCalibrator` that was judged. ``design`` is ``"split"`` (a
    calibration split stratified by group) or ``"given"`` (fitted on all of ``scores``, judged
    on ``eval_scores``).
    """

    method: str
    by: str | None
    design: str
    n: int
    n_fit: int
    n_eval: int
    calibration_fraction: float | None
    seed: int
    n_bins: int
    groups: tuple[GroupComparison, ...]
    overall: GroupComparison
    calibrator: GroupCalibrator
    fitted_on: str
    judged_on: str
    weighted: bool = False

    @property
    def winners(self) -> tuple[Any, ...]:
        """The groups whose own map beats the pooled map beyond noise (and loses on nothing)."""
        return tuple(g.group for g in self.groups if g.verdict == "own map")

    HEADER = (
        *("group", "N fit", "N eval", "ECE model", "pooled", "own", "NLL model", "pooled"),
        *("own", "verdict"),
    )

    def header(self) -> tuple[str, ...]:
        """The columns of :meth:`table_rows`: :attr:`HEADER`, with the held-out ``weight``
        after ``N eval`` when the rows carried sample weights."""
        return (*self.HEADER[:3], "weight", *self.HEADER[3:]) if self.weighted else self.HEADER

    def table_rows(self) -> list[tuple[str, ...]]:
        """One row per group, then the overall row: ECE and NLL of the model, the pooled map and
        the group's own map on the held-out rows, and which map won (weighted: the held-out
        weight beside the raw row count, and every number weighted)."""
        return [
            (
                str(g.group),
                str(g.n_fit),
                str(g.n_eval),
                *(() if g.weight_eval is None else (f"{g.weight_eval:.6g}",)),
                *(_fmt(x) for x in (g.ece_before, g.ece_pooled, g.ece_own)),
                *(_fmt(x) for x in (g.nll_before, g.nll_pooled, g.nll_own)),
                g.verdict,
            )
            for g in (*self.groups, self.overall)
        ]

    def notes(self) -> list[str]:
        lines = [
            f"fitted on {self.fitted_on}; judged on {self.judged_on}.",
            f"ECE: {self.n_bins} equal-width bins. A map wins a group when the other is worse "
            "there beyond noise: ECE higher by more than the 95th percentile of its noise floor, "
            "or NLL higher by more than 1.96 paired standard errors.",
        ]
        rows = (*self.groups, self.overall)
        if any(math.isinf(x) for g in rows for x in (g.nll_before, g.nll_pooled, g.nll_own)):
            lines.append(
                "NLL inf: a forecast gave some held-out row's outcome probability 0 (a stated "
                "certainty that was wrong, or a map that outputs 0 or 1); ECE is unaffected, "
                "and the NLL test is left out where either side is infinite."
            )
        fell_back = [g for g in self.groups if g.fallback is not None]
        if fell_back:
            lines.append(
                "no own map (the pooled map is used): "
                + "; ".join(f"{g.group}: {g.fallback}" for g in fell_back)
                + "."
            )
        lines.append(self.verdict())
        return lines

    def verdict(self) -> str:
        wins = self.winners
        losses = [g.group for g in self.groups if g.verdict == "pooled map"]
        if not wins and not losses:
            return "no group's own map beat the pooled map beyond noise, nor lost to it."
        parts = []
        if wins:
            parts.append(f"own map better in {len(wins)}: {', '.join(str(g) for g in wins)}")
        if losses:
            parts.append(f"pooled map better in {len(losses)}: {', '.join(map(str, losses))}")
        return f"of {len(self.groups)} groups, " + "; ".join(parts) + "."

    def __str__(self) -> str:
        header = self.header()
        body = [header, *self.table_rows()]
        widths = [max(len(r[i]) for r in body) for i in range(len(header))]
        head = (
            f"group calibration ledger: {self.method} per group"
            + (f" of {self.by}" if self.by else "")
            + " against one pooled map"
        )
        lines = [head, ""]
        for r in body:
            numbers = zip(r[1:-1], widths[1:-1], strict=True)
            cells = [r[0].ljust(widths[0]), *(c.rjust(w) for c, w in numbers)]
            lines.append("  ".join([*cells, r[-1]]))
        return "\n".join([*lines, "", *self.notes()])

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "by": self.by,
            "design": self.design,
            "n": self.n,
            "n_fit": self.n_fit,
            "n_eval": self.n_eval,
            **({"weighted": True} if self.weighted else {}),
            "calibration_fraction": self.calibration_fraction,
            "seed": self.seed,
            "n_bins": self.n_bins,
            "fitted_on": self.fitted_on,
            "judged_on": self.judged_on,
            "groups": [g.to_dict() for g in self.groups],
            "overall": self.overall.to_dict(),
            "winners": jsonable(list(self.winners)),
            "verdict": self.verdict(),
        }


def compare_group_calibration(
    calibrator: GroupCalibrator,
    scores: Any,
    labels: Any,
    *,
    groups: Any,
    from_logits: bool = True,
    calibration_fraction: float = 0.5,
    seed: int = 0,
    eval_scores: Any = None,
    eval_labels: Any = None,
    eval_groups: Any = None,
    n_bins: int = 15,
    n_sims: int = 1000,
    sample_weight: Any = None,
    eval_sample_weight: Any = None,
) -> GroupCalibrationLedger:
    """Judge a per-group calibrator against its pooled map, group by group, on held-out rows.

    Parameters
    ----------
    calibrator : GroupCalibrator
        Unfitted settings (it is not touched); a copy is fitted, returned as
        ``ledger.calibrator``.
    scores, labels, groups
        What :meth:`GroupCalibrator.fit` takes: scores (N, C) or (N,), labels, and the group
        of each row. Each group gives ``calibration_fraction`` of its rows to the fit (seeded)
        and the rest are judged; every group needs at least 2 rows.
    from_logits : bool
        As :func:`~calibkit.compare_calibration`: how the model's own probabilities are read
        from the scores (softmax / sigmoid of logits, or probabilities as they are).
    eval_scores, eval_labels, eval_groups : optional
        A separate evaluation set: the calibrator is fitted on all of ``scores`` and judged on
        these (a group seen only here gets the pooled map, with a warning).
    n_bins, n_sims
        Equal-width bins of the ECE and simulations of its noise floor.
    sample_weight : array of shape (N,), optional
        One finite, non-negative weight per row of ``scores``, not all 0: the fit is weighted
        (:meth:`GroupCalibrator.fit`) and, in a split, so are the held-out rows' measures
        (integer weights: the numbers of the rows repeated; the noise floors keep each row's
        weight, the NLL test uses the weighted standard error). The split is of rows, as
        without weights. A group whose held-out rows all weigh 0 is left out, with a warning.
    eval_sample_weight : array of shape (N_eval,), optional
        The weights of the rows of ``eval_scores`` (a separate evaluation set only).

    Examples
    --------
    Scores three times too large at site a and calibrated at site b: one temperature for
    both is wrong for each, and each site's own temperature beats it on held-out rows.

    >>> import numpy as np, calibkit as ck
    >>> rng = np.random.default_rng(0)
    >>> s = rng.normal(0, 2, 8000); y = (rng.random(8000) < ck.sigmoid(s)).astype(int)
    >>> site = np.repeat(["a", "b"], 4000)
    >>> ledger = ck.compare_group_calibration(
    ...     ck.GroupCalibrator(by="site"), np.where(site == "a", 3 * s, s), y, groups=site,
    ...     n_sims=200)
    >>> ledger.winners
    ('a', 'b')
    """
    where = "compare_group_calibration"
    if not isinstance(calibrator, GroupCalibrator):
        raise InputError(
            f"{where}: calibrator must be a GroupCalibrator (e.g. GroupCalibrator(base="
            f"{type(calibrator).__name__}())), got {type(calibrator).__name__}; for one map "
            "use compare_calibration."
        )
    base = calibrator._template(where)
    _check_calibrator(base, from_logits=from_logits, where=where)
    seed = v.positive_int(seed, name="seed", where=where, minimum=0)
    n_bins = v.n_bins(n_bins, where=where)
    n_sims = v.positive_int(n_sims, name="n_sims", where=where)
    _, check = _template(base, check_logits=True, where=where)
    x, y = _read(scores, labels, from_logits=from_logits, where=where, name="scores", check=check)
    keys = v.group_values(groups, n=x.shape[0], where=where)
    template = _clone(calibrator)
    n = int(x.shape[0])
    w = v.sample_weight(sample_weight, n=n, where=where)
    w_fit: np.ndarray | None = w
    w_eval: np.ndarray | None = None
    given = [a is not None for a in (eval_scores, eval_labels, eval_groups)]
    if any(given):
        if not all(given):
            raise InputError(
                f"{where}: a separate evaluation set needs eval_scores, eval_labels and "
                "eval_groups together."
            )
        design, fraction = "given", None
        x_eval, y_eval = _read(
            eval_scores, eval_labels, from_logits=from_logits, where=where, name="eval_scores",
            check=check,
        )  # fmt: skip
        k_eval = v.group_values(eval_groups, n=x_eval.shape[0], where=where, name="eval_groups")
        w_eval = v.sample_weight(
            eval_sample_weight, n=int(x_eval.shape[0]), where=where, name="eval_sample_weight"
        )
        fitted = template.fit(x, y, groups=keys, sample_weight=w)
        fitted_on = f"all {n} rows of scores"
        judged_on = f"the {x_eval.shape[0]} rows of eval_scores"
    elif eval_sample_weight is not None:
        raise InputError(
            f"{where}: eval_sample_weight weighs the rows of eval_scores, but none were given; "
            "the held-out rows of a split are rows of scores and take their weights from "
            "sample_weight."
        )
    else:
        design, fraction = "split", float(calibration_fraction)
        values, codes = np.unique(keys, return_inverse=True)
        counts = np.bincount(codes)
        if (counts < 2).any():
            lone = [str(g) for g in values[counts < 2].tolist()[:10]]
            raise InputError(
                f"{where}: {int((counts < 2).sum())} groups have a single row ({', '.join(lone)}"
                "); a held-out comparison needs at least 2 rows per group (one to fit, one to "
                "judge): merge them or leave them out."
            )
        if w is None:
            cal, held = stratified_split(codes, calibration_fraction=fraction, seed=seed)
        else:
            cal, held, w_fit, w_eval = stratified_split(
                codes, calibration_fraction=fraction, seed=seed, sample_weight=w
            )
        fitted = template.fit(x[cal], y[cal], groups=keys[cal], sample_weight=w_fit)
        x_eval, y_eval, k_eval = x[held], y[held], keys[held]
        fitted_on = (
            f"the calibration split ({cal.size} of {n} rows, {fraction:.0%} of each group, "
            f"seed {seed})"
        )
        judged_on = f"the other {held.size} rows, which neither map saw"
    if w_fit is not None or w_eval is not None:
        fitted_on, judged_on = _weighted_words(fitted_on, w_fit), _weighted_words(judged_on, w_eval)
    fit_keys = keys if design == "given" else keys[cal]
    forecasts = _Forecasts(
        before=_probabilities(x_eval, from_logits=from_logits),
        pooled=np.asarray(fitted.pooled_.predict_proba(x_eval), dtype=np.float64),
        own=fitted.predict_proba(x_eval, groups=k_eval),
        loss_before=row_losses(x_eval, y_eval, from_logits=from_logits),
        w=w_eval,
    )
    values, inverse = np.unique(k_eval, return_inverse=True)
    rows, weightless = [], []
    for i, group in enumerate(values.tolist()):
        mask = inverse == i
        if w_eval is not None and not w_eval[mask].any():
            weightless.append(str(group))
            continue
        n_fit = fitted.sizes_.get(group, 0)
        fallback = fitted.fallback_.get(group, None if n_fit else "not seen in fit")
        fit_weight = None if w_fit is None else float(w_fit[fit_keys == group].sum())
        rows.append(
            forecasts.compare(
                mask, y_eval, group, n_fit, fallback, n_bins, n_sims, seed, fit_weight
            )
        )
    if weightless:
        warnings.warn(
            f"{where}: {len(weightless)} {'group has' if len(weightless) == 1 else 'groups have'}"
            f" only held-out rows of weight 0 and {'is' if len(weightless) == 1 else 'are'} left "
            f"out of the ledger: {', '.join(weightless[:10])}.",
            CalibkitWarning,
            stacklevel=2,
        )
    everything = np.ones(y_eval.size, dtype=bool)
    overall = forecasts.compare(
        everything,
        y_eval,
        "all",
        sum(fitted.sizes_.values()),
        None,
        n_bins,
        n_sims,
        seed,
        None if w_fit is None else float(w_fit.sum()),
    )
    return GroupCalibrationLedger(
        method=base.kind,
        by=calibrator.by,
        design=design,
        n=n,
        n_fit=sum(fitted.sizes_.values()),
        n_eval=int(y_eval.size),
        calibration_fraction=fraction,
        seed=seed,
        n_bins=n_bins,
        groups=tuple(rows),
        overall=overall,
        calibrator=fitted,
        fitted_on=fitted_on,
        judged_on=judged_on,
        weighted=w_fit is not None or w_eval is not None,
    )


@dataclass(frozen=True)
class _Forecasts:
    """The held-out probabilities three ways, and the model's own per-row log-loss."""

    before: np.ndarray
    pooled: np.ndarray
    own: np.ndarray
    loss_before: np.ndarray
    w: np.ndarray | None = None

    def compare(
        self,
        rows: np.ndarray,
        y: np.ndarray,
        group: Any,
        n_fit: int,
        fallback: str | None,
        n_bins: int,
        n_sims: int,
        seed: int,
        fit_weight: float | None = None,
    ) -> GroupComparison:
        yg = y[rows]
        wg = None if self.w is None else self.w[rows]
        before, pooled, own = (
            _measure(p[rows], yg, n_bins=n_bins, n_sims=n_sims, seed=seed, w=wg)
            for p in (self.before, self.pooled, self.own)
        )
        loss_pooled = row_losses(self.pooled[rows], yg, from_logits=False)
        loss_own = row_losses(self.own[rows], yg, from_logits=False)
        return GroupComparison(
            group=group,
            n_fit=int(n_fit),
            n_eval=int(yg.size),
            fallback=fallback,
            ece_before=before["ECE"],
            ece_pooled=pooled["ECE"],
            ece_own=own["ECE"],
            floor_pooled=pooled["floor"],
            floor_own=own["floor"],
            nll_before=_mean(self.loss_before[rows], wg),
            nll_pooled=_mean(loss_pooled, wg),
            nll_own=_mean(loss_own, wg),
            own_better=worse_beyond_noise(
                ece_before=own["ECE"],
                ece_after=pooled["ECE"],
                floor_after=pooled["floor"],
                loss_before=loss_own,
                loss_after=loss_pooled,
                sample_weight=wg,
            ),
            pooled_better=worse_beyond_noise(
                ece_before=pooled["ECE"],
                ece_after=own["ECE"],
                floor_after=own["floor"],
                loss_before=loss_pooled,
                loss_after=loss_own,
                sample_weight=wg,
            ),
            weight_fit=fit_weight,
            weight_eval=None if wg is None else float(wg.sum()),
        )


def _mean(losses: np.ndarray, w: np.ndarray | None = None) -> float:
    """The mean log-loss, weighted by ``w`` over the rows of positive weight (infinite when
    such a row's true label got probability 0)."""
    if w is None:
        value = float(losses.mean())
    else:
        counted = w > 0
        value = float(np.sum(w[counted] * losses[counted]) / np.sum(w[counted]))
    return value if not math.isnan(value) else float("inf")
