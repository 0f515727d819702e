"""The bad-input campaign against calibkit.stated (issue 12): pathological replies, concurrent and
killed runs, unreachable servers, runs pooled in an audit, damaged stores and full disks.

Elicitation runs go through the real openai SDK against the loopback fake server of tests/stated
(nothing leaves 127.0.0.1); every count of requests is read from the server's request log.
"""

from __future__ import annotations

import json
import math
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from calibkit import InputError
from calibkit.cli import app
from calibkit.stated import (
    MAX_REPLY_CHARS,
    REASONS,
    ConfidenceParse,
    ProviderUnreachable,
    ReplyKey,
    ReplyStore,
    StoreError,
    _runner,
    decision_reason,
    elicit,
    parse_batch,
    parse_confidence,
    parse_decision,
    read_decision_set,
)

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "stated"))
from fake_llm_server import FakeLLMServer  # noqa: E402

from cli_helpers import assert_bad_input  # noqa: E402

pytest.importorskip("openai")

FAST = {"backoff_base": 0.001, "backoff_max": 0.01, "timeout": 5.0}
DECISION_REASONS = {*REASONS, "no answer", "not an option", "malformed"}
DEEP_DECISION = '{"answer":"A","confidence":0.9,"why":' + "[" * 3000 + "]" * 3000 + "}"
runner = CliRunner()


def make_items(n: int) -> list[dict]:
    return [
        {"id": f"q{i}", "question": f"[item:q{i}] Is {i} even?", "options": ["yes", "no"]}
        for i in range(n)
    ]


@pytest.fixture(autouse=True)
def _fake_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("FAKE_KEY", "sk-fake")


def run(server, store, items, **kw):
    args = {
        "provider": "openai",
        "model": "fake-1",
        "store": store,
        "base_url": server.openai_base_url,
        "api_key_env": "FAKE_KEY",
    }
    return elicit(items, **{**args, **FAST, **kw})


def write_decision_set(path: Path, items: list[dict]) -> Path:
    rows = [{**it, "label": it["options"][0]} for it in items]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- 1: one reply must not wedge an elicitation ------------------------------------------------
def test_deep_json_is_a_parse_failure_not_a_recursion_error():
    assert parse_decision(DEEP_DECISION, ["A", "B"]) is None
    assert decision_reason(DEEP_DECISION, ["A", "B"]) == "too deep"
    r = parse_confidence('{"a":' * 3000)
    assert isinstance(r, ConfidenceParse) and r.value is None and r.reason == "too deep"
    rep = parse_batch([DEEP_DECISION, '{"answer": "B", "confidence": 0.6}'], ["A", "B"])
    assert rep.reasons == {"too deep": 1} and rep.answers == ["B"] and list(rep.unparsed) == [0]
    # 64 levels are read, 65 are not (the bound of calibkit._json.parse_json)
    ok = '{"answer": "A", "confidence": 0.7, "why": ' + "[" * 63 + "]" * 63 + "}"
    assert parse_decision(ok, ["A", "B"]) == ("A", 0.7)
    assert decision_reason(ok.replace("[", "[[", 1).replace("]", "]]", 1), "AB") == "too deep"


def test_a_deep_reply_is_recorded_unparsed_and_the_run_goes_on(tmp_path):
    deep = "text=" + DEEP_DECISION.replace('"A"', '"yes"')
    with FakeLLMServer({"q2": [deep]}) as server, ReplyStore(tmp_path / "r.sqlite") as st:
        r = run(server, st, make_items(8), max_retries=0)
        res = {x.item_id: x for x in r.results}
        assert res["q2"].status == "failed"
        assert res["q2"].error == "unparsed: too deep (malformed reply after 1 attempts)"
        assert [res[f"q{i}"].status for i in range(8) if i != 2] == ["ok"] * 7
        assert server.requests == {f"q{i}": 1 for i in range(8)}
        key = ReplyKey("openai", "fake-1", r.prompt_hash, "q2", 0, r.settings_hash)
        assert st.get(key).text == DEEP_DECISION.replace('"A"', '"yes"')  # the reply is kept
        run(server, st, make_items(8), max_retries=0)  # a rerun asks nothing again
        assert server.total == 8


