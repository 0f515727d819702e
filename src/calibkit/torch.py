"""calibkit in PyTorch training code: :class:`CalibrationError`, a torchmetrics ``Metric``.

It keeps the state of :class:`calibkit.CalibrationMeter` (every array a metric state summed
across processes, ``dist_reduce_fx="sum"``), so it drops into Lightning's ``self.log`` and
``torchmetrics`` collections; ``compute()`` returns the ECE as a float64 tensor and
:meth:`CalibrationError.audit` the full :class:`calibkit.Audit`.

Unlike ``torchmetrics.classification.CalibrationError`` it keeps a confidence of exactly 1.0
in the last bin (the bins are closed on the right), accumulates every sum in float64 whatever
the input's dtype, and holds a state of fixed size rather than every prediction. A tensor's
batch is checked and summed on its device, in place into the states when they live there.

Needs ``torchmetrics`` (``pip install 'calibkit[torch]'``); importing this module without it
raises an ImportError that says so.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._errors import InputError
from ._extras import require
from .audit import Audit
from .forecasts import prepare
from .meter.state import (
    add_tensor_batch,
    audit_of_state,
    batch_state,
    checked_binning,
    state_shapes,
    tensor_batch,
    tensor_zero_state,
)

__all__ = ["CalibrationError"]

_NOTE = "(ck.CalibrationMeter needs neither)"
torch = require("torch", "calibkit.torch", note=_NOTE)
Metric = require("torchmetrics", "calibkit.torch", note=_NOTE).Metric


class CalibrationError(Metric):  # type: ignore[misc,valid-type]
    """The expected calibration error of a classifier, as a torchmetrics ``Metric``.

    Parameters
    ----------
    n_bins : int, default 15
        Uniform bins of the reliability table.
    num_classes : int, optional
        None: binary input, ``(N,)`` probabilities (logits with ``from_logits``) of class 1;
        an integer C: ``(N, C)`` class probabilities, audited top-label.
    from_logits : bool, default False
        Whether ``update`` receives logits.
    closed : {"right", "left"}, default "right"
    edges : array-like, optional
        Explicit bin edges from 0 to 1.
    **kwargs
        Passed to ``torchmetrics.Metric`` (``dist_sync_on_step``, ``process_group``, ...).
    """

    is_differentiable = False
    higher_is_better = False
    full_state_update = False

    def __init__(
        self,
        n_bins: int = 15,
        num_classes: int | None = None,
        *,
        from_logits: bool = False,
        closed: str = "right",
        edges: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.binning = checked_binning(
            n_bins=n_bins, strategy="uniform", closed=closed, edges=edges, where="CalibrationError"
        )
        if num_classes is not None and (
            isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 2
        ):
            raise InputError(
                f"CalibrationError: num_classes is {num_classes!r}; give the number of classes "
                "(2 or more) for (N, C) probabilities, or leave it None for binary input."
            )
        self.kind = "binary" if num_classes is None else "top-label"
        self.n_classes = 2 if num_classes is None else num_classes
        self.from_logits = bool(from_logits)
        shapes = state_shapes(
            self.binning, kind=self.kind, n_classes=self.n_classes, weighted=False
        )
        self.state_names = sorted(shapes)
        for name in self.state_names:
            shape, dtype = shapes[name]
            kind = torch.int64 if np.dtype(dtype) == np.int64 else torch.float64
            self.add_state(name, default=torch.zeros(shape, dtype=kind), dist_reduce_fx="sum")

    def update(self, preds: Any, target: Any) -> None:
        """Add a batch: predictions (probabilities, or logits with ``from_logits``) and labels,
        tensors on any device and of any float dtype (detached; the sums move, not the data's
        gradients). A tensor is checked and summed on its device, into states there."""
        where = "CalibrationError.update"
        batch = tensor_batch(preds, target, from_logits=self.from_logits, where=where)
        if batch is not None:
            kind, n_classes = batch[0].kind, batch[0].n_classes
        else:
            f = prepare(preds, target, from_logits=self.from_logits, where=where)
            kind, n_classes = f.kind, f.n_classes
        if (kind, n_classes) != (self.kind, self.n_classes):
            expected = (
                "(N,) binary forecasts"
                if self.kind == "binary"
                else f"(N, {self.n_classes}) class probabilities"
            )
            raise InputError(
                f"{where}: this batch holds {kind} forecasts of {n_classes} classes; the "
                f"metric was made for {expected} (num_classes=)."
            )
        states = {name: getattr(self, name) for name in self.state_names}
        if batch is None:
            part = {k: torch.from_numpy(a) for k, a in batch_state(f, self.binning).items()}
        elif batch[0].conf.device == states["table_count"].device:
            add_tensor_batch(batch, self.binning, states)  # in place, on the device
            return
        else:  # summed where the batch is, added where the metric lives
            part = tensor_zero_state(
                self.binning, kind=kind, n_classes=n_classes, device=batch[0].conf.device
            )
            add_tensor_batch(batch, self.binning, part)
        for name, values in part.items():
            states[name].add_(values.to(states[name].device))

    def _arrays(self) -> dict[str, np.ndarray]:
        return {name: getattr(self, name).detach().cpu().numpy() for name in self.state_names}

    def compute(self) -> Any:
        """The ECE of every batch so far, a float64 tensor (synced across processes)."""
        return torch.tensor(self._audit().ece, dtype=torch.float64)

    def _audit(self, **settings: Any) -> Audit:
        return audit_of_state(
            self._arrays(), self.binning, kind=self.kind, n_classes=self.n_classes, **settings
        )

    def audit(self, **settings: Any) -> Audit:
        """The full :class:`calibkit.Audit` of every batch so far (across processes when
        torch.distributed is initialised); ``settings`` as :meth:`CalibrationMeter.compute`
        takes them."""
        with self.sync_context():
            return self._audit(**settings)
