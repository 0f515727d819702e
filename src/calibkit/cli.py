"""The ``calibkit`` command line: read a prediction file, call the library, render.

Thin by design: every number comes from :func:`calibkit.audit`, every check from the reader and
the library. Exit status 0 on success, 2 on bad input (one line on stderr, no traceback).
"""

from __future__ import annotations

import json
import warnings
from enum import StrEnum
from pathlib import Path
from typing import Annotated, NoReturn

import numpy as np
import typer

from . import __version__
from ._errors import InputError

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
    typer.echo(f"calibkit: error: {' '.join(message.split())}", err=True)
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
    confidence: Annotated[
        str | None,
        typer.Option(
            help="Confidence column, with --correct, or with --prediction and --label.",
            rich_help_panel=_COLUMNS,
        ),
    ] = None,
    correct: Annotated[
        str | None,
        typer.Option(
            help="Outcome column: 1/0 or TRUE/FALSE (the prediction was correct).",
            rich_help_panel=_COLUMNS,
        ),
    ] = None,
    prediction: Annotated[
        str | None,
        typer.Option(
            help="Predicted-class column, compared with --label.", rich_help_panel=_COLUMNS
        ),
    ] = None,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="csv, tsv, parquet, jsonl or npz (default: from the extension).",
            rich_help_panel=_COLUMNS,
        ),
    ] = None,
    bins: Annotated[int, typer.Option(help="Number of bins M.", rich_help_panel=_BINNING)] = 15,
    strategy: Annotated[
        Strategy, typer.Option(help="Equal-width or equal-mass bins.", rich_help_panel=_BINNING)
    ] = Strategy.uniform,
    closed: Annotated[
        Closed,
        typer.Option(help="Which side of a bin includes its edge.", rich_help_panel=_BINNING),
    ] = Closed.right,
    interval: Annotated[
        Interval, typer.Option(help="Interval for each bin's accuracy.", rich_help_panel=_BINNING)
    ] = Interval.wilson,
    level: Annotated[
        float, typer.Option(help="Level of every interval.", rich_help_panel=_BINNING)
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
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the audit as JSON (only that, on stdout).")
    ] = False,
) -> None:
    """Reliability table, ECE with its noise floor, Brier, log loss, AUC, and a verdict."""
    import calibkit as ck
    from calibkit.io import read_predictions

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
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
            result = ck.audit(
                preds.scores,
                preds.labels,
                from_logits=preds.kind == "logits",
                n_bins=bins,
                strategy=strategy.value,
                closed=closed.value,
                interval=None if interval is Interval.none else interval.value,
                level=level,
                n_boot=n_boot,
                n_sims=n_sims,
                seed=seed,
            )
        except InputError as exc:
            _fail(str(exc))
    for w in caught:
        typer.echo(f"calibkit: warning: {' '.join(str(w.message).split())}", err=True)

    if json_out:
        typer.echo(json.dumps(result.to_dict(), indent=2, allow_nan=False))
        return
    from rich.console import Console

    from .report.terminal import render_audit

    render_audit(result, Console(highlight=False), source=preds.describe())


# ----------------------------------------------------------------------------- fit / apply

_FIT = "Fitting and judging"

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
FormatOption = Annotated[
    str | None,
    typer.Option(
        "--format",
        help="csv, tsv, parquet, jsonl or npz (default: from the extension).",
        rich_help_panel=_COLUMNS,
    ),
]

#: Extensions ``calibkit apply --out`` writes.
_TABLE_OUTPUTS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv"}


