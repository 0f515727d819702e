"""calibkit stated audit and calibkit stated run: the confidence language models state."""

from __future__ import annotations

import json
import warnings
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

from .._errors import InputError
from .._files import check_outputs
from .._json import jsonable
from ..audit import audit as run_audit
from ._common import (
    _BINNING,
    _COLUMNS,
    _NOISE,
    HtmlOption,
    QuietOption,
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


_STORE_SUFFIXES = (".sqlite", ".sqlite3", ".db")
_TABLE_FORMATS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
}


def _names(spec: str, option: str, command: str) -> list[str]:
    names = [n.strip() for n in spec.split(",") if n.strip()]
    if len(set(names)) != len(names):
        raise InputError(f"{command}: {option} names a column twice: {spec!r}.")
    return names


def _check_file(path: Path, command: str, what: str) -> None:
    if not path.exists():
        raise InputError(f"{command}: no such file: '{path}'.")
    if path.is_dir():
        raise InputError(f"{command}: '{path}' is a directory; pass {what}.")


def _read_table(path: Path, command: str):
    """A CSV, TSV, Parquet or JSON-lines file as a pyarrow Table (InputError when it cannot be)."""
    import pyarrow as pa

    _check_file(path, command, "a table of answers")
    fmt = _TABLE_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InputError(
            f"{command}: cannot tell the format of '{path}' from its extension "
            f"{path.suffix or '(none)'!r}; use .csv, .tsv, .parquet, .jsonl, or a reply store "
            f"({', '.join(_STORE_SUFFIXES)})."
        )
    from ..io import check_file

    check_file(path, fmt, command)  # a regular file, a sound header, JSON lines not too deep
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            return pq.read_table(path)
        if fmt == "jsonl":
            import pyarrow.json as pj

            return pj.read_json(path)
        import pyarrow.csv as pcsv

        options = pcsv.ParseOptions(delimiter="\t" if fmt == "tsv" else ",")
        return pcsv.read_csv(path, parse_options=options)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InputError(
            f"{command}: could not read '{path}' as {fmt.upper()}: {' '.join(str(exc).split())}"
        ) from None


def _read_decision_set(path: Path, command: str) -> list[dict[str, Any]]:
    """The items of a decision set (JSON lines with id, question, options and label)."""
    from ..stated.decision_set import read_decision_set

    _check_file(path, command, "a decision set (JSON lines)")
    return read_decision_set(path, where=command)


_RUN_COLUMNS = ("llm", "prompt", "settings")


def _store_table(path: Path, decision_set: Path | None, command: str) -> dict[str, list[Any]]:
    """The ok replies of a reply store, joined with the decision set's labels: one row per
    reply, with the run it belongs to (llm, prompt, settings) and its item and sample."""
    from ..stated.store import ReplyStore

    if decision_set is None:
        raise InputError(
            f"{command}: '{path}' is a reply store; pass --decision-set PATH (the JSON lines "
            "the run asked) so each answer can be checked against its label."
        )
    labels = {str(it["id"]): str(it["label"]) for it in _read_decision_set(decision_set, command)}
    _check_file(path, command, "a reply store")
    try:
        with ReplyStore(path) as store:
            records = list(store.items(status="ok"))
    except InputError as exc:  # not a store, damaged, locked...
        raise InputError(f"{command}: {exc}") from None
    unknown = sorted({r.key.item_id for r in records} - labels.keys())
    if unknown:
        raise InputError(
            f"{command}: {len(unknown)} item(s) of '{path}' are not in '{decision_set}' "
            f"(first: {unknown[0]!r}); pass the decision set the run asked."
        )
    names = (*_RUN_COLUMNS, "item_id", "sample", "stated_confidence", "correct")
    columns: dict[str, list[Any]] = {k: [] for k in names}
    for r in records:
        columns["llm"].append(f"{r.key.provider}:{r.key.model}")
        columns["prompt"].append(r.key.prompt_hash[:12])
        columns["settings"].append(r.key.settings_hash)
        columns["item_id"].append(r.key.item_id)
        columns["sample"].append(r.key.sample_index)
        columns["stated_confidence"].append(r.confidence)
        columns["correct"].append(int(str(r.answer) == labels[r.key.item_id]))
    if not records:
        raise InputError(f"{command}: '{path}' holds no parsed (ok) replies to audit.")
    return columns


