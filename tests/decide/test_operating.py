"""Operating points with intervals: the risk at a coverage (binomial interval, against scipy's)
and the coverage at a risk (bootstrap, against the exact bootstrap distribution of a small
case), the points the curve's own risk_at / coverage_at read, and the intervals' coverage
measured in seeded simulations."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from scipy.stats import binomtest

import calibkit as ck
from calibkit.decide.coverage_target import bootstrap_coverages
from calibkit.decide.operating import curve_counts

CONF = [0.95, 0.9, 0.8, 0.7, 0.6]
OUT = [1, 1, 0, 1, 0]
TIED = [0.9, 0.8, 0.8, 0.8, 0.5]
TIED_OUT = [1, 1, 0, 0, 1]


def _random(n: int, seed: int, *, ties: bool = False) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    conf = rng.uniform(0.3, 1.0, n)
    if ties:
        conf = np.round(conf, 2)
    return conf, (rng.random(n) < conf).astype(int)


# ----------------------------------------------------------------------------- risk at coverage


def test_risk_at_coverage_five_predictions_by_hand():
    r = ck.risk_at_coverage(CONF, OUT, target_coverage=0.6)
    assert (r.n_acted, r.errors, r.n, r.threshold, r.coverage) == (3, 1, 5, 0.8, 0.6)
    assert r.risk == pytest.approx(1 / 3)
    # Wilson: centre (1 + z^2/2) / (3 + z^2), half-width z / (3 + z^2) sqrt(1 * 2 / 3 + z^2 / 4)
    z = 1.959963984540054
    centre = (1 + z * z / 2) / (3 + z * z)
    half = z / (3 + z * z) * math.sqrt(2 / 3 + z * z / 4)
    assert (r.low, r.high) == pytest.approx((centre - half, centre + half), abs=1e-12)
    assert (r.low, r.high) == pytest.approx((0.0615, 0.7923), abs=5e-5)


@pytest.mark.parametrize(
    ("method", "scipy_method"), [("wilson", "wilson"), ("clopper-pearson", "exact")]
)
@pytest.mark.parametrize("level", [0.9, 0.95])
def test_risk_at_coverage_interval_is_scipys(method, scipy_method, level):
    conf, out = _random(1000, 1, ties=True)
    r = ck.risk_at_coverage(conf, out, target_coverage=0.7, interval=method, level=level)
    ci = binomtest(r.errors, r.n_acted).proportion_ci(confidence_level=level, method=scipy_method)
    assert (r.low, r.high) == pytest.approx((ci.low, ci.high), abs=1e-12)


@pytest.mark.parametrize("ties", [False, True])
def test_risk_at_coverage_reads_the_curves_point(ties):
    conf, out = _random(500, 2, ties=ties)
    rc = ck.risk_coverage(conf, out)
    for c in np.linspace(0.01, 1.0, 37):
        r = ck.risk_at_coverage(conf, out, target_coverage=float(c))
        assert r.risk == rc.risk_at(float(c))
        acted = conf >= r.threshold  # the threshold acts on exactly the counted rows
        assert (acted.sum(), (out[acted] == 0).sum()) == (r.n_acted, r.errors)
        assert r.coverage >= c - 1e-12


def test_a_tie_straddling_the_target_is_taken_whole():
    r = ck.risk_at_coverage(TIED, TIED_OUT, target_coverage=0.4)
    assert (r.n_acted, r.errors, r.threshold, r.coverage) == (4, 2, 0.8, 0.8)


def test_risk_at_coverage_text_and_dict():
    r = ck.risk_at_coverage(CONF, OUT, target_coverage=0.6, interval="clopper-pearson")
    assert str(r) == (
        "risk at coverage 0.6: 0.3333 (95% Clopper-Pearson interval 0.0084 to 0.9057); "
        "3 of 5 acted on (coverage 0.6000, threshold 0.8), 1 wrong"
    )
    d = json.loads(json.dumps(r.to_dict()))
    assert d["interval"] == "clopper-pearson" and d["n_acted"] == 3


def test_risk_at_coverage_bad_settings():
    with pytest.raises(
        ck.InputError, match=r"risk_at_coverage: target_coverage must be a number in \(0, 1\]"
    ):
        ck.risk_at_coverage(CONF, OUT, target_coverage=0)
    with pytest.raises(ck.InputError, match="risk_at_coverage: interval must be one of 'wilson'"):
        ck.risk_at_coverage(CONF, OUT, target_coverage=0.5, interval="normal")
    with pytest.raises(ck.InputError, match="risk_at_coverage: level must be a probability"):
        ck.risk_at_coverage(CONF, OUT, target_coverage=0.5, level=95)
    with pytest.raises(ck.InputError, match="risk_at_coverage: confidence must not contain NaN"):
        ck.risk_at_coverage([0.9, math.nan], [1, 0], target_coverage=0.5)


def _draw(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Confidences uniform on [0.5, 1], right with probability equal to the confidence: at
    coverage c the population threshold is 1 - c / 2 and the selective risk c / 4."""
    conf = rng.uniform(0.5, 1.0, n)
    return conf, (rng.random(n) < conf).astype(int)


def test_risk_at_coverage_interval_covers_the_population_risk():
    # 400 seeded draws of 400 predictions, target coverage 0.5 (true risk 0.125): both 95%
    # intervals covered it in 380 draws (0.950); the bounds are 2.7 standard errors wide
    rng = np.random.default_rng(20240601)
    hits = {"wilson": 0, "clopper-pearson": 0}
    for _ in range(400):
        conf, out = _draw(rng, 400)
        for method in hits:
            r = ck.risk_at_coverage(conf, out, target_coverage=0.5, interval=method)
            hits[method] += r.low <= 0.125 <= r.high
    for method, count in hits.items():
        assert 0.92 <= count / 400 <= 0.98, (method, count)


