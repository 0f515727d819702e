"""What every command shares: the app, its options, reading the engine's input, warnings,
one-line errors, output checks and atomic writes."""

from __future__ import annotations

import json
import warnings
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from .._errors import InputError, MissingExtraError
from .._extras import require
from .._files import check_outputs
from .._json import jsonable
from .._version import __version__

EXIT_BAD_INPUT = 2

app = typer.Typer(
    name="calibkit",
    help="Audit whether a model's confidence means what it says.",
    add_completion=True,
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)


class Strategy(StrEnum):
    uniform = "uniform"
    quantile = "quantile"


class Closed(StrEnum):
    right = "right"
    left = "left"


class Interval(StrEnum):
    wilson = "wilson"
    clopper_pearson = "clopper-pearson"
    jeffreys = "jeffreys"
    none = "none"


def _fail(message: str) -> NoReturn:
    """The one line on stderr (control characters of echoed names and values escaped), exit 2."""
    from ..io import shown

    typer.echo(f"calibkit: error: {shown(' '.join(message.split()))}", err=True)
    raise typer.Exit(EXIT_BAD_INPUT)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"calibkit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_show_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Audit whether a model's confidence means what it says."""


_COLUMNS = "Columns"
_BINNING = "Binning and intervals"
_NOISE = "Noise floor and bootstrap"
_RECORD = "Calibration record"

QuietOption = Annotated[
    bool,
    typer.Option("--quiet", "-q", help="Print only the one-line verdict (no tables)."),
]
RequireSignatureOption = Annotated[
    bool,
    typer.Option(
        "--require-signature",
        help="Refuse a record that is not signed with the key in CALIBKIT_RECORD_KEY (for "
        "records from across a trust boundary: a digest alone does not stop a forger).",
    ),
]
HtmlOption = Annotated[
    Path | None,
    typer.Option(
        help="Write a self-contained HTML report (figures embedded) here.", show_default=False
    ),
]

LabelOption = Annotated[
    str | None,
    typer.Option(help="Label column (class indices 0..C-1).", rich_help_panel=_COLUMNS),
]
ProbsOption = Annotated[
    str | None,
    typer.Option(
        help="Probability columns: names, comma-separated, or a quoted glob like 'prob_*' "
        "(.npz: a 2-D array).",
        rich_help_panel=_COLUMNS,
    ),
]
LogitsOption = Annotated[
    str | None,
    typer.Option(
        help="Logit columns, as --probs (one column: binary scores).", rich_help_panel=_COLUMNS
    ),
]
ConfidenceOption = Annotated[
    str | None,
    typer.Option(
        help="Top-label confidence column (a binary forecast of 'correct').",
        rich_help_panel=_COLUMNS,
    ),
]
ScoredConfidenceOption = Annotated[
    str | None,
    typer.Option(
        help="Confidence column, with --correct, or with --prediction and --label.",
        rich_help_panel=_COLUMNS,
    ),
]
CorrectOption = Annotated[
    str | None,
    typer.Option(
        help="Outcome column: 1/0 or TRUE/FALSE (the prediction was correct).",
        rich_help_panel=_COLUMNS,
    ),
]
PredictionOption = Annotated[
    str | None,
    typer.Option(help="Predicted-class column, compared with --label.", rich_help_panel=_COLUMNS),
]
WeightOption = Annotated[
    str | None,
    typer.Option(
        metavar="COLUMN",
        help="Column of sample weights (one non-negative number a row, not all zero): every "
        "measure is weighted; the table shows each bin's raw count beside its weight.",
        show_default=False,
        rich_help_panel=_COLUMNS,
    ),
]
PositiveOption = Annotated[
    str | None,
    typer.Option(
        metavar="VALUE",
        help="With one score column (P(label = VALUE)): the label value that is the event, "
        "e.g. --positive malignant; the outcome is label == VALUE. Needed when the labels are "
        "text.",
        show_default=False,
        rich_help_panel=_COLUMNS,
    ),
]
FormatOption = Annotated[
    str | None,
    typer.Option(
        "--format",
        help="csv, tsv, parquet, jsonl or npz (default: from the extension).",
        rich_help_panel=_COLUMNS,
    ),
]


LabelledFileArgument = Annotated[
    Path,
    typer.Argument(
        help="Predictions with labels: .csv, .tsv, .parquet, .jsonl or .npz.",
        show_default=False,
    ),
]
SeedOption = Annotated[
    int, typer.Option(help="Seed of the bootstrap and the noise floor.", rich_help_panel=_NOISE)
]
NBootOption = Annotated[
    int, typer.Option(help="Bootstrap resamples for the ECE interval.", rich_help_panel=_NOISE)
]
NSimsOption = Annotated[
    int, typer.Option(help="Simulations for the ECE noise floor.", rich_help_panel=_NOISE)
]

