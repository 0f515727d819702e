"""Calibrate a table: the score columns a fitted calibrator reads are replaced by its
probabilities, and every other column is kept as the user wrote it, under its own name
(what ``calibkit apply`` writes).

Examples
--------
>>> import numpy as np, pandas as pd, calibkit as ck
>>> from calibkit.io import calibrate_table
>>> rng = np.random.default_rng(0)
>>> z = rng.normal(0, 3, 200); y = (rng.random(200) < ck.sigmoid(z / 3)).astype(int)
>>> scaler = ck.TemperatureScaling().fit(z, y)
>>> df = pd.DataFrame({"image_id": range(200), "logit_1": z, "y_true": y})
>>> out = calibrate_table(df, scaler, columns={"label": "y_true"})
>>> out.table.column_names, out.calibrated
(['image_id', 'prob_1', 'y_true'], ('prob_1',))
"""

from __future__ import annotations

import contextlib
import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import InputError
from .._files import atomic_path
from ._detect import LABEL_NAMES, detect_kind, detect_one, expand, matches
from ._frames import FrameSource
from ._named import naming_columns
from ._plan import COLUMN_ROLES, ColumnPlan, column_options
from ._read import _one_d, _scores, open_any
from ._rules import shown
from ._sources import NpzSource, Source, TableSource, column_list

__all__ = ["TABLE_OUTPUTS", "CalibratedTable", "calibrate_table", "plan_scores", "write_table"]

#: What :func:`write_table` writes, by extension.
TABLE_OUTPUTS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv"}


@dataclass(frozen=True, eq=False)
class CalibratedTable:
    """The calibrated table, and what became of the input's columns: ``scores`` (read by the
    calibrator and replaced), ``calibrated`` (its probability columns), ``kept`` (copied as
    they were, the label among them) and ``left_out`` (arrays of an ``.npz`` that are not one
    value a row, with the reason)."""

    table: Any
    scores: tuple[str, ...]
    calibrated: tuple[str, ...]
    kept: tuple[str, ...]
    label: str | None
    left_out: dict[str, str] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return int(self.table.num_rows)


def plan_scores(
    src: Source,
    *,
    label: str | None = None,
    probs: Any = None,
    logits: Any = None,
    confidence: str | None = None,
    where: str = "apply",
) -> ColumnPlan:
    """The score columns a calibrator reads (options first, then the detection rules of
    :mod:`calibkit.io`), and the label column only if there is one: new data to calibrate
    often has none."""
    given = [
        name
        for name, option in (("probs", probs), ("logits", logits), ("confidence", confidence))
        if option is not None
    ]
    if len(given) > 1:
        raise InputError(
            f"{where}: pass one of --probs, --logits or --confidence ({', '.join(given)}=), not "
            f"{' and '.join(given)}."
        )
    if probs is not None:
        kind, names = "probs", expand(src, probs, "probs")
    elif logits is not None:
        kind, names = "logits", expand(src, logits, "logits")
    elif confidence is not None:
        src.require(confidence)
        kind, names = "confidence", [confidence]
    else:
        kind, names = detect_kind(src)
    if label is not None:
        src.require(label)
    elif matches(src, LABEL_NAMES):
        label = detect_one(src, LABEL_NAMES, what="the labels", option="label")
    if label in names:
        raise InputError(f"{where}: {label!r} cannot be both a score column and the label.")
    return ColumnPlan(
        kind, tuple(names), label=label, confidence=names[0] if kind == "confidence" else None
    )


