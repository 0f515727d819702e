"""report.ledger_text: a calibration ledger and an engine's temperature fit in the terminal."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from rich.console import Console

import calibkit as ck
from calibkit.recalibrate import TemperatureScaling, compare_calibration
from calibkit.recalibrate.fit_predictions import ScaleFit
from calibkit.report.ledger_text import (
    ledger_verdict,
    number_text,
    render_ledger,
    scale_fit_lines,
)

rng = np.random.default_rng(2)
Z = rng.normal(-0.5, 2.0, 1000)
Y = (rng.uniform(size=1000) < ck.sigmoid(Z)).astype(int)
LEDGER = compare_calibration(TemperatureScaling(), 3 * Z, Y, from_logits=True, n_sims=100)


def _text(render) -> str:
    console = Console(record=True, width=200, highlight=False)
    render(console)
    return console.export_text()


def test_numbers_have_four_decimals_and_a_dash_when_missing():
    assert [number_text(x) for x in (0.0123456, 1.0, None, float("nan"), -float("inf"))] == [
        "0.0123",
        "1.0000",
        "-",
        "-",
        "-",
    ]


def test_the_verdict_says_what_the_map_did_on_the_held_out_rows():
    b, a = LEDGER.before, LEDGER.after
    line = ledger_verdict(LEDGER, "t.json")
    assert line == (
        f"{LEDGER.describe()}: ECE {b['ECE']:.4f} -> {a['ECE']:.4f} (floor "
        f"{LEDGER.noise_floor_after.mean:.4f}), NLL {b['NLL']:.4f} -> {a['NLL']:.4f} on "
        f"{LEDGER.n_eval} held-out rows; wrote t.json."
    )
    assert b["ECE"] > a["ECE"]  # 3 z is overconfident; temperature scaling repairs it


def test_a_map_worse_beyond_noise_is_named_in_the_verdict():
    worse = SimpleNamespace(instrument="ECE")
    fake = SimpleNamespace(
        before={"ECE": 0.01, "NLL": 0.5},
        after={"ECE": 0.05, "NLL": None},
        noise_floor_after=SimpleNamespace(mean=0.012),
        worse=(worse,),
        n_eval=10,
        describe=lambda: "m",
    )
    assert ledger_verdict(fake, "o") == (
        "m: ECE 0.0100 -> 0.0500 (floor 0.0120), NLL 0.5000 -> - on 10 held-out rows, WORSE "
        "beyond noise in ECE; wrote o."
    )


def test_the_ledger_table_has_every_row_and_the_notes():
    text = _text(lambda c: render_ledger(LEDGER, c, source="p.csv (logit_1)", out="t.json"))
    lines = text.splitlines()
    assert lines[0] == f"calibkit fit: {LEDGER.describe()}, from p.csv (logit_1)"
    for cells in LEDGER.table_rows():
        row = next(line for line in lines if line.startswith(cells[0] + " "))
        assert cells[2] in row and cells[3] in row
    for note in LEDGER.notes():
        assert note[:60] in text
    assert lines[-1] == f"wrote t.json: {LEDGER.calibrator_name} fitted on {LEDGER.fitted_on}."


def test_an_engine_fit_prints_its_temperature_and_nll():
    scaler = TemperatureScaling()
    scaler.temperature_, scaler.n_evaluations_ = 2.5, 7
    scaler.nll_before_, scaler.nll_after_, scaler.gradient_ = 0.912345, 0.701234, 1.5e-9
    lines = scale_fit_lines(ScaleFit(scaler, "duckdb"), source="log.parquet", out="t.json")
    assert lines == [
        "T = 2.5 fitted on every row of log.parquet with --engine duckdb (7 aggregations); "
        "wrote t.json",
        "NLL on these rows 0.91234 at T = 1 -> 0.70123 at T; d NLL / d T = 1.5e-09. These rows "
        "fitted T: judge it on held-out rows (calibkit apply, then calibkit audit).",
    ]
