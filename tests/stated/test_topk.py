"""Verbalized top-k (Tian et al. 2023): the parser's golden cases, and runs through the real
SDKs against the loopback fake server and through the replay provider."""

from __future__ import annotations

import json

import pytest
from fake_llm_server import FakeLLMServer

from calibkit import InputError
from calibkit.stated._questions import key_id, render
from calibkit.stated.store import ReplyStore
from calibkit.stated.topk_guesses import DEFAULT_TOPK_PROMPT, TOPK_REASONS, parse_topk, topk

pytest.importorskip("openai")
FAST = {"backoff_base": 0.001, "backoff_max": 0.01, "timeout": 5.0}


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("FAKE_KEY", "sk-fake")


def items(n):
    return [{"id": f"q{i}", "question": f"[item:q{i}] Capital of France?"} for i in range(n)]


def run_topk(server, store, its, **kw):
    args = {"provider": "openai", "model": "m", "store": store, "k": 2}
    args |= {"base_url": server.openai_base_url, "api_key_env": "FAKE_KEY"}
    return topk(its, **{**args, **FAST, **kw})


GOOD = "G1: Paris\nP1: 0.6\nG2: Lyon\nP2: 0.3"


@pytest.mark.parametrize(
    ("text", "k", "expected"),
    [
        (GOOD, 2, ([("Paris", 0.6), ("Lyon", 0.3)], None)),
        # percent and .7, lower case labels, whitespace around
        (
            "  g1 :  Paris \n  p1:  70% \n g2: Lyon\n p2: .25 ",
            2,
            ([("Paris", 0.7), ("Lyon", 0.25)], None),
        ),
        # markdown bold in both places, a list bullet, a trailing explanation line
        (
            "**G1:** Paris\n**P1:** 0.9\n- **G2**: Lyon\n**P2: 0.05**\nParis is the capital.",
            2,
            ([("Paris", 0.9), ("Lyon", 0.05)], None),
        ),
        # a bare 1 and 0 are probabilities; G then P in any order of lines
        ("G1: Paris\nG2: Lyon\nP1: 1\nP2: 0", 2, ([("Paris", 1.0), ("Lyon", 0.0)], None)),
        # sum 0.7 + 0.6 = 1.3 > 1: used as given, not an error of the parser
        ("G1: x\nP1: 0.7\nG2: y\nP2: 0.6", 2, ([("x", 0.7), ("y", 0.6)], None)),
        # a tie for the largest is read here; topk refuses it ("conflicting")
        ("G1: x\nP1: 0.4\nG2: y\nP2: 0.4", 2, ([("x", 0.4), ("y", 0.4)], None)),
        ("Paris, probably.", 2, (None, "no guesses")),
        ("", 1, (None, "no guesses")),
        ("G1: Paris\nP1: 0.6\nG2: Lyon", 2, (None, "missing probability")),
        ("G1: Paris\nP1:\nG2: Lyon\nP2: 0.1", 2, (None, "missing probability")),
        ("G1: Paris\nP1: likely\nG2: Lyon\nP2: 0.1", 2, (None, "unreadable probability")),
        ("G1: Paris\nP1: 0.6 or 0.7\nG2: Lyon\nP2: 0.1", 2, (None, "unreadable probability")),
        ("G1: Paris\nP1: 1.2\nG2: Lyon\nP2: 0.1", 2, (None, "out of range")),
        ("G1: Paris\nP1: 120%\nG2: Lyon\nP2: 0.1", 2, (None, "out of range")),
        ("G1: Paris\nP1: -0.1\nG2: Lyon\nP2: 0.1", 2, (None, "out of range")),
        ("G1: Paris\nP1: 0.6", 2, (None, "too few guesses")),
        (GOOD, 1, (None, "too many guesses")),
        ("G1: Paris\nP1: 0.6\nG1: Lyon\nP1: 0.3", 2, (None, "bad numbering")),  # repeated
        ("G1: Paris\nP1: 0.6\nG3: Lyon\nP3: 0.3", 2, (None, "bad numbering")),  # skipped
        ("G2: Paris\nP2: 0.6\nG1: Lyon\nP1: 0.3", 2, (None, "bad numbering")),  # out of order
        ("G1: Paris\nP1: 0.6\nP2: 0.3", 1, (None, "bad numbering")),  # P2 without G2
        ("G1: Paris\nP1: 0.6\nG2: **\nP2: 0.3", 2, (None, "empty guess")),
        ("G1: Paris\nP1: 0.6\nG2: the\nP2: 0.3", 2, (None, "empty guess")),
        ("G1: Paris\nP1: 0.6\nG2: paris.\nP2: 0.3", 2, (None, "duplicate guess")),
        ("G1: The Eiffel Tower\nP1: 0.6\nG2: eiffel tower\nP2: 0.3", 2, (None, "duplicate guess")),
    ],
)
def test_parse_topk_golden(text, k, expected):
    assert parse_topk(text, k) == expected
    if expected[1] is not None:
        assert expected[1] in TOPK_REASONS


