"""AUGRC, the prediction rejection ratio and the AURC conventions: cases worked by hand, the
authors' definitions followed step by step (Traub et al.'s fd-shifts, Malinin's PriorNetworks
script, Geifman et al.'s risk-coverage code), the AUROC identities, and the summary result."""

from __future__ import annotations

import doctest
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import auc as sk_auc
from sklearn.metrics import roc_auc_score

import calibkit as ck
from calibkit.decide import selective

ROOT = Path(__file__).resolve().parents[2]

# five predictions sorted by confidence, the third and fifth wrong (as in test_coverage.py)
CONF = [0.95, 0.9, 0.8, 0.7, 0.6]
OUT = [1, 1, 0, 1, 0]
# a tie of three (one right, two wrong) between a right prediction above and one below
TIED = [0.9, 0.8, 0.8, 0.8, 0.5]
TIED_OUT = [1, 1, 0, 0, 1]


def _random(n: int, seed: int, *, ties: bool = False) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    conf = rng.uniform(0.3, 1.0, n)
    if ties:
        conf = np.round(conf, 1)
    return conf, (rng.random(n) < conf).astype(int)


# ----------------------------------------------------------------------------- the authors' code


def fd_shifts_stats(conf, out, *, generalized: bool):
    """Traub et al.'s RC points (fd_shifts/analysis/rc_stats_utils.py), step by step: sort the
    confidences ascending, start from coverage 1, drop the least confident one at a time, and
    record a point whenever the next confidence differs; then the point at coverage 0 (risk 0
    for the generalized risk, the last risk repeated for the selective risk)."""
    conf, res = np.asarray(conf, float), 1.0 - np.asarray(out, float)  # residual: 1 = wrong
    order = np.argsort(conf)
    conf, res = conf[order], res[order]
    n = len(res)
    error_sum = res.sum()
    coverages, risks = [1.0], [error_sum / n]
    for i in range(n - 1):
        error_sum -= res[i]
        if conf[i] != conf[i + 1]:
            coverages.append((n - i - 1) / n)
            risks.append(error_sum / n if generalized else error_sum / (n - i - 1))
    coverages.append(0.0)
    risks.append(0.0 if generalized else risks[-1])
    return np.array(coverages), np.array(risks)


def fd_shifts_auc(conf, out, *, generalized: bool) -> float:
    """Their evaluate_auc with its default linear interpolation: -trapz over the descending
    coverages, times their display scale of 1000."""
    c, r = fd_shifts_stats(conf, out, generalized=generalized)
    return float(-np.sum(np.diff(c) * (r[1:] + r[:-1]) / 2) * 1000)  # np.trapz(r, c)


def geifman_rank_mean(conf, out) -> float:
    """The risk-coverage AURC of Geifman et al. (2019)'s code: remove the least confident
    prediction one at a time and average the selective risks of the N curve points (with the
    denominator corrected to the number kept, as fd-shifts corrected it)."""
    conf, res = np.asarray(conf, float), 1.0 - np.asarray(out, float)
    order = np.argsort(conf, kind="stable")
    res = res[order]
    n = len(res)
    kept, errors = n, res.sum()
    risks = [errors / kept]
    for i in range(n - 1):
        kept -= 1
        errors -= res[i]
        risks.append(errors / kept)
    return float(np.mean(risks))


def priornetworks_prr(conf, out) -> float:
    """The rejection ratio of Malinin's PriorNetworks script (assessment/rejection.py), as it
    computes it: errors among the i most confident over all N (in percent) for i = 0..N-1,
    plotted reversed against the percentages (i + 1) / N; random rejection and the oracle from
    the last entry as the base error; areas by sklearn's trapezoid ``auc``; PRR in percent."""
    conf, wrong = np.asarray(conf, float), 1 - np.asarray(out)
    inds = np.argsort(conf, kind="stable")[::-1]  # ties in row order: the script leaves them to
    # numpy's default sort, whose order of ties differs between builds and processors
    n = len(conf)
    errors = np.array([wrong[inds[:i]].sum() * 100.0 / n for i in range(n)])
    percentages = np.array([(i + 1) / n * 100.0 for i in range(n)])
    base = errors[-1]
    auc_uns = 1.0 - sk_auc(percentages / 100.0, errors[::-1] / 100.0)
    random = np.array([base * (1.0 - i / n) for i in range(n)])
    auc_rnd = 1.0 - sk_auc(percentages / 100.0, random / 100.0)
    n_orc = int(base / 100.0 * n)
    orc = np.zeros(n)
    orc[:n_orc] = [base * (1.0 - i / (base / 100.0 * n)) for i in range(n_orc)]
    auc_orc = 1.0 - sk_auc(percentages / 100.0, orc / 100.0)
    return float((auc_uns - auc_rnd) / (auc_orc - auc_rnd) * 100.0)


