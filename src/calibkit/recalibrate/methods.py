"""The calibration methods by name, as the command line spells them.

``make_calibrator("temperature")`` returns ``TemperatureScaling()``. Each class is imported only
when asked for, so a method whose module is missing (or whose optional dependency is) gives a
clear :class:`calibkit.InputError` saying it is not available, and the others keep working.
"""

from __future__ import annotations

import importlib
from typing import Any

from .._errors import InputError
from .base import Calibrator

__all__ = ["METHOD_NAMES", "available_methods", "make_calibrator", "method_class"]

#: name -> (class name, modules of calibkit.recalibrate that may define it, first match wins)
_METHODS: dict[str, tuple[str, tuple[str, ...]]] = {
    "temperature": ("TemperatureScaling", ("temperature",)),
    "platt": ("PlattScaling", ("platt",)),
    "isotonic": ("IsotonicCalibration", ("isotonic", "platt")),
    "histogram": ("HistogramBinning", ("histogram", "platt")),
    "beta": ("BetaCalibration", ("beta", "platt")),
    "vector": ("VectorScaling", ("matrix",)),
    "matrix": ("MatrixScaling", ("matrix",)),
}

#: The method names of ``calibkit fit --method``, in the order the documentation lists them.
METHOD_NAMES: tuple[str, ...] = tuple(_METHODS)

_PACKAGE = "calibkit.recalibrate"


def method_class(name: str) -> type[Calibrator]:
    """The calibrator class of a method name, imported now.

    Raises :class:`calibkit.InputError` ("not available") for a name that is not a method, or a
    method whose module or dependency is not installed.
    """
    where = "make_calibrator"
    if not isinstance(name, str) or name not in _METHODS:
        raise InputError(
            f"{where}: method {name!r} is not available; choose one of {', '.join(METHOD_NAMES)}."
        )
    klass, problem = _load(name)
    if klass is None:
        raise InputError(
            f"{where}: method {name!r} ({_METHODS[name][0]}) is not available in this "
            f"installation of calibkit ({problem}); available now: "
            f"{', '.join(available_methods()) or 'none'}."
        )
    return klass


def _load(name: str) -> tuple[type[Calibrator] | None, str]:
    """The class of a known method name, or None and why not."""
    class_name, modules = _METHODS[name]
    problems: list[str] = []
    for module_name in modules:
        full = f"{_PACKAGE}.{module_name}"
        try:
            module = importlib.import_module(full)
        except ModuleNotFoundError as exc:
            if exc.name == full:
                problems.append(f"no module {full}")
                continue
            return None, f"importing {full} needs {exc.name!r}, which is not installed"
        klass = getattr(module, class_name, None)
        if klass is None:
            problems.append(f"{full} has no {class_name}")
            continue
        if not (isinstance(klass, type) and issubclass(klass, Calibrator)):
            return None, f"{full}.{class_name} is not a calibkit Calibrator"
        return klass, ""
    return None, "; ".join(problems)


def make_calibrator(name: str, **settings: Any) -> Calibrator:
    """A new, unfitted calibrator of a method name, with keyword settings.

    Parameters
    ----------
    name : {"temperature", "platt", "isotonic", "histogram", "beta", "vector", "matrix"}
    **settings
        Keyword settings of the class (``from_logits=False``, ...); an unknown one is an
        :class:`calibkit.InputError` listing the valid ones.

    Examples
    --------
    >>> from calibkit.recalibrate.methods import make_calibrator
    >>> make_calibrator("temperature", from_logits=False)
    TemperatureScaling(from_logits=False, method='newton', clip=None, check_logits=True)
    """
    klass = method_class(name)
    valid = klass._param_names()
    unknown = [key for key in settings if key not in valid]
    if unknown:
        raise InputError(
            f"make_calibrator: {klass.__name__} has no setting "
            f"{', '.join(repr(u) for u in unknown)}; valid: {', '.join(valid) or 'none'}."
        )
    return klass(**settings)


def available_methods() -> tuple[str, ...]:
    """The method names whose class can be imported now."""
    return tuple(name for name in METHOD_NAMES if _load(name)[0] is not None)
