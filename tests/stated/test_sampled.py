"""Sampled free-form answers, through the real openai SDK against the loopback fake server."""

from __future__ import annotations

import json
import math

import pytest
from fake_llm_server import FakeLLMServer

from calibkit import CalibkitWarning, InputError
from calibkit.stated._questions import key_id, render
from calibkit.stated.sampled import DEFAULT_ANSWER_PROMPT, parse_answer, sample_answers
from calibkit.stated.store import ReplyStore

pytest.importorskip("openai")
FAST = {"backoff_base": 0.001, "backoff_max": 0.01, "timeout": 5.0}


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("FAKE_KEY", "sk-fake")


def items(n):
    return [{"id": f"q{i}", "question": f"[item:q{i}] How many?"} for i in range(n)]


def run_sampled(server, store, its, **kw):
    args = {"provider": "openai", "model": "m-1", "store": store, "concurrency": 1}
    args |= {"base_url": server.openai_base_url, "api_key_env": "FAKE_KEY"}
    return sample_answers(its, **{**args, **FAST, **kw})


def say(*answers):
    return [f"text=Let me think.\nAnswer: {a}" for a in answers]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Answer: Paris", ("Paris", None)),
        ("Answer: 3\nno, wait\n  answer:  4.  ", ("4", None)),
        ("ANSWER: the Seine river.\n", ("the Seine river", None)),
        ("Final answer: 4", (None, "no answer line")),
        ("The answer: 4 is inline", (None, "no answer line")),
        ("Answer: 4\nAnswer:   ", (None, "empty answer line")),
        ("", (None, "no answer line")),
    ],
)
def test_parse_answer(text, expected):
    assert parse_answer(text) == expected


def test_confidences_and_entropies_by_hand_and_a_rerun_asks_nothing(tmp_path):
    script = {
        # q0: Paris x3, Lyon x1 -> 3/4; H = -(3/4 ln 3/4 + 1/4 ln 1/4) = 0.562335...
        "q0": say("Paris", "paris.", "Lyon", "The Paris"),
        # q1: all agree -> 1, H = 0
        "q1": say("4", "4", "4", "4"),
        # q2: 2 / 2 tie -> 1/2, answer the first group's "blue", H = ln 2
        "q2": say("blue", "red", "Red", "Blue."),
        # q3: all differ -> 1/4, H = ln 4, a four-way tie
        "q3": say("w", "x", "y", "z"),
    }
    with FakeLLMServer(script) as server, ReplyStore(tmp_path / "s.sqlite") as st:
        r = run_sampled(server, st, items(4), k=4)
        assert r.run.source == "semantic" and r.run.calls == 16 and server.total == 16
        assert [x.answer for x in r.results] == ["Paris", "4", "blue", "w"]
        assert [x.confidence for x in r.results] == [0.75, 1.0, 0.5, 0.25]
        h0 = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
        assert r.entropies == pytest.approx([h0, 0.0, math.log(2), math.log(4)], abs=1e-12)
        assert abs(h0 - 0.5623351446) < 1e-9
        assert [c.tie for c in r.consistency] == [False, False, True, True]
        assert r.results[0].distribution == {"Paris": 0.75, "Lyon": 0.25}
        assert r.results[2].distribution == {"blue": 0.5, "red": 0.5}
        assert all((x.n_samples, x.n_parsed, x.status) == (4, 4, "ok") for x in r.results)
        assert r.answers[0] == ["Paris", "paris", "Lyon", "The Paris"]
        # the k samples of one item are the same text, at the temperature and length asked
        sent = [b["messages"][0]["content"] for b in server.bodies[:4]]
        assert len(set(sent)) == 1 and "Question: [item:q0] How many?" in sent[0]
        assert {(b["temperature"], b["max_tokens"]) for b in server.bodies} == {(1.0, 128)}
        keys = sorted((x.key.item_id, x.key.sample_index) for x in r.run.replies)
        kid = key_id("q0", render(DEFAULT_ANSWER_PROMPT, {"question": "[item:q0] How many?"}))
        assert [s for i, s in keys if i == kid] == [0, 1, 2, 3]
        again = run_sampled(server, st, items(4), k=4)
        assert again.run.calls == 0 and again.run.reused == 16 and server.total == 16
        assert [x.confidence for x in again.results] == [0.75, 1.0, 0.5, 0.25]
        # one more sample is one more key: only it is asked (the fake's default reply, unparsed)
        more = run_sampled(server, st, items(1), k=5, max_retries=0)
        assert more.run.calls == 1 and server.total == 17
        assert (more.results[0].n_samples, more.results[0].n_parsed) == (5, 4)


