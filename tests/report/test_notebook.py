"""Results shown in a notebook (``_repr_html_``): the report's sections, inline and self-contained.

Each result's HTML is parsed (tags must balance), its numbers are checked against values worked
out here with numpy and scipy (bin counts, ECE, policy coverage, risk and cost, a Clopper-Pearson
bound), every figure must decode as a PNG, user text must come back escaped, and the HTML must contain the report's own section for the same
object (:func:`calibkit.report.render_report`).
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from html_fragment import Fragment, assert_self_contained, png_shapes, report_sections

import calibkit as ck
from calibkit.report._html_parts import _e
from calibkit.report.html import render_report

NAME = '<b>&"'  # a column name a page would read as markup if it were not escaped

# ----------------------------------------------------------------------------- numbers by hand


def _bins(p: np.ndarray, m: int) -> np.ndarray:
    """Right-closed equal-width bins: (k/m, (k+1)/m], the first also holding 0."""
    edges = np.linspace(0.0, 1.0, m + 1)
    return np.clip(np.searchsorted(edges, p, side="left") - 1, 0, m - 1)


def _ece(p: np.ndarray, y: np.ndarray, m: int = 15) -> float:
    b = _bins(p, m)
    total = 0.0
    for k in range(m):
        sel = b == k
        if sel.any():
            total += sel.sum() / p.size * abs(y[sel].mean() - p[sel].mean())
    return total


def _count(cell: str) -> int:
    return int(cell.replace(",", ""))


# ----------------------------------------------------------------------------- data


@pytest.fixture(scope="module")
def data() -> dict[str, Any]:
    rng = np.random.default_rng(7)
    n = 1200
    p = rng.uniform(0.0, 1.0, n)
    y = (rng.random(n) < p**1.4).astype(int)  # overconfident at the top
    group = np.where(rng.random(n) < 0.4, NAME, "plain")
    z = rng.normal(0.0, 3.0, (n, 4))
    q = ck.softmax(z / 2.0)
    labels = (rng.random(n)[:, None] > np.cumsum(q, axis=1)).sum(axis=1).clip(0, 3)
    w = rng.uniform(0.5, 2.0, n)
    return {"p": p, "y": y, "group": group, "z": z, "labels": labels, "w": w}


@pytest.fixture(scope="module")
def results(data: dict[str, Any]) -> dict[str, Any]:
    p, y = data["p"], data["y"]
    frame = pa.table({"probs": p, "label": y, NAME: data["group"]})
    half = p.size // 2
    z, labels = data["z"], data["labels"]
    fast = {"n_boot": 50, "n_sims": 50}
    costs = {"l_wrong": 1.0, "l_defer": 0.5, "l_ask": 0.2, "l_ask_wrong": 0.6}
    actions = ck.choose_actions(p[:half], y[:half], **costs)
    guarantee = ck.guaranteed_threshold(p[:half], y[:half], target_risk=0.2)
    return {
        "audit": ck.audit(p, y, **fast),
        "top_label": ck.audit(z, labels, from_logits=True, **fast),
        "weighted": ck.audit(p, y, sample_weight=data["w"], **fast),
        "table": ck.reliability_bins(p, y, n_bins=10),
        "grouped": ck.audit(frame, by=NAME, **fast),
        "ledger": ck.compare_calibration(
            ck.TemperatureScaling(),
            z[:half],
            labels[:half],
            eval_scores=z[half:],
            eval_labels=labels[half:],
            n_sims=50,
        ),
        "policy": ck.policy_table(p[:half], y[:half], p[half:], y[half:], l_wrong=1, l_defer=0.3),
        "binary": ck.binary_policy_table(
            p[:half], y[:half], p[half:], y[half:], l_false_positive=1, l_false_negative=3
        ),
        "monitor": ck.monitor(frame, by=NAME, **fast),
        "actions": actions,
        "actions_eval": actions.evaluate(p[half:], y[half:]),
        "guarantee": guarantee,
        "guarantee_eval": guarantee.evaluate(p[half:], y[half:]),
        "stated": ck.audit_stated(
            {NAME: data["group"], "stated_confidence": p, "correct": y},
            group_by=(NAME,),
            sources=("stated_confidence",),
            **fast,
        ),
    }


# ----------------------------------------------------------------------------- every result


ALL = "audit top_label weighted table grouped ledger policy binary monitor stated".split()
ALL += ["actions", "actions_eval", "guarantee", "guarantee_eval"]
#: Results that keep nothing to draw: a ledger keeps each instrument's value, a binary policy
#: table, the three actions and a guarantee their rows and thresholds (none keeps the
#: confidences), so the report draws no figure for them either.
NO_FIGURE = {"ledger", "binary", "actions", "actions_eval", "guarantee", "guarantee_eval"}


@pytest.mark.parametrize("key", ALL)
def test_well_formed_self_contained_with_decodable_figures(
    results: dict[str, Any], key: str
) -> None:
    import matplotlib
    import matplotlib.pyplot as plt

    backend, figures = matplotlib.get_backend(), plt.get_fignums()
    text = results[key]._repr_html_()
    assert plt.get_fignums() == figures and matplotlib.get_backend() == backend
    assert text.startswith('<div class="calibkit">') and text.endswith("</div>")
    assert_self_contained(text)
    frag = Fragment(text)
    shapes = png_shapes(frag)
    if key in NO_FIGURE:
        assert shapes == []
    else:
        assert shapes and all(len(s) == 3 and s[0] > 100 and s[1] > 100 for s in shapes)
    # the style is scoped to the block: no rule reaches the notebook's own elements
    style = text.split("<style>\n", 1)[1].split("\n</style>", 1)[0]
    selectors = [s.strip() for rule in style.splitlines() for s in rule.split(" { ")[0].split(",")]
    assert selectors and all(s.startswith(".calibkit ") for s in selectors)


def test_every_class_with_a_repr_html_has_a_renderer() -> None:
    """Read from the source: each class that defines ``_repr_html_`` is registered."""
    import ast
    from pathlib import Path

    from calibkit import _display
    from calibkit.report import notebook

    package = Path(ck.__file__).parent
    shown = set()
    for path in package.rglob("*.py"):
        module = ".".join(path.relative_to(package.parent).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(
                isinstance(f, ast.FunctionDef) and f.name == "_repr_html_" for f in node.body
            ):
                shown.add(f"{module.removesuffix('.__init__')}.{node.name}")
    assert len(shown) == 12
    assert shown == {_display._key(c) for c in notebook.RENDERERS} <= set(_display._RENDERERS)


def test_an_object_without_a_renderer_is_a_lookup_error() -> None:
    from calibkit import _display

    with pytest.raises(LookupError, match="no notebook renderer for builtins.object"):
        _display.html(object())


# ----------------------------------------------------------------------------- the numbers


def test_audit_shows_its_counts_ece_and_verdict(data: dict[str, Any], results: dict[str, Any]):
    p, y = data["p"], data["y"]
    audit = results["audit"]
    frag = Fragment(audit._repr_html_())
    head, rows = frag.table("reliability-table")
    assert head[:2] == ["bin", "count"] and "weight" not in head
    assert [_count(r[1]) for r in rows] == np.bincount(_bins(p, 15), minlength=15).tolist()
    b = _bins(p, 15)
    nonempty = [r for r in rows if r[1] != "0"]
    conf = [p[b == k].mean() for k in range(15) if (b == k).any()]
    assert [r[head.index("mean conf")] for r in nonempty] == [f"{c:.4f}" for c in conf]
    ece = f"{_ece(p, y):.4f}"
    assert frag.verdicts == [audit.verdict()]
    assert f"ECE {ece} " in frag.verdicts[0]
    _, metrics = frag.table("metrics-table")
    assert [r[1] for r in metrics if r[0] == "ECE"] == [ece]


def test_top_label_audit_counts_the_predicted_class(data: dict[str, Any], results: dict[str, Any]):
    q = ck.softmax(data["z"])
    conf, hit = q.max(axis=1), (q.argmax(axis=1) == data["labels"]).astype(int)
    frag = Fragment(results["top_label"]._repr_html_())
    _, rows = frag.table("reliability-table")
    assert [_count(r[1]) for r in rows] == np.bincount(_bins(conf, 15), minlength=15).tolist()
    assert f"ECE {_ece(conf, hit):.4f} " in frag.verdicts[0]
    assert "top-label confidence of a 4-class model, N = 1,200" in "".join(frag.texts)


def test_weighted_audit_shows_counts_beside_weights(data: dict[str, Any], results: dict[str, Any]):
    p, w = data["p"], data["w"]
    frag = Fragment(results["weighted"]._repr_html_())
    head, rows = frag.table("reliability-table")
    assert head[:4] == ["bin", "count", "weight", "n_eff"]
    b = _bins(p, 15)
    counts = np.bincount(b, minlength=15)
    weights = np.bincount(b, weights=w, minlength=15)
    n_eff = weights**2 / np.maximum(np.bincount(b, weights=w**2, minlength=15), 1e-300)
    assert [_count(r[1]) for r in rows] == counts.tolist()
    full = [(r, k) for k, r in enumerate(rows) if counts[k]]
    assert [r[2] for r, _ in full] == [f"{weights[k]:.4g}" for _, k in full]
    assert [r[3] for r, _ in full] == [f"{n_eff[k]:.4g}" for _, k in full]


def test_reliability_table_shows_counts_and_accuracy(data: dict[str, Any], results: dict[str, Any]):
    p, y = data["p"], data["y"]
    frag = Fragment(results["table"]._repr_html_())
    head, rows = frag.table("reliability-table")
    b = _bins(p, 10)
    assert [_count(r[1]) for r in rows] == np.bincount(b, minlength=10).tolist()
    acc = [f"{y[b == k].mean():.4f}" for k in range(10) if (b == k).any()]
    assert [r[head.index("accuracy")] for r in rows if r[1] != "0"] == acc
    assert "M = 10 uniform bins, N = 1,200" in "".join(frag.texts)


def test_grouped_audit_shows_each_group_escaped(data: dict[str, Any], results: dict[str, Any]):
    p, y, group = data["p"], data["y"], data["group"]
    grouped = results["grouped"]
    text = grouped._repr_html_()
    assert NAME not in text and "&lt;b&gt;&amp;&quot;" in text
    frag = Fragment(text)
    assert frag.verdicts == [grouped.verdict()]
    head, rows = frag.table()
    assert head[:2] == ["group", "N"]
    by_name = {r[0]: r for r in rows}
    assert set(by_name) == {NAME, "plain", "all"}  # escaped in the file, the name once parsed
    for name in (NAME, "plain"):
        sel = group == name
        assert _count(by_name[name][1]) == int(sel.sum())
        assert by_name[name][head.index("ECE")] == f"{_ece(p[sel], y[sel]):.4f}"


def test_ledger_shows_ece_before_and_after(data: dict[str, Any], results: dict[str, Any]):
    half = data["p"].size // 2
    ledger = results["ledger"]
    q = ck.softmax(data["z"][half:])
    labels = data["labels"][half:]
    conf, hit = q.max(axis=1), (q.argmax(axis=1) == labels).astype(int)
    after = ledger.calibrator.predict_proba(data["z"][half:])
    a_conf, a_hit = after.max(axis=1), (after.argmax(axis=1) == labels).astype(int)
    frag = Fragment(ledger._repr_html_())
    head, rows = frag.table("ledger-table")
    ece = next(r for r in rows if r[0] == "ECE")
    assert ece[head.index("BEFORE")] == f"{_ece(conf, hit):.4f}"
    assert ece[head.index("AFTER")] == f"{_ece(a_conf, a_hit):.4f}"


def test_policy_table_shows_chow_coverage_and_risk(data: dict[str, Any], results: dict[str, Any]):
    half = data["p"].size // 2
    conf_eval = data["p"][half:]  # the confidence of an event, and whether it happened
    right = data["y"][half:] == 1
    chow = 1 - 0.3 / 1  # act when confidence >= 1 - l_defer / l_wrong (Chow 1970)
    acted = conf_eval >= chow
    frag = Fragment(results["policy"]._repr_html_())
    head, rows = frag.table("policy-table")
    row = next(r for r in rows if r[0].startswith("Chow"))
    assert row[head.index("threshold")] == "0.7"
    assert row[head.index("coverage")] == f"{acted.mean():.3f}"
    assert row[head.index("risk")] == f"{(~right[acted]).mean():.3f}"
    cost = ((~right & acted).sum() * 1 + (~acted).sum() * 0.3) / acted.size
    assert row[head.index("cost / case")] == f"{cost:.3f}"


def test_binary_policy_table_shows_bayes_errors(data: dict[str, Any], results: dict[str, Any]):
    half = data["p"].size // 2
    p, y = data["p"][half:], data["y"][half:]
    bayes = 1 / (1 + 3)  # l_fp / (l_fp + l_fn)
    flag = p >= bayes
    frag = Fragment(results["binary"]._repr_html_())
    assert frag.verdicts == [results["binary"].verdict()]
    head, rows = frag.table("binary-table")
    row = next(r for r in rows if r[1] == "0.25")
    assert _count(row[head.index("flagged")]) == int(flag.sum())
    assert _count(row[head.index("false negatives")]) == int((~flag & (y == 1)).sum())
    assert _count(row[head.index("false positives")]) == int((flag & (y == 0)).sum())


def test_monitor_shows_each_group_escaped(data: dict[str, Any], results: dict[str, Any]):
    p, y, group = data["p"], data["y"], data["group"]
    monitor = results["monitor"]
    text = monitor._repr_html_()
    assert NAME not in text
    frag = Fragment(text)
    assert frag.verdicts == [monitor.verdict()]
    head, rows = frag.table("monitor-table")
    assert head == list(monitor.WIDE_HEADER)
    for row in rows:
        sel = group == row[0]
        assert _count(row[1]) == int(sel.sum())
        assert row[head.index("ECE")] == f"{_ece(p[sel], y[sel]):.4f}"
    assert f"ECE by {NAME}" in [img["alt"] for img in frag.images]


def test_stated_audit_shows_each_group_escaped(data: dict[str, Any], results: dict[str, Any]):
    p, y, group = data["p"], data["y"], data["group"]
    text = results["stated"]._repr_html_()
    assert NAME not in text
    frag = Fragment(text)
    head, rows = frag.table()
    assert head[:3] == ["group", "source", "N (excluded)"]
    for row in rows:
        sel = group == row[0]
        assert row[2] == f"{int(sel.sum()):,} (0)"
        assert row[4].split()[0] == f"{_ece(p[sel], y[sel]):.4f}"
    # then each group's own reliability table, counted by hand
    for k, name in enumerate(r[0] for r in rows):
        _, bins = frag.table("reliability-table", index=k)
        sel = group == name
        assert [_count(r[1]) for r in bins] == np.bincount(_bins(p[sel], 15), minlength=15).tolist()


def test_actions_show_their_cases_and_cost(data: dict[str, Any], results: dict[str, Any]):
    half = data["p"].size // 2
    p, y = data["p"][:half], data["y"][:half]
    choice = results["actions"]
    act = p >= choice.act_threshold
    ask = ~act & (p >= choice.ask_threshold)
    escalate = ~act & ~ask
    frag = Fragment(choice._repr_html_())
    head, rows = frag.table("actions-table")
    assert [_count(r[head.index("cases")]) for r in rows] == [act.sum(), ask.sum(), escalate.sum()]
    assert rows[0][head.index("risk")] == f"{(y[act] == 0).mean():.4f}"
    cost = (
        (act & (y == 0)).sum() * 1.0
        + (ask & (y == 1)).sum() * 0.2
        + (ask & (y == 0)).sum() * 0.6
        + escalate.sum() * 0.5
    ) / p.size
    assert f"cost {cost:.4f} per case" in "".join(frag.texts)
    held = results["actions_eval"]._repr_html_()
    assert _e(results["actions_eval"].describe()) in held


def test_guarantee_shows_its_bound(data: dict[str, Any], results: dict[str, Any]):
    from scipy.stats import beta

    half = data["p"].size // 2
    p, y = data["p"][:half], data["y"][:half]
    g = results["guarantee"]
    acted = p >= g.threshold
    k, n = int((y[acted] == 0).sum()), int(acted.sum())
    bound = beta.ppf(0.95, k + 1, n - k)  # one-sided Clopper-Pearson upper bound at 1 - delta
    assert bound <= 0.2
    text = "".join(Fragment(g._repr_html_()).texts)
    assert f"({n} acted on)" in text and f"({k} wrong)" in text
    assert f"upper bound {bound:.4f}" in text
    p_eval, y_eval = data["p"][half:], data["y"][half:]
    held = p_eval >= g.threshold
    text = "".join(Fragment(results["guarantee_eval"]._repr_html_()).texts)
    assert f"coverage {held.mean():.4f}, risk {(y_eval[held] == 0).mean():.4f}" in text


# ----------------------------------------------------------------------------- same as the report

REPORT = {
    "audit": (lambda r: {"audit": r}, ["summary", "reliability", "metrics", "binning"]),
    "top_label": (lambda r: {"audit": r}, ["summary", "reliability", "metrics", "binning"]),
    "weighted": (lambda r: {"audit": r}, ["summary", "reliability", "metrics", "binning"]),
    "grouped": (lambda r: {"grouped": r}, ["groups"]),
    "ledger": (lambda r: {"ledger": r}, ["recalibration"]),
    "policy": (lambda r: {"policy": r}, ["policy"]),
    "binary": (lambda r: {"binary": r}, ["binary"]),
    "monitor": (lambda r: {"monitor": r}, ["monitor"]),
    "stated": (lambda r: {"stated": r}, ["stated"]),
    "actions": (lambda r: {"actions": r}, ["actions"]),
    "actions_eval": (lambda r: {"actions": r}, ["actions"]),
    "guarantee": (lambda r: {"guarantee": r}, ["guarantee"]),
    "guarantee_eval": (lambda r: {"guarantee": r}, ["guarantee"]),
}


@pytest.mark.parametrize("key", sorted(REPORT))
def test_the_notebook_shows_the_report_sections(results: dict[str, Any], key: str) -> None:
    result = results[key]
    arguments, wanted = REPORT[key]
    found = report_sections(render_report(**arguments(result)))
    text = result._repr_html_()
    assert set(wanted) <= set(found)
    for name in wanted:
        assert found[name] in text, name


def test_a_reliability_table_shows_the_table_its_audit_shows(results: dict[str, Any]) -> None:
    audit = results["audit"]  # binary: the same gap note as a table of any event
    section = report_sections(render_report(audit=audit))["reliability"]
    table = re.search(r'<table id="reliability-table">.*?</table>', section, re.S)
    assert table is not None and table.group(0) in audit.table._repr_html_()


# ----------------------------------------------------------------------------- when drawing fails


def test_a_figure_that_fails_leaves_a_note_and_a_warning(
    results: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from calibkit.report import _html_audit

    def broken(audit: Any) -> Any:
        raise RuntimeError("the axes are gone")

    monkeypatch.setattr(_html_audit, "_figure_reliability", broken)
    with pytest.warns(ck.CalibkitWarning, match="the figure could not be drawn"):
        text = results["audit"]._repr_html_()
    frag = Fragment(text)
    assert frag.images == []
    assert frag.notes == ["The figure is not drawn: RuntimeError: the axes are gone."]
    _, rows = frag.table("reliability-table")
    assert len(rows) == 15  # the table still shows


def test_without_matplotlib_the_tables_show_with_a_note() -> None:
    code = textwrap.dedent(
        """
        import sys
        sys.modules["matplotlib"] = None  # as if it were not installed
        import numpy as np, calibkit as ck
        rng = np.random.default_rng(0)
        p = rng.uniform(0, 1, 200); y = (rng.random(200) < p).astype(int)
        text = ck.audit(p, y, n_boot=20, n_sims=20)._repr_html_()
        print(text.count("<img"), text.count('<tr class="bin'))
        print(text.split('<p class="note">')[1].split("</p>")[0])
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    count, note = out.stdout.splitlines()
    assert count == "0 15"
    assert note == "The figure is not drawn: matplotlib is not installed (pip install matplotlib)."


def test_importing_calibkit_imports_no_matplotlib() -> None:
    code = (
        "import sys, calibkit, calibkit.audit, calibkit.monitoring, calibkit.stated.audit\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib'))\n"
        "print('calibkit.report.notebook' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["[]", "False"]