# ----------------------------------------------------------------------------- coverage at risk


def test_coverage_at_risk_five_predictions_by_hand():
    for target, (coverage, threshold, acted, wrong) in {
        0.0: (0.4, 0.9, 2, 0),
        0.25: (0.8, 0.7, 4, 1),  # 1/3 at 0.6 fails, 1/4 at 0.8 passes: the largest wins
        0.3: (0.8, 0.7, 4, 1),
        0.4: (1.0, 0.6, 5, 2),
    }.items():
        c = ck.coverage_at_risk(CONF, OUT, target_risk=target, n_boot=50)
        assert (c.coverage, c.threshold, c.n_acted, c.errors) == (coverage, threshold, acted, wrong)


def test_coverage_at_risk_none_reaches_the_target():
    c = ck.coverage_at_risk([0.9, 0.8], [0, 1], target_risk=0.0, n_boot=50)
    assert (c.coverage, c.threshold, c.n_acted) == (0.0, math.inf, 0)
    assert math.isnan(c.risk)
    d = c.to_dict()
    assert d["threshold"] is None and d["risk"] is None
    assert "no threshold reaches it" in str(c)


@pytest.mark.parametrize("ties", [False, True])
def test_coverage_at_risk_reads_the_curves_point(ties):
    conf, out = _random(400, 3, ties=ties)
    rc = ck.risk_coverage(conf, out)
    for r in np.linspace(0.0, 0.5, 21):
        c = ck.coverage_at_risk(conf, out, target_risk=float(r), n_boot=20)
        assert c.coverage == rc.coverage_at(float(r))


def _exact_bootstrap(conf, out, target):
    """Every one of the n ** n equally likely index tuples of a resample, read exactly."""
    n = len(conf)
    values = []
    for idx in itertools.product(range(n), repeat=n):
        i = list(idx)
        values.append(ck.risk_coverage(np.asarray(conf)[i], np.asarray(out)[i]).coverage_at(target))
    return np.array(values)


def test_bootstrap_draws_the_exact_bootstrap_distribution():
    exact = _exact_bootstrap(TIED, TIED_OUT, 0.3)
    acted, wrong = curve_counts(ck.risk_coverage(TIED, TIED_OUT))
    drawn = bootstrap_coverages(acted, wrong, 0.3, 40_000, seed=5)
    support = np.union1d(exact, drawn)
    for value in support:
        p = np.mean(exact == value)
        share = np.mean(drawn == value)
        # within 4.5 binomial standard errors of 40,000 draws (and never outside the support)
        assert abs(share - p) <= 4.5 * math.sqrt(p * (1 - p) / 40_000) + 1e-12, value


def test_coverage_at_risk_same_seed_same_numbers():
    conf, out = _random(600, 4)
    a = ck.coverage_at_risk(conf, out, target_risk=0.1, n_boot=300, seed=11)
    b = ck.coverage_at_risk(conf, out, target_risk=0.1, n_boot=300, seed=11)
    c = ck.coverage_at_risk(conf, out, target_risk=0.1, n_boot=300, seed=12)
    assert a == b and (a.low, a.high) != (c.low, c.high)
    assert a.low <= a.coverage <= a.high


def test_bootstrap_in_chunks_is_the_same_draw(monkeypatch):
    from calibkit.decide import coverage_target

    conf, out = _random(300, 6, ties=True)
    acted, wrong = curve_counts(ck.risk_coverage(conf, out))
    whole = bootstrap_coverages(acted, wrong, 0.2, 64, seed=3)
    monkeypatch.setattr(coverage_target, "_BOOT_CELLS", 1)  # one resample at a time
    assert np.array_equal(bootstrap_coverages(acted, wrong, 0.2, 64, seed=3), whole)


def test_coverage_at_risk_interval_covers_the_population_coverage():
    # 200 seeded draws of 500 predictions, target risk 0.15 (true coverage 0.6), 200
    # resamples each: the 95% interval covered it in 189 draws (0.945)
    rng = np.random.default_rng(20240602)
    hits = 0
    for rep in range(200):
        conf, out = _draw(rng, 500)
        c = ck.coverage_at_risk(conf, out, target_risk=0.15, n_boot=200, seed=rep)
        hits += c.low <= 0.6 <= c.high
    assert 0.90 <= hits / 200 <= 0.99, hits


def test_coverage_at_risk_text():
    c = ck.coverage_at_risk(CONF, OUT, target_risk=0.25, n_boot=100)
    text = str(c)
    assert text.startswith("coverage at risk <= 0.25: 0.8000 (95% bootstrap interval ")
    assert "100 resamples); threshold 0.7, 4 of 5 acted on, risk 0.2500 (1 wrong)" in text


def test_coverage_at_risk_bad_settings():
    with pytest.raises(
        ck.InputError, match=r"coverage_at_risk: target_risk must be a number in \[0, 1\], got 1.5"
    ):
        ck.coverage_at_risk(CONF, OUT, target_risk=1.5)
    with pytest.raises(ck.InputError, match="coverage_at_risk: n_boot must be an integer >= 1"):
        ck.coverage_at_risk(CONF, OUT, target_risk=0.1, n_boot=0)
    with pytest.raises(ck.InputError, match="coverage_at_risk: seed must be an integer >= 0"):
        ck.coverage_at_risk(CONF, OUT, target_risk=0.1, seed=-1)
    with pytest.raises(ck.InputError, match="coverage_at_risk: outcome must be 0 or 1"):
        ck.coverage_at_risk(CONF, [1, 2, 0, 1, 0], target_risk=0.1)