@app.command(
    help="Fit a calibrator on a calibration split, print the BEFORE/AFTER ledger on the "
    "held-out rows, and save the fitted map as JSON.\n\n"
    "The saved map is the one the ledger judges: fitted on the calibration split only (with "
    "--folds, on all rows, and the ledger holds out-of-fold estimates). Logit columns are fed "
    "to the map as logits, probability columns as probabilities (from_probs=True where the "
    "method has that setting)."
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
    prediction: Annotated[
        str | None,
        typer.Option(
            help="Predicted-class column, compared with --label.", rich_help_panel=_COLUMNS
        ),
    ] = None,
    fmt: FormatOption = None,
    bins: Annotated[int, typer.Option(help="Bins of the ECE.", rich_help_panel=_BINNING)] = 15,
    n_sims: Annotated[
        int, typer.Option(help="Simulations for the ECE noise floor.", rich_help_panel=_NOISE)
    ] = 1000,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the ledger as JSON (only that, on stdout).")
    ] = False,
) -> None:
    """Fit a calibrator on a calibration split, print the BEFORE/AFTER ledger on the held-out
    rows, and save the fitted map as JSON.

    The saved map is the one the ledger judges: fitted on the calibration split only (with
    --folds, on all rows; the ledger then holds out-of-fold estimates). Logit columns are fed
    to the map as logits; probability columns as probabilities (from_probs=True where the
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
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            calibrator = make_calibrator(method)
            preds = _read_labelled(file, fmt, label, probs, logits, confidence, correct, prediction)
            from_logits = preds.kind == "logits"
            if not from_logits and "from_probs" in calibrator.get_params():
                calibrator.set_params(from_probs=True)
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
            )
            save_calibrator(ledger.calibrator, out)
        except InputError as exc:
            _fail(str(exc))
        except OSError as exc:
            _fail(f"fit: cannot write '{out}': {exc.strerror or exc}.")
    for w in caught:
        typer.echo(f"calibkit: warning: {' '.join(str(w.message).split())}", err=True)

    if json_out:
        typer.echo(json.dumps(ledger.to_dict(), indent=2, allow_nan=False))
        return
    from rich.console import Console

    _render_ledger(ledger, Console(highlight=False), source=preds.describe(), out=out)


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
    for w in caught:
        typer.echo(f"calibkit: warning: {' '.join(str(w.message).split())}", err=True)

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
            labels = _one_d(src, label_name, "numeric")
            _same_length(src, {names[0]: scores, label_name: labels})
        shown = names[0] if len(names) == 1 else f"{names[0]} .. {names[-1]}"
        source = f"{file.name} ({kind}={shown})"
    return kind, scores, labels, source


def _check_scale(calibrator: object, kind: str, source: str, *, command: str) -> None:
    """Logits go to a map that reads logits, probabilities to one that reads probabilities."""
    params = calibrator.get_params()  # type: ignore[attr-defined]
    name = type(calibrator).__name__
    if "from_probs" not in params:
        # maps without the setting read probabilities when their class says so
        if kind == "logits" and getattr(type(calibrator), "domain", None) == "probs":
            raise InputError(
                f"{command}: {name} calibrates probabilities, but {source} gives logits; pass "
                "probability columns with --probs (the softmax, or sigmoid, of the logits)."
            )
        return
    if command == "fit":
        return  # fit sets from_probs to match the columns
    if kind == "logits" and params["from_probs"]:
        raise InputError(
            f"{command}: the {name} was fitted on probabilities (from_probs=True), but {source} "
            "gives logits; pass the probability columns with --probs."
        )
    if kind != "logits" and not params["from_probs"]:
        raise InputError(
            f"{command}: the {name} was fitted on logits, but {source} gives {kind}; pass the "
            "logit columns with --logits."
        )


def _write_table_atomic(target: Path, columns: dict[str, np.ndarray]) -> None:
    """Write columns as Parquet or CSV to a temporary file beside ``target``, then rename it
    over ``target``: readers see the old file or the whole new one, never a partial one."""
    import os
    import tempfile

    import pyarrow as pa

    table = pa.table({name: pa.array(values) for name, values in columns.items()})
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the usual permissions
        if _TABLE_OUTPUTS[target.suffix.lower()] == "csv":
            import pyarrow.csv as pcsv

            pcsv.write_csv(table, tmp)
        else:
            import pyarrow.parquet as pq

            pq.write_table(table, tmp)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _render_ledger(ledger, console, *, source: str, out: Path) -> None:
    """The ledger as rich tables: header, seed 000's table, notes, and where the map went."""
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
        console.print(line)
    console.print()
    console.print(f"wrote {out}: {ledger.calibrator_name} fitted on {ledger.fitted_on}.")


def main() -> None:
    """Entry point of the ``calibkit`` console script."""
    app(prog_name="calibkit")


if __name__ == "__main__":  # pragma: no cover
    main()