def calibrate_table(
    table: Any,
    calibrator: Any,
    plan: ColumnPlan | None = None,
    *,
    columns: Mapping[str, Any] | None = None,
    keep: str | Sequence[str] | None = None,
    where: str = "calibrate_table",
) -> CalibratedTable:
    """Calibrate the scores of a table with a fitted calibrator, keeping its other columns.

    Parameters
    ----------
    table : DataFrame, pyarrow Table, path, or a source of :mod:`calibkit.io`
        A pandas or polars DataFrame, a pyarrow Table, or a prediction file (CSV, TSV,
        Parquet, JSON lines, ``.npz``) read by the file rules.
    calibrator
        A fitted calibrator (``predict_proba``), e.g. from :func:`calibkit.load_calibrator`.
    plan : ColumnPlan, optional
        The score columns (and the label); by default :func:`plan_scores` over ``columns``.
    columns : mapping, optional
        ``probs``, ``logits`` or ``confidence``, and ``label``, as ``columns=`` of
        :func:`calibkit.audit` (detected when omitted).
    keep : str or list of str, optional
        The other columns to keep (names or globs, or a comma-separated string; ``""`` or
        ``[]`` keeps none); by default every one. The label is always kept.

    Returns
    -------
    CalibratedTable
        ``table`` (a pyarrow Table): the input's columns in their order, the score columns
        replaced, where they stood, by ``prob_0 .. prob_{C-1}`` (``prob_1`` alone for a
        binary forecast); kept columns under their own names and types. In an ``.npz``,
        every array with one value a row is a column (a 2-D array, a list column); other
        arrays are listed in ``left_out``. A kept column whose name is one of the calibrated
        columns' (without regard to case) is an InputError naming both.
    """
    with contextlib.ExitStack() as stack:
        if isinstance(table, Source):
            src = table
        else:
            src = stack.enter_context(open_any(table))
        if plan is None:
            options = column_options(columns, where=where)
            unknown = sorted(set(options) - {"label", "probs", "logits", "confidence"})
            if unknown:
                roles = ", ".join(r for r in COLUMN_ROLES if r not in ("format", *unknown))
                raise InputError(
                    f"{where}: columns= names the score columns and the label here; "
                    f"{', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not used "
                    f"(roles: {roles})."
                )
            plan = plan_scores(src, where=where, **options)
        return _calibrate(src, calibrator, plan, keep, where)


def _calibrate(
    src: Source, calibrator: Any, plan: ColumnPlan, keep: Any, where: str
) -> CalibratedTable:
    import pyarrow as pa

    names = list(plan.scores)
    if plan.kind == "confidence":
        scores = _one_d(src, names[0], "numeric")
    else:
        scores = _scores(src, names, plan.kind)
    described = f"{src.shown_as} ({plan.kind}={_short(names)})"
    check_scale(calibrator, plan.kind, described, where=where)
    with naming_columns({plan.kind: names}):
        calibrated = np.asarray(calibrator.predict_proba(scores), dtype=np.float64)
    if calibrated.ndim == 1:
        out = {"prob_1": calibrated}
    else:
        out = {f"prob_{k}": calibrated[:, k] for k in range(calibrated.shape[1])}
    n = int(scores.shape[0])
    kept, left_out = _kept(src, names, plan.label, keep, n, where)
    _no_collision(src, kept, list(out), where)
    values = _values(src, kept, where)
    arrays: dict[str, Any] = {}
    first = min(names, key=src.names.index)
    for name in src.names:  # the calibrated columns where the first score column stood
        if name == first:
            arrays.update({k: pa.array(v) for k, v in out.items()})
        elif name in values:
            arrays[name] = values[name]
    return CalibratedTable(
        pa.table(arrays),
        tuple(names),
        tuple(out),
        tuple(n for n in arrays if n not in out),
        plan.label,
        left_out,
    )


