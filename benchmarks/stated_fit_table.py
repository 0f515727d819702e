"""Maps of stated confidence on the shipped 11-model data: per model, the held-out ECE before
and after isotonic, Platt, histogram binning and beta calibration, with the 95th percentile of
the noise floor of each side, and the transfer table BoolQ -> every other question set
(isotonic). Prints the Markdown tables of docs/stated-fit.md.

Run from the repository root: ``python benchmarks/stated_fit_table.py``.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pyarrow.parquet as pq

from calibkit.stated.fit import fit_stated

DATA = Path(__file__).resolve().parents[1] / "examples" / "data" / "llm_stated_confidence.parquet"
QUESTION = ("qset", "question_id")  # question ids repeat across question sets
CLIP = 0.005  # half the finest step (0.01) of the stated values, for the maps that take logs
N_SIMS = 200


def main() -> None:
    table = pq.read_table(DATA)
    warnings.simplefilter("ignore")  # the clip and infinite-NLL warnings are expected here
    methods = {"isotonic": None, "platt": CLIP, "histogram": None, "beta": CLIP}
    results = {
        m: fit_stated(table, question=QUESTION, method=m, clip=c, n_sims=N_SIMS)
        for m, c in methods.items()
    }
    print("| model | N held out | ECE before (p95) | " + " | ".join(methods) + " |")
    print("|---|---|---|" + "---|" * len(methods))
    for f in results["isotonic"].fits:
        cells = []
        for m in methods:
            g = results[m].get(f.group)
            mark = " *" if g.within_floor else ""
            cells.append(f"{g.ece_after:.3f} ({g.ledger.noise_floor_after.p95:.3f}){mark}")
        before = f"{f.ece_before:.3f} ({f.ledger.noise_floor_before.p95:.3f})"
        print(f"| {f.group[0]} | {f.ledger.n_eval} | {before} | " + " | ".join(cells) + " |")
    for m in methods:
        k = sum(g.within_floor for g in results[m].fits)
        print(f"\n{m}: within the noise floor for {k} of {len(results[m].fits)} models", end="")
    print("\n")
    sets = ["halu_eval_qa", "sciq_test", "lsat_ar_test", "sat_en"]
    pairs = [("boolq_valid", s) for s in sets]
    transfer = fit_stated(table, question=QUESTION, transfer=pairs, n_sims=N_SIMS)
    print("| model | " + " | ".join(f"boolq -> {s}: before / after" for s in sets) + " |")
    print("|---|" + "---|" * len(sets))
    for group in dict.fromkeys(f.group for f in transfer.fits):
        cells = []
        for s in sets:
            g = next(f for f in transfer.fits if f.group == group and f.judged_on == s)
            mark = " *" if g.within_floor else ""
            cells.append(f"{g.ece_before:.3f} / {g.ece_after:.3f}{mark}")
        print(f"| {group[0]} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
