"""Check, in the benchmark's environment, that the calls of docs/conventions.md reproduce the
peers' ECE exactly (to 1e-12), on data with values on bin edges and exactly 0 and 1.

    .venv-bench/bin/python benchmarks/check_conventions.py
"""

from __future__ import annotations

import numpy as np

import calibkit as ck


def data(n: int = 20_000, m: int = 15, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.random(n)
    on_edges = rng.random(n) < 0.3
    p[on_edges] = np.linspace(0.0, 1.0, m + 1)[rng.integers(0, m + 1, on_edges.sum())]
    y = (rng.random(n) < p**1.2).astype(np.int64)
    return p, y


def main() -> None:
    import torch
    from netcal.metrics import ECE
    from sklearn.calibration import calibration_curve
    from torchmetrics.functional.classification import binary_calibration_error

    m = 15
    p, y = data(m=m)
    rows = []
    # torch's float64 linspace puts some edges one ulp away from numpy's: use its own edges
    torch_edges = np.r_[torch.linspace(0, 1, m + 1, dtype=torch.float64).numpy(), 1.0]
    for norm in ("l1", "l2", "max"):
        theirs = float(
            binary_calibration_error(torch.from_numpy(p), torch.from_numpy(y), n_bins=m, norm=norm)
        )
        mine = ck.ece(p, y, edges=torch_edges, closed="left", norm=norm)
        rows.append((f"torchmetrics binary norm={norm}", theirs, mine))
    rows.append(
        ("netcal ECE", float(ECE(bins=m).measure(p, y)), ck.ece(p, y, n_bins=m, closed="left"))
    )
    prob_true, prob_pred = calibration_curve(y, p, n_bins=m)
    table = ck.reliability_bins(p, y, n_bins=m)
    nz = table.count > 0
    rows.append(("sklearn prob_true", float(np.abs(prob_true - table.acc[nz]).max()), 0.0))
    rows.append(("sklearn prob_pred", float(np.abs(prob_pred - table.conf[nz]).max()), 0.0))
    worst = 0.0
    for name, theirs, mine in rows:
        worst = max(worst, abs(theirs - mine))
        print(
            f"{name:34s} theirs {theirs:.15f}  calibkit {mine:.15f}  |d| {abs(theirs - mine):.1e}"
        )
    print("all agree to 1e-12" if worst < 1e-12 else f"DISAGREEMENT: {worst:.2e}")


if __name__ == "__main__":
    main()
