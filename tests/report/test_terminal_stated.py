"""report.terminal: an elicitation run and the --quiet lines of a stated audit."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from rich.console import Console

import calibkit as ck
from calibkit.report.terminal import render_stated_run, stated_verdict_lines
from calibkit.stated.audit import audit_stated
from calibkit.stated_run import StatedRun


def _run(n: int) -> SimpleNamespace:
    return SimpleNamespace(
        provider="openai",
        model="m",
        source="verbalized",
        prompt_hash="ab" * 32,
        settings_hash="s1",
        results=[None] * n,
        parse_rate=0.75,
        status_counts={"ok": 3, "failed": 1},
        calls=4,
        reused=0,
        input_tokens=40,
        output_tokens=12,
    )


def _text(render) -> str:
    console = Console(record=True, width=200, highlight=False)
    render(console)
    return console.export_text()


def test_a_run_prints_what_was_asked_how_much_parsed_and_the_audit():
    audit = ck.audit(np.array([0.9, 0.8, 0.6]), np.array([1, 0, 1]), n_bins=3, n_sims=20)
    result = StatedRun(_run(4), 3, 2 / 3, audit, {"failed: unparsed: no json": 1})
    text = _text(lambda c: render_stated_run(result, c, decision_set="ds.jsonl", store="r.db"))
    lines = text.splitlines()
    assert lines[0] == "calibkit stated run: openai:m on ds.jsonl (4 items, source verbalized)"
    assert lines[1].startswith("replies stored in r.db (rerunning the same command resumes")
    assert lines[2] == f"prompt sha256 {'ab' * 32}, settings s1"
    assert lines[3] == "parsed 3 of 4 items (75.0%); status {'ok': 3, 'failed': 1}"
    assert lines[4] == "  1 x failed: unparsed: no json"
    assert lines[5] == "this run: 4 calls, 0 replies reused, tokens in/out 40/12"
    assert (
        "calibkit audit: N = 3 binary forecasts, from 3 parsed replies (unparsed left out)" in text
    )
    empty = StatedRun(_run(4), 0, None, None, {})
    assert "no parsed replies: nothing to audit." in _text(
        lambda c: render_stated_run(empty, c, decision_set="ds.jsonl", store="r.db")
    )


def test_the_quiet_lines_name_the_better_source_of_each_group():
    rng = np.random.default_rng(0)
    n = 400
    y = (rng.uniform(size=n) < 0.7).astype(int)
    good = np.full(n, 0.7)
    bad = np.where(rng.uniform(size=n) < 0.5, 0.99, 0.4)
    table = {"llm": ["a"] * n, "s": good, "t": bad, "correct": y}
    result = audit_stated(table, group_by=("llm",), sources=("s", "t"), n_boot=50, n_sims=50)
    assert stated_verdict_lines(result) == ["a: s has the lower ECE (clearly)"]
    one = audit_stated(table, group_by=("llm",), sources=("s",), n_boot=50, n_sims=50)
    assert stated_verdict_lines(one) == ["1 audit(s); no group has two sources to compare."]
