"""Every recalibration method on real models: fitted on a calibration split, judged on held-out
data, BEFORE and AFTER (the comparison table of docs/repair.md).

    python examples/compare_calibrators.py            # both models, markdown table
    python examples/compare_calibrators.py --quick    # fewer noise-floor simulations

DenseNet-40 on CIFAR-10 ships its own validation (5,000) and test (10,000) logits; WRN-16-4 on
CIFAR-100 ships 10,000 test probabilities, split here in half, stratified, with seed 0. Both files
are in examples/data/ (sources and licences in its README.md).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import calibkit as ck

DATA = Path(__file__).resolve().parent / "data"

# (label in the table, calibkit method, settings, input the method takes)
METHODS = [
    ("temperature", "temperature", {}, "logits"),
    ("Platt (one-vs-rest)", "platt", {}, "logits"),
    ("isotonic (one-vs-rest)", "isotonic", {}, "probs"),
    ("isotonic (top-label)", "isotonic", {"multiclass": "top-label"}, "probs"),
    ("histogram, 15 bins (top-label)", "histogram", {"multiclass": "top-label"}, "probs"),
    # a softmax in float64 rounds the most confident rows to exactly 1: beta calibration takes
    # log(1 - p), so it is told to clip (at float64's epsilon, as the authors' betacal does)
    ("beta (one-vs-rest)", "beta", {"clip": float(np.finfo(np.float64).eps)}, "probs"),
    ("vector scaling", "vector", {}, "logits"),
    ("matrix scaling, ODIR 10", "matrix", {"off_diagonal": 10.0, "intercept": 10.0}, "logits"),
]


def models() -> list[tuple[str, dict[str, np.ndarray]]]:
    found = []
    dense = np.load(DATA / "densenet40_cifar10_logits.npz")
    found.append(
        (
            "DenseNet-40, CIFAR-10 (fit: 5,000 validation; judged: 10,000 test)",
            {
                "fit_logits": dense["val_logits"],
                "fit_labels": dense["val_labels"],
                "eval_logits": dense["test_logits"],
                "eval_labels": dense["test_labels"],
            },
        )
    )
    data = np.load(DATA / "wideresnet16_4_cifar_100_probs.npz")
    probs, labels = data["probs"].astype(np.float64), data["labels"]
    probs /= probs.sum(axis=1, keepdims=True)  # stored as float32: row sums off by 1e-7
    fit, held = ck.stratified_split(labels, calibration_fraction=0.5, seed=0)
    with np.errstate(divide="ignore"):
        logits = np.log(probs)
    found.append(
        (
            "WRN-16-4, CIFAR-100 (10,000 test probabilities split in half, stratified)",
            {
                "fit_logits": logits[fit],
                "fit_labels": labels[fit],
                "eval_logits": logits[held],
                "eval_labels": labels[held],
            },
        )
    )
    return found


def run(n_sims: int) -> None:
    for title, data in models():
        print(f"\n### {title}\n")
        print("| method | ECE (noise floor) | NLL | Brier | accuracy | fit time |")
        print("|---|---|---|---|---|---|")
        before = None
        for label, method, settings, takes in METHODS:
            fit_x, eval_x = data["fit_logits"], data["eval_logits"]
            from_logits = True
            if takes == "probs":
                fit_x, eval_x, from_logits = ck.softmax(fit_x), ck.softmax(eval_x), False
            calibrator = ck.make_calibrator(method, **settings)
            if takes == "logits" and np.isneginf(fit_x).any():
                calibrator.set_params(from_logits=True)
            start = time.perf_counter()
            try:
                ledger = ck.compare_calibration(
                    calibrator,
                    fit_x,
                    data["fit_labels"],
                    from_logits=from_logits,
                    eval_scores=eval_x,
                    eval_labels=data["eval_labels"],
                    n_sims=n_sims,
                )
            except ck.InputError as exc:
                print(f"| {label} | not applicable: {exc} | | | | |")
                continue
            seconds = time.perf_counter() - start
            rows = {row.instrument: row for row in ledger.rows}
            if before is None:
                before = rows
                print(
                    f"| uncalibrated | {rows['ECE'].before:.4f} "
                    f"({ledger.noise_floor_before.mean:.4f}) | {rows['NLL'].before:.4f} | "
                    f"{rows['Brier'].before:.4f} | {rows['accuracy'].before:.4f} | |"
                )
            nll = rows["NLL"].after
            print(
                f"| {label} | {rows['ECE'].after:.4f} ({ledger.noise_floor_after.mean:.4f}) | "
                f"{'inf' if nll is None else f'{nll:.4f}'} | {rows['Brier'].after:.4f} | "
                f"{rows['accuracy'].after:.4f} | {seconds:.2f} s |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 noise-floor simulations")
    args = parser.parse_args()
    run(200 if args.quick else 1000)


if __name__ == "__main__":
    main()