def test_numeric_equivalence_groups_what_exact_keeps_apart(tmp_path):
    answers = ("1,000", "1000", "999", "1000.0")
    # numeric: 1000, 1000, 999, 1000 -> groups [0, 1, 3], [2]: 3/4
    with FakeLLMServer({"q0": say(*answers)}) as server:
        r = run_sampled(server, tmp_path / "n.sqlite", items(1), k=4, equivalent="numeric")
    assert (r.results[0].answer, r.results[0].confidence) == ("1,000", 0.75)
    assert r.results[0].distribution == {"1,000": 0.75, "999": 0.25}
    assert r.consistency[0].groups == [[0, 1, 3], [2]]
    # exact: SQuAD's normal form drops punctuation: "1000", "1000", "999", "10000" -> 2/4,
    # three groups: H = -(1/2 ln 1/2 + 2 * 1/4 ln 1/4) = 1.5 ln 2
    with FakeLLMServer({"q0": say(*answers)}) as server:
        e = run_sampled(server, tmp_path / "e.sqlite", items(1), k=4)
    assert e.consistency[0].groups == [[0, 1], [2], [3]] and e.results[0].confidence == 0.5
    assert e.entropies[0] == pytest.approx(1.5 * math.log(2), abs=1e-12)


def test_unparsed_samples_are_retried_stored_left_out_and_counted(tmp_path):
    # q0: sample 0 "Answer: 7"; sample 1 unparsed twice then "Answer: 7"; sample 2 unparsed
    # three times (max_retries=2: failed); sample 3 "Answer: 8" -> parsed 3 of 4, 7 has 2/3
    script = {
        "q0": [
            "text=Answer: 7",
            "text=seven",
            "text=I think seven",
            "text=Answer: 7",
            "text=no idea",
            "text=none",
            "text=still none",
            "text=Answer: 8",
        ],
        "q1": ["text=hmm"] * 6,  # nothing parses: failed, no confidence
    }
    with FakeLLMServer(script) as server, ReplyStore(tmp_path / "s.sqlite") as st:
        r = run_sampled(server, st, items(2), k=2, max_retries=2)
        # k=2 here: q0's samples 0 and 1 only, then q1's
        assert r.results[0].confidence == 1.0 and r.results[0].n_parsed == 2
        assert r.run.calls == 1 + 3 + 3 + 3 and server.total == 10
        q1 = r.results[1]
        assert (q1.status, q1.answer, q1.confidence, q1.n_parsed, q1.n_samples) == (
            "failed",
            None,
            None,
            0,
            2,
        )
        assert q1.error == "unparsed: no answer line (malformed reply after 3 attempts)"
        assert r.consistency[1] is None and r.entropies[1] is None and r.answers[1] == [None] * 2
        # every reply stored, the unparsed ones included
        texts = [a["text"] for x in r.run.replies for a in st.attempts(x.key) if a["text"]]
        assert len(texts) == 10 and texts.count("hmm") == 6
    with FakeLLMServer(script) as server:
        r = run_sampled(server, tmp_path / "t.sqlite", items(1), k=4, max_retries=2)
        x = r.results[0]
        assert (x.answer, x.n_parsed, x.n_samples) == ("7", 3, 4)
        assert x.confidence == pytest.approx(2 / 3, abs=1e-15)
        assert r.answers[0] == ["7", "7", None, "8"]
        h = -(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3))  # 0.636514...
        assert r.entropies[0] == pytest.approx(h, abs=1e-12)
        assert r.run.calls == 8 and server.total == 8


def test_bad_input_is_refused_before_anything_is_asked(tmp_path):
    with FakeLLMServer() as server:
        with pytest.raises(InputError, match="k must be an integer >= 2"):
            run_sampled(server, tmp_path / "s.sqlite", items(1), k=1)
        with pytest.raises(InputError, match="must hold \\{question\\}"):
            run_sampled(server, tmp_path / "s.sqlite", items(1), prompt="Answer: ")
        with pytest.raises(InputError, match="not an equivalence"):
            run_sampled(server, tmp_path / "s.sqlite", items(1), equivalent="fuzzy")
        with pytest.raises(InputError, match="item 'q0': question must be a string"):
            run_sampled(server, tmp_path / "s.sqlite", [{"id": "q0", "question": None}])
        with pytest.raises(InputError, match="provider must be one of"):
            sample_answers(items(1), provider="nope", model="m", store=tmp_path / "s.sqlite")
        assert server.total == 0
        with pytest.warns(CalibkitWarning, match="same reply k times"):
            run_sampled(server, tmp_path / "s.sqlite", items(1), k=2, temperature=0)
        assert server.total > 0


