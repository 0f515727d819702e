"""The elicitation runner, driven through the real openai and anthropic SDKs against a loopback
fake server (tests/stated/fake_llm_server.py): nothing leaves 127.0.0.1."""

from __future__ import annotations

import json
import threading
import time

import pytest
from fake_llm_server import INPUT_TOKENS, FakeLLMServer

from calibkit.stated.elicit import DEFAULT_PROMPT, Item, elicit, prompt_hash, render_prompt
from calibkit.stated.store import ReplyKey, ReplyStore

pytest.importorskip("openai")
pytest.importorskip("anthropic")

# tiny backoff: the tests must stay fast
FAST = {"backoff_base": 0.001, "backoff_max": 0.01, "timeout": 5.0}
OUT_TOKENS = 12  # the fake's well-formed reply is 12 tokens


def make_items(n: int) -> list[dict]:
    return [
        {"id": f"q{i}", "question": f"[item:q{i}] Is {i} even?", "options": ["yes", "no"]}
        for i in range(n)
    ]


@pytest.fixture
def server():
    with FakeLLMServer(lifetime=60.0) as s:
        yield s


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("FAKE_KEY", "sk-fake")


def run(server, store, items, provider="openai", **kw):
    base = server.openai_base_url if provider == "openai" else server.anthropic_base_url
    args = {"model": "fake-1", "store": store, "base_url": base, "api_key_env": "FAKE_KEY"}
    return elicit(items, provider=provider, **{**args, **FAST, **kw})


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_full_run(server, tmp_path, provider):
    items = make_items(6)
    with ReplyStore(tmp_path / "r.sqlite") as st:
        r = run(server, st, items, provider=provider)
        assert [x.status for x in r.results] == ["ok"] * 6
        assert all(x.answer == "yes" and x.confidence == 0.8 for x in r.results)
        assert all(x.verbalized == 0.8 for x in r.results)
        assert r.parse_rate == 1.0
        assert server.requests == {f"q{i}": 1 for i in range(6)}
        path = "/v1/chat/completions" if provider == "openai" else "/v1/messages"
        assert server.paths == {path: 6}
        assert all(b["temperature"] == 0.0 and b["model"] == "fake-1" for b in server.bodies)
        # the prompt is part of the measurement: fixed, returned, hashed, stored
        assert r.prompt == DEFAULT_PROMPT and r.prompt_hash == prompt_hash(DEFAULT_PROMPT)
        assert st.prompt(r.prompt_hash) == DEFAULT_PROMPT
        sent = server.bodies[0]["messages"][0]["content"]
        assert sent in {
            render_prompt(DEFAULT_PROMPT, Item(**{**it, "options": ("yes", "no")})) for it in items
        }
        # tokens summed, the same in the run and in the store
        assert (r.input_tokens, r.output_tokens, r.calls) == (6 * INPUT_TOKENS, 6 * OUT_TOKENS, 6)
        assert st.totals() == {
            "input_tokens": r.input_tokens,
            "output_tokens": r.output_tokens,
            "calls": 6,
        }
        assert all(rec.key.provider == provider and rec.status == "ok" for rec in r.replies)
        # a second run asks nothing
        r2 = run(server, st, items, provider=provider)
        assert r2.calls == 0 and r2.reused == 6 and server.total == 6
        assert [x.answer for x in r2.results] == [x.answer for x in r.results]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_429_and_500_are_retried(tmp_path, provider):
    script = {"q0": ["429", "429", "ok"], "q1": ["500", "ok"], "q2": ["503", "500", "ok"]}
    with FakeLLMServer(script) as server, ReplyStore(tmp_path / "r.sqlite") as st:
        r = run(server, st, make_items(4), provider=provider)
        assert [x.status for x in r.results] == ["ok"] * 4
        assert server.requests == {"q0": 3, "q1": 2, "q2": 3, "q3": 1}
        # every attempt stored, errors included; tokens only for the replies
        k0 = ReplyKey(provider, "fake-1", r.prompt_hash, "q0", 0, r.settings_hash)
        assert [a["text"] is None for a in st.attempts(k0)] == [True, True, False]
        assert "429" in (st.attempts(k0)[0]["error"] or "") or "Rate" in st.attempts(k0)[0]["error"]
        assert r.calls == 4 and r.input_tokens == 4 * INPUT_TOKENS