def test_a_parser_crash_on_a_stored_reply_no_longer_wedges_reruns(tmp_path, monkeypatch):
    """The campaign's wedge: a reply stored as pending (before parsing, as designed) on which the
    parser raises. Every rerun used to re-parse it, crash, and never ask the other items."""
    real = _runner.decision_reason

    def fragile(text, options, **kw):
        if "BOOM" in text:
            raise RecursionError("maximum recursion depth exceeded")
        return real(text, options, **kw)

    monkeypatch.setattr(_runner, "decision_reason", fragile)
    items = make_items(12)
    with FakeLLMServer() as server, ReplyStore(tmp_path / "r.sqlite") as st:
        first = run(server, st, items[:1])  # learn the run's key
        st.put(
            ReplyKey("openai", "fake-1", first.prompt_hash, "q5", 0, first.settings_hash),
            text='{"answer": "yes", "confidence": 0.9} BOOM',
            input_tokens=20,
            output_tokens=9,
        )
        r = run(server, st, items)
        res = {x.item_id: x for x in r.results}
        assert res["q5"].status == "failed"
        assert res["q5"].error == (
            "unparsed: the parser failed on this reply "
            "(RecursionError: maximum recursion depth exceeded)"
        )
        assert sum(x.status == "ok" for x in r.results) == 11
        # the stored reply was not asked again; every other item exactly once
        assert server.requests == {f"q{i}": 1 for i in range(12) if i != 5}


# -- 12: linear time; a reply over the limit is "too long" -------------------------------------
def test_reply_length_limit():
    long_reply = '{"answer": "A", "confidence": 0.9}' + " " * MAX_REPLY_CHARS
    assert parse_confidence(long_reply).reason == "too long"
    assert decision_reason(long_reply, "AB") == "too long"
    assert parse_decision(long_reply, "AB", max_chars=len(long_reply)) == ("A", 0.9)
    assert parse_batch([long_reply, "0.3"]).reasons == {"too long": 1}
    assert MAX_REPLY_CHARS == 200_000


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("sure 50% " * 20_000, 0.5),  # 180,000 characters, every number the same
        ("confidence 0.5 " * 13_000, 0.5),
        ("Confidence: 0.5\n" * 12_000, 0.5),
        ("Confidence: 0.5\n" * 100_000, "too long"),
        ("sure 50% " * 10_000 + "sure 60%", "conflicting"),
        ("{" * 60 + '{"confidence": 0.4}' + "}" * 60, 0.4),
        ("{\n" * 90_000, "too deep"),
        ("```\n" * 40_000 + '{"confidence": 0.3}', 0.3),
        ("```json" + " " * 150_000 + '{"confidence": 0.2}', 0.2),
        ('{"a": "x"} ' * 15_000 + '{"confidence": 0.35}', 0.35),
        ('{"a": "x", ' * 15_000 + '{"confidence": 0.35}', "too deep"),
    ],
    ids=[
        "sure",
        "confidence",
        "lines",
        "lines-100k",
        "conflict",
        "braces",
        "deep",
        "fences",
        "open-fence",
        "objects",
        "unclosed",
    ],
)
def test_pathological_families_parse_as_before(text, expected):
    """The families of the campaign, at sizes that took 30-60 s; their values are the rules' own
    (benchmarks/bench_parse_worst.py times them)."""
    r = parse_confidence(text)
    if isinstance(expected, float):
        assert r.value == expected
    else:
        assert r.value is None and r.reason == expected


def test_answer_and_confidence_lines_with_long_blank_runs():
    text = "Answer: B" + " \t" * 50_000 + "\nConfidence: 0.6" + " " * 50_000
    assert parse_decision(text, ["A", "B"]) == ("B", 0.6)
    assert parse_decision("Answer: a" + " " * 50_000 + "b\nConfidence: 0.6", "AB") is None


def test_huge_integers_are_out_of_range_not_an_overflow():
    assert parse_confidence('{"confidence": ' + "9" * 400 + "}").reason == "out of range"
    assert decision_reason('{"answer": "A", "A": 1' + "0" * 400 + ', "B": 0}', "AB") == (
        "out of range"
    )


# -- hypothesis: only a parse failure or InputError ever comes out ------------------------------
_KEYS = st.sampled_from(["answer", "confidence", "Answer", "A", "B", "why", "x", "Confidence"])
_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["A", "B", "0.9", "85%", "7/10", "very confident", ""]),
    st.text(max_size=20),
)
_JSON = st.recursive(
    _LEAVES,
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(_KEYS, inner, max_size=6),
    max_leaves=40,
)


