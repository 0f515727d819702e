"""calibkit decide: act / defer (/ ask) thresholds from stated costs, chosen on one split and
reported on the other."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Annotated

import numpy as np
import typer

from .._errors import InputError
from .._json import jsonable
from ._common import (
    CorrectOption,
    FormatOption,
    HtmlOption,
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
    positive: PositiveOption = None,
    fmt: FormatOption = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print everything as one JSON object (only that).")
    ] = False,
    quiet: QuietOption = False,
    html: HtmlOption = None,
) -> None:
    """The policy table: thresholds chosen on one half, reported on the other."""
    from ..decide.binary import binary_costs, binary_policy_table
    from ..decide.policy import decision_report, policy_table
    from ..decide.thresholds import costs
    from ..recalibrate.split import stratified_split

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
            preds = _read_labelled(
                file, fmt, label, probs, logits, confidence, correct, prediction, positive
            )
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
    from .. import _validate as v
    from ..decide.coverage import validated

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

    from ..decide._format import threshold_text

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
