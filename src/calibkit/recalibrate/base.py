"""What every calibrator shares: scikit-learn-shaped parameters, fitted-state checks, and JSON
persistence (never pickle).

A calibrator file is checked strictly before anything in it is used: every kind declares the
JSON type of each of its settings (``_params_spec``) and of each learned field (``_state_spec``)
with the small declarative :class:`Field` below, and :meth:`Calibrator.from_dict` refuses a
missing, unknown or mistyped field by its path (``state.maps[0].n_iter``) before the kind's
``_set_state`` checks what the values mean (shapes, signs, monotonicity).
"""

from __future__ import annotations

import abc
import inspect
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from .._errors import InputError, NotFittedError
from .._files import write_atomic
from .._json import jsonable, read_json_file
from .._json import shown as _shown
from .._validate import clip_setting, output_path

__all__ = [
    "Calibrator",
    "Field",
    "array",
    "flag",
    "integer",
    "load_calibrator",
    "mapping",
    "number",
    "obj",
    "save_calibrator",
    "text",
]

#: Version of the JSON layout written by :meth:`Calibrator.to_dict`.
FORMAT_VERSION = 1

_INT64 = 2**63 - 1


# ----------------------------------------------------------------------------- field types


@dataclass(frozen=True)
class Field:
    """The JSON type of one field of a calibrator file, and the values it may take.

    ``kind`` is one of ``"bool"`` (true or false, never a string or a number), ``"int"`` (an
    integer, not a boolean, within ``minimum`` .. ``maximum``, by default the int64 range),
    ``"number"`` (a finite number within ``minimum`` .. ``maximum``), ``"text"`` (one of
    ``choices`` when given), ``"list"`` (each entry an ``items``), ``"object"`` (exactly the
    ``fields``, each required) and ``"mapping"`` (any object, whose fields the kind that reads
    it checks: a calibrator held inside another). ``nullable`` also allows null. Made by
    :func:`flag`, :func:`integer`, :func:`number`, :func:`text`, :func:`array`, :func:`obj` and
    :func:`mapping`.

    Examples
    --------
    >>> from calibkit.recalibrate.base import array, integer, number, obj
    >>> spec = obj(n=integer(minimum=1), p=array(number(maximum=1)))
    >>> spec.check({"n": 2, "p": [0.5, 0.25]}, "state") is None
    True
    >>> spec.check({"n": True, "p": []}, "state")
    'state.n must be an integer, got true'
    >>> spec.check({"n": 2, "p": [0.5, 1e999]}, "state")
    'state.p[1] must be a finite number, got Infinity'
    """

    kind: str
    nullable: bool = False
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    items: Field | None = None
    fields: Mapping[str, Field] | None = None

    def check(self, x: Any, path: str) -> str | None:
        """The first way ``x`` breaks this field, as ``"<path> must be ..., got ..."``, or None."""
        if x is None and self.nullable:
            return None
        if self.kind == "bool":
            return None if isinstance(x, bool) else f"{path} must be true or false, got {_shown(x)}"
        if self.kind == "text":
            if not isinstance(x, str):
                return f"{path} must be text, got {_shown(x)}"
            if self.choices and x not in self.choices:
                allowed = ", ".join(repr(c) for c in self.choices)
                return f"{path} must be one of {allowed}, got {_shown(x)}"
            return None
        if self.kind == "int":
            if not isinstance(x, int) or isinstance(x, bool):
                return f"{path} must be an integer, got {_shown(x)}"
            return self._in_range(x, path)
        if self.kind == "number":
            if not isinstance(x, (int, float)) or isinstance(x, bool):
                wanted = "a number or null" if self.nullable else "a number"
                return f"{path} must be {wanted}, got {_shown(x)}"
            try:
                finite = math.isfinite(float(x))
            except OverflowError:  # an integer beyond float range
                finite = False
            if not finite:
                return f"{path} must be a finite number, got {_shown(x)}"
            return self._in_range(x, path)
        if self.kind == "mapping":
            return None if isinstance(x, Mapping) else f"{path} must be an object, got {_shown(x)}"
        if self.kind == "list":
            if not isinstance(x, list):
                return f"{path} must be a list, got {_shown(x)}"
            assert self.items is not None
            for i, item in enumerate(x):
                problem = self.items.check(item, f"{path}[{i}]")
                if problem is not None:
                    return problem
            return None
        assert self.kind == "object" and self.fields is not None
        if not isinstance(x, Mapping):
            return f"{path} must be an object, got {_shown(x)}"
        missing = [name for name in self.fields if name not in x]
        if missing:
            return f"{path} is missing {', '.join(missing)}"
        unknown = [str(name) for name in x if name not in self.fields]
        if unknown:
            known = ", ".join(self.fields) or "none"
            return f"{path} has unknown field(s) {', '.join(unknown)} (known: {known})"
        for name, spec in self.fields.items():
            problem = spec.check(x[name], f"{path}.{name}")
            if problem is not None:
                return problem
        return None

    def _in_range(self, x: Any, path: str) -> str | None:
        if self.minimum is not None and x < self.minimum:
            return f"{path} must be at least {self.minimum}, got {_shown(x)}"
        if self.maximum is not None and x > self.maximum:
            return f"{path} must be at most {self.maximum}, got {_shown(x)}"
        return None


