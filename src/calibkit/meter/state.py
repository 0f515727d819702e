"""A meter's state: the sums of one batch (arrays, or a tensor on its device), their shapes,
and the :class:`~calibkit.Audit` of a state (shared by :class:`~calibkit.CalibrationMeter` and
:class:`calibkit.torch.CalibrationError`)."""

from __future__ import annotations

import functools
import warnings
from dataclasses import replace
from typing import Any

import numpy as np

from .. import _kernels
from .._errors import CalibkitWarning, InputError
from ..audit import Audit
from ..audit.summary import audit_from_summary
from ..engines import Binning
from ..engines.memory import chunk_summary
from ..forecasts import Prepared
from ..measure.bins import BinStats, Edges, resolve_edges
from ..measure.slope import undefined_slope
from ..measure.summary import (
    AUC_STEPS,
    HL_GROUPS,
    LOGIT_SPAN,
    RankGrid,
    Summary,
    coarsen,
    fine_edges,
    grid_cells,
)

__all__ = [
    "MeterState",
    "audit_of_state",
    "batch_state",
    "bin_sets",
    "checked_binning",
    "state_shapes",
    "add_tensor_batch",
    "tensor_batch",
    "tensor_zero_state",
    "zero_state",
]

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
        "deciles": ("right", Edges(_fine_edges(), "explicit", 0)),
    }
    if kind == "top-label":
        out.update({f"class{k}": (binning.closed, uniform) for k in range(n_classes)})
    return out


@functools.cache
def _fine_edges() -> np.ndarray:
    """The deciles' fine edges, made once (read-only)."""
    edges = fine_edges()
    edges.flags.writeable = False
    return edges


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


def tensor_batch(
    probs: Any, labels: Any, *, from_logits: bool, where: str
) -> tuple[Any, tuple[Any, Any]] | None:
    """A PyTorch batch checked and reduced on its device, with its Brier and log-loss sums;
    ``None`` for input the device path leaves to the host path (see
    :mod:`calibkit._torch_kernels`), and for a log loss that is infinite (the host path warns
    of it)."""
    from .. import _torch_kernels as tk

    f = tk.prepare_tensor(probs, labels, from_logits=from_logits, where=where)
    scores = None if f is None else tk.score_sums(f)
    return None if f is None or scores is None else (f, scores)


def tensor_zero_state(
    binning: Binning, *, kind: str, n_classes: int, device: Any
) -> dict[str, Any]:
    """:func:`zero_state` as tensors on ``device``."""
    import torch

    shapes = state_shapes(binning, kind=kind, n_classes=n_classes, weighted=False)
    return {
        name: torch.zeros(
            shape, dtype=torch.int64 if dtype is np.int64 else torch.float64, device=device
        )
        for name, (shape, dtype) in shapes.items()
    }


def add_tensor_batch(batch: tuple[Any, tuple[Any, Any]], binning: Binning, into: Any) -> None:
    """Add a :func:`tensor_batch` to a state of tensors on its device, in place: what
    :func:`batch_state` gives, summed there (O(batch) work; no state-sized temporary)."""
    from .. import _torch_kernels as tk

    f, (brier, nll) = batch
    sets = bin_sets(binning, kind=f.kind, n_classes=f.n_classes)
    for name in ("table", "deciles"):
        closed, edges = sets[name]
        into_pair = (into[f"{name}_count"], into[f"{name}_sums"])
        tk.bin_sums(f.conf, f.outcome, edges.values, closed, into=into_pair)
    if f.kind == "top-label":
        closed, edges = sets["class0"]
        counts, sums = tk.classwise_sums(f.p, f.y, edges.values, closed)
        for k in range(f.n_classes):
            into[f"class{k}_count"].add_(counts[k])
            into[f"class{k}_sums"].add_(sums[k])
    into["n_correct"].add_(f.correct.sum())
    into["brier_sum"].add_(brier)
    into["nll_sum"].add_(nll)
    tk.grid_counts(
        f.conf,
        f.outcome,
        span=LOGIT_SPAN,
        steps=AUC_STEPS,
        cells=grid_cells(AUC_STEPS),
        into=(into["auc_positives"], into["auc_negatives"]),
    )


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
