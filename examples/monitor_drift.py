"""Calibration monitoring over time: a model whose logits drift after week 10, caught by
``calibkit monitor`` at week 11 and not before.

    python examples/monitor_drift.py                 # writes a Parquet log and the figure
    python examples/monitor_drift.py --out DIR --engine duckdb

Twenty weeks of a 5-class model's logits, 3,000 predictions a week, with a timestamp; labels are
drawn from the softmax of the true logits, so the model is calibrated by construction until
week 10. From week 11 the logged logits are doubled (an overconfident retrained model): the
right temperature moves from 1 to 2. The log is audited by week with the same bins, each week
against the first; the figure is ECE over time with its band.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

import calibkit as ck

WEEKS, PER_WEEK, CLASSES, DRIFT_AFTER = 20, 3000, 5, 10


def make_log(path: Path, *, seed: int = 0) -> Path:
    """The prediction log: logit_0..logit_4, label, ts (a time within the week)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    n = WEEKS * PER_WEEK
    z = rng.normal(0.0, 1.5, (n, CLASSES))
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    labels = (p.cumsum(axis=1) < rng.random((n, 1))).sum(axis=1)
    week = np.repeat(np.arange(WEEKS), PER_WEEK)
    scale = np.where(week >= DRIFT_AFTER, 2.0, 1.0)  # weeks 11..20 log doubled logits
    start = np.datetime64("2026-01-05T00:00:00")  # a Monday
    seconds = week * 7 * 86400 + rng.integers(0, 7 * 86400, n)
    columns = {f"logit_{k}": z[:, k] * scale for k in range(CLASSES)}
    columns.update(label=labels, ts=start + seconds.astype("timedelta64[s]"))
    pq.write_table(pa.table(columns), path)
    return path


def run(out: Path, *, engine: str = "duckdb", seed: int = 0) -> ck.Monitor:
    path = make_log(out / "prediction_log.parquet", seed=seed)
    result = ck.monitor(str(path) if engine == "duckdb" else path, by="week", engine=engine)
    ck.save_figure(out / "monitor.png", ck.monitor_plot(result))
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--engine", default="duckdb", choices=("memory", "duckdb"))
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="calibkit-monitor-"))
    out.mkdir(parents=True, exist_ok=True)
    result = run(out, engine=args.engine)
    print(result)
    print(f"\nfigure: {out / 'monitor.png'}; log: {out / 'prediction_log.parquet'}")


if __name__ == "__main__":
    main()