def flag() -> Field:
    """true or false (a string such as "false" is refused: it would read as true)."""
    return Field("bool")


def integer(*, minimum: int = -_INT64 - 1, maximum: int = _INT64) -> Field:
    """An integer (not a boolean) within ``minimum`` .. ``maximum`` (by default int64's)."""
    return Field("int", minimum=minimum, maximum=maximum)


def number(
    *, minimum: float | None = None, maximum: float | None = None, nullable: bool = False
) -> Field:
    """A finite number (an integer too, if a float can hold it), or null when ``nullable``."""
    return Field("number", nullable=nullable, minimum=minimum, maximum=maximum)


def text(*choices: str) -> Field:
    """A string, one of ``choices`` when given."""
    return Field("text", choices=tuple(choices))


def array(items: Field) -> Field:
    """A list whose every entry is ``items``."""
    return Field("list", items=items)


def obj(**fields: Field) -> Field:
    """An object with exactly these fields, each required."""
    return Field("object", fields=fields)


def mapping(*, nullable: bool = False) -> Field:
    """An object whose fields the reader checks itself (a calibrator inside another one)."""
    return Field("mapping", nullable=nullable)


#: The fields of every calibrator file; ``objective`` is there in a calibration record's copy.
_FILE_FIELDS = ("kind", "format_version", "params", "state")

_REGISTRY: dict[str, type[Calibrator]] = {}


