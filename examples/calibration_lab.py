"""A calibration lab, done with calibkit: measure, repair and act on a model's confidence.

Part A measures and repairs the calibration of three logistic regressions that differ only in C
(1, 10, 100); part B audits the confidence language models state in words; part C turns a
confidence into an act-or-defer decision with stated costs. Exercises 0-5 and a stretch exercise
each have a section below; every worked number that can be checked by hand is printed beside its
hand-computed value ("[by hand: ...]").

The classifiers are fitted on scikit-learn's bundled handwritten digits (1,797 8x8 images, 10
classes, pixels scaled to [0, 1]; no download): 500 images to train, 400 to fit the temperature
and choose thresholds (validation), 897 to report (test), stratified with seed 0. The
stated-confidence part reads the answers of 11 language models that ship with the project
(examples/data/llm_stated_confidence.parquet, see examples/data/README.md). Methods: ECE with
equal-width bins (Naeini et al. 2015; Guo et al. 2017), the Brier score (Brier 1950) and log
loss, temperature scaling (Guo et al. 2017), verbalized confidence (Xiong et al. 2024),
risk-coverage (Geifman and El-Yaniv 2017) and Chow's rule (Chow 1970).

Run from the repository root (a few seconds; deterministic):

    python examples/calibration_lab.py                 # figures to a fresh temporary folder
    python examples/calibration_lab.py --out figures/  # figures to a folder of your choice
    python examples/calibration_lab.py --no-figures
"""

from __future__ import annotations

import argparse
import math
import tempfile
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

import calibkit as ck

SEED = 0
CS = (1, 10, 100)
N_TRAIN, N_VAL = 500, 400
M = 15  # bins, as Guo et al. (2017)
L_WRONG, L_DEFER = 10.0, 1.0  # a wrong action costs ten reviews
STATED = Path(__file__).resolve().parent / "data" / "llm_stated_confidence.parquet"
LLM_FOR_DECISIONS = "gpt-4o"


# ---------------------------------------------------------------------------------------------
# helpers


def show(title: str, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """Print a small table under a heading."""
    cells = [[str(c) for c in header]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[j]) for r in cells) for j in range(len(header))]
    print(f"\n{title}")
    for i, r in enumerate(cells):
        print(
            "  "
            + "  ".join(
                c.rjust(w) if j else c.ljust(w)
                for j, (c, w) in enumerate(zip(r, widths, strict=True))
            )
        )
        if i == 0:
            print("  " + "  ".join("-" * w for w in widths))


def heading(text: str) -> None:
    print(f"\n{'=' * 100}\n{text}\n{'=' * 100}")


