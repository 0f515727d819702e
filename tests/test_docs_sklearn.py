"""docs/sklearn.md cannot drift: its ``python`` blocks run as one doctest, the way
tests/test_tutorial.py runs the tutorial's."""

from __future__ import annotations

import doctest
import warnings
from pathlib import Path

import pytest

pytest.importorskip("sklearn")
pytest.importorskip("matplotlib")

from tests.test_tutorial import FLAGS, python_source  # noqa: E402

PAGE = Path(__file__).resolve().parents[1] / "docs" / "sklearn.md"


def test_the_sklearn_page_runs_as_a_doctest():
    text = PAGE.read_text(encoding="utf-8")
    test = doctest.DocTestParser().get_doctest(
        python_source(text), {"__name__": "sklearn_page"}, "sklearn_page", str(PAGE), 0
    )
    assert len(test.examples) >= 25
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    messages: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # sklearn's convergence notes
        runner.run(test, out=messages.append)
    assert runner.failures == 0, "".join(messages)


def test_the_page_shows_the_benchmark():
    text = PAGE.read_text(encoding="utf-8")
    assert "benchmarks/sklearn_heldout.py" in text
    assert "| dataset | estimator | calibration | ECE | log loss |" in text
