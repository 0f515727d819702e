"""One threshold formatter for every printed threshold: a saturated model's threshold of
0.9999997 reads as "1 - 3e-7", never as "1"."""

from __future__ import annotations

import numpy as np
import pytest

import calibkit as ck
from calibkit.decide._format import threshold_text
from calibkit.decide.actions import choose_actions
from calibkit.decide.guarantee import guaranteed_threshold
from calibkit.decide.policy import policy_table


@pytest.mark.parametrize(
    ("t", "text"),
    [
        (0.5, "0.5"),
        (0.9, "0.9"),
        (0.95123, "0.9512"),
        (0.99869, "0.9987"),  # below 0.999: 4 significant digits
        (0.99984, "0.99984"),  # 1 - t = 1.6e-4 keeps two digits
        (0.999987, "0.999987"),
        (1 - 3e-7, "1 - 3e-7"),
        (1 - 1.25e-9, "1 - 1.2e-9"),
        (float(np.nextafter(1.0, 0.0)), "1 - 1.1e-16"),
        (1.0, "1"),
        (0.0, "0"),
        (1 / 21, "0.04762"),
        (float("inf"), "above all"),
    ],
)
def test_threshold_text(t, text):
    assert threshold_text(t) == text


def test_no_threshold_below_one_prints_as_one():
    rng = np.random.default_rng(0)
    for t in 1 - 10.0 ** -rng.uniform(0, 16, 2000):
        if t < 1:
            assert threshold_text(t) not in ("1", "1.0", "1.000")
            assert not threshold_text(t).startswith("1.")


@pytest.fixture(scope="module")
def saturated():
    """A saturated model: every confidence within 1e-6 of 1, the wrong ones lowest."""
    conf = 1 - np.array([1e-6, 8e-7, 5e-7, 3e-7, 2e-7, 1e-7, 5e-8, 2e-8])
    right = np.array([0, 0, 1, 1, 1, 1, 1, 1])
    return conf, right


def test_choice_and_policy_table_print_the_distance_to_one(saturated):
    conf, right = saturated
    c = ck.choose_threshold(conf, right, 10, 1)
    assert c.threshold == conf[2]
    assert str(c).startswith("threshold 1 - 5e-7: ")
    table = policy_table(conf, right, conf, right, l_wrong=10, l_defer=1)
    cells = {row[0]: row[1] for row in table.table_rows()}
    assert cells["chosen on validation"] == "1 - 5e-7"
    assert "threshold 1 - 5e-7 at" in str(table)
    assert "1 - 5e-7" in str(ck.risk_coverage(conf, right))


def test_actions_and_guarantee_print_the_distance_to_one(saturated):
    conf, right = saturated
    a = choose_actions(conf, right, l_wrong=9, l_defer=3, l_ask=1, l_ask_wrong=5)
    assert a.act_threshold == conf[2] and ">= 1 - 5e-7" in str(a)
    conf20 = 1 - np.arange(1, 41) * 1e-8
    g = guaranteed_threshold(conf20, np.ones(40, dtype=int), target_risk=0.2)
    assert g.threshold == conf20[-1]
    assert "threshold 1 - 4e-7: coverage" in str(g)
