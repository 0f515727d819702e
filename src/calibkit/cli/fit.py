"""calibkit fit and calibkit apply: fit a calibrator with its BEFORE/AFTER ledger, and apply a
saved one to a file."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Annotated, Any

import typer

from .._errors import InputError
from ._common import (
    _BINNING,
    _COLUMNS,
    ConfidenceOption,
    Engine,
    EngineOption,
    FormatOption,
    HtmlOption,
    LabelledFileArgument,
    LabelOption,
    LogitsOption,
    NSimsOption,
    PositiveOption,
    PredictionOption,
    ProbsOption,
    QuietOption,
    SparkMasterOption,
    _check_output,
    _check_quiet,
    _columns,
    _echo_warnings,
    _engine_data,
    _fail,
    _html_writer,
    _read_labelled,
    _refuse_overwrite,
    _write,
    _wrote,
    app,
)

# ----------------------------------------------------------------------------- fit / apply

_FIT = "Fitting and judging"


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
    file: LabelledFileArgument,
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
    positive: PositiveOption = None,
    fmt: FormatOption = None,
    weight: Annotated[
        str | None,
        typer.Option(
            metavar="COLUMN",
            help="Column of sample weights (one non-negative number a row, not all zero): the "
            "split carries them, the map is fitted with the calibration rows' weights and the "
            "ledger weighs the held-out rows; the saved map is the same JSON.",
            show_default=False,
            rich_help_panel=_COLUMNS,
        ),
    ] = None,
    bins: Annotated[int, typer.Option(help="Bins of the ECE.", rich_help_panel=_BINNING)] = 15,
    n_sims: NSimsOption = 1000,
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
    from ..recalibrate.base import save_calibrator
    from ..recalibrate.fit_predictions import fit_predictions
    from ..recalibrate.methods import METHOD_NAMES, make_calibrator

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
                ("--positive", positive),
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
        columns = _columns(
            label=label, logits=logits, probs=probs, confidence=confidence, weight=weight
        )
        if fmt is not None:
            columns["format"] = fmt
        _fit_at_scale(file, out, engine, spark_master, columns, json_out=json_out, quiet=quiet)
        return
    if html is not None and weight is not None:
        _fail(
            "fit: --html draws the held-out reliability diagrams unweighted; with --weight "
            "leave out --html (the ledger, --json and the saved map are weighted), or audit "
            "the held-out rows with calibkit audit --weight."
        )
    if html is not None:
        _check_output(html, "fit")
    write_report = _html_writer("fit") if html is not None else None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            calibrator = make_calibrator(method)
            preds = _read_labelled(
                file, fmt, label, probs, logits, confidence, correct, prediction, positive, weight
            )
            ledger = fit_predictions(
                preds,
                calibrator,
                calibration_fraction=0.5 if calibration_fraction is None else calibration_fraction,
                seed=seed,
                folds=folds,
                n_bins=bins,
                n_sims=n_sims,
                clip=clip,
                check_logits=check_logits,
            )
            save_calibrator(out, ledger.calibrator)
            if write_report is not None:
                from ..held_out import held_out_audits

                title = f"calibkit fit: {ledger.describe()}, from {preds.describe()}"
                pair = held_out_audits(
                    ledger,
                    preds.scores,
                    preds.labels,
                    from_logits=preds.kind == "logits",
                    n_bins=bins,
                    n_sims=n_sims,
                )
                _write(
                    lambda: write_report(
                        html, ledger=ledger, title=title, before=pair.before, after=pair.after
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
    from ..report.ledger_text import ledger_verdict, render_ledger

    if quiet:
        typer.echo(ledger_verdict(ledger, out))
        return
    from rich.console import Console

    console = Console(highlight=False)
    render_ledger(ledger, console, source=preds.describe(), out=out)
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
    """``calibkit fit --engine``: read (start the engine's session), fit, save, render."""
    from ..recalibrate.base import save_calibrator
    from ..recalibrate.fit_predictions import fit_at_scale

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            data = _engine_data(file, engine, spark_master, "fit")
            result = fit_at_scale(data, engine=engine.value, columns=columns)
            save_calibrator(out, result.calibrator)
        except InputError as exc:
            _fail(str(exc))
        except OSError as exc:
            _fail(f"fit: cannot write '{out}': {exc.strerror or exc}.")
    _echo_warnings(caught)
    if json_out:
        document = {**result.to_dict(), "out": str(out)}
        typer.echo(json.dumps(document, indent=2, allow_nan=False))
        return
    from ..report.ledger_text import scale_fit_lines

    lines = scale_fit_lines(result, source=file.name, out=out)
    for line in lines[:1] if quiet else lines:
        typer.echo(line)


@app.command(
    help="Calibrate a file's scores with a saved calibrator and write the table.\n\n"
    "The score columns the calibrator reads are replaced, where they stood, by the calibrated "
    "probabilities prob_0 .. prob_{C-1} (prob_1 alone for binary scores); every other column "
    "is kept under its own name (--keep chooses which; the label column always is), so that "
    "calibkit audit reads the output as it is. The output is written to a temporary file "
    "beside --out and renamed: a failed run leaves no partial file."
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
            help="Where to write the calibrated table (.parquet or .csv).",
            show_default=False,
        ),
    ] = None,
    keep: Annotated[
        str | None,
        typer.Option(
            metavar="COLS",
            help="The other columns to keep: names or quoted globs, comma-separated ('' keeps "
            "none; default: all). The label column is always kept.",
            show_default=False,
        ),
    ] = None,
    label: Annotated[
        str | None,
        typer.Option(
            help="Label column, kept under its name (detected when named label, y, y_true, ...).",
            rich_help_panel=_COLUMNS,
        ),
    ] = None,
    probs: ProbsOption = None,
    logits: LogitsOption = None,
    confidence: ConfidenceOption = None,
    fmt: FormatOption = None,
) -> None:
    """Calibrate a file's scores with a saved calibrator and write the table.

    The score columns are replaced, where they stood, by prob_0 .. prob_{C-1} (prob_1 alone
    for binary scores); every other column is kept under its own name (--keep chooses which;
    the label always is). The file is written to a temporary file beside --out and renamed: a
    failed run leaves no partial file.
    """
    from ..io import TABLE_OUTPUTS, calibrate_table, open_any, plan_scores, write_table
    from ..recalibrate.base import load_calibrator

    if out is None:
        _fail("apply: --out is required: the .parquet or .csv file to write.")
    _check_output(out, "apply")
    _refuse_overwrite("apply", [("--out", out)], [file, calibrator_file])
    if out.suffix.lower() not in TABLE_OUTPUTS:
        _fail(f"apply: cannot write '{out}': --out must end in {', '.join(TABLE_OUTPUTS)}.")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            calibrator = load_calibrator(calibrator_file)
            with open_any(file, fmt) as src:
                plan = plan_scores(
                    src, label=label, probs=probs, logits=logits, confidence=confidence
                )
                result = calibrate_table(src, calibrator, plan, keep=keep, where="apply")
            write_table(out, result.table, where="apply")
        except InputError as exc:
            _fail(str(exc))
        except OSError as exc:
            _fail(f"apply: cannot write '{out}': {exc.strerror or exc}.")
    _echo_warnings(caught)

    names = result.table.column_names
    shown = names[0] if len(names) == 1 else f"{names[0]} .. {names[-1]}"
    typer.echo(
        f"calibkit apply: wrote {result.n} rows ({shown}) to {out}, calibrated by "
        f"{type(calibrator).__name__} from {calibrator_file.name}."
    )
    if result.left_out:
        listed = ", ".join(f"{name} ({why})" for name, why in result.left_out.items())
        typer.echo(f"not copied (not one value a row): {listed}.")
