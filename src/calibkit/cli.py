"""The ``calibkit`` command line: read a prediction file, call the library, render.

Thin by design: every number comes from :func:`calibkit.audit`, every check from the reader and
the library. Exit status 0 on success, 2 on bad input (one line on stderr, no traceback).
"""

from __future__ import annotations

import contextlib
import json
import warnings
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import numpy as np
import typer

from ._errors import InputError
from ._files import atomic_path, check_outputs
from ._json import jsonable
from ._version import __version__

EXIT_BAD_INPUT = 2

app = typer.Typer(
    name="calibkit",
    help="Audit whether a model's confidence means what it says.",
    add_completion=False,
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
    from .io._rules import shown

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
FormatOption = Annotated[
    str | None,
    typer.Option(
        "--format",
        help="csv, tsv, parquet, jsonl or npz (default: from the extension).",
        rich_help_panel=_COLUMNS,
    ),
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
        import pyspark  # noqa: F401
    except ImportError:
        _fail(f"{command}: --engine spark needs pyspark: pip install 'calibkit[spark]'.")
    from .engines.spark import session

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
        from .report.html import write_report
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


@app.command()
def audit(
    file: Annotated[
        Path,
        typer.Argument(
            help="Predictions: .csv, .tsv, .parquet, .jsonl or .npz.", show_default=False
        ),
    ],
    label: Annotated[
        str | None,
        typer.Option(help="Label column (class indices 0..C-1).", rich_help_panel=_COLUMNS),
    ] = None,
    probs: Annotated[
        str | None,
        typer.Option(
            help="Probability columns: names, comma-separated, or a quoted glob like 'prob_*' "
            "(.npz: a 2-D array).",
            rich_help_panel=_COLUMNS,
        ),
    ] = None,
    logits: Annotated[
        str | None,
        typer.Option(
            help="Logit columns, as --probs; softmax (sigmoid for one column) is applied.",
            rich_help_panel=_COLUMNS,
        ),
    ] = None,
    confidence: ScoredConfidenceOption = None,
    correct: CorrectOption = None,
    prediction: PredictionOption = None,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="csv, tsv, parquet, jsonl or npz (default: from the extension).",
            rich_help_panel=_COLUMNS,
        ),
    ] = None,
    bins: BinsOption = 15,
    strategy: StrategyOption = Strategy.uniform,
    closed: ClosedOption = Closed.right,
    interval: Annotated[
        Interval, typer.Option(help="Interval for each bin's accuracy.", rich_help_panel=_BINNING)
    ] = Interval.wilson,
    level: Annotated[
        float, typer.Option(help="Level of every interval.", rich_help_panel=_BINNING)
    ] = 0.95,
    engine: EngineOption = Engine.memory,
    spark_master: SparkMasterOption = "local[*]",
    seed: Annotated[
        int, typer.Option(help="Seed of the bootstrap and the noise floor.", rich_help_panel=_NOISE)
    ] = 0,
    n_boot: Annotated[
        int, typer.Option(help="Bootstrap resamples for the ECE interval.", rich_help_panel=_NOISE)
    ] = 1000,
    n_sims: Annotated[
        int, typer.Option(help="Simulations for the ECE noise floor.", rich_help_panel=_NOISE)
    ] = 1000,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the audit as JSON (only that, on stdout).")
    ] = False,
    quiet: QuietOption = False,
    record: Annotated[
        Path | None,
        typer.Option(
            help="Write the calibration record (JSON, checked against its schema) here.",
            show_default=False,
            rich_help_panel=_RECORD,
        ),
    ] = None,
    html: HtmlOption = None,
    model: Annotated[
        str | None, typer.Option(help="Model name.", show_default=False, rich_help_panel=_RECORD)
    ] = None,
    checkpoint: Annotated[
        str | None,
        typer.Option(help="Model checkpoint.", show_default=False, rich_help_panel=_RECORD),
    ] = None,
    outcome_definition: Annotated[
        str | None,
        typer.Option(
            help="What counts as a correct answer (or a positive label); calibkit compare "
            "refuses records whose definitions differ.",
            show_default=False,
            rich_help_panel=_RECORD,
        ),
    ] = None,
    population: Annotated[
        str | None,
        typer.Option(
            help="Who or what the rows are drawn from.",
            show_default=False,
            rich_help_panel=_RECORD,
        ),
    ] = None,
    data_window: Annotated[
        str | None,
        typer.Option(
            help="When the rows were collected, e.g. 2025-01..2025-03.",
            show_default=False,
            rich_help_panel=_RECORD,
        ),
    ] = None,
    split: Annotated[
        str | None,
        typer.Option(
            help="How these rows were split off (e.g. 'held-out test split').",
            show_default=False,
            rich_help_panel=_RECORD,
        ),
    ] = None,
    split_seed: Annotated[
        int | None,
        typer.Option(help="Seed of that split.", show_default=False, rich_help_panel=_RECORD),
    ] = None,
    calibrator: Annotated[
        Path | None,
        typer.Option(
            help="The calibrator (from calibkit fit) that produced these probabilities; "
            "recorded, not applied.",
            show_default=False,
            rich_help_panel=_RECORD,
        ),
    ] = None,
    notes: Annotated[
        str | None,
        typer.Option(help="Free text for the record.", show_default=False, rich_help_panel=_RECORD),
    ] = None,
) -> None:
    """Reliability table, ECE with its noise floor, Brier, log loss, AUC, and a verdict."""
    import calibkit as ck
    from calibkit.io import read_predictions

    _check_quiet(quiet, json_out, "audit")
    described = {
        "--model": model,
        "--checkpoint": checkpoint,
        "--outcome-definition": outcome_definition,
        "--population": population,
        "--data-window": data_window,
        "--split": split,
        "--split-seed": split_seed,
        "--calibrator": calibrator,
        "--notes": notes,
    }
    given = [name for name, value in described.items() if value is not None]
    if given and record is None and html is None:
        _fail(
            f"audit: {', '.join(given)} only go(es) into the calibration record; pass --record "
            "PATH (or --html PATH) to write one."
        )
    if split_seed is not None and split is None:
        _fail("audit: --split-seed goes with --split, the method of the split it seeded.")
    for path in (record, html):
        if path is not None:
            _check_output(path, "audit")
    _refuse_overwrite("audit", [("--record", record), ("--html", html)], [file, calibrator])
    write_report = _html_writer("audit") if html is not None else None

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fitted = None
            if calibrator is not None:
                from .recalibrate.base import load_calibrator

                fitted = load_calibrator(calibrator)
            settings: dict[str, Any] = dict(
                n_bins=bins,
                strategy=strategy.value,
                closed=closed.value,
                interval=None if interval is Interval.none else interval.value,
                level=level,
                n_boot=n_boot,
                n_sims=n_sims,
                seed=seed,
            )
            if engine is not Engine.memory:
                columns = _columns(
                    label=label,
                    probs=probs,
                    logits=logits,
                    confidence=confidence,
                    correct=correct,
                    prediction=prediction,
                )
                if fmt is not None:  # every engine reads the format it is told
                    columns["format"] = fmt
                data = _engine_data(file, engine, spark_master, "audit")
                with _progress_bar(
                    PROGRESS_MIN_ROWS, enabled=not (json_out or quiet), what="rows"
                ) as progress:
                    result = ck.audit(
                        data, engine=engine.value, columns=columns, progress=progress, **settings
                    )
                preds = None
                source = f"{file.name} (engine {engine.value})"
            else:
                preds = read_predictions(
                    file,
                    format=fmt,
                    label=label,
                    probs=probs,
                    logits=logits,
                    confidence=confidence,
                    correct=correct,
                    prediction=prediction,
                )
                source = preds.describe()
                with _progress_bar(preds.n, enabled=not (json_out or quiet)) as progress:
                    result = ck.audit(
                        preds.scores,
                        preds.labels,
                        from_logits=preds.kind == "logits",
                        progress=progress,
                        **settings,
                    )
            document = None
            if record is not None or html is not None:
                from .record import calibration_record, write_record

                document = calibration_record(
                    result,
                    scores=None if preds is None else preds.scores,
                    labels=None if preds is None else preds.labels,
                    scores_kind=None if preds is None else preds.kind,
                    model=model,
                    checkpoint=checkpoint,
                    outcome_definition=outcome_definition,
                    population=population,
                    data_window=data_window,
                    split=None if split is None else {"method": split, "seed": split_seed},
                    calibrator=fitted,
                    notes=notes,
                )
            if record is not None and document is not None:
                _write(lambda: write_record(record, document), record, "audit")
            if write_report is not None:
                title = f"calibkit audit: {source}"
                _write(
                    lambda: write_report(html, audit=result, record=document, title=title),
                    html,
                    "audit",
                )
        except InputError as exc:
            _fail(str(exc))
    _echo_warnings(caught)

    if json_out:
        typer.echo(json.dumps(result.to_dict(), indent=2, allow_nan=False))
        return
    if quiet:
        typer.echo(result.verdict())
        return
    from rich.console import Console

    from .report.terminal import render_audit

    console = Console(highlight=False)
    render_audit(result, console, source=source)
    _wrote(console, record=record, html=html)


# ----------------------------------------------------------------------------- fit / apply

_FIT = "Fitting and judging"


