"""One audit pipeline: ``ck.audit(arrays)`` and ``ck.audit(..., engine=...)`` give the same audit,
every number of ``Audit.to_dict()`` (intervals, noise floor, calibration slope and verdict
included) equal up to the rounding of the engines' sums."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import calibkit as ck

FAST = {"n_boot": 300, "n_sims": 300}


def _cases() -> dict[str, tuple[np.ndarray, np.ndarray, bool, dict[str, Any]]]:
    rng = np.random.default_rng(11)
    n, c = 6000, 4
    z = rng.normal(0, 1.5, (n, c))
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    labels = (p.cumsum(axis=1) < rng.random((n, 1))).sum(axis=1)
    s = rng.normal(-0.5, 2.0, n)
    y = (rng.random(n) < 1 / (1 + np.exp(-0.7 * s))).astype(np.int64)
    prob = 1 / (1 + np.exp(-s))
    return {
        "binary probabilities": (prob, y, False, {"probs": "p", "label": "y"}),
        "binary logits": (s, y, True, {"logits": "s", "label": "y"}),
        "multiclass probabilities": (
            p,
            labels,
            False,
            {"probs": [f"p{k}" for k in range(c)], "label": "y"},
        ),
        "multiclass logits": (
            1.7 * z,
            labels,
            True,
            {"logits": [f"z{k}" for k in range(c)], "label": "y"},
        ),
    }


CASES = _cases()


def _file(tmp: Path, name: str) -> Path:
    x, y, logits, columns = CASES[name]
    if x.ndim == 1:
        table = {("s" if logits else "p"): x, "y": y}
    else:
        prefix = "z" if logits else "p"
        table = {f"{prefix}{k}": x[:, k] for k in range(x.shape[1])}
        table["y"] = y
    path = tmp / f"{name.replace(' ', '_')}.parquet"
    pq.write_table(pa.table(table), path)
    return path


def _differences(a: Any, b: Any, where: str = "") -> list[str]:
    """Where two to_dict() trees differ beyond rounding (numbers to 1e-9 relative)."""
    if isinstance(a, dict):
        keys = set(a) | set(b)
        return [d for k in sorted(keys) for d in _differences(a.get(k), b.get(k), f"{where}.{k}")]
    if isinstance(a, list):
        if not isinstance(b, list) or len(a) != len(b):
            return [f"{where}: {a!r} != {b!r}"]
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in _differences(x, y, f"{where}[{i}]")
        ]
    if isinstance(a, float) and isinstance(b, (float, int)):
        if math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12):
            return []
        return [f"{where}: {a!r} != {b!r}"]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def _max_difference(a: Any, b: Any) -> float:
    if isinstance(a, dict):
        return max([_max_difference(a[k], b[k]) for k in a] or [0.0])
    if isinstance(a, list):
        return max([_max_difference(x, y) for x, y in zip(a, b, strict=True)] or [0.0])
    if isinstance(a, float) and isinstance(b, float) and math.isfinite(a):
        return abs(a - b)
    return 0.0


@pytest.mark.parametrize("name", list(CASES))
def test_every_engine_gives_the_in_memory_audit(name: str, tmp_path: Path, spark: Any) -> None:
    x, y, logits, columns = CASES[name]
    reference = ck.audit(x, y, from_logits=logits, **FAST).to_dict()
    path = _file(tmp_path, name)
    chunks = [(x[i : i + 1000], y[i : i + 1000]) for i in range(0, len(y), 1000)]
    runs = {
        "memory (engine=)": ck.audit(x, y, from_logits=logits, engine="memory", **FAST),
        "memory (a file)": ck.audit(str(path), columns=columns, engine="memory", **FAST),
        "stream (batches)": ck.audit(chunks, from_logits=logits, **FAST),
        "stream (a file)": ck.audit(str(path), columns=columns, engine="stream", **FAST),
        "duckdb": ck.audit(str(path), columns=columns, engine="duckdb", **FAST),
        "spark": ck.audit(spark.read.parquet(str(path)), columns=columns, engine="spark", **FAST),
    }
    for engine, result in runs.items():
        got = result.to_dict()
        if engine.startswith("stream"):  # the one approximation, bounded and stated
            assert abs(got["auc"] - reference["auc"]) <= got["auc_error"] > 0
            assert any("AUC from a logit grid" in note for note in got["notes"])
            got.update(auc=reference["auc"], auc_error=0.0, notes=reference["notes"])
        if engine in ("duckdb", "spark"):  # no distinct forecasts in SQL, and it says so
            assert got["distinct"] is None and reference["distinct"] is not None
            assert any("need every distinct forecast" in note for note in got["notes"])
            got.update(distinct=reference["distinct"], notes=reference["notes"])
        assert not _differences(reference, got), (engine, _differences(reference, got)[:5])
        assert _max_difference(reference, got) < 1e-9, engine


def test_a_stream_read_once_says_why_it_has_no_slope() -> None:
    x, y, _, _ = CASES["binary probabilities"]
    a = ck.audit(iter([(x[:3000], y[:3000]), (x[3000:], y[3000:])]), **FAST)
    assert not a.calibration_slope.defined
    assert "a stream read once cannot fit it" in a.calibration_slope.note
    assert "the calibration slope is undefined (a stream read once" in a.verdict()
