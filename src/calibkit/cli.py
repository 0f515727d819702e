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


def main() -> None:
    """Entry point of the ``calibkit`` console script."""
    app(prog_name="calibkit")


if __name__ == "__main__":  # pragma: no cover
    main()
