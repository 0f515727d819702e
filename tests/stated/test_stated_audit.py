"""audit_stated gives exactly what the measure functions give on the same arrays."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pytest

import calibkit as ck
from calibkit.stated.audit import StatedAudit, audit_stated

FAST = {"n_boot": 100, "n_sims": 100}
pytestmark = pytest.mark.filterwarnings("ignore::calibkit.CalibkitWarning")


def _replay(seed: int = 1) -> dict[str, list]:
    rng = np.random.default_rng(seed)
    n = 240
    llm = ["a"] * 120 + ["b"] * 120
    stated = rng.choice([0.6, 0.8, 0.9, 0.95, 1.0], n).astype(float)
    token = np.clip(stated + rng.normal(0, 0.05, n), 0.01, 0.99)
    correct = (rng.random(n) < stated * 0.9).astype(int)
    stated_l: list = stated.tolist()
    token_l: list = token.tolist()
    for i in (3, 17, 150):
        stated_l[i] = None
    token_l[5] = float("nan")
    token_l[200] = 1.5  # out of range: excluded and counted
    return {
        "llm": llm,
        "stated_confidence": stated_l,
        "chosen_token_confidence": token_l,
        "correct": correct.tolist(),
    }


def _used(data: dict, source: str, llm: str) -> tuple[np.ndarray, np.ndarray]:
    c, y = [], []
    for g, v, o in zip(data["llm"], data[source], data["correct"], strict=True):
        if g == llm and v is not None and not math.isnan(v) and 0 <= v <= 1:
            c.append(v)
            y.append(o)
    return np.asarray(c), np.asarray(y)


@pytest.mark.parametrize("as_table", [False, True])
def test_audit_equals_measure_functions(as_table: bool) -> None:
    data = _replay()
    frame = pa.table(data) if as_table else data
    a = audit_stated(frame, group_by=("llm",), seed=3, **FAST)
    assert isinstance(a, StatedAudit)
    for llm in ("a", "b"):
        for src in ("stated_confidence", "chosen_token_confidence"):
            c, y = _used(data, src, llm)
            r = a.get((llm,), src)
            assert r.n == c.size
            assert r.accuracy == float(y.mean())
            assert r.ece == ck.ece(c, y, n_bins=15)
            boot = ck.bootstrap_ece(c, y, n_bins=15, n_boot=100, seed=3)
            assert (r.ece_low, r.ece_high) == (boot.low, boot.high)
            assert r.noise_floor == ck.noise_floor(c, n_bins=15, n_sims=100, seed=3).mean
            assert r.brier == ck.brier(c, y)
            assert r.nll == ck.nll(c, y)
            assert r.auc == ck.auc(c, y)
    comp = a.better(("a",))
    assert comp is not None and comp.better in ("stated_confidence", "chosen_token_confidence")
    json.dumps(a.to_dict())
    text = str(a)
    assert "stated_confidence" in text and "ECE" in text


def test_pandas_frame_same_as_dict() -> None:
    pd = pytest.importorskip("pandas")
    data = _replay()
    a = audit_stated(data, group_by=("llm",), **FAST)
    b = audit_stated(pd.DataFrame(data), group_by=("llm",), **FAST)
    assert a.to_dict() == b.to_dict()


def test_nulls_excluded_and_counted() -> None:
    a = audit_stated(_replay(), group_by=("llm",), **FAST)
    sa = a.get(("a",), "stated_confidence")
    assert (sa.n_rows, sa.n, sa.n_missing, sa.n_out_of_range) == (120, 118, 2, 0)
    tb = a.get(("b",), "chosen_token_confidence")
    assert (tb.n, tb.n_missing, tb.n_out_of_range) == (119, 0, 1)
    ta = a.get(("a",), "chosen_token_confidence")
    assert (ta.n, ta.n_missing) == (119, 1)


def test_missing_outcome_is_excluded_not_filled() -> None:
    data = {"m": ["x"] * 4, "p": [0.9, 0.8, 0.7, 0.6], "ok": [1, None, 0, 1]}
    r = audit_stated(data, group_by=("m",), sources=("p",), correct="ok", **FAST).rows[0]
    assert (r.n, r.n_missing) == (3, 1)
    assert r.brier == ck.brier([0.9, 0.7, 0.6], [1, 0, 1])


def test_one_class_group_gets_auc_none() -> None:
    data = {
        "llm": ["solo"] * 5 + ["mixed"] * 4,
        "stated_confidence": [0.9, 0.95, 0.9, 1.0, 0.8, 0.9, 0.6, 0.7, 0.8],
        "correct": [1, 1, 1, 1, 1, 1, 0, 1, 0],
    }
    a = audit_stated(data, group_by=("llm",), sources=("stated_confidence",), **FAST)
    assert a.get(("solo",), "stated_confidence").auc is None
    assert a.get(("solo",), "stated_confidence").ece == ck.ece([0.9, 0.95, 0.9, 1.0, 0.8], [1] * 5)
    assert a.get(("mixed",), "stated_confidence").auc is not None
    assert a.better(("solo",)) is None  # only one source


def test_empty_source_and_histogram() -> None:
    data = {"llm": ["g"] * 4, "s": [0.9, 0.9, 0.95, 0.93], "t": [None] * 4, "correct": [1, 0, 1, 1]}
    a = audit_stated(data, group_by=("llm",), sources=("s", "t"), **FAST)
    s, t = a.get(("g",), "s"), a.get(("g",), "t")
    assert t.n == 0 and t.ece is None and t.n_missing == 4
    assert s.share_multiple_of_05 == 0.75 and s.n_distinct == 3
    assert s.top_values[0] == (0.9, 0.5)
    assert s.n_certain_wrong == 0
    assert a.better(("g",)) is None


def test_bad_inputs() -> None:
    with pytest.raises(ck.InputError):
        audit_stated({"llm": ["a"], "correct": [1]}, group_by=("llm",), sources=("nope",))
    with pytest.raises(ck.InputError):
        audit_stated({"llm": ["a"], "s": [0.5], "correct": [2]}, group_by=("llm",), sources=("s",))


def test_each_source_carries_its_reliability_table_and_risk_coverage_summary():
    import numpy as np

    import calibkit as ck
    from calibkit.stated.audit import audit_stated

    rng = np.random.default_rng(7)
    conf = np.round(rng.uniform(0.4, 1.0, 300) * 20) / 20
    correct = (rng.random(300) < conf).astype(int)
    result = audit_stated(
        {"g": ["a"] * 300, "c": conf, "y": correct},
        group_by=("g",),
        sources=("c",),
        correct="y",
        n_boot=50,
        n_sims=50,
    )
    (row,) = result.rows
    assert int(row.table.count.sum()) == row.n == 300
    np.testing.assert_array_equal(row.table.count, ck.reliability_bins(conf, correct).count)
    assert row.aurc == ck.risk_coverage(conf, correct).aurc
    assert row.e_aurc == ck.risk_coverage(conf, correct).e_aurc
    assert result.to_dict()["rows"][0]["table"]["n"] == 300