def test_a_callable_equivalence_and_one_that_is_not_reflexive(tmp_path):
    script = {"q0": say("cat", "kitten", "dog", "cat")}
    with FakeLLMServer(script) as server:
        same = {frozenset({"cat", "kitten"})}

        def synonyms(a, b):
            return a == b or frozenset({a, b}) in same

        r = run_sampled(server, tmp_path / "s.sqlite", items(1), k=4, equivalent=synonyms)
        assert r.results[0].confidence == 0.75 and r.consistency[0].equivalence == (
            "callable(synonyms)"
        )
        with pytest.raises(InputError, match="not equivalent to itself"):
            run_sampled(server, tmp_path / "s.sqlite", items(1), k=4, equivalent=lambda a, b: False)


def test_replay_file(tmp_path):
    its = [{"id": "r1", "question": "Who wrote Hamlet?"}]
    kid = key_id("r1", render(DEFAULT_ANSWER_PROMPT, {"question": "Who wrote Hamlet?"}))
    texts = ["Answer: Shakespeare", "Answer: William Shakespeare", "Answer: shakespeare."]
    lines = [{"item_id": kid, "sample_index": i, "text": t} for i, t in enumerate(texts)]
    (tmp_path / "r.jsonl").write_text("\n".join(map(json.dumps, lines)), encoding="utf-8")
    r = sample_answers(
        its,
        provider="replay",
        model="m",
        store=tmp_path / "s.sqlite",
        k=3,
        replay=tmp_path / "r.jsonl",
    )
    # exact: "shakespeare" x2, "william shakespeare" x1 -> 2/3
    assert r.results[0].answer == "Shakespeare"
    assert r.results[0].confidence == pytest.approx(2 / 3, abs=1e-15)
    assert r.run.provider == "replay" and r.run.calls == 3
    # the table: entropy -(2/3 ln 2/3 + 1/3 ln 1/3) = 0.6365 shown as 0.637
    assert str(r).splitlines()[2] == "r1  Shakespeare  0.667  0.637  3/3  False"
    d = r.to_dict()
    assert d["items"][0]["consistency"]["groups"] == [[0, 2], [1]]
    assert json.loads(json.dumps(d)) == d
    # a fourth sample has no recorded reply: a permanent error, left out, counted
    r4 = sample_answers(
        its,
        provider="replay",
        model="m",
        store=tmp_path / "s.sqlite",
        k=4,
        replay=tmp_path / "r.jsonl",
    )
    assert (r4.results[0].n_samples, r4.results[0].n_parsed) == (4, 3)
    assert r4.results[0].confidence == pytest.approx(2 / 3, abs=1e-15) and r4.run.calls == 0


def test_sampling_killed_mid_way_resumes_asking_only_what_is_left(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    store = tmp_path / "s.sqlite"
    n, k = 10, 4
    with FakeLLMServer(latency=0.1, lifetime=120.0, default="text=Answer: 42") as server:
        code = (
            "import sys; from calibkit.stated.sampled import sample_answers\n"
            f"its = [{{'id': f'q{{i}}', 'question': f'[item:q{{i}}] How many?'}} for i in range({n})]\n"
            f"sample_answers(its, provider='openai', model='m-1', store=sys.argv[1], k={k}, "
            "base_url=sys.argv[2], api_key_env='FAKE_KEY')\n"
        )
        cmd = [sys.executable, "-c", code, str(store), server.openai_base_url]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while server.total < 12 and proc.poll() is None:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        time.sleep(0.3)  # requests in flight when it died reach the server
        before = server.total
        with ReplyStore(store) as st:
            with_text = {(r.key.item_id, r.key.sample_index) for r in st.items() if r.text}
        assert 0 < len(with_text) < n * k
        r = run_sampled(server, store, items(n), k=k, concurrency=4)
        assert [x.confidence for x in r.results] == [1.0] * n
        assert all(x.n_parsed == k for x in r.results)
        # no stored sample asked again: the resume asks exactly the samples without a reply
        assert r.run.calls == server.total - before == n * k - len(with_text)
