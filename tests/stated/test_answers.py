"""calibkit.stated.answers: tables of answers, reply stores joined with a decision set, the
pooling check, and the answers of an elicitation run."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import calibkit as ck
from calibkit.stated.answers import (
    audit_answers,
    check_pooling,
    check_something_asked,
    column_names,
    is_reply_store,
    read_answer_table,
    read_items,
    run_outcomes,
    store_answers,
    unparsed_reasons,
)
from calibkit.stated.audit import audit_stated
from calibkit.stated.elicit import ItemResult
from calibkit.stated.store import ReplyKey, ReplyStore

ROWS = [("m", 0.9, 1), ("m", 0.9, 0), ("m", 0.6, 1), ("m", 0.7, 1)]


def _csv(path: Path, sep: str = ",") -> Path:
    lines = [sep.join(("llm", "stated_confidence", "correct"))]
    lines += [sep.join(map(str, r)) for r in ROWS]
    path.write_text("\n".join(lines) + "\n")
    return path


def _items(n: int) -> list[dict]:
    return [
        {"id": f"q{i}", "question": f"question {i}?", "options": ["yes", "no"], "label": "yes"}
        for i in range(n)
    ]


def _decision_set(path: Path, n: int) -> Path:
    path.write_text("".join(json.dumps(it) + "\n" for it in _items(n)))
    return path


def _store(path: Path, replies: list[tuple[str, str, int, str, float]]) -> Path:
    """(settings_hash, item_id, sample, answer, confidence) as ok replies of model m."""
    with ReplyStore(path) as store:
        for settings, item, sample, answer, conf in replies:
            key = ReplyKey("openai", "m", "ph" * 10, item, sample, settings)
            store.put(key, text="{}")
            store.mark(key, "ok", answer=answer, confidence=conf)
    return path


# ----------------------------------------------------------------------------- names and files


def test_a_store_is_told_by_its_extension():
    assert [is_reply_store(n) for n in ("r.sqlite", "r.SQLITE3", "r.db", "r.csv", "r")] == [
        True,
        True,
        True,
        False,
        False,
    ]


def test_column_names_split_commas_and_refuse_a_name_twice():
    assert column_names(" llm ,qset,", "--group-by", where="w") == ["llm", "qset"]
    assert column_names(("a", "b"), "--sources", where="w") == ["a", "b"]
    assert column_names("", "--group-by", where="w") == []
    with pytest.raises(ck.InputError, match=r"^w: --sources names a column twice: 'a,b,a'\.$"):
        column_names("a,b,a", "--sources", where="w")


@pytest.mark.parametrize(("name", "sep"), [("a.csv", ","), ("a.tsv", "\t"), ("a.tab", "\t")])
def test_text_tables_are_read_by_the_extension_io_gives_them(tmp_path, name, sep):
    table = read_answer_table(_csv(tmp_path / name, sep), where="w")
    assert table.column_names == ["llm", "stated_confidence", "correct"]
    assert table["stated_confidence"].to_pylist() == [0.9, 0.9, 0.6, 0.7]


def test_parquet_and_json_lines_tables(tmp_path):
    data = {"llm": ["m"] * 4, "stated_confidence": [r[1] for r in ROWS]}
    pq.write_table(pa.table(data), tmp_path / "a.parquet")
    lines = "".join(json.dumps({"llm": "m", "stated_confidence": r[1]}) + "\n" for r in ROWS)
    (tmp_path / "a.ndjson").write_text(lines)
    for name in ("a.parquet", "a.ndjson"):
        assert read_answer_table(tmp_path / name)["stated_confidence"].to_pylist() == [
            0.9,
            0.9,
            0.6,
            0.7,
        ]


def test_a_file_that_is_not_a_table_of_answers_is_refused(tmp_path):
    (tmp_path / "a.txt").write_text("x\n")
    np.savez(tmp_path / "a.npz", p=np.zeros(3))
    for name in ("a.txt", "a.npz"):
        with pytest.raises(
            ck.InputError,
            match=r"^w: cannot tell the format of '.*a\.(txt|npz)' from its extension "
            r"'\.(txt|npz)'; use \.csv, \.tsv, \.parquet, \.jsonl, or a reply store "
            r"\(\.sqlite, \.sqlite3, \.db\)\.$",
        ):
            read_answer_table(tmp_path / name, where="w")
    with pytest.raises(ck.InputError, match=r"^w: no such file: '.*absent\.csv'\.$"):
        read_answer_table(tmp_path / "absent.csv", where="w")
    with pytest.raises(ck.InputError, match=r"is a directory; pass a table of answers\.$"):
        read_answer_table(tmp_path, where="w")
    (tmp_path / "bad.csv").write_text("a,b\n1,2\n3\n")
    with pytest.raises(ck.InputError, match=r"^w: could not read '.*bad\.csv' as CSV: "):
        read_answer_table(tmp_path / "bad.csv", where="w")


def test_read_items_checks_the_file_first(tmp_path):
    assert [it["id"] for it in read_items(_decision_set(tmp_path / "ds.jsonl", 3))] == [
        "q0",
        "q1",
        "q2",
    ]
    with pytest.raises(ck.InputError, match=r"is a directory; pass a decision set \(JSON lines\)"):
        read_items(tmp_path, where="w")


# ----------------------------------------------------------------------------- reply stores


def test_a_store_becomes_one_row_per_ok_reply_checked_against_its_label(tmp_path):
    ds = _decision_set(tmp_path / "ds.jsonl", 3)
    store = _store(tmp_path / "r.sqlite", [("s1", "q0", 0, "yes", 0.9), ("s1", "q1", 0, "no", 0.6)])
    columns = store_answers(store, ds, where="w")
    assert columns == {
        "llm": ["openai:m", "openai:m"],
        "prompt": ["ph" * 6, "ph" * 6],
        "settings": ["s1", "s1"],
        "item_id": ["q0", "q1"],
        "sample": [0, 0],
        "stated_confidence": [0.9, 0.6],
        "correct": [1, 0],  # q1's label is yes, the answer no
    }


def test_a_store_needs_its_decision_set_and_items_it_knows(tmp_path):
    store = _store(tmp_path / "r.sqlite", [("s1", "q7", 0, "yes", 0.9)])
    with pytest.raises(ck.InputError, match=r"^w: '.*r\.sqlite' is a reply store; pass "):
        store_answers(store, None, where="w")
    ds = _decision_set(tmp_path / "ds.jsonl", 3)
    with pytest.raises(
        ck.InputError,
        match=r"^w: 1 item\(s\) of '.*r\.sqlite' are not in '.*ds\.jsonl' \(first: 'q7'\)",
    ):
        store_answers(store, ds, where="w")
    with ReplyStore(tmp_path / "empty.sqlite"):
        pass
    with pytest.raises(ck.InputError, match=r"holds no parsed \(ok\) replies to audit\.$"):
        store_answers(tmp_path / "empty.sqlite", ds, where="w")


def test_pooling_two_runs_is_refused_and_samples_of_one_item_warned_about():
    table = {
        "llm": ["a:m"] * 4,
        "prompt": ["p"] * 4,
        "settings": ["s1", "s1", "s2", "s2"],
        "item_id": ["q0", "q1", "q0", "q1"],
    }
    with pytest.raises(
        ck.InputError,
        match=r"^w: group a:m of 'r\.db' pools 2 runs \(prompt/settings p/s1, p/s2\): 4 replies "
        r"of 2 items; audit each run with the default --group-by llm,prompt,settings, or pass "
        r"--pool to pool them\.$",
    ):
        check_pooling(table, ["llm"], pool=False, path="r.db", where="w")
    with pytest.warns(ck.CalibkitWarning, match=r"group a:m holds 4 replies of 2 items \(up to 2"):
        check_pooling(table, ["llm"], pool=True, path="r.db", where="w")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one run per group, one reply per item: silent
        check_pooling(table, ["llm", "prompt", "settings"], pool=False, path="r.db", where="w")


# ----------------------------------------------------------------------------- audit_answers


def test_a_table_is_audited_as_audit_stated_audits_it(tmp_path):
    path = _csv(tmp_path / "a.csv")
    got = audit_answers(path, group_by="llm", sources="stated_confidence", n_boot=30, n_sims=30)
    want = audit_stated(
        {"llm": ["m"] * 4, "stated_confidence": [0.9, 0.9, 0.6, 0.7], "correct": [1, 0, 1, 1]},
        group_by=("llm",),
        sources=("stated_confidence",),
        n_boot=30,
        n_sims=30,
    )
    assert got.to_dict() == want.to_dict()
    r = got.rows[0]
    assert (r.n, r.accuracy, r.mean_confidence) == (4, 0.75, pytest.approx(3.1 / 4))


def test_a_store_is_audited_per_run_by_default(tmp_path):
    ds = _decision_set(tmp_path / "ds.jsonl", 2)
    replies = [("s1", "q0", 0, "yes", 0.9), ("s1", "q1", 0, "no", 0.8)]
    replies += [("s2", "q0", 0, "yes", 0.7), ("s2", "q1", 0, "yes", 0.6)]
    store = _store(tmp_path / "r.sqlite", replies)
    got = audit_answers(store, decision_set=ds, n_boot=20, n_sims=20)
    assert got.group_by == ("llm", "prompt", "settings")
    assert [(r.group[2], r.n, r.accuracy) for r in got.rows] == [("s1", 2, 0.5), ("s2", 2, 1.0)]
    with pytest.warns(ck.CalibkitWarning, match="holds 4 replies of 2 items"):
        pooled = audit_answers(
            store, decision_set=ds, group_by="llm", pool=True, n_boot=20, n_sims=20
        )
    assert [(r.n, r.accuracy) for r in pooled.rows] == [(4, 0.75)]


def test_options_that_go_with_a_store_and_missing_columns_are_refused(tmp_path):
    path = _csv(tmp_path / "a.csv")
    with pytest.raises(ck.InputError, match=r"^w: --decision-set goes with a reply store"):
        audit_answers(path, decision_set=tmp_path / "ds.jsonl", where="w")
    with pytest.raises(ck.InputError, match=r"^w: --pool goes with a reply store"):
        audit_answers(path, pool=True, where="w")
    with pytest.raises(ck.InputError, match=r"^w: --sources names no column\.$"):
        audit_answers(path, sources=" ", where="w")
    with pytest.raises(
        ck.InputError,
        match=r"^w: '.*a\.csv' has no column 'qset' \(--group-by\); columns: llm, "
        r"stated_confidence, correct\.$",
    ):
        audit_answers(path, where="w")  # the default groups: llm,qset
    with pytest.raises(ck.InputError, match=r"has no column 'right' \(--correct\)"):
        audit_answers(path, group_by="llm", sources="stated_confidence", correct="right")


# ----------------------------------------------------------------------------- a run's answers


def _run(results: list[ItemResult]) -> SimpleNamespace:
    return SimpleNamespace(results=results)


def test_the_parsed_answers_of_a_run_are_its_outcomes():
    run = _run(
        [
            ItemResult("q0", "ok", "yes", 0.9),
            ItemResult("q1", "ok", "no", 0.8),
            ItemResult("q2", "failed", None, None, error="unparsed:  no  json"),
            ItemResult("q3", "failed", None, None, error="unparsed: no json"),
            ItemResult("q4", "transient_error", None, None),
        ]
    )
    conf, right = run_outcomes(run, _items(5))
    assert conf.tolist() == [0.9, 0.8] and right.tolist() == [1, 0]
    assert list(unparsed_reasons(run).items()) == [
        ("failed: unparsed: no json", 2),
        ("transient_error", 1),
    ]
    check_something_asked(run, where="w")  # replies came: nothing to refuse


def test_a_run_in_which_nothing_was_answered_is_refused():
    run = _run([ItemResult(f"q{i}", "permanent_error", None, None, error="401") for i in range(3)])
    with pytest.raises(
        ck.InputError,
        match=r"^w: nothing could be asked: none of the 3 items got a reply \(3 x "
        r"permanent_error: 401\)\. Check the provider",
    ):
        check_something_asked(run, where="w")
    check_something_asked(_run([]), where="w")  # an empty run asked nothing and is not refused
