"""Temperature scaling at scale: the in-memory Newton iteration, with each step one pass over a
stream or one aggregation inside DuckDB or Spark (so a fit costs a handful of passes)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import InputError
from ..io import column_options
from ..measure import temperature as tm


@dataclass(frozen=True)
class EngineFit:
    """The solution, the NLL at T = 1 (the solver's first step) and the number of classes."""

    solution: tm.Solution
    nll_before: float
    n_classes: int


def fit_temperature_with_engine(
    data: Any,
    labels: Any = None,
    *,
    engine: str,
    columns: Mapping[str, Any] | None = None,
    where: str = "fit_temperature",
) -> EngineFit:
    """The maximum-likelihood temperature of the logits in ``data`` (see
    :func:`calibkit.fit_temperature`), computed by ``engine``."""
    from . import ENGINES, open_engine

    if columns is not None:
        columns = column_options(columns, where=where)
    if engine in ("duckdb", "spark"):
        if labels is not None:
            raise InputError(
                f"{where}: with engine={engine!r} the labels are a column of the input; name "
                "it in columns= ({'label': ...})."
            )
        sql = open_engine(data, engine=engine, columns=columns, where=where)
        evaluate, separable, n_classes = sql.temperature_oracle(where=where)
    elif engine == "stream":
        from .stream import logit_chunks

        read = logit_chunks(data, labels, columns=columns, where=where)
        n_classes = 0

        def evaluate(beta: float) -> tm.Objective:
            nonlocal n_classes
            point, n_classes = _stream_objective(read, beta)
            return point

        def separable() -> bool:
            return all(tm._separable(z, y) for z, y in read())

    else:
        raise InputError(
            f"{where}: engine must be one of {', '.join(e for e in ENGINES if e != 'memory')} "
            f"here (arrays in memory need no engine); got {engine!r}."
        )
    seen: dict[float, tm.Objective] = {}

    def recorded(beta: float) -> tm.Objective:
        seen[beta] = point = evaluate(beta)
        return point

    solution = tm.drive(tm.newton(where=where), evaluate=recorded, separable=separable)
    return EngineFit(solution, seen[1.0].value, n_classes)


def _stream_objective(
    read: Callable[[], Iterator[tuple[np.ndarray, np.ndarray]]], beta: float
) -> tuple[tm.Objective, int]:
    total, n, classes = np.zeros(3), 0, 2
    for z, y in read():
        point = tm.evaluate(z, y, beta)
        total += np.array([point.value, point.gradient, point.curvature]) * z.shape[0]
        n += z.shape[0]
        classes = 2 if z.ndim == 1 else z.shape[1]
    return tm.Objective(beta, *(total / n)), classes