# ----------------------------------------------------------------------------- AUGRC


def test_augrc_five_predictions_by_hand():
    # generalized risks 0, 0, 1/5, 1/5, 2/5 at coverages 1/5..1, from (0, 0): trapezoids of width
    # 0.2 with mean heights 0, 0, 0.1, 0.2, 0.3
    assert ck.augrc(CONF, OUT) == pytest.approx(0.2 * (0 + 0 + 0.1 + 0.2 + 0.3), abs=1e-15)


def test_augrc_of_a_tie_by_hand():
    # points (0.2, 0), (0.8, 2/5), (1, 2/5): 0.6 * 0.2 + 0.2 * 0.4
    assert ck.augrc(TIED, TIED_OUT) == pytest.approx(0.6 * 0.2 + 0.2 * 0.4, abs=1e-15)


def test_augrc_reproduces_the_authors_code_on_the_hand_cases():
    # fd-shifts reports AUGRC times 1000: 120 and 200 for the two cases above
    assert fd_shifts_auc(CONF, OUT, generalized=True) == pytest.approx(120.0, abs=1e-12)
    assert fd_shifts_auc(TIED, TIED_OUT, generalized=True) == pytest.approx(200.0, abs=1e-12)
    assert 1000 * ck.augrc(CONF, OUT) == pytest.approx(120.0, abs=1e-12)
    assert 1000 * ck.augrc(TIED, TIED_OUT) == pytest.approx(200.0, abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("ties", [False, True])
def test_augrc_reproduces_the_authors_code(seed, ties):
    conf, out = _random(700, seed, ties=ties)
    assert 1000 * ck.augrc(conf, out) == pytest.approx(
        fd_shifts_auc(conf, out, generalized=True), rel=1e-12
    )


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("ties", [False, True])
def test_augrc_from_the_auroc_of_right_against_wrong(seed, ties):
    # Traub et al.: AUGRC = (1 - AUROC) * accuracy * error rate + error rate ** 2 / 2
    conf, out = _random(900, seed, ties=ties)
    a = roc_auc_score(out, conf)
    e = 1 - out.mean()
    assert ck.augrc(conf, out) == pytest.approx((1 - a) * (1 - e) * e + e * e / 2, abs=1e-14)


def test_augrc_of_the_oracle_random_and_worst_rankings():
    out = np.array([1] * 7 + [0] * 3)
    e = 0.3
    best = np.linspace(0.99, 0.5, 10)  # every right one above every wrong one
    assert ck.augrc(best, out) == pytest.approx(e * e / 2, abs=1e-15)
    assert ck.augrc(best[::-1], out) == pytest.approx(e - e * e / 2, abs=1e-15)  # errors first
    assert ck.augrc(np.full(10, 0.7), out) == pytest.approx(e / 2, abs=1e-15)  # one tie


def test_augrc_right_endpoint_mean_is_larger_by_half_the_error_rate_over_n():
    # code that averages the N generalized risks (no point at coverage 0) adds err / (2 N)
    conf, out = _random(500, 3)
    order = np.argsort(-conf)
    generalized = np.cumsum(out[order] == 0) / conf.size
    e = 1 - out.mean()
    assert generalized.mean() == pytest.approx(ck.augrc(conf, out) + e / (2 * conf.size), abs=1e-15)


@pytest.mark.filterwarnings("ignore::calibkit.CalibkitWarning")  # synthetic: any value in [0, 1]
@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20), st.booleans()), min_size=1, max_size=60))
def test_augrc_from_the_auroc_under_heavy_ties(rows):
    # 21 possible confidences: the identity with AUROC (ties one half) holds exactly
    conf = np.array([k / 20 for k, _ in rows])
    out = np.array([int(o) for _, o in rows])
    n = conf.size
    value = ck.augrc(conf, out)
    e = 1 - out.mean()
    if 0 < out.sum() < n:
        a = roc_auc_score(out, conf)
        assert value == pytest.approx((1 - a) * (1 - e) * e + e * e / 2, abs=1e-12)
    else:
        assert value == pytest.approx(e * e / 2, abs=1e-12)  # oracle = random = value


def test_augrc_unchanged_by_an_increasing_map():
    conf, out = _random(2000, 5, ties=True)
    assert ck.augrc(conf, out) == ck.augrc(conf**3, out)


