"""The judge and P(True), through the real openai SDK against the loopback fake server."""

from __future__ import annotations

import threading

import pytest
from fake_llm_server import FakeLLMServer

from calibkit.stated.judging import DEFAULT_JUDGE_PROMPT, judge, parse_verdict
from calibkit.stated.ptrue import p_true
from calibkit.stated.store import ReplyStore

pytest.importorskip("openai")
FAST = {"backoff_base": 0.001, "backoff_max": 0.01, "timeout": 5.0}


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("FAKE_KEY", "sk-fake")


def items(n, answer="4"):
    return [
        {"id": f"q{i}", "question": f"[item:q{i}] 2+2?", "gold": ["4", "four"], "answer": answer}
        for i in range(n)
    ]


def run_judge(server, store, its, **kw):
    args = {"provider": "openai", "model": "judge-1", "store": store}
    args |= {"base_url": server.openai_base_url, "api_key_env": "FAKE_KEY"}
    return judge(its, **{**args, **FAST, **kw})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"correct": true}', (True, None)),
        ('```json\n{"correct": false, "why": "x"}\n```', (False, None)),
        ("**Correct**", (True, None)),
        ("no.", (False, None)),
        ('{"correct": "true"}', (None, "'correct' is not true or false")),
        ('{"verdict": true}', (None, "no 'correct' key")),
        ("{not json", (None, "not valid JSON")),
        ("probably correct", (None, "not a verdict")),
        ("   ", (None, "empty reply")),
    ],
)
def test_parse_verdict(text, expected):
    assert parse_verdict(text) == expected


def test_verdicts_by_script_unparsed_and_rerun(tmp_path):
    script = {"q0": ["correct"], "q1": ["incorrect"], "q2": ["text=maybe so"]}
    with FakeLLMServer(script) as server, ReplyStore(tmp_path / "j.sqlite") as st:
        r = run_judge(server, st, items(3))
        assert [g.correct for g in r.grades] == [True, False, None]
        assert r.grades[2].reason == "unparsed: not a verdict (malformed reply after 1 attempts)"
        assert {g.grader for g in r.grades} == {f"judge:openai/judge-1:{r.prompt_hash[:12]}"}
        assert r.calls == 3 and server.total == 3
        sent = server.bodies[0]["messages"][0]["content"]
        assert "Reference answer(s): 4 | four" in sent and "Answer to grade: 4" in sent
        again = run_judge(server, st, items(3))
        assert again.calls == 0 and again.reused == 3 and server.total == 3
        assert [g.correct for g in again.grades] == [True, False, None]
        # a changed answer, prompt or judge model is judged anew
        changed = items(3)
        changed[1]["answer"] = "5"
        run_judge(server, st, changed)
        assert server.total == 4 and server.requests["q1"] == 2
        run_judge(server, st, items(3), prompt=DEFAULT_JUDGE_PROMPT + "\n")
        assert server.total == 7
        run_judge(server, st, items(3), model="judge-2")
        assert server.total == 10


