"""examples/monitor_drift.py: the drift after week 10 is flagged from week 11 on, not before."""

from __future__ import annotations

import numpy as np
from example_loader import load_example


def test_drift_is_flagged_from_week_11_and_not_before(tmp_path):
    example = load_example("monitor_drift")
    result = example.run(tmp_path, engine="duckdb")
    moved = [g.moved for g in result.groups]
    assert len(moved) == example.WEEKS
    assert moved == [False] * example.DRIFT_AFTER + [True] * (example.WEEKS - example.DRIFT_AFTER)
    # the logged logits are the calibrated ones, then doubled: T is 1, then 2
    temperatures = np.array([g.temperature for g in result.groups])
    assert np.all(np.abs(temperatures[: example.DRIFT_AFTER] - 1.0) < 0.1)
    assert np.all(np.abs(temperatures[example.DRIFT_AFTER :] - 2.0) < 0.15)
    # weeks start on Monday 2026-01-05 and follow each other
    starts = np.array([np.datetime64(str(g.group)[:10]) for g in result.groups])
    assert starts[0] == np.datetime64("2026-01-05")
    assert np.all(np.diff(starts) == np.timedelta64(7, "D"))
    assert (tmp_path / "monitor.png").stat().st_size > 10_000
    assert "first at 2026-03-16" in result.verdict()
