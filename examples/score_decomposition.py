"""How much of each shipped model's loss would recalibration remove?

For every model whose outputs ship in ``examples/data``, the CORP decomposition (Dimitriadis,
Gneiting and Jordan 2021) of the Brier score and the log loss of its top-label (or stated)
confidence: score = MCB - DSC + UNC, where MCB is what the isotonic recalibration of the
outcomes on the confidences would remove. Beside it, the binned ECE and the 95th percentile
of its noise floor (the ECE a calibrated forecaster shows on the same N and bins).

Run: ``python examples/score_decomposition.py`` (prints the table of docs/repair.md, in Markdown).
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

import numpy as np

import calibkit as ck

DATA = Path(__file__).resolve().parent / "data"


def models() -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    """(name, confidence, outcome) of every shipped model, top-label or stated."""
    dense = np.load(DATA / "densenet40_cifar10_logits.npz")
    conf, correct = ck.top_label(ck.softmax(dense["test_logits"]), dense["test_labels"])
    yield "DenseNet-40, CIFAR-10", conf, correct
    with open(DATA / "resnet110_c10.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    conf = np.array([float(r["confidence"]) for r in rows])
    correct = np.array([r["true_label"] == r["pred_label"] for r in rows], dtype=np.int64)
    yield "ResNet-110, CIFAR-10", conf, correct
    wrn = np.load(DATA / "wideresnet16_4_cifar_100_probs.npz")
    probs = wrn["probs"].astype(np.float64)
    probs /= probs.sum(axis=1, keepdims=True)  # float32 rows sum to 1 within 4e-7
    conf, correct = ck.top_label(probs, wrn["labels"])
    yield "WRN-16-4, CIFAR-100", conf, correct
    import pyarrow.parquet as pq

    table = pq.read_table(DATA / "llm_stated_confidence.parquet")
    llm = np.asarray(table.column("llm").to_pylist())
    stated = table.column("stated_confidence").to_numpy()
    right = table.column("correct").to_numpy().astype(np.int64)
    for name in sorted(set(llm)):
        rows_of = llm == name
        yield f"{name} (stated)", stated[rows_of], right[rows_of]


def row(name: str, conf: np.ndarray, outcome: np.ndarray, *, seed: int = 0) -> dict:
    """The table's numbers for one model."""
    corp = ck.corp(conf, outcome, n_boot=0)
    floor = ck.noise_floor(conf, n_sims=200, seed=seed)
    return {
        "model": name,
        "n": conf.size,
        "ece": ck.ece(conf, outcome),
        "floor_p95": floor.p95,
        "brier": corp.brier.score,
        "brier_mcb": corp.brier.miscalibration,
        "brier_removable": corp.brier.removable,
        "log_loss": corp.log_loss.score,
        "log_loss_mcb": corp.log_loss.miscalibration,
        "log_loss_removable": corp.log_loss.removable,
        # forecasts of certainty (exactly 0 or 1) that the outcome contradicts: each makes the
        # log loss, and the part of it recalibration would remove, infinite
        "certain_and_wrong": int(
            np.sum(((conf == 1) & (outcome == 0)) | ((conf == 0) & (outcome == 1)))
        ),
    }


def _share(mcb: float, removable: float) -> str:
    if not np.isfinite(mcb):
        return "inf"
    return f"{mcb:.4f} ({removable:.0%})"


def markdown(rows: list[dict]) -> str:
    """The rows as the Markdown table of docs/repair.md."""
    lines = [
        "| model | N | ECE | noise floor (95th pct) | Brier | Brier MCB (share) | log loss "
        "| log-loss MCB (share) | certain and wrong |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        log_loss = "inf" if not np.isfinite(r["log_loss"]) else f"{r['log_loss']:.4f}"
        lines.append(
            f"| {r['model']} | {r['n']:,} | {r['ece']:.4f} | {r['floor_p95']:.4f} "
            f"| {r['brier']:.4f} | {_share(r['brier_mcb'], r['brier_removable'])} "
            f"| {log_loss} | {_share(r['log_loss_mcb'], r['log_loss_removable'])} "
            f"| {r['certain_and_wrong']:,} |"
        )
    return "\n".join(lines)


def main() -> int:
    print(markdown([row(*model) for model in models()]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
