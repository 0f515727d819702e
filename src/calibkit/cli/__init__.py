"""The ``calibkit`` command line: one module per command, each reading its input, calling one
library function and rendering the result (:mod:`calibkit.report`)."""

from __future__ import annotations

from . import audit, compare, decide, fit, monitor, segments, stated, stated_fit, stated_judge  # noqa: F401
from ._common import EXIT_BAD_INPUT, app

__all__ = ["EXIT_BAD_INPUT", "app", "main"]


def main() -> None:
    """Entry point of the ``calibkit`` console script."""
    app(prog_name="calibkit")