@st.composite
def replies(draw) -> str:
    kind = draw(st.integers(0, 4))
    if kind == 0:
        return draw(st.text(max_size=300))
    if kind == 1:
        raw = draw(st.binary(max_size=300))
        return raw.decode("utf-8", errors=draw(st.sampled_from(["replace", "surrogateescape"])))
    if kind == 2:
        return json.dumps(draw(_JSON), allow_nan=True)
    if kind == 3:  # deep
        n = draw(st.integers(1, 1500))
        opener, closer = draw(
            st.sampled_from([("[", "]"), ('{"a":', "}"), ('{"answer":"A","x":[', "]}")])
        )
        return (
            opener * n + draw(st.sampled_from(["1", "", '"B"'])) + closer * draw(st.integers(0, n))
        )
    # prose with JSON, fences and lines mixed in
    parts = draw(
        st.lists(
            st.one_of(
                st.sampled_from(
                    [
                        "```json\n",
                        "```",
                        "{",
                        "}",
                        '"',
                        "\\",
                        "Answer: A\n",
                        "Confidence: 80%\n",
                        "sure ",
                        "0.7 ",
                        "\n",
                    ]
                ),
                _JSON.map(json.dumps),
                st.text(max_size=10),
            ),
            max_size=30,
        )
    )
    return "".join(parts)


def _check_confidence(r: ConfidenceParse) -> None:
    assert isinstance(r, ConfidenceParse)
    if r.value is None:
        assert r.reason in REASONS
    else:
        assert r.reason is None and 0.0 <= r.value <= 1.0 and math.isfinite(r.value)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(replies())
def test_property_parsers_fail_only_with_a_reason(text):
    _check_confidence(parse_confidence(text))
    d = parse_decision(text, ["A", "B"])
    assert d is None or (d[0] in ("A", "B") and 0.0 <= d[1] <= 1.0)
    reason = decision_reason(text, ["A", "B"])
    assert (reason in DECISION_REASONS) if isinstance(reason, str) else reason == d
    rep = parse_batch([text, text], ["A", "B"])
    assert rep.n == 2 and len(rep.values) + len(rep.unparsed) == 2
    assert set(rep.reasons) <= DECISION_REASONS
    rep = parse_batch([text])
    assert len(rep.values) + len(rep.unparsed) == 1 and set(rep.reasons) <= set(REASONS)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(replies(), min_size=1, max_size=4))
def test_property_decision_set_reader_raises_only_input_error(lines):
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "ds.jsonl"
        path.write_text("\n".join(lines), encoding="utf-8", errors="surrogatepass")
        try:
            items = read_decision_set(path)
        except InputError as exc:
            assert str(path) in str(exc)
            return
    assert all(str(it["label"]) in map(str, it["options"]) for it in items)


# -- the decision set, replay files and stored log-probabilities: bounded JSON -----------------
def test_decision_set_reader_refuses_with_the_line(tmp_path):
    good = {"id": "a", "question": "q", "options": ["x", "y"], "label": "x"}
    path = tmp_path / "ds.jsonl"
    path.write_text(json.dumps(good) + "\n" + "[" * 3000 + "]" * 3000 + "\n")
    with pytest.raises(InputError, match=r"ds.jsonl' line 2: JSON nested 3000 levels deep"):
        read_decision_set(path)
    path.write_text(json.dumps({**good, "options": ["x", "X "]}) + "\n")
    with pytest.raises(InputError, match=r"line 1: parse_decision: options 'x' and 'X '"):
        read_decision_set(path)
    path.write_text(json.dumps({**good, "options": [{"a": 1}, "y"]}) + "\n")
    with pytest.raises(InputError, match="options must be a list of at least two strings"):
        read_decision_set(path)
    # a line separator inside a string is not a line break of JSON lines
    path.write_text(json.dumps({**good, "question": "one\u2028two"}, ensure_ascii=False) + "\n")
    assert read_decision_set(path)[0]["question"] == "one\u2028two"
    assert len(read_decision_set()) == 86  # the shipped one


def test_stated_run_refuses_a_deep_decision_set(tmp_path):
    path = tmp_path / "ds.jsonl"
    path.write_text('{"id": "a", "question": ' + "[" * 5000 + "]" * 5000 + "}\n")
    res = runner.invoke(
        app,
        [
            "stated",
            "run",
            str(path),
            "--provider",
            "replay",
            "--model",
            "m",
            "--store",
            str(tmp_path / "r.sqlite"),
        ],
    )
    assert_bad_input(res, "line 1: JSON nested 5001 levels deep")