def test_transient_exhausted_is_left_for_a_rerun(tmp_path):
    with FakeLLMServer({"q0": ["429"] * 3}) as server, ReplyStore(tmp_path / "r.sqlite") as st:
        r = run(server, st, make_items(2), transient_retries=2)
        assert [x.status for x in r.results] == ["transient_error", "ok"]
        assert server.requests["q0"] == 3
        r2 = run(server, st, make_items(2), transient_retries=2)
        assert [x.status for x in r2.results] == ["ok", "ok"]
        assert server.requests == {"q0": 4, "q1": 1}


def test_timeout_is_transient(tmp_path):
    with (
        FakeLLMServer({"q0": ["slow"]}, slow_s=1.0) as server,
        ReplyStore(tmp_path / "r.sqlite") as st,
    ):
        r = run(server, st, make_items(1), **{"timeout": 0.2})
        assert r.results[0].status == "ok"
        assert server.requests["q0"] == 2


def test_malformed_retried_then_failed(tmp_path):
    script = {"q0": ["malformed", "ok"], "q1": ["malformed"] * 10}
    with FakeLLMServer(script) as server, ReplyStore(tmp_path / "r.sqlite") as st:
        r = run(server, st, make_items(3), max_retries=2)
        res = {x.item_id: x for x in r.results}
        assert res["q0"].status == "ok" and res["q0"].confidence == 0.8
        assert res["q1"].status == "failed" and res["q1"].answer is None
        assert res["q1"].confidence is None  # no fallback value
        assert "malformed" in (res["q1"].error or "")
        assert server.requests == {"q0": 2, "q1": 3, "q2": 1}
        k1 = ReplyKey("openai", "fake-1", r.prompt_hash, "q1", 0, r.settings_hash)
        att = st.attempts(k1)
        assert len(att) == 3 and all(a["text"].startswith("I think") for a in att)
        assert r.status_counts == {"ok": 2, "failed": 1}
        # paid-for malformed replies count in the token totals
        assert r.calls == 6 and st.totals()["calls"] == 6
        # a failure is final: the rerun does not ask again
        run(server, st, make_items(3), max_retries=2)
        assert server.total == 6


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_permanent_error_recorded_and_run_goes_on(tmp_path, provider):
    with (
        FakeLLMServer({"q1": ["400"], "q2": ["404"]}) as server,
        ReplyStore(tmp_path / "r.sqlite") as st,
    ):
        r = run(server, st, make_items(4), provider=provider)
        assert [x.status for x in r.results] == ["ok", "permanent_error", "permanent_error", "ok"]
        assert server.requests == {"q0": 1, "q1": 1, "q2": 1, "q3": 1}
        assert r.results[1].error
        run(server, st, make_items(4), provider=provider)
        assert server.total == 4


class CrashingStore(ReplyStore):
    """Raises (as a crash would) right after the n-th reply is committed."""

    def __init__(self, path, n):
        super().__init__(path)
        self.n, self.seen, self.lock = n, 0, threading.Lock()

    def put(self, key, **kw):
        super().put(key, **kw)
        if kw.get("text") is not None:
            with self.lock:
                self.seen += 1
                crash = self.seen == self.n
            if crash:
                raise RuntimeError("crash after a stored reply")


class SlowToFailStore(CrashingStore):
    """Crashes as CrashingStore does, then takes its time to release the failed key, so that
    the other workers stop (and finish) before the failed one does."""

    failed = None

    def put(self, key, **kw):
        try:
            super().put(key, **kw)
        except RuntimeError:
            self.failed = key
            raise

    def release(self, key, owner):
        if key == self.failed:
            time.sleep(0.5)
        return super().release(key, owner)


def test_a_failure_is_raised_even_when_the_other_workers_stop_first(tmp_path):
    with FakeLLMServer(latency=0.01) as server:
        st = SlowToFailStore(tmp_path / "r.sqlite", n=3)
        with pytest.raises(RuntimeError, match="crash after a stored reply"):
            run(server, st, make_items(40), concurrency=4)
        st.close()
        assert server.total < 40  # the run stopped: no call started after the failure


@pytest.mark.parametrize("concurrency", [1, 4])
def test_killed_halfway_and_resumed(tmp_path, concurrency):
    items = make_items(20)
    with FakeLLMServer({"q3": ["malformed"]}) as server:
        p = tmp_path / "r.sqlite"
        st = CrashingStore(p, n=8)
        with pytest.raises(RuntimeError, match="crash"):
            run(server, st, items, concurrency=concurrency)
        st.close()
        first = server.total
        assert 8 <= first < 20
        with ReplyStore(p) as st2:
            stored = len(list(st2.items()))
            r = run(server, st2, items, concurrency=concurrency)
            assert [x.status for x in r.results] == ["ok"] * 20
            # no item asked twice (q3's malformed reply was retried once, by design)
            assert server.requests == {f"q{i}": (2 if i == 3 else 1) for i in range(20)}
            assert r.calls == server.total - first
            # 8 replies were stored before the crash; q3's malformed first reply may be one of
            # them (it is stored, then retried under the same key), so at least 7 distinct keys
            assert stored >= 7
            assert st2.totals()["calls"] == server.total


