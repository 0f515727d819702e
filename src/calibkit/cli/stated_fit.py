"""calibkit stated fit: a recalibration map per model on stated confidence, judged on held-out
questions (or on another question set)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Annotated

import typer

from .._errors import InputError
from .._json import jsonable
from ._common import _COLUMNS, NSimsOption, SeedOption, _echo_warnings, _fail
from .stated import stated_app


@stated_app.command(
    "fit",
    help="Fit a recalibration map per group (model) on stated confidences and judge it BEFORE "
    "and AFTER on held-out questions (no question is in both halves): ECE with its noise "
    "floor, Brier, NLL. With --transfer-from/--transfer-to, fit on one question set and judge "
    "on another.",
)
def stated_fit(
    file: Annotated[Path, typer.Argument(help="Table of answers.", show_default=False)],
    confidence: Annotated[
        str, typer.Option(help="Stated-confidence column.", rich_help_panel=_COLUMNS)
    ] = "stated_confidence",
    correct: Annotated[str, typer.Option(help="Outcome column.", rich_help_panel=_COLUMNS)] = (
        "correct"
    ),
    by: Annotated[
        str, typer.Option(help="Group columns, comma-separated.", rich_help_panel=_COLUMNS)
    ] = "llm",
    question: Annotated[
        str,
        typer.Option(help="Question column(s), comma-separated.", rich_help_panel=_COLUMNS),
    ] = "question_id",
    method: Annotated[
        str, typer.Option(help="isotonic, platt, histogram, beta or temperature.")
    ] = "isotonic",
    test_size: Annotated[float, typer.Option(help="Share of questions held out.")] = 0.3,
    clip: Annotated[
        float | None,
        typer.Option(help="For platt/beta/temperature: move values into [clip, 1 - clip]."),
    ] = None,
    transfer_from: Annotated[
        str | None, typer.Option(help="Fit on this question set.", show_default=False)
    ] = None,
    transfer_to: Annotated[
        str | None, typer.Option(help="Judge on this question set.", show_default=False)
    ] = None,
    question_set: Annotated[
        str, typer.Option(help="Question-set column (with transfer).", rich_help_panel=_COLUMNS)
    ] = "qset",
    bins: Annotated[int, typer.Option(help="Number of equal-width bins M.")] = 15,
    seed: SeedOption = 0,
    n_sims: NSimsOption = 1000,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the fits as JSON (only that, on stdout).")
    ] = False,
) -> None:
    """Fit and judge a map of stated confidence per group."""
    from ..stated.answers import column_names, read_answer_table
    from ..stated.fit import fit_stated

    command = "stated fit"
    if (transfer_from is None) != (transfer_to is None):
        _fail(f"{command}: pass --transfer-from and --transfer-to together.")
    transfer = None if transfer_from is None else (transfer_from, transfer_to)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            table = read_answer_table(file, where=command)
            result = fit_stated(
                table,
                confidence=confidence,
                correct=correct,
                by=column_names(by, "--by", where=command),
                question=column_names(question, "--question", where=command),
                method=method,
                test_size=test_size,
                seed=seed,
                transfer=transfer,
                question_set=question_set,
                clip=clip,
                n_bins=bins,
                n_sims=n_sims,
            )
        except InputError as exc:
            _fail(str(exc))
    _echo_warnings(caught)
    if json_out:
        document = {"source": str(file), **result.to_dict()}
        typer.echo(json.dumps(jsonable(document), indent=2, allow_nan=False))
        return
    typer.echo(str(result))
