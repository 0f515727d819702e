"""A streaming calibration meter for training and validation loops: :class:`CalibrationMeter`.

Each batch adds its sums (the :class:`~calibkit.measure.summary.Summary` of the stream engine,
over fixed edges) to a state whose size does not grow with the data: the table's bins, the
Hosmer-Lemeshow deciles' fine logit grid, each class's bins (top-label input), the scores, and
the AUC's :class:`~calibkit.measure.summary.RankGrid`. Two meters merge by adding their state;
:meth:`CalibrationMeter.sync` all-reduces it across the processes of ``torch.distributed``.
:meth:`CalibrationMeter.compute` returns the :class:`~calibkit.Audit` that
:func:`calibkit.audit` gives for all the batches concatenated with the same edges (to rounding),
the AUC within the bound it states, and notes naming what a one-pass meter leaves out.
"""

from __future__ import annotations

from .state import MeterState
from .stream_meter import CalibrationMeter

__all__ = ["CalibrationMeter", "MeterState"]
