"""A judge model as the equivalence of semantic consistency, against the loopback fake server."""

from __future__ import annotations

import math

import pytest
from fake_llm_server import FakeLLMServer

from calibkit import CalibkitWarning, InputError
from calibkit.stated import judge_equivalence, sample_answers, semantic_consistency
from calibkit.stated.store import ReplyStore

pytest.importorskip("openai")
FAST = {"backoff_base": 0.001, "backoff_max": 0.01, "timeout": 5.0}
QUESTION = "[item:q0] Which city is the capital of France?"


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("FAKE_KEY", "sk-fake")


def same_for(server, store, **kw):
    args = {"base_url": server.openai_base_url, "api_key_env": "FAKE_KEY", **FAST, **kw}
    return judge_equivalence(provider="openai", model="judge-1", store=store, **args)


def test_groups_by_the_judges_verdicts_and_a_rerun_asks_nothing(tmp_path):
    answers = ["Paris", "paris, France", "Lyon", "Paris"]
    # pairs asked, in the order semantic_groups compares: ("Paris", "paris, France") same;
    # ("Lyon", "Paris") not the same; the last "Paris" is identical to the first: not asked
    with FakeLLMServer({"q0": ["correct", "incorrect"]}) as server:
        with ReplyStore(tmp_path / "j.sqlite") as st:
            same = same_for(server, st).for_question(QUESTION)
            sc = semantic_consistency(answers, equivalent=same)
            assert sc.groups == [[0, 1, 3], [2]] and sc.confidence == 0.75
            assert sc.entropy == pytest.approx(-(0.75 * math.log(0.75) + 0.25 * math.log(0.25)))
            assert sc.equivalence == "callable(judge:openai/judge-1)"
            assert server.total == 2 and same.calls == [2]
            assert set(same.verdicts.values()) == {True, False}
            # a new equivalence on the same store asks nothing: every verdict is stored
            again = same_for(server, st).for_question(QUESTION)
            assert semantic_consistency(answers, equivalent=again).groups == sc.groups
            assert server.total == 2 and again.calls == [0]
            # the order of a pair does not make a new key
            assert again("paris, France", "Paris") is True and server.total == 2


def test_a_reply_without_a_verdict_groups_apart_and_is_listed(tmp_path):
    with FakeLLMServer({"q0": ["text=It depends."]}) as server:
        same = same_for(server, tmp_path / "j.sqlite").for_question(QUESTION)
        with pytest.warns(CalibkitWarning, match="no verdict on whether 'Paris' and 'Paris, FR'"):
            sc = semantic_consistency(["Paris", "Paris, FR"], equivalent=same)
        assert sc.groups == [[0], [1]] and sc.confidence == 0.5
        assert same.undecided == [(QUESTION, "Paris", "Paris, FR")]


def test_sample_answers_gives_the_judge_each_items_question(tmp_path):
    replies = [f"text=Answer: {a}" for a in ("Paris", "The city of Paris", "Lyon")]
    # three samples, then the judge: ("Paris", "The city of Paris") same, ("Lyon", "Paris") not
    with FakeLLMServer({"q0": [*replies, "correct", "incorrect"]}) as server:
        store = tmp_path / "s.sqlite"
        kw = {"base_url": server.openai_base_url, "api_key_env": "FAKE_KEY", **FAST}
        same = same_for(server, tmp_path / "j.sqlite")
        run = sample_answers(
            [{"id": "q0", "question": QUESTION}],
            provider="openai",
            model="m-1",
            store=store,
            k=3,
            concurrency=1,
            equivalent=same,
            **kw,
        )
        r = run.results[0]
        assert (r.answer, r.confidence) == ("Paris", pytest.approx(2 / 3))
        assert {key[0] for key in same.verdicts} == {QUESTION}  # asked with the item's question
        assert server.total == 5


def test_bad_prompts_and_options_are_refused():
    with pytest.raises(InputError, match="must hold {gold} and {answer}"):
        judge_equivalence(provider="openai", model="m", store="x.sqlite", prompt="{question}")
    with pytest.raises(InputError, match="prompt is not an option|items_with_answers"):
        judge_equivalence(provider="openai", model="m", store="x.sqlite", items_with_answers=[])
    same = judge_equivalence(provider="openai", model="m", store="x.sqlite")
    with pytest.raises(InputError, match="the question must be a string"):
        same.for_question(None)
    assert same("Paris", "Paris") is True  # identical answers: nothing asked, no store opened