BinsOption = Annotated[int, typer.Option(help="Number of bins M.", rich_help_panel=_BINNING)]
StrategyOption = Annotated[
    Strategy,
    typer.Option(
        help="Equal-width or equal-mass bins (a monitor: equal mass over all groups).",
        rich_help_panel=_BINNING,
    ),
]
ClosedOption = Annotated[
    Closed,
    typer.Option(help="Which side of a bin includes its edge.", rich_help_panel=_BINNING),
]


class Engine(StrEnum):
    memory = "memory"
    stream = "stream"
    duckdb = "duckdb"
    spark = "spark"


_SCALE = "At scale"
EngineOption = Annotated[
    Engine,
    typer.Option(
        help="Where the sums are computed: memory (read the file), stream (pyarrow batches, "
        "bounded memory), duckdb (inside DuckDB; files larger than memory, globs), spark "
        "(a Spark session, --spark-master).",
        rich_help_panel=_SCALE,
    ),
]
SparkMasterOption = Annotated[
    str,
    typer.Option(
        help="Spark master URL for --engine spark (local[*], spark://host:7077, yarn, ...).",
        rich_help_panel=_SCALE,
    ),
]


def _columns(**options: Any) -> dict[str, Any]:
    """The column options that were given, as ``columns=`` of an engine."""
    return {k: v for k, v in options.items() if v is not None}


def _engine_data(file: Path, engine: Engine, spark_master: str, command: str) -> Any:
    """The input as an engine takes it: the path (for Spark, with a session started here that
    reads it)."""
    if engine is not Engine.spark:
        return str(file) if engine is Engine.duckdb else file
    try:
        require("pyspark", f"{command}: --engine spark", note="(and Java 17 or later)")
    except MissingExtraError as exc:
        _fail(str(exc))
    from ..engines.spark import session

    session(spark_master, f"calibkit {command}")
    return str(file)


def _echo_warnings(caught: list[warnings.WarningMessage]) -> None:
    """Each warning the command met, one line on stderr (a Spark installation's notes about its
    own dependencies are not about the user's data and are left out)."""
    for w in caught:
        if "pyspark" in str(w.filename):
            continue
        typer.echo(f"calibkit: warning: {' '.join(str(w.message).split())}", err=True)


def _check_quiet(quiet: bool, json_out: bool, command: str) -> None:
    if quiet and json_out:
        _fail(f"{command}: --quiet and --json both choose what is printed; pass one of them.")


def _html_writer(command: str):
    """``calibkit.report.html.write_report``, imported when --html asks for it."""
    try:
        from ..report.html import write_report
    except ImportError as exc:
        _fail(
            f"{command}: --html needs calibkit.report.html, which this installation of "
            f"calibkit cannot import ({exc}); run without --html."
        )
    return write_report


def _write(write, path: Path | None, command: str) -> None:
    """Run a writer; an OS error becomes the one-line 'cannot write' message."""
    try:
        write()
    except OSError as exc:
        _fail(f"{command}: cannot write '{path}': {exc.strerror or exc}.")


def _wrote(console, **paths: Path | None) -> None:
    written = {"record": "calibration record", "html": "HTML report"}
    lines = [f"wrote {written[k]} to {p}" for k, p in paths.items() if p is not None]
    if lines:
        console.print()
        for line in lines:
            console.print(line, soft_wrap=True)  # a path is not broken across lines


def _check_output(out: Path, command: str) -> None:
    if out.is_dir():
        _fail(f"{command}: cannot write '{out}': it is a directory; pass a file name.")
    if not out.parent.is_dir():
        _fail(f"{command}: cannot write '{out}': no such folder '{out.parent}'.")


def _refuse_overwrite(
    command: str, outputs: list[tuple[str, Path | None]], inputs: list[Path | None]
) -> None:
    """Refuse an output that is one of the inputs (however spelled: ./x, a symlink, a hard
    link; a glob given to an engine counts as the files it matches) or that two outputs share."""
    import glob

    files: list[Path] = []
    for path in inputs:
        if path is None:
            continue
        files.append(path)
        if not path.exists() and glob.has_magic(str(path)):
            files += [Path(p) for p in glob.glob(str(path), recursive=True)]
    try:
        check_outputs(outputs, files, where=command)
    except InputError as exc:
        _fail(str(exc))


def _read_labelled(
    file: Path,
    fmt: str | None,
    label: str | None,
    probs: str | None,
    logits: str | None,
    confidence: str | None,
    correct: str | None,
    prediction: str | None,
    positive: str | None,
    weight: str | None = None,
):
    from ..io import read_predictions

    return read_predictions(
        file,
        format=fmt,
        label=label,
        probs=probs,
        logits=logits,
        confidence=confidence,
        correct=correct,
        prediction=prediction,
        pos_label=positive,
        weight=weight,
    )


def _json_or_verdict(result: Any, *, json_out: bool, quiet: bool) -> bool:
    """Print ``result`` as JSON (``--json``) or its one-line verdict (``--quiet``); False when
    neither was asked for (the command then renders its table)."""
    if json_out:
        typer.echo(json.dumps(jsonable(result.to_dict()), indent=2, allow_nan=False))
        return True
    if quiet:
        typer.echo(result.verdict())
        return True
    return False
