"""calibkit stated audit and calibkit stated run: the confidence language models state."""

from __future__ import annotations

import json
import warnings
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from .._errors import InputError
from .._files import check_outputs
from .._json import jsonable
from ._common import (
    _BINNING,
    _COLUMNS,
    HtmlOption,
    NBootOption,
    NSimsOption,
    QuietOption,
    SeedOption,
    _check_output,
    _check_quiet,
    _echo_warnings,
    _fail,
    _html_writer,
    _write,
    _wrote,
    app,
)

# ----------------------------------------------------------------------------- stated

stated_app = typer.Typer(
    name="stated",
    help="Stated confidence of language models: elicit it (run) and audit it (audit).",
    no_args_is_help=True,
)
app.add_typer(stated_app, name="stated")


class Provider(StrEnum):
    openai = "openai"
    anthropic = "anthropic"
    replay = "replay"


class StatedSource(StrEnum):
    verbalized = "verbalized"
    logprob = "logprob"
    consistency = "consistency"


@stated_app.command(
    "audit",
    help="Audit stated (and token) confidences per model and question set: accuracy, ECE with "
    "its interval and noise floor, Brier, NLL, AUC, the share of multiples of 0.05 and the most "
    "common stated values, and which source is better calibrated.\n\n"
    "FILE is a table (.csv, .tsv, .parquet, .jsonl) with one row per answer, or a reply store "
    "(.sqlite/.db, written by calibkit stated run) with --decision-set for the labels; a store is "
    "audited per run (model, prompt and settings) unless --pool. Several FILEs may be given when "
    "all are lm-evaluation-harness samples files (lm_eval --log_samples: samples_*.jsonl): "
    "multiple-choice tasks are audited by the softmax over the options' log-likelihoods, "
    "generation tasks by the confidence stated in the reply.",
)
def stated_audit(
    files: Annotated[
        list[Path],
        typer.Argument(
            help="Table of answers, a reply store, or lm-evaluation-harness samples files.",
            show_default=False,
            metavar="FILE...",
        ),
    ],
    llm: Annotated[
        str | None,
        typer.Option(
            help="With harness samples: the model's name (default: the run's results file, "
            "else the folder the harness wrote the samples to).",
            show_default=False,
            rich_help_panel=_COLUMNS,
        ),
    ] = None,
    group_by: Annotated[
        str | None,
        typer.Option(
            help="Group columns, comma-separated (table default: llm,qset; store: "
            "llm,prompt,settings, one group per run; '' for none).",
            show_default=False,
            rich_help_panel=_COLUMNS,
        ),
    ] = None,
    sources: Annotated[
        str | None,
        typer.Option(
            help="Confidence columns, comma-separated (table default: "
            "stated_confidence,chosen_token_confidence; store: stated_confidence).",
            show_default=False,
            rich_help_panel=_COLUMNS,
        ),
    ] = None,
    correct: Annotated[
        str, typer.Option(help="Outcome column (0/1, bool, TRUE/FALSE).", rich_help_panel=_COLUMNS)
    ] = "correct",
    decision_set: Annotated[
        Path | None,
        typer.Option(
            help="With a reply store: the decision set (JSON lines with id and label).",
            show_default=False,
            rich_help_panel=_COLUMNS,
        ),
    ] = None,
    bins: Annotated[int, typer.Option(help="Number of bins M.", rich_help_panel=_BINNING)] = 15,
    level: Annotated[
        float, typer.Option(help="Level of the ECE interval.", rich_help_panel=_BINNING)
    ] = 0.95,
    seed: SeedOption = 0,
    n_boot: NBootOption = 1000,
    n_sims: NSimsOption = 1000,
    pool: Annotated[
        bool,
        typer.Option(
            "--pool",
            help="With a reply store: let a group pool several runs (otherwise refused).",
            rich_help_panel=_COLUMNS,
        ),
    ] = False,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the audit as JSON (only that, on stdout).")
    ] = False,
    quiet: QuietOption = False,
    html: HtmlOption = None,
    wide: Annotated[
        bool,
        typer.Option(
            "--wide",
            help="One table with every column (Brier, NLL, the coarseness of the stated values, "
            "the most common values); it needs a terminal of about 200 columns.",
        ),
    ] = False,
) -> None:
    """Audit stated confidences per model and source: accuracy, ECE with its interval and noise
    floor, Brier, NLL, AUC, AURC, the coarseness of the stated values, and (with --html) each
    group's reliability diagram and table."""
    from ..report.terminal import render_stated_audit, stated_verdict_lines
    from ..stated.answers import audit_answers

    command = "stated audit"
    _check_quiet(quiet, json_out, command)
    if bins < 1:
        _fail(f"{command}: --bins must be at least 1, got {bins}.")
    if not 0.0 < level < 1.0:
        _fail(f"{command}: --level must lie strictly between 0 and 1, got {level}.")
    name = files[0].name if len(files) == 1 else f"{files[0].name} and {len(files) - 1} more"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = audit_answers(
                files,
                llm=llm,
                group_by=group_by,
                sources=sources,
                correct=correct,
                decision_set=decision_set,
                pool=pool,
                n_bins=bins,
                level=level,
                seed=seed,
                n_boot=n_boot,
                n_sims=n_sims,
                where=command,
            )
        except InputError as exc:
            _fail(str(exc))
    _echo_warnings(caught)
    if html is not None:
        write_report = _html_writer(command)
        _write(
            lambda: write_report(html, stated=result, title=f"Stated confidence: {name}"),
            html,
            command,
        )
        if not json_out:
            typer.echo(f"wrote HTML report to {html}", err=True)

    if json_out:
        source = str(files[0]) if len(files) == 1 else [str(f) for f in files]
        document = {"source": source, **result.to_dict()}
        typer.echo(json.dumps(jsonable(document), indent=2, allow_nan=False))
        return
    if quiet:
        for line in stated_verdict_lines(result):
            typer.echo(line)
        return
    from rich.console import Console

    render_stated_audit(result, Console(highlight=False), source=name, wide=wide)