def f3(x: float | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return "inf" if math.isinf(x) else f"{x:.3f}"


def reading(mean_conf: float, acc: float) -> str:
    """Right more often than it claims = underconfident; less often = overconfident."""
    return "underconfident" if mean_conf < acc else "overconfident"


def save(fig: Any, out: Path | None, name: str, figures: list[Path]) -> None:
    if out is not None:
        figures.append(ck.save_figure(out / name, fig))


@dataclass(frozen=True)
class Model:
    """One logistic regression's logits on the validation and test splits."""

    C: float
    val_logits: np.ndarray
    val_labels: np.ndarray
    test_logits: np.ndarray
    test_labels: np.ndarray


def classifiers(seed: int = SEED) -> dict[int, Model]:
    """Three logistic regressions on the bundled digits that differ only in C."""
    X, y = load_digits(return_X_y=True)
    X = X / 16.0  # pixels 0..16 -> [0, 1]
    X_tr, X_rest, y_tr, y_rest = train_test_split(
        X, y, train_size=N_TRAIN, stratify=y, random_state=seed
    )
    X_val, X_te, y_val, y_te = train_test_split(
        X_rest, y_rest, train_size=N_VAL, stratify=y_rest, random_state=seed
    )
    out = {}
    for C in CS:
        lr = LogisticRegression(C=C, max_iter=10_000).fit(X_tr, y_tr)
        out[C] = Model(C, lr.decision_function(X_val), y_val, lr.decision_function(X_te), y_te)
    return out


def read_stated() -> pa.Table:
    return pq.read_table(STATED)


# ---------------------------------------------------------------------------------------------
# sections


def exercise_0(models: dict[int, Model], stated: pa.Table) -> dict[str, Any]:
    """Exercise 0: what you have."""
    heading("Exercise 0 . What You Have")
    m = models[CS[0]]
    n_tok = int(pc.sum(pc.is_valid(stated.column("chosen_token_confidence"))).as_py())
    rows = [
        ("classifier data", "sklearn load_digits, 10 classes, pixels / 16"),
        (
            "splits (train / validation / test)",
            f"{N_TRAIN} / {m.val_labels.size} / {m.test_labels.size}",
        ),
        ("models", "LogisticRegression(C) for C in " + ", ".join(map(str, CS))),
        (
            "stated-confidence replay",
            f"{stated.num_rows:,} answers, {len(set(stated.column('llm').to_pylist()))} models",
        ),
        ("  with token probabilities", f"{n_tok:,} rows (Llama 3.1 8B / 70B, not HaluEval)"),
    ]
    show("What the lab works on", ("item", "value"), rows)
    return {
        "n_val": m.val_labels.size,
        "n_test": m.test_labels.size,
        "n_stated": stated.num_rows,
        "n_token": n_tok,
    }


def three_classifiers(models: dict[int, Model]) -> dict[int, dict[str, Any]]:
    """Part A: accuracy, mean confidence, ECE beside its noise floor, Brier, log loss."""
    heading("Part A . Three classifiers that differ only in C (test split)")
    out: dict[int, dict[str, Any]] = {}
    rows = []
    for C, m in models.items():
        a = ck.audit(m.test_logits, m.test_labels, from_logits=True, n_bins=M, seed=SEED)
        r = reading(a.mean_confidence, a.accuracy)
        out[C] = {"audit": a, "reading": r}
        rows.append(
            (
                C,
                a.n,
                f3(a.accuracy),
                f3(a.mean_confidence),
                r,
                f3(a.ece),
                f"{a.noise_floor.mean:.3f} ({a.noise_floor.p95:.3f})",
                "yes" if a.within_noise else "no",
                f3(a.brier),
                f3(a.nll),
            )
        )
    show(
        f"Accuracy, confidence and scores; ECE with M = {M} uniform bins beside the simulated "
        "noise floor (mean, 95th pct) of a calibrated forecaster with the same confidences and N",
        (
            "C",
            "N",
            "acc",
            "mean conf",
            "reading",
            "ECE",
            "noise floor",
            "within",
            "Brier",
            "log loss",
        ),
        rows,
    )
    acc = [o["audit"].accuracy for o in out.values()]
    conf = [o["audit"].mean_confidence for o in out.values()]
    ok = out[1]["reading"] == "underconfident" and out[100]["reading"] == "overconfident"
    print(
        "  The expected reading (larger C: weaker penalty, larger logits, from under- to "
        f"overconfident) {'holds' if ok else 'does NOT hold'} on these data: C = 1 is "
        f"{out[1]['reading']}, C = 100 is {out[100]['reading']}. Accuracy spans "
        f"{np.ptp(acc):.3f}, mean confidence {np.ptp(conf):.3f}."
    )
    return out


def exercise_1(models: dict[int, Model], out: Path | None, figures: list[Path]) -> dict[str, Any]:
    """Exercise 1: reliability bins and ECE."""
    heading("Exercise 1 . Reliability Bins and ECE")
    res: dict[str, Any] = {}

    # the worked example: ten predictions, M = 2, bins closed on the right
    conf = [0.3, 0.4, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.9, 0.9]
    outc = [1, 0, 1, 0, 1, 1, 0, 1, 0, 1]
    table = ck.reliability_bins(conf, outc, n_bins=2, interval=None)
    show(
        "Worked example: ten predictions, M = 2, right-closed bins",
        ("bin", "count", "conf", "acc", "gap acc - conf"),
        [
            (f"({r.lo:g}, {r.hi:g}]", r.count, f3(r.conf), f3(r.acc), f"{r.gap:+.3f}")
            for r in table.rows
        ],
    )
    res["worked_counts"] = [r.count for r in table.rows]
    res["worked_ece_m2"] = ck.ece(conf, outc, n_bins=2)
    res["worked_ece_m1"] = ck.ece(conf, outc, n_bins=1)
    print(
        f"  ECE (M = 2) = {res['worked_ece_m2']:.4f} [by hand: 0.12]; ECE (M = 1) = "
        f"{res['worked_ece_m1']:.4f} [by hand: 0.04; in one bin the gaps cancel]"
    )

    # averages match, bins do not
    c2 = np.r_[np.full(500, 0.6), np.full(500, 1.0)]
    o2 = np.r_[np.ones(400), np.zeros(100), np.ones(400), np.zeros(100)]
    res["check_averages"] = {
        "mean_conf": float(c2.mean()),
        "acc": float(o2.mean()),
        "ece": ck.ece(c2, o2, n_bins=M),
    }
    # checkpoints: the input-blind model; a large forecaster calibrated by construction
    blind = np.full((1000, 4), 0.25)
    y_blind = np.arange(1000) % 4
    fb = ck.top_label(blind, y_blind)
    res["blind_ece"] = ck.ece(fb.confidence, fb.outcome, n_bins=M)
    rng = np.random.default_rng(SEED)
    c_syn = rng.uniform(0.25, 1.0, 100_000)
    o_syn = rng.random(100_000) < c_syn
    res["synthetic_ece"] = ck.ece(c_syn, o_syn, n_bins=M)
    res["synthetic_floor"] = ck.noise_floor(c_syn, n_bins=M, n_sims=200, seed=SEED).mean
    show(
        "Checkpoints",
        ("case", "N", "mean conf", "acc", f"ECE (M = {M})", "expected"),
        [
            (
                "500 at 0.6, 500 at 1.0",
                1000,
                f3(c2.mean()),
                f3(o2.mean()),
                f3(res["check_averages"]["ece"]),
                "0.200 (gaps +0.2 and -0.2)",
            ),
            (
                "input-blind (0.25 x 4, balanced)",
                1000,
                f3(fb.confidence.mean()),
                f3(fb.outcome.mean()),
                f"{res['blind_ece']:.4f}",
                "0 exactly",
            ),
            (
                "calibrated by construction",
                100_000,
                f3(c_syn.mean()),
                f3(o_syn.mean()),
                f"{res['synthetic_ece']:.4f}",
                f"near 0 (noise floor {res['synthetic_floor']:.4f})",
            ),
        ],
    )

    # on the C = 10 classifier: ECE depends on M, the noise floor on N
    m10 = models[10]
    f10 = ck.top_label(m10.test_logits, m10.test_labels, from_logits=True)
    rows = []
    res["ece_by_m"] = {}
    for n_bins, strategy in (
        (5, "uniform"),
        (15, "uniform"),
        (50, "uniform"),
        (100, "uniform"),
        (15, "quantile"),
    ):
        e = ck.ece(f10.confidence, f10.outcome, n_bins=n_bins, strategy=strategy)
        fl = ck.noise_floor(f10.confidence, n_bins=n_bins, strategy=strategy, n_sims=500, seed=SEED)
        res["ece_by_m"][(n_bins, strategy)] = e
        rows.append((n_bins, strategy, f10.confidence.size, f3(e), f3(fl.mean)))
    show(
        "The same C = 10 test predictions, other binnings",
        ("M", "bins", "N", "ECE", "noise floor"),
        rows,
    )
    rows = []
    res["floor_by_n"] = {}
    idx = np.random.default_rng(SEED).permutation(f10.confidence.size)
    for n in (100, 300, f10.confidence.size):
        fl = ck.noise_floor(f10.confidence[idx[:n]], n_bins=M, n_sims=1000, seed=SEED)
        res["floor_by_n"][n] = fl.mean
        rows.append((n, f3(fl.mean), f3(fl.p95)))
    show(
        f"Mean ECE (M = {M}) of a forecaster calibrated by construction with the C = 10 "
        "confidences, by N",
        ("N", "noise floor", "95th pct"),
        rows,
    )
    a10 = ck.audit(m10.test_logits, m10.test_labels, from_logits=True, n_bins=M, seed=SEED)
    print(f"  C = 10 classifier: {a10.verdict()}")
    save(
        ck.reliability_diagram(a10, title="digits, C = 10 (test)"),
        out,
        "ex1_reliability_C10.png",
        figures,
    )
    return res


def exercise_2(models: dict[int, Model], lab: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """Exercise 2: Brier score and log loss."""
    heading("Exercise 2 . Brier Score and Log Loss")
    res: dict[str, Any] = {}
    probs = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4]])
    labels = np.array([0, 1, 0])
    res["hand_brier"] = ck.brier(probs, labels)
    res["hand_nll"] = ck.nll(probs, labels)
    uni = np.full((8, 4), 0.25)
    y_uni = np.arange(8) % 4
    res["uniform_brier"] = ck.brier(uni, y_uni)
    res["uniform_nll"] = ck.nll(uni, y_uni)
    p10 = ck.softmax(models[10].test_logits)
    res["nll_ck"] = ck.nll(models[10].test_logits, models[10].test_labels, from_logits=True)
    res["nll_sklearn"] = log_loss(models[10].test_labels, p10, labels=np.arange(10))
    show(
        "Checkpoints",
        ("case", "Brier", "log loss", "by hand"),
        [
            (
                "three examples, labels 0, 1, 0",
                f"{res['hand_brier']:.4f}",
                f"{res['hand_nll']:.4f}",
                "(0.14 + 0.06 + 0.74) / 3; -(ln .7 + ln .8 + ln .3) / 3",
            ),
            (
                "uniform four-class model",
                f"{res['uniform_brier']:.4f}",
                f"{res['uniform_nll']:.4f}",
                "0.75 and ln 4 = 1.3863",
            ),
            (
                "C = 10 test: ck.nll vs sklearn log_loss",
                "",
                f"{res['nll_ck']:.6f} / {res['nll_sklearn']:.6f}",
                "equal",
            ),
        ],
    )
    rows = []
    for C in CS:
        a = lab[C]["audit"]
        rows.append((C, f3(a.ece), f3(a.brier), f3(a.nll), f3(1 - a.accuracy)))
    show(
        "One calibration measure, two proper scores, one improper (test split)",
        ("C", f"ECE (M = {M})", "Brier (0-2)", "log loss", "error rate"),
        rows,
    )
    rank = {
        k: sorted(
            CS,
            key=lambda C: (
                getattr(lab[C]["audit"], k) if k != "error" else 1 - lab[C]["audit"].accuracy
            ),
        )
        for k in ("brier", "nll", "error")
    }
    res["rank"] = rank
    print(
        f"  Ranked best first: Brier {rank['brier']}, log loss {rank['nll']}, error rate "
        f"{rank['error']}."
    )
    return res


