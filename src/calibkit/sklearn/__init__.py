"""calibkit as a scikit-learn citizen: a calibrating meta-estimator, scorers for model
selection, and a reliability-diagram display.

scikit-learn is an optional dependency (``pip install 'calibkit[sklearn]'``); importing this
package without it raises an :class:`ImportError` that says so.

>>> import calibkit.sklearn as cks
>>> sorted(cks.SCORERS)[:3]
['neg_brier', 'neg_classwise_ece', 'neg_ece']
"""

from __future__ import annotations

try:
    import sklearn as _sklearn  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError(
        "calibkit.sklearn needs scikit-learn (>= 1.4), which is not installed; install it with "
        "pip install 'calibkit[sklearn]'."
    ) from exc

from .classifier import CalibratedClassifier
from .display import CalibrationDisplay
from .scorers import METRICS, SCORERS, CalibrationScorer, calibration_loss, make_scorer

__all__ = [
    "METRICS",
    "SCORERS",
    "CalibratedClassifier",
    "CalibrationDisplay",
    "CalibrationScorer",
    "calibration_loss",
    "make_scorer",
]
