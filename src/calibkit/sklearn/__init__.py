"""calibkit as a scikit-learn citizen: a calibrating meta-estimator, scorers for model
selection, and a reliability-diagram display.

scikit-learn is an optional dependency (``pip install 'calibkit[sklearn]'``); importing this
package without it raises an :class:`ImportError` that says so.

>>> import calibkit.sklearn as cks
>>> sorted(cks.SCORERS)[:3]
['neg_brier', 'neg_classwise_ece', 'neg_ece']
"""

from __future__ import annotations

from .._extras import require

require("sklearn", "calibkit.sklearn")

from .classifier import CalibratedClassifier  # noqa: E402 (after the check above)
from .display import CalibrationDisplay  # noqa: E402
from .scorers import METRICS, SCORERS, CalibrationScorer, calibration_loss, make_scorer  # noqa: E402

__all__ = [
    "METRICS",
    "SCORERS",
    "CalibratedClassifier",
    "CalibrationDisplay",
    "CalibrationScorer",
    "calibration_loss",
    "make_scorer",
]
