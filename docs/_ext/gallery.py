"""A Sphinx extension that draws the gallery's figures when the site is built.

Every figure comes from data that ships in the repository (``examples/data``) or from a shipped
example script, through calibkit's own figure functions, so the pictures cannot drift from the
code. They are written to ``docs/_generated/gallery/`` (not checked in) before the pages are
read; ``docs/gallery.md`` shows them.
"""

from __future__ import annotations

import importlib.util
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "examples" / "data"
OUT = "_generated/gallery"


def _densenet() -> dict[str, np.ndarray]:
    with np.load(DATA / "densenet40_cifar10_logits.npz") as data:
        return {name: data[name] for name in data.files}


def _top_label(logits: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    import calibkit as ck

    return ck.top_label(ck.softmax(logits), labels)


def reliability(path: Path) -> None:
    import calibkit as ck

    d = _densenet()
    ck.save_figure(
        path, ck.reliability_diagram(ck.audit(d["test_logits"], d["test_labels"], from_logits=True))
    )


def before_after(path: Path) -> None:
    import calibkit as ck

    d = _densenet()
    ts = ck.TemperatureScaling().fit(d["val_logits"], d["val_labels"])
    before = ck.audit(d["test_logits"], d["test_labels"], from_logits=True)
    after = ck.audit(ts.predict_proba(d["test_logits"]), d["test_labels"])
    ck.save_figure(path, ck.before_after(before, after, titles=("before", "after temperature")))


def corp(path: Path) -> None:
    import calibkit as ck

    conf, correct = _top_label(*_wrn())
    ck.save_figure(path, ck.corp_diagram(ck.corp(conf, correct, seed=0)))


def _wrn() -> tuple[np.ndarray, np.ndarray]:
    with np.load(DATA / "wideresnet16_4_cifar_100_probs.npz") as data:
        return np.log(data["probs"]), data["labels"]


def risk_coverage(path: Path) -> None:
    import calibkit as ck

    d = _densenet()
    conf, correct = _top_label(d["test_logits"], d["test_labels"])
    rc = ck.risk_coverage(conf, correct)
    chosen = ck.choose_threshold(conf, correct, l_wrong=10, l_defer=1)
    thresholds = {"Chow": ck.chow_threshold(l_wrong=10, l_defer=1), "chosen": chosen.threshold}
    ck.save_figure(path, ck.risk_coverage_plot(rc, thresholds=thresholds))


def cost(path: Path) -> None:
    import calibkit as ck

    d = _densenet()
    conf, correct = _top_label(d["test_logits"], d["test_labels"])
    ck.save_figure(path, ck.cost_curve(conf, correct, l_wrong=10, l_defer=1))


def generalized_risk_coverage(path: Path) -> None:
    import calibkit as ck

    d = _densenet()
    conf, correct = _top_label(d["test_logits"], d["test_labels"])
    ck.save_figure(path, ck.generalized_risk_coverage_plot(ck.selective_prediction(conf, correct)))


def grouped(path: Path) -> None:
    import pyarrow.parquet as pq

    import calibkit as ck
    from calibkit.report.grouped import grouped_diagrams

    table = pq.read_table(DATA / "llm_stated_confidence.parquet")
    with warnings.catch_warnings():  # some stated certainties are wrong: an infinite log loss
        warnings.simplefilter("ignore", ck.CalibkitWarning)
        result = ck.audit(
            table, columns={"confidence": "stated_confidence", "correct": "correct"}, by="qset"
        )
    ck.save_figure(path, grouped_diagrams(result))


def monitor(path: Path) -> None:
    import calibkit as ck

    spec = importlib.util.spec_from_file_location(
        "monitor_drift", ROOT / "examples" / "monitor_drift.py"
    )
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    with tempfile.TemporaryDirectory() as tmp:
        log = example.make_log(Path(tmp) / "log.parquet", seed=0)
        result = ck.monitor(str(log), by="week", engine="duckdb")
    ck.save_figure(path, ck.monitor_plot(result))


FIGURES: dict[str, Callable[[Path], None]] = {
    "reliability.png": reliability,
    "before-after.png": before_after,
    "corp.png": corp,
    "risk-coverage.png": risk_coverage,
    "cost-curve.png": cost,
    "generalized-risk-coverage.png": generalized_risk_coverage,
    "grouped.png": grouped,
    "monitor.png": monitor,
}


def draw(out: Path) -> list[Path]:
    """Draw every figure of the gallery into ``out``; the paths written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, figure in FIGURES.items():
        figure(out / name)
        plt.close("all")
        written.append(out / name)
    return written


def _on_builder_inited(app: Any) -> None:
    draw(Path(app.srcdir) / OUT)


def setup(app: Any) -> dict[str, Any]:
    app.connect("builder-inited", _on_builder_inited)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
