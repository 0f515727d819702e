"""What every calibrator shares: scikit-learn-shaped parameters, fitted-state checks, and JSON
persistence (never pickle)."""

from __future__ import annotations

import abc
import inspect
import json
import os
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from .._errors import InputError, NotFittedError
from .._files import write_atomic
from .._json import jsonable

__all__ = ["Calibrator", "load_calibrator", "save_calibrator"]

#: Version of the JSON layout written by :meth:`Calibrator.to_dict`.
FORMAT_VERSION = 1

_REGISTRY: dict[str, type[Calibrator]] = {}


class Calibrator(abc.ABC):
    """Base of the recalibration maps.

    Conventions (scikit-learn's): ``__init__`` only stores keyword settings; ``fit(scores,
    labels)`` learns state in attributes ending in ``_`` and returns ``self``;
    ``predict_proba(scores)`` raises :class:`calibkit.NotFittedError` before ``fit``;
    ``get_params`` / ``set_params`` make ``sklearn.base.clone`` work without importing
    scikit-learn. ``to_dict`` / ``from_dict`` persist a fitted map as JSON.

    Subclasses set ``kind`` (the name in the JSON file) and implement ``fit``,
    ``predict_proba``, ``_state`` (learned attributes as JSON-ready values) and
    ``_set_state``.
    """

    kind: ClassVar[str] = ""

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
    def fit(self, scores: Any, labels: Any) -> Calibrator:
        """Learn the map on a calibration split; returns ``self``."""

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
            "params": jsonable(self.get_params()),
            "state": jsonable(self._state()),
        }

    @classmethod
    def from_dict(cls, data: Any) -> Calibrator:
        """Rebuild a fitted calibrator from :meth:`to_dict` output; anything else is an
        :class:`InputError` saying what is wrong."""
        where = "load calibrator"
        if not isinstance(data, dict):
            raise InputError(f"{where}: expected a JSON object, got {type(data).__name__}.")
        missing = [k for k in ("kind", "format_version", "params", "state") if k not in data]
        if missing:
            raise InputError(
                f"{where}: missing field(s) {', '.join(missing)}; is this a "
                "calibkit calibrator file?"
            )
        kind = data["kind"]
        if kind not in _REGISTRY:
            raise InputError(
                f"{where}: unknown calibrator kind {kind!r}; known: {', '.join(sorted(_REGISTRY))}."
            )
        if data["format_version"] != FORMAT_VERSION:
            raise InputError(
                f"{where}: format version {data['format_version']!r} is not "
                f"supported (this calibkit reads version {FORMAT_VERSION})."
            )
        klass = _REGISTRY[kind]
        if cls is not Calibrator and klass is not cls:
            raise InputError(f"{where}: the file holds a {kind!r} calibrator, not {cls.kind!r}.")
        try:
            calibrator = klass(**data["params"])
            calibrator._set_state(data["state"])
        except (TypeError, KeyError, ValueError) as exc:
            if isinstance(exc, InputError):
                raise
            raise InputError(f"{where}: malformed {kind!r} calibrator ({exc}).") from None
        return calibrator


def save_calibrator(calibrator: Calibrator, path: str | os.PathLike[str]) -> Path:
    """Write a fitted calibrator as JSON, atomically: a failed write leaves no partial file."""
    text = json.dumps(calibrator.to_dict(), indent=2, allow_nan=False)
    return write_atomic(path, text + "\n", where="save_calibrator")


def load_calibrator(path: str | os.PathLike[str]) -> Calibrator:
    """Read a calibrator written by :func:`save_calibrator`."""
    source = Path(path)
    try:
        data = json.loads(source.read_text())
    except FileNotFoundError:
        raise InputError(f"load calibrator: no such file: '{source}'.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"load calibrator: cannot read '{source}' ({exc}).") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"load calibrator: '{source}' is not valid JSON ({exc}).") from None
    return Calibrator.from_dict(data)
