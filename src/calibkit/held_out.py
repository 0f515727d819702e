"""Audits of the rows a calibration ledger held out: BEFORE (the scores as they were) and AFTER
(the fitted map's probabilities), for side-by-side reliability diagrams.

It sits one layer above :mod:`calibkit.audit`, which it calls: a ledger
(:mod:`calibkit.recalibrate.ledger`) knows its split and its map, not the whole audit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import _validate as v
from .audit import Audit, audit

__all__ = ["HeldOutAudits", "held_out_audits"]


@dataclass(frozen=True, eq=False)
class HeldOutAudits:
    """The audit of a ledger's held-out rows ``before`` and ``after`` its map; both None when
    the ledger cannot say which rows it held out (cross-fitting, whose out-of-fold
    probabilities come from several maps, or a split that is not this data's)."""

    before: Audit | None
    after: Audit | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "before": None if self.before is None else self.before.to_dict(),
            "after": None if self.after is None else self.after.to_dict(),
        }

    def __str__(self) -> str:
        if self.before is None or self.after is None:
            return "no held-out audits: the ledger's rows were not held out by one split"
        return f"BEFORE: {self.before.verdict()}\nAFTER: {self.after.verdict()}"


def held_out_audits(
    ledger: Any,
    scores: Any,
    labels: Any,
    *,
    from_logits: bool = False,
    n_bins: int = 15,
    n_boot: int = 1000,
    n_sims: int = 1000,
) -> HeldOutAudits:
    """Audit the rows ``ledger`` held out, before and after its map.

    ``scores`` and ``labels`` are the data the ledger was computed from
    (:func:`calibkit.recalibrate.compare_calibration`); its split is redrawn from its seed and
    calibration fraction, and the audits use the ledger's seed. A ledger of another design
    (cross-fitting, or given held-out data) or whose split does not have its number of held-out
    rows gives two Nones: nothing is drawn rather than something misleading.

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.recalibrate import TemperatureScaling, compare_calibration
    >>> from calibkit.held_out import held_out_audits
    >>> rng = np.random.default_rng(1)
    >>> z = rng.normal(0, 3, 1000)
    >>> y = (rng.uniform(size=1000) < 1 / (1 + np.exp(-z / 3))).astype(int)
    >>> ledger = compare_calibration(TemperatureScaling(), z, y, from_logits=True, n_sims=50)
    >>> pair = held_out_audits(ledger, z, y, from_logits=True, n_boot=50, n_sims=50)
    >>> pair.before.n == pair.after.n == ledger.n_eval
    True
    """
    from .recalibrate.split import stratified_split

    if ledger.design != "split":
        return HeldOutAudits(None, None)
    where = "held_out_audits"
    x_all = v.to_numpy(scores, name="scores", where=where)
    y_all = v.to_numpy(labels, name="labels", where=where)
    _, held = stratified_split(
        y_all, calibration_fraction=ledger.calibration_fraction, seed=ledger.seed
    )
    if held.size != ledger.n_eval:  # not the ledger's split: draw nothing rather than mislead
        return HeldOutAudits(None, None)
    x, y = x_all[held], y_all[held]
    settings: dict[str, Any] = {
        "n_bins": n_bins,
        "n_boot": n_boot,
        "n_sims": n_sims,
        "seed": ledger.seed,
    }
    before = audit(x, y, from_logits=from_logits, **settings)
    after = audit(ledger.calibrator.predict_proba(x), y, **settings)
    return HeldOutAudits(before, after)