def _check_pooling(
    table: dict[str, list[Any]], groups: list[str], pool: bool, path: Path, command: str
) -> None:
    """Refuse a group that pools several runs of a store (unless --pool), and warn when a group
    holds several replies of one item (samples), which are not independent."""
    from collections import Counter, defaultdict

    from .._errors import CalibkitWarning

    runs: defaultdict[tuple[Any, ...], set[tuple[Any, ...]]] = defaultdict(set)
    per_item: defaultdict[tuple[Any, ...], Counter[tuple[Any, ...]]] = defaultdict(Counter)
    for i in range(len(table["item_id"])):
        group = tuple(table[g][i] for g in groups)
        run = tuple(table[c][i] for c in _RUN_COLUMNS)
        runs[group].add(run)
        per_item[group][(*run, table["item_id"][i])] += 1
    for group, found in runs.items():
        name = "/".join(map(str, group)) or "all rows"
        counts = per_item[group]
        n_replies, n_items = sum(counts.values()), len({k[-1] for k in counts})
        if len(found) > 1 and not pool:
            settings = ", ".join(sorted({f"{r[1]}/{r[2]}" for r in found})[:4])
            raise InputError(
                f"{command}: group {name} of '{path}' pools {len(found)} runs (prompt/settings "
                f"{settings}): {n_replies} replies of {n_items} items; audit each run with the "
                f"default --group-by {','.join(_RUN_COLUMNS)}, or pass --pool to pool them."
            )
        most = max(Counter(k[-1] for k in counts.elements()).values())
        if most > 1:
            warnings.warn(
                f"{command}: group {name} holds {n_replies} replies of {n_items} items (up to "
                f"{most} per item, from samples or pooled runs): N counts replies, and replies "
                "of one item are not independent, so the ECE interval is too narrow.",
                CalibkitWarning,
                stacklevel=2,
            )


