"""Six predictions: temperature scaling improves NLL, and four-bin ECE gets worse.

One temperature (Guo et al. 2017) fitted to six 3-class predictions, four of them right, gives
T = 1.22975 and mean NLL 0.82278 -> 0.81243; with four equal-width bins closed on the left
([0, .25), [.25, .5), [.5, .75), [.75, 1]) the ECE goes 0.129 -> 0.380. The likelihood improved
and the binned estimate got worse: on six rows ECE is mostly binning noise. This script computes
those numbers with calibkit (``tests/test_worked_examples.py`` recomputes them by hand), shows the
same six rows with other bin counts and with quantile (equal-mass) bins beside the ECE a
perfectly calibrated forecaster would show, and writes the calibration record a deployment
should keep (and checks it against the data).

Run it from the repository root:

    .venv/bin/python examples/six_predictions.py              # record in a temporary folder
    .venv/bin/python examples/six_predictions.py --out DIR    # record in DIR

The record goes to ``DIR/six_predictions_record.json``; its path is printed at the end.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import calibkit as ck

# The complete synthetic validation set: six logit rows and their labels.
LOGITS = np.array(
    [
        [3.0, 1.0, 0.0],
        [2.5, 1.0, 0.0],
        [3.0, 0.5, 0.0],
        [1.5, 2.0, 0.0],
        [0.5, 0.0, 1.5],
        [2.0, 2.2, 0.0],
    ]
)
LABELS = np.array([0, 0, 1, 1, 2, 0])
CLASSES = "ABC"

# Four equal-width bins, each holding its left edge (the last holds 1).
FOUR_BINS = {"n_bins": 4, "strategy": "uniform", "closed": "left"}
# Bin counts shown beside those four.
BIN_COUNTS = (1, 2, 3, 4, 5, 6, 8, 10, 15)
SEED = 0
N_SIMS = 1000  # as ck.audit's default, so the four-bin floor is the record's
RECORD_NAME = "six_predictions_record.json"


@dataclass(frozen=True)
class SweepRow:
    """ECE of the six rows before and after scaling with one binning, each beside the 95th
    percentile of the ECE a perfectly calibrated forecaster with the same confidences shows."""

    n_bins: int
    strategy: str
    ece_before: float
    ece_after: float
    p95_before: float
    p95_after: float


@dataclass(frozen=True)
class Results:
    temperature: float
    temperature_function: float
    converged: bool
    nll_before: float
    nll_after: float
    accuracy_before: float
    accuracy_after: float
    predicted_before: np.ndarray
    predicted_after: np.ndarray
    before: ck.Forecast
    after: ck.Forecast
    table_before: ck.ReliabilityTable
    table_after: ck.ReliabilityTable
    ece_before: float
    ece_after: float
    audit: ck.Audit
    sweep: tuple[SweepRow, ...]
    record: dict[str, Any]
    record_path: Path
    check: Any  # calibkit's RecordCheck: truthy when the data and the record match
    check_changed_label: Any


def run(out_dir: str | Path) -> Results:
    """Fit, measure and write the calibration record to ``out_dir``; print nothing."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)

    # "Fit one scalar against held-out labels": maximum likelihood over T > 0.
    ts = ck.TemperatureScaling().fit(LOGITS, LABELS)
    probs_before = ck.softmax(LOGITS)
    probs_after = ts.predict_proba(LOGITS)
    before = ck.top_label(probs_before, LABELS)
    after = ck.top_label(probs_after, LABELS)

    # ECE compresses a reliability diagram: the four bins.
    table_before = ck.reliability_bins(*before, **FOUR_BINS)
    table_after = ck.reliability_bins(*after, **FOUR_BINS)

    # Better likelihood, worse ECE: the same rows, binned other ways.
    sweep = []
    for strategy, closed in (("uniform", "left"), ("quantile", "right")):
        for m in BIN_COUNTS:
            if strategy == "quantile" and m > len(LABELS):
                continue  # more equal-mass bins than rows: every extra bin is empty
            bins = {"n_bins": m, "strategy": strategy, "closed": closed}
            floors = [
                ck.noise_floor(f.confidence, **bins, n_sims=N_SIMS, seed=SEED)
                for f in (before, after)
            ]
            sweep.append(
                SweepRow(
                    n_bins=m,
                    strategy=strategy,
                    ece_before=ck.ece(*before, **bins),
                    ece_after=ck.ece(*after, **bins),
                    p95_before=floors[0].p95,
                    p95_after=floors[1].p95,
                )
            )

    # A calibrator belongs to one measurement contract: the record of the scaled probabilities.
    audit = ck.audit(probs_after, LABELS, **FOUR_BINS, seed=SEED)
    record = ck.calibration_record(
        audit,
        scores=LOGITS,
        labels=LABELS,
        scores_kind="logits",
        model="synthetic 3-class classifier (six worked predictions)",
        checkpoint="a worked example (no real checkpoint)",
        outcome_definition="top-1 correct: the argmax of the scaled probabilities is the label",
        population="six synthetic validation examples (classes A, B, C)",
        data_window="fixed worked example, no collection window",
        split={
            "method": "none: T fitted and evaluated on the same six rows",
            "seed": None,
            "fit_rows": len(LABELS),
            "eval_rows": len(LABELS),
        },
        calibrator=ts,
        notes=(
            "scores are the unscaled logits; the audited probabilities are softmax(logits / T) "
            f"with the recorded calibrator (T = {ts.temperature_:.5f}, objective: mean NLL). "
            f"NLL {ts.nll_before_:.5f} at T = 1 -> {ts.nll_after_:.5f}. Fitting and reporting "
            "on the same six rows is optimistic; assess on untouched data from the deployment "
            "population before use."
        ),
    )
    record_path = ck.write_record(out_dir / RECORD_NAME, record)
    read_back = ck.read_record(record_path)  # checked against the JSON Schema
    check = ck.verify_record(read_back, LOGITS, LABELS)
    changed = LABELS.copy()
    changed[5] = 1  # the sixth example's label flipped to B: no longer the recorded data
    check_changed = ck.verify_record(read_back, LOGITS, changed)

    return Results(
        temperature=ts.temperature_,
        temperature_function=ck.fit_temperature(LOGITS, LABELS),
        converged=ts.converged_,
        nll_before=ck.nll(LOGITS, LABELS, from_logits=True),
        nll_after=ck.nll(probs_after, LABELS),
        accuracy_before=ck.accuracy(probs_before, LABELS),
        accuracy_after=ck.accuracy(probs_after, LABELS),
        predicted_before=probs_before.argmax(axis=1),
        predicted_after=probs_after.argmax(axis=1),
        before=before,
        after=after,
        table_before=table_before,
        table_after=table_after,
        ece_before=ck.ece(*before, **FOUR_BINS),
        ece_after=ck.ece(*after, **FOUR_BINS),
        audit=audit,
        sweep=tuple(sweep),
        record=read_back,
        record_path=record_path,
        check=check,
        check_changed_label=check_changed,
    )


