"""How a result shows itself in a notebook: a registry of HTML renderers, filled from above.

The results users look at (an :class:`~calibkit.Audit`, a reliability table, a ledger, a policy
table, a monitor, a stated-confidence audit) live in layers below ``report``, and the layer law
forbids them to import it, even lazily. So the dependency is inverted: each result class's
``_repr_html_`` calls :func:`html`, which lives here in the base layer and looks the object's
class up in :data:`_RENDERERS` (qualified class name -> renderer). The renderers themselves live in
:mod:`calibkit.report.notebook`, which registers them with :func:`register` when it is imported;
a result module depends only on this file, and the report depends on the results, as before.

:func:`html` loads the renderers the first time it is called, by the name held in
:data:`RENDERERS_MODULE` and :func:`importlib.import_module`. That one string is the sanctioned
upward reference of the package: it names a module of the top layers without importing it at
module level, so ``import calibkit`` stays light (the renderers and matplotlib load only when a
notebook first shows a result) and no lower module needs to know what draws it. A test in
``tests/test_layers.py`` checks that no other module reaches upward through :mod:`importlib`.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["RENDERERS_MODULE", "html", "register"]

#: The module that registers every renderer (imported by :func:`html` on first use).
RENDERERS_MODULE = "calibkit.report.notebook"

#: Qualified class name ("calibkit.audit.result.Audit") -> function returning the HTML.
_RENDERERS: dict[str, Callable[[Any], str]] = {}


def _key(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def register(cls: type, renderer: Callable[[Any], str]) -> None:
    """Make ``renderer(obj)`` the notebook HTML of instances of ``cls`` (and its subclasses).

    Examples
    --------
    >>> class Point:
    ...     def _repr_html_(self) -> str:
    ...         return html(self)
    >>> register(Point, lambda p: "<b>a point</b>")
    >>> Point()._repr_html_()
    '<b>a point</b>'
    >>> del _RENDERERS[_key(Point)]
    """
    _RENDERERS[_key(cls)] = renderer


def html(obj: Any) -> str:
    """The notebook HTML of a calibkit result, drawn by the renderer registered for its class.

    Raises :class:`LookupError` for an object whose class (and every base class) has no
    renderer: that is a missing registration in :data:`RENDERERS_MODULE`, not bad input.

    Examples
    --------
    >>> import numpy as np, calibkit as ck
    >>> table = ck.reliability_bins(np.array([0.2, 0.7, 0.9]), np.array([0, 1, 1]), n_bins=2)
    >>> text = html(table)
    >>> text.startswith('<div class="calibkit">'), text.count('<tr class="bin')
    (True, 2)
    """
    if RENDERERS_MODULE not in sys.modules:
        importlib.import_module(RENDERERS_MODULE)
    for cls in type(obj).__mro__:
        renderer = _RENDERERS.get(_key(cls))
        if renderer is not None:
            return renderer(obj)
    raise LookupError(
        f"no notebook renderer for {_key(type(obj))}; register one in {RENDERERS_MODULE}."
    )
