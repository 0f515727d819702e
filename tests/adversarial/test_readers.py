"""Random bytes and random nested JSON handed to every file reader: each either reads a valid
file or raises :class:`calibkit.InputError`; nothing else (no crash, no raw library error).
The time each input takes is measured by ``benchmarks/bench_bad_input.py``, not asserted here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import calibkit as ck
from calibkit import InputError

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

json_values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False) | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=30,
)


def _only_input_errors(path: Path, **options: object) -> None:
    for call in (
        lambda: ck.read_predictions(path, **options),
        lambda: ck.audit(str(path), engine="memory", n_boot=10, n_sims=10),
    ):
        try:
            call()
        except InputError:
            pass


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".jsonl", ".parquet", ".npz"])
@SETTINGS
@given(data=st.binary(max_size=600))
def test_random_bytes_give_a_result_or_an_input_error(tmp_path, suffix, data) -> None:
    path = tmp_path / f"random{suffix}"
    path.write_bytes(data)
    _only_input_errors(path)


@SETTINGS
@given(
    header=st.lists(st.text(min_size=1, max_size=6), min_size=1, max_size=4),
    cells=st.lists(st.lists(st.text(max_size=6), min_size=1, max_size=4), max_size=6),
)
def test_random_text_tables_give_a_result_or_an_input_error(tmp_path, header, cells) -> None:
    path = tmp_path / "table.csv"
    rows = [",".join(header)] + [",".join(row) for row in cells]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8", errors="surrogatepass")
    _only_input_errors(path)


@SETTINGS
@given(lines=st.lists(json_values, min_size=1, max_size=5), depth=st.integers(0, 120))
def test_random_json_lines_give_a_result_or_an_input_error(tmp_path, lines, depth) -> None:
    path = tmp_path / "lines.jsonl"
    body = [json.dumps({"p": 0.5, "label": 1, "x": value}) for value in lines]
    body.append('{"p": 0.5, "label": 0, "deep": ' + "[" * depth + "]" * depth + "}")
    path.write_text("\n".join(body) + "\n")
    _only_input_errors(path)
