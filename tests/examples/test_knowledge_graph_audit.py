"""examples/knowledge_graph_audit.py: the binary calibration audit of a ComplEx link predictor.

The example is imported from its file and run; the asserts are the example's claims (the fit
lowers its own objective, tau > 1, held-out ECE improves, decisions / order / AUC bit-identical)
and identities that hold on any data (ECE by hand from the table rows, the Brier decomposition,
the standard error of a bin, the n-for-n lower bound), plus checks of the numpy parts the example
writes itself (the ComplEx gradients, the corruption sampler).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from example_loader import load_example

import calibkit as ck

ex = load_example("knowledge_graph_audit")
_RUNS: dict[int, dict] = {}


def run(seed: int) -> dict:
    if seed not in _RUNS:
        _RUNS[seed] = ex.run(seed)
    return _RUNS[seed]


@pytest.fixture(scope="module")
def res() -> dict:
    return run(0)


# --------------------------------------------------------------------------- the world and model


def test_graph_train_and_test_are_a_partition_of_distinct_truths():
    assert len(set(ex.TRIPLES)) == len(ex.TRIPLES)
    assert set(ex.TEST) <= set(ex.TRIPLES)
    assert set(ex.TRAIN) | set(ex.TEST) == set(ex.TRIPLES)
    assert not set(ex.TRAIN) & set(ex.TEST)
    # every held-out fact is about entities the model was trained on (link prediction proper)
    trained = {x for h, _, t in ex.TRAIN for x in (h, t)}
    assert all(h in trained and t in trained for h, _, t in ex.TEST)


def test_encode_decode_round_trip():
    encoded = ex.encode(ex.TRIPLES)
    assert [ex.decode(row) for row in encoded] == list(ex.TRIPLES)


def test_complex_score_is_the_real_part_of_the_trilinear_product():
    rng = np.random.default_rng(5)
    ent = rng.normal(size=(4, 3)) + 1j * rng.normal(size=(4, 3))
    rel = rng.normal(size=(2, 3)) + 1j * rng.normal(size=(2, 3))
    model = ex.ComplEx(ent, rel)
    h, r, t = ent[1], rel[0], ent[3]
    a, b, c, d, e, f = h.real, h.imag, r.real, r.imag, t.real, t.imag
    expected = np.sum(a * c * e + b * c * f + a * d * f - b * d * e)
    assert model.score(np.array([[1, 0, 3]]))[0] == pytest.approx(expected, rel=1e-12)
    # antisymmetry is possible: (h, r, t) and (t, r, h) score differently when Im(r) != 0
    assert model.score(np.array([[1, 0, 3]]))[0] != pytest.approx(
        model.score(np.array([[3, 0, 1]]))[0]
    )


def test_gradients_match_finite_differences():
    rng = np.random.default_rng(1)
    ent = rng.normal(size=(5, 3)) + 1j * rng.normal(size=(5, 3))
    rel = rng.normal(size=(2, 3)) + 1j * rng.normal(size=(2, 3))
    batch = np.array([[0, 0, 1], [1, 1, 2], [2, 0, 0], [3, 1, 4], [0, 0, 1]])
    y = np.array([1.0, -1.0, 1.0, -1.0, -1.0])
    _, g_ent, g_rel = ex.loss_and_gradients(ex.ComplEx(ent, rel), batch, y, l2=0.3)
    eps = 1e-6

    def numeric(which: str, i: int, k: int, direction: complex) -> float:
        lo_e, hi_e, lo_r, hi_r = ent.copy(), ent.copy(), rel.copy(), rel.copy()
        if which == "ent":
            lo_e[i, k] -= eps * direction
            hi_e[i, k] += eps * direction
        else:
            lo_r[i, k] -= eps * direction
            hi_r[i, k] += eps * direction
        hi = ex.loss_and_gradients(ex.ComplEx(hi_e, hi_r), batch, y, l2=0.3)[0]
        lo = ex.loss_and_gradients(ex.ComplEx(lo_e, lo_r), batch, y, l2=0.3)[0]
        return (hi - lo) / (2 * eps)

    for i in range(5):
        for k in range(3):
            assert numeric("ent", i, k, 1) == pytest.approx(g_ent[i, k].real, abs=1e-7)
            assert numeric("ent", i, k, 1j) == pytest.approx(g_ent[i, k].imag, abs=1e-7)
    for i in range(2):
        for k in range(3):
            assert numeric("rel", i, k, 1) == pytest.approx(g_rel[i, k].real, abs=1e-7)
            assert numeric("rel", i, k, 1j) == pytest.approx(g_rel[i, k].imag, abs=1e-7)


def test_training_fits_the_training_triples(res):
    # memorisation: every trained positive scores above every audit corruption's median
    train_scores = res["model"].score(ex.encode(ex.TRAIN))
    negatives = res["scores"][res["labels"] == 0]
    assert train_scores.min() > np.median(negatives)
    assert np.mean(train_scores > 0) == 1.0


# --------------------------------------------------------------------------- the labelled set


def _is_corruption_of(neg: np.ndarray, pos: np.ndarray) -> bool:
    same = neg == pos
    return bool(same[1] and (same[0] != same[2]))  # relation kept, exactly one end replaced


def test_corruption_sampler_never_yields_a_truth_or_a_duplicate():
    positives = ex.encode(ex.TRIPLES)
    rng = np.random.default_rng(123)
    # 15 per positive on 23 entities: many draws collide and must be redrawn
    negatives = ex.sample_corruptions(
        positives, positives, per_positive=15, n_entities=len(ex.ENTITIES), rng=rng
    )
    assert negatives.shape == (15 * len(positives), 3)
    keys = [tuple(row) for row in negatives.tolist()]
    assert len(set(keys)) == len(keys)
    truths = {tuple(row) for row in positives.tolist()}
    assert not truths & set(keys)
    for j, neg in enumerate(negatives):
        assert _is_corruption_of(neg, positives[j // 15])


def test_corruption_sampler_redraws_rather_than_repeats_in_a_tiny_world():
    # two entities, one relation: (0, 0, 1) is true, so its only false corruptions are
    # (0, 0, 0) and (1, 0, 1); asking for both forces the sampler past the truth and the repeat
    pos = np.array([[0, 0, 1]])
    for seed in range(5):
        neg = ex.sample_corruptions(
            pos, pos, per_positive=2, n_entities=2, rng=np.random.default_rng(seed)
        )
        assert sorted(map(tuple, neg.tolist())) == [(0, 0, 0), (1, 0, 1)]


def test_corruption_sampler_says_when_the_world_is_too_small():
    pos = np.array([[0, 0, 1]])
    with pytest.raises(RuntimeError, match=r"no new false corruption of \('"):
        ex.sample_corruptions(
            pos, pos, per_positive=3, n_entities=2, rng=np.random.default_rng(0), max_draws=50
        )


def test_labelled_set_is_distinct_and_closed_world_correct(res):
    triples, y = res["triples"], res["labels"]
    n_pos = len(ex.TRIPLES)
    assert len(y) == n_pos * (1 + ex.CORRUPTIONS_PER_POSITIVE)
    assert y.sum() == n_pos
    keys = [tuple(row) for row in triples.tolist()]
    assert len(set(keys)) == len(keys)
    truths = {tuple(row) for row in ex.encode(ex.TRIPLES).tolist()}
    assert all((key in truths) == bool(label) for key, label in zip(keys, y, strict=True))


def test_split_is_deterministic_stratified_halves(res):
    y, cal, ev = res["labels"], res["cal"], res["eval"]
    assert len(cal) == len(ev) == len(y) // 2
    assert not set(cal.tolist()) & set(ev.tolist())
    assert sorted(np.concatenate([cal, ev]).tolist()) == list(range(len(y)))
    # both halves keep the 1 : 6 class ratio
    assert y[cal].sum() * ex.CORRUPTIONS_PER_POSITIVE == (len(cal) - y[cal].sum())
    assert y[ev].sum() * ex.CORRUPTIONS_PER_POSITIVE == (len(ev) - y[ev].sum())
    cal2, ev2 = ck.stratified_split(y, calibration_fraction=0.5, seed=0)
    assert np.array_equal(cal, cal2) and np.array_equal(ev, ev2)


def test_same_seed_same_bytes(res):
    again = ex.run(0)
    assert again["scores"].tobytes() == res["scores"].tobytes()
    assert again["triples"].tobytes() == res["triples"].tobytes()
    assert again["tau"] == res["tau"]


# --------------------------------------------------------------------------- the BEFORE table


@pytest.mark.parametrize("which", ["table_before", "table_after"])
def test_reliability_table_has_ten_left_closed_bins_with_counts(res, which):
    table = res[which]
    assert len(table.rows) == ex.N_BINS
    assert sum(r.count for r in table.rows) == len(res["eval"])
    assert [r.lo for r in table.rows] == pytest.approx([b / 10 for b in range(10)])
    # the bin index min(floor(p * M), M - 1): [b/M, (b+1)/M), the last bin holding 1
    p = res["p_before"] if which == "table_before" else res["p_after"]
    index = np.minimum(np.floor(p * ex.N_BINS).astype(int), ex.N_BINS - 1)
    assert [r.count for r in table.rows] == np.bincount(index, minlength=ex.N_BINS).tolist()


@pytest.mark.parametrize("which", ["before", "after"])
def test_ece_by_hand_from_the_rows_equals_ck_ece(res, which):
    table = res[f"table_{which}"]
    by_hand = math.fsum(r.count / table.n * abs(r.acc - r.conf) for r in table.rows if r.count)
    assert by_hand == pytest.approx(res[which]["ece"], abs=1e-12)
    assert ex._ece_by_hand(table)[1] == pytest.approx(by_hand, abs=1e-15)


@pytest.mark.parametrize("which", ["before", "after"])
def test_standard_error_of_each_bin(res, which):
    for row in res[f"table_{which}"].rows:
        if row.count:
            assert row.se == pytest.approx(math.sqrt(row.acc * (1 - row.acc) / row.count))


@pytest.mark.parametrize("which", ["before", "after"])
def test_brier_is_calibration_plus_refinement(res, which):
    d = res[f"brier_{which}"]
    assert d.brier == pytest.approx(res[which]["brier"], abs=1e-12)
    assert d.calibration + d.refinement + d.within_bin == pytest.approx(d.brier, abs=1e-12)
    table = res[f"table_{which}"]
    occupied = [r for r in table.rows if r.count]
    calibration = sum(r.count / table.n * r.gap**2 for r in occupied)
    refinement = sum(r.count / table.n * r.acc * (1 - r.acc) for r in occupied)
    assert d.calibration == pytest.approx(calibration, abs=1e-12)
    assert d.refinement == pytest.approx(refinement, abs=1e-12)


def test_n_for_n_top_bin_certifies_only_its_lower_bound(res):
    # the top bin's memorised training triples are all true, and n for n
    # certifies only accuracy above 0.05 ** (1 / n) at one-sided 95%
    top = res["table_before"].rows[-1]
    assert top.count > 0 and top.acc == 1.0
    lo, hi = ck.binomial_interval(top.count, top.count, method="clopper-pearson", level=0.90)
    assert float(lo) == pytest.approx(0.05 ** (1 / top.count), rel=1e-9)
    assert float(hi) == 1.0


def test_held_out_positive_is_confidently_wrong_and_errors_are_held_out(res):
    # a true held-out triple at p ~ 0.0001, and the evaluation half's
    # errors at 0.5 are the held-out positives, not the memorised training triples
    assert min(row["p_before"] for row in res["held_out"]) < 0.01
    ev_y = res["labels"][res["eval"]]
    assert len(res["errors"]) == round((1 - res["before"]["acc"]) * len(ev_y))
    assert res["errors"], "an audit with no errors would show nothing to repair"
    assert all(err["kind"] == "held-out positive" for err in res["errors"])


# --------------------------------------------------------------------------- temperature


def test_golden_section_fit_lowers_its_own_objective(res):
    s, y, cal, tau = res["scores"], res["labels"], res["cal"], res["tau"]
    s_cal, y_cal = s[cal], y[cal]
    assert res["nll_cal_at_tau"] < res["nll_cal_at_1"]
    # the reported objective values are the NLL of the calibration half, computed independently
    assert res["nll_cal_at_1"] == pytest.approx(ck.nll(s_cal, y_cal, from_logits=True), rel=1e-9)
    assert res["nll_cal_at_tau"] == pytest.approx(
        ck.nll(s_cal / tau, y_cal, from_logits=True), rel=1e-9
    )

    def objective(t: float) -> float:
        return ck.nll(s_cal / t, y_cal, from_logits=True)

    # tau is the minimum: nearby temperatures do no better (golden-section is exact to ~1e-15)
    for factor in (0.9, 0.99, 1.01, 1.1):
        assert objective(tau * factor) >= objective(tau) - 1e-12
    assert 0.05 < tau < 20.0  # inside the golden-section bracket
    assert res["scaler"].method == "golden"


def test_fit_sees_only_the_calibration_half(res):
    s, y, cal = res["scores"], res["labels"], res["cal"]
    assert ck.fit_temperature(s[cal], y[cal], method="golden") == res["tau"]
    assert ck.fit_temperature(s, y, method="golden") != res["tau"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scorer_is_overconfident(seed):
    # the objective-mismatch argument: memorisation saturates the sigmoid, so tau > 1
    assert run(seed)["tau"] > 1.0


def test_ece_improves_on_held_out_data(res):
    assert res["after"]["ece"] < res["before"]["ece"]


def test_temperature_moves_probabilities_towards_one_half_for_tau_above_one(res):
    pb, pa = res["p_before"], res["p_after"]
    assert np.all(np.abs(pa - 0.5) <= np.abs(pb - 0.5))
    assert np.array_equal(pa, ck.sigmoid(res["scores"][res["eval"]] / res["tau"]))


def test_held_out_table_rows(res):
    split = {int(i): "cal" for i in res["cal"]} | {int(i): "eval" for i in res["eval"]}
    for k, row in enumerate(res["held_out"]):
        i = ex.TRIPLES.index(ex.TEST[k])
        assert row["triple"] == ex.TEST[k]
        assert row["score"] == res["scores"][i]
        assert row["p_before"] == ck.sigmoid(np.array([row["score"]]))[0]
        assert row["p_after"] == pytest.approx(1 / (1 + math.exp(-row["score"] / res["tau"])))
        assert row["split"] == split[i]
        # one scalar cannot fix the wrong side of 0.5: the sign of s decides for every tau
        assert (row["p_before"] >= 0.5) == (row["p_after"] >= 0.5) == (row["score"] >= 0)


# --------------------------------------------------------------------------- invariance


@pytest.mark.parametrize("seed", [0, 3])
def test_decisions_order_and_auc_are_bit_identical(seed):
    res = run(seed)
    pb, pa = res["p_before"], res["p_after"]
    b, a = res["before"], res["after"]
    assert np.array_equal(pb >= 0.5, pa >= 0.5)
    assert b["acc"] == a["acc"]
    assert np.array_equal(np.argsort(pb, kind="stable"), np.argsort(pa, kind="stable"))
    assert b["auc"] == a["auc"]
    # the AUC of the raw scores too: only the order matters
    ev = res["eval"]
    assert ck.auc(res["scores"][ev], res["labels"][ev]) == b["auc"]
    assert res["invariance"].ok
    assert res["ledger"].invariance.ok


def test_ledger_is_the_same_fit_on_the_same_split(res):
    ledger = res["ledger"]
    assert ledger.parameters["temperature"] == res["tau"]
    assert ledger.n_fit == len(res["cal"]) and ledger.n_eval == len(res["eval"])
    for instrument, key in [("ECE", "ece"), ("NLL", "nll"), ("Brier", "brier")]:
        assert ledger.before[instrument] == pytest.approx(res["before"][key], abs=1e-9)
        assert ledger.after[instrument] == pytest.approx(res["after"][key], abs=1e-9)
    assert ledger.before["accuracy"] == ledger.after["accuracy"] == res["before"]["acc"]
    assert ledger.before["AUC"] == ledger.after["AUC"] == res["before"]["auc"]


# --------------------------------------------------------------------------- the walkthrough


def test_main_prints_every_section_and_its_asserts_hold(res, capsys):
    ex.main(0)
    out = capsys.readouterr().out
    for heading in ["[1] the raw scores", "[2] BEFORE", "[3] temperature by", "[4] AFTER"]:
        assert heading in out
    assert "[5] the invariance theorem" in out and "[6] what one scalar cannot fix" in out
    assert f"τ* = {res['tau']:.4f}" in out
    for row in res["held_out"]:
        assert "(" + ", ".join(row["triple"]) + ")" in out
    assert out.rstrip().endswith("all of the audit's asserts hold.")
