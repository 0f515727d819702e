"""examples/calibration_by_segment.py on the shipped language-model answers: LSAT-AR and
HaluEval are where the stated confidence breaks most, and a Platt map per question set beats
one map for all on every set (the pooled map makes SAT, underconfident where the others are
overconfident, worse than no map at all)."""

from __future__ import annotations

import numpy as np
from example_loader import load_example


def test_the_weak_sets_and_the_repair_by_set():
    example = load_example("calibration_by_segment")
    segments, ledger = example.run()
    confirmed = [s.name for s in segments.confirmed]
    assert confirmed[:2] == ["qset = lsat_ar_test", "qset = halu_eval_qa"]
    lsat = segments.confirmed[0]
    conf, correct, features = example.load()
    rows = features["qset"] == "lsat_ar_test"
    # the search's held-out half holds about half of LSAT-AR's 2,292 answers
    assert lsat.n + lsat.n_search == rows.sum() == 2292
    assert lsat.observed < 0.55 < 0.8 < lsat.mean_confidence  # right half the time at 0.8
    assert "qset = sat_en" not in confirmed
    assert ledger.winners == ("boolq_valid", "halu_eval_qa", "lsat_ar_test", "sat_en", "sciq_test")
    sat = next(g for g in ledger.groups if g.group == "sat_en")
    assert sat.ece_pooled > sat.ece_before > sat.ece_own
    assert np.isinf(ledger.overall.nll_before)  # stated certainties that were wrong
    # the numbers of docs/segments.md
    assert (segments.n_searched, segments.n_screened, len(confirmed)) == (30, 10, 8)
    assert round(lsat.ece, 4) == 0.3298 and round(lsat.as_rest, 4) == 0.0945
    assert (round(sat.ece_pooled, 3), round(sat.ece_own, 3)) == (0.236, 0.041)
    overall = ledger.overall
    assert (round(overall.ece_pooled, 3), round(overall.ece_own, 3)) == (0.060, 0.036)
