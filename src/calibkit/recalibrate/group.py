"""One calibrator per group: a hospital, a language, a question set each get their own map, and
groups too small for one get the map fitted on all the rows (the pooled map).

A model calibrated on average can be miscalibrated in each group, in opposite directions that
cancel in the pooled numbers; :class:`GroupCalibrator` fits a copy of its ``base`` calibrator on
each group's rows. Whether that beats the pooled map is a question for held-out rows:
:func:`calibkit.recalibrate.group_ledger.compare_group_calibration`.
"""

from __future__ import annotations

import re
import warnings
from typing import Any

import numpy as np

from .. import _validate as v
from .._errors import CalibkitWarning, InputError
from .._json import shown
from .base import _REGISTRY, Calibrator, Field, array, integer, mapping, obj, text
from .ledger import _clone
from .temperature import TemperatureScaling

__all__ = ["GroupCalibrator"]

#: How the group values are written in a file (JSON text), by their type.
GROUP_TYPES = ("text", "integer", "boolean")
#: Unseen groups named in the warning of :meth:`GroupCalibrator.predict_proba`.
NAMED = 10


class GroupCalibrator(Calibrator):
    """A copy of ``base`` fitted on each group's rows; the pooled map (``base`` fitted on all
    the rows) for groups with fewer than ``min_group_size`` rows, whose own fit fails, or that
    were not seen in ``fit``.

    Parameters
    ----------
    base : Calibrator, optional
        The calibrator to copy for every group and for the pooled map (unfitted settings; it is
        not touched). Default: ``TemperatureScaling()``.
    by : str, optional
        What the groups are, e.g. the name of the column that holds them; kept in the file so
        that whoever applies the map knows which column to pass as ``groups``.
    min_group_size : int
        Groups with fewer rows in ``fit`` use the pooled map (with ``sample_weight``: fewer
        rows of positive weight; rows are counted, not weight).

    Attributes
    ----------
    groups_ : tuple
        The groups seen in ``fit``, in sorted order (text, integers or booleans).
    sizes_ : dict
        Rows of each group in ``fit``.
    maps_ : dict
        The fitted map of each group that has one.
    fallback_ : dict
        Why each other group uses the pooled map (too few rows, or its own fit failed).
    pooled_ : Calibrator
        ``base`` fitted on all the rows.

    Examples
    --------
    Two sites whose scores are overconfident by factors of 3 and 1 (calibrated): each site's
    temperature finds its own factor.

    >>> import numpy as np, calibkit as ck
    >>> rng = np.random.default_rng(0)
    >>> s = rng.normal(0, 2, 4000); y = (rng.random(4000) < ck.sigmoid(s)).astype(int)
    >>> site = np.repeat(["a", "b"], 2000)
    >>> scores = np.where(site == "a", 3 * s, s)
    >>> gc = ck.GroupCalibrator(by="site").fit(scores, y, groups=site)
    >>> {g: round(m.temperature_, 1) for g, m in gc.maps_.items()}
    {'a': 3.0, 'b': 1.0}
    >>> gc.predict_proba([3.0, 3.0], groups=["a", "b"]).round(3).tolist()
    [0.731, 0.953]
    """

    kind = "group"
    _params_spec = {
        "base": Field("object", nullable=True, fields={"kind": text(), "params": mapping()}),
        "by": Field("text", nullable=True),
        "min_group_size": integer(minimum=1),
    }
    _state_spec = obj(
        group_type=text(*GROUP_TYPES),
        groups=array(text()),
        sizes=array(integer(minimum=1)),
        maps=array(mapping(nullable=True)),
        fallback=array(Field("text", nullable=True)),
        pooled=mapping(),
    )

    def __init__(
        self, *, base: Calibrator | None = None, by: str | None = None, min_group_size: int = 50
    ) -> None:
        self.base = base
        self.by = by
        self.min_group_size = min_group_size

    # ------------------------------------------------------------------ fit and predict
    def fit(
        self, scores: Any, labels: Any, *, groups: Any = None, sample_weight: Any = None
    ) -> GroupCalibrator:
        """Fit the pooled map on every row and a map on each group with at least
        ``min_group_size`` rows; ``groups`` holds one group per row.

        ``sample_weight`` (one finite weight >= 0 per row, not all 0) goes to the pooled fit
        and, row for row, to each group's fit. ``min_group_size`` counts rows, not weight: the
        rows of positive weight (a weight says how much a row counts, not how much evidence
        there is; a group of 3 rows of weight 100 is still 3 rows), and ``sizes_`` stays the
        raw number of rows of each group.
        """
        where = f"{type(self).__name__}.fit"
        template = self._template(where)
        min_size = v.positive_int(self.min_group_size, name="min_group_size", where=where)
        x = v.to_numpy(scores, name="scores", where=where)
        n = x.shape[0] if x.ndim else 0
        keys = self._groups(groups, n=n, where=where)
        group_type = _group_type(keys, where=where)
        y = v.to_numpy(labels, name="labels", where=where)
        w = v.sample_weight(sample_weight, n=n, where=where)
        # first: a message about the values names the row
        pooled = _clone(template).fit(x, y, **_weight_arg(w))
        values, inverse = np.unique(keys, return_inverse=True)
        maps: dict[Any, Calibrator] = {}
        fallback: dict[Any, str] = {}
        sizes: dict[Any, int] = {}
        for i, group in enumerate(values.tolist()):
            rows = np.flatnonzero(inverse == i)
            sizes[group] = int(rows.size)
            counted = rows.size if w is None else int(np.count_nonzero(w[rows]))
            if counted < min_size:
                fallback[group] = (
                    f"{rows.size} rows, fewer than min_group_size={min_size}"
                    if w is None
                    else f"{counted} of its {rows.size} rows have a positive weight, fewer "
                    f"than min_group_size={min_size}"
                )
                continue
            weight = _weight_arg(None if w is None else w[rows])
            fitted, failed = _fit_group(template, x[rows], y[rows], group, where=where, **weight)
            if fitted is not None:
                maps[group] = fitted
            else:
                fallback[group] = f"its own fit failed: {failed}"
                warnings.warn(
                    f"{where}: group {group!r} uses the pooled map: {fallback[group]}",
                    CalibkitWarning,
                    stacklevel=2,
                )
        self.group_type_ = group_type
        self.groups_ = tuple(values.tolist())
        self.sizes_ = sizes
        self.maps_ = maps
        self.fallback_ = fallback
        self.pooled_ = pooled
        return self

    def predict_proba(self, scores: Any, *, groups: Any = None) -> np.ndarray:
        """Calibrated probabilities, each row by its group's map (the pooled map for a group
        without one; a group not seen in ``fit`` also gets it, with a
        :class:`~calibkit.CalibkitWarning` naming it)."""
        where = f"{type(self).__name__}.predict_proba"
        self._check_fitted("predict_proba")
        x = v.to_numpy(scores, name="scores", where=where)
        keys = self._groups(groups, n=x.shape[0] if x.ndim else 0, where=where)
        out = np.array(self.pooled_.predict_proba(x), dtype=np.float64)  # checks every row
        values, inverse = np.unique(keys, return_inverse=True)
        unseen = []
        for i, group in enumerate(values.tolist()):
            rows = inverse == i
            if group not in self.sizes_:
                unseen.append((group, int(np.count_nonzero(rows))))
            elif group in self.maps_:
                out[rows] = self.maps_[group].predict_proba(x[rows])
        if unseen:
            named = ", ".join(f"{g!r} ({n} row{'' if n == 1 else 's'})" for g, n in unseen[:NAMED])
            more = f" and {len(unseen) - NAMED} more" if len(unseen) > NAMED else ""
            known = ", ".join(repr(g) for g in self.groups_[:NAMED])
            warnings.warn(
                f"{where}: {len(unseen)} {'group was' if len(unseen) == 1 else 'groups were'} "
                f"not seen in fit and {'gets' if len(unseen) == 1 else 'get'} the pooled map: "
                f"{named}{more} (fitted groups: {known}"
                f"{', ...' if len(self.groups_) > NAMED else ''}).",
                CalibkitWarning,
                stacklevel=2,
            )
        return out

    def _check_scores(self, scores: Any, *, where: str) -> None:
        self._template(where)._check_scores(scores, where=where)

    def _template(self, where: str) -> Calibrator:
        base = TemperatureScaling() if self.base is None else self.base
        if isinstance(base, type):
            raise InputError(
                f"{where}: base must be a calibrator instance, such as {base.__name__}(), not "
                "the class."
            )
        if not isinstance(base, Calibrator):
            raise InputError(
                f"{where}: base must be a calibkit calibrator (TemperatureScaling(), "
                f"PlattScaling(), ...), got {type(base).__name__}."
            )
        if isinstance(base, GroupCalibrator):
            raise InputError(
                f"{where}: base is itself a GroupCalibrator; group by both columns at once "
                "instead (one group per combination of their values)."
            )
        if self.by is not None and not isinstance(self.by, str):
            raise InputError(f"{where}: by must be text (a column name) or None, got {self.by!r}.")
        return base

    def _groups(self, groups: Any, *, n: int, where: str) -> np.ndarray:
        if groups is None:
            column = f" (the column {self.by!r})" if self.by else ""
            raise InputError(
                f"{where}: pass groups=, the group of each row{column}; a GroupCalibrator maps "
                "each group by its own calibrator."
            )
        return v.group_values(groups, n=n, where=where)

    # ------------------------------------------------------------------ persistence
    def _json_params(self) -> dict[str, Any]:
        base = self.base
        return {
            "base": None if base is None else {"kind": base.kind, "params": base._json_params()},
            "by": self.by,
            "min_group_size": self.min_group_size,
        }

    @classmethod
    def _from_params(cls, params: dict[str, Any]) -> Calibrator:
        base = params["base"]
        if base is not None:
            kind, settings = base["kind"], dict(base["params"])
            if kind not in _REGISTRY or kind == cls.kind:
                known = ", ".join(sorted(k for k in _REGISTRY if k != cls.kind))
                raise InputError(f"params.base.kind must be one of {known}, got {shown(kind)}.")
            klass = _REGISTRY[kind]
            problem = obj(**klass._params_spec).check(settings, "params.base.params")
            if problem is not None:
                raise InputError(f"{problem}.")
            base = klass._from_params(settings)
        return cls(base=base, by=params["by"], min_group_size=params["min_group_size"])

    def _state(self) -> dict[str, Any]:
        return {
            "group_type": self.group_type_,
            "groups": [_written(g) for g in self.groups_],
            "sizes": [self.sizes_[g] for g in self.groups_],
            "maps": [self.maps_[g].to_dict() if g in self.maps_ else None for g in self.groups_],
            "fallback": [self.fallback_.get(g) for g in self.groups_],
            "pooled": self.pooled_.to_dict(),
        }

    def _set_state(self, state: dict[str, Any]) -> None:
        # the types were checked against _state_spec (from_dict)
        group_type = state["group_type"]
        groups = [_read(t, group_type, i) for i, t in enumerate(state["groups"])]
        lists = ("sizes", "maps", "fallback")
        if any(len(state[name]) != len(groups) for name in lists):
            lengths = ", ".join(f"{name} {len(state[name])}" for name in ("groups", *lists))
            raise InputError(f"state lists must have one entry per group; got {lengths}.")
        if len(set(groups)) != len(groups) or groups != sorted(groups):
            raise InputError("state.groups must be distinct and in sorted order.")
        base_kind = (self.base or TemperatureScaling()).kind
        pooled = _nested(state["pooled"], "state.pooled", base_kind)
        maps, fallback = {}, {}
        for i, group in enumerate(groups):
            data, why = state["maps"][i], state["fallback"][i]
            if (data is None) == (why is None):
                raise InputError(
                    f"state.maps[{i}] and state.fallback[{i}]: a group has either its own map "
                    "or the reason it has none, not both or neither."
                )
            if data is not None:
                maps[group] = _nested(data, f"state.maps[{i}]", base_kind)
            else:
                fallback[group] = why
        self.group_type_ = group_type
        self.groups_ = tuple(groups)
        self.sizes_ = dict(zip(groups, state["sizes"], strict=True))
        self.maps_ = maps
        self.fallback_ = fallback
        self.pooled_ = pooled


