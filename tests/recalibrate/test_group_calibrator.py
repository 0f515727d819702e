"""GroupCalibrator: one map per group, the pooled map for the small, failed and unseen groups,
persisted as JSON; and its held-out ledger against the pooled map."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import calibkit as ck
from calibkit.recalibrate.group import GroupCalibrator

FAST = {"n_sims": 200}


def sites(n: int = 6000, *, factors=(3.0, 1.0, 0.5), seed: int = 0):
    """Binary scores of three sites, n / 3 rows each: the true score s is calibrated
    (P(y = 1) = sigmoid(s)) and site k reports factor_k * s, so its temperature is factor_k."""
    rng = np.random.default_rng(seed)
    s = rng.normal(0.0, 2.0, n)
    y = (rng.random(n) < ck.sigmoid(s)).astype(int)
    site = np.repeat(["a", "b", "c"], n // 3)
    factor = np.select([site == "a", site == "b"], factors[:2], factors[2])
    return factor * s, y, site


def test_each_group_gets_the_map_fitted_on_its_own_rows():
    scores, y, site = sites()
    gc = GroupCalibrator(by="site").fit(scores, y, groups=site)
    assert gc.groups_ == ("a", "b", "c") and gc.fallback_ == {}
    assert gc.sizes_ == {"a": 2000, "b": 2000, "c": 2000}
    for g in gc.groups_:  # the same fit as on the group's rows alone
        alone = ck.fit_temperature(scores[site == g], y[site == g])
        assert gc.maps_[g].temperature_ == alone
    assert gc.pooled_.temperature_ == ck.fit_temperature(scores, y)
    # near each site's factor (2,000 rows each: a few percent of sampling error)
    temperatures = [gc.maps_[g].temperature_ for g in "abc"]
    assert temperatures == pytest.approx([3.0, 1.0, 0.5], rel=0.1)
    # each row by its group's map
    p = gc.predict_proba(scores, groups=site)
    for g in "abc":
        rows = site == g
        np.testing.assert_array_equal(p[rows], gc.maps_[g].predict_proba(scores[rows]))


def test_small_failed_and_unseen_groups_get_the_pooled_map():
    scores, y, site = sites()
    site = site.astype("<U4")
    site[:30] = "tiny"  # 30 rows
    site[30:90] = "ones"  # 60 rows, every label 1: temperature scaling of 1-D scores needs both
    y = y.copy()
    y[30:90] = 1
    with pytest.warns(ck.CalibkitWarning, match="group 'ones' uses the pooled map: its own fit failed: TemperatureScaling.fit: every label is 1"):  # fmt: skip
        gc = GroupCalibrator(min_group_size=50).fit(scores, y, groups=site)
    assert gc.fallback_["tiny"] == "30 rows, fewer than min_group_size=50"
    assert gc.fallback_["ones"].startswith("its own fit failed: ")
    assert set(gc.maps_) == {"a", "b", "c"}
    z = np.array([1.0, 1.0, 1.0, 1.0])
    with pytest.warns(ck.CalibkitWarning, match=r"1 group was not seen in fit and gets the pooled map: 'zzz' \(1 row\)"):  # fmt: skip
        p = gc.predict_proba(z, groups=["tiny", "ones", "zzz", "a"])
    pooled = gc.pooled_.predict_proba(z)
    np.testing.assert_array_equal(p[:3], pooled[:3])
    assert p[3] == gc.maps_["a"].predict_proba(z[3:])[0] != pooled[3]


def test_multiclass_logits_and_another_base():
    rng = np.random.default_rng(1)
    z = rng.normal(0, 1.5, (3000, 4))
    y = (ck.softmax(z).cumsum(axis=1) < rng.random((3000, 1))).sum(axis=1)
    group = np.where(np.arange(3000) < 1500, 1, 2)  # integer groups
    logits = np.where(group[:, None] == 1, 2.0 * z, z)
    gc = GroupCalibrator().fit(logits, y, groups=group)
    assert gc.groups_ == (1, 2) and round(gc.maps_[1].temperature_, 1) == 2.0
    assert gc.predict_proba(logits, groups=group).shape == (3000, 4)
    platt = GroupCalibrator(base=ck.PlattScaling(), min_group_size=10)
    fitted = platt.fit(logits[:, 0], (y == 0).astype(int), groups=group)
    assert all(isinstance(m, ck.PlattScaling) for m in fitted.maps_.values())


def test_persistence_round_trip(tmp_path):
    scores, y, site = sites()
    gc = GroupCalibrator(base=ck.TemperatureScaling(method="golden"), by="site", min_group_size=10)
    gc.fit(scores, y, groups=site)
    path = ck.save_calibrator(tmp_path / "group.json", gc)
    loaded = ck.load_calibrator(path)
    assert isinstance(loaded, GroupCalibrator) and loaded.get_params()["by"] == "site"
    assert loaded.base.get_params() == gc.base.get_params()
    assert loaded.to_dict() == gc.to_dict()
    np.testing.assert_array_equal(
        loaded.predict_proba(scores, groups=site), gc.predict_proba(scores, groups=site)
    )
    # integer and boolean groups keep their type through the file
    for groups in (np.repeat([7, -3, 12], 2000), np.repeat([True, False, True], 2000)):
        fitted = GroupCalibrator().fit(scores, y, groups=groups)
        again = ck.Calibrator.from_dict(json.loads(json.dumps(fitted.to_dict())))
        assert again.groups_ == fitted.groups_ and type(again.groups_[0]) is type(fitted.groups_[0])


def test_parameters_are_sklearn_shaped():
    from sklearn.base import clone

    gc = GroupCalibrator(base=ck.PlattScaling(), by="site", min_group_size=20)
    assert gc.get_params() == {"base": gc.base, "by": "site", "min_group_size": 20}
    copy = clone(gc)
    assert copy.base is not gc.base and copy.base.get_params() == gc.base.get_params()
    assert copy.set_params(min_group_size=5).min_group_size == 5
    with pytest.raises(ck.NotFittedError):
        gc.predict_proba([0.0], groups=["a"])


@pytest.mark.parametrize(
    "calibrator, groups, message",
    [
        (GroupCalibrator(), None, "pass groups=, the group of each row"),
        (GroupCalibrator(by="site"), None, "(the column 'site')"),
        (GroupCalibrator(), ["a", "b"], "groups has 2 entries but the forecasts have 6000"),
        (GroupCalibrator(), "SITE", "groups must hold one value per row"),
        (GroupCalibrator(), np.repeat([0.5, 1.5, 2.5], 2000), "groups must be labels: text, integers or booleans"),
        (GroupCalibrator(base=ck.TemperatureScaling), "ok", "base must be a calibrator instance, such as TemperatureScaling()"),
        (GroupCalibrator(base=GroupCalibrator()), "ok", "base is itself a GroupCalibrator"),
        (GroupCalibrator(base="temperature"), "ok", "base must be a calibkit calibrator"),
        (GroupCalibrator(min_group_size=0), "ok", "min_group_size must be an integer >= 1"),
    ],
)  # fmt: skip
def test_bad_settings_and_groups_are_refused(calibrator, groups, message):
    scores, y, site = sites()
    with pytest.raises(ck.InputError, match="^GroupCalibrator.fit: ") as info:
        calibrator.fit(
            scores, y, groups=site if isinstance(groups, str) and groups == "ok" else groups
        )
    assert message in str(info.value)


def test_a_missing_group_is_refused_with_its_index():
    scores, y, site = sites()
    groups = site.astype(object)
    groups[17] = None
    with pytest.raises(ck.InputError, match="groups has 1 missing value .*first at index 17"):
        GroupCalibrator().fit(scores, y, groups=groups)


def test_a_bad_score_is_named_by_its_row_in_the_whole_array():
    scores, y, site = sites()
    scores = scores.copy()
    scores[4500] = np.nan  # row 500 of site c
    with pytest.raises(ck.InputError, match="index 4500"):
        GroupCalibrator().fit(scores, y, groups=site)


# ----------------------------------------------------------------------------- the ledger


def test_per_group_maps_win_where_the_groups_temperatures_differ():
    scores, y, site = sites(9000)
    ledger = ck.compare_group_calibration(
        GroupCalibrator(by="site"), scores, y, groups=site, **FAST
    )
    assert ledger.winners == ("a", "b", "c")
    for g in ledger.groups:
        assert g.nll_own < g.nll_pooled and g.ece_own < g.ece_pooled and g.fallback is None
        assert "NLL" in [w.instrument for w in g.own_better] and not g.pooled_better
    # the numbers are those of the held-out rows of each group, by each map
    cal, held = ck.stratified_split(np.unique(site, return_inverse=True)[1], seed=0)
    fitted = ledger.calibrator
    assert fitted.sizes_ == {g: int(np.count_nonzero(site[cal] == g)) for g in "abc"}
    a = held[site[held] == "a"]
    own = fitted.maps_["a"].predict_proba(scores[a])
    assert ledger.groups[0].ece_own == pytest.approx(ck.ece(own, y[a] == 1), abs=1e-12)
    assert ledger.groups[0].nll_pooled == pytest.approx(
        ck.nll(fitted.pooled_.predict_proba(scores[a]), y[a]), rel=1e-12
    )
    assert ledger.groups[0].nll_before == pytest.approx(
        ck.nll(scores[a], y[a], from_logits=True), rel=1e-12
    )
    assert ledger.overall.n_eval == held.size == ledger.n_eval


def test_one_temperature_for_all_gives_no_winner_beyond_noise():
    scores, y, site = sites(9000, factors=(2.0, 2.0, 2.0))
    ledger = ck.compare_group_calibration(GroupCalibrator(), scores, y, groups=site, **FAST)
    assert ledger.winners == ()
    assert {g.verdict for g in ledger.groups} == {"within noise"}
    assert "no group's own map beat the pooled map beyond noise" in ledger.verdict()


def test_the_ledger_with_a_separate_evaluation_set_prints_and_serialises():
    scores, y, site = sites(6000)
    test_scores, test_y, test_site = sites(3000, seed=1)
    small = site.copy()
    small[:20] = "d"
    ledger = ck.compare_group_calibration(
        GroupCalibrator(min_group_size=50), scores, y, groups=small,
        eval_scores=test_scores, eval_labels=test_y, eval_groups=test_site, **FAST,
    )  # fmt: skip
    assert ledger.design == "given" and ledger.n_eval == 3000
    text = str(ledger)
    assert (
        text.splitlines()[0]
        == "group calibration ledger: temperature per group against one pooled map"
    )
    assert "all" in text and ledger.verdict() in text
    data = json.loads(json.dumps(ledger.to_dict()))
    assert data["winners"] == ["a", "b", "c"] and data["groups"][0]["verdict"] == "own map"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fell = ck.compare_group_calibration(
            GroupCalibrator(min_group_size=2100), scores, y, groups=site,
            eval_scores=test_scores, eval_labels=test_y, eval_groups=test_site, **FAST,
        )  # fmt: skip
    assert {g.verdict for g in fell.groups} == {"no own map"}
    assert "no own map (the pooled map is used): a: 2000 rows, fewer than" in str(fell)


def test_ledger_refusals():
    scores, y, site = sites(600)
    with pytest.raises(ck.InputError, match="calibrator must be a GroupCalibrator"):
        ck.compare_group_calibration(ck.TemperatureScaling(), scores, y, groups=site)
    lone = site.copy()
    lone[0] = "z"
    with pytest.raises(ck.InputError, match=r"1 groups have a single row \(z\)"):
        ck.compare_group_calibration(GroupCalibrator(), scores, y, groups=lone)
    with pytest.raises(ck.InputError, match="needs eval_scores, eval_labels and eval_groups"):
        ck.compare_group_calibration(GroupCalibrator(), scores, y, groups=site, eval_scores=scores)
    with pytest.raises(ck.InputError, match="from_logits=False says the scores are probabilities"):
        ck.compare_group_calibration(
            GroupCalibrator(), ck.sigmoid(scores), y, groups=site, from_logits=False
        )
