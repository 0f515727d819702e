"""calibkit monitor: calibration by group or time window, flagged against a reference."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Annotated

import typer

from .._errors import InputError
from ..monitoring import monitor as run_monitor
from ._common import (
    _NOISE,
    BinsOption,
    Closed,
    ClosedOption,
    CorrectOption,
    Engine,
    EngineOption,
    FormatOption,
    LabelOption,
    LogitsOption,
    PredictionOption,
    ProbsOption,
    QuietOption,
    RequireSignatureOption,
    ScoredConfidenceOption,
    SparkMasterOption,
    Strategy,
    StrategyOption,
    WeightOption,
    _check_output,
    _check_quiet,
    _columns,
    _echo_warnings,
    _engine_data,
    _fail,
    _json_or_verdict,
    _refuse_overwrite,
    _write,
    app,
)


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
    weight: WeightOption = None,
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
    no_labels: Annotated[
        bool,
        typer.Option(
            "--no-labels",
            help="Estimate each group's accuracy from confidence alone (fitted on the labelled "
            "reference group), with shift alarms that need no label; labels of other groups "
            "may be empty and are shown where a group has them all.",
        ),
    ] = False,
    method: Annotated[
        str,
        typer.Option(help="With --no-labels: the estimator, cbpe, atc or doc."),
    ] = "cbpe",
) -> None:
    """Calibration by group (time, cohort, version), flagged against a reference."""

    _check_quiet(quiet, json_out, "monitor")
    if no_labels and (reference_record is not None or engine is not Engine.memory or plot):
        _fail(
            "monitor: --no-labels compares groups with a labelled reference group in memory; "
            "leave out --reference-record, --engine and --plot."
        )
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
        weight=weight,
        format=fmt,
    )
    if no_labels:
        _label_free(file, by, time, reference, columns, method, level, seed, json_out, quiet)
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            reference_doc = None
            if reference_record is not None:
                from ..record import read_record

                reference_doc = read_record(reference_record, require_signature=require_signature)
            result = run_monitor(
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
                from ..report.figures import monitor_plot, save_figure

                figure = monitor_plot(result)
                _write(lambda: save_figure(plot, figure), plot, "monitor")
        except InputError as exc:
            _fail(str(exc))
    _echo_warnings(caught)
    if _json_or_verdict(result, json_out=json_out, quiet=quiet):
        return
    from rich.console import Console

    from ..report.terminal import render_monitor

    console = Console(highlight=False)
    render_monitor(result, console, source=f"{file.name} (engine {engine.value})", wide=wide)
    if plot is not None:
        console.print()
        console.print(f"wrote the figure to {plot}", soft_wrap=True)


def _label_free(
    file: Path,
    by: str,
    time: str | None,
    reference: str | None,
    columns: dict[str, object],
    method: str,
    level: float,
    seed: int,
    json_out: bool,
    quiet: bool,
) -> None:
    """calibkit monitor --no-labels: estimated accuracy per group, with shift alarms."""
    from ..estimate import estimate_by_period

    known = {"probs", "logits", "confidence", "label", "correct", "format"}
    refused = sorted(set(columns) - known)
    if refused:
        _fail(
            f"monitor: --no-labels reads scores with --label or --correct; "
            f"{', '.join('--' + r for r in refused)} is not read there."
        )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = estimate_by_period(
                file,
                by=by,
                time=time,
                reference=reference,
                method=method,
                level=level,
                seed=seed,
                **{k: val for k, val in columns.items()},  # type: ignore[arg-type]
            )
        except InputError as exc:
            _fail(str(exc))
    _echo_warnings(caught)
    if _json_or_verdict(result, json_out=json_out, quiet=quiet):
        return
    typer.echo(f"{file.name}: label-free monitor, reference fitted on its labelled group")
    typer.echo(str(result))