#: Extensions ``calibkit apply --out`` writes.
_TABLE_OUTPUTS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv"}


@app.command(
    help="Fit a calibrator on a calibration split, print the BEFORE/AFTER ledger on the "
    "held-out rows, and save the fitted map as JSON.\n\n"
    "The saved map is the one the ledger judges: fitted on the calibration split only (with "
    "--folds, on all rows, and the ledger holds out-of-fold estimates). Logit columns are fed "
    "to the map as logits, probability columns as probabilities (from_logits=False where the "
    "method has that setting). Logit columns that look like probabilities are refused "
    "(--no-check-logits insists); probabilities of exactly 0 or 1 are refused by the maps that "
    "take their logs unless --clip is given."
)
def fit(
    file: Annotated[
        Path,
        typer.Argument(
            help="Predictions with labels: .csv, .tsv, .parquet, .jsonl or .npz.",
            show_default=False,
        ),
    ],
    method: Annotated[
        str | None,
        typer.Option(
            help="temperature, platt, isotonic, histogram, beta, vector or matrix.",
            show_default=False,
            rich_help_panel=_FIT,
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Where to write the fitted calibrator (JSON, written atomically).",
            show_default=False,
            rich_help_panel=_FIT,
        ),
    ] = None,
    calibration_fraction: Annotated[
        float | None,
        typer.Option(
            help="Share of each class the map is fitted on; the rest judge it (default 0.5).",
            show_default=False,
            rich_help_panel=_FIT,
        ),
    ] = None,
    seed: Annotated[
        int,
        typer.Option(
            help="Seed of the split (or folds) and the noise floor.", rich_help_panel=_FIT
        ),
    ] = 0,
    folds: Annotated[
        int | None,
        typer.Option(
            help="Cross-fit with K folds instead of one split (small data); the saved map is "
            "then fitted on all rows.",
            show_default=False,
            rich_help_panel=_FIT,
        ),
    ] = None,
    label: LabelOption = None,
    probs: ProbsOption = None,
    logits: LogitsOption = None,
    confidence: ConfidenceOption = None,
    correct: Annotated[
        str | None,
        typer.Option(help="Outcome column, with --confidence.", rich_help_panel=_COLUMNS),
    ] = None,
    prediction: PredictionOption = None,
    fmt: FormatOption = None,
    bins: Annotated[int, typer.Option(help="Bins of the ECE.", rich_help_panel=_BINNING)] = 15,
    n_sims: Annotated[
        int, typer.Option(help="Simulations for the ECE noise floor.", rich_help_panel=_NOISE)
    ] = 1000,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the ledger as JSON (only that, on stdout).")
    ] = False,
    quiet: QuietOption = False,
    html: HtmlOption = None,
    clip: Annotated[
        float | None,
        typer.Option(
            metavar="EPS",
            help="Move probabilities into [EPS, 1 - EPS] before the map takes their logs "
            "(temperature, platt, beta, vector, matrix), with a warning counting the rows; "
            "without it, probabilities of exactly 0 or 1 are refused. Saved with the map, so "
            "calibkit apply clips alike.",
            show_default=False,
            rich_help_panel=_FIT,
        ),
    ] = None,
    check_logits: Annotated[
        bool,
        typer.Option(
            "--check-logits/--no-check-logits",
            help="Refuse logit columns that look like probabilities (rows in [0, 1] summing to "
            "1, or one column all in [0, 1]); --no-check-logits insists they are logits.",
            rich_help_panel=_FIT,
        ),
    ] = True,
    engine: EngineOption = Engine.memory,
    spark_master: SparkMasterOption = "local[*]",
) -> None:
    """Fit a calibrator on a calibration split, print the BEFORE/AFTER ledger on the held-out
    rows, and save the fitted map as JSON.

    The saved map is the one the ledger judges: fitted on the calibration split only (with
    --folds, on all rows; the ledger then holds out-of-fold estimates). Logit columns are fed
    to the map as logits; probability columns as probabilities (from_logits=False where the
    method has that setting).
    """
    from .recalibrate.base import save_calibrator
    from .recalibrate.ledger import compare_calibration
    from .recalibrate.methods import METHOD_NAMES, make_calibrator

    if method is None:
        _fail(f"fit: --method is required; choose one of {', '.join(METHOD_NAMES)}.")
    if out is None:
        _fail("fit: --out is required: the JSON file to write the fitted calibrator to.")
    if folds is not None and calibration_fraction is not None:
        _fail(
            "fit: --folds cross-fits on all rows; it does not combine with "
            "--calibration-fraction. Pass one or the other."
        )
    _check_output(out, "fit")
    _refuse_overwrite("fit", [("--out", out), ("--html", html)], [file])
    _check_quiet(quiet, json_out, "fit")
    if engine is not Engine.memory:
        given = [
            name
            for name, value in (
                ("--folds", folds),
                ("--calibration-fraction", calibration_fraction),
                ("--html", html),
                ("--clip", clip),
            )
            if value is not None
        ]
        if method != "temperature" or given:
            _fail(
                "fit: --engine fits the temperature on every row of the file (the calibration "
                "set), without a split or a ledger; pass --method temperature"
                + (f" and leave out {', '.join(given)}" if given else "")
                + ". Judge the map on held-out data with calibkit apply and calibkit audit."
            )
        columns = _columns(label=label, logits=logits, probs=probs, confidence=confidence)
        if fmt is not None:
            columns["format"] = fmt
        _fit_at_scale(file, out, engine, spark_master, columns, json_out=json_out, quiet=quiet)
        return
    if html is not None:
        _check_output(html, "fit")
    write_report = _html_writer("fit") if html is not None else None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            calibrator = make_calibrator(method)
            preds = _read_labelled(file, fmt, label, probs, logits, confidence, correct, prediction)
            from_logits = preds.kind == "logits"
            params = calibrator.get_params()
            if not from_logits and "from_logits" in params:
                calibrator.set_params(from_logits=False)
            if clip is not None:
                _check_clip(method, params, preds.kind, preds.describe())
                calibrator.set_params(clip=clip)
            if not check_logits and "check_logits" in params:
                calibrator.set_params(check_logits=False)
            _check_scale(calibrator, preds.kind, preds.describe(), command="fit")
            ledger = compare_calibration(
                calibrator,
                preds.scores,
                preds.labels,
                from_logits=from_logits,
                calibration_fraction=0.5 if calibration_fraction is None else calibration_fraction,
                seed=seed,
                folds=folds,
                n_bins=bins,
                n_sims=n_sims,
                check_logits=check_logits,
            )
            save_calibrator(out, ledger.calibrator)
            if write_report is not None:
                title = f"calibkit fit: {ledger.describe()}, from {preds.describe()}"
                before, after = _held_out_audits(ledger, preds, bins=bins, n_sims=n_sims)
                _write(
                    lambda: write_report(
                        html, ledger=ledger, title=title, before=before, after=after
                    ),
                    html,
                    "fit",
                )
        except InputError as exc:
            _fail(str(exc))
        except OSError as exc:
            _fail(f"fit: cannot write '{out}': {exc.strerror or exc}.")
    _echo_warnings(caught)

    if json_out:
        typer.echo(json.dumps(ledger.to_dict(), indent=2, allow_nan=False))
        return
    if quiet:
        typer.echo(_ledger_verdict(ledger, out))
        return
    from rich.console import Console

    console = Console(highlight=False)
    _render_ledger(ledger, console, source=preds.describe(), out=out)
    _wrote(console, html=html)


def _fit_at_scale(
    file: Path,
    out: Path,
    engine: Engine,
    spark_master: str,
    columns: dict[str, Any],
    *,
    json_out: bool,
    quiet: bool,
) -> None:
    """``calibkit fit --engine``: the temperature by Newton's method, one aggregation a step."""
    from .recalibrate.base import save_calibrator
    from .recalibrate.temperature import TemperatureScaling

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            data = _engine_data(file, engine, spark_master, "fit")
            scaler = TemperatureScaling().fit_engine(data, engine=engine.value, columns=columns)
            save_calibrator(out, scaler)
        except InputError as exc:
            _fail(str(exc))
        except OSError as exc:
            _fail(f"fit: cannot write '{out}': {exc.strerror or exc}.")
    _echo_warnings(caught)
    result = {
        "method": "temperature",
        "engine": engine.value,
        "temperature": scaler.temperature_,
        "nll_before": scaler.nll_before_,
        "nll_after": scaler.nll_after_,
        "gradient": scaler.gradient_,
        "n_evaluations": scaler.n_evaluations_,
        "converged": scaler.converged_,
        "out": str(out),
    }
    if json_out:
        typer.echo(json.dumps(result, indent=2, allow_nan=False))
        return
    line = (
        f"T = {scaler.temperature_:.6g} fitted on every row of {file.name} with --engine "
        f"{engine.value} ({scaler.n_evaluations_} aggregations); wrote {out}"
    )
    if quiet:
        typer.echo(line)
        return
    typer.echo(line)
    typer.echo(
        f"NLL on these rows {scaler.nll_before_:.5f} at T = 1 -> {scaler.nll_after_:.5f} at T; "
        f"d NLL / d T = {scaler.gradient_:.2g}. These rows fitted T: judge it on held-out rows "
        "(calibkit apply, then calibkit audit)."
    )


