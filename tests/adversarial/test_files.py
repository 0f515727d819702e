"""Every bad file through every engine: the rules of docs/file-rules.md, one decision each.

Each case writes a small file and runs it through the memory, stream, DuckDB and Spark engines;
all four must decide alike: accept it with the numbers worked out by hand (forecasts, correct
predictions, the Brier sum), or refuse it with a message that matches the case's core. The
cases are the findings of issue 12 (NaN in every read column, number forms, TRUE/FALSE, quoting,
names, encodings, JSON depth, formats, FIFOs) and their neighbours.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import calibkit as ck
from calibkit import InputError
from calibkit.cli import app
from calibkit.engines import summarize_with_engine
from calibkit.engines._plan import Binning
from calibkit.engines._sql_cells import DUCKDB, SPARK, Column
from calibkit.engines.spark import SparkEngine
from calibkit.io import _rules as rules
from calibkit.io._rules import line_depth, shown

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cli_helpers import assert_bad_input  # noqa: E402

ENGINES = ("memory", "stream", "duckdb", "spark")
PIPED = ("memory", "stream")  # pyarrow's engines: the crashing case runs in a subprocess
BINARY = {"probs": "p", "label": "y"}
TOP1 = {"confidence": "confidence", "prediction": "prediction", "label": "label"}
OUTCOME = {"confidence": "confidence", "correct": "correct"}

#: The binary forecasts most cases write: p = P(y = 1) and y. By hand: the prediction
#: (p >= 0.5) is right for 0.2 (y = 0) and 0.9 (y = 1) only; the Brier sum is
#: 0.7^2 + 0.6^2 + 0.2^2 + 0.1^2 = 0.49 + 0.36 + 0.04 + 0.01.
P, Y = (0.3, 0.6, 0.2, 0.9), (1, 0, 0, 1)
N, RIGHT, BRIER = 4, 2, 0.90


def text(name: str, content: str | bytes) -> Callable[[Path], Path]:
    def write(folder: Path) -> Path:
        path = folder / name
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        return path

    return write


def csv(*cells: tuple[Any, Any], header: str = "p,y", name: str = "p.csv") -> Callable:
    """The four forecasts as CSV, with cells replaced where ``cells`` says (row, (p, y))."""
    rows = [[str(p), str(y)] for p, y in zip(P, Y, strict=True)]
    for i, (p, y) in cells:
        rows[i] = [str(p), str(y)]
    return text(name, header + "\n" + "".join(",".join(r) + "\n" for r in rows))


def parquet(columns: dict[str, Any], name: str = "p.parquet") -> Callable[[Path], Path]:
    def write(folder: Path) -> Path:
        path = folder / name
        pq.write_table(pa.table(columns), path)
        return path

    return write


def fifo(folder: Path) -> Path:
    """A named pipe holding the plain forecasts: for 10 s a thread writes them to every reader
    that opens it, so a reader that does not refuse the pipe fails the test instead of
    blocking it forever."""
    path = folder / "pipe.csv"
    os.mkfifo(path)
    data = ("p,y\n" + "".join(f"{p},{y}\n" for p, y in zip(P, Y, strict=True))).encode()

    def feed() -> None:  # every reader that opens the pipe in the next 10 s gets the data
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline:
            try:
                fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # no reader now
                time.sleep(0.02)
                continue
            with contextlib.suppress(OSError):
                os.write(fd, data)
            os.close(fd)

    threading.Thread(target=feed, daemon=True).start()
    return path


def npz_with_text_member(folder: Path) -> Path:
    path = folder / "p.npz"
    with zipfile.ZipFile(path, "w") as archive:
        with archive.open("p.npy", "w") as member:
            np.save(member, np.array(P))
        archive.writestr("y.txt", "1\n0\n0\n1\n")
    return path


def deep_json(folder: Path) -> Path:
    """Nesting pyarrow's JSON reader crashes on (a segmentation fault), in an unused field."""
    path = folder / "p.jsonl"
    deep = '{"a": ' * 100_000 + "1" + "}" * 100_000
    lines = [f'{{"p": {p}, "y": {y}, "x": {deep if i == 2 else 1}}}' for i, (p, y) in
             enumerate(zip(P, Y, strict=True))]  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    return path


NAN = float("nan")
Q = "\u0022"  # a double quote, to keep the CSV texts below readable


