"""calibkit stated audit / stated run: the command line over audit_stated and elicit, with the
loopback fake server of tests/stated (nothing leaves 127.0.0.1)."""

from __future__ import annotations

import json
import sys
from itertools import islice
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from calibkit.cli import app
from calibkit.stated.audit import audit_stated

sys.path.insert(0, str(Path(__file__).parent / "stated"))
from fake_llm_server import FakeLLMServer  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "data" / "llm_stated_confidence.parquet"
DECISION_SET = ROOT / "src" / "calibkit" / "stated" / "data" / "decision_set.jsonl"
FAST = ["--n-boot", "50", "--n-sims", "50"]

runner = CliRunner(env={"COLUMNS": "220"})


def invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def small_parquet(tmp_path: Path) -> Path:
    """Two models on two question sets, 150 rows each, from the example file."""
    table = pq.read_table(EXAMPLE)
    parts = []
    for llm in pc.unique(table["llm"]).to_pylist()[:2]:
        for qset in pc.unique(table["qset"]).to_pylist()[:2]:
            mask = pc.and_(pc.equal(table["llm"], llm), pc.equal(table["qset"], qset))
            parts.append(table.filter(mask).slice(0, 150))
    path = tmp_path / "stated.parquet"
    pq.write_table(pa.concat_tables(parts), path)
    return path


def test_audit_matches_python(small_parquet: Path) -> None:
    res = invoke("stated", "audit", small_parquet, "--json", "--seed", "3", *FAST)
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    expected = audit_stated(pq.read_table(small_parquet), seed=3, n_boot=50, n_sims=50)
    assert len(doc["rows"]) == len(expected.rows) == 8
    for row, exp in zip(doc["rows"], expected.rows, strict=True):
        assert tuple(row["group"]) == exp.group and row["source"] == exp.source
        assert row["ece"] == pytest.approx(exp.ece, abs=0, rel=1e-12)
        assert row["ece_low"] == pytest.approx(exp.ece_low, rel=1e-12)
        assert row["noise_floor"] == pytest.approx(exp.noise_floor, rel=1e-12)
    table = invoke("stated", "audit", small_parquet, *FAST)
    assert table.exit_code == 0 and "stated_confidence" in table.stdout
    quiet = invoke("stated", "audit", small_parquet, "--quiet", *FAST)
    assert quiet.exit_code == 0 and "lower ECE" in quiet.stdout


def test_audit_missing_column_and_file(small_parquet: Path, tmp_path: Path) -> None:
    res = invoke("stated", "audit", small_parquet, "--sources", "nope")
    assert res.exit_code == 2
    assert res.stderr.startswith("calibkit: error: stated audit:")
    assert "no column 'nope'" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    res = invoke("stated", "audit", tmp_path / "absent.csv")
    assert res.exit_code == 2 and "no such file" in res.stderr


@pytest.fixture
def decision_set10(tmp_path: Path) -> Path:
    """The first 10 items, each question tagged with the [item:ID] marker the fake reads."""
    path = tmp_path / "ds10.jsonl"
    with DECISION_SET.open() as src, path.open("w") as out:
        for line in islice(src, 10):
            item = json.loads(line)
            item["question"] = f"[item:{item['id']}] {item['question']}"
            out.write(json.dumps(item) + "\n")
    return path


def test_run_resumes_then_audits_the_store(
    decision_set10: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_KEY", "sk-fake")
    store = tmp_path / "replies.sqlite"
    with FakeLLMServer(lifetime=60.0) as server:
        args = ["stated", "run", decision_set10, "--provider", "openai", "--model", "fake-1"]
        args += ["--base-url", server.openai_base_url, "--api-key-env", "FAKE_KEY"]
        args += ["--store", store]
        first = invoke(*args, "--json")
        assert first.exit_code == 0, first.output
        doc = json.loads(first.stdout)
        assert doc["items"] == doc["parsed"] == 10 and doc["calls"] == 10
        assert doc["parse_rate"] == 1.0 and doc["tokens"]["output"] > 0
        assert doc["audit"]["ece"] is not None and len(doc["prompt_sha256"]) == 64
        assert server.total == 10
        second = invoke(*args)
        assert second.exit_code == 0, second.output
        assert server.total == 10  # nothing asked again
        assert "resumes" in second.stdout and "0 calls" in second.stdout
    # the store audits like a table, joined with the labels
    # (one run in the store: grouping by the model alone pools nothing; the default is per run)
    res = invoke(
        "stated",
        "audit",
        store,
        "--decision-set",
        decision_set10,
        "--group-by",
        "llm",
        "--json",
        *FAST,
    )
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)["rows"]
    assert [r["group"] for r in rows] == [["openai:fake-1"]] and rows[0]["n"] == 10
    assert rows[0]["accuracy"] == pytest.approx(doc["accuracy_of_parsed"])
    res = invoke("stated", "audit", store)
    assert res.exit_code == 2 and "--decision-set" in res.stderr


def test_run_needs_a_provider(decision_set10: Path) -> None:
    res = invoke("stated", "run", decision_set10, "--model", "m")
    assert res.exit_code == 2 and "--provider is required" in res.stderr


def test_stated_audit_writes_an_html_report_with_a_diagram_per_group(tmp_path):
    rng = np.random.default_rng(3)
    n = 400
    conf = np.round(rng.uniform(0.5, 1.0, n) * 20) / 20
    data = pa.table(
        {
            "llm": np.repeat(["m1", "m2"], n // 2),
            "qset": ["q"] * n,
            "stated_confidence": conf,
            "correct": (rng.random(n) < conf - 0.1).astype(np.int8),
        }
    )
    path = tmp_path / "s.parquet"
    pq.write_table(data, path)
    out = tmp_path / "stated.html"
    result = CliRunner().invoke(
        app,
        [
            "stated",
            "audit",
            str(path),
            "--sources",
            "stated_confidence",
            "--n-boot",
            "50",
            "--n-sims",
            "50",
            "--html",
            str(out),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    assert text.count("<img") == 2  # one reliability diagram per group
    assert "m1 / q" in text and "m2 / q" in text
    assert "https://" not in text


def test_the_stated_table_reads_at_80_columns() -> None:
    """The shipped 11-model file: one block per model and question set whose lines fit in 80
    columns, each model's name whole on its heading; --wide has every column."""
    shipped = Path(__file__).resolve().parents[1] / "examples" / "data"
    path = shipped / "llm_stated_confidence.parquet"
    narrow = CliRunner(env={"COLUMNS": "80"}).invoke(
        app, ["stated", "audit", str(path), "--n-boot", "20", "--n-sims", "20"]
    )
    assert narrow.exit_code == 0, narrow.output
    lines = narrow.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    models = pq.read_table(path, columns=["llm"]).column("llm").unique().to_pylist()
    for model in models:
        assert any(line.startswith(f"llm {model}, qset ") for line in lines), model
    assert "Brier " not in narrow.stdout.replace("adds Brier, NLL", "")
    wide = CliRunner(env={"COLUMNS": "240"}).invoke(
        app, ["stated", "audit", str(path), "--n-boot", "20", "--n-sims", "20", "--wide"]
    )
    assert wide.exit_code == 0, wide.output
    assert all(name in wide.stdout for name in ("Brier", "NLL", "x0.05", "top values"))