def _heading(text: str) -> str:
    return f"\n== {text} " + "=" * max(3, 96 - len(text))


def _contributions(table: ck.ReliabilityTable, n: int) -> list[str]:
    lines = []
    for r in table.rows:
        if r.count:
            share = abs(r.gap) * r.count / n
            lines.append(
                f"  [{r.lo:.2f}, {r.hi:.2f}{']' if r.hi == 1 else ')'}: "
                f"{r.count}/{n} x |{r.acc:.3f} - {r.conf:.3f}| = {share:.3f}"
            )
    return lines


def report(res: Results) -> str:
    """The printed account of :func:`run`'s results, section by section."""
    n = len(LABELS)
    out: list[str] = []
    add = out.append

    add(_heading("Six predictions: one temperature fitted against their labels"))
    add(
        f"{'example':>7}  {'logits':<16} true  pred  correct  conf T=1  "
        f"conf T={res.temperature:.5f}"
    )
    for i in range(n):
        logits = "[" + ", ".join(f"{z:g}" for z in LOGITS[i]) + "]"
        add(
            f"{i + 1:>7}  {logits:<16} {CLASSES[LABELS[i]]:>4}  "
            f"{CLASSES[res.predicted_before[i]]:>4}  "
            f"{'yes' if res.before.outcome[i] else 'no':>7}  "
            f"{res.before.confidence[i]:8.3f}  {res.after.confidence[i]:14.3f}"
        )
    add("")
    add(
        f"fitted T     {res.temperature:.5f}   (expected: 1.22975; converged: {res.converged}; "
        f"ck.fit_temperature: {res.temperature_function:.5f})"
    )
    add(
        f"mean NLL     {res.nll_before:.5f} -> {res.nll_after:.5f}   (expected: 0.82278 -> 0.81243)"
    )
    same = bool(np.array_equal(res.predicted_before, res.predicted_after))
    add(
        f"accuracy     {res.accuracy_before:.4f} -> {res.accuracy_after:.4f}   "
        f"(4/6 both; predicted classes unchanged: {same})"
    )

    add(_heading("ECE compresses a reliability diagram: four bins, closed on the left"))
    for name, table, ece in (
        ("T = 1", res.table_before, res.ece_before),
        (f"T = {res.temperature:.5f}", res.table_after, res.ece_after),
    ):
        add(f"-- {name}")
        add(str(table))
        add("contributions |B|/n x |acc - conf|:")
        out.extend(_contributions(table, n))
        add(f"ECE = {ece:.3f}  (M = 4 uniform, left-closed, N = {n})")
        add("")
    add(
        f"four-bin ECE {res.ece_before:.3f} -> {res.ece_after:.3f}   (expected: 0.129 -> 0.380): "
        "the likelihood improved and the binned estimate got worse"
    )

    add(_heading("Better likelihood, worse ECE: the same six rows, other bins"))
    add(
        "p95 = 95th percentile of the ECE of a perfectly calibrated forecaster with the same\n"
        f"confidences and bins ({N_SIMS} simulations, seed {SEED}): an ECE below it is noise"
    )
    add(f"{'bins':<28}{'ECE T=1':>9}{'p95':>7}{'ECE T=fit':>11}{'p95':>7}{'change':>9}")
    for row in res.sweep:
        if row.strategy == "uniform":
            label = f"{row.n_bins:>2} equal-width, left-closed"
        else:
            label = f"{row.n_bins:>2} equal-mass, right-closed"
        mark = "  <- the four bins above" if (row.n_bins, row.strategy) == (4, "uniform") else ""
        add(
            f"{label:<28}{row.ece_before:>9.3f}{row.p95_before:>7.3f}{row.ece_after:>11.3f}"
            f"{row.p95_after:>7.3f}{row.ece_after - row.ece_before:>+9.3f}{mark}"
        )
    up = sum(r.ece_after > r.ece_before for r in res.sweep)
    down = sum(r.ece_after < r.ece_before for r in res.sweep)
    beyond = sum((r.ece_before > r.p95_before) + (r.ece_after > r.p95_after) for r in res.sweep)
    add(
        f"ECE rises in {up} of {len(res.sweep)} binnings and falls in {down}; "
        f"{beyond} of the {2 * len(res.sweep)} values exceed\n"
        "the 95th percentile of a calibrated forecaster: six rows cannot tell these apart."
    )
    add(f"the record's audit: {res.audit.verdict()}")

    add(_heading("A calibrator belongs to one measurement contract: the calibration record"))
    rec = res.record
    ctx, data, cal, binning = rec["context"], rec["data"], rec["calibrator"], rec["binning"]
    scores = data["fingerprint"]["scores"]
    add(f"written to         {res.record_path}")
    for key in ("model", "checkpoint", "outcome_definition", "population", "data_window"):
        add(f"{key + ' ':<19}{ctx[key]}")
    add(
        f"scores             {data['scores_kind']} {scores['shape']}, sha256 "
        f"{scores['sha256'][:16]}..."
    )
    add(f"split              {rec['split']['method']}")
    add(
        f"calibrator         {cal['kind']}, T = {cal['state']['temperature']:.5f}; "
        f"objective: {cal['objective']}"
    )
    edges = ", ".join(f"{e:g}" for e in binning["edges"])
    add(f"bin edges          [{edges}] ({binning['strategy']}, {binning['closed']}-closed)")
    add(f"bin counts         {rec['bins']['count']}")
    metrics = rec["metrics"]
    add(f"NLL                {metrics['nll']['value']:.5f} (proper score, after scaling)")
    ece_ci = metrics["ece"]["interval"]
    add(
        f"ECE                {metrics['ece']['value']:.3f}, "
        f"{ece_ci['level']:.0%} bootstrap interval "
        f"[{ece_ci['low']:.3f}, {ece_ci['high']:.3f}]; noise floor "
        f"{rec['noise_floor']['mean']:.3f}"
    )
    add(f"verified with the six rows:     {res.check}")
    add(f"verified, one label changed:    {res.check_changed_label}")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="folder for the calibration record (default: a new temporary folder)",
    )
    args = parser.parse_args(argv)
    out_dir = (
        args.out if args.out is not None else Path(tempfile.mkdtemp(prefix="six-predictions-"))
    )
    res = run(out_dir)
    print(report(res))
    print(f"\nrecord: {res.record_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