def test_replay_file_lines_are_bounded(tmp_path):
    path = tmp_path / "replay.jsonl"
    path.write_text('{"item_id": "q0", "text": "A"}\n' + '{"item_id": ' * 2000 + "\n")
    with pytest.raises(InputError, match=r"replay file '.*replay.jsonl' line 2: JSON nested 2000"):
        elicit(make_items(1), provider="replay", model="m", store=tmp_path / "s.db", replay=path)
    path.write_text('{"item_id": "q0"}\n')
    with pytest.raises(InputError, match=r"line 1 has no text; each line needs item_id and text"):
        elicit(make_items(1), provider="replay", model="m", store=tmp_path / "s.db", replay=path)


def test_damaged_stored_logprobs_name_the_store_and_item(tmp_path):
    path = tmp_path / "r.sqlite"
    key = ReplyKey("openai", "m", "ph", "q1", 0, "sh")
    with ReplyStore(path) as s:
        s.put(key, text="x", logprobs=[{"token": "A"}])
    with sqlite3.connect(path) as c:
        c.execute("UPDATE replies SET logprobs = ?", ("[" * 3000 + "]" * 3000,))
    with ReplyStore(path) as s:
        with pytest.raises(InputError, match=r"the log-probabilities stored for item 'q1': JSON"):
            s.get(key)


def test_items_with_options_the_parser_cannot_tell_apart_are_refused_before_any_call(tmp_path):
    items = [{"id": "a", "question": "[item:a] ?", "options": ["Yes", "yes"]}]
    with FakeLLMServer() as server:
        with pytest.raises(InputError, match="item 'a': parse_decision: options 'Yes' and 'yes'"):
            run(server, tmp_path / "r.sqlite", items)
        assert server.total == 0


