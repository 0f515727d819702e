"""Calibration by segment on the shipped answers of 11 language models (BoolQ, SciQ, SAT,
LSAT-AR, HaluEval): where the confidence they state breaks its promise, and whether one
recalibration map per question set beats one map for all.

    python examples/calibration_by_segment.py

Two calls: ``ck.find_miscalibrated_segments`` on the stated confidence with the model and the
question set as features (segments of one or both, found on half the answers and confirmed
on the other half), and ``ck.compare_group_calibration`` with Platt scaling per question set
against one Platt map for all sets, judged on the answers neither map saw. The stated
confidences include exact 0s and 1s, so the maps take their log-odds after clip=1e-3 (each
fit warns how many rows that moves).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

import calibkit as ck

DATA = Path(__file__).resolve().parent / "data" / "llm_stated_confidence.parquet"


def load(path: Path = DATA) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Stated confidence, correctness (0/1) and the features model (``llm``) and ``qset``."""
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=["llm", "qset", "stated_confidence", "correct"])
    features = {name: np.asarray(table[name].to_pylist()) for name in ("llm", "qset")}
    return table["stated_confidence"].to_numpy(), table["correct"].to_numpy(), features


def run(path: Path = DATA) -> tuple[ck.SegmentSearch, ck.GroupCalibrationLedger]:
    conf, correct, features = load(path)
    segments = ck.find_miscalibrated_segments(conf, correct, features)
    with warnings.catch_warnings():  # the clip's row counts, one per fit
        warnings.filterwarnings("ignore", message=".*clip=0.001 moved", category=ck.CalibkitWarning)
        ledger = ck.compare_group_calibration(
            ck.GroupCalibrator(base=ck.PlattScaling(from_logits=False, clip=1e-3), by="qset"),
            conf,
            correct,
            groups=features["qset"],
            from_logits=False,
        )
    return segments, ledger


def main() -> None:
    segments, ledger = run()
    print(segments)
    print()
    print(ledger)


if __name__ == "__main__":
    main()
