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

import warnings
from dataclasses import replace
from typing import Any

import numpy as np

from . import _kernels
from . import _validate as v
from ._errors import CalibkitWarning, InputError
from .audit import Audit
from .audit.summary import audit_from_summary
from .engines import Binning
from .engines.memory import chunk_summary
from .forecasts import Prepared, prepare
from .measure.bins import BinStats, Edges, resolve_edges
from .measure.slope import undefined_slope
from .measure.summary import HL_GROUPS, RankGrid, Summary, coarsen, fine_edges

__all__ = ["CalibrationMeter", "MeterState"]

#: What a meter's audit leaves out, in its notes.
ONE_PASS_NOTES = (
    "Hosmer-Lemeshow deciles at boundaries of a fine logit grid (a meter sees each batch once); "
    "the test's statistics are exact for the groups used",
    "CORP decompositions, smooth ECE and the KS/Kuiper tests need every distinct forecast, "
    "which a meter does not keep: call ck.corp, ck.smooth_ece and ck.ks_test on the arrays",
)
ONE_PASS_SLOPE = (
    "a meter sees each batch once and cannot fit it (the fit takes a few passes over the data); "
    "call ck.calibration_slope on the arrays"
)
#: Version of :meth:`CalibrationMeter.state_dict`.
STATE_VERSION = 1

#: A meter's state: name -> array (see :func:`state_shapes`).
MeterState = dict[str, np.ndarray]


def checked_binning(*, n_bins: int, strategy: str, closed: str, edges: Any, where: str) -> Binning:
    """The binning of a meter: fixed uniform or explicit edges (quantile edges refused)."""
    binning = Binning.checked(
        n_bins=n_bins, strategy=strategy, closed=closed, edges=edges, where=where
    )
    if binning.strategy == "quantile" and binning.edges is None:
        raise InputError(
            f"{where}: strategy='quantile' needs two passes over the data (one to find the "
            "edges, one to count into them) and a meter sees each batch once; use "
            "strategy='uniform', or pass edges= computed once on held-out forecasts "
            "(ck.bin_edges(probs, n_bins=15, strategy='quantile'))."
        )
    return binning


def bin_sets(binning: Binning, *, kind: str, n_classes: int) -> dict[str, tuple[str, Edges]]:
    """Each set of bins a meter keeps, as (closed side, fixed edges): the table ("table"), the
    Hosmer-Lemeshow deciles' fine logit grid ("deciles") and, top-label, each class's bins
    ("class0", ...; uniform, as :func:`calibkit.audit` bins them beside explicit edges)."""
    where = "CalibrationMeter"
    uniform = resolve_edges(
        None, n_bins=binning.n_bins, strategy="uniform", edges=None, where=where
    )
    table = uniform
    if binning.edges is not None:
        table = Edges(binning.edges, "explicit", binning.edges.size - 1)
    out = {
        "table": (binning.closed, table),
        "deciles": ("right", Edges(fine_edges(), "explicit", 0)),
    }
    if kind == "top-label":
        out.update({f"class{k}": (binning.closed, uniform) for k in range(n_classes)})
    return out


def state_shapes(
    binning: Binning, *, kind: str, n_classes: int, weighted: bool
) -> dict[str, tuple[tuple[int, ...], Any]]:
    """Name -> (shape, dtype) of every array of a meter's state."""
    sums = len(_kernels.SUM_FIELDS)
    out: dict[str, tuple[tuple[int, ...], Any]] = {}
    for name, (_, edges) in bin_sets(binning, kind=kind, n_classes=n_classes).items():
        m = edges.values.size - 1
        out[f"{name}_count"] = ((m,), np.int64)
        out[f"{name}_sums"] = ((sums, m), np.float64)
        if weighted:
            out[f"{name}_weight"] = ((m,), np.float64)
            out[f"{name}_weight_sq"] = ((m,), np.float64)
    out["n_correct"] = ((), np.int64)
    out["brier_sum"] = ((), np.float64)
    out["nll_sum"] = ((), np.float64)
    if weighted:
        out["correct_weight"] = ((), np.float64)
        out["spiegelhalter_variance"] = ((), np.float64)
    cells = RankGrid.of(np.zeros(0), np.zeros(0, dtype=bool)).positives.size
    grid_type = np.float64 if weighted else np.int64
    out["auc_positives"] = ((cells,), grid_type)
    out["auc_negatives"] = ((cells,), grid_type)
    return out


def zero_state(binning: Binning, *, kind: str, n_classes: int, weighted: bool) -> MeterState:
    """The state of no data."""
    shapes = state_shapes(binning, kind=kind, n_classes=n_classes, weighted=weighted)
    return {name: np.zeros(shape, dtype=dtype) for name, (shape, dtype) in shapes.items()}


