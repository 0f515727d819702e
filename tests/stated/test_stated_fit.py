"""fit_stated: maps of stated confidence per model, judged on held-out questions."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pytest
from typer.testing import CliRunner

from calibkit._errors import InputError
from calibkit.cli import app
from calibkit.recalibrate import IsotonicCalibration, compare_calibration
from calibkit.stated.fit import fit_stated


def _table(n: int = 400, seed: int = 1) -> dict[str, list]:
    """Two models, two question sets, stated values multiples of 0.1, overconfident by 0.2."""
    rng = np.random.default_rng(seed)
    rows: dict[str, list] = {"llm": [], "qset": [], "question_id": [], "conf": [], "ok": []}
    for llm in ("a", "b"):
        for qset in ("s1", "s2"):
            c = rng.integers(3, 11, n) / 10
            y = (rng.random(n) < np.clip(c - 0.2, 0, 1)).astype(int)
            rows["llm"] += [llm] * n
            rows["qset"] += [qset] * n
            rows["question_id"] += [str(i) for i in range(n)]
            rows["conf"] += c.tolist()
            rows["ok"] += y.tolist()
    return rows


KW = {"confidence": "conf", "correct": "ok", "question": ("qset", "question_id"), "n_sims": 100}


def test_split_shares_no_question_and_holds_out_test_size():
    t = _table()
    fits = fit_stated(t, **KW, test_size=0.25, seed=3)
    q = np.array([f"{s}/{i}" for s, i in zip(t["qset"], t["question_id"], strict=True)])
    for f in fits.fits:
        # redraw the split as the docstring says: distinct keys sorted, permuted with seed
        assert f.n_questions_fit + f.n_questions_eval == 800
        assert f.n_questions_eval == 200
    distinct = sorted({(s, i) for s, i in zip(t["qset"], t["question_id"], strict=True)})
    order = np.random.default_rng(3).permutation(len(distinct))
    held = {distinct[i] for i in order[:200]}
    held_rows = np.array([(s, i) in held for s, i in zip(t["qset"], t["question_id"], strict=True)])
    a = np.array(t["llm"]) == "a"
    assert set(q[a & held_rows]).isdisjoint(set(q[a & ~held_rows]))
    assert fits.get(["a"]).ledger.n_eval == int((a & held_rows).sum())


def test_ledger_equals_compare_calibration_on_the_same_split():
    t = _table()
    fits = fit_stated(t, **KW, seed=0)
    is_held = _held(t)
    c, y = np.array(t["conf"]), np.array(t["ok"])
    b = np.array(t["llm"]) == "b"
    by_hand = compare_calibration(
        IsotonicCalibration(),
        c[b & ~is_held],
        y[b & ~is_held],
        from_logits=False,
        eval_scores=c[b & is_held],
        eval_labels=y[b & is_held],
        n_sims=100,
        seed=0,
    )
    got = fits.get(["b"]).ledger
    assert got.before == by_hand.before and got.after == by_hand.after
    assert got.noise_floor_after.p95 == by_hand.noise_floor_after.p95
    f = fits.get(["b"])
    assert f.within_floor == (got.after["ECE"] <= got.noise_floor_after.p95)


def _held(t, seed=0, test_size=0.3):
    keys = list(zip(t["qset"], t["question_id"], strict=True))
    distinct = sorted(set(keys))
    order = np.random.default_rng(seed).permutation(len(distinct))
    held = {distinct[i] for i in order[: round(test_size * len(distinct))]}
    return np.array([k in held for k in keys])


def _pava(values, weights):
    """Pool-adjacent-violators by hand: blocks of (mean, weight, size)."""
    blocks: list[list[float]] = []
    for v, w in zip(values, weights, strict=True):
        blocks.append([v, w, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            (m1, w1, n1), (m2, w2, n2) = blocks[-2], blocks[-1]
            blocks[-2:] = [[(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, n1 + n2]]
    return np.repeat([b[0] for b in blocks], [b[2] for b in blocks])


def test_isotonic_map_is_constant_on_each_tied_value():
    t = _table()
    f = fit_stated(t, **KW).get(["a"])
    c, y = np.array(t["conf"]), np.array(t["ok"])
    fit = (np.array(t["llm"]) == "a") & ~_held(t)
    values = np.unique(c[fit])  # multiples of 0.1
    rows = f.calibrator.predict_proba(c)
    for v in values:  # every row stating v gets one number
        assert np.unique(rows[c == v]).size == 1
    # that number is PAVA on the per-value frequencies of the fit half, weighted by counts
    freq = np.array([y[fit & (c == v)].mean() for v in values])
    count = np.array([(fit & (c == v)).sum() for v in values])
    np.testing.assert_allclose(f.calibrator.predict_proba(values), _pava(freq, count), atol=1e-12)


def test_transfer_fits_on_one_set_and_judges_on_another():
    t = _table()
    fits = fit_stated(t, **KW, transfer=("s1", "s2"))
    f = fits.get(["a"])
    assert (f.fitted_on, f.judged_on) == ("s1", "s2")
    c, y = np.array(t["conf"]), np.array(t["ok"])
    a = np.array(t["llm"]) == "a"
    s1, s2 = np.array(t["qset"]) == "s1", np.array(t["qset"]) == "s2"
    by_hand = compare_calibration(
        IsotonicCalibration(), c[a & s1], y[a & s1], from_logits=False,
        eval_scores=c[a & s2], eval_labels=y[a & s2], n_sims=100, seed=0,
    )  # fmt: skip
    assert f.ledger.after == by_hand.after
    assert len(fit_stated(t, **KW, transfer="all").fits) == 2 * 2


def test_platt_refuses_0_and_1_unless_clip():
    t = _table()
    with pytest.raises(InputError, match=r"log-odds of 'conf'.*first at row \d+ \(llm='a': 1.0\)"):
        fit_stated(t, **KW, method="platt")
    with pytest.warns(Warning, match="clip=0.005 moved"):
        fit_stated(t, **KW, method="platt", clip=0.005)
    with pytest.raises(InputError, match="isotonic uses stated values as they are"):
        fit_stated(t, **KW, clip=0.005)


def test_bad_input_names_column_row_and_group():
    t = _table()
    with pytest.raises(InputError, match="no column 'stated'"):
        fit_stated(t, **{**KW, "confidence": "stated"})
    bad = {**t, "conf": [*t["conf"][:5], 95.0, *t["conf"][6:]]}
    with pytest.raises(InputError, match=r"'conf' must lie in \[0, 1\].*row 5: 95.0.*percentages"):
        fit_stated(bad, **KW)
    small = {k: v[:30] + v[800:] for k, v in t.items()}  # model a keeps 30 answers
    with pytest.raises(InputError, match=r"group llm='a' has \d+ questions in '(fit|held-out)"):
        fit_stated(small, **KW)
    with pytest.raises(InputError, match="not a map of one confidence"):
        fit_stated(t, **KW, method="vector")


def test_cli_json(tmp_path):
    path = tmp_path / "answers.csv"
    pcsv.write_csv(pa.table(_table()), path)
    args = ["stated", "fit", str(path), "--confidence", "conf", "--correct", "ok",
            "--question", "qset,question_id", "--n-sims", "50", "--json"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [f["group"] for f in doc["fits"]] == [["a"], ["b"]]
    assert all(f["ece_after"] < f["ece_before"] for f in doc["fits"])
    bad = CliRunner().invoke(app, ["stated", "fit", str(path), "--confidence", "nope"])
    assert bad.exit_code == 2 and "no column 'nope'" in bad.output