class Calibrator(abc.ABC):
    """Base of the recalibration maps.

    Conventions (scikit-learn's): ``__init__`` only stores keyword settings; ``fit(scores,
    labels, *, sample_weight=None)`` learns state in attributes ending in ``_`` and returns
    ``self``; ``predict_proba(scores)`` raises :class:`calibkit.NotFittedError` before ``fit``;
    ``get_params`` / ``set_params`` make ``sklearn.base.clone`` work without importing
    scikit-learn. ``to_dict`` / ``from_dict`` persist a fitted map as JSON.

    Subclasses set ``kind`` (the name in the JSON file), declare the JSON types of their
    settings (``_params_spec``, one :class:`Field` per ``__init__`` keyword) and of their learned
    state (``_state_spec``, an :func:`obj`), and implement ``fit``, ``predict_proba``,
    ``_state`` (learned attributes as JSON-ready values) and ``_set_state`` (which may rely on
    the declared types and checks what the values mean).
    """

    kind: ClassVar[str] = ""
    _params_spec: ClassVar[Mapping[str, Field]] = {}
    _state_spec: ClassVar[Field] = Field("object", fields={})

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.kind:
            _REGISTRY[cls.kind] = cls

    # ------------------------------------------------------------------ parameters
    @classmethod
    def _param_names(cls) -> list[str]:
        signature = inspect.signature(cls.__init__)
        return [p.name for p in signature.parameters.values() if p.kind is p.KEYWORD_ONLY]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The settings given to ``__init__`` (``deep`` is accepted for scikit-learn)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> Calibrator:
        """Change settings; unknown names are an :class:`InputError`."""
        valid = self._param_names()
        for name, value in params.items():
            if name not in valid:
                raise InputError(
                    f"{type(self).__name__}.set_params: unknown parameter {name!r}; "
                    f"valid: {', '.join(valid) or 'none'}."
                )
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    # ------------------------------------------------------------------ scikit-learn
    def __sklearn_tags__(self) -> Any:
        """Tags for scikit-learn >= 1.6 (its ``Pipeline`` asks the last step for them). Only
        scikit-learn calls this, so importing it here adds no dependency."""
        from sklearn.utils import Tags, TargetTags

        return Tags(estimator_type=None, target_tags=TargetTags(required=True))

    def __sklearn_is_fitted__(self) -> bool:
        return self.is_fitted

    # ------------------------------------------------------------------ fitted state
    @property
    def is_fitted(self) -> bool:
        return any(name.endswith("_") and not name.startswith("_") for name in vars(self))

    def _check_fitted(self, where: str) -> None:
        if not self.is_fitted:
            raise NotFittedError(
                f"{type(self).__name__}.{where}: this calibrator is not fitted yet; call "
                "fit(scores, labels) on a calibration split first."
            )

    @abc.abstractmethod
    def fit(self, scores: Any, labels: Any, *, sample_weight: Any = None) -> Calibrator:
        """Learn the map on a calibration split; returns ``self``. ``sample_weight`` (one
        finite weight >= 0 per row, not all 0) weighs each row: integer weights fit what the
        rows repeated that many times fit, and a row of weight 0 is left out."""

    def _check_scores(self, scores: Any, *, where: str) -> None:
        """Raise the :class:`InputError` that ``fit`` would raise about the values of these
        scores under the settings (probabilities of exactly 0 or 1 with ``clip=None``), with
        the row numbers of the whole array. The ledger calls it before it splits the rows, so
        that the message names the user's row, not a row of the calibration split. Nothing to
        check by default."""
        return None

    @abc.abstractmethod
    def predict_proba(self, scores: Any) -> np.ndarray:
        """Calibrated probabilities: (N,) P(label = 1) for binary scores, (N, C) otherwise."""

    @abc.abstractmethod
    def _state(self) -> dict[str, Any]:
        """The learned attributes as JSON-ready values."""

    @abc.abstractmethod
    def _set_state(self, state: dict[str, Any]) -> None:
        """Restore the learned attributes from :meth:`_state` output."""

    # ------------------------------------------------------------------ persistence
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: kind, format version, settings and learned state."""
        self._check_fitted("to_dict")
        return {
            "kind": self.kind,
            "format_version": FORMAT_VERSION,
            "params": self._json_params(),
            "state": jsonable(self._state()),
        }

    def _json_params(self) -> dict[str, Any]:
        """The settings as JSON values (a calibrator holding another writes that one's kind
        and settings; :meth:`_from_params` reads them back)."""
        return jsonable(self.get_params())

    @classmethod
    def _from_params(cls, params: dict[str, Any]) -> Calibrator:
        """A new calibrator with the settings of a file (checked against ``_params_spec``)."""
        return cls(**params)

    @classmethod
    def from_dict(cls, data: Any) -> Calibrator:
        """Rebuild a fitted calibrator from :meth:`to_dict` output; anything else is an
        :class:`InputError` naming the field that is missing, unknown or of the wrong type.

        Examples
        --------
        >>> import calibkit as ck
        >>> data = ck.TemperatureScaling().fit([[2.0, 0.0], [0.0, 1.0]], [0, 0]).to_dict()
        >>> data["params"]["from_logits"] = "true"
        >>> ck.Calibrator.from_dict(data)
        Traceback (most recent call last):
        ...
        calibkit._errors.InputError: load calibrator: malformed 'temperature' calibrator: params.from_logits must be true or false, got "true".
        """  # noqa: E501
        return cls._from_dict(data, where="load calibrator")

    @classmethod
    def _from_dict(cls, data: Any, *, where: str) -> Calibrator:
        if not isinstance(data, Mapping):
            raise InputError(f"{where}: expected a JSON object, got {_shown(data)}.")
        missing = [k for k in _FILE_FIELDS if k not in data]
        if missing:
            raise InputError(
                f"{where}: missing field(s) {', '.join(missing)}; is this a "
                "calibkit calibrator file?"
            )
        unknown = [str(k) for k in data if k not in (*_FILE_FIELDS, "objective")]
        if unknown:
            raise InputError(
                f"{where}: unknown field(s) {', '.join(unknown)}; a calibrator file holds "
                f"{', '.join(_FILE_FIELDS)}."
            )
        kind = data["kind"]
        if not isinstance(kind, str) or kind not in _REGISTRY:
            raise InputError(
                f"{where}: unknown calibrator kind {_shown(kind)}; known: "
                f"{', '.join(sorted(_REGISTRY))}."
            )
        version = data["format_version"]
        if not isinstance(version, int) or isinstance(version, bool) or version != FORMAT_VERSION:
            raise InputError(
                f"{where}: format version {_shown(version)} is not supported (this calibkit "
                f"reads version {FORMAT_VERSION}, an integer)."
            )
        klass = _REGISTRY[kind]
        if cls is not Calibrator and klass is not cls:
            raise InputError(f"{where}: the file holds a {kind!r} calibrator, not {cls.kind!r}.")
        malformed = f"{where}: malformed {kind!r} calibrator"
        problem = obj(**klass._params_spec).check(data["params"], "params")
        if problem is None:
            problem = klass._state_spec.check(data["state"], "state")
        if problem is not None:
            raise InputError(f"{malformed}: {problem}.")
        try:
            calibrator = klass._from_params(dict(data["params"]))
            if "clip" in data["params"]:  # None, or strictly between 0 and 0.5
                clip_setting(data["params"]["clip"], where="params")
            calibrator._set_state(dict(data["state"]))
        except InputError as exc:
            raise InputError(f"{malformed}: {exc}") from None
        except (TypeError, KeyError, ValueError, ArithmeticError) as exc:
            raise InputError(f"{malformed} ({exc}).") from None
        return calibrator


def save_calibrator(path: str | os.PathLike[str], calibrator: Calibrator) -> Path:
    """Write a fitted calibrator as JSON, atomically: a failed write leaves no partial file.

    Examples
    --------
    >>> import tempfile, pathlib, calibkit as ck
    >>> ts = ck.TemperatureScaling().fit([[2.0, 0.0], [0.0, 1.0], [1.0, 0.0]], [0, 1, 1])
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = ck.save_calibrator(pathlib.Path(d) / "t.json", ts)
    ...     round(ck.load_calibrator(path).temperature_, 4)
    1.3222
    """
    where = "save_calibrator"
    path = output_path(path, where=where, call="save_calibrator(path, calibrator)")
    if not isinstance(calibrator, Calibrator):
        raise InputError(
            f"{where}: calibrator must be a fitted calibkit calibrator, got "
            f"{type(calibrator).__name__}."
        )
    text = json.dumps(calibrator.to_dict(), indent=2, allow_nan=False)
    return write_atomic(path, text + "\n", where=where)


def load_calibrator(path: str | os.PathLike[str]) -> Calibrator:
    """Read a calibrator written by :func:`save_calibrator`, checked field by field (see
    :meth:`Calibrator.from_dict`); the file goes through calibkit's bounded JSON reader."""
    data = read_json_file(path, where="load calibrator")
    return Calibrator._from_dict(data, where=f"load calibrator: '{Path(path)}'")
