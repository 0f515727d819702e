"""The audit by group (``ck.audit(..., by=)``): the audit of all rows, then the same audit of
each group over the bins of all rows, and each group's ECE against its own noise floor at the
Bonferroni level of the groups compared (:func:`calibkit.measure.change.per_test_level`, the
monitor's correction)."""

from __future__ import annotations

import contextlib
import math
import warnings
from dataclasses import fields, replace
from typing import Any

import numpy as np

from .._errors import CalibkitWarning, InputError
from ..engines import Binning
from ..engines.groups import file_groups, group_keys, table_groups
from ..engines.memory import summarize
from ..forecasts import Prepared, prepare
from ..io import Entry, naming_columns, retagged
from ..measure.change import per_test_level
from ..measure.uncertainty import noise_floor_quantile_from_stats
from .grouped import MIN_GROUP_ROWS, GroupedAudit
from .summary import audit_from_summary

__all__ = ["MIN_TAIL_SIMS", "audit_by"]

#: The flag's simulations leave at least this many draws above its quantile: ``n_sims`` is
#: raised to ``ceil(MIN_TAIL_SIMS / (1 - per_group_level))`` where that is more.
MIN_TAIL_SIMS = 20


def audit_by(
    given: Entry,
    path: Any,
    fmt: str | None,
    by: Any,
    *,
    binning: Binning,
    checked: dict[str, Any],
    stages: Any,
    where: str,
    sample_weight: Any = None,
) -> GroupedAudit:
    """The :class:`GroupedAudit` of the predictions ``given`` (read by ``io.entry``; ``path``:
    the file they were read from, if any, in format ``fmt``) grouped by ``by``: a column of
    that table or file, or an array of one group per row. ``sample_weight`` (checked by
    :func:`~calibkit.forecasts.prepare`) weighs every group's audit; a group whose rows all
    weigh 0 holds nothing to audit and is left out, with a warning that names it."""
    keys, name = _groups_of(given, path, fmt, by, where)
    named = (
        naming_columns(given.read.columns, labels=given.labels)
        if given.read is not None
        else contextlib.nullcontext()
    )
    with named:
        f = prepare(
            given.data,
            given.labels,
            from_logits=given.from_logits,
            where=where,
            sample_weight=sample_weight,
        )
    keys = group_keys(keys, f.conf.size, where)
    whole = summarize(f, binning, where=where)
    pooled = audit_from_summary(whole, **checked, stages=stages)
    shared = binning
    if binning.edges is None and binning.strategy == "quantile":  # the quantiles of all rows
        shared = replace(binning, edges=whole.binning.values)
    values, inverse = np.unique(keys, return_inverse=True)
    groups = {}
    weightless = []
    with warnings.catch_warnings():
        # what a group's scores would warn of (a probability of exactly 0 for the true class)
        # the audit of all rows has already said, with the row numbers of the input
        warnings.simplefilter("ignore", CalibkitWarning)
        for i, value in enumerate(values.tolist()):
            part = _rows(f, inverse == i)
            if part.weight is not None and not part.weight.any():
                weightless.append(value)
                continue
            groups[value] = audit_from_summary(summarize(part, shared, where=where), **checked)
    if weightless:
        warnings.warn(
            f"{where}: {len(weightless)} {'group has' if len(weightless) == 1 else 'groups have'} "
            f"only rows of weight 0 and {'is' if len(weightless) == 1 else 'are'} left out: "
            f"{', '.join(str(g) for g in weightless[:10])}.",
            CalibkitWarning,
            stacklevel=3,
        )
    compared = [g for g, a in groups.items() if a.n >= MIN_GROUP_ROWS]
    level = checked["level"]
    per_group = per_test_level(level, len(compared))
    n_sims = max(checked["n_sims"], math.ceil(MIN_TAIL_SIMS / (1.0 - per_group)))
    thresholds = {
        g: noise_floor_quantile_from_stats(a.stats, per_group, n_sims=n_sims, seed=checked["seed"])
        if g in compared
        else None
        for g, a in groups.items()
    }
    result = GroupedAudit(
        by=name,
        pooled=pooled,
        groups=groups,
        thresholds=thresholds,
        level=level,
        per_group_level=per_group,
        n_sims_flag=n_sims,
    )
    notes = {}
    for g, a in groups.items():
        texts = []
        if g not in compared:
            texts.append(
                f"{a.n} {'row' if a.n == 1 else 'rows'}: too few to compare with its noise floor "
                f"(at least {MIN_GROUP_ROWS}), so never flagged"
            )
        why = result.slope_note(g)
        if why is not None:
            texts.append(why)
        if texts:
            notes[g] = tuple(texts)
    return replace(result, notes=notes)


def _groups_of(given: Entry, path: Any, fmt: str | None, by: Any, where: str) -> tuple[Any, str]:
    """The group of each row, and what the grouping is called."""
    if given.source is not None:  # a table in memory: its column
        with retagged(where):
            return table_groups(given.source, by, None, where)
    if isinstance(by, str):
        if path is None:
            raise InputError(
                f"{where}: by={by!r} names a column, but the predictions are arrays; pass an "
                "array of one group per row (by=values), or the table or file that holds the "
                "column."
            )
        with retagged(where):
            return file_groups(path, by, fmt, None, where)
    return by, "group"


def _rows(f: Prepared, rows: np.ndarray) -> Prepared:
    """The prepared forecasts of the rows selected (every per-row array, so a per-row field
    added to :class:`Prepared` follows)."""
    n = f.conf.size
    return replace(
        f,
        **{
            x.name: getattr(f, x.name)[rows]
            for x in fields(f)
            if isinstance(getattr(f, x.name), np.ndarray) and getattr(f, x.name).shape[:1] == (n,)
        },
    )
