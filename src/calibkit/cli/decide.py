"""calibkit decide: act / defer (/ ask) thresholds from stated costs, chosen on one split and
reported on the other."""

from __future__ import annotations

import json
import warnings
from typing import Annotated

import typer

from .._errors import InputError
from .._json import jsonable
from ._common import (
    CorrectOption,
    FormatOption,
    HtmlOption,
    LabelledFileArgument,
    LabelOption,
    LogitsOption,
    PositiveOption,
    PredictionOption,
    ProbsOption,
    QuietOption,
    ScoredConfidenceOption,
    _check_output,
    _check_quiet,
    _echo_warnings,
    _fail,
    _html_writer,
    _read_labelled,
    _refuse_overwrite,
    _write,
    _wrote,
    app,
)

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
    file: LabelledFileArgument,
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
    positive: PositiveOption = None,
    fmt: FormatOption = None,
    weight: Annotated[
        str | None,
        typer.Option(
            metavar="COLUMN",
            help="Column of sample weights (one non-negative number a row, not all zero): "
            "thresholds are chosen by the cost per unit weight, and every cost, coverage and "
            "risk is weighted; counts stay rows, with the weights beside them.",
            show_default=False,
            rich_help_panel=_SPLIT,
        ),
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print everything as one JSON object (only that).")
    ] = False,
    quiet: QuietOption = False,
    html: HtmlOption = None,
) -> None:
    """The policy table: thresholds chosen on one half, reported on the other."""
    from ..decide.binary import binary_costs
    from ..decide.predictions import decide_predictions
    from ..decide.thresholds import costs
    from ..report.decision_text import decision_verdict, render_decision

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
            pair: tuple[float | None, float | None] = (None, None)
            errors: tuple[float | None, float | None] = (None, None)
            if two_actions:  # the costs are checked before the file is read
                pair = costs(
                    l_wrong=wrong_cost,
                    l_defer=defer_cost,
                    where="decide (--wrong-cost, --defer-cost)",
                )
            if binary:
                errors = binary_costs(
                    l_false_positive=false_positive_cost,
                    l_false_negative=false_negative_cost,
                    where="decide (--false-positive-cost, --false-negative-cost)",
                )
            preds = _read_labelled(
                file, fmt, label, probs, logits, confidence, correct, prediction, positive, weight
            )
            result = decide_predictions(
                preds,
                l_wrong=pair[0],
                l_defer=pair[1],
                l_ask=ask_cost,
                l_ask_wrong=ask_wrong_cost,
                target_risk=target_risk,
                delta=delta,
                l_false_positive=errors[0],
                l_false_negative=errors[1],
                calibration_fraction=calibration_fraction,
                seed=seed,
                where="decide",
            )
            if write_report is not None:
                _write(
                    lambda: write_report(
                        html,
                        policy=result.table,
                        actions=result.actions,
                        guarantee=result.guarantee,
                        binary=result.binary,
                        title=f"calibkit decide: {preds.describe()}",
                    ),
                    html,
                    "decide",
                )
        except InputError as exc:
            _fail(str(exc))
    _echo_warnings(caught)

    if json_out:
        typer.echo(json.dumps(jsonable(result.to_dict()), indent=2, allow_nan=False))
        return
    if quiet:
        if result.table is not None:
            typer.echo(decision_verdict(result.table))
        if result.binary is not None:
            typer.echo(result.binary.verdict())
        return
    from rich.console import Console

    console = Console(highlight=False)
    render_decision(result, console)
    _wrote(console, html=html)
