"""audit_elicitation: an elicitation run's parsed confidences audited against its items'
labels (ck.audit of them), the unparsed counted, a run that asked nothing refused."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import calibkit as ck
from calibkit.stated.elicit import ItemResult
from calibkit.stated_run import audit_elicitation

ITEMS = [{"id": f"q{i}", "label": "yes"} for i in range(6)]


def _run(results):
    return SimpleNamespace(
        provider="openai",
        model="m",
        source="verbalized",
        prompt_hash="ab" * 32,
        settings={"temperature": 0.0},
        settings_hash="s1",
        results=results,
        parse_rate=sum(r.status == "ok" for r in results) / len(results),
        status_counts={"ok": sum(r.status == "ok" for r in results)},
        calls=len(results),
        reused=0,
        input_tokens=10,
        output_tokens=5,
    )


def test_the_parsed_replies_are_audited_and_the_rest_counted():
    results = [
        ItemResult("q0", "ok", "yes", 0.9),
        ItemResult("q1", "ok", "no", 0.8),
        ItemResult("q2", "ok", "yes", 0.7),
        ItemResult("q3", "ok", "yes", 0.6),
        ItemResult("q4", "failed", None, None, error="unparsed: no json"),
        ItemResult("q5", "failed", None, None, error="unparsed: no json"),
    ]
    got = audit_elicitation(_run(results), ITEMS, n_bins=5, seed=1, where="w")
    want = ck.audit(np.array([0.9, 0.8, 0.7, 0.6]), np.array([1, 0, 1, 1]), n_bins=5, seed=1)
    assert got.audit.to_dict() == want.to_dict()
    assert (got.n_parsed, got.accuracy) == (4, 0.75)
    assert got.reasons == {"failed: unparsed: no json": 2}
    document = got.to_dict()
    assert (document["parsed"], document["items"], document["accuracy_of_parsed"]) == (4, 6, 0.75)
    assert document["audit"] == want.to_dict()
    assert document["tokens"] == {"input": 10, "output": 5}


def test_no_parsed_reply_means_no_audit():
    results = [ItemResult("q0", "failed", None, None, error="unparsed: x")]
    got = audit_elicitation(_run(results), ITEMS)
    assert got.audit is None and got.accuracy is None and got.n_parsed == 0
    assert got.to_dict()["audit"] is None


def test_a_run_that_asked_nothing_is_refused():
    results = [ItemResult("q0", "permanent_error", None, None, error="401")]
    with pytest.raises(ck.InputError, match=r"^w: nothing could be asked: none of the 1 items"):
        audit_elicitation(_run(results), ITEMS, where="w")