def _held_out_audits(ledger, preds, *, bins: int, n_sims: int):
    """Audits of the held-out rows before and after the saved map, for the report's side-by-side
    reliability diagrams: the ledger's own split, redrawn from its seed. (None, None) for
    cross-fitting, whose out-of-fold probabilities come from several maps."""
    import calibkit as ck

    from .recalibrate.split import stratified_split

    if ledger.design != "split":
        return None, None
    _, held = stratified_split(
        preds.labels, calibration_fraction=ledger.calibration_fraction, seed=ledger.seed
    )
    if held.size != ledger.n_eval:  # not the ledger's split: draw nothing rather than mislead
        return None, None
    x, y = preds.scores[held], preds.labels[held]
    settings = {"n_bins": bins, "n_boot": 1000, "n_sims": n_sims, "seed": ledger.seed}
    before = ck.audit(x, y, from_logits=preds.kind == "logits", **settings)
    after = ck.audit(ledger.calibrator.predict_proba(x), y, **settings)
    return before, after


def _ledger_verdict(ledger, out: Path) -> str:
    """One line: the map, what it did to ECE and NLL on the held-out rows (and whether that was
    worse beyond noise), where it went."""
    before, after = ledger.before, ledger.after

    def change(name: str) -> str:
        b, a = before.get(name), after.get(name)
        return f"{name} {_num(b)} -> {_num(a)}"

    floor = ledger.noise_floor_after.mean
    worse = " and ".join(w.instrument for w in ledger.worse)
    return (
        f"{ledger.describe()}: {change('ECE')} (floor {floor:.4f}), {change('NLL')} on "
        f"{ledger.n_eval} held-out rows{f', WORSE beyond noise in {worse}' if worse else ''}; "
        f"wrote {out}."
    )


def _num(x: float | None) -> str:
    import math

    return "-" if x is None or not math.isfinite(x) else f"{x:.4f}"


@app.command(
    help="Calibrate a file's scores with a saved calibrator and write the probabilities.\n\n"
    "Columns prob_0 .. prob_{C-1} (prob_1 alone for binary scores), plus the label column as "
    "'label' when the file has one, so that calibkit audit reads the output as it is. The "
    "output is written to a temporary file beside --out and renamed: a failed run leaves no "
    "partial file."
)
def apply(
    calibrator_file: Annotated[
        Path,
        typer.Argument(
            metavar="CALIBRATOR", help="A calibrator written by calibkit fit.", show_default=False
        ),
    ],
    file: Annotated[
        Path,
        typer.Argument(
            help="Scores to calibrate: .csv, .tsv, .parquet, .jsonl or .npz.", show_default=False
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            help="Where to write the calibrated probabilities (.parquet or .csv).",
            show_default=False,
        ),
    ] = None,
    label: Annotated[
        str | None,
        typer.Option(
            help="Label column to copy to the output (detected when named label, y, ...).",
            rich_help_panel=_COLUMNS,
        ),
    ] = None,
    probs: ProbsOption = None,
    logits: LogitsOption = None,
    confidence: ConfidenceOption = None,
    fmt: FormatOption = None,
) -> None:
    """Calibrate a file's scores with a saved calibrator and write the probabilities.

    Columns prob_0 .. prob_{C-1} (prob_1 alone for binary scores), plus the label column as
    'label' when the file has one, so that calibkit audit reads the output as it is. The file is
    written to a temporary file beside --out and renamed: a failed run leaves no partial file.
    """
    from .recalibrate.base import load_calibrator

    if out is None:
        _fail("apply: --out is required: the .parquet or .csv file to write.")
    _check_output(out, "apply")
    _refuse_overwrite("apply", [("--out", out)], [file, calibrator_file])
    if out.suffix.lower() not in _TABLE_OUTPUTS:
        _fail(f"apply: cannot write '{out}': --out must end in {', '.join(_TABLE_OUTPUTS)}.")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            calibrator = load_calibrator(calibrator_file)
            kind, scores, labels, source = _read_scores(
                file, fmt=fmt, label=label, probs=probs, logits=logits, confidence=confidence
            )
            _check_scale(calibrator, kind, source, command="apply")
            calibrated = calibrator.predict_proba(scores)
        except InputError as exc:
            _fail(str(exc))
    _echo_warnings(caught)

    calibrated = np.asarray(calibrated, dtype=np.float64)
    if calibrated.ndim == 1:
        columns = {"prob_1": calibrated}
    else:
        columns = {f"prob_{k}": calibrated[:, k] for k in range(calibrated.shape[1])}
    if labels is not None:
        columns["label"] = labels
    try:
        _write_table_atomic(out, columns)
    except OSError as exc:
        _fail(f"apply: cannot write '{out}': {exc.strerror or exc}.")
    names = list(columns)
    shown = names[0] if len(names) == 1 else f"{names[0]} .. {names[-1]}"
    typer.echo(
        f"calibkit apply: wrote {calibrated.shape[0]} rows ({shown}) to {out}, calibrated by "
        f"{type(calibrator).__name__} from {calibrator_file.name}."
    )


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
):
    from .io import read_predictions

    return read_predictions(
        file,
        format=fmt,
        label=label,
        probs=probs,
        logits=logits,
        confidence=confidence,
        correct=correct,
        prediction=prediction,
    )


def _read_scores(
    file: Path,
    *,
    fmt: str | None,
    label: str | None,
    probs: str | None,
    logits: str | None,
    confidence: str | None,
) -> tuple[str, np.ndarray, np.ndarray | None, str]:
    """Scores by the reader's rules (options, then detection), and the label column only if
    the file has one: new data to calibrate often has none."""
    from .io._read import (
        LABEL_NAMES,
        _detect_kind,
        _detect_one,
        _expand,
        _matches,
        _one_d,
        _same_length,
        _scores,
    )
    from .io._sources import check_path, open_source, resolve_format

    given = [
        name for name, o in (("probs", probs), ("logits", logits), ("confidence", confidence)) if o
    ]
    if len(given) > 1:
        raise InputError(
            f"apply: pass one of --probs, --logits or --confidence, not {' and '.join(given)}."
        )
    check_path(file)
    with open_source(file, resolve_format(file, fmt)) as src:
        if probs is not None:
            kind, names = "probs", _expand(src, probs, "probs")
        elif logits is not None:
            kind, names = "logits", _expand(src, logits, "logits")
        elif confidence is not None:
            kind, names = "confidence", [confidence]
        else:
            kind, names = _detect_kind(src)
        scores = (
            _one_d(src, names[0], "numeric") if kind == "confidence" else _scores(src, names, kind)
        )
        label_name = label
        if label_name is None and _matches(src, LABEL_NAMES):
            label_name = _detect_one(src, LABEL_NAMES, what="the labels", option="label")
        labels = None
        if label_name is not None:
            labels = _one_d(src, label_name, "label")
            _same_length(src, {names[0]: scores, label_name: labels})
        shown = names[0] if len(names) == 1 else f"{names[0]} .. {names[-1]}"
        source = f"{file.name} ({kind}={shown})"
    return kind, scores, labels, source


def _check_clip(method: str, params: dict[str, Any], kind: str, source: str) -> None:
    """--clip goes to a map that takes logs of probabilities, and with probability columns."""
    if "clip" not in params:
        raise InputError(
            f"fit: --clip moves probabilities away from 0 and 1 before a map takes their logs; "
            f"{method} uses probabilities as they are (0 and 1 included) and needs none. Leave "
            "out --clip."
        )
    if kind == "logits":
        raise InputError(
            f"fit: --clip moves probabilities away from 0 and 1 before a map takes their logs, "
            f"but {source} gives logits, which need none. Leave out --clip, or pass probability "
            "columns with --probs."
        )


def _check_scale(calibrator: object, kind: str, source: str, *, command: str) -> None:
    """Logits go to a map that reads logits, probabilities to one that reads probabilities."""
    params = calibrator.get_params()  # type: ignore[attr-defined]
    name = type(calibrator).__name__
    if "from_logits" not in params:
        # maps without the setting read probabilities when their class says so
        if kind == "logits" and getattr(type(calibrator), "domain", None) == "probs":
            raise InputError(
                f"{command}: {name} calibrates probabilities, but {source} gives logits; pass "
                "probability columns with --probs (the softmax, or sigmoid, of the logits)."
            )
        return
    if command == "fit":
        return  # fit sets from_logits to match the columns
    if kind == "logits" and not params["from_logits"]:
        raise InputError(
            f"{command}: the {name} was fitted on probabilities (from_logits=False), but {source} "
            "gives logits; pass the probability columns with --probs."
        )
    if kind != "logits" and params["from_logits"]:
        raise InputError(
            f"{command}: the {name} was fitted on logits, but {source} gives {kind}; pass the "
            "logit columns with --logits."
        )


def _write_table_atomic(target: Path, columns: dict[str, np.ndarray]) -> None:
    """Write columns as Parquet or CSV atomically (see :mod:`calibkit._files`)."""
    import pyarrow as pa

    table = pa.table({name: pa.array(values) for name, values in columns.items()})
    with atomic_path(target, where="apply") as tmp:
        if _TABLE_OUTPUTS[target.suffix.lower()] == "csv":
            import pyarrow.csv as pcsv

            pcsv.write_csv(table, tmp)
        else:
            import pyarrow.parquet as pq

            pq.write_table(table, tmp)


