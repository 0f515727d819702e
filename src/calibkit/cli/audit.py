"""calibkit audit: the whole calibration audit of a prediction file."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from .._errors import InputError
from ..audit import GroupedAudit
from ..audit import audit as run_audit
from ._common import (
    _BINNING,
    _COLUMNS,
    _RECORD,
    BinsOption,
    Closed,
    ClosedOption,
    CorrectOption,
    Engine,
    EngineOption,
    FormatOption,
    HtmlOption,
    Interval,
    LabelOption,
    NBootOption,
    NSimsOption,
    PositiveOption,
    PredictionOption,
    ProbsOption,
    QuietOption,
    ScoredConfidenceOption,
    SeedOption,
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
    _html_writer,
    _json_or_verdict,
    _refuse_overwrite,
    _write,
    _wrote,
    app,
)


@app.command()
def audit(
    file: Annotated[
        Path,
        typer.Argument(
            help="Predictions: .csv, .tsv, .parquet, .jsonl or .npz.", show_default=False
        ),
    ],
    label: LabelOption = None,
    probs: ProbsOption = None,
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
    positive: PositiveOption = None,
    weight: WeightOption = None,
    fmt: FormatOption = None,
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
    seed: SeedOption = 0,
    n_boot: NBootOption = 1000,
    n_sims: NSimsOption = 1000,
    by: Annotated[
        str | None,
        typer.Option(
            help="Audit each group of this column too (same bins; groups beyond their noise "
            "floor flagged at the family-wise --level, Bonferroni). Memory engine only.",
            show_default=False,
        ),
    ] = None,
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
    from calibkit.io import naming_columns, read_predictions

    _check_quiet(quiet, json_out, "audit")
    if positive is not None and engine is not Engine.memory:
        _fail(
            f"audit: --positive turns the label column into the outcome in memory; with "
            f"--engine {engine.value}, write the 0/1 outcome (label == VALUE) as the label "
            "column, or leave out --engine."
        )
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
    if by is not None:
        if engine is not Engine.memory:
            _fail(
                f"audit: --by runs on the memory engine, not --engine {engine.value}; leave out "
                "--engine, or run calibkit monitor FILE --by COLUMN --engine "
                f"{engine.value} for each group's ECE and noise floor at scale."
            )
        if record is not None or calibrator is not None:
            _fail(
                "audit: --record writes the record of one audit; with --by, audit the rows "
                "without --by to record them (or leave out --record and --calibrator)."
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
                from ..recalibrate.base import load_calibrator

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
            if by is not None:
                grouped = _audit_by(
                    file,
                    by,
                    fmt=fmt,
                    settings=settings,
                    pos_label=positive,
                    columns=_columns(
                        label=label,
                        probs=probs,
                        logits=logits,
                        confidence=confidence,
                        correct=correct,
                        prediction=prediction,
                        weight=weight,
                    ),
                )
                if write_report is not None:
                    title = f"calibkit audit by {by}: {file.name}"
                    _write(
                        lambda: write_report(
                            html, audit=grouped.pooled, grouped=grouped, title=title
                        ),
                        html,
                        "audit",
                    )
            elif engine is not Engine.memory:
                columns = _columns(
                    label=label,
                    probs=probs,
                    logits=logits,
                    confidence=confidence,
                    correct=correct,
                    prediction=prediction,
                    weight=weight,
                )
                if fmt is not None:  # every engine reads the format it is told
                    columns["format"] = fmt
                data = _engine_data(file, engine, spark_master, "audit")
                with _progress_bar(
                    PROGRESS_MIN_ROWS, enabled=not (json_out or quiet), what="rows"
                ) as progress:
                    result = run_audit(
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
                    pos_label=positive,
                    weight=weight,
                )
                source = preds.describe()
                with (
                    _progress_bar(preds.n, enabled=not (json_out or quiet)) as progress,
                    naming_columns(preds.columns, labels=preds.labels),
                ):
                    result = run_audit(
                        preds.scores,
                        preds.labels,
                        from_logits=preds.kind == "logits",
                        progress=progress,
                        sample_weight=preds.sample_weight,
                        **settings,
                    )
            document = None
            if by is None and (record is not None or html is not None):
                from ..record import calibration_record, write_record

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
            if write_report is not None and by is None:
                title = f"calibkit audit: {source}"
                _write(
                    lambda: write_report(html, audit=result, record=document, title=title),
                    html,
                    "audit",
                )
        except InputError as exc:
            _fail(str(exc))
    _echo_warnings(caught)

    if by is not None:
        _print_grouped(grouped, file, json_out=json_out, quiet=quiet, html=html)
        return
    if _json_or_verdict(result, json_out=json_out, quiet=quiet):
        return
    from rich.console import Console

    from ..report.terminal import render_audit

    console = Console(highlight=False)
    render_audit(result, console, source=source)
    _wrote(console, record=record, html=html)


def _audit_by(
    file: Path,
    by: str,
    *,
    fmt: str | None,
    settings: dict[str, Any],
    pos_label: str | None,
    columns: dict[str, Any],
) -> GroupedAudit:
    """``ck.audit(FILE, by=COLUMN)`` with the command's column options."""
    if fmt is not None:
        columns["format"] = fmt
    return run_audit(file, by=by, columns=columns or None, pos_label=pos_label, **settings)


def _print_grouped(
    grouped: GroupedAudit, file: Path, *, json_out: bool, quiet: bool, html: Path | None
) -> None:
    if _json_or_verdict(grouped, json_out=json_out, quiet=quiet):
        return
    from rich.console import Console

    from ..report.grouped import render_grouped

    console = Console(highlight=False)
    render_grouped(grouped, console, source=file.name)
    _wrote(console, html=html)


#: Inputs at least this large get a progress bar (on a terminal): their audit takes seconds.
PROGRESS_MIN_ROWS = 200_000


@contextlib.contextmanager
def _progress_bar(n_rows: int, *, enabled: bool, what: str = "stages") -> Iterator[Any]:
    """A rich progress bar on stderr, fed by ``run_audit(progress=...)``, for large inputs on a
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