def exercise_3(
    models: dict[int, Model], lab: dict[int, dict[str, Any]], out: Path | None, figures: list[Path]
) -> dict[str, Any]:
    """Exercise 3: temperature scaling fitted on validation, reported on test."""
    heading("Exercise 3 . Temperature Scaling")
    res: dict[str, Any] = {}
    z = np.array([2.0, 1.0, 0.0])
    res["p_hat"] = {tau: float(ck.softmax(z / tau).max()) for tau in (1.0, 2.0)}
    print(
        f"\n  Check yourself: z = (2, 1, 0): p_hat = {res['p_hat'][1.0]:.3f} at tau "
        f"= 1, {res['p_hat'][2.0]:.3f} at tau = 2 [by hand: 0.665, 0.506]; the argmax is class 0 "
        "both times."
    )
    # checkpoint and demo: labels drawn from softmax(z*), the model reports k z*
    rng = np.random.default_rng(SEED)
    res["synthetic"] = {}
    rows = []
    for k, n in ((3.0, 4000), (2.5, 4000)):
        zs = rng.normal(0.0, 1.5, (n, 4))
        p = ck.softmax(zs)
        y = (rng.random((n, 1)) > np.cumsum(p, axis=1)).sum(axis=1)
        tau = ck.fit_temperature(k * zs, y)
        accs = {t: ck.accuracy(k * zs / t, y, from_logits=True) for t in (0.5, 1.0, tau, 5.0)}
        res["synthetic"][k] = {"tau": tau, "acc": accs}
        rows.append((f"{k:g}", n, f"{tau:.3f}", " / ".join(f"{a:.4f}" for a in accs.values())))
    show(
        "Checkpoint and demo: logits of a calibrated model multiplied by k; tau* should be near k",
        ("k", "N", "fitted tau*", "accuracy at tau = 0.5 / 1 / tau* / 5 (flat)"),
        rows,
    )

    rows = []
    res["per_c"] = {}
    for C, m in models.items():
        ts = ck.TemperatureScaling().fit(m.val_logits, m.val_labels)
        tau = ts.temperature_
        before = lab[C]["audit"]
        after_probs = ts.predict_proba(m.test_logits)
        after = ck.audit(after_probs, m.test_labels, n_bins=M, seed=SEED)
        val_f = ck.top_label(m.val_logits, m.val_labels, from_logits=True)
        val_gap = float(val_f.confidence.mean() - val_f.outcome.mean())
        read = lab[C]["reading"]  # the reading on test: tau should agree with it
        expected = "< 1" if read == "underconfident" else "> 1"
        agrees = (tau < 1) == (read == "underconfident")
        res["per_c"][C] = {
            "tau": tau,
            "ts": ts,
            "before": before,
            "after": after,
            "after_probs": after_probs,
            "reading": read,
            "val_gap": val_gap,
            "agrees": agrees,
            "val_nll_before": ts.nll_before_,
            "val_nll_after": ts.nll_after_,
        }
        rows.append(
            (
                C,
                read,
                f"{val_gap:+.3f}",
                expected,
                f"{tau:.3f}",
                "yes" if agrees else "NO",
                f"{before.accuracy:.3f} -> {after.accuracy:.3f}",
                f"{before.ece:.3f} -> {after.ece:.3f} ({after.noise_floor.p95:.3f})",
                f"{before.nll:.3f} -> {after.nll:.3f}",
                f"{before.brier:.3f} -> {after.brier:.3f}",
            )
        )
        save(
            ck.before_after(
                before, after, titles=(f"C = {C}, before", f"C = {C}, after tau = {tau:.2f}")
            ),
            out,
            f"ex3_before_after_C{C}.png",
            figures,
        )
    show(
        f"tau* fitted on {models[1].val_labels.size} validation images, "
        "everything "
        f"reported on {models[1].test_labels.size} test images (ECE: M = {M}; in brackets the 95th "
        "percentile of the noise floor after)",
        (
            "C",
            "reading",
            "val. conf - acc",
            "tau expected",
            "tau*",
            "agrees",
            "accuracy",
            "ECE",
            "log loss",
            "Brier",
        ),
        rows,
    )
    within = [C for C in CS if res["per_c"][C]["after"].within_noise]
    print(
        f"  After scaling, ECE is within the noise floor for C in {within}. "
        "Validation log loss before -> after: "
        + ", ".join(
            f"C = {C}: {r['val_nll_before']:.4f} -> {r['val_nll_after']:.4f}"
            for C, r in res["per_c"].items()
        )
        + "."
    )
    return res