def _short(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{names[0]} .. {names[-1]}"


def _kept(
    src: Source, scores: list[str], label: str | None, keep: Any, n: int, where: str
) -> tuple[list[str], dict[str, str]]:
    """The columns to copy (the label always), and the arrays of an .npz that cannot be."""
    others = [c for c in src.names if c not in scores]
    if keep is None:
        chosen = others
    else:
        chosen = _chosen(src, scores, others, keep, where)
    if label is not None and label not in chosen:
        chosen = [c for c in others if c in chosen or c == label]
    left_out: dict[str, str] = {}
    if isinstance(src, NpzSource):
        for name in list(chosen):
            shape = src.shape(name)
            if len(shape) in (1, 2) and shape[0] == n:
                continue
            why = "one value" if not shape else f"{shape[0]} rows, not {n}"
            if len(shape) > 2:
                why = f"shape {shape}"
            if keep is not None or name == label:
                raise InputError(
                    f"{where}: array {name!r} of {src.shown_as} cannot be a column of the "
                    f"output: it has {why} (the scores have {n} rows)."
                )
            left_out[name] = why
            chosen.remove(name)
    return chosen, left_out


def _chosen(src: Source, scores: list[str], others: list[str], keep: Any, where: str) -> list[str]:
    """The columns ``keep`` names (names or globs; a comma-separated string), in file order."""
    items = [s.strip() for s in keep.split(",")] if isinstance(keep, str) else list(keep)
    items = [s for s in items if s != ""]
    if any(not isinstance(s, str) for s in items):
        raise InputError(f"{where}: keep= takes column names or globs; got {keep!r}.")
    wanted: set[str] = set()
    for item in items:
        if any(ch in item for ch in "*?["):
            hits = [c for c in others if fnmatch.fnmatchcase(c, item)]
            if not hits and not any(fnmatch.fnmatchcase(c, item) for c in scores):
                raise InputError(
                    f"{where}: no {src.kind_of_name} of {src.shown_as} matches {item!r} "
                    f"(--keep); {src.kind_of_name}s: {column_list(src.names)}."
                )
            wanted.update(hits)
        elif item in scores:
            raise InputError(
                f"{where}: --keep names {item!r}, a score column the calibrated columns replace; "
                "leave it out of --keep."
            )
        else:
            src.require(item)
            wanted.add(item)
    return [c for c in others if c in wanted]


def _no_collision(src: Source, kept: list[str], calibrated: list[str], where: str) -> None:
    folded = {c.casefold(): c for c in calibrated}
    for name in kept:
        if name.casefold() in folded:
            same = folded[name.casefold()]
            case = "" if same == name else " (names are compared without regard to case)"
            raise InputError(
                f"{where}: the {src.kind_of_name} {name!r} of {src.shown_as} would be kept beside "
                f"the calibrated column {same!r}{case}; rename it, or leave it out with --keep "
                "(keep=)."
            )


def _values(src: Source, names: list[str], where: str) -> dict[str, Any]:
    """The kept columns as pyarrow arrays, typed as the user wrote them."""
    import pyarrow as pa

    if isinstance(src, NpzSource):
        out = {}
        for name in names:
            arr = src.raw(name)
            if arr.ndim == 2:
                flat = pa.array(np.ascontiguousarray(arr).reshape(-1))
                out[name] = pa.FixedSizeListArray.from_arrays(flat, arr.shape[1])
            else:
                out[name] = pa.array(arr)
        return out
    if isinstance(src, FrameSource):
        return {name: src.arrow(name) for name in names}
    if isinstance(src, TableSource):
        return src.typed(names)
    raise InputError(f"{where}: cannot copy the columns of {src.shown_as}.")


def check_scale(calibrator: Any, kind: str, source: str, *, where: str) -> None:
    """Logits go to a map that reads logits, probabilities to one that reads probabilities."""
    params = calibrator.get_params()
    name = type(calibrator).__name__
    if "from_logits" not in params:
        # maps without the setting read probabilities when their class says so
        if kind == "logits" and getattr(type(calibrator), "domain", None) == "probs":
            raise InputError(
                f"{where}: {name} calibrates probabilities, but {source} gives logits; pass "
                "probability columns with --probs (the softmax, or sigmoid, of the logits)."
            )
        return
    if where == "fit":
        return  # fit sets from_logits to match the columns
    if kind == "logits" and not params["from_logits"]:
        raise InputError(
            f"{where}: the {name} was fitted on probabilities (from_logits=False), but {source} "
            "gives logits; pass the probability columns with --probs."
        )
    if kind != "logits" and params["from_logits"]:
        raise InputError(
            f"{where}: the {name} was fitted on logits, but {source} gives {kind}; pass the "
            "logit columns with --logits."
        )


def write_table(path: str | Path, table: Any, *, where: str = "apply") -> None:
    """Write a pyarrow Table as Parquet or CSV (by the extension, :data:`TABLE_OUTPUTS`),
    atomically (see :mod:`calibkit._files`): a failed write leaves the old file or none. A
    list column (a 2-D array of an ``.npz``) has no CSV form and is refused by name first."""
    import pyarrow as pa

    target = Path(path)
    fmt = TABLE_OUTPUTS.get(target.suffix.lower())
    if fmt is None:
        raise InputError(
            f"{where}: cannot write '{shown(target)}': the output must end in "
            f"{', '.join(TABLE_OUTPUTS)}."
        )
    if fmt == "csv":
        nested = [f.name for f in table.schema if pa.types.is_nested(f.type)]
        if nested:
            raise InputError(
                f"{where}: cannot write '{shown(target)}' as CSV: {', '.join(map(repr, nested))} "
                f"{'holds' if len(nested) == 1 else 'hold'} a list a row (a 2-D array); write "
                ".parquet, or leave it out with --keep (keep=)."
            )
    with atomic_path(target, where=where) as tmp:
        if fmt == "csv":
            import pyarrow.csv as pcsv

            pcsv.write_csv(table, tmp)
        else:
            import pyarrow.parquet as pq

            pq.write_table(table, tmp)