def test_augrc_of_class_probabilities_reads_the_predicted_class():
    rng = np.random.default_rng(8)
    p = rng.dirichlet(np.ones(4), 300)
    y = rng.integers(0, 4, 300)
    conf, right = p.max(axis=1), (p.argmax(axis=1) == y).astype(int)
    assert ck.augrc(probs=p, labels=y) == ck.augrc(conf, right)


# ----------------------------------------------------------------------------- PRR


def test_prr_five_predictions_by_hand():
    # AUGRC 0.12, random 0.4 / 2, oracle 0.4 ** 2 / 2: (0.2 - 0.12) / (0.2 - 0.08)
    assert ck.prediction_rejection_ratio(CONF, OUT) == pytest.approx(2 / 3, abs=1e-14)
    # = 2 AUROC - 1 with AUROC 5/6 (5 of the 6 right-wrong pairs ordered)
    assert ck.auc(CONF, OUT) == pytest.approx(5 / 6)


def test_prr_of_a_tie_by_hand():
    # AUGRC 0.2 equals random (0.4 / 2): PRR 0; AUROC 1/2 (two pairs above, two tied)
    assert ck.prediction_rejection_ratio(TIED, TIED_OUT) == pytest.approx(0.0, abs=1e-14)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("ties", [False, True])
def test_prr_is_twice_the_auroc_minus_one(seed, ties):
    conf, out = _random(800, seed, ties=ties)
    assert ck.prediction_rejection_ratio(conf, out) == pytest.approx(
        2 * roc_auc_score(out, conf) - 1, abs=1e-13
    )


def test_prr_oracle_one_worst_minus_one_tie_zero():
    out = np.array([1] * 6 + [0] * 4)
    best = np.linspace(0.99, 0.5, 10)
    assert ck.prediction_rejection_ratio(best, out) == pytest.approx(1.0, abs=1e-14)
    assert ck.prediction_rejection_ratio(best[::-1], out) == pytest.approx(-1.0, abs=1e-14)
    assert ck.prediction_rejection_ratio(np.full(10, 0.6), out) == pytest.approx(0.0, abs=1e-14)


@pytest.mark.parametrize("seed", range(3))
def test_prr_agrees_with_the_priornetworks_script_to_one_rank(seed):
    # The script plots its random and oracle curves one rank to the left of its model curve and
    # takes its base error from the N - 1 most confident: its value moves by about
    # 1 / (N (1 - error rate)) (in units of PRR) from the exact ratio of areas.
    conf, out = _random(3000, seed)
    e = 1 - out.mean()
    script = priornetworks_prr(conf, out) / 100.0
    exact = ck.prediction_rejection_ratio(conf, out)
    assert abs(script - exact) < 3.0 / (conf.size * (1 - e))
    assert abs(script - exact) > 0  # the offset is real, not a rounding


def test_prr_undefined_without_errors_or_without_right_predictions():
    with pytest.raises(
        ck.InputError,
        match=r"prediction_rejection_ratio: every one of the 3 predictions is right, so the "
        r"oracle and random rejection coincide and the ratio is undefined",
    ):
        ck.prediction_rejection_ratio([0.9, 0.8, 0.7], [1, 1, 1])
    with pytest.raises(ck.InputError, match="every one of the 2 predictions is wrong"):
        ck.prediction_rejection_ratio([0.9, 0.8], [0, 0])


# ----------------------------------------------------------------------------- AURC conventions


def test_aurc_conventions_five_predictions_by_hand():
    risks = [0, 0, 1 / 3, 1 / 4, 2 / 5]
    assert ck.aurc(CONF, OUT) == pytest.approx(sum(risks) / 5, abs=1e-15)
    assert ck.aurc(CONF, OUT, convention="rank") == pytest.approx(sum(risks) / 5, abs=1e-15)
    # from (0, 0) (the first risk extended to coverage 0) by trapezoids of width 0.2
    trapezoid = 0.2 * (0 + 0 + (0 + 1 / 3) / 2 + (1 / 3 + 1 / 4) / 2 + (1 / 4 + 2 / 5) / 2)
    assert ck.aurc(CONF, OUT, convention="trapezoid") == pytest.approx(trapezoid, abs=1e-15)
    assert ck.aurc(CONF, OUT) == ck.risk_coverage(CONF, OUT).aurc