REPLIES = (
    '{"answer": "calculator", "confidence": 0.92}',
    '```json\n{"answer": "Email", "confidence": "85%"}\n```',
    "Answer: human\nConfidence: 7/10",
    "Answer: email\nConfidence: very confident",
    '{"answer": "document_lookup", "confidence": 1.3}',
    '{"answer": "calendar", "confidence": 0.9}',
    "Answer: ask_user",
    "I would route this to the calculator, and I am 90% sure.",
)
ROUTES = ("calculator", "document_lookup", "email", "ask_user", "human")
FREE_TEXT = (
    "I am about 80% sure.",
    "Confidence: 0.75",
    "7 out of 10",
    "high confidence",
    "probably 60% sure, maybe 80% sure",
    "Confidence: 85",
    "no idea",
)


def exercise_4(stated: pa.Table, out: Path | None, figures: list[Path]) -> dict[str, Any]:
    """Exercise 4: parse a stated confidence, then measure it."""
    heading("Exercise 4 . Parse a Stated Confidence, Then Measure It")
    res: dict[str, Any] = {}
    batch = ck.parse_batch(REPLIES, ROUTES)
    res["decisions"] = [ck.parse_decision(r, ROUTES) for r in REPLIES]
    show(
        f"parse_decision on recorded reply strings, options {ROUTES}",
        ("reply", "(answer, confidence) or None"),
        [(r.replace("\n", " | ")[:60], d) for r, d in zip(REPLIES, res["decisions"], strict=True)],
    )
    print(f"  parse rate {batch.parse_rate:.0%}; reasons for the rest: {batch.reasons}")
    res["confidences"] = [ck.parse_confidence(t) for t in FREE_TEXT]
    show(
        "parse_confidence on free text",
        ("text", "value", "from", "reason"),
        [
            (t, f3(p.value), p.source or "-", p.reason or "-")
            for t, p in zip(FREE_TEXT, res["confidences"], strict=True)
        ],
    )

    # check yourself: 300 answers stated at 0.9 (150 right of 200) or 0.95 (90 of 100)
    c7 = np.r_[np.full(200, 0.9), np.full(100, 0.95)]
    o7 = np.r_[np.ones(150), np.zeros(50), np.ones(90), np.zeros(10)]
    t7 = ck.reliability_bins(c7, o7, n_bins=M)
    fl7 = ck.noise_floor(c7, n_bins=M, seed=SEED)
    res["check_300"] = {
        "nonempty": sum(r.count > 0 for r in t7.rows),
        "ece": ck.ece(c7, o7, n_bins=M),
        "mean_conf": float(c7.mean()),
        "acc": float(o7.mean()),
        "floor": fl7.mean,
    }
    r7 = res["check_300"]
    print(
        f"\n  Check yourself: {r7['nonempty']} non-empty bins of {M}; ECE "
        f"{r7['ece']:.3f} [by hand: 200/300 x 0.15 + 100/300 x 0.05 = 0.117]; mean confidence "
        f"{r7['mean_conf']:.3f}, accuracy {r7['acc']:.3f}. Noise floor of a calibrated "
        f"forecaster with these two values on 300 questions: {fl7.mean:.3f} (95th pct "
        f"{fl7.p95:.3f}): the ECE is {'beyond' if r7['ece'] > fl7.p95 else 'within'} noise."
    )

    # the replay data: 72,185 answers of 11 models, stated confidence already extracted
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ck.CalibkitWarning)  # infinite log loss: counted below
        audit = ck.audit_stated(
            stated,
            group_by=("llm",),
            sources=("stated_confidence",),
            n_boot=200,
            n_sims=200,
            seed=SEED,
        )
    res["stated"] = audit
    show(
        f"Stated confidence of 11 language models on BoolQ, SciQ, SAT, LSAT-AR and HaluEval "
        f"(examples/data, {stated.num_rows:,} answers; ECE M = {M}, 95% bootstrap CI)",
        (
            "model",
            "N",
            "acc",
            "mean stated",
            "ECE [95% CI]",
            "floor",
            "Brier",
            "x0.05",
            "stated 1 & wrong",
            "most common",
        ),
        [
            (
                r.group[0],
                r.n,
                f3(r.accuracy),
                f3(r.mean_confidence),
                f"{r.ece:.3f} [{r.ece_low:.3f}, {r.ece_high:.3f}]",
                f3(r.noise_floor),
                f3(r.brier),
                f"{r.share_multiple_of_05:.0%}",
                r.n_certain_wrong,
                ", ".join(f"{v:g}: {s:.0%}" for v, s in r.top_values[:2]),
            )
            for r in audit.rows
        ],
    )
    over = sum(r.mean_confidence > r.accuracy for r in audit.rows)
    print(
        f"  {over} of {len(audit.rows)} models state more confidence than their accuracy; the "
        "share "
        "of multiples of 0.05 shows how coarse the values are (high and coarse, as Xiong et al. "
        "2024 found)."
    )

    # stated vs token probability, on the rows that have both (Llama 3.1, not HaluEval)
    both = stated.filter(pc.is_valid(stated.column("chosen_token_confidence")))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ck.CalibkitWarning)
        cmp = ck.audit_stated(both, group_by=("llm",), n_boot=200, n_sims=200, seed=SEED)
    res["token"] = cmp
    show(
        "Stated confidence vs answer-token probability on the same answers",
        (
            "model",
            "source",
            "N",
            "acc",
            "mean conf",
            "ECE [95% CI]",
            "Brier",
            "log loss",
            "AUC",
            "AURC",
        ),
        [
            (
                r.group[0],
                r.source,
                r.n,
                f3(r.accuracy),
                f3(r.mean_confidence),
                f"{r.ece:.3f} [{r.ece_low:.3f}, {r.ece_high:.3f}]",
                f3(r.brier),
                f3(r.nll),
                f3(r.auc),
                f3(r.aurc),
            )
            for r in cmp.rows
        ],
    )
    for comp in cmp.comparisons:
        print(
            f"  {comp.group[0]}: lower ECE: {comp.better}"
            + (" (bootstrap intervals do not overlap)" if comp.clear else " (intervals overlap)")
        )
    llama = cmp.rows[0].group
    save(
        ck.before_after(
            cmp.get(llama, "stated_confidence").table,
            cmp.get(llama, "chosen_token_confidence").table,
            titles=(f"{llama[0]}: stated", f"{llama[0]}: token probability"),
        ),
        out,
        "ex4_stated_vs_token.png",
        figures,
    )
    return res


