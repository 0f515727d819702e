"""calibkit fit and calibkit apply: fit a calibrator with its BEFORE/AFTER ledger, and apply a
saved one to a file."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Annotated, Any

import typer

from .._errors import InputError
from ..audit import audit as run_audit
from ._common import (
    _BINNING,
    _COLUMNS,
    _NOISE,
    ConfidenceOption,
    Engine,
    EngineOption,
    FormatOption,
    HtmlOption,
    LabelOption,
    LogitsOption,
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
    positive: PositiveOption = None,
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
    from ..io import check_scale
    from ..recalibrate.base import save_calibrator
    from ..recalibrate.ledger import compare_calibration
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
            preds = _read_labelled(
                file, fmt, label, probs, logits, confidence, correct, prediction, positive
            )
            from_logits = preds.kind == "logits"
            params = calibrator.get_params()
            if not from_logits and "from_logits" in params:
                calibrator.set_params(from_logits=False)
            if clip is not None:
                _check_clip(method, params, preds.kind, preds.describe())
                calibrator.set_params(clip=clip)
            if not check_logits and "check_logits" in params:
                calibrator.set_params(check_logits=False)
            check_scale(calibrator, preds.kind, preds.describe(), where="fit")
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
    from ..recalibrate.base import save_calibrator
    from ..recalibrate.temperature import TemperatureScaling

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

    from ..recalibrate.split import stratified_split

    if ledger.design != "split":
        return None, None
    _, held = stratified_split(
        preds.labels, calibration_fraction=ledger.calibration_fraction, seed=ledger.seed
    )
    if held.size != ledger.n_eval:  # not the ledger's split: draw nothing rather than mislead
        return None, None
    x, y = preds.scores[held], preds.labels[held]
    settings = {"n_bins": bins, "n_boot": 1000, "n_sims": n_sims, "seed": ledger.seed}
    before = run_audit(x, y, from_logits=preds.kind == "logits", **settings)
    after = run_audit(ledger.calibrator.predict_proba(x), y, **settings)
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
