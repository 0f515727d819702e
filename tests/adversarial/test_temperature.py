"""Temperature scaling at the edges of float64: logits of order 3e8 (was refused: "every row's
logits are equal") and 1e-100 (T came out 1e40 times too large) are fitted as exactly as logits
of order 1, in memory and on every engine; beyond the supported range the error says the range
and how to rescale.

The reference is an independent bounded scalar search (scipy) on the logits divided by the
scale: the maximum-likelihood temperature of c * z is c times that of z.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy.optimize import minimize_scalar
from scipy.special import log_softmax

import calibkit as ck
from calibkit.measure import temperature as tm

pytestmark = pytest.mark.filterwarnings(
    "ignore:PySpark does not yet fully support pandas:FutureWarning"
)

SCALES = [3e8, 1e-100]


def _data(binary: bool, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Logits of unit scale, made over-confident (x 2) from calibrated ones (Gumbel-max)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(2000, 4))
    y = (z + rng.gumbel(size=z.shape)).argmax(axis=1)
    if binary:
        return 2.0 * (z[:, 0] - z[:, 1]), (y == 0).astype(int)
    return 2.0 * z, y


def _reference(z: np.ndarray, y: np.ndarray) -> float:
    """Maximum-likelihood T of unit-scale logits by a bounded search in log T (float64)."""
    z = np.asarray(z, dtype=np.float64)

    def nll(log_t: float) -> float:
        if z.ndim == 1:
            return float(
                np.mean(np.logaddexp(0.0, -np.where(y == 1, 1.0, -1.0) * z / np.exp(log_t)))
            )
        return float(-log_softmax(z / np.exp(log_t), axis=1)[np.arange(len(y)), y].mean())

    result = minimize_scalar(
        nll, bounds=(-5.0, 5.0), method="bounded", options={"xatol": 1e-12, "maxiter": 2000}
    )
    return float(np.exp(result.x))


@pytest.mark.parametrize("kernel", ["numpy", "numba"])
@pytest.mark.parametrize("binary", [False, True], ids=["multiclass", "binary"])
@pytest.mark.parametrize(
    ("scale", "dtype"),
    # float32 holds no number of order 1e-100: such logits would all be 0
    [(3e8, np.float64), (3e8, np.float32), (1e-100, np.float64)],
)
def test_far_scales_are_fitted_exactly(
    scale: float, dtype: Any, binary: bool, kernel: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CALIBKIT_KERNEL", kernel)
    z, y = _data(binary)
    logits = (scale * z).astype(dtype)
    ts = ck.TemperatureScaling().fit(logits, y)
    assert ts.converged_
    expected = _reference(logits.astype(np.float64) / scale, y) * scale
    # abs=0: approx would otherwise accept any two numbers below 1e-12
    assert ts.temperature_ == pytest.approx(expected, rel=1e-6, abs=0)
    # stationary: d NLL / d log T = T d NLL / d T is zero to rounding, at any scale
    assert abs(ts.gradient_ * ts.temperature_) < 1e-9
    assert ts.n_evaluations_ <= 15
    assert ts.nll_after_ < ts.nll_before_


@pytest.mark.parametrize(
    ("scale", "said"), [(1e-200, "below 1e-140"), (1e200, "above 1e\\+140"), (1e-145, "1.")]
)
def test_beyond_the_supported_range_the_error_says_how_to_rescale(scale: float, said: str) -> None:
    z, y = _data(False)
    with pytest.raises(
        ck.InputError,
        match=f"spread .* is {said}.*outside the range temperature scaling supports, 1e-140 to "
        "1e\\+140.*Multiply the logits by a constant c",
    ):
        ck.fit_temperature(scale * z, y)


def test_no_finite_temperature_at_a_far_scale_keeps_its_true_reason() -> None:
    z, y = _data(False)
    with pytest.raises(ck.InputError, match="no information"):
        ck.fit_temperature(np.full((6, 3), 3e8), [0, 1, 2, 0, 1, 2])
    with pytest.raises(ck.InputError, match="uniform guessing"):
        ck.fit_temperature(-3e8 * z, y)
    separable = z.copy()
    separable[np.arange(y.size), y] = z.max(axis=1) + 0.5
    with pytest.raises(ck.InputError, match="separable"):
        ck.fit_temperature(3e8 * separable, y)


@pytest.mark.parametrize("kernel", ["numpy", "numba"])
def test_the_objective_at_beta_zero_gives_a_zero_probability_no_weight(
    kernel: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """f at beta = 0 (the logits' spread, and the T -> infinity check) is the limit beta -> 0+:
    a -inf logit (the log of a probability 0) keeps weight 0, so each row is uniform over its
    finite classes. Worked out by hand here. (numpy gave NaN, numba weighed -inf as a class.)"""
    monkeypatch.setenv("CALIBKIT_KERNEL", kernel)
    rng = np.random.default_rng(0)
    z = rng.normal(size=(500, 4))
    y = rng.integers(0, 3, 500)
    z[::5, 3] = -np.inf
    finite = np.isfinite(z)
    k = finite.sum(axis=1)
    mean = np.where(finite, z, 0.0).sum(axis=1) / k
    variance = (np.where(finite, z - mean[:, None], 0.0) ** 2).sum(axis=1) / k
    got = tm.evaluate(z, y, 0.0)
    assert got.value == pytest.approx(np.mean(np.log(k)), rel=1e-12, abs=0)
    assert got.gradient == pytest.approx(np.mean(mean - z[np.arange(500), y]), rel=1e-10, abs=0)
    assert got.curvature == pytest.approx(variance.mean(), rel=1e-12, abs=0)


# ----------------------------------------------------------------------------- engines


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    session = active or (
        SparkSession.builder.master("local[2]")
        .appName("calibkit-adversarial")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        if active is None:
            session.stop()


def _write(path: Path, z: np.ndarray, y: np.ndarray) -> tuple[Path, dict[str, Any]]:
    if z.ndim == 1:
        pq.write_table(pa.table({"s": z, "label": y}), path)
        return path, {"logits": "s", "label": "label"}
    names = [f"logit_{k}" for k in range(z.shape[1])]
    pq.write_table(pa.table({**{n: z[:, k] for k, n in enumerate(names)}, "label": y}), path)
    return path, {"logits": names, "label": "label"}


@pytest.mark.parametrize("binary", [False, True], ids=["multiclass", "binary"])
@pytest.mark.parametrize("scale", SCALES)
def test_every_engine_fits_far_scales_as_memory_does(
    scale: float, binary: bool, tmp_path: Path, spark: Any
) -> None:
    z, y = _data(binary)
    logits = scale * z
    path, columns = _write(tmp_path / "z.parquet", logits, y)
    expected = _reference(z, y) * scale
    chunks = [(logits[i : i + 300], y[i : i + 300]) for i in range(0, y.size, 300)]
    fits = {
        "memory": ck.fit_temperature(logits, y),
        "stream": ck.fit_temperature(lambda: iter(chunks), engine="stream"),
        "stream-file": ck.fit_temperature(path, engine="stream", columns=columns),
        "duckdb": ck.fit_temperature(str(path), engine="duckdb", columns=columns),
        "spark": ck.fit_temperature(spark.read.parquet(str(path)), engine="spark", columns=columns),
    }
    for engine, t in fits.items():
        assert t == pytest.approx(expected, rel=1e-6, abs=0), engine
        assert t == pytest.approx(fits["memory"], rel=1e-9, abs=0), engine


def test_the_monitor_fits_each_group_at_a_far_scale(tmp_path: Path) -> None:
    """Per-group temperatures (all groups in lock-step, one GROUP BY per round) at 3e8."""
    z, y = _data(False)
    group = np.arange(y.size) % 2
    logits = 3e8 * z * np.where(group == 1, 1.5, 1.0)[:, None]
    path = tmp_path / "g.parquet"
    names = [f"logit_{k}" for k in range(4)]
    cols = {n: logits[:, k] for k, n in enumerate(names)}
    pq.write_table(pa.table({**cols, "label": y, "cohort": group}), path)
    for engine in ("memory", "duckdb"):
        m = ck.monitor(path, by="cohort", engine=engine, n_boot=50, n_sims=50)
        for g in m.groups:
            rows = group == g.group
            expected = _reference(logits[rows] / 3e8, y[rows]) * 3e8
            assert g.temperature == pytest.approx(expected, rel=1e-6, abs=0), (engine, g.group)