def test_aurc_conventions_of_a_tie_by_hand():
    # step: the tie's risk 2/4 over the 0.6 of coverage it adds
    assert ck.aurc(TIED, TIED_OUT) == pytest.approx(0.6 * 0.5 + 0.2 * 0.4, abs=1e-15)
    # rank: expected errors 2/3 and 4/3 at ranks 2 and 3 inside the tie
    rank = (0 + (2 / 3) / 2 + (4 / 3) / 3 + 2 / 4 + 2 / 5) / 5
    assert ck.aurc(TIED, TIED_OUT, convention="rank") == pytest.approx(rank, abs=1e-15)
    assert rank == pytest.approx(151 / 450, abs=1e-15)
    # trapezoid over (0, 0), (0.2, 0), (0.8, 1/2), (1, 2/5)
    trapezoid = 0.6 * (0 + 0.5) / 2 + 0.2 * (0.5 + 0.4) / 2
    assert ck.aurc(TIED, TIED_OUT, convention="trapezoid") == pytest.approx(trapezoid, abs=1e-15)


def test_rank_convention_is_the_mean_over_every_order_of_the_ties():
    conf = np.array([0.9, 0.8, 0.8, 0.8, 0.8, 0.6, 0.6, 0.3])
    out = np.array([1, 1, 0, 0, 1, 0, 1, 1])
    values = []
    for perm in set(itertools.permutations(range(8))):
        if all(conf[perm[i]] >= conf[perm[i + 1]] for i in range(7)):  # one order of the ties
            o = out[list(perm)]
            values.append(np.mean(np.cumsum(o == 0) / np.arange(1, 9)))
    assert len(values) == 4 * 3 * 2 * 2  # 4! orders of the 4-tie times 2! of the 2-tie
    assert ck.aurc(conf, out, convention="rank") == pytest.approx(np.mean(values), abs=1e-15)
    # the 12 distinct outcome patterns each come up equally often; the step value is another
    assert min(values) < ck.aurc(conf, out) < max(values)


@pytest.mark.parametrize("seed", range(3))
def test_rank_convention_is_geifmans_code_without_ties(seed):
    conf, out = _random(600, seed)
    assert ck.aurc(conf, out, convention="rank") == pytest.approx(
        geifman_rank_mean(conf, out), rel=1e-12
    )
    assert ck.aurc(conf, out, convention="step") == pytest.approx(
        geifman_rank_mean(conf, out), rel=1e-12
    )


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("ties", [False, True])
def test_trapezoid_convention_is_the_authors_aurc(seed, ties):
    conf, out = _random(600, seed, ties=ties)
    assert 1000 * ck.aurc(conf, out, convention="trapezoid") == pytest.approx(
        fd_shifts_auc(conf, out, generalized=False), rel=1e-12
    )


def test_rank_convention_in_chunks_is_the_same_number(monkeypatch):
    conf, out = _random(3000, 9, ties=True)
    conf = np.round(conf, 3)  # ties of many sizes
    whole = ck.aurc(conf, out, convention="rank")
    monkeypatch.setattr(selective, "_RANK_CHUNK", 7)
    assert ck.aurc(conf, out, convention="rank") == pytest.approx(whole, rel=1e-13)


def test_aurc_unknown_convention():
    with pytest.raises(
        ck.InputError,
        match=r"aurc: convention must be one of 'step', 'rank', 'trapezoid', got 'mean'",
    ):
        ck.aurc(CONF, OUT, convention="mean")


# ----------------------------------------------------------------------------- the summary


def test_summary_matches_the_single_measures():
    conf, out = _random(1500, 4, ties=True)
    s = ck.selective_prediction(conf, out, target_coverages=(0.5, 0.9), target_risks=(0.1,))
    assert s.augrc == ck.augrc(conf, out)
    assert s.prr == ck.prediction_rejection_ratio(conf, out)
    assert s.aurc == ck.aurc(conf, out)
    assert s.aurc_rank == ck.aurc(conf, out, convention="rank")
    assert s.aurc_trapezoid == ck.aurc(conf, out, convention="trapezoid")
    assert s.at_coverage[1] == ck.risk_at_coverage(conf, out, target_coverage=0.9)
    assert s.at_risk[0] == ck.coverage_at_risk(conf, out, target_risk=0.1)
    e = 1 - out.mean()
    assert (s.error_rate, s.random_augrc) == pytest.approx((e, e / 2))
    assert s.oracle_augrc == pytest.approx(e * e / 2)
    assert s.e_augrc == pytest.approx(s.augrc - e * e / 2)


def test_summary_text_and_dict():
    s = ck.selective_prediction(CONF, OUT, target_coverages=(0.6,), target_risks=(0.25,))
    text = str(s)
    assert "AUGRC 0.12000 (oracle 0.08000, random 0.20000, E-AUGRC 0.04000)" in text
    assert "PRR 0.6667" in text
    assert "AURC 0.19667 (step; rank mean 0.19667, trapezoid 0.15667" in text
    assert "0.6" in text and "0.25" in text
    d = json.loads(json.dumps(s.to_dict()))
    assert d["augrc"] == pytest.approx(0.12) and d["prr"] == pytest.approx(2 / 3)
    assert d["at_coverage"][0]["n_acted"] == 3 and d["at_risk"][0]["coverage"] == 0.8
    assert "curve" not in d