def _render_ledger(ledger, console, *, source: str, out: Path) -> None:
    """The ledger as rich tables: header, the BEFORE/AFTER table, notes, and where the map went."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    header = Text.assemble(("calibkit fit", "bold"), f": {ledger.describe()}")
    header.append(f", from {source}")
    console.print(header)
    console.print()
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0))
    table.add_column("instrument", no_wrap=True)
    table.add_column("what it measures", overflow="fold")
    table.add_column("BEFORE", justify="right", no_wrap=True)
    table.add_column("AFTER", justify="right", no_wrap=True)
    table.add_column("can the map move it?", overflow="fold")
    broken = set(ledger.broken_guarantees)
    for cells in ledger.table_rows():
        last: str | Text = cells[4]
        if cells[0] in broken:
            last = Text(cells[4], style="bold red")
        table.add_row(cells[0], cells[1], cells[2], cells[3], last)
    console.print(table)
    console.print()
    for line in ledger.notes():
        console.print(Text(line, style="bold red") if line.startswith("WORSE") else line)
    console.print()
    console.print(f"wrote {out}: {ledger.calibrator_name} fitted on {ledger.fitted_on}.")


# ----------------------------------------------------------------------------- decide

_COSTS = "Costs"
_BINARY_COSTS = "Binary costs (a threshold on P(y = 1))"
_GUARANTEE = "Guaranteed risk"
_SPLIT = "Split"


@app.command(
    help="Turn the confidence into act / defer decisions with stated costs: a policy table "
    "chosen on one half and judged on the other.\n\n"
    "The rows are split (stratified, seeded) into a choosing half and a reporting half. Every "
    "threshold is chosen on the choosing half (for logits, temperature scaling is fitted there "
    "too) and every cost, coverage and risk is reported on the other. Prints the policy table "
    "(act on everything, defer everything, Chow's rule, the threshold chosen by the cost, and "
    "Chow's rule after temperature scaling when the file has logits), the AURC, the "
    "three-action thresholds with --ask-cost, and the guaranteed-risk threshold with "
    "--target-risk. For a binary model, --false-positive-cost and --false-negative-cost "
    "(instead of, or with, --wrong-cost and --defer-cost) print the threshold on P(y = 1): "
    "the Bayes threshold, the one chosen by the cost, and the argmax, each costed on the "
    "reporting half. Writes no file but --html."
)
def decide(
    file: Annotated[
        Path,
        typer.Argument(
            help="Predictions with labels: .csv, .tsv, .parquet, .jsonl or .npz.",
            show_default=False,
        ),
    ],
    wrong_cost: Annotated[
        float | None,
        typer.Option(
            help="Cost of acting on a wrong prediction (l_wrong).",
            show_default=False,
            rich_help_panel=_COSTS,
        ),
    ] = None,
    defer_cost: Annotated[
        float | None,
        typer.Option(
            help="Cost of deferring a case to a person (l_defer), less than --wrong-cost.",
            show_default=False,
            rich_help_panel=_COSTS,
        ),
    ] = None,
    false_positive_cost: Annotated[
        float | None,
        typer.Option(
            help="Cost of flagging a case whose label is 0 (l_false_positive); with "
            "--false-negative-cost, on a binary model.",
            show_default=False,
            rich_help_panel=_BINARY_COSTS,
        ),
    ] = None,
    false_negative_cost: Annotated[
        float | None,
        typer.Option(
            help="Cost of missing a case whose label is 1 (l_false_negative); with "
            "--false-positive-cost.",
            show_default=False,
            rich_help_panel=_BINARY_COSTS,
        ),
    ] = None,
    ask_cost: Annotated[
        float | None,
        typer.Option(
            help="Cost of asking the user (a third action); with --ask-wrong-cost.",
            show_default=False,
            rich_help_panel=_COSTS,
        ),
    ] = None,
    ask_wrong_cost: Annotated[
        float | None,
        typer.Option(
            help="Cost of asking when the prediction is wrong; with --ask-cost.",
            show_default=False,
            rich_help_panel=_COSTS,
        ),
    ] = None,
    target_risk: Annotated[
        float | None,
        typer.Option(
            help="Find the most permissive threshold whose selective risk stays below this, "
            "with confidence 1 - delta.",
            show_default=False,
            rich_help_panel=_GUARANTEE,
        ),
    ] = None,
    delta: Annotated[
        float,
        typer.Option(
            help="The guarantee fails with probability at most delta.",
            rich_help_panel=_GUARANTEE,
        ),
    ] = 0.05,
    calibration_fraction: Annotated[
        float,
        typer.Option(help="Share of each class in the choosing half.", rich_help_panel=_SPLIT),
    ] = 0.5,
    seed: Annotated[int, typer.Option(help="Seed of the split.", rich_help_panel=_SPLIT)] = 0,
    label: LabelOption = None,
    probs: ProbsOption = None,
    logits: LogitsOption = None,
    confidence: ScoredConfidenceOption = None,
    correct: CorrectOption = None,
    prediction: PredictionOption = None,
    fmt: FormatOption = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print everything as one JSON object (only that).")
    ] = False,
    quiet: QuietOption = False,
    html: HtmlOption = None,
) -> None:
    """The policy table: thresholds chosen on one half, reported on the other."""
    from .decide.binary import binary_costs, binary_policy_table
    from .decide.policy import decision_report, policy_table
    from .decide.thresholds import costs
    from .recalibrate.split import stratified_split

    binary = false_positive_cost is not None or false_negative_cost is not None
    if binary and (false_positive_cost is None or false_negative_cost is None):
        _fail(
            "decide: --false-positive-cost and --false-negative-cost go together (the cost of "
            "flagging a case whose label is 0, and of missing one whose label is 1); pass both."
        )
    two_actions = not binary or wrong_cost is not None or defer_cost is not None
    if two_actions and (wrong_cost is None or defer_cost is None):
        missing = "--wrong-cost" if wrong_cost is None else "--defer-cost"
        _fail(
            f"decide: {missing} is required: the cost of acting on a wrong prediction "
            "(--wrong-cost) and of deferring a case to a person (--defer-cost), e.g. "
            "--wrong-cost 10 --defer-cost 1 (for a binary model's threshold on P(y = 1), "
            "--false-positive-cost and --false-negative-cost instead)."
        )
    if (ask_cost is None) != (ask_wrong_cost is None):
        _fail(
            "decide: --ask-cost and --ask-wrong-cost go together (the cost of asking the user, "
            "and of asking when the prediction is wrong); pass both or neither."
        )
    if ask_cost is not None and not two_actions:
        _fail(
            "decide: --ask-cost needs --wrong-cost and --defer-cost (the three actions are act, "
            "ask and escalate on the predicted class)."
        )
    if target_risk is not None and not 0.0 < target_risk < 1.0:
        _fail(f"decide: --target-risk must lie strictly between 0 and 1, got {target_risk}.")
    if not 0.0 < delta < 1.0:
        _fail(f"decide: --delta must lie strictly between 0 and 1, got {delta}.")
    _check_quiet(quiet, json_out, "decide")
    if html is not None:
        _check_output(html, "decide")
        _refuse_overwrite("decide", [("--html", html)], [file])
    write_report = _html_writer("decide") if html is not None else None

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            pair = (
                costs(
                    l_wrong=wrong_cost,
                    l_defer=defer_cost,
                    where="decide (--wrong-cost, --defer-cost)",
                )
                if two_actions
                else None
            )
            errors = (
                binary_costs(
                    l_false_positive=false_positive_cost,
                    l_false_negative=false_negative_cost,
                    where="decide (--false-positive-cost, --false-negative-cost)",
                )
                if binary
                else None
            )
            actions_fn = guarantee_fn = None
            if ask_cost is not None:
                actions_fn = _decide_part("actions", "choose_actions", "--ask-cost")
            if target_risk is not None:
                guarantee_fn = _decide_part("guarantee", "guaranteed_threshold", "--target-risk")
            preds = _read_labelled(file, fmt, label, probs, logits, confidence, correct, prediction)
            from_logits = preds.kind == "logits"
            if preds.kind == "confidence":
                _check_confidence_column(preds)
            if binary:
                _check_binary(preds)
            choose, report = stratified_split(
                preds.labels, calibration_fraction=calibration_fraction, seed=seed
            )
            chosen_on, reported_on = (
                _decision_inputs(preds, choose),
                _decision_inputs(preds, report),
            )
            table = None
            if pair is not None and from_logits:
                table = decision_report(
                    preds.scores[choose],
                    preds.labels[choose],
                    preds.scores[report],
                    preds.labels[report],
                    l_wrong=pair[0],
                    l_defer=pair[1],
                )
            elif pair is not None:
                table = policy_table(
                    **chosen_on,
                    **_held_out_arguments(reported_on),
                    l_wrong=pair[0],
                    l_defer=pair[1],
                )
            actions = None
            if actions_fn is not None and pair is not None:
                actions = actions_fn(
                    **chosen_on,
                    l_wrong=pair[0],
                    l_defer=pair[1],
                    l_ask=ask_cost,
                    l_ask_wrong=ask_wrong_cost,
                ).evaluate(**reported_on)
            guarantee = None
            if guarantee_fn is not None:
                guarantee = guarantee_fn(
                    **chosen_on, target_risk=target_risk, delta=delta
                ).evaluate(**reported_on)
            binary_table = None
            if errors is not None:
                binary_table = binary_policy_table(
                    preds.scores[choose],
                    preds.labels[choose],
                    preds.scores[report],
                    preds.labels[report],
                    l_false_positive=errors[0],
                    l_false_negative=errors[1],
                    from_logits=from_logits,
                )
            if write_report is not None:
                title = f"calibkit decide: {preds.describe()}"
                _write(
                    lambda: write_report(
                        html,
                        policy=table,
                        actions=actions,
                        guarantee=guarantee,
                        binary=binary_table,
                        title=title,
                    ),
                    html,
                    "decide",
                )
        except InputError as exc:
            _fail(str(exc))
    _echo_warnings(_first_class_probability_warning(caught))

    split = {
        "calibration_fraction": calibration_fraction,
        "seed": seed,
        "n_choose": int(choose.size),
        "n_report": int(report.size),
        "stratified_by": "outcome" if preds.kind == "confidence" else "label",
    }
    if json_out:
        document = {
            "source": preds.describe(),
            "kind": preds.kind,
            "split": split,
            "policy_table": None if table is None else table.to_dict(),
            "actions": None if actions is None else _with_held_out(actions, actions.choice),
            "guarantee": None
            if guarantee is None
            else _with_held_out(guarantee, guarantee.guarantee),
            "binary_policy": None if binary_table is None else binary_table.to_dict(),
        }
        typer.echo(json.dumps(jsonable(document), indent=2, allow_nan=False))
        return
    if quiet:
        if table is not None:
            typer.echo(_decision_verdict(table))
        if binary_table is not None:
            typer.echo(binary_table.verdict())
        return
    from rich.console import Console

    console = Console(highlight=False)
    _render_decision(
        console,
        source=preds.describe(),
        split=split,
        table=table,
        actions=actions,
        guarantee=guarantee,
        binary=binary_table,
        target_risk=target_risk,
    )
    _wrote(console, html=html)


def _decision_inputs(preds, rows: np.ndarray) -> dict:
    """The rows of a prediction file as the decide functions take them: (confidence, outcome)
    for a confidence column, else probs= and labels= (reduced to the predicted class)."""
    if preds.kind == "confidence":
        return {"confidence": preds.scores[rows], "outcome": preds.labels[rows]}
    return {
        "probs": preds.scores[rows],
        "labels": preds.labels[rows],
        "from_logits": preds.kind == "logits",
    }


def _held_out_arguments(inputs: dict) -> dict:
    """:func:`_decision_inputs` of the held-out rows under policy_table's eval_ names
    (eval_confidence, eval_probs, ...)."""
    names = ("confidence", "outcome", "probs", "labels")
    return {f"eval_{k}": value for k, value in inputs.items() if k in names}


_CONFIDENCE_HINT = (
    "If the column is P(y = 1) of a binary model, pass it with --probs COLUMN and the labels "
    "with --label COLUMN: the decision then acts on the predicted class, max(p, 1 - p)."
)


def _check_confidence_column(preds) -> None:
    """A confidence column checked once for the whole file, warning when it looks like
    P(y = 1) (the library's own warnings of the same kind are then left out)."""
    from . import _validate as v
    from .decide.coverage import validated

    name, outcome = preds.columns.get("confidence"), preds.columns.get("correct")
    conf, _ = validated(
        preds.scores,
        preds.labels,
        where="decide",
        name=f"confidence (column {name!r})" if name else "confidence",
        outcome_name=f"the outcome (column {outcome!r})" if outcome else "the outcome",
        hint="If the column holds class labels, pass it with --label and the class "
        "probabilities with --probs.",
    )
    v.confidence_not_class_probability(conf, where="decide", hint=_CONFIDENCE_HINT)


def _first_class_probability_warning(
    caught: list[warnings.WarningMessage],
) -> list[warnings.WarningMessage]:
    """The warnings, with only the first of those saying the confidence looks like P(y = 1)."""
    kept, seen = [], False
    for w in caught:
        if "look like P(y = 1)" in str(w.message):
            if seen:
                continue
            seen = True
        kept.append(w)
    return kept


def _check_binary(preds) -> None:
    """--false-positive-cost and --false-negative-cost need a binary model's scores."""
    if preds.kind == "confidence":
        raise InputError(
            f"decide: --false-positive-cost and --false-negative-cost set a threshold on "
            f"P(y = 1) of a binary model, but {preds.describe()} gives a confidence that each "
            "prediction is right; pass the probability of class 1 with --probs COLUMN (or the "
            "score with --logits COLUMN) and the 0/1 labels with --label COLUMN."
        )
    if preds.scores.ndim == 2 and preds.scores.shape[1] != 2:
        raise InputError(
            f"decide: --false-positive-cost and --false-negative-cost need a binary model, but "
            f"{preds.describe()} has {preds.scores.shape[1]} classes; for more classes use "
            "--wrong-cost and --defer-cost (act on the predicted class or defer)."
        )


def _with_held_out(evaluation, choice) -> dict:
    """A choice's own numbers and, under "on_reporting_half", those on the other half."""
    return {**_as_dict(choice), "on_reporting_half": evaluation.to_dict()}


def _decision_verdict(table) -> str:
    """One line: the threshold chosen on the choosing half and what it does on the other."""
    import math

    from .decide._format import threshold_text

    row = table.row("chosen")
    risk = "-" if math.isnan(row.risk) else f"{row.risk:.4f}"
    return (
        f"act when confidence >= {threshold_text(row.threshold)} (chosen on "
        f"{table.n} cases): cost {row.cost:.4f} per case on the other {table.n_eval}, "
        f"coverage {row.coverage:.4f}, risk {risk}; deferring everything costs "
        f"{table.row('defer_all').cost:.4f}."
    )


def _decide_part(module: str, name: str, option: str):
    """A function of ``calibkit.decide.<module>``, imported when the option asks for it."""
    import importlib

    try:
        return getattr(importlib.import_module(f"calibkit.decide.{module}"), name)
    except (ImportError, AttributeError):
        raise InputError(
            f"decide: {option} needs calibkit.decide.{module}.{name}, which this installation "
            "of calibkit does not have; run without it or upgrade calibkit."
        ) from None


def _as_dict(result: object) -> dict:
    to_dict = getattr(result, "to_dict", None)
    if callable(to_dict):
        return dict(to_dict())
    import dataclasses

    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        return dataclasses.asdict(result)
    return {"text": str(result)}


def _render_decision(
    console,
    *,
    source: str,
    split: dict,
    table,
    actions,
    guarantee,
    binary,
    target_risk: float | None,
) -> None:
    """The policy tables as rich tables, then the chosen thresholds, one paragraph each."""
    from rich.text import Text

    header = Text.assemble(("calibkit decide", "bold"), f": {source}")
    console.print(header)
    console.print(
        f"choosing on {split['n_choose']} rows, reporting on {split['n_report']} (split by "
        f"{split['stratified_by']}, fraction {split['calibration_fraction']:g}, seed "
        f"{split['seed']})"
    )
    if table is not None:
        console.print()
        _print_policy(console, table, ("threshold", "coverage", "risk", "cost/case", "val. cost"))
    if actions is not None:
        console.print()
        console.print(Text("three actions (chosen on the choosing half):", style="bold"))
        console.print(str(actions.choice))
        console.print(actions.describe("the reporting half"))
    if guarantee is not None:
        console.print()
        console.print(
            Text(f"guaranteed risk (target {target_risk:g}, chosen on the choosing half):", "bold")
        )
        console.print(str(guarantee.guarantee))
        console.print(guarantee.describe("the reporting half"))
    if binary is not None:
        console.print()
        _print_policy(
            console, binary, ("threshold", "flagged", "FN", "FP", "cost/case", "val. cost")
        )
        console.print(
            "FN: false negatives (y = 1, not flagged); FP: false positives (y = 0, flagged); "
            "flagged when P(y = 1) >= threshold."
        )


def _print_policy(console, table, columns: tuple[str, ...]) -> None:
    """A policy table's header line, its rows as a rich table, and its notes."""
    from rich import box
    from rich.table import Table

    console.print(table.header())
    grid = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0))
    grid.add_column("policy", overflow="fold", min_width=24)
    for name in columns:
        grid.add_column(name, justify="right", no_wrap=True)
    for cells in table.table_rows():
        grid.add_row(*cells)
    console.print(grid)
    console.print()
    for line in table.notes():
        console.print(line)


