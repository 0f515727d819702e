"""Label-free performance estimates (CBPE, ATC, DoC) against the true accuracy, on shipped data.

    python benchmarks/estimate_validation.py            # every table (a few minutes)
    python benchmarks/estimate_validation.py --quick    # fewer splits, a quick look

1. No shift: DenseNet-40 on CIFAR-10, the 10,000 test rows split at random into a reference
   half and a target half, 200 times; how often the nominal 95% interval of each method's
   estimated accuracy covers the target half's true accuracy (and the mean absolute error).
   Also the shipped validation split as reference and the test split as target.
2. Label shift: reference = a random half of the test rows; target = the other half with class
   k kept whole and one row in three of every other class kept (class k's share tripled
   relative to the others), for k = 0..9, and five targets whose class shares follow a
   Dirichlet(1, ..., 1) draw (each class subsampled to its share over the largest share).
3. Real domain shift: the two Llama 3.1 models of the 11-model language-model file (the only
   ones with a token probability, outside HaluEval): calibrate on one question set, estimate
   accuracy on each other set from the token probability of the chosen answer; then the
   stated (verbalized) confidence of all 11 models, reference BoolQ, target each other set.

Calibrator: isotonic (CBPE); ATC on the top-label confidence; the interval is for the target
rows' accuracy (``estimand="rows"``), ``n_boot`` resamples (200 by default; printed).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import calibkit as ck

DATA = Path(__file__).resolve().parents[1] / "examples" / "data"
METHODS = ("cbpe", "atc", "doc")


def _estimate(ref, ref_labels, target, method, n_boot, seed=0):
    """The estimate on the target as one period, with its shift tests (level 0.95)."""
    estimator = ck.PerformanceEstimator(method=method).fit(ref, ref_labels)
    period = estimator.by_period(target, np.zeros(len(target)), n_boot=n_boot, seed=seed)
    return period.periods[0]


def _row(label, p, truth):
    r, a = p.estimate, p.estimate.accuracy
    covered = "yes" if a.low <= truth <= a.high else "no"
    trust = "ok" if r.trusted else f"{len(r.trust)} rule(s)"
    alarm = "yes" if p.shifted else "no"
    return (
        f"| {label} | {r.method} | {a.estimate:.3f} | {a.low:.3f} to {a.high:.3f} | "
        f"{truth:.3f} | {a.estimate - truth:+.3f} | {covered} | {trust} | {alarm} |"
    )


HEADER = (
    "| case | method | estimate | 95% interval | true | error | covered | trust | shift alarm |\n"
    "|---|---|---|---|---|---|---|---|---|"
)


def _summary(results):
    """Per method: mean absolute error and share covered over (estimate, truth) pairs."""
    print(
        "\n| method | cases | mean abs. error | covered | flagged by trust | shift alarm "
        "| missed, nothing said |"
    )
    print("|---|---|---|---|---|---|---|")
    for method in METHODS:
        pairs = [(p, t) for p, t in results if p.estimate.method == method]
        err = np.mean([abs(p.estimate.accuracy.estimate - t) for p, t in pairs])
        hit = [p.estimate.accuracy.low <= t <= p.estimate.accuracy.high for p, t in pairs]
        flagged = np.mean([p.outside for p, _ in pairs])
        alarmed = np.mean([p.shifted for p, _ in pairs])
        silent = sum(
            not h and not p.outside and not p.shifted for h, (p, _) in zip(hit, pairs, strict=True)
        )
        print(
            f"| {method} | {len(pairs)} | {err:.4f} | {np.mean(hit):.1%} | {flagged:.1%} | "
            f"{alarmed:.1%} | {silent} |"
        )


def densenet():
    d = np.load(DATA / "densenet40_cifar10_logits.npz")
    probs = ck.softmax(d["test_logits"])
    labels = d["test_labels"]
    return ck.softmax(d["val_logits"]), d["val_labels"], probs, labels


def no_shift(n_splits, n_boot, seed):
    val_p, val_y, probs, labels = densenet()
    n = labels.shape[0]
    rng = np.random.default_rng(seed)
    hits = {m: 0 for m in METHODS}
    alarms = {m: 0 for m in METHODS}
    errors = {m: [] for m in METHODS}
    widths = {m: [] for m in METHODS}
    start = time.perf_counter()
    for split in range(n_splits):
        order = rng.permutation(n)
        ref, tgt = order[: n // 2], order[n // 2 :]
        truth = float(np.mean(probs[tgt].argmax(1) == labels[tgt]))
        for m in METHODS:
            period = _estimate(probs[ref], labels[ref], probs[tgt], m, n_boot, seed=split)
            a = period.estimate.accuracy
            alarms[m] += period.shifted
            hits[m] += a.low <= truth <= a.high
            errors[m].append(abs(a.estimate - truth))
            widths[m].append(a.high - a.low)
    took = time.perf_counter() - start
    print(f"\n## 1. No shift: {n_splits} random halves of the DenseNet-40 test set")
    print(f"(n_boot={n_boot}, splits drawn with seed {seed}, {took:.0f} s)\n")
    print(
        "| method | covered (nominal 95%) | mean abs. error | mean interval width "
        "| shift alarms (level 0.95) |"
    )
    print("|---|---|---|---|---|")
    for m in METHODS:
        print(
            f"| {m} | {hits[m] / n_splits:.1%} | {np.mean(errors[m]):.4f} | "
            f"{np.mean(widths[m]):.4f} | {alarms[m] / n_splits:.1%} |"
        )
    print("\nShipped validation split (5,000) as reference, test split (10,000) as target:\n")
    print(HEADER)
    truth = float(np.mean(probs.argmax(1) == labels))
    for m in METHODS:
        print(_row("val -> test", _estimate(val_p, val_y, probs, m, n_boot), truth))


def label_shift(n_boot):
    _, _, probs, labels = densenet()
    rng = np.random.default_rng(7)
    order = rng.permutation(labels.shape[0])
    ref, rest = order[:5000], order[5000:]
    cases = []
    for k in range(10):
        keep = [i for j, i in enumerate(rest) if labels[i] == k or j % 3 == 0]
        cases.append((f"class {k} x3", np.array(keep)))
    for d in range(5):
        share = rng.dirichlet(np.ones(10))
        keep_frac = share / share.max()
        keep = rest[rng.random(rest.shape[0]) < keep_frac[labels[rest]]]
        cases.append((f"Dirichlet {d + 1}", keep))
    print("\n## 2. Label shift on DenseNet-40 (reference: 5,000 test rows; target: the rest,")
    print("resampled to other class shares)\n")
    print(HEADER)
    results = []
    for label, tgt in cases:
        truth = float(np.mean(probs[tgt].argmax(1) == labels[tgt]))
        for m in METHODS:
            r = _estimate(probs[ref], labels[ref], probs[tgt], m, n_boot)
            results.append((r, truth))
            print(_row(f"{label} (n={tgt.shape[0]})", r, truth))
    _summary(results)


def language_models(n_boot):
    import pandas as pd

    frame = pd.read_parquet(DATA / "llm_stated_confidence.parquet")
    token = frame[frame["chosen_token_confidence"].notna()]
    sets = ["boolq_valid", "sciq_test", "sat_en", "lsat_ar_test"]
    print("\n## 3a. Real domain shift: Llama 3.1 token probability of the chosen answer\n")
    print(HEADER)
    results = []
    for llm, rows in token.groupby("llm"):
        for source in sets:
            ref = rows[rows["qset"] == source]
            for target in sets:
                if target == source:
                    continue
                tgt = rows[rows["qset"] == target]
                truth = float(tgt["correct"].mean())
                for m in METHODS:
                    r = _estimate(
                        ref["chosen_token_confidence"].to_numpy(),
                        ref["correct"].to_numpy(),
                        tgt["chosen_token_confidence"].to_numpy(),
                        m,
                        n_boot,
                    )
                    results.append((r, truth))
                    name = str(llm).replace("Meta-Llama-3.1-", "").replace("-Instruct", "")
                    print(_row(f"{name}: {source} -> {target}", r, truth))
    _summary(results)
    print("\n## 3b. Stated confidence, 11 models, reference BoolQ, target each other set\n")
    print(HEADER)
    results = []
    for llm, rows in frame.groupby("llm"):
        ref = rows[rows["qset"] == "boolq_valid"]
        for target in ["sciq_test", "sat_en", "lsat_ar_test", "halu_eval_qa"]:
            tgt = rows[rows["qset"] == target]
            truth = float(tgt["correct"].mean())
            for m in METHODS:
                r = _estimate(
                    ref["stated_confidence"].to_numpy(),
                    ref["correct"].to_numpy(),
                    tgt["stated_confidence"].to_numpy(),
                    m,
                    n_boot,
                )
                results.append((r, truth))
                print(_row(f"{llm}: {target}", r, truth))
    _summary(results)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 splits, 50 resamples")
    parser.add_argument("--splits", type=int, default=200)
    parser.add_argument("--n-boot", type=int, default=200)
    parser.add_argument("--seed", type=int, default=2024, help="seed of the no-shift splits")
    args = parser.parse_args(argv)
    splits, n_boot = (20, 50) if args.quick else (args.splits, args.n_boot)
    no_shift(splits, n_boot, args.seed)
    label_shift(n_boot)
    language_models(n_boot)


if __name__ == "__main__":
    main(sys.argv[1:])
