"""What rows weigh: the properties every weighted sum type shares (:class:`~calibkit.BinStats`
per bin, :class:`~calibkit.measure.pooled.Pooled` per distinct forecast)."""

from __future__ import annotations

import numpy as np

from .. import _validate as v

__all__ = ["Masses"]


class Masses:
    """Mixed into a frozen dataclass with ``count`` (rows, int), ``weight`` (sum w) and
    ``weight_sq`` (sum w^2), the last two None when unweighted."""

    count: np.ndarray
    weight: np.ndarray | None
    weight_sq: np.ndarray | None

    @property
    def n(self) -> int:
        """The number of rows (whatever their weights)."""
        return int(self.count.sum())

    @property
    def weighted(self) -> bool:
        """Whether the sums are weighted by sample weights."""
        return self.weight is not None

    @property
    def mass(self) -> np.ndarray:
        """What the sums are divided by: the sum of the weights, or the count (float)."""
        return self.count.astype(np.float64) if self.weight is None else self.weight

    @property
    def mass_sq(self) -> np.ndarray:
        """The sum of the squared weights (the count when unweighted)."""
        return self.count.astype(np.float64) if self.weight_sq is None else self.weight_sq

    @property
    def total_mass(self) -> float:
        """The sum of all weights (the number of rows when unweighted)."""
        return float(self.mass.sum())

    @property
    def effective_count(self) -> np.ndarray:
        """Kish's effective sample size, (sum w)^2 / sum w^2 (the count when unweighted)."""
        if self.weight is None:
            return self.count.astype(np.float64)
        return np.asarray(v.effective_size(self.mass, self.mass_sq))