def exercise_5(
    models: dict[int, Model], stated: pa.Table, out: Path | None, figures: list[Path]
) -> dict[str, Any]:
    """Exercise 5: risk-coverage, Chow's threshold and the empirical one."""
    heading("Exercise 5 . Risk-Coverage and the Threshold")
    res: dict[str, Any] = {}
    conf5, out5 = [0.95, 0.9, 0.8, 0.7, 0.6], [1, 1, 0, 1, 0]
    rc5 = ck.risk_coverage(conf5, out5)
    cost5 = rc5.coverage * np.nan_to_num(rc5.risk) * L_WRONG + (1 - rc5.coverage) * L_DEFER
    choice5 = ck.choose_threshold(conf5, out5, L_WRONG, L_DEFER)
    res["five"] = {"rc": rc5, "cost": cost5, "choice": choice5}
    show(
        f"Worked example: five predictions, l_wrong = {L_WRONG:g}, l_defer = {L_DEFER:g}",
        ("threshold", "coverage", "selective risk", "cost per case"),
        [
            ("above 0.95" if math.isinf(t) else f"{t:g}", f"{c:.1f}", f3(r), f"{k:.1f}")
            for t, c, r, k in zip(rc5.threshold, rc5.coverage, rc5.risk, cost5, strict=True)
        ],
    )
    res["chow"] = ck.chow_threshold(L_WRONG, L_DEFER)
    print(
        f"  cheapest: lambda = {choice5.threshold:g} at {choice5.cost:.1f} per case "
        "[by hand: 0.9 at 0.6]; "
        f"Chow's rule: lambda* = 1 - {L_DEFER:g}/{L_WRONG:g} = {res['chow']:g}; twenty times: "
        f"{ck.chow_threshold(20, 1):g}."
    )
    chow_50 = ck.chow_threshold(50, 2)
    res["check_costs_50_2"] = {"chow": chow_50, "act_cost": (1 - 0.90) * 50, "defer_cost": 2.0}
    print(
        f"  Check yourself: l_wrong = 50, l_defer = 2 -> lambda* = {chow_50:g} [by hand: 1 - 2/50 "
        "= 0.96]; if those cases are right only 90% of the time, acting costs "
        f"{res['check_costs_50_2']['act_cost']:g} per case "
        f"against {res['check_costs_50_2']['defer_cost']:g} for a review."
    )

    # the C = 10 classifier: thresholds chosen on validation, reported on test
    m = models[10]
    table = ck.decision_report(
        m.val_logits, m.val_labels, m.test_logits, m.test_labels, l_wrong=L_WRONG, l_defer=L_DEFER
    )
    res["policy"] = table
    f_test = ck.top_label(m.test_logits, m.test_labels, from_logits=True)
    f_val = ck.top_label(m.val_logits, m.val_labels, from_logits=True)
    res["test_forecast"], res["val_forecast"] = f_test, f_val
    rc = ck.risk_coverage(f_test.confidence, f_test.outcome)
    res["rc"] = rc
    print(
        "\nThe C = 10 classifier, policy by policy (every threshold chosen on validation, every "
        "cost reported on test)"
    )
    print("  " + str(table).replace("\n", "\n  "))
    print(
        f"  risk at full coverage {rc.risk[-1]:.4f} = error rate {1 - f_test.outcome.mean():.4f}; "
        f"validation cost of the chosen threshold {table.choice.cost:.3f} <= act all "
        f"{table.row('act_all').choice_cost:.3f} and defer all "
        f"{table.row('defer_all').choice_cost:.3f}."
    )
    # ranking: temperature scaling reorders top-label confidences slightly for C > 2 classes
    after = table.calibrated_curve
    ts = res["ts10"] = ck.TemperatureScaling().fit(m.val_logits, m.val_labels)
    conf_after = ck.top_label(ts.predict_proba(m.test_logits), m.test_labels).confidence
    res["swapped_pairs"] = swapped_pairs(f_test.confidence, conf_after)
    print(
        f"  10 classes: temperature scaling (T = {table.temperature:.3f}) swaps the order of "
        f"{res['swapped_pairs']:.2%} of test pairs; AURC {table.curve.aurc:.5f} -> "
        f"{after.aurc:.5f}."
    )
    ax = ck.risk_coverage_plot(
        rc, thresholds={"Chow 0.9": table.chow_threshold, "chosen on val.": table.choice}
    )
    ax.set_title("digits, C = 10: risk-coverage (test)")
    save(ax, out, "ex5_risk_coverage_C10.png", figures)

    res["binary"] = binary_invariance()
    b = res["binary"]
    if b["same_curve"]:
        verdict = "the same curve"
    elif b["points_kept"] and b["ties_only_near_one"]:
        verdict = (
            f"the same curve with fewer steps: {b['near_one']} test confidences land within 1e-12 "
            "of 1 after sharpening, where float64 runs out of digits and ties them; every point "
            "of the new curve is a point of the old"
        )
    else:
        verdict = "a DIFFERENT curve"
    print(
        f"  2 classes (breast cancer, C = 1, T = {b['tau']:.3f}): the order of the confidences is "
        f"{'kept' if b['order_kept'] else 'NOT kept'}; distinct confidences {b['distinct_before']} "
        f"before, {b['distinct_after']} after: {verdict} (AURC {b['aurc_before']:.5f} -> "
        f"{b['aurc_after']:.5f}). ck.check_invariance: on the confidences moved "
        f"{b['moved_conf'] or 'nothing'}, on the logit scale moved {b['moved_logit'] or 'nothing'}."
    )

    # the language model: its stated confidence, thresholds chosen on half its answers
    rows = stated.filter(pc.equal(stated.column("llm"), LLM_FOR_DECISIONS))
    c = rows.column("stated_confidence").to_numpy()
    o = rows.column("correct").to_numpy().astype(np.int64)
    val_idx, test_idx = ck.stratified_split(o, calibration_fraction=0.5, seed=SEED)
    llm_table = ck.policy_table(
        c[val_idx], o[val_idx], c[test_idx], o[test_idx], l_wrong=L_WRONG, l_defer=L_DEFER
    )
    res["llm_policy"] = llm_table
    print(
        f"\nThe language model ({LLM_FOR_DECISIONS}, stated confidence; answers split in half, "
        "stratified)"
    )
    print("  " + str(llm_table).replace("\n", "\n  "))
    print(f"  {np.unique(c).size} distinct stated values, so the curve has that many steps.")
    chow_row = llm_table.row("chow")
    if math.isinf(llm_table.choice.threshold):
        print(
            "  On validation no threshold beats deferring everything at these costs: the answers "
            f"Chow's rule acts on are wrong {chow_row.risk:.1%} of the time on test, where a "
            f"calibrated confidence would allow at most {1 - llm_table.chow_threshold:.0%} "
            "(Chow's rule is only as good as the calibration behind it)."
        )
    ax = ck.risk_coverage_plot(
        llm_table.curve,
        thresholds={"Chow 0.9": llm_table.chow_threshold, "chosen on val.": llm_table.choice},
    )
    ax.set_title(f"{LLM_FOR_DECISIONS}, stated confidence: risk-coverage (test half)")
    save(ax, out, "ex5_risk_coverage_llm.png", figures)
    return res


