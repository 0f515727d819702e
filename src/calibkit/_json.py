"""Turning results into plain JSON values (the one place that knows how)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["jsonable"]


def jsonable(value: Any) -> Any:
    """Plain JSON values: mappings and sequences recursed, numpy scalars and arrays unwrapped,
    NaN and infinity as null (strict JSON has neither).

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit._json import jsonable
    >>> jsonable({"a": np.float32(0.5), "b": [np.nan, np.int64(2)], 3: np.arange(2)})
    {'a': 0.5, 'b': [None, 2], '3': [0, 1]}
    """
    if isinstance(value, Mapping):
        return {str(k): jsonable(x) for k, x in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(x) for x in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