def test_reasons_are_distinct_and_long_replies_unread():
    assert len(set(TOPK_REASONS)) == len(TOPK_REASONS)
    assert parse_topk("G1: x\nP1: 0.5\n" + "x" * 200_001, 1) == (None, "too long")


def test_the_prompt_asks_for_k_in_tian_et_al_layout():
    text = render(DEFAULT_TOPK_PROMPT, {"question": "Q?", "k": "3"})
    assert text.startswith("Provide your 3 best guesses")
    assert "\nG1: <first most likely guess" in text and "\nP3: <the probability" in text
    assert text.endswith("The question is: Q?") and "{" not in text


def test_confidences_retries_and_rerun_against_the_fake_server(tmp_path):
    tie = "text=G1: x\nP1: 0.4\nG2: y\nP2: 0.4"
    script = {
        "q0": ["text=" + GOOD, "text=G1: Paris\nP1: 0.6"],
        "q1": ["text=**G1:** Paris\n**P1:** 85%\n**G2:** Lyon\n**P2:** 10%"],
        "q2": ["text=G1: Paris\nP1: 0.5", "text=G1: Paris\nP1: 0.5\nG2: Nice\nP2: 0.2"],
        "q3": ["text=G1: Paris\nP1: 0.7\nG2: Lyon\nP2: 0.6"],
        "q4": [tie] * 4,
    }
    with FakeLLMServer(script) as server, ReplyStore(tmp_path / "t.sqlite") as st:
        r = run_topk(server, st, items(5))
        assert r.source == "topk" and r.settings["k"] == 2
        # by hand: the largest stated probability of each reply
        assert [x.confidence for x in r.results] == [0.6, 0.85, 0.5, 0.7, None]
        assert [x.answer for x in r.results] == ["Paris", "Paris", "Paris", "Paris", None]
        assert r.results[0].distribution == {"Paris": 0.6, "Lyon": 0.3}
        assert r.results[1].distribution == {"Paris": 0.85, "Lyon": 0.1}
        assert r.results[3].verbalized == 0.7
        # q2: a reply with one guess of two, asked again once; q4: a tie, 1 + 3 retries
        assert server.requests["q2"] == 2 and server.requests["q4"] == 4
        assert r.results[4].status == "failed"
        assert r.results[4].error == "unparsed: conflicting (malformed reply after 4 attempts)"
        assert r.calls == server.total == 1 + 1 + 2 + 1 + 4
        assert r.over_one == ["q3"]  # 0.7 + 0.6 = 1.3; 0.85 + 0.10 = 0.95 is not
        assert r.status_counts == {"ok": 4, "failed": 1}
        assert "sum>1=1" in r.summary()
        sent = server.bodies[0]["messages"][0]["content"]
        assert sent.startswith("Provide your 2 best guesses") and "logprobs" not in server.bodies[0]
        # every reply stored, the malformed ones too
        texts = [a["text"] for rec in r.replies for a in st.attempts(rec.key)]
        assert len(texts) == 9 and None not in texts
        again = run_topk(server, st, items(5))
        assert again.calls == 0 and again.reused == 5 and server.total == 9
        assert [x.confidence for x in again.results] == [0.6, 0.85, 0.5, 0.7, None]
        assert again.over_one == ["q3"]
        # the stored replies replayed into a new store: the last reply of each key
        rr = topk(
            items(5), provider="replay", model="m", k=2, store=tmp_path / "u.sqlite", replay=st
        )
        assert [x.confidence for x in rr.results] == [0.6, 0.85, 0.5, 0.7, None]
        assert rr.calls == 5 and server.total == 9
        # k is in the settings: k=1 is a new key for every item
        one = run_topk(server, st, items(1), k=1)
        assert server.total == 10 and one.settings_hash != r.settings_hash
        assert (one.results[0].answer, one.results[0].confidence) == ("Paris", 0.6)


