"""docs/tutorial.md cannot drift: it is one page of ``tests/test_docs.py`` (every ``$ ``
command of its ``console`` blocks run and its output compared with the page, its ``python``
blocks run as doctests, in the page's order, in a scratch folder that reads like the repository
root), with the checks that are the tutorial's own: which commands it teaches, what it writes,
and the warning it promises."""

from __future__ import annotations

import warnings

from calibkit import CalibkitWarning
from doc_blocks import ROOT, console_commands, run_page, scratch_folder

TUTORIAL = ROOT / "docs" / "tutorial.md"


def test_tutorial_is_linked_from_the_readme():
    assert "docs/tutorial.md" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_tutorial_teaches_every_command():
    commands = console_commands(TUTORIAL.read_text(encoding="utf-8"))
    assert len(commands) >= 10
    assert {c.command.split()[1] for c in commands if c.command.startswith("calibkit ")} >= {
        "audit",
        "fit",
        "apply",
        "decide",
        "compare",
    }


def test_tutorial_runs_and_writes_what_it_says(tmp_path, monkeypatch):
    monkeypatch.chdir(scratch_folder(tmp_path))
    monkeypatch.setenv("COLUMNS", "100")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CalibkitWarning)  # other filters stay as configured
        failures = run_page(TUTORIAL, TUTORIAL.read_text(encoding="utf-8"))
    assert not failures, "\n\n".join(failures)
    # the page says that the quantile ECE warns about a collapsed bin
    assert any("quantile bins collapsed" in str(w.message) for w in caught)
    for written in ("temperature.json", "calibrated.parquet", "report.html", "test-record.json"):
        assert (tmp_path / "out" / written).is_file(), written
    for written in ("test-record-python.json", "report-python.html"):
        assert (tmp_path / "out" / written).is_file(), written
