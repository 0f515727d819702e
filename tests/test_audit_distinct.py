"""The audit reports the measures without bins (CORP's decompositions, smooth ECE, the KS and
Kuiper tests) with the numbers the measures give on their own, keeps them in the record, and says
where an engine did not compute them."""

from __future__ import annotations

import numpy as np
import pytest

import calibkit as ck


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    conf = np.round(rng.uniform(0, 1, 4000), 3)
    outcome = (rng.random(4000) < conf**1.4).astype(int)
    return conf, outcome


def test_the_audit_gives_the_measures_own_numbers(data):
    conf, outcome = data
    audit = ck.audit(conf, outcome, n_boot=50, n_sims=50)
    d = audit.distinct
    corp = ck.corp(conf, outcome, n_boot=0)
    assert d.corp.brier.miscalibration == pytest.approx(corp.brier.miscalibration, rel=1e-12)
    assert d.corp.log_loss.discrimination == pytest.approx(corp.log_loss.discrimination, rel=1e-12)
    assert d.smooth.value == pytest.approx(ck.smooth_ece(conf, outcome).value, rel=1e-12)
    assert d.cumulative.ks.p_value == pytest.approx(ck.ks_test(conf, outcome).p_value, rel=1e-9)
    assert d.cumulative.kuiper.statistic == pytest.approx(
        ck.kuiper_test(conf, outcome).statistic, rel=1e-12
    )
    names = [name for name, _, _ in audit.metric_rows()]
    for row in ("smooth ECE", "KS calib. error", "  Brier MCB", "  log loss MCB", "KS test"):
        assert row in names
    text = dict((n, note) for n, _, note in audit.metric_rows())["  Brier MCB"]
    assert f"{corp.brier.removable:.1%} of the binary Brier" in text


def test_the_published_decomposition_through_the_audit():
    # reliabilitydiag's check: Brier MCB 0.1016667, DSC 0.125, UNC 0.25
    audit = ck.audit(
        np.array([0.4, 0.3, 0.2, 0.1, 0.5, 0.9]), np.array([0, 0, 0, 1, 1, 1]), n_boot=20, n_sims=20
    )
    brier = audit.distinct.corp.brier
    assert round(brier.miscalibration, 7) == 0.1016667
    assert (brier.discrimination, brier.uncertainty) == (pytest.approx(0.125), 0.25)


def test_the_record_keeps_them(data):
    conf, outcome = data
    audit = ck.audit(conf, outcome, n_boot=50, n_sims=50)
    metrics = ck.calibration_record(audit)["metrics"]
    assert metrics["smooth_ece"]["value"] == pytest.approx(audit.distinct.smooth.value)
    assert metrics["brier_mcb"]["value"] == pytest.approx(audit.distinct.corp.brier.miscalibration)
    assert metrics["brier_mcb"]["decomposition"]["uncertainty"] == pytest.approx(
        audit.distinct.corp.brier.uncertainty
    )
    s = audit.calibration_slope
    assert metrics["calibration_slope"]["value"] == pytest.approx(s.slope)
    assert metrics["calibration_slope"]["interval"]["low"] == pytest.approx(s.slope_ci[0])


def test_an_engine_without_them_says_so(data, tmp_path, monkeypatch):
    pytest.importorskip("duckdb")
    import pyarrow as pa
    import pyarrow.parquet as pq

    conf, outcome = data
    path = tmp_path / "f.parquet"
    pq.write_table(pa.table({"confidence": conf, "correct": outcome}), path)
    audit = ck.audit(
        str(path),
        columns={"confidence": "confidence", "correct": "correct"},
        engine="duckdb",
        n_boot=20,
        n_sims=20,
    )
    assert audit.distinct is None
    assert any("which the duckdb engine does not collect" in n for n in audit.notes)
    assert (
        "metrics" in ck.calibration_record(audit)
        and "smooth_ece" not in (ck.calibration_record(audit)["metrics"])
    )
    import calibkit.engines.memory as memory

    monkeypatch.setattr(memory, "MAX_ROWS", 1000)
    big = ck.audit(conf, outcome, n_boot=20, n_sims=20)
    assert big.distinct is None
    assert any("forecasts on the memory engine (each sorts them)" in n for n in big.notes)
