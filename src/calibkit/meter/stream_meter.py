"""The streaming meter, :class:`CalibrationMeter`: update, merge, sync, compute."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate as v
from .._errors import InputError
from ..audit import Audit
from ..engines import Binning
from ..forecasts import prepare
from .state import (
    STATE_VERSION,
    MeterState,
    add_tensor_batch,
    audit_of_state,
    batch_state,
    bin_sets,
    checked_binning,
    state_shapes,
    tensor_batch,
    tensor_zero_state,
    zero_state,
)

__all__ = ["CalibrationMeter"]


class CalibrationMeter:
    """A calibration audit accumulated batch by batch, in a state of fixed size.

    Parameters
    ----------
    n_bins : int, default 15
        Bins of the reliability table (uniform on [0, 1]).
    strategy : {"uniform"}, default "uniform"
        Quantile edges need two passes over the data and are refused; pass ``edges=`` computed
        once on held-out forecasts instead.
    closed : {"right", "left"}, default "right"
        Which end of a bin is closed (right: a confidence of exactly 1.0 is in the last bin).
    edges : array-like, optional
        Explicit bin edges from 0 to 1 (then ``n_bins`` and ``strategy`` are not used).

    Notes
    -----
    :meth:`update` takes numpy arrays or tensors (PyTorch on any device and of any float
    dtype, with or without ``requires_grad``; JAX, CuPy). A PyTorch batch without sample
    weights is checked, reduced and summed in float64 on its own device (see
    :mod:`calibkit._torch_kernels`) and its sums stay there until the state is read; any other
    input is copied to the host and checked as :func:`calibkit.audit` checks it. The state
    holds the table's bins, a fine logit grid for the Hosmer-Lemeshow deciles (75,776 bins) and
    the AUC's grid (606,209 cells per outcome): about 14 MB, whatever the number of batches.

    Examples
    --------
    >>> import numpy as np, calibkit as ck
    >>> meter = ck.CalibrationMeter(n_bins=2)
    >>> meter.update(np.array([0.2, 0.9]), np.array([0, 1]))
    >>> meter.update(np.array([0.7, 1.0]), np.array([0, 1]))
    >>> meter.n
    4
    >>> a = meter.compute()
    >>> a.table.count.tolist(), round(a.ece, 3)
    ([1, 3], 0.2)
    """

    _state: MeterState  # host sums
    _device: dict[str, Any]  # sums of tensors' batches, on their device until state is read

    def __init__(
        self,
        n_bins: int = 15,
        strategy: str = "uniform",
        *,
        closed: str = "right",
        edges: Any = None,
    ) -> None:
        self.binning = checked_binning(
            n_bins=n_bins, strategy=strategy, closed=closed, edges=edges, where="CalibrationMeter"
        )
        self.reset()

    # -------------------------------------------------------------- accumulation
    def reset(self) -> None:
        """Forget every batch (the binning stays)."""
        self.kind: str | None = None
        self.n_classes = 0
        self.weighted = False
        self.state = {}

    @property
    def state(self) -> MeterState:
        """The state as numpy arrays (sums a tensor's batches left on its device are added
        in first: one transfer, whatever the number of batches)."""
        self._flush()
        return self._state

    @state.setter
    def state(self, value: MeterState) -> None:
        self._state = value
        self._device = {}

    def _flush(self) -> None:
        """Add the sums held on a device to the host state (one transfer)."""
        for name, t in self._device.items():
            host = t.cpu().numpy()
            self._state[name] = self._state[name] + host if name in self._state else host
        self._device = {}

    @property
    def n(self) -> int:
        """The number of forecasts seen."""
        return int(self.state["table_count"].sum()) if self.state else 0

    def update(
        self,
        probs_or_logits: Any,
        labels: Any,
        *,
        from_logits: bool = False,
        sample_weight: Any = None,
    ) -> None:
        """Add one batch: ``(N,)`` probabilities of the positive class or ``(N, C)`` class
        probabilities (logits with ``from_logits=True``), their labels, and optional sample
        weights (every batch weighted, or none). An empty batch adds nothing."""
        where = "CalibrationMeter.update"
        if _size(probs_or_logits) == 0 and _size(labels) == 0:
            return
        if sample_weight is None:
            batch = tensor_batch(
                probs_or_logits, labels, from_logits=bool(from_logits), where=where
            )
            if batch is not None:
                self._add_on_device(batch, where)
                return
        f = prepare(
            probs_or_logits,
            labels,
            from_logits=bool(from_logits),
            where=where,
            sample_weight=sample_weight,
        )
        self._add(f.kind, f.n_classes, f.weight is not None, batch_state(f, self.binning), where)

    def merge(self, other: CalibrationMeter) -> CalibrationMeter:
        """Add another meter's batches to this one (the same binning); returns ``self``."""
        if not isinstance(other, CalibrationMeter):
            raise InputError(
                f"CalibrationMeter.merge: expected a CalibrationMeter, got {type(other).__name__}."
            )
        self._check_binning(other.binning, "CalibrationMeter.merge")
        if other.kind is not None:
            other_state = {k: a.copy() for k, a in other.state.items()}
            self._add(
                other.kind, other.n_classes, other.weighted, other_state, "CalibrationMeter.merge"
            )
        return self

    def _accept(self, kind: str, n_classes: int, weighted: bool, where: str) -> None:
        """Refuse a batch unlike the ones before it (the first sets what the meter holds)."""
        if self.kind is None:
            self.kind, self.n_classes, self.weighted, self.state = kind, n_classes, weighted, {}
        if (kind, n_classes) != (self.kind, self.n_classes):
            raise InputError(
                f"{where}: this batch holds {_shape(kind, n_classes)}, the meter "
                f"{_shape(self.kind, self.n_classes)} so far; every batch needs the same "
                "columns (reset() to start over)."
            )
        if weighted != self.weighted:
            this, before = ("carries", "did not") if weighted else ("has no", "carried")
            raise InputError(
                f"{where}: this batch {this} sample weights, the batches before it {before}; "
                "give every batch its sample_weight (1 for a row that counts once), or none."
            )

    def _add(self, kind: str, n_classes: int, weighted: bool, part: MeterState, where: str) -> None:
        self._accept(kind, n_classes, weighted, where)
        for name, values in part.items():
            held = self._state.get(name)
            self._state[name] = values if held is None else held + values

    def _add_on_device(self, batch: Any, where: str) -> None:
        """Add a checked tensor batch to the sums held on its device, in place."""
        f = batch[0]
        self._accept(f.kind, f.n_classes, False, where)
        if self._device and self._device["table_count"].device != f.conf.device:
            self._flush()  # the sums of another device go to the host first
        if not self._device:
            self._device = tensor_zero_state(
                self.binning, kind=f.kind, n_classes=f.n_classes, device=f.conf.device
            )
        add_tensor_batch(batch, self.binning, self._device)

    def _check_binning(self, other: Binning, where: str) -> None:
        mine = bin_sets(self.binning, kind="binary", n_classes=2)["table"][1].values
        theirs = bin_sets(other, kind="binary", n_classes=2)["table"][1].values
        if self.binning.closed != other.closed or not np.array_equal(mine, theirs):
            raise InputError(
                f"{where}: the meters bin differently ({mine.size - 1} bins closed on the "
                f"{self.binning.closed} and {theirs.size - 1} closed on the {other.closed}, or "
                "other edges); only meters made with the same n_bins/edges/closed add up."
            )

    # -------------------------------------------------------------- distributed
    def sync(self, group: Any = None) -> CalibrationMeter:
        """All-reduce the state across the processes of ``torch.distributed`` (a sum of
        every array), so that each holds the meter of all their batches; nothing happens when
        torch.distributed is not initialised. Every process must call it (a collective).
        Returns ``self``."""
        try:
            import torch
            import torch.distributed as dist
        except ImportError:
            return self
        if not (dist.is_available() and dist.is_initialized()):
            return self
        header = (self.kind, self.n_classes, self.weighted, self.binning.closed)
        headers: list[Any] = [None] * dist.get_world_size(group)
        dist.all_gather_object(headers, header, group=group)
        seen = {h[:3] for h in headers if h[0] is not None}
        if len(seen) > 1 or len({h[3] for h in headers}) > 1:
            raise InputError(
                "CalibrationMeter.sync: the processes' meters differ in what they hold "
                f"({sorted(map(str, seen))}); every process needs forecasts of the same shape, "
                "all weighted or none, and the same binning."
            )
        if not seen:
            return self
        kind, n_classes, weighted = seen.pop()
        if self.kind is None:
            self.kind, self.n_classes, self.weighted = kind, n_classes, weighted
            self.state = zero_state(self.binning, kind=kind, n_classes=n_classes, weighted=weighted)
        device = torch.device("cpu")
        if dist.get_backend(group) == "nccl":
            device = torch.device("cuda", torch.cuda.current_device())
        for name in sorted(self.state):
            t = torch.tensor(self.state[name], device=device)
            dist.all_reduce(t, op=dist.ReduceOp.SUM, group=group)
            self.state[name] = t.cpu().numpy().astype(self.state[name].dtype)
        return self

    # -------------------------------------------------------------- results
    def compute(
        self,
        *,
        interval: str | None = "wilson",
        level: float = 0.95,
        n_boot: int = 1000,
        n_sims: int = 1000,
        seed: int = 0,
    ) -> Audit:
        """The audit of every batch so far (settings as in :func:`calibkit.audit`)."""
        if self.kind is None:
            raise InputError(
                "CalibrationMeter.compute: no forecasts to audit (call update() with a batch "
                "first)."
            )
        return audit_of_state(
            self.state,
            self.binning,
            kind=self.kind,
            n_classes=self.n_classes,
            interval=interval,
            level=level,
            n_boot=n_boot,
            n_sims=n_sims,
            seed=seed,
        )

    def state_dict(self) -> dict[str, Any]:
        """The meter as plain values and numpy arrays (for ``torch.save`` or a checkpoint)."""
        edges = bin_sets(self.binning, kind="binary", n_classes=2)["table"][1].values
        return {
            "version": STATE_VERSION,
            "edges": edges.copy(),
            "closed": self.binning.closed,
            "kind": self.kind,
            "n_classes": self.n_classes,
            "weighted": self.weighted,
            "state": {k: a.copy() for k, a in self.state.items()},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a meter saved by :meth:`state_dict` (the same binning)."""
        where = "CalibrationMeter.load_state_dict"
        try:
            version, edges, closed = state["version"], state["edges"], state["closed"]
            kind, n_classes, weighted = state["kind"], state["n_classes"], state["weighted"]
            arrays = state["state"]
        except (KeyError, TypeError):
            raise InputError(
                f"{where}: expected the dict CalibrationMeter.state_dict() returns (keys "
                "version, edges, closed, kind, n_classes, weighted, state)."
            ) from None
        if version != STATE_VERSION:
            raise InputError(
                f"{where}: state version {version!r}; this calibkit reads version {STATE_VERSION}."
            )
        self._check_binning(Binning(edges=v.edges(edges, where=where), closed=str(closed)), where)
        if kind is None:
            self.reset()
            return
        shapes = state_shapes(
            self.binning, kind=str(kind), n_classes=int(n_classes), weighted=bool(weighted)
        )
        if not isinstance(arrays, dict) or set(arrays) != set(shapes):
            raise InputError(
                f"{where}: the state's arrays do not match a {kind} meter of {n_classes} "
                "classes with these bins; save and load with the same calibkit and binning."
            )
        loaded = {}
        for name, (shape, dtype) in shapes.items():
            a = np.asarray(arrays[name])
            if a.shape != shape:
                raise InputError(
                    f"{where}: state array {name!r} has shape {a.shape}, expected {shape}."
                )
            loaded[name] = a.astype(dtype, copy=True)
        self.kind, self.n_classes, self.weighted = str(kind), int(n_classes), bool(weighted)
        self.state = loaded

    def __repr__(self) -> str:
        what = "empty" if self.kind is None else f"{self.n:,} {self.kind} forecasts"
        return f"CalibrationMeter({what})"


def _size(x: Any) -> int:
    """The number of elements of an array, a tensor (``numel``: no copy) or a list."""
    numel = getattr(x, "numel", None)
    return int(numel()) if callable(numel) else int(np.size(x))


def _shape(kind: str, n_classes: int) -> str:
    if kind == "binary":
        return "binary forecasts (1-D)"
    return f"{kind} forecasts of {n_classes} classes"
