"""Calibration by segment: where a model's confidence breaks its promise.

:func:`find_miscalibrated_segments` searches the segments of one or two feature columns on one
half of the rows and confirms what it finds on the other (:mod:`.search`); the features are
read and cut into levels by :mod:`.features`; :class:`SegmentSearch` is the result.
"""

from .features import Feature, Level, read_features
from .result import Segment, SegmentSearch
from .search import find_miscalibrated_segments

__all__ = [
    "Feature",
    "Level",
    "Segment",
    "SegmentSearch",
    "find_miscalibrated_segments",
    "read_features",
]