def swapped_pairs(a: np.ndarray, b: np.ndarray) -> float:
    """Share of pairs of examples whose order differs between two confidences (ties excluded)."""
    da = np.sign(a[:, None] - a[None, :])
    db = np.sign(b[:, None] - b[None, :])
    n = a.size
    return float(np.count_nonzero(da * db < 0) / (n * (n - 1)))


def binary_invariance(seed: int = SEED) -> dict[str, Any]:
    """Temperature scaling of a two-class model: the risk-coverage curve should not move."""
    X, y = load_breast_cancer(return_X_y=True)
    X_tr, X_rest, y_tr, y_rest = train_test_split(
        X, y, train_size=200, stratify=y, random_state=seed
    )
    X_val, X_te, y_val, y_te = train_test_split(
        X_rest, y_rest, train_size=150, stratify=y_rest, random_state=seed
    )
    sc = StandardScaler().fit(X_tr)
    lr = LogisticRegression(C=1.0, max_iter=10_000).fit(sc.transform(X_tr), y_tr)
    s_val, s_te = (
        lr.decision_function(sc.transform(X_val)),
        lr.decision_function(sc.transform(X_te)),
    )
    table = ck.decision_report(s_val, y_val, s_te, y_te, l_wrong=L_WRONG, l_defer=L_DEFER)
    tau = float(table.temperature)
    correct = (s_te >= 0) == (y_te == 1)
    before = ck.sigmoid(np.abs(s_te))  # confidence in the predicted class
    after = ck.sigmoid(np.abs(s_te) / tau)
    rc_b, rc_a = table.curve, table.calibrated_curve
    order = np.argsort(before, kind="stable")
    # float64 holds about 16 digits: 1 - p below 1e-12 is where sigmoid runs out of them
    near_one = 1.0 - after < 1e-12
    return {
        "tau": tau,
        "scores": s_te,
        "labels": y_te,
        "correct": correct,
        "conf_before": before,
        "conf_after": after,
        "curve_before": rc_b,
        "curve_after": rc_a,
        "order_kept": bool(np.all(np.diff(after[order]) >= 0)),
        "distinct_before": int(np.unique(before).size),
        "distinct_after": int(np.unique(after).size),
        "near_one": int(np.count_nonzero(near_one)),
        "ties_only_near_one": np.unique(after[~near_one]).size == np.unique(before[~near_one]).size,
        "same_curve": bool(
            np.array_equal(rc_b.coverage, rc_a.coverage)
            and np.array_equal(rc_b.risk, rc_a.risk, equal_nan=True)
        ),
        "points_kept": points_subset(rc_a, rc_b),
        "aurc_before": rc_b.aurc,
        "aurc_after": rc_a.aurc,
        # calibkit's exact check: on the confidences (float ties show) and on the logit scale
        "moved_conf": ck.check_invariance(before, after, labels=correct.astype(int)).moved,
        "moved_logit": ck.check_invariance(s_te, s_te / tau, labels=y_te, threshold=0.0).moved,
    }


