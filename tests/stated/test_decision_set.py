"""The shipped decision set: well-formed, and its labels follow from the written policy."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[2] / "src" / "calibkit" / "stated" / "data"
REFUND = ["full refund", "50% refund", "workshop credit", "no refund"]
ROUTE = ["calculator", "document lookup", "email", "ask the user", "person"]
# Q1 of the policy: injury, safety hazard, complaint about staff, legal threat.
Q1_WORDS = ("injur", "hurt", "cut my hand", "burn", "ankle", "smoke", "fire", "gas", "broken")
Q1_WORDS += ("complain", "lawyer")
SEND_WORDS = ("receipt", "invoice", "certificate", "confirmation")


def _items() -> list[dict]:
    lines = (DATA / "decision_set.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def test_policy_exists_and_names_every_option() -> None:
    policy = (DATA / "policy.md").read_text(encoding="utf-8")
    for option in REFUND + ROUTE:
        assert option in policy


def test_well_formed() -> None:
    items = _items()
    assert 60 <= len(items) <= 150
    ids = [it["id"] for it in items]
    assert len(set(ids)) == len(ids)
    for it in items:
        assert set(it) == {"id", "question", "options", "label", "why"}
        assert it["label"] in it["options"]
        assert it["why"].strip() and it["question"].strip()
        assert len(set(it["options"])) == len(it["options"])
        expected = REFUND if it["id"].startswith("refund-") else ROUTE
        assert it["options"] == expected, it["id"]
    labels = {it["label"] for it in items}
    assert labels == set(REFUND + ROUTE), "every option is the label of some item"


def _refund_rule(question: str) -> str:
    """Rules R1-R5 of the policy, from the question's text."""
    q = question.lower()
    if "the workshop cancelled" in q:
        return "full refund"  # R1
    if "did not come" in q:
        return "no refund"  # R2
    m = re.search(r"(\d+) days before", q)
    assert m, question
    days = int(m.group(1))
    member = q.startswith("a member")
    assert member or q.startswith("a non-member"), question
    if days >= 14:
        return "full refund"  # R3
    if days >= 3:
        return "50% refund"  # R4
    return "workshop credit" if member else "no refund"  # R5


def test_refund_labels_follow_rules_r1_to_r5() -> None:
    refunds = [it for it in _items() if it["id"].startswith("refund-")]
    assert len(refunds) >= 25
    for it in refunds:
        assert it["label"] == _refund_rule(it["question"]), it["id"]


def test_q1_person_rule_covers_exactly_the_person_items() -> None:
    routes = [it for it in _items() if it["id"].startswith("route-")]
    for it in routes:
        hit = any(w in it["question"].lower() for w in Q1_WORDS)
        assert hit == (it["label"] == "person"), it["id"]


@pytest.mark.parametrize("rule", ["Q2/Q5"])
def test_send_requests_need_a_booking_reference(rule: str) -> None:
    covered = 0
    for it in _items():
        q = it["question"].lower()
        if not it["id"].startswith("route-") or any(w in q for w in Q1_WORDS):
            continue
        if not any(w in q for w in SEND_WORDS):
            continue
        covered += 1
        has_ref = re.search(r"\bb-\d{4}\b", q) is not None
        assert it["label"] == ("email" if has_ref else "ask the user"), (rule, it["id"])
    assert covered >= 10