@dataclass(frozen=True)
class Case:
    """A file, the columns to read, and the decision every engine must reach: refuse with a
    message matching ``core``, or (``core`` None) accept with ``n`` forecasts of which
    ``right`` are right, Brier sum ``brier``."""

    write: Callable[[Path], Path]
    columns: dict[str, Any] = field(default_factory=lambda: dict(BINARY))
    core: str | None = None
    n: int = N
    right: int = RIGHT
    brier: float | None = BRIER
    engines: tuple[str, ...] = ENGINES
    isolated: tuple[str, ...] = ()


CASES: dict[str, Case] = {
    # ------------------------------------------------------------------ accepted forms
    "plain": Case(csv()),
    "plus sign": Case(csv((0, ("+0.3", 1)), (1, ("+6e-1", "+0")))),
    "spaces around cells": Case(csv((0, ("0.3 ", " 1")), (1, (" 0.6", "0 ")))),
    "number forms": Case(csv((0, (".3", "1.0")), (1, ("6.e-1", "0e5")), (3, ("0.90", "1.")))),
    "true/false labels": Case(csv((0, (0.3, "true")), (1, (0.6, "FALSE")), (2, (0.2, "False")))),
    "true/false outcomes": Case(
        text("o.csv", "confidence,correct\n0.3,false\n0.6,TRUE\n0.8,true\n0.9,1\n"),
        OUTCOME,
        right=4,  # each confidence is on the side of 0.5 its outcome is: 0.3 false, 0.6 true...
        brier=0.09 + 0.16 + 0.04 + 0.01,
    ),
    "doubled quotes, delimiter and line break in quotes": Case(
        text(
            "q.csv",
            f"p,y,note\n0.3,1,{Q}a {Q}{Q}b{Q}{Q}, c{Q}\n0.6,0,{Q}two\nlines{Q}\n0.2,0,\n0.9,1,x\n",
        )
    ),
    "unnamed index column (pandas)": Case(
        text("i.csv", ",p,y\n0,0.3,1\n1,0.6,0\n2,0.2,0\n3,0.9,1\n")
    ),
    "blank line": Case(text("b.csv", "p,y\n0.3,1\n0.6,0\n\n0.2,0\n0.9,1\n")),
    "text classes compared as text": Case(
        text(
            "t.csv",
            "confidence,prediction,label\n0.9, cat,cat\n0.8,dog,cat\n0.7,eel ,eel\n0.6,Cat,cat\n",
        ),
        TOP1,
        right=2,
        brier=None,
    ),
    "numbers compared by value": Case(
        text(
            "v.csv",
            "confidence,prediction,label\n0.9,1,1.0\n0.8,2,+2\n0.7,3,3e0\n0.6,4,5\n",
        ),
        TOP1,
        right=3,
        brier=None,
    ),
    "format told, not the extension": Case(
        parquet({"p": list(P), "y": list(Y)}, name="p.data"), {**BINARY, "format": "parquet"}
    ),
    # ------------------------------------------------------------------ NaN and missing values
    "NaN probability (Parquet)": Case(
        parquet({"p": [0.3, NAN, 0.2, 0.9], "y": list(Y)}), core=r"column 'p' has .*NaN"
    ),
    "NaN label (Parquet)": Case(
        parquet({"p": list(P), "y": [1.0, 0.0, NAN, 1.0]}), core=r"column 'y' has .*NaN"
    ),
    "NaN logit (Parquet)": Case(
        parquet({"s": [0.3, -1.0, NAN, 2.0], "y": list(Y)}),
        {"logits": "s", "label": "y"},
        core=r"column 's' has .*NaN",
    ),
    "NaN class probability (Parquet)": Case(
        parquet({"prob_0": [0.5, 0.2, 0.7], "prob_1": [0.5, NAN, 0.3], "label": [0, 1, 0]}),
        None,
        core=r"column 'prob_1' has .*NaN",
    ),
    "NaN confidence (Parquet)": Case(
        parquet({"confidence": [0.9, NAN, 0.7], "correct": [1, 0, 1]}),
        OUTCOME,
        core=r"column 'confidence' has .*NaN",
    ),
    "NaN outcome (Parquet)": Case(
        parquet({"confidence": [0.9, 0.8, 0.7], "correct": [1.0, NAN, 1.0]}),
        OUTCOME,
        core=r"column 'correct' has .*NaN",
    ),
    "NaN prediction and label (Parquet, issue 12 item 2)": Case(
        parquet(
            {
                "confidence": [0.9, 0.8, 0.7, 0.6],
                "prediction": [1.0, NAN, NAN, 2.0],
                "label": [1.0, NAN, 2.0, NAN],
            }
        ),
        TOP1,
        core=r"column 'prediction' has .*NaN",
    ),
    "NaN label beside a prediction (Parquet)": Case(
        parquet({"confidence": [0.9, 0.8], "prediction": [1.0, 2.0], "label": [1.0, NAN]}),
        TOP1,
        core=r"column 'label' has .*NaN",
    ),
    "nan text probability (CSV)": Case(csv((1, ("nan", 0))), core=r"column 'p' has .*NaN"),
    "NaN text label (CSV)": Case(csv((1, (0.6, "NaN"))), core=r"column 'y' has .*NaN"),
    "nan text prediction (CSV)": Case(
        text("n.csv", "confidence,prediction,label\n0.9,1,1\n0.8,nan,2\n"),
        TOP1,
        core=r"column 'prediction' has .*NaN",
    ),
    "nan text outcome (CSV)": Case(
        text("n.csv", "confidence,correct\n0.9,1\n0.8,-nan\n"),
        OUTCOME,
        core=r"column 'correct' has .*NaN",
    ),
    "NA text (CSV)": Case(csv((2, ("NA", 0))), core=r"column 'p' has (\d+ )?missing value"),
    "empty label cell (CSV)": Case(
        csv((2, (0.2, ""))), core=r"column 'y' has (\d+ )?missing value"
    ),
    "null label (JSON lines)": Case(
        text("n.jsonl", '{"p": 0.3, "y": 1}\n{"p": 0.6, "y": null}\n'),
        core=r"column 'y' has (\d+ )?missing value",
    ),
    # ------------------------------------------------------------------ refused forms
    "boolean confidences (CSV)": Case(
        text("b.csv", "confidence,correct\ntrue,1\nfalse,0\ntrue,1\n"),
        OUTCOME,
        core=r"column 'confidence' must hold numbers",
    ),
    "boolean confidences (Parquet)": Case(
        parquet({"confidence": [True, False, True], "correct": [1, 0, 1]}),
        OUTCOME,
        core=r"column 'confidence' .*must hold numbers; it holds bool",
    ),
    "a line that looks like a comment": Case(
        csv((1, ("#0.6", 0))), core=r"column 'p' must hold numbers; it holds text"
    ),
    "decimal comma in quotes": Case(
        csv((1, (f"{Q}0,6{Q}", 0))), core=r"column 'p' must hold numbers; it holds text"
    ),
    "control characters in a value": Case(
        csv((1, ("\x1b[2J", 0))), core=r"column 'p' must hold numbers; it holds text"
    ),
    "infinite probability": Case(csv((1, ("inf", 0))), core=r"\[0, 1\]"),
    "label 1e20": Case(csv((0, (0.3, "1e20"))), core=r"(must be|not) 0 or 1"),
    "duplicated label column": Case(
        text("d.csv", "p,y,y\n0.3,1,0\n0.6,0,1\n"), core=r"has 2 columns named 'y'"
    ),
    "label column twice by case": Case(
        text("d.csv", "p,Y,y\n0.3,1,0\n0.6,0,1\n"), core=r"has 2 columns named 'Y' and 'y'"
    ),
    "backslash-escaped quote": Case(
        text("e.csv", f"p,y,note\n0.3,1,{Q}a \\{Q}b\\{Q} c{Q}\n0.6,0,x\n"),
        core=r"a quote inside a quoted field is written twice",
    ),
    "backslash-escaped quote before a comma": Case(
        text("e.csv", f"p,y,note\n0.3,1,{Q}a \\{Q}b, c\\{Q}{Q}\n0.6,0,x\n"),
        core=r"a quote inside a quoted field is written twice",
    ),
    "a row with one field too many": Case(
        text("r.csv", "p,y\n" + "0.5,1\n" * 3000 + "0.3,1,9\n0.6,0\n"), core=r"could not read"
    ),
    "header only": Case(text("h.csv", "p,y\n"), core=r"no rows|no forecasts"),
    "empty file": Case(text("e.csv", ""), core=r"Empty CSV file"),
    "non-UTF-8 header": Case(
        text("u.csv", b"p,y,\xffz\n0.3,1,1\n0.6,0,1\n"), core=r"header of .* is not UTF-8 text"
    ),
    "control characters in a column name": Case(
        text("c.csv", "p\x1b[31m,y\n0.3,1\n"),
        {"probs": "q", "label": "y"},
        core=r"has no column 'q'; columns: p\\x1b\[31m, y",
    ),
    "deeply nested JSON lines": Case(
        deep_json, core=r"line 3 of .* nests JSON 100001 levels deep", isolated=PIPED
    ),
    "Parquet read as CSV": Case(
        parquet({"p": list(P), "y": list(Y)}),
        {**BINARY, "format": "csv"},
        core=r"is not CSV text: it is a Parquet file",
    ),
    "CSV read as Parquet": Case(csv(), {**BINARY, "format": "parquet"}, core=r"could not read"),
    "a FIFO": Case(fifo, core=r"is a FIFO \(named pipe\); calibkit reads regular files"),
    "an NPZ member that is not .npy": Case(
        npz_with_text_member,
        {"probs": "p", "label": "y.txt"},
        core=r"member 'y.txt' of .* is not a NumPy array",
        engines=("memory",),
    ),
}