def points_subset(small: ck.RiskCoverage, big: ck.RiskCoverage) -> bool:
    """Is every (coverage, risk) point of ``small`` a point of ``big``? (Merging tied
    confidences removes steps from a risk-coverage curve and adds none.)"""
    acted_big = {int(round(c * big.n)): r for c, r in zip(big.coverage, big.risk, strict=True)}
    for c, r in zip(small.coverage, small.risk, strict=True):
        k = int(round(c * small.n))
        if k not in acted_big or not (
            r == acted_big[k] or (math.isnan(r) and math.isnan(acted_big[k]))
        ):
            return False
    return True


def stretch() -> dict[str, Any]:
    """Stretch: the Brier score is proper; the linear score is not; accuracy is flat."""
    heading("Stretch . The Brier Score Is Proper; Accuracy Is Not")
    # The label is drawn from p = (0.7, 0.3). A population of ten labels with those frequencies
    # turns each mean score into the expected score E_{y ~ p} S(q, y) exactly.
    p = np.array([0.7, 0.3])
    y = np.r_[np.zeros(7, int), np.ones(3, int)]

    def expected(q1: float) -> dict[str, float]:
        q = np.tile([q1, 1.0 - q1], (y.size, 1))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ck.CalibkitWarning)  # q = 0 or 1: log loss infinite
            nll = ck.nll(q, y)
        return {
            "brier": ck.brier(q, y),
            "log": nll,
            "linear": float(-q[np.arange(y.size), y].mean()),
            "error": 1.0 - ck.accuracy(q, y),
        }

    grid = np.round(np.linspace(0.0, 1.0, 101), 2)
    scores = {
        k: np.array([expected(q)[k] for q in grid]) for k in ("brier", "log", "linear", "error")
    }
    show(
        "Expected penalty of reporting q = (q1, 1 - q1) when the label is drawn from "
        "p = (0.7, 0.3) (lower is better)",
        ("q1", "Brier", "log loss", "linear -q_y", "error (1 - acc)"),
        [
            (
                f"{q:.1f}",
                f3(scores["brier"][i]),
                f3(scores["log"][i]),
                f3(scores["linear"][i]),
                f3(scores["error"][i]),
            )
            for i, q in enumerate(grid)
            if i % 10 == 0
        ],
    )
    argmin = {k: float(grid[np.argmin(v)]) for k, v in scores.items()}
    flat = np.unique(scores["error"][grid > 0.5])
    print(
        f"  minimised at q1 = {argmin['brier']:g} by Brier, {argmin['log']:g} by log loss (the "
        f"truth, 0.7), {argmin['linear']:g} by the linear score (overconfidence pays); the error "
        f"rate is {', '.join(f'{v:.3f}' for v in flat)} for every q1 > 0.5 (flat)."
    )
    reports = {"honest (0.7, 0.3)": 0.7, "exaggerated (1, 0)": 1.0, "hedged (0.5, 0.5)": 0.5}
    named = {name: expected(q) for name, q in reports.items()}
    show(
        "Check yourself",
        ("report", "E Brier", "by hand", "E log loss", "by hand"),
        [
            (name, f3(v["brier"]), s_b, f3(v["log"]), s_l)
            for (name, v), s_b, s_l in zip(
                named.items(), ("0.42", "0.60", "0.50"), ("0.611", "inf", "0.693"), strict=True
            )
        ],
    )
    # three classes: no random report beats the truth under a proper score
    p3 = np.array([0.5, 0.3, 0.2])
    y3 = np.r_[np.zeros(5, int), np.ones(3, int), np.full(2, 2)]
    rng = np.random.default_rng(SEED)
    qs = rng.dirichlet(np.ones(3), 500)

    def e3(q: np.ndarray) -> tuple[float, float, float]:
        t = np.tile(q, (y3.size, 1))
        return ck.brier(t, y3), ck.nll(t, y3), float(-t[np.arange(y3.size), y3].mean())

    truth = e3(p3)
    others = np.array([e3(q) for q in qs])
    onehot = e3(np.array([1.0 - 2e-12, 1e-12, 1e-12]))
    dirichlet = {
        "truth": truth,
        "min_others": others.min(axis=0),
        "beats_truth": (others < np.array(truth)).sum(axis=0),
        "onehot_linear": onehot[2],
    }
    show(
        "Three classes, p = (0.5, 0.3, 0.2), against 500 random reports q ~ Dirichlet(1, 1, 1)",
        ("score", "E at q = p", "best of the 500", "reports beating p"),
        [
            (name, f"{truth[j]:.4f}", f"{others[:, j].min():.4f}", int(dirichlet["beats_truth"][j]))
            for j, name in enumerate(("Brier", "log loss", "linear"))
        ],
    )
    print(
        f"  the near one-hot report (1, 0, 0) scores {onehot[2]:.4f} on the linear score, better "
        f"than the truth's {truth[2]:.4f}."
    )
    return {
        "p": p,
        "grid": grid,
        "scores": scores,
        "argmin": argmin,
        "flat": flat,
        "named": named,
        "dirichlet": dirichlet,
    }