def _weight_arg(w: np.ndarray | None) -> dict[str, Any]:
    """``sample_weight=w`` for a fit when there are weights (none otherwise: the base's own
    ``fit(scores, labels)`` is called as it always was)."""
    return {} if w is None else {"sample_weight": w}


def _fit_group(
    template: Calibrator,
    x: np.ndarray,
    y: np.ndarray,
    group: Any,
    *,
    where: str,
    sample_weight: np.ndarray | None = None,
) -> tuple[Calibrator | None, str]:
    """A copy of ``template`` fitted on one group's rows (its warnings said again, naming the
    group), or None and why its fit failed."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fitted = _clone(template).fit(x, y, **_weight_arg(sample_weight))
            failed = ""
        except InputError as exc:
            fitted, failed = None, str(exc)
    for w in caught:
        warnings.warn(f"{where}: group {group!r}: {w.message}", w.category, stacklevel=3)
    return fitted, failed


def _group_type(keys: np.ndarray, *, where: str) -> str:
    """How the groups are written in a file: text, integers or booleans (floats and dates are
    refused: their text would not read back as the same value)."""
    kind = keys.dtype.kind
    if kind == "U":
        return "text"
    if kind in "iu":
        return "integer"
    if kind == "b":
        return "boolean"
    if kind == "O":
        types = {type(value) for value in keys.tolist()}
        if types <= {str}:
            return "text"
        if types <= {int}:
            return "integer"
    raise InputError(
        f"{where}: groups must be labels: text, integers or booleans, got values of dtype "
        f"{keys.dtype}; turn them into text first (e.g. groups.astype(str))."
    )


def _written(group: Any) -> str:
    """A group value as the text a file holds."""
    if isinstance(group, bool):
        return "true" if group else "false"
    return str(group)


def _read(written: str, group_type: str, i: int) -> Any:
    """A group value from its text (the inverse of :func:`_written`)."""
    if group_type == "text":
        return written
    if group_type == "boolean":
        if written not in ("true", "false"):
            raise InputError(f"state.groups[{i}] must be true or false as text, got {written!r}.")
        return written == "true"
    if not re.fullmatch(r"-?[0-9]+", written) or str(int(written)) != written:
        raise InputError(f"state.groups[{i}] must be an integer as text, got {written!r}.")
    return int(written)


def _nested(data: Any, path: str, kind: str) -> Calibrator:
    """A calibrator held in the file, checked as a calibrator file of the base's kind."""
    nested = Calibrator._from_dict(data, where=path)
    if nested.kind != kind:
        raise InputError(f"{path} holds a {nested.kind!r} calibrator, but the base is {kind!r}.")
    return nested