def decide(engine: str, path: Path, columns: dict[str, Any] | None, spark: Any) -> Any:
    """The engine's summary of the file, or the message of its InputError."""
    options = dict(columns or {})
    try:
        if engine == "spark":
            return SparkEngine(str(path), columns=options, spark=spark).summarize(
                Binning(), where="audit"
            )
        return summarize_with_engine(
            str(path) if engine == "duckdb" else path, engine=engine, columns=options
        )
    except InputError as exc:
        return str(exc)


def decide_isolated(engine: str, path: Path, columns: dict[str, Any] | None) -> Any:
    """:func:`decide` in a fresh interpreter, so that a crash (a segmentation fault in a
    reader) fails this test instead of killing the test session."""
    code = (
        "import json, sys\n"
        "from calibkit import InputError\n"
        "from calibkit.engines import summarize_with_engine\n"
        "path, engine, columns = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])\n"
        "try:\n"
        "    s = summarize_with_engine(path, engine=engine, columns=columns)\n"
        "    print(json.dumps({'n': s.n}))\n"
        "except InputError as exc:\n"
        "    print(json.dumps({'error': str(exc)}))\n"
    )
    src = str(Path(ck.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run(
        [sys.executable, "-c", code, str(path), engine, json.dumps(columns or {})],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, f"{engine} died with status {done.returncode}: {done.stderr}"
    answer = json.loads(done.stdout)
    return answer.get("error", answer)


@pytest.mark.parametrize("name", list(CASES))
def test_every_engine_decides_alike(name: str, tmp_path: Path, spark: Any) -> None:
    case = CASES[name]
    path = case.write(tmp_path)
    got = {
        engine: decide_isolated(engine, path, case.columns)
        if engine in case.isolated
        else decide(engine, path, case.columns, spark)
        for engine in case.engines
    }
    refused = {e: g for e, g in got.items() if isinstance(g, str)}
    if case.core is None:
        assert not refused, refused
        for engine, s in got.items():
            assert (s.n, s.n_correct) == (case.n, case.right), engine
            if case.brier is not None:
                assert s.brier_sum == pytest.approx(case.brier, rel=1e-12), engine
        first = got[case.engines[0]]
        for engine, s in got.items():  # and equal to one another, bin by bin
            assert s.stats.count.tolist() == first.stats.count.tolist(), engine
            assert s.nll_sum == pytest.approx(first.nll_sum, rel=1e-12), engine
        return
    assert refused.keys() == got.keys(), f"accepted by {set(got) - set(refused)}: {refused}"
    for engine, message in refused.items():
        assert re.search(case.core, message), f"{engine}: {message}"
        assert "\x1b" not in message, engine  # echoed names and values are escaped
        assert "9223372036854775808" not in message, engine


def test_the_cases_fail_without_the_rules(tmp_path: Path) -> None:
    """The comparison sees a difference: the filed NaN file gives different accuracies when the
    prediction == label comparison is left to numpy and to SQL, which the rules now refuse."""
    pred, truth = np.array([1.0, NAN, NAN, 2.0]), np.array([1.0, NAN, 2.0, NAN])
    assert int((pred == truth).sum()) == 1  # numpy: NaN == NaN is false; SQL counts it as 2
    path = CASES["NaN prediction and label (Parquet, issue 12 item 2)"].write(tmp_path)
    with pytest.raises(InputError, match="2 values are NaN"):
        ck.read_predictions(path)


def test_a_large_label_is_shown_as_it_is() -> None:
    """A label of 1e20 was cast to int64 before the range check (-9223372036854775808)."""
    with pytest.raises(InputError, match=r"first at index 1: 1e\+20\."):
        ck.audit(np.array([0.2, 0.7]), np.array([0.0, 1e20]))


def test_depth_counts_brackets_outside_strings_line_by_line() -> None:
    assert line_depth(b'{"a": "[[[[[[", "b": [1]}\n[[]]\n') == (2, 0)
    assert line_depth(b"[1]\n{[{}]}\n[") == (3, 1)
    # a line left open does not carry its depth into the next one
    assert line_depth(b"[[[[\n[1]\n") == (4, 0)
    assert line_depth(b'"\\"[[[["\n') == (0, 0)


#: Cells around the edges of the number rule: what pyarrow's own cast (the fast path of
#: parse_cells) takes must be exactly what the rule takes, or the engines would differ.
FORMS = ["0.3", "+.5", "5.", "-0", "1e+5", "1E-5", "0001", "1e400", "inf", "-Infinity", "NaN",
         "+nan", "1_000", "0x10", "1d", "1.0f", "1.5e", "e5", ".", "-", "+", "1,5", "1.2.3",
         "nan(1)", "snan", "infinit", "\u0661", "\uff11", "30%", "--1", ".e5", "\u00a01"]  # fmt: skip


@pytest.mark.parametrize("form", FORMS)
def test_a_cell_is_read_by_the_rule_whichever_path(form: str) -> None:
    words = rules.NAN + rules.POSITIVE_INFINITY + rules.NEGATIVE_INFINITY
    admitted = bool(re.fullmatch(rules.NUMBER, form)) or form.lower() in words
    alone = rules.parse_cells(pa.array([form]), "numeric")  # pyarrow's cast, if it takes it
    beside_text = rules.parse_cells(pa.array([form, "text"]), "numeric")  # the patterns
    for cells in (alone, beside_text):
        assert bool(cells.bad[0]) is not admitted, form
        if admitted and not cells.nan[0]:
            assert cells.number[0] == float(form.lower().replace("infinity", "inf")), form


def short_strings() -> list[str]:
    """Every string of up to four of the characters numbers are written with (54,240), and
    the forms above: where an engine's own cast and the rule could part."""
    chars = rules.NUMBER_CHARACTERS
    out = [""]
    for _ in range(4):
        out += [s + c for s in out[-(len(chars) ** _) :] for c in chars]
    return sorted(set(out[1:]) | set(FORMS) | {"\t1", "1\t", "1.5_0", "+-1e5"})


def expected(cell: str) -> tuple[bool, float | None]:
    """(admitted, value) by the rule, for a cell without spaces around it."""
    words = rules.NAN + rules.POSITIVE_INFINITY + rules.NEGATIVE_INFINITY
    if re.fullmatch(rules.NUMBER, cell) or cell.lower() in words:
        value = float(cell.lower().replace("infinity", "inf"))
        return True, None if np.isnan(value) else value
    return False, None


def test_pyarrow_casts_exactly_the_numbers_of_the_rule() -> None:
    """parse_cells takes a column pyarrow casts whole as numbers: that cast must take exactly
    the rule's forms (and the NaN and infinity words)."""
    for cell in short_strings():
        try:
            value = pc.cast(pa.array([cell]), pa.float64())[0].as_py()
        except pa.ArrowInvalid:
            value = None
        admitted, number = expected(cell)
        took = value is not None and not np.isnan(value)
        assert took is (admitted and number is not None), cell
        if took:
            assert value == number, cell


def test_the_sql_engines_read_a_cell_by_the_rule(spark: Any) -> None:
    """DuckDB and Spark read each cell as the rule says (their own casts trim tabs, and take
    1_000, 1d or +-1, which the rule does not): the value, and whether the cell is refused."""
    import duckdb

    cells = short_strings()
    for dialect in (DUCKDB, SPARK):
        col = Column("p", "numeric", "cell", dialect, 0)
        sql = f"SELECT p, {col.value}, {col.flags()['x']} FROM cells"
        if dialect is DUCKDB:
            con = duckdb.connect()
            con.execute("CREATE TABLE cells (p VARCHAR)")
            con.executemany("INSERT INTO cells VALUES (?)", [[c] for c in cells])
            rows = con.execute(sql).fetchall()
        else:
            frame = spark.createDataFrame(pa.table({"p": cells}))
            frame.createOrReplaceTempView("cells")
            rows = [tuple(r) for r in spark.sql(sql).collect()]
        assert len(rows) == len(cells)
        for cell, value, bad in rows:
            admitted, number = expected(cell)
            assert bool(bad) is not admitted, (dialect.name, cell)
            if number is not None:
                assert value == number, (dialect.name, cell)


def test_control_characters_are_escaped() -> None:
    assert shown("a\x1b[31mb\x07\u202e\x9b") == "a\\x1b[31mb\\x07\\u202e\\x9b"
    assert shown("caf\u00e9 \U0001f600") == "caf\u00e9 \U0001f600"


def test_a_stream_totals_a_problem_over_every_batch(tmp_path: Path, monkeypatch: Any) -> None:
    """Read in batches of 3 rows, the stream counts the missing cells of the whole file and
    names the first row of the file, as reading it whole does."""
    import calibkit.io

    whole = calibkit.io.read_batches
    monkeypatch.setattr(
        calibkit.io,
        "read_batches",
        lambda path, fmt, plan: whole(path, fmt, plan, batch_rows=3),
    )
    rows = ["0.5,1"] * 10
    rows[4] = rows[8] = rows[9] = "NA,1"
    path = text("m.csv", "p,y\n" + "\n".join(rows) + "\n")(tmp_path)
    expected = r"column 'p' has 3 missing values \(null/empty/NaN\), first at row 4 .*of 10 rows"
    with pytest.raises(InputError, match=expected):
        summarize_with_engine(path, engine="stream", columns=BINARY)
    with pytest.raises(InputError, match=expected):
        ck.read_predictions(path, **BINARY)


# --------------------------------------------------------------------------- command line

runner = CliRunner()

#: (case, what the one line on stderr must say) for the command line, on two engines.
CLI = {
    "boolean confidences (CSV)": "column 'confidence' must hold numbers",
    "duplicated label column": "has 2 columns named 'y'",
    "non-UTF-8 header": "is not UTF-8 text: byte 0xff at position 4",
    "control characters in a column name": "columns: p\\x1b[31m, y",
    "Parquet read as CSV": "is not CSV text: it is a Parquet file",
    "a FIFO": "is a FIFO (named pipe)",
    "NaN prediction and label (Parquet, issue 12 item 2)": "'prediction' has",
}


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
@pytest.mark.parametrize("name", list(CLI))
def test_command_line_one_line(name: str, engine: str, tmp_path: Path) -> None:
    case = CASES[name]
    path = case.write(tmp_path)
    args = ["audit", str(path), "--engine", engine]
    for option, value in case.columns.items():
        args += [f"--{option}", value]
    result = runner.invoke(app, args)
    assert_bad_input(result, CLI[name])
    assert "\x1b" not in result.stderr


def test_command_line_npz_member(tmp_path: Path) -> None:
    path = npz_with_text_member(tmp_path)
    result = runner.invoke(app, ["audit", str(path), "--probs", "p", "--label", "y.txt"])
    assert_bad_input(result, "member 'y.txt' of")


def test_command_line_spark_error_is_one_line(tmp_path: Path) -> None:
    """Through the command line, a file Spark fails on (a row with a field too many, found by
    Spark's reader itself) prints one line on stderr: Spark's log is quiet in the session the
    command starts. Run in a fresh process, as a user runs it (the JVM writes to the process's
    stderr directly, which no in-process runner sees)."""
    path = CASES["a row with one field too many"].write(tmp_path)
    src = str(Path(ck.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    code = "from calibkit.cli import main; main()"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "audit",
            str(path),
            "--engine",
            "spark",
            "--probs",
            "p",
            "--label",
            "y",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    lines = done.stderr.splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("calibkit: error: audit: Spark could not read"), lines[0]
    assert "Malformed CSV record" in lines[0]
