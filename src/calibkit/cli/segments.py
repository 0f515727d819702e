"""calibkit segments: where a model is miscalibrated, by the segments of a few columns."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Annotated

import typer

from .._errors import InputError
from ._common import (
    _BINNING,
    _NOISE,
    BinsOption,
    CorrectOption,
    FormatOption,
    LabelOption,
    LogitsOption,
    PositiveOption,
    PredictionOption,
    ProbsOption,
    QuietOption,
    ScoredConfidenceOption,
    WeightOption,
    _check_quiet,
    _echo_warnings,
    _fail,
    _json_or_verdict,
    _read_labelled,
    app,
)

_SEARCH = "Search"


def _names(text: str | None) -> list[str]:
    return [] if text is None else [name.strip() for name in text.split(",") if name.strip()]


@app.command(
    help="Find the segments of one or two feature columns where the forecasts are calibrated "
    "worse than elsewhere: searched on one half of the rows, each confirmed (or not) on the "
    "other half."
)
def segments(
    file: Annotated[
        Path,
        typer.Argument(help="Predictions with labels and the feature columns.", show_default=False),
    ],
    features: Annotated[
        str,
        typer.Option(
            help="Feature columns, comma-separated (text is categorical; numbers are cut at "
            "their quantiles).",
            show_default=False,
        ),
    ],
    categorical: Annotated[
        str | None,
        typer.Option(
            help="Numeric features to take value by value, comma-separated.",
            show_default=False,
            rich_help_panel=_SEARCH,
        ),
    ] = None,
    min_size: Annotated[
        int,
        typer.Option(help="Fewest rows a segment may have in each half.", rich_help_panel=_SEARCH),
    ] = 100,
    max_segments: Annotated[
        int,
        typer.Option(help="Segments carried to the held-out half.", rich_help_panel=_SEARCH),
    ] = 10,
    depth: Annotated[
        int, typer.Option(help="Features per segment: 1, or 1 and 2.", rich_help_panel=_SEARCH)
    ] = 2,
    quantiles: Annotated[
        int, typer.Option(help="Levels of a numeric feature.", rich_help_panel=_SEARCH)
    ] = 4,
    max_levels: Annotated[
        int,
        typer.Option(help="Most values a categorical feature may have.", rich_help_panel=_SEARCH),
    ] = 50,
    search_fraction: Annotated[
        float, typer.Option(help="Share of the rows the search sees.", rich_help_panel=_SEARCH)
    ] = 0.5,
    label: LabelOption = None,
    probs: ProbsOption = None,
    logits: LogitsOption = None,
    confidence: ScoredConfidenceOption = None,
    correct: CorrectOption = None,
    prediction: PredictionOption = None,
    positive: PositiveOption = None,
    weight: WeightOption = None,
    fmt: FormatOption = None,
    bins: BinsOption = 10,
    level: Annotated[
        float,
        typer.Option(
            help="Family-wise level of the confirmation, and of the intervals.",
            rich_help_panel=_BINNING,
        ),
    ] = 0.95,
    seed: Annotated[
        int, typer.Option(help="Seed of the split and the simulations.", rich_help_panel=_NOISE)
    ] = 0,
    n_sims: Annotated[
        int, typer.Option(help="Simulations of each test and noise floor.", rich_help_panel=_NOISE)
    ] = 2000,
    n_boot: Annotated[
        int, typer.Option(help="Bootstrap resamples per interval.", rich_help_panel=_NOISE)
    ] = 1000,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the search as JSON (only that, on stdout).")
    ] = False,
    quiet: QuietOption = False,
    wide: Annotated[
        bool,
        typer.Option("--wide", help="Add the gap intervals, p-values and search-half numbers."),
    ] = False,
) -> None:
    """Calibration by segment: found on one half, confirmed on the other."""
    from ..forecasts import prepare
    from ..io import naming_columns
    from ..segments import find_miscalibrated_segments, read_features

    _check_quiet(quiet, json_out, "segments")
    names = _names(features)
    if not names:
        _fail("segments: --features names no column; pass e.g. --features region,age.")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            preds = _read_labelled(
                file, fmt, label, probs, logits, confidence, correct, prediction, positive, weight
            )
            columns = read_features(file, names, fmt=fmt)
            with naming_columns(preds.columns, labels=preds.labels):
                f = prepare(
                    preds.scores, preds.labels, from_logits=preds.kind == "logits", where="segments"
                )
            result = find_miscalibrated_segments(
                f.conf,
                f.outcome,
                columns,
                min_size=min_size,
                max_segments=max_segments,
                depth=depth,
                n_quantiles=quantiles,
                categorical=_names(categorical),
                max_levels=max_levels,
                n_bins=bins,
                level=level,
                search_fraction=search_fraction,
                n_sims=n_sims,
                n_boot=n_boot,
                seed=seed,
                sample_weight=preds.sample_weight,
            )
        except InputError as exc:
            _fail(str(exc))
    _echo_warnings(caught)
    if _json_or_verdict(result, json_out=json_out, quiet=quiet):
        return
    from rich.console import Console

    from ..report.segments_text import render_segments

    console = Console(highlight=False)
    render_segments(result, console, source=preds.describe(), wide=wide)