# -- 3: concurrent runs share the work ---------------------------------------------------------
@pytest.mark.parametrize("n_runs", [2, 3])
def test_concurrent_runs_ask_each_key_once(tmp_path, n_runs):
    items, samples = make_items(24), 2
    path = tmp_path / "r.sqlite"
    results, errors = [], []

    def one_run():
        try:
            results.append(
                run(server, path, items, samples=samples, source="consistency", temperature=1.0)
            )
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    with FakeLLMServer(latency=0.05) as server:
        threads = [threading.Thread(target=one_run) for _ in range(n_runs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        assert server.total == len(items) * samples
        assert server.requests == {it["id"]: samples for it in items}
        assert sum(r.calls for r in results) == len(items) * samples
        for r in results:  # every run reports every item answered
            assert r.status_counts == {"ok": len(items)}
            assert r.calls + r.reused == len(items) * samples
    with ReplyStore(path) as st:
        assert st.totals()["calls"] == len(items) * samples
        with sqlite3.connect(path) as c:  # every lease released
            assert c.execute("SELECT COUNT(*) FROM leases").fetchone()[0] == 0


def test_a_run_started_later_asks_only_what_is_left(tmp_path):
    items = make_items(40)
    path = tmp_path / "r.sqlite"
    with FakeLLMServer(latency=0.1) as server:
        first = threading.Thread(target=lambda: run(server, path, items, concurrency=2))
        first.start()
        while server.total < 6:
            time.sleep(0.01)
        second = run(server, path, items, concurrency=2)
        first.join()
        assert server.total == 40 and server.requests == {it["id"]: 1 for it in items}
        assert second.status_counts == {"ok": 40} and second.calls + second.reused == 40


def test_cli_runs_in_two_processes_share_the_store(tmp_path):
    ds = write_decision_set(tmp_path / "ds.jsonl", make_items(16))
    store = tmp_path / "r.sqlite"
    with FakeLLMServer(latency=0.2, lifetime=120.0) as server:
        cmd = [sys.executable, "-m", "calibkit.cli", "stated", "run", str(ds)]
        cmd += ["--provider", "openai", "--model", "fake-1", "--store", str(store), "--json"]
        cmd += ["--base-url", server.openai_base_url, "--api-key-env", "FAKE_KEY"]
        cmd += ["--concurrency", "2"]
        procs = [
            subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(2)
        ]
        outs = [p.communicate(timeout=120) for p in procs]
        assert [p.returncode for p in procs] == [0, 0], outs
        docs = [json.loads(out) for out, _ in outs]
        assert server.total == 16 and server.requests == {f"q{i}": 1 for i in range(16)}
        assert sum(d["calls"] for d in docs) == 16
        assert all(d["parsed"] == 16 for d in docs)


def test_a_run_killed_mid_way_is_resumed_without_repeating_stored_replies(tmp_path):
    """SIGKILL leaves leases behind; the rerun (same machine) takes over the dead process's
    leases at once and asks only the keys without a stored reply."""
    ds = write_decision_set(tmp_path / "ds.jsonl", make_items(20))
    store = tmp_path / "r.sqlite"
    with FakeLLMServer(latency=0.1, lifetime=120.0) as server:
        cmd = [sys.executable, "-m", "calibkit.cli", "stated", "run", str(ds)]
        cmd += ["--provider", "openai", "--model", "fake-1", "--store", str(store), "--json"]
        cmd += ["--base-url", server.openai_base_url, "--api-key-env", "FAKE_KEY"]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while server.total < 8 and proc.poll() is None:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        time.sleep(0.3)  # requests in flight when it died reach the server
        before = server.total
        with ReplyStore(store) as st:
            stored = {r.key.item_id for r in st.items(status="ok")}
        assert 0 < len(stored) < 20
        with ReplyStore(store) as st:
            with_text = {r.key.item_id for r in st.items() if r.text is not None}
        res = runner.invoke(
            app,
            [
                "stated",
                "run",
                str(ds),
                "--provider",
                "openai",
                "--model",
                "fake-1",
                "--store",
                str(store),
                "--base-url",
                server.openai_base_url,
                "--api-key-env",
                "FAKE_KEY",
                "--json",
            ],
        )
        assert res.exit_code == 0, res.output
        doc = json.loads(res.stdout)
        assert doc["parsed"] == 20 and doc["reused"] == len(stored)
        assert server.total - before == 20 - len(with_text) == doc["calls"]
        assert all(server.requests[i] == 1 for i in stored)


def test_leases_expire_are_taken_over_from_dead_owners_and_are_renewed(tmp_path):
    key = ReplyKey("openai", "m", "ph", "q1", 0, "sh")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = socket.gethostname()
    live = f"{host}:{os.getpid()}:other-run"  # another run of this very process
    far = "elsewhere:1:x"  # a run on another machine
    with ReplyStore(tmp_path / "r.sqlite") as s:
        assert s.claim(key, live, 3600) == "claimed"
        assert s.claim(key, "me", 30) == "busy"
        s.release(key, "me")  # not the holder: nothing happens
        assert s.claim(key, "me", 30) == "busy"
        s.release(key, live)
        assert s.claim(key, far, -1) == "claimed"  # a lease that has already expired
        assert s.claim(key, "me", 30) == "claimed"  # so it is taken over
        s.release(key, "me")
        assert s.claim(key, far, 3600) == "claimed"
        assert s.claim(key, "me", 30) == "busy"  # another machine's, unexpired: wait
        s.release(key, far)
        assert s.claim(key, f"{host}:{dead.pid}:x", 3600) == "claimed"
        assert s.claim(key, "me", 30) == "claimed"  # its owner is a dead process of this host
        assert s.renew("me", 3600) == 1 and s.renew("nobody", 30) == 0
        s.put(key, text="t")
        s.mark(key, "ok", answer="A", confidence=0.5)
        assert s.claim(key, "someone", 30) == "final"


def test_a_long_request_keeps_its_lease(tmp_path):
    """A request longer than the lease: the heartbeat renews it, so a second run waits."""
    path = tmp_path / "r.sqlite"
    with FakeLLMServer({"q0": ["slow"]}, slow_s=3.5) as server:
        first = threading.Thread(target=lambda: run(server, path, make_items(1), lease_s=2.4))
        first.start()
        while server.total < 1:
            time.sleep(0.01)
        second = run(server, path, make_items(1), lease_s=2.4)
        first.join()
        assert server.total == 1 and second.calls == 0 and second.reused == 1
        assert second.status_counts == {"ok": 1}


# -- 11: an unreachable server fails fast, with the reason -------------------------------------
def test_unreachable_base_url_stops_the_run_with_the_reason(tmp_path):
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    path = tmp_path / "r.sqlite"
    with pytest.raises(ProviderUnreachable) as info:
        elicit(
            make_items(40),
            provider="openai",
            model="m",
            store=path,
            base_url=url,
            api_key_env="FAKE_KEY",
            concurrency=2,
            backoff_base=0.01,
            backoff_max=0.05,
        )
    msg = str(info.value)
    assert msg.startswith(f"cannot reach openai at {url}: APIConnectionError: Connection error.")
    assert "Connection refused" in msg and "nothing was asked" in msg
    with ReplyStore(path) as st:
        # stopped after 3 failed connections (and those already in flight), not 40 x 6 attempts
        assert 3 <= st.totals()["calls"] <= 4
        assert {r.status for r in st.items()} == {"transient_error"}


def test_reachability_rules():
    """Three failed connections in a row before any answer stop a run; any answer of the server
    (an HTTP 429 included) breaks the row; after replies, only a key whose retries all failed
    with nothing answered since its first failure does."""
    r = _runner.Reachability()
    assert not r.failed("e", since=0.0, exhausted=False)
    assert not r.failed("e", since=0.0, exhausted=False)
    r.answered()  # a 429: the server is there
    assert not r.failed("e", since=0.0, exhausted=False)
    assert not r.failed("e", since=0.0, exhausted=False)
    assert r.failed("refused", since=0.0, exhausted=False) and r.reason == "refused"
    r = _runner.Reachability()
    r.replied()
    for _ in range(10):
        assert not r.failed("e", since=time.monotonic(), exhausted=False)
    assert not r.failed("e", since=0.0, exhausted=True)  # a reply came after its first failure
    assert r.failed("down", since=time.monotonic(), exhausted=True) and r.reason == "down"


def test_cli_unreachable_base_url_exits_with_one_line(tmp_path):
    ds = write_decision_set(tmp_path / "ds.jsonl", make_items(30))
    url = f"http://127.0.0.1:{free_port()}/v1"
    res = runner.invoke(
        app,
        [
            "stated",
            "run",
            str(ds),
            "--provider",
            "openai",
            "--model",
            "m",
            "--base-url",
            url,
            "--api-key-env",
            "FAKE_KEY",
            "--store",
            str(tmp_path / "r.sqlite"),
        ],
    )
    assert_bad_input(res, f"stated run: cannot reach openai at {url}: APIConnectionError")


def test_a_server_that_dies_mid_run_stops_it_and_a_rerun_finishes(tmp_path):
    path = tmp_path / "r.sqlite"
    items = make_items(12)
    server = FakeLLMServer(latency=0.02)

    def die_after_five():
        while sum(server.replies.values()) < 5:
            time.sleep(0.002)
        server.down = True

    threading.Thread(target=die_after_five, daemon=True).start()
    with ReplyStore(path) as st:
        with pytest.raises(ProviderUnreachable) as info:
            run(server, st, items, concurrency=1, transient_retries=2)
        answered = {r.key.item_id for r in st.items(status="ok")}
    msg = str(info.value)
    assert msg.startswith(f"cannot reach openai at {server.openai_base_url}: APIConnectionError")
    assert f"{len(answered)} of 12 replies came before it stopped answering" in msg
    assert 5 <= len(answered) < 12 and server.dropped == 3  # q's three attempts
    server.stop()
    with FakeLLMServer() as again:
        r = run(again, path, items)
        assert r.status_counts == {"ok": 12}
        assert again.requests == {f"q{i}": 1 for i in range(12) if f"q{i}" not in answered}


def test_cli_every_item_refused_means_nothing_could_be_asked(tmp_path):
    items = make_items(4)
    ds = write_decision_set(tmp_path / "ds.jsonl", items)
    with FakeLLMServer({it["id"]: ["401"] for it in items}) as server:
        res = runner.invoke(
            app,
            [
                "stated",
                "run",
                str(ds),
                "--provider",
                "openai",
                "--model",
                "m",
                "--base-url",
                server.openai_base_url,
                "--api-key-env",
                "FAKE_KEY",
                "--store",
                str(tmp_path / "r.sqlite"),
            ],
        )
    assert_bad_input(
        res, "nothing could be asked: none of the 4 items got a reply (4 x permanent_error"
    )


# -- 13: an audit of a store groups by run -----------------------------------------------------
def test_stated_audit_of_a_store_with_three_runs(tmp_path):
    items = make_items(10)
    ds = write_decision_set(tmp_path / "ds.jsonl", items)
    store = tmp_path / "r.sqlite"
    with FakeLLMServer() as server:
        for t in (0.0, 0.5, 1.0):  # three runs over the same items: three settings hashes
            run(server, store, items, temperature=t)
    base = [
        "stated",
        "audit",
        str(store),
        "--decision-set",
        str(ds),
        "--n-boot",
        "20",
        "--n-sims",
        "20",
    ]
    res = runner.invoke(app, [*base, "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)["rows"]
    assert len(rows) == 3 and [r["n"] for r in rows] == [10, 10, 10]
    assert len({tuple(r["group"]) for r in rows}) == 3
    assert_bad_input(
        runner.invoke(app, [*base, "--group-by", "llm"]),
        "group openai:fake-1 of",
    )
    res = runner.invoke(app, [*base, "--group-by", "llm"])
    assert "pools 3 runs" in res.stderr and "30 replies of 10 items" in res.stderr
    assert "or pass --pool to pool them" in res.stderr
    res = runner.invoke(app, [*base, "--group-by", "llm", "--pool", "--json"])
    assert res.exit_code == 0, res.output
    assert [r["n"] for r in json.loads(res.stdout)["rows"]] == [30]
    assert res.stderr.count("calibkit: warning:") == 1
    assert "holds 30 replies of 10 items (up to 3 per item" in res.stderr


def test_stated_audit_warns_about_samples_of_one_item(tmp_path):
    items = make_items(6)
    ds = write_decision_set(tmp_path / "ds.jsonl", items)
    store = tmp_path / "r.sqlite"
    with FakeLLMServer() as server:
        run(server, store, items, samples=3, source="consistency", temperature=1.0)
    res = runner.invoke(
        app,
        [
            "stated",
            "audit",
            str(store),
            "--decision-set",
            str(ds),
            "--n-boot",
            "20",
            "--n-sims",
            "20",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    assert [r["n"] for r in json.loads(res.stdout)["rows"]] == [18]
    assert "holds 18 replies of 6 items (up to 3 per item" in res.stderr


# -- 17: damaged stores and a full disk --------------------------------------------------------
def _make_store(path: Path) -> None:
    with ReplyStore(path) as s:
        for i in range(300):
            s.put(ReplyKey("openai", "m", "ph", f"q{i}", 0, "sh"), text="x" * 200)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (
            "garbage",
            "is not a calibkit reply store (not an SQLite database: file is not a database)",
        ),
        ("truncated", "is damaged: database disk image is malformed (truncated or overwritten?)"),
        (
            "other",
            "is not a calibkit reply store: it is an SQLite database with the tables people "
            "and no 'replies'",
        ),
        (
            "columns",
            "is not a calibkit reply store: its table 'replies' has no column answer, attempts",
        ),
    ],
)
def test_stated_run_on_a_damaged_store_says_what_is_wrong(tmp_path, damage, message):
    path = tmp_path / "r.sqlite"
    if damage == "garbage":
        path.write_bytes(b"not a database, just bytes\n" * 200)
    elif damage == "truncated":
        _make_store(path)
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    else:
        with sqlite3.connect(path) as c:
            if damage == "other":
                c.execute("CREATE TABLE people (name TEXT)")
            else:
                c.execute(
                    "CREATE TABLE replies (provider TEXT, model TEXT, prompt_hash TEXT, "
                    "item_id TEXT, sample_index INTEGER, settings_hash TEXT, text TEXT, "
                    "input_tokens INTEGER, output_tokens INTEGER, logprobs TEXT, status "
                    "TEXT, error TEXT, confidence REAL, created_at REAL, updated_at REAL)"
                )
    ds = write_decision_set(tmp_path / "ds.jsonl", make_items(3))
    with FakeLLMServer() as server:
        res = runner.invoke(
            app,
            [
                "stated",
                "run",
                str(ds),
                "--provider",
                "openai",
                "--model",
                "m",
                "--base-url",
                server.openai_base_url,
                "--api-key-env",
                "FAKE_KEY",
                "--store",
                str(path),
            ],
        )
        assert server.total == 0
    assert_bad_input(
        res,
        f"stated run: '{path}' {message}"
        if damage != "truncated"
        else f"stated run: reply store '{path}' {message}",
    )
    if damage in ("other", "columns"):  # another program's database is left as it was
        with sqlite3.connect(path) as c:
            assert c.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
            assert "leases" not in {r[0] for r in c.execute("SELECT name FROM sqlite_master")}


def test_stated_audit_of_a_garbage_store_is_one_line(tmp_path):
    path = tmp_path / "r.sqlite"
    path.write_bytes(b"\x00garbage" * 100)
    ds = write_decision_set(tmp_path / "ds.jsonl", make_items(2))
    res = runner.invoke(app, ["stated", "audit", str(path), "--decision-set", str(ds)])
    assert_bad_input(res, f"stated audit: '{path}' is not a calibkit reply store")


class FullDisk(ReplyStore):
    """The disk fills up after ``n`` replies: SQLite's own SQLITE_FULL (max_page_count)."""

    def __init__(self, path, n):
        super().__init__(path)
        self.n, self.seen, self.lock = n, 0, threading.Lock()

    def put(self, key, **kw):
        if kw.get("text") is not None:
            with self.lock:
                self.seen += 1
                if self.seen == self.n + 1:
                    pages = self._conn.execute("PRAGMA page_count").fetchone()[0]
                    self._conn.execute(f"PRAGMA max_page_count = {pages}")
        super().put(key, **kw)


BIG_REPLY = '{"answer": "yes", "confidence": 0.8, "why": "' + "because " * 1000 + '"}'


def test_a_full_disk_stops_the_run_and_says_which_reply_is_lost(tmp_path):
    big = BIG_REPLY
    items = make_items(10)
    path = tmp_path / "r.sqlite"
    with FakeLLMServer({it["id"]: ["text=" + big] for it in items}) as server:
        st = FullDisk(path, n=4)
        with pytest.raises(StoreError) as info:
            run(server, st, items, concurrency=1)
        st.close()
        msg = str(info.value)
        assert msg.startswith(
            "the reply received for item 'q4' (sample 0) could not be stored and is lost "
            "(1 output tokens paid); the run stopped, and a rerun asks again what was lost. "
            f"reply store '{path}': the disk is full"
        )
        assert "the disk is full (database or disk is full) while storing a reply" in msg
        assert "the replies stored so far are kept; free space and rerun" in msg
        with ReplyStore(path) as again:  # nothing stored before was lost
            assert sorted(r.key.item_id for r in again.items(status="ok")) == [
                "q0",
                "q1",
                "q2",
                "q3",
            ]
            r = run(server, again, items, concurrency=1)
        assert r.status_counts == {"ok": 10}
        assert server.requests == {**{f"q{i}": 1 for i in range(10)}, "q4": 2}


class FullDiskAfterOne(FullDisk):
    def __init__(self, path):
        super().__init__(path, n=1)


def test_cli_full_disk_is_one_line(tmp_path, monkeypatch):
    elicit_module = sys.modules["calibkit.stated.elicit"]
    monkeypatch.setattr(elicit_module, "ReplyStore", FullDiskAfterOne)
    items = make_items(3)
    ds = write_decision_set(tmp_path / "ds.jsonl", items)
    with FakeLLMServer({it["id"]: ["text=" + BIG_REPLY] for it in items}) as server:
        res = runner.invoke(
            app,
            [
                "stated",
                "run",
                str(ds),
                "--provider",
                "openai",
                "--model",
                "m",
                "--base-url",
                server.openai_base_url,
                "--api-key-env",
                "FAKE_KEY",
                "--store",
                str(tmp_path / "r.sqlite"),
                "--concurrency",
                "1",
            ],
        )
    assert_bad_input(
        res, "the reply received for item 'q1' (sample 0) could not be stored and is lost"
    )
    assert "the disk is full" in res.stderr


# -- 7 and 17 for stated audit: its table of answers follows the file rules -------------------
def test_stated_audit_refuses_a_fifo_before_opening_it(tmp_path):
    fifo = tmp_path / "answers.jsonl"
    os.mkfifo(fifo)
    result = CliRunner().invoke(app, ["stated", "audit", str(fifo)])
    assert result.exit_code == 2
    assert "stated audit: " in result.stderr and "is a FIFO (named pipe)" in result.stderr


def test_stated_audit_refuses_deep_json_lines_without_crashing(tmp_path):
    deep = tmp_path / "answers.jsonl"
    deep.write_text('{"a": ' * 3000 + "\n")
    done = subprocess.run(  # a crash of pyarrow's reader would kill the process, not a test
        [sys.executable, "-m", "calibkit", "stated", "audit", str(deep)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "nests JSON 3000 levels deep; calibkit reads at most 64 levels" in done.stderr
