"""Optional dependencies: the extra of calibkit that installs each, and the one error a
feature raises when its dependency is missing."""

from __future__ import annotations

import importlib
from types import ModuleType

from ._errors import MissingExtraError

__all__ = ["EXTRAS", "install_command", "missing_extra", "require"]

#: The extra of calibkit that installs each optional module (by its top-level import name).
EXTRAS: dict[str, str] = {
    "numba": "fast",
    "pyspark": "spark",
    "openai": "llm",
    "anthropic": "llm",
    "torch": "torch",
    "torchmetrics": "torch",
    "sklearn": "sklearn",
}


def install_command(module: str) -> str:
    """The command that installs an optional module with calibkit.

    Examples
    --------
    >>> install_command("pyspark.sql")
    "pip install 'calibkit[spark]'"
    """
    top = module.partition(".")[0]
    if top not in EXTRAS:
        raise KeyError(f"calibkit bug: {top!r} is not an optional dependency of calibkit")
    return f"pip install 'calibkit[{EXTRAS[top]}]'"


def missing_extra(module: str, feature: str, *, note: str = "") -> MissingExtraError:
    """The error of a feature whose optional module is not installed (returned, to be raised).

    Examples
    --------
    >>> print(missing_extra("numba", "CALIBKIT_KERNEL=numba"))
    CALIBKIT_KERNEL=numba needs numba, but numba is not installed: pip install 'calibkit[fast]'.
    """
    top = module.partition(".")[0]
    extra = f" {note}" if note else ""
    return MissingExtraError(
        f"{feature} needs {top}, but {top} is not installed: {install_command(top)}{extra}."
    )


def require(module: str, feature: str, *, note: str = "") -> ModuleType:
    """Import an optional module, or raise :class:`MissingExtraError` naming its extra.

    Parameters
    ----------
    module : str
        The module to import (``"pyspark.sql"``); its top-level package is the optional one.
    feature : str
        What needs it, as the user asked for it (``"engine='spark'"``): the message begins so.
    note : str, optional
        A last sentence after the install command (``"(and Java 17 or later)"``).

    Examples
    --------
    >>> import sys, unittest.mock
    >>> try:
    ...     with unittest.mock.patch.dict(sys.modules, {"openai": None}):  # as if not installed
    ...         require("openai", "provider 'openai'")
    ... except ImportError as exc:
    ...     print(exc)
    provider 'openai' needs openai, but openai is not installed: pip install 'calibkit[llm]'.
    """
    top = module.partition(".")[0]
    install_command(top)  # an unknown optional module is a bug here, not the user's
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.partition(".")[0] != top:
            raise  # the optional module is there but one of its own dependencies is not
        raise missing_extra(top, feature, note=note) from exc