@stated_app.command(
    "run",
    help="Ask a language model every question of a decision set for an answer and a stated "
    "confidence, store every reply (rerunning resumes), and audit the parsed confidences against "
    "the labels.\n\n"
    "Nothing is sent anywhere but to the --provider given (and --base-url when set); keys are "
    "read from the environment (--api-key-env). Unparsed replies are counted and left out of "
    "the audit, never given a fallback confidence.",
)
def stated_run(
    decision_set: Annotated[
        Path,
        typer.Argument(help="JSON lines with id, question, options and label.", show_default=False),
    ],
    provider: Annotated[
        Provider | None,
        typer.Option(help="openai, anthropic, or replay (from the store).", show_default=False),
    ] = None,
    model: Annotated[str | None, typer.Option(help="Model name.", show_default=False)] = None,
    base_url: Annotated[
        str | None,
        typer.Option(help="API base URL (a local or compatible server).", show_default=False),
    ] = None,
    api_key_env: Annotated[
        str | None,
        typer.Option(
            help="Environment variable holding the API key (default OPENAI_API_KEY or "
            "ANTHROPIC_API_KEY).",
            show_default=False,
        ),
    ] = None,
    store: Annotated[
        Path, typer.Option(help="Reply store (SQLite); rerunning with it resumes.")
    ] = Path("replies.sqlite"),
    samples: Annotated[int, typer.Option(help="Replies per item.")] = 1,
    source: Annotated[
        StatedSource, typer.Option(help="Where the confidence comes from.")
    ] = StatedSource.verbalized,
    concurrency: Annotated[int, typer.Option(help="Requests in flight at once.")] = 4,
    max_retries: Annotated[int, typer.Option(help="Extra attempts after a malformed reply.")] = 3,
    bins: Annotated[int, typer.Option(help="Number of bins M of the audit.")] = 15,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap and the noise floor.")] = 0,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the run and its audit as JSON (only that).")
    ] = False,
    html: HtmlOption = None,
) -> None:
    """Elicit answers and stated confidences, then audit them."""

    from ..stated.answers import read_items
    from ..stated.elicit import ProviderUnreachable, elicit
    from ..stated_run import audit_elicitation

    command = "stated run"
    if provider is None or model is None:
        missing = "--provider" if provider is None else "--model"
        _fail(
            f"{command}: {missing} is required: nothing is sent anywhere unless a provider and "
            "a model are named, e.g. --provider openai --model gpt-4o-mini."
        )
    if samples < 1 or concurrency < 1 or max_retries < 0 or bins < 1:
        _fail(f"{command}: --samples, --concurrency and --bins must be >= 1, --max-retries >= 0.")
    if html is not None:
        _check_output(html, command)
    write_report = _html_writer(command) if html is not None else None

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            items = read_items(decision_set, where=command)
            if store.is_dir():
                raise InputError(f"{command}: --store '{store}' is a directory; pass a file.")
            if not store.parent.exists():
                raise InputError(f"{command}: the folder of --store '{store}' does not exist.")
            check_outputs([("--store", store), ("--html", html)], [decision_set], where=command)
            try:
                run = elicit(
                    items,
                    provider=provider.value,
                    model=model,
                    store=store,
                    samples=samples,
                    source=source.value,
                    concurrency=concurrency,
                    max_retries=max_retries,
                    base_url=base_url,
                    api_key_env=api_key_env,
                )
            except ProviderUnreachable as exc:
                raise InputError(f"{command}: {exc}") from None
            except ValueError as exc:  # InputError and StoreError included
                text = str(exc)
                raise InputError(f"{command}: {text}{'' if text.endswith('.') else '.'}") from None
            result = audit_elicitation(run, items, n_bins=bins, seed=seed, where=command)
            if write_report is not None and result.audit is not None:
                title = f"calibkit stated run: {provider.value}:{model} on {decision_set}"
                audited = result.audit
                _write(lambda: write_report(html, audit=audited, title=title), html, command)
        except InputError as exc:
            _fail(str(exc))
    _echo_warnings(caught)

    if json_out:
        summary = {"decision_set": str(decision_set), "store": str(store), **result.to_dict()}
        typer.echo(json.dumps(jsonable(summary), indent=2, allow_nan=False))
        return
    from rich.console import Console

    from ..report.terminal import render_stated_run

    console = Console(highlight=False)
    render_stated_run(result, console, decision_set=str(decision_set), store=str(store))
    _wrote(console, html=html if result.audit is not None else None)