# ----------------------------------------------------------------------------- compare


@app.command(
    help="Did calibration move beyond noise between two calibration records (written by "
    "calibkit audit --record)?\n\n"
    "Prints the change of ECE against its noise band (the changes that arise when calibration "
    "did not move, simulated from the records' per-bin sums), each bin's change of accuracy "
    "and gap with its interval (bins that moved away from the diagonal are flagged), and the "
    "change of the fitted temperature when both records carry one. Refuses records whose "
    "bins, event or outcome definition differ.\n\n"
    "Each record's digest is checked (an edited record is refused) and, when it is signed and "
    "CALIBKIT_RECORD_KEY holds the key, its HMAC-SHA256 signature (one that does not verify "
    "is refused); the output says for each record whether it was signed and verified, signed "
    "but not verified, or only digest-checked. A digest detects accidental edits, not a forger "
    "who recomputes it: for records from across a trust boundary sign them and pass "
    "--require-signature.\n\n"
    "Exit status 0 whether or not calibration moved; 2 when a record cannot be read, fails "
    "its checks, or the two cannot be compared."
)
def compare(
    old: Annotated[
        Path, typer.Argument(help="The earlier record (the reference).", show_default=False)
    ],
    new: Annotated[Path, typer.Argument(help="The later record.", show_default=False)],
    level: Annotated[
        float, typer.Option(help="Level of the noise band and of every bin's interval.")
    ] = 0.95,
    n_sims: Annotated[
        int, typer.Option(help="Simulated pairs of cohorts behind the noise band.")
    ] = 2000,
    seed: Annotated[int, typer.Option(help="Seed of the simulation.")] = 0,
    require_signature: RequireSignatureOption = False,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the comparison as JSON (only that, on stdout).")
    ] = False,
    quiet: QuietOption = False,
) -> None:
    """Did calibration move beyond noise between two calibration records?"""
    from .record import compare_records, read_record
    from .report.terminal import render_comparison

    _check_quiet(quiet, json_out, "compare")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            records = [read_record(p, require_signature=require_signature) for p in (old, new)]
            result = compare_records(*records, level=level, n_sims=n_sims, seed=seed)
        except InputError as exc:
            _fail(str(exc))
    _echo_warnings(caught)
    if json_out:
        typer.echo(json.dumps(jsonable(result.to_dict()), indent=2, allow_nan=False))
        return
    if quiet:
        typer.echo(result.verdict())
        return
    from rich.console import Console

    render_comparison(result, Console(highlight=False))


