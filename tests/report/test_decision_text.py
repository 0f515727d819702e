"""report.decision_text: the decisions of a prediction file in the terminal."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from rich.console import Console

from calibkit.decide import decide_predictions, policy_table
from calibkit.io import read_predictions
from calibkit.report.decision_text import (
    BINARY_COLUMNS,
    POLICY_COLUMNS,
    decision_verdict,
    print_policy,
    render_decision,
)

CONF = np.array([0.95, 0.9, 0.8, 0.6])


def _text(render) -> str:
    console = Console(record=True, width=200, highlight=False)
    render(console)
    return console.export_text()


def test_the_verdict_by_hand():
    # chosen on the first outcomes: act on 0.95, 0.9, 0.8 (all right there); on the second
    # outcomes the 0.8 one is wrong: cost (10 + 1) / 4, coverage 3/4, risk 1/3
    t = policy_table(CONF, [1, 1, 1, 0], CONF, [1, 1, 0, 0], l_wrong=10, l_defer=1)
    assert decision_verdict(t) == (
        "act when confidence >= 0.8 (chosen on 4 cases): cost 2.7500 per case on the other 4, "
        "coverage 0.7500, risk 0.3333; deferring everything costs 1.0000."
    )


def test_a_policy_table_prints_its_header_rows_and_notes():
    t = policy_table(CONF, [1, 1, 1, 0], CONF, [1, 1, 0, 0], l_wrong=10, l_defer=1)
    text = _text(lambda c: print_policy(c, t, POLICY_COLUMNS))
    lines = text.splitlines()
    assert lines[0] == t.header()
    assert lines[1].split() == ["policy", *" ".join(POLICY_COLUMNS).split()]
    for cells in t.table_rows():
        assert any(line.startswith(cells[0]) and cells[-1] in line for line in lines)
    for note in t.notes():
        assert note[:50] in text


def test_render_decision_prints_each_part_that_was_asked_for():
    rng = np.random.default_rng(3)
    p = rng.uniform(0.02, 0.98, 400)
    y = (rng.uniform(size=400) < p).astype(int)
    preds = read_predictions(pa.table({"p": p, "label": y}), probs="p", label="label")
    d = decide_predictions(
        preds,
        l_wrong=10,
        l_defer=1,
        l_ask=0.5,
        l_ask_wrong=3,
        target_risk=0.2,
        l_false_positive=1,
        l_false_negative=5,
    )
    text = _text(lambda c: render_decision(d, c))
    lines = text.splitlines()
    assert lines[0] == f"calibkit decide: {d.source}"
    assert lines[1] == (
        "choosing on 200 rows, reporting on 200 (split by label, fraction 0.5, seed 0)"
    )
    assert d.table.header() in lines and d.binary.header() in lines
    assert "three actions (chosen on the choosing half):" in lines
    assert "guaranteed risk (target 0.2, chosen on the choosing half):" in lines
    assert d.actions.describe("the reporting half")[:60] in text
    assert "FN: false negatives (y = 1, not flagged)" in text
    assert BINARY_COLUMNS[1] in text
    only_table = decide_predictions(preds, l_wrong=10, l_defer=1)
    short = _text(lambda c: render_decision(only_table, c))
    assert "three actions" not in short and "guaranteed risk" not in short and "FN:" not in short