def batch_state(f: Prepared, binning: Binning) -> MeterState:
    """The state of one prepared batch (what :meth:`CalibrationMeter.update` adds)."""
    sets = bin_sets(binning, kind=f.kind, n_classes=f.n_classes)
    part = chunk_summary(
        f,
        {name: edges for name, (_, edges) in sets.items()},
        closed={name: closed for name, (closed, _) in sets.items()},
    )
    grid = RankGrid.of(f.conf, f.outcome, sample_weight=f.weight)
    out: MeterState = {}
    stats = {"table": part.stats, "deciles": part.deciles}
    stats.update({f"class{k}": s for k, s in enumerate(part.classwise)})
    for name, s in stats.items():
        out[f"{name}_count"] = np.asarray(s.count, dtype=np.int64)
        out[f"{name}_sums"] = np.stack([getattr(s, field) for field in _kernels.SUM_FIELDS])
        if f.weight is not None:
            out[f"{name}_weight"] = np.asarray(s.mass, dtype=np.float64)
            out[f"{name}_weight_sq"] = np.asarray(s.mass_sq, dtype=np.float64)
    out["n_correct"] = np.asarray(part.n_correct, dtype=np.int64)
    out["brier_sum"] = np.asarray(part.brier_sum, dtype=np.float64)
    out["nll_sum"] = np.asarray(part.nll_sum, dtype=np.float64)
    if f.weight is not None:
        out["correct_weight"] = np.asarray(part.correct_weight, dtype=np.float64)
        out["spiegelhalter_variance"] = np.asarray(part.spiegelhalter_variance, dtype=np.float64)
        out["auc_positives"] = grid.positives.astype(np.float64)
        out["auc_negatives"] = grid.negatives.astype(np.float64)
    else:
        out["auc_positives"] = grid.positives.astype(np.int64)
        out["auc_negatives"] = grid.negatives.astype(np.int64)
    return out


def audit_of_state(
    state: MeterState, binning: Binning, *, kind: str, n_classes: int, **settings: Any
) -> Audit:
    """The audit of a meter's state (``settings`` as :func:`calibkit.audit` takes them:
    interval, level, n_boot, n_sims, seed)."""
    weighted = "correct_weight" in state
    sets = bin_sets(binning, kind=kind, n_classes=n_classes)
    where = "CalibrationMeter.compute"

    def stats(name: str) -> BinStats:
        closed, edges = sets[name]
        return BinStats.of_sums(
            edges.values,
            closed,
            np.asarray(state[f"{name}_count"], dtype=np.int64),
            list(np.asarray(state[f"{name}_sums"], dtype=np.float64)),
            weight=state.get(f"{name}_weight"),
            weight_sq=state.get(f"{name}_weight_sq"),
        )

    table = stats("table")
    if table.n == 0:
        raise InputError(f"{where}: no forecasts to audit (call update() with a batch first).")
    if weighted and not table.total_mass > 0:
        raise InputError(
            f"{where}: every sample weight the meter has seen is 0; there is nothing to audit "
            "(give the rows that count a positive weight)."
        )
    with warnings.catch_warnings():  # the deciles' ties are noted by the test, not warned of
        warnings.simplefilter("ignore", CalibkitWarning)
        deciles, _ = coarsen(stats("deciles"), n_bins=HL_GROUPS, where=where)
    grid = RankGrid(state["auc_positives"], state["auc_negatives"])
    auc, error = grid.auc()
    notes: tuple[str, ...] = ONE_PASS_NOTES[:1]
    if error:
        notes += (f"AUC from a logit grid of {grid.positives.size} cells: within +-{error:.1e}",)
    summary = Summary(
        kind=kind,
        n_classes=n_classes,
        binning=sets["table"][1],
        stats=table,
        deciles=deciles,
        classwise=tuple(stats(f"class{k}") for k in range(n_classes) if kind == "top-label"),
        n_correct=int(state["n_correct"]),
        brier_sum=float(state["brier_sum"]),
        nll_sum=float(state["nll_sum"]),
        auc=auc,
        auc_error=error,
        slope=undefined_slope(table.n, ONE_PASS_SLOPE),
        engine="meter",
        notes=notes,
        correct_weight=float(state["correct_weight"]) if weighted else None,
        spiegelhalter_variance=float(state["spiegelhalter_variance"]) if weighted else None,
    )
    made = audit_from_summary(summary, **settings)
    # the audit's note on the distinct forecasts speaks of engines; the meter says its own
    kept = tuple(n for n in made.notes if not n.startswith("CORP decompositions"))
    return replace(made, notes=kept + ONE_PASS_NOTES[1:])


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
    dtype, with or without ``requires_grad``; JAX, CuPy): they are detached, copied to the host
    and checked as :func:`calibkit.audit` checks its input; every sum is float64. The state
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
        self.state: MeterState = {}

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
        if np.size(probs_or_logits) == 0 and np.size(labels) == 0:
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

    def _add(self, kind: str, n_classes: int, weighted: bool, part: MeterState, where: str) -> None:
        if self.kind is None:
            self.kind, self.n_classes, self.weighted, self.state = kind, n_classes, weighted, part
            return
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
        for name, values in part.items():
            self.state[name] = self.state[name] + values

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


def _shape(kind: str, n_classes: int) -> str:
    if kind == "binary":
        return "binary forecasts (1-D)"
    return f"{kind} forecasts of {n_classes} classes"