@stated_app.command(
    "audit",
    help="Audit stated (and token) confidences per model and question set: accuracy, ECE with "
    "its interval and noise floor, Brier, NLL, AUC, the share of multiples of 0.05 and the most "
    "common stated values, and which source is better calibrated.\n\n"
    "FILE is a table (.csv, .tsv, .parquet, .jsonl) with one row per answer, or a reply store "
    "(.sqlite/.db, written by calibkit stated run) with --decision-set for the labels; a store is "
    "audited per run (model, prompt and settings) unless --pool.",
)
def stated_audit(
    file: Annotated[
        Path, typer.Argument(help="Table of answers, or a reply store.", show_default=False)
    ],
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
    seed: Annotated[
        int, typer.Option(help="Seed of the bootstrap and the noise floor.", rich_help_panel=_NOISE)
    ] = 0,
    n_boot: Annotated[
        int, typer.Option(help="Bootstrap resamples for the ECE interval.", rich_help_panel=_NOISE)
    ] = 1000,
    n_sims: Annotated[
        int, typer.Option(help="Simulations for the ECE noise floor.", rich_help_panel=_NOISE)
    ] = 1000,
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
    command = "stated audit"
    _check_quiet(quiet, json_out, command)
    if bins < 1:
        _fail(f"{command}: --bins must be at least 1, got {bins}.")
    if not 0.0 < level < 1.0:
        _fail(f"{command}: --level must lie strictly between 0 and 1, got {level}.")
    is_store = file.suffix.lower() in _STORE_SUFFIXES
    if decision_set is not None and not is_store:
        _fail(f"{command}: --decision-set goes with a reply store (.sqlite/.db), not '{file}'.")
    if pool and not is_store:
        _fail(f"{command}: --pool goes with a reply store (.sqlite/.db), not '{file}'.")
    default_groups, default_sources = (
        (",".join(_RUN_COLUMNS), "stated_confidence")
        if is_store
        else ("llm,qset", "stated_confidence,chosen_token_confidence")
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            from ..stated.audit import audit_stated

            groups = _names(default_groups if group_by is None else group_by, "--group-by", command)
            srcs = _names(default_sources if sources is None else sources, "--sources", command)
            if not srcs:
                raise InputError(f"{command}: --sources names no column.")
            table: Any
            if is_store:
                table = _store_table(file, decision_set, command)
                names = list(table)
            else:
                table = _read_table(file, command)
                names = list(table.column_names)
            for option, wanted in (("--group-by", groups), ("--sources", srcs)):
                for name in wanted:
                    if name not in names:
                        raise InputError(
                            f"{command}: '{file}' has no column {name!r} ({option}); columns: "
                            f"{', '.join(names)}."
                        )
            if correct not in names:
                raise InputError(
                    f"{command}: '{file}' has no column {correct!r} (--correct); columns: "
                    f"{', '.join(names)}."
                )
            if is_store:
                _check_pooling(table, groups, pool, file, command)
            result = audit_stated(
                table,
                group_by=groups,
                sources=srcs,
                correct=correct,
                n_bins=bins,
                seed=seed,
                n_boot=n_boot,
                n_sims=n_sims,
                level=level,
            )
        except InputError as exc:
            _fail(str(exc))
    _echo_warnings(caught)
    if html is not None:
        write_report = _html_writer(command)
        _write(
            lambda: write_report(html, stated=result, title=f"Stated confidence: {file.name}"),
            html,
            command,
        )
        if not json_out:
            typer.echo(f"wrote HTML report to {html}", err=True)

    if json_out:
        document = {"source": str(file), **result.to_dict()}
        typer.echo(json.dumps(jsonable(document), indent=2, allow_nan=False))
        return
    if quiet:
        for comp in result.comparisons:
            where = "/".join(comp.group) or "all rows"
            how = "clearly" if comp.clear else "intervals overlap"
            typer.echo(f"{where}: {comp.better} has the lower ECE ({how})")
        if not result.comparisons:
            typer.echo(f"{len(result.rows)} audit(s); no group has two sources to compare.")
        return
    _render_stated_audit(result, file, wide=wide)


def _render_stated_audit(result, file: Path, *, wide: bool) -> None:
    from rich.console import Console

    from ..report.terminal import render_stated_audit

    render_stated_audit(result, Console(highlight=False), source=str(file), wide=wide)


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

    from ..stated.elicit import ProviderUnreachable, elicit

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
            items = _read_decision_set(decision_set, command)
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
            _check_something_asked(run, command)
            labels = {str(it["id"]): str(it["label"]) for it in items}
            parsed = [r for r in run.results if r.status == "ok" and r.confidence is not None]
            conf = np.array([r.confidence for r in parsed], dtype=np.float64)
            right = np.array([str(r.answer) == labels[r.item_id] for r in parsed], dtype=np.int64)
            result = None
            if parsed:
                result = run_audit(conf, right, n_bins=bins, seed=seed)
            if write_report is not None and result is not None:
                title = f"calibkit stated run: {provider.value}:{model} on {decision_set}"
                _write(lambda: write_report(html, audit=result, title=title), html, command)
        except InputError as exc:
            _fail(str(exc))
    _echo_warnings(caught)

    from collections import Counter

    reasons = Counter(
        f"{r.status}: {' '.join(r.error.split())}" if r.error else r.status
        for r in run.results
        if r.status != "ok"
    )
    summary = {
        "decision_set": str(decision_set),
        "store": str(store),
        "provider": run.provider,
        "model": run.model,
        "source": run.source,
        "prompt_sha256": run.prompt_hash,
        "settings": run.settings,
        "settings_hash": run.settings_hash,
        "items": len(run.results),
        "parsed": len(parsed),
        "parse_rate": run.parse_rate,
        "status_counts": dict(run.status_counts),
        "reasons": dict(reasons),
        "calls": run.calls,
        "reused": run.reused,
        "tokens": {"input": run.input_tokens, "output": run.output_tokens},
        "accuracy_of_parsed": None if result is None else float(right.mean()),
        "audit": None if result is None else result.to_dict(),
    }
    if json_out:
        typer.echo(json.dumps(jsonable(summary), indent=2, allow_nan=False))
        return
    from rich.console import Console
    from rich.text import Text

    from ..report.terminal import render_audit

    console = Console(highlight=False)
    console.print(
        Text.assemble(
            ("calibkit stated run", "bold"),
            f": {run.provider}:{run.model} on "
            f"{decision_set} ({len(run.results)} items, source {run.source})",
        )
    )
    console.print(
        f"replies stored in {store} (rerunning the same command resumes: stored replies are "
        "not asked again)",
        soft_wrap=True,
    )
    console.print(f"prompt sha256 {run.prompt_hash}, settings {run.settings_hash}")
    console.print(
        f"parsed {len(parsed)} of {len(run.results)} items ({run.parse_rate:.1%}); "
        f"status {dict(run.status_counts)}"
    )
    for reason, count in reasons.most_common(5):
        console.print(f"  {count} x {reason}", soft_wrap=True)
    console.print(
        f"this run: {run.calls} calls, {run.reused} replies reused, tokens in/out "
        f"{run.input_tokens}/{run.output_tokens}"
    )
    console.print()
    if result is None:
        console.print("no parsed replies: nothing to audit.")
    else:
        render_audit(result, console, source=f"{len(parsed)} parsed replies (unparsed left out)")
    _wrote(console, html=html if result is not None else None)


def _check_something_asked(run, command: str) -> None:
    """Refuse a run in which no item got a reply (every one an error): nothing could be asked."""
    from collections import Counter

    answered = {"ok", "failed"}
    if not run.results or any(r.status in answered for r in run.results):
        return
    reasons = Counter(f"{r.status}: {r.error}" if r.error else r.status for r in run.results)
    reason, count = reasons.most_common(1)[0]
    raise InputError(
        f"{command}: nothing could be asked: none of the {len(run.results)} items got a reply "
        f"({count} x {reason}). Check the provider, the model name and the API key, then rerun."
    )