def test_summary_without_errors_has_no_prr():
    s = ck.selective_prediction([0.9, 0.8, 0.7], [1, 1, 1], target_coverages=())
    assert s.prr is None and s.augrc == 0.0
    assert "PRR undefined: every prediction is right" in str(s)
    assert s.to_dict()["prr"] is None


def test_summary_bad_targets():
    with pytest.raises(
        ck.InputError,
        match=r"selective_prediction: target_coverages must be a number in \(0, 1\], got 0",
    ):
        ck.selective_prediction(CONF, OUT, target_coverages=(0.5, 0))
    with pytest.raises(
        ck.InputError,
        match=r"selective_prediction: target_risks must be a number in \[0, 1\], got 2",
    ):
        ck.selective_prediction(CONF, OUT, target_risks=(2,))


@pytest.mark.parametrize(
    "fn", [ck.augrc, ck.aurc, ck.prediction_rejection_ratio, ck.selective_prediction]
)
def test_bad_input_names_the_function(fn):
    name = fn.__name__
    with pytest.raises(ck.InputError, match=f"{name}: confidence must not contain NaN"):
        fn([0.9, math.nan], [1, 0])
    with pytest.raises(ck.InputError, match=f"{name}: .*outcome must be 0 or 1"):
        fn([0.9, 0.8], [1, 2])
    with pytest.raises(ck.InputError, match=f"{name}: nothing to decide on"):
        fn()


def test_a_class_probability_given_as_confidence_warns_at_the_callers_line():
    p = np.r_[np.full(10, 0.01), np.full(10, 0.9)]
    with pytest.warns(ck.CalibkitWarning, match=r"these look like P\(y = 1\)") as record:
        ck.augrc(p, np.ones(20, int))
    assert record[0].filename == __file__


# ----------------------------------------------------------------------------- the docs


def test_the_selective_prediction_page_runs():
    page = ROOT / "docs" / "selective-prediction.md"
    result = doctest.testfile(
        str(page), module_relative=False, optionflags=doctest.NORMALIZE_WHITESPACE
    )
    assert result.attempted > 10 and result.failed == 0


def _densenet():
    data = np.load(ROOT / "examples" / "data" / "densenet40_cifar10_logits.npz")
    return data["test_logits"], data["test_labels"]


def test_the_densenet_summary_on_the_page_is_what_it_prints():
    logits, labels = _densenet()
    s = ck.selective_prediction(
        probs=logits, labels=labels, from_logits=True, target_risks=(0.01, 0.02)
    )
    page = (ROOT / "docs" / "selective-prediction.md").read_text(encoding="utf-8")
    block = page.split("```text\n", 1)[1].split("```", 1)[0]
    assert block == str(s) + "\n"


def test_the_densenet_numbers_on_the_page():
    from calibkit.decide._inputs import act_forecast

    logits, labels = _densenet()
    conf, right = act_forecast(logits, labels, from_logits=True)
    out = right.astype(int)
    assert np.count_nonzero(conf == 1.0) == 821
    assert [round(ck.aurc(conf, out, convention=c), 6) for c in ("step", "rank", "trapezoid")] == [
        0.009031,
        0.009032,
        0.009028,
    ]
    rng = np.random.default_rng(0)
    orders = []
    for _ in range(20):  # the rank mean with the ties broken in random orders
        perm = rng.permutation(conf.size)
        orders.append(geifman_rank_mean(conf[perm], out[perm]))
    assert (round(min(orders), 6), round(max(orders), 6)) == (0.00894, 0.009196)
    assert round(priornetworks_prr(conf, out), 3) == 85.803
    # the script's value moves with the order of the 821 tied confidences of 1.0 (and other ties)
    prrs = [
        priornetworks_prr(conf[p], out[p])
        for p in map(np.random.default_rng(0).permutation, [conf.size] * 20)
    ]
    assert (round(min(prrs), 3), round(max(prrs), 3)) == (85.787, 85.807)
    assert round(100 * ck.prediction_rejection_ratio(conf, out), 3) == 85.814
    e = 1 - out.mean()
    assert round(e + (1 - e) * math.log(1 - e), 6) == 0.002948
    assert round(ck.risk_coverage(conf, out).oracle_aurc, 6) == 0.002952