def test_logprob_source_renormalises_over_options(tmp_path):
    with FakeLLMServer({"q1": ["ok:no:0.95"]}) as server, ReplyStore(tmp_path / "r.sqlite") as st:
        r = run(server, st, make_items(2), source="logprob")
        assert all(b.get("logprobs") is True and b.get("top_logprobs") == 20 for b in server.bodies)
        a, b = r.results
        assert a.answer == "yes" and a.confidence == pytest.approx(2 / 3)
        assert a.distribution == pytest.approx({"yes": 2 / 3, "no": 1 / 3})
        assert a.verbalized == 0.8
        assert b.answer == "no" and b.confidence == pytest.approx(2 / 3) and b.verbalized == 0.95
        assert r.replies[0].logprobs is not None  # stored with the reply
        with pytest.raises(ValueError, match="log-probabilities"):
            run(server, st, make_items(2), provider="anthropic", source="logprob")


def test_consistency_share_of_the_most_common_answer(tmp_path):
    script = {"q0": ["ok:yes", "ok:no", "ok:yes", "ok:yes"], "q1": ["malformed", "ok:no"]}
    with FakeLLMServer(script) as server, ReplyStore(tmp_path / "r.sqlite") as st:
        r = run(server, st, make_items(2), source="consistency", samples=4, temperature=1.0)
        a, b = r.results
        assert (a.answer, a.confidence, a.n_samples, a.n_parsed) == ("yes", 0.75, 4, 4)
        assert a.distribution == {"yes": 0.75, "no": 0.25}
        assert b.answer == "yes" and b.confidence == 0.75  # "no", then three default "yes"
        assert server.requests == {"q0": 4, "q1": 5}
        assert {rec.key.sample_index for rec in r.replies} == {0, 1, 2, 3}


def test_replay_from_store_and_file_sends_nothing(tmp_path):
    with FakeLLMServer({"q1": ["ok:no:0.6"]}) as server, ReplyStore(tmp_path / "r.sqlite") as st:
        r = run(server, st, make_items(3))
        n = server.total
        r2 = elicit(make_items(3), provider="replay", model="fake-1", store=st)
        assert server.total == n
        assert [(x.answer, x.confidence) for x in r2.results] == [
            (x.answer, x.confidence) for x in r.results
        ]
        rec = tmp_path / "replies.jsonl"
        rows = [
            {"item_id": "q0", "text": '{"answer": "no", "confidence": 0.3}'},
            {"item_id": "q1", "text": "no idea"},
        ]
        rec.write_text("\n".join(json.dumps(x) for x in rows))
        with ReplyStore(tmp_path / "replay.sqlite") as st3:
            r3 = elicit(make_items(3), provider="replay", model="x", store=st3, replay=rec)
        assert [x.status for x in r3.results] == ["ok", "failed", "permanent_error"]
        assert r3.results[0].confidence == 0.3
        assert server.total == n


def test_no_key_no_call(tmp_path, server):
    with ReplyStore(tmp_path / "r.sqlite") as st:
        with pytest.raises(ValueError, match="OPENAI_API_KEY"):
            elicit(make_items(2), provider="openai", model="m", store=st)
        with pytest.raises(ValueError, match="MISSING_KEY"):
            run(server, st, make_items(2), api_key_env="MISSING_KEY")
        with pytest.raises(ValueError, match="provider"):
            elicit(make_items(2), provider="bogus", model="m", store=st)
    assert server.total == 0


def test_store_path_and_custom_prompt(tmp_path, server):
    prompt = 'Q: {question}\nOptions: {options}\nJSON {"answer": ..., "confidence": ...}'
    r = run(server, tmp_path / "r.sqlite", make_items(2), prompt=prompt)
    assert r.prompt_hash == prompt_hash(prompt) and r.status_counts == {"ok": 2}
    assert server.bodies[0]["messages"][0]["content"].startswith("Q: [item:")
    with ReplyStore(tmp_path / "r.sqlite") as st:
        assert st.prompt(r.prompt_hash) == prompt