def test_two_concurrent_runs_share_the_store(tmp_path):
    path, out = tmp_path / "j.sqlite", []
    with FakeLLMServer(latency=0.05, default="correct") as server:
        threads = [
            threading.Thread(target=lambda: out.append(run_judge(server, path, items(24))))
            for _ in range(2)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert server.total == 24 and sum(r.calls for r in out) == 24
        assert all([g.correct for g in r.grades] == [True] * 24 for r in out)


def test_p_true_equals_the_scripted_probabilities(tmp_path):
    script = {"q0": ["ptrue:0.73"], "q1": ["ptrue:0.2:yes"], "q2": ["ptrue:0.55:split"]}
    script["q3"] = ["ptrue:none"]
    its = [{k: v for k, v in it.items() if k != "gold"} for it in items(4)]
    with FakeLLMServer(script) as server, ReplyStore(tmp_path / "p.sqlite") as st:
        kw = {"base_url": server.openai_base_url, "api_key_env": "FAKE_KEY", **FAST}
        r = p_true(its, provider="openai", model="m", store=st, **kw)
        assert all(b["logprobs"] is True and b["top_logprobs"] == 20 for b in server.bodies)
        got = [x.confidence for x in r.results]
        assert got[:3] == pytest.approx([0.73, 0.2, 0.55], abs=1e-9)
        assert r.results[3].confidence is None
        assert r.results[3].error == "unparsed: no true/false token"
        again = p_true(its, provider="openai", model="m", store=st, **kw)
        assert again.calls == 0 and server.total == 4
        with pytest.raises(ValueError, match="log-probabilities"):
            p_true(its, provider="anthropic", model="m", store=st)


def test_cli_writes_correct_and_grader_columns(tmp_path):
    import csv
    import json

    from typer.testing import CliRunner

    from calibkit.cli import app

    src = tmp_path / "answers.jsonl"
    src.write_text("".join(json.dumps(it) + "\n" for it in items(3)), encoding="utf-8")
    out = tmp_path / "graded.csv"
    with FakeLLMServer({"q1": ["incorrect"]}, default="correct") as server:
        args = ["stated", "judge", str(src), "--provider", "openai", "--model", "judge-1"]
        args += ["--store", str(tmp_path / "j.sqlite"), "-o", str(out)]
        args += ["--base-url", server.openai_base_url, "--api-key-env", "FAKE_KEY"]
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 0, res.output
        rows = list(csv.DictReader(out.open(encoding="utf-8")))
        assert [r["correct"] for r in rows] == ["true", "false", "true"]
        assert all(r["grader"].startswith("judge:openai/judge-1:") for r in rows)
        assert server.total == 3


def test_a_judge_killed_mid_way_resumes_asking_only_what_is_left(tmp_path):
    import json
    import signal
    import subprocess
    import sys
    import time

    src = tmp_path / "answers.jsonl"
    src.write_text("".join(json.dumps(it) + "\n" for it in items(20)), encoding="utf-8")
    store = tmp_path / "j.sqlite"
    with FakeLLMServer(latency=0.1, lifetime=120.0, default="correct") as server:
        cmd = [sys.executable, "-m", "calibkit.cli", "stated", "judge", str(src)]
        cmd += ["--provider", "openai", "--model", "judge-1", "--store", str(store)]
        cmd += ["--base-url", server.openai_base_url, "--api-key-env", "FAKE_KEY"]
        cmd += ["-o", str(tmp_path / "graded.csv")]
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
        r = run_judge(server, store, items(20))
        assert [g.correct for g in r.grades] == [True] * 20
        assert r.calls == server.total - before == 20 - len(with_text)  # no reply lost


_P_TRUE_CHILD = """
import json, sys
from calibkit.stated.ptrue import p_true
its = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
p_true(its, provider="openai", model="m", store=sys.argv[2], base_url=sys.argv[3],
       api_key_env="FAKE_KEY", concurrency=2)
"""


def test_a_p_true_run_killed_mid_way_resumes_asking_only_what_is_left(tmp_path):
    import json
    import signal
    import subprocess
    import sys
    import time

    its = [{k: v for k, v in it.items() if k != "gold"} for it in items(20)]
    src = tmp_path / "proposed.jsonl"
    src.write_text("".join(json.dumps(it) + "\n" for it in its), encoding="utf-8")
    store = tmp_path / "p.sqlite"
    # twice: a request in flight when the child died is asked again by the second run
    script = {f"q{i}": [f"ptrue:{0.05 * (i + 1):.2f}"] * 2 for i in range(20)}
    with FakeLLMServer(script, latency=0.1, lifetime=120.0) as server:
        cmd = [sys.executable, "-c", _P_TRUE_CHILD, str(src), str(store)]
        proc = subprocess.Popen(
            [*cmd, server.openai_base_url], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        while server.total < 6 and proc.poll() is None:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        time.sleep(0.3)  # requests in flight when it died reach the server
        before = server.total
        with ReplyStore(store) as st:
            with_text = {r.key.item_id for r in st.items() if r.text is not None}
        assert 0 < len(with_text) < 20
        kw = {"base_url": server.openai_base_url, "api_key_env": "FAKE_KEY", **FAST}
        r = p_true(its, provider="openai", model="m", store=store, **kw)
        # item i was scripted P(True) = 0.05 (i + 1), whichever run asked it
        got = [x.confidence for x in r.results]
        assert got == pytest.approx([0.05 * (i + 1) for i in range(20)], abs=1e-9)
        assert r.calls == server.total - before == 20 - len(with_text)  # no reply lost
        assert r.reused == len(with_text)
