"""When not to trust a label-free estimate: three simple, stated rules on the confidences."""

from __future__ import annotations

import numpy as np

from .inputs import Scores
from .shift import ks_distance

__all__ = ["MAX_KS", "MAX_OUTSIDE", "MIN_REFERENCE", "trust_notes"]

#: A reference with fewer rows gives a calibrator (or threshold) fitted on too few rows.
MIN_REFERENCE = 500
#: More than this share of target confidences outside the reference's range is extrapolation.
MAX_OUTSIDE = 0.01
#: A larger Kolmogorov-Smirnov distance between the confidence distributions is a large shift.
MAX_KS = 0.1


def trust_notes(reference: Scores, target: Scores) -> tuple[str, ...]:
    """The rules that fired, each as a sentence with its numbers."""
    notes: list[str] = []
    if reference.n < MIN_REFERENCE:
        notes.append(
            f"the reference has {reference.n} rows (fewer than {MIN_REFERENCE}): the fitted "
            "map or threshold rests on few rows"
        )
    lo, hi = float(reference.confidence.min()), float(reference.confidence.max())
    outside = float(np.mean((target.confidence < lo) | (target.confidence > hi)))
    if outside > MAX_OUTSIDE:
        notes.append(
            f"{outside:.1%} of the target's confidences lie outside the reference's range "
            f"[{lo:.4g}, {hi:.4g}] (more than {MAX_OUTSIDE:.0%}): the estimate extrapolates"
        )
    ks = ks_distance(reference.confidence, target.confidence)
    if ks > MAX_KS:
        notes.append(
            f"the confidence distribution moved: Kolmogorov-Smirnov distance {ks:.3f} from the "
            f"reference's (more than {MAX_KS}); the reference's calibration may not hold there"
        )
    return tuple(notes)
