"""Sample weights at fit time, shared by every calibrator: the weights checked (the one check,
:func:`calibkit._validate.sample_weight`) and the rows they keep.

A row of weight 0 is left out of the fit before anything is computed from the rows (as
scikit-learn's ``IsotonicRegression`` does), so it cannot move the map at all: not its value,
not a separation check, not the range of an isotonic map. The scores and labels are checked on
every row first, so a message names the user's own row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _validate as v

__all__ = ["FitWeights", "fit_weights"]


@dataclass(frozen=True)
class FitWeights:
    """The positive weights of the rows that count (``w``) and which rows those are (``keep``,
    None when every row counts)."""

    w: np.ndarray
    keep: np.ndarray | None

    def rows(self, arr: np.ndarray) -> np.ndarray:
        """The rows of ``arr`` that count."""
        return arr if self.keep is None else arr[self.keep]


def fit_weights(sample_weight: Any, *, n: int, where: str) -> FitWeights | None:
    """``None`` for no weights (every row counts once), else the checked weights and the rows
    with a positive weight.

    Examples
    --------
    >>> fw = fit_weights([2, 0, 1], n=3, where="PlattScaling.fit")
    >>> fw.w.tolist(), fw.keep.tolist()
    ([2.0, 1.0], [True, False, True])
    >>> fit_weights(None, n=3, where="PlattScaling.fit") is None
    True
    """
    w = v.sample_weight(sample_weight, n=n, where=where)
    if w is None:
        return None
    positive = w > 0
    if positive.all():
        return FitWeights(w, None)
    return FitWeights(np.ascontiguousarray(w[positive]), positive)
