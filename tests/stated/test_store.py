"""The reply store: every reply committed, keyed, safe to reopen."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading

import pytest

from calibkit.stated.store import FINAL_STATUSES, ReplyKey, ReplyStore


def key(item: str = "q1", sample: int = 0, provider: str = "openai") -> ReplyKey:
    return ReplyKey(provider, "m", "ph", item, sample, "sh")


def test_put_get_mark(tmp_path):
    with ReplyStore(tmp_path / "r.sqlite") as s:
        assert s.get(key()) is None
        s.put(key(), text="raw", input_tokens=7, output_tokens=3, logprobs=[{"token": "A"}])
        r = s.get(key())
        assert r is not None
        assert (r.text, r.status, r.attempts, r.input_tokens, r.output_tokens) == (
            "raw",
            "pending",
            1,
            7,
            3,
        )
        assert r.logprobs == [{"token": "A"}]
        s.mark(key(), "ok", answer="A", confidence=0.9)
        r = s.get(key())
        assert r is not None and (r.status, r.answer, r.confidence) == ("ok", "A", 0.9)
        assert r.created_at <= r.updated_at
        with pytest.raises(KeyError):
            s.mark(key("nope"), "ok")
        with pytest.raises(ValueError, match="status"):
            s.put(key(), status="weird")


def test_attempts_and_totals(tmp_path):
    with ReplyStore(tmp_path / "r.sqlite") as s:
        s.put(key(), text="garbage", input_tokens=10, output_tokens=5)
        s.put(key(), status="transient_error", error="429")
        s.put(key(), text="good", input_tokens=10, output_tokens=6)
        s.put(key("q2"), text="x", input_tokens=1, output_tokens=1)
        att = s.attempts(key())
        assert [a["attempt"] for a in att] == [1, 2, 3]
        assert [a["text"] for a in att] == ["garbage", None, "good"]
        assert att[1]["error"] == "429"
        assert s.totals() == {"input_tokens": 21, "output_tokens": 12, "calls": 4}
        assert s.totals(item_id="q2") == {"input_tokens": 1, "output_tokens": 1, "calls": 1}
        assert s.get(key()).attempts == 3  # type: ignore[union-attr]
        assert len(s) == 2
        with pytest.raises(ValueError):
            s.totals(text="x")


def test_items_filter_and_order(tmp_path):
    with ReplyStore(tmp_path / "r.sqlite") as s:
        for i in (3, 1, 2):
            s.put(key(f"q{i}"), text=str(i))
        s.put(key("q1", provider="anthropic"), text="a")
        s.mark(key("q2"), "failed", error="malformed")
        assert [r.key.item_id for r in s.items(provider="openai")] == ["q1", "q2", "q3"]
        assert [r.key.item_id for r in s.items(status="failed")] == ["q2"]
        assert len(list(s.items())) == 4
        with pytest.raises(ValueError):
            list(s.items(bogus=1))


def test_survives_reopen_and_is_wal(tmp_path):
    p = tmp_path / "r.sqlite"
    s = ReplyStore(p)
    s.put(key(), text="kept", input_tokens=2, output_tokens=1)
    s.put_prompt("ph", "the prompt")
    # no close(): as after a crash, the committed rows must be there for a second connection
    s2 = ReplyStore(p)
    r = s2.get(key())
    assert r is not None and r.text == "kept"
    assert s2.prompt("ph") == "the prompt"
    assert s2.totals()["input_tokens"] == 2
    s.close()
    s2.close()
    mode = sqlite3.connect(p).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    with ReplyStore(p) as s3:
        assert s3.get(key()).text == "kept"  # type: ignore[union-attr]


def test_threads_write_concurrently(tmp_path):
    with ReplyStore(tmp_path / "r.sqlite") as s:

        def work(j: int) -> None:
            for i in range(25):
                s.put(key(f"q{j}-{i}"), text="t", input_tokens=1, output_tokens=1)

        ts = [threading.Thread(target=work, args=(j,)) for j in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert len(s) == 200
        assert s.totals()["calls"] == 200


def test_final_statuses():
    assert FINAL_STATUSES == {"ok", "failed", "permanent_error"}


def _open_and_close(path: str, results) -> None:
    try:
        ReplyStore(path, timeout=20).close()
        results.put("ok")
    except Exception as exc:  # reported to the parent, which asserts on it
        results.put(repr(exc))


def test_processes_opening_a_new_store_at_once_all_succeed(tmp_path):
    """Two processes switching a new file to WAL together get "database is locked" from SQLite
    at once, without its busy timeout; the store waits that out itself (it once failed CI)."""
    ctx = multiprocessing.get_context("fork")
    answers = []
    for i in range(40):
        results = ctx.Queue()
        path = str(tmp_path / f"r{i}.sqlite")
        procs = [ctx.Process(target=_open_and_close, args=(path, results)) for _ in range(3)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(timeout=60)
        answers += [results.get(timeout=5) for _ in procs]
    assert answers == ["ok"] * len(answers)