# ---------------------------------------------------------------------------------------------


def run(out_dir: str | Path | None = None) -> dict[str, Any]:
    """Run every section, print its tables, write the figures to ``out_dir`` (None: none)."""
    out = None if out_dir is None else Path(out_dir)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    figures: list[Path] = []
    models = classifiers()
    stated = read_stated()
    res: dict[str, Any] = {"models": models}
    res["exercise_0"] = exercise_0(models, stated)
    res["lab"] = three_classifiers(models)
    res["exercise_1"] = exercise_1(models, out, figures)
    res["exercise_2"] = exercise_2(models, res["lab"])
    res["exercise_3"] = exercise_3(models, res["lab"], out, figures)
    res["exercise_4"] = exercise_4(stated, out, figures)
    res["exercise_5"] = exercise_5(models, stated, out, figures)
    res["stretch"] = stretch()
    res["figures"] = figures
    return res


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="folder for the figures (default: a new temporary folder)",
    )
    parser.add_argument("--no-figures", action="store_true", help="draw nothing")
    args = parser.parse_args(argv)
    out = None if args.no_figures else (args.out or Path(tempfile.mkdtemp(prefix="calibkit-lab-")))
    res = run(out)
    if out is not None:
        print(f"\n{len(res['figures'])} figures written to {out}:")
        for f in res["figures"]:
            print(f"  {f.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
