"""calibkit audit FILE --by COLUMN: the table of groups, --json, --html with the groups, and the
one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from tests.cli_helpers import assert_bad_input
from typer.testing import CliRunner

import calibkit as ck
from calibkit.cli import app

runner = CliRunner()
FAST = ["--n-boot", "50", "--n-sims", "200"]


@pytest.fixture
def preds(tmp_path):
    rng = np.random.default_rng(11)
    n = 1200
    p = rng.uniform(0.05, 0.95, n)
    site = np.repeat(["north", "south", "west"], n // 3)
    y = (rng.random(n) < np.where(site == "west", p**2, p)).astype(int)  # west overconfident
    path = tmp_path / "preds.csv"
    pd.DataFrame({"confidence": p, "correct": y, "site": site}).to_csv(path, index=False)
    return path, p, y, site


def test_by_prints_the_table_of_groups_and_the_verdict(preds):
    path, p, y, site = preds
    result = runner.invoke(app, ["audit", str(path), "--by", "site", *FAST])
    assert result.exit_code == 0, result.output
    out = result.stdout
    expected = ck.audit(p, y, by=site, n_boot=50, n_sims=200)
    assert expected.flagged == ("west",)
    west = next(line for line in out.splitlines() if line.startswith("west"))
    assert f"{expected.groups['west'].ece:.4f}" in west and "BEYOND NOISE" in west
    assert "north" in out and "all" in out
    assert "1 of 3 groups miscalibrated beyond noise: west" in " ".join(out.split())


def test_by_json_is_the_grouped_audit(preds):
    path, p, y, site = preds
    result = runner.invoke(app, ["audit", str(path), "--by", "site", "--json", *FAST])
    assert result.exit_code == 0, result.output
    d = json.loads(result.stdout)
    expected = ck.audit(p, y, by=site, n_boot=50, n_sims=200)
    assert d["by"] == "site" and d["flagged"] == ["west"]
    assert [g["n"] for g in d["groups"]] == [400, 400, 400]
    assert [g["ece"] for g in d["groups"]] == [a.ece for a in expected.groups.values()]
    assert d["pooled"]["ece"] == expected.pooled.ece


def test_by_html_shows_each_group(preds, tmp_path):
    path = preds[0]
    html = tmp_path / "report.html"
    result = runner.invoke(app, ["audit", str(path), "--by", "site", "--html", str(html), *FAST])
    assert result.exit_code == 0, result.output
    text = html.read_text(encoding="utf-8")
    assert 'id="groups"' in text and "Calibration by site" in text
    assert text.count('<td class="l group">') == 4  # three groups and all rows
    assert '<td class="flag">BEYOND NOISE</td>' in text
    assert 'id="reliability"' in text  # the audit of all rows too


def test_by_quiet_prints_the_verdict(preds):
    result = runner.invoke(app, ["audit", str(preds[0]), "--by", "site", "--quiet", *FAST])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("1 of 3 groups miscalibrated beyond noise: west")


def test_by_bad_input_is_one_line(preds, tmp_path):
    path = preds[0]
    assert_bad_input(
        runner.invoke(app, ["audit", str(path), "--by", "region"]), "by='region' is neither a"
    )
    assert_bad_input(
        runner.invoke(app, ["audit", str(path), "--by", "site", "--engine", "duckdb"]),
        "--by runs on the memory engine",
    )
    assert_bad_input(
        runner.invoke(app, ["audit", str(path), "--by", "site", "--record", str(tmp_path / "r")]),
        "--record writes the record of one audit",
    )
    holed = tmp_path / "holed.csv"
    df = pd.read_csv(path)
    df.loc[5, "site"] = None
    df.to_csv(holed, index=False)
    assert_bad_input(
        runner.invoke(app, ["audit", str(holed), "--by", "site"]),
        "audit: column 'site' has 1 missing value (null/empty/NaN), first at row 5",
    )


def test_the_segments_page_table_is_what_the_command_prints():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    data = root / "examples" / "data" / "llm_stated_confidence.parquet"
    args = ["audit", str(data), "--confidence", "stated_confidence", "--correct", "correct"]
    result = runner.invoke(app, [*args, "--by", "qset"])
    assert result.exit_code == 0, result.output
    table = [line.rstrip() for line in result.stdout.splitlines()[2:9]]
    assert table[0].startswith("group") and table[-1].startswith("all")
    page = (root / "docs" / "segments.md").read_text(encoding="utf-8")
    assert "\n".join(table) in page