def test_anthropic_is_asked_too(tmp_path):
    pytest.importorskip("anthropic")
    with FakeLLMServer({"q0": ["text=" + GOOD]}) as server:
        r = topk(
            items(1),
            provider="anthropic",
            model="claude",
            store=tmp_path / "t.sqlite",
            k=2,
            base_url=server.anthropic_base_url,
            api_key_env="FAKE_KEY",
            **FAST,
        )
        assert server.paths["/v1/messages"] == 1
        assert (r.results[0].answer, r.results[0].confidence) == ("Paris", 0.6)


def test_replay_file_and_replay_of_a_store(tmp_path):
    its = [("a", "Capital of Italy?"), ("b", "2 + 2?")]
    replies = {"a": "G1: Rome\nP1: 0.95\nG2: Milan\nP2: 0.03", "b": "4, surely"}
    lines = []
    for item_id, question in its:
        text = render(DEFAULT_TOPK_PROMPT, {"question": question, "k": "2"})
        lines.append(json.dumps({"item_id": key_id(item_id, text), "text": replies[item_id]}))
    path = tmp_path / "replies.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    kw = {"provider": "replay", "model": "m", "k": 2, "replay": path}
    r = topk(its, store=tmp_path / "t.sqlite", **kw)
    assert (r.results[0].answer, r.results[0].confidence) == ("Rome", 0.95)
    assert r.results[0].distribution == {"Rome": 0.95, "Milan": 0.03}
    # replay is never asked again: the malformed reply is recorded at once
    assert r.results[1].error == "unparsed: no guesses (malformed reply after 1 attempts)"
    assert r.calls == 2


def test_bad_input_is_refused_with_the_reason(tmp_path):
    st = tmp_path / "t.sqlite"
    kw = {"provider": "replay", "model": "m", "store": st, "replay": tmp_path / "none.jsonl"}
    for k in (0, 21, True, 2.0, "4"):
        with pytest.raises(InputError, match=r"topk: k must be an integer from 1 to 20"):
            topk(items(1), k=k, **kw)
    with pytest.raises(InputError, match=r"the prompt must hold \{question\}"):
        topk(items(1), prompt="Guess {k} times", **kw)
    with pytest.raises(InputError, match="provider must be one of"):
        topk(items(1), **{**kw, "provider": "vertex"})
    with pytest.raises(InputError, match="item 0 has no question"):
        topk([{"id": "q0"}], **kw)
    with pytest.raises(InputError, match="'q0' is given twice"):
        topk([("q0", "a?"), ("q0", "b?")], **kw)


def test_a_run_killed_mid_way_resumes_asking_only_what_is_left(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    store = tmp_path / "t.sqlite"
    code = (
        "import sys\n"
        "from calibkit.stated.topk_guesses import topk\n"
        "its = [{'id': f'q{i}', 'question': f'[item:q{i}] Capital of France?'} for i in range(20)]\n"
        "topk(its, provider='openai', model='m', k=2, store=sys.argv[1], base_url=sys.argv[2],\n"
        "     api_key_env='FAKE_KEY', concurrency=4)\n"
    )
    with FakeLLMServer(latency=0.1, lifetime=120.0, default="text=" + GOOD) as server:
        cmd = [sys.executable, "-c", code, str(store), server.openai_base_url]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while server.total < 8 and proc.poll() is None:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        time.sleep(0.3)  # requests in flight when it died reach the server
        before = server.total
        with ReplyStore(store) as st:
            with_text = {r.key.item_id for r in st.items() if r.text is not None}
        assert 0 < len(with_text) < 20
        r = run_topk(server, store, items(20))
        assert [x.confidence for x in r.results] == [0.6] * 20
        assert r.calls == server.total - before == 20 - len(with_text)  # nothing asked twice


def test_the_package_names_stay_functions_once_their_modules_are_loaded():
    import importlib

    import calibkit.stated as stated

    for module, name in [("topk_guesses", "topk"), ("judging", "judge"), ("ptrue", "p_true")]:
        importlib.import_module(f"calibkit.stated.{module}")  # binds the module on the package
        assert callable(getattr(stated, name)) and getattr(stated, name).__name__ == name
    # no function shares its name with a module of the package (the module would hide it)
    assert not set(stated._LAZY_MODULES) & set(stated.__all__)