#: Inputs at least this large get a progress bar (on a terminal): their audit takes seconds.
PROGRESS_MIN_ROWS = 200_000


@app.command(
    help="Audit every group of a prediction file (a week, a cohort, a model version) with the "
    "same bins: each group's ECE with its interval and noise floor and its fitted temperature, "
    "and the groups whose calibration moved beyond noise from a reference flagged."
)
def monitor(
    file: Annotated[
        Path,
        typer.Argument(
            help="Predictions with labels and the group or time column.", show_default=False
        ),
    ],
    by: Annotated[
        str,
        typer.Option(
            help="A column to group by, or day / week / month of the time column.",
            show_default=False,
        ),
    ],
    time: Annotated[
        str | None,
        typer.Option(
            help="Time column for --by day/week/month (default: detected).", show_default=False
        ),
    ] = None,
    reference: Annotated[
        str | None,
        typer.Option(
            help="The group the others are compared with (default: the first).", show_default=False
        ),
    ] = None,
    reference_record: Annotated[
        Path | None,
        typer.Option(
            help="Compare with a calibration record instead (calibkit audit --record); its "
            "digest is checked, and its signature with the key in CALIBKIT_RECORD_KEY.",
            show_default=False,
        ),
    ] = None,
    require_signature: RequireSignatureOption = False,
    label: LabelOption = None,
    probs: ProbsOption = None,
    logits: LogitsOption = None,
    confidence: ScoredConfidenceOption = None,
    correct: CorrectOption = None,
    prediction: PredictionOption = None,
    fmt: FormatOption = None,
    bins: BinsOption = 15,
    strategy: StrategyOption = Strategy.uniform,
    closed: ClosedOption = Closed.right,
    level: Annotated[
        float,
        typer.Option(
            help="Family-wise level of the flags and level of the intervals.",
            rich_help_panel=_NOISE,
        ),
    ] = 0.95,
    no_temperature: Annotated[
        bool, typer.Option("--no-temperature", help="Do not fit each group's temperature.")
    ] = False,
    seed: Annotated[int, typer.Option(help="Seed of the simulations.", rich_help_panel=_NOISE)] = 0,
    n_boot: Annotated[
        int, typer.Option(help="Bootstrap resamples per group.", rich_help_panel=_NOISE)
    ] = 1000,
    n_sims: Annotated[
        int, typer.Option(help="Simulations of the no-change band.", rich_help_panel=_NOISE)
    ] = 2000,
    engine: EngineOption = Engine.memory,
    spark_master: SparkMasterOption = "local[*]",
    plot: Annotated[
        Path | None,
        typer.Option(
            help="Write the ECE-over-groups figure here (.png or .svg).", show_default=False
        ),
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the monitor as JSON (only that, on stdout).")
    ] = False,
    quiet: QuietOption = False,
    wide: Annotated[
        bool,
        typer.Option("--wide", help="Add each group's ECE interval and no-change band."),
    ] = False,
) -> None:
    """Calibration by group (time, cohort, version), flagged against a reference."""
    import calibkit as ck

    _check_quiet(quiet, json_out, "monitor")
    if reference is not None and reference_record is not None:
        _fail("monitor: pass --reference (a group) or --reference-record (a record), not both.")
    if engine is Engine.stream:
        _fail(
            "monitor: --engine stream is not offered for monitoring; use duckdb for files "
            "larger than memory (or memory, spark)."
        )
    if plot is not None:
        _check_output(plot, "monitor")
        _refuse_overwrite("monitor", [("--plot", plot)], [file, reference_record])
    if require_signature and reference_record is None:
        _fail("monitor: --require-signature applies to --reference-record; pass the record.")
    columns = _columns(
        label=label,
        probs=probs,
        logits=logits,
        confidence=confidence,
        correct=correct,
        prediction=prediction,
        format=fmt,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            reference_doc = None
            if reference_record is not None:
                from .record import read_record

                reference_doc = read_record(reference_record, require_signature=require_signature)
            result = ck.monitor(
                _engine_data(file, engine, spark_master, "monitor"),
                by=by,
                engine=engine.value,
                columns=columns,
                time=time,
                reference=reference_doc if reference_doc is not None else reference,
                n_bins=bins,
                strategy=strategy.value,
                closed=closed.value,
                level=level,
                temperature=not no_temperature,
                n_boot=n_boot,
                n_sims=n_sims,
                seed=seed,
            )
            if plot is not None:
                from .report.figures import monitor_plot, save_figure

                figure = monitor_plot(result)
                _write(lambda: save_figure(plot, figure), plot, "monitor")
        except InputError as exc:
            _fail(str(exc))
    _echo_warnings(caught)
    if json_out:
        typer.echo(json.dumps(jsonable(result.to_dict()), indent=2, allow_nan=False))
        return
    if quiet:
        typer.echo(result.verdict())
        return
    from rich.console import Console

    from .report.terminal import render_monitor

    console = Console(highlight=False)
    render_monitor(result, console, source=f"{file.name} (engine {engine.value})", wide=wide)
    if plot is not None:
        console.print()
        console.print(f"wrote the figure to {plot}", soft_wrap=True)


@contextlib.contextmanager
def _progress_bar(n_rows: int, *, enabled: bool, what: str = "stages") -> Iterator[Any]:
    """A rich progress bar on stderr, fed by ``ck.audit(progress=...)``, for large inputs on a
    terminal; otherwise None (no bar, nothing printed). ``what="rows"``: an engine reports
    its stages, or rows read (of a total it may not know)."""
    from rich.console import Console

    console = Console(stderr=True)
    if not enabled or n_rows < PROGRESS_MIN_ROWS or not console.is_terminal:
        yield None
        return
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    label = (
        "auditing: {task.description} {task.completed:,}"
        if what == "rows"
        else "auditing {task.fields[rows]:,} predictions: {task.description}"
    )
    with Progress(
        TextColumn(label),
        BarColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as bar:
        task = bar.add_task("reading", total=1, rows=n_rows)

        def update(stage: str, done: int, total: int) -> None:
            bar.update(task, description=stage, completed=done, total=total or None)

        yield update


# ----------------------------------------------------------------------------- stated

stated_app = typer.Typer(
    name="stated",
    help="Stated confidence of language models: elicit it (run) and audit it (audit).",
    no_args_is_help=True,
)
app.add_typer(stated_app, name="stated")


class Provider(StrEnum):
    openai = "openai"
    anthropic = "anthropic"
    replay = "replay"


class StatedSource(StrEnum):
    verbalized = "verbalized"
    logprob = "logprob"
    consistency = "consistency"


_STORE_SUFFIXES = (".sqlite", ".sqlite3", ".db")
_TABLE_FORMATS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
}


def _names(spec: str, option: str, command: str) -> list[str]:
    names = [n.strip() for n in spec.split(",") if n.strip()]
    if len(set(names)) != len(names):
        raise InputError(f"{command}: {option} names a column twice: {spec!r}.")
    return names


def _check_file(path: Path, command: str, what: str) -> None:
    if not path.exists():
        raise InputError(f"{command}: no such file: '{path}'.")
    if path.is_dir():
        raise InputError(f"{command}: '{path}' is a directory; pass {what}.")


def _read_table(path: Path, command: str):
    """A CSV, TSV, Parquet or JSON-lines file as a pyarrow Table (InputError when it cannot be)."""
    import pyarrow as pa

    _check_file(path, command, "a table of answers")
    fmt = _TABLE_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InputError(
            f"{command}: cannot tell the format of '{path}' from its extension "
            f"{path.suffix or '(none)'!r}; use .csv, .tsv, .parquet, .jsonl, or a reply store "
            f"({', '.join(_STORE_SUFFIXES)})."
        )
    from .io import check_file

    check_file(path, fmt, command)  # a regular file, a sound header, JSON lines not too deep
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            return pq.read_table(path)
        if fmt == "jsonl":
            import pyarrow.json as pj

            return pj.read_json(path)
        import pyarrow.csv as pcsv

        options = pcsv.ParseOptions(delimiter="\t" if fmt == "tsv" else ",")
        return pcsv.read_csv(path, parse_options=options)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InputError(
            f"{command}: could not read '{path}' as {fmt.upper()}: {' '.join(str(exc).split())}"
        ) from None


def _read_decision_set(path: Path, command: str) -> list[dict[str, Any]]:
    """The items of a decision set (JSON lines with id, question, options and label)."""
    from .stated.decision_set import read_decision_set

    _check_file(path, command, "a decision set (JSON lines)")
    return read_decision_set(path, where=command)


_RUN_COLUMNS = ("llm", "prompt", "settings")


def _store_table(path: Path, decision_set: Path | None, command: str) -> dict[str, list[Any]]:
    """The ok replies of a reply store, joined with the decision set's labels: one row per
    reply, with the run it belongs to (llm, prompt, settings) and its item and sample."""
    from .stated.store import ReplyStore

    if decision_set is None:
        raise InputError(
            f"{command}: '{path}' is a reply store; pass --decision-set PATH (the JSON lines "
            "the run asked) so each answer can be checked against its label."
        )
    labels = {str(it["id"]): str(it["label"]) for it in _read_decision_set(decision_set, command)}
    _check_file(path, command, "a reply store")
    try:
        with ReplyStore(path) as store:
            records = list(store.items(status="ok"))
    except InputError as exc:  # not a store, damaged, locked...
        raise InputError(f"{command}: {exc}") from None
    unknown = sorted({r.key.item_id for r in records} - labels.keys())
    if unknown:
        raise InputError(
            f"{command}: {len(unknown)} item(s) of '{path}' are not in '{decision_set}' "
            f"(first: {unknown[0]!r}); pass the decision set the run asked."
        )
    names = (*_RUN_COLUMNS, "item_id", "sample", "stated_confidence", "correct")
    columns: dict[str, list[Any]] = {k: [] for k in names}
    for r in records:
        columns["llm"].append(f"{r.key.provider}:{r.key.model}")
        columns["prompt"].append(r.key.prompt_hash[:12])
        columns["settings"].append(r.key.settings_hash)
        columns["item_id"].append(r.key.item_id)
        columns["sample"].append(r.key.sample_index)
        columns["stated_confidence"].append(r.confidence)
        columns["correct"].append(int(str(r.answer) == labels[r.key.item_id]))
    if not records:
        raise InputError(f"{command}: '{path}' holds no parsed (ok) replies to audit.")
    return columns


def _check_pooling(
    table: dict[str, list[Any]], groups: list[str], pool: bool, path: Path, command: str
) -> None:
    """Refuse a group that pools several runs of a store (unless --pool), and warn when a group
    holds several replies of one item (samples), which are not independent."""
    from collections import Counter, defaultdict

    from ._errors import CalibkitWarning

    runs: defaultdict[tuple[Any, ...], set[tuple[Any, ...]]] = defaultdict(set)
    per_item: defaultdict[tuple[Any, ...], Counter[tuple[Any, ...]]] = defaultdict(Counter)
    for i in range(len(table["item_id"])):
        group = tuple(table[g][i] for g in groups)
        run = tuple(table[c][i] for c in _RUN_COLUMNS)
        runs[group].add(run)
        per_item[group][(*run, table["item_id"][i])] += 1
    for group, found in runs.items():
        name = "/".join(map(str, group)) or "all rows"
        counts = per_item[group]
        n_replies, n_items = sum(counts.values()), len({k[-1] for k in counts})
        if len(found) > 1 and not pool:
            settings = ", ".join(sorted({f"{r[1]}/{r[2]}" for r in found})[:4])
            raise InputError(
                f"{command}: group {name} of '{path}' pools {len(found)} runs (prompt/settings "
                f"{settings}): {n_replies} replies of {n_items} items; audit each run with the "
                f"default --group-by {','.join(_RUN_COLUMNS)}, or pass --pool to pool them."
            )
        most = max(Counter(k[-1] for k in counts.elements()).values())
        if most > 1:
            warnings.warn(
                f"{command}: group {name} holds {n_replies} replies of {n_items} items (up to "
                f"{most} per item, from samples or pooled runs): N counts replies, and replies "
                "of one item are not independent, so the ECE interval is too narrow.",
                CalibkitWarning,
                stacklevel=2,
            )


@stated_app.command(
    "audit",
    help="Audit stated (and token) confidences per model and question set: accuracy, ECE with "
    "its interval and noise floor, Brier, NLL, AUC, the share of multiples of 0.05 and the most "
    "common stated values, and which source is better calibrated.\n\n"
    "FILE is a table (.csv, .tsv, .parquet, .jsonl) with one row per answer, or a reply store "
    "(.sqlite/.db, written by calibkit stated run) with --decision-set for the labels; a store is "
    "audited per run (model, prompt and settings) unless --pool.",
)
def stated_audit(
    file: Annotated[
        Path, typer.Argument(help="Table of answers, or a reply store.", show_default=False)
    ],
    group_by: Annotated[
        str | None,
        typer.Option(
            help="Group columns, comma-separated (table default: llm,qset; store: "
            "llm,prompt,settings, one group per run; '' for none).",
            show_default=False,
            rich_help_panel=_COLUMNS,
        ),
    ] = None,
    sources: Annotated[
        str | None,
        typer.Option(
            help="Confidence columns, comma-separated (table default: "
            "stated_confidence,chosen_token_confidence; store: stated_confidence).",
            show_default=False,
            rich_help_panel=_COLUMNS,
        ),
    ] = None,
    correct: Annotated[
        str, typer.Option(help="Outcome column (0/1, bool, TRUE/FALSE).", rich_help_panel=_COLUMNS)
    ] = "correct",
    decision_set: Annotated[
        Path | None,
        typer.Option(
            help="With a reply store: the decision set (JSON lines with id and label).",
            show_default=False,
            rich_help_panel=_COLUMNS,
        ),
    ] = None,
    bins: Annotated[int, typer.Option(help="Number of bins M.", rich_help_panel=_BINNING)] = 15,
    level: Annotated[
        float, typer.Option(help="Level of the ECE interval.", rich_help_panel=_BINNING)
    ] = 0.95,
    seed: Annotated[
        int, typer.Option(help="Seed of the bootstrap and the noise floor.", rich_help_panel=_NOISE)
    ] = 0,
    n_boot: Annotated[
        int, typer.Option(help="Bootstrap resamples for the ECE interval.", rich_help_panel=_NOISE)
    ] = 1000,
    n_sims: Annotated[
        int, typer.Option(help="Simulations for the ECE noise floor.", rich_help_panel=_NOISE)
    ] = 1000,
    pool: Annotated[
        bool,
        typer.Option(
            "--pool",
            help="With a reply store: let a group pool several runs (otherwise refused).",
            rich_help_panel=_COLUMNS,
        ),
    ] = False,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the audit as JSON (only that, on stdout).")
    ] = False,
    quiet: QuietOption = False,
    html: HtmlOption = None,
    wide: Annotated[
        bool,
        typer.Option(
            "--wide",
            help="One table with every column (Brier, NLL, the coarseness of the stated values, "
            "the most common values); it needs a terminal of about 200 columns.",
        ),
    ] = False,
) -> None:
    """Audit stated confidences per model and source: accuracy, ECE with its interval and noise
    floor, Brier, NLL, AUC, AURC, the coarseness of the stated values, and (with --html) each
    group's reliability diagram and table."""
    command = "stated audit"
    _check_quiet(quiet, json_out, command)
    if bins < 1:
        _fail(f"{command}: --bins must be at least 1, got {bins}.")
    if not 0.0 < level < 1.0:
        _fail(f"{command}: --level must lie strictly between 0 and 1, got {level}.")
    is_store = file.suffix.lower() in _STORE_SUFFIXES
    if decision_set is not None and not is_store:
        _fail(f"{command}: --decision-set goes with a reply store (.sqlite/.db), not '{file}'.")
    if pool and not is_store:
        _fail(f"{command}: --pool goes with a reply store (.sqlite/.db), not '{file}'.")
    default_groups, default_sources = (
        (",".join(_RUN_COLUMNS), "stated_confidence")
        if is_store
        else ("llm,qset", "stated_confidence,chosen_token_confidence")
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            from .stated.audit import audit_stated

            groups = _names(default_groups if group_by is None else group_by, "--group-by", command)
            srcs = _names(default_sources if sources is None else sources, "--sources", command)
            if not srcs:
                raise InputError(f"{command}: --sources names no column.")
            table: Any
            if is_store:
                table = _store_table(file, decision_set, command)
                names = list(table)
            else:
                table = _read_table(file, command)
                names = list(table.column_names)
            for option, wanted in (("--group-by", groups), ("--sources", srcs)):
                for name in wanted:
                    if name not in names:
                        raise InputError(
                            f"{command}: '{file}' has no column {name!r} ({option}); columns: "
                            f"{', '.join(names)}."
                        )
            if correct not in names:
                raise InputError(
                    f"{command}: '{file}' has no column {correct!r} (--correct); columns: "
                    f"{', '.join(names)}."
                )
            if is_store:
                _check_pooling(table, groups, pool, file, command)
            result = audit_stated(
                table,
                group_by=groups,
                sources=srcs,
                correct=correct,
                n_bins=bins,
                seed=seed,
                n_boot=n_boot,
                n_sims=n_sims,
                level=level,
            )
        except InputError as exc:
            _fail(str(exc))
    _echo_warnings(caught)
    if html is not None:
        write_report = _html_writer(command)
        _write(
            lambda: write_report(html, stated=result, title=f"Stated confidence: {file.name}"),
            html,
            command,
        )
        if not json_out:
            typer.echo(f"wrote HTML report to {html}", err=True)

    if json_out:
        document = {"source": str(file), **result.to_dict()}
        typer.echo(json.dumps(jsonable(document), indent=2, allow_nan=False))
        return
    if quiet:
        for comp in result.comparisons:
            where = "/".join(comp.group) or "all rows"
            how = "clearly" if comp.clear else "intervals overlap"
            typer.echo(f"{where}: {comp.better} has the lower ECE ({how})")
        if not result.comparisons:
            typer.echo(f"{len(result.rows)} audit(s); no group has two sources to compare.")
        return
    _render_stated_audit(result, file, wide=wide)


def _render_stated_audit(result, file: Path, *, wide: bool) -> None:
    from rich.console import Console

    from .report.terminal import render_stated_audit

    render_stated_audit(result, Console(highlight=False), source=str(file), wide=wide)


@stated_app.command(
    "run",
    help="Ask a language model every question of a decision set for an answer and a stated "
    "confidence, store every reply (rerunning resumes), and audit the parsed confidences against "
    "the labels.\n\n"
    "Nothing is sent anywhere but to the --provider given (and --base-url when set); keys are "
    "read from the environment (--api-key-env). Unparsed replies are counted and left out of "
    "the audit, never given a fallback confidence.",
)
def stated_run(
    decision_set: Annotated[
        Path,
        typer.Argument(help="JSON lines with id, question, options and label.", show_default=False),
    ],
    provider: Annotated[
        Provider | None,
        typer.Option(help="openai, anthropic, or replay (from the store).", show_default=False),
    ] = None,
    model: Annotated[str | None, typer.Option(help="Model name.", show_default=False)] = None,
    base_url: Annotated[
        str | None,
        typer.Option(help="API base URL (a local or compatible server).", show_default=False),
    ] = None,
    api_key_env: Annotated[
        str | None,
        typer.Option(
            help="Environment variable holding the API key (default OPENAI_API_KEY or "
            "ANTHROPIC_API_KEY).",
            show_default=False,
        ),
    ] = None,
    store: Annotated[
        Path, typer.Option(help="Reply store (SQLite); rerunning with it resumes.")
    ] = Path("replies.sqlite"),
    samples: Annotated[int, typer.Option(help="Replies per item.")] = 1,
    source: Annotated[
        StatedSource, typer.Option(help="Where the confidence comes from.")
    ] = StatedSource.verbalized,
    concurrency: Annotated[int, typer.Option(help="Requests in flight at once.")] = 4,
    max_retries: Annotated[int, typer.Option(help="Extra attempts after a malformed reply.")] = 3,
    bins: Annotated[int, typer.Option(help="Number of bins M of the audit.")] = 15,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap and the noise floor.")] = 0,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the run and its audit as JSON (only that).")
    ] = False,
    html: HtmlOption = None,
) -> None:
    """Elicit answers and stated confidences, then audit them."""
    import calibkit as ck

    from ._files import check_outputs
    from .stated.elicit import ProviderUnreachable, elicit

    command = "stated run"
    if provider is None or model is None:
        missing = "--provider" if provider is None else "--model"
        _fail(
            f"{command}: {missing} is required: nothing is sent anywhere unless a provider and "
            "a model are named, e.g. --provider openai --model gpt-4o-mini."
        )
    if samples < 1 or concurrency < 1 or max_retries < 0 or bins < 1:
        _fail(f"{command}: --samples, --concurrency and --bins must be >= 1, --max-retries >= 0.")
    if html is not None:
        _check_output(html, command)
    write_report = _html_writer(command) if html is not None else None

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            items = _read_decision_set(decision_set, command)
            if store.is_dir():
                raise InputError(f"{command}: --store '{store}' is a directory; pass a file.")
            if not store.parent.exists():
                raise InputError(f"{command}: the folder of --store '{store}' does not exist.")
            check_outputs([("--store", store), ("--html", html)], [decision_set], where=command)
            try:
                run = elicit(
                    items,
                    provider=provider.value,
                    model=model,
                    store=store,
                    samples=samples,
                    source=source.value,
                    concurrency=concurrency,
                    max_retries=max_retries,
                    base_url=base_url,
                    api_key_env=api_key_env,
                )
            except ProviderUnreachable as exc:
                raise InputError(f"{command}: {exc}") from None
            except ValueError as exc:  # InputError and StoreError included
                text = str(exc)
                raise InputError(f"{command}: {text}{'' if text.endswith('.') else '.'}") from None
            _check_something_asked(run, command)
            labels = {str(it["id"]): str(it["label"]) for it in items}
            parsed = [r for r in run.results if r.status == "ok" and r.confidence is not None]
            conf = np.array([r.confidence for r in parsed], dtype=np.float64)
            right = np.array([str(r.answer) == labels[r.item_id] for r in parsed], dtype=np.int64)
            result = None
            if parsed:
                result = ck.audit(conf, right, n_bins=bins, seed=seed)
            if write_report is not None and result is not None:
                title = f"calibkit stated run: {provider.value}:{model} on {decision_set}"
                _write(lambda: write_report(html, audit=result, title=title), html, command)
        except InputError as exc:
            _fail(str(exc))
    _echo_warnings(caught)

    from collections import Counter

    reasons = Counter(
        f"{r.status}: {' '.join(r.error.split())}" if r.error else r.status
        for r in run.results
        if r.status != "ok"
    )
    summary = {
        "decision_set": str(decision_set),
        "store": str(store),
        "provider": run.provider,
        "model": run.model,
        "source": run.source,
        "prompt_sha256": run.prompt_hash,
        "settings": run.settings,
        "settings_hash": run.settings_hash,
        "items": len(run.results),
        "parsed": len(parsed),
        "parse_rate": run.parse_rate,
        "status_counts": dict(run.status_counts),
        "reasons": dict(reasons),
        "calls": run.calls,
        "reused": run.reused,
        "tokens": {"input": run.input_tokens, "output": run.output_tokens},
        "accuracy_of_parsed": None if result is None else float(right.mean()),
        "audit": None if result is None else result.to_dict(),
    }
    if json_out:
        typer.echo(json.dumps(jsonable(summary), indent=2, allow_nan=False))
        return
    from rich.console import Console
    from rich.text import Text

    from .report.terminal import render_audit

    console = Console(highlight=False)
    console.print(
        Text.assemble(
            ("calibkit stated run", "bold"),
            f": {run.provider}:{run.model} on "
            f"{decision_set} ({len(run.results)} items, source {run.source})",
        )
    )
    console.print(
        f"replies stored in {store} (rerunning the same command resumes: stored replies are "
        "not asked again)",
        soft_wrap=True,
    )
    console.print(f"prompt sha256 {run.prompt_hash}, settings {run.settings_hash}")
    console.print(
        f"parsed {len(parsed)} of {len(run.results)} items ({run.parse_rate:.1%}); "
        f"status {dict(run.status_counts)}"
    )
    for reason, count in reasons.most_common(5):
        console.print(f"  {count} x {reason}", soft_wrap=True)
    console.print(
        f"this run: {run.calls} calls, {run.reused} replies reused, tokens in/out "
        f"{run.input_tokens}/{run.output_tokens}"
    )
    console.print()
    if result is None:
        console.print("no parsed replies: nothing to audit.")
    else:
        render_audit(result, console, source=f"{len(parsed)} parsed replies (unparsed left out)")
    _wrote(console, html=html if result is not None else None)


def _check_something_asked(run, command: str) -> None:
    """Refuse a run in which no item got a reply (every one an error): nothing could be asked."""
    from collections import Counter

    answered = {"ok", "failed"}
    if not run.results or any(r.status in answered for r in run.results):
        return
    reasons = Counter(f"{r.status}: {r.error}" if r.error else r.status for r in run.results)
    reason, count = reasons.most_common(1)[0]
    raise InputError(
        f"{command}: nothing could be asked: none of the {len(run.results)} items got a reply "
        f"({count} x {reason}). Check the provider, the model name and the API key, then rerun."
    )


def main() -> None:
    """Entry point of the ``calibkit`` console script."""
    app(prog_name="calibkit")


if __name__ == "__main__":  # pragma: no cover
    main()
