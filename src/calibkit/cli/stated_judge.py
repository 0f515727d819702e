"""calibkit stated judge: a language model grades the answers of a table against its references."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from .._errors import InputError
from .._files import check_outputs
from ._common import _check_output, _fail
from .stated import Provider, stated_app

#: the columns the answers file must have
JUDGE_COLUMNS = ("id", "question", "gold", "answer")


def _rows(path: Path, command: str) -> tuple[Any, list[dict[str, Any]]]:
    """The table (its judged columns as text) and its rows."""
    import pyarrow as pa

    from ..stated.answers import read_answer_table

    table = read_answer_table(path, where=command)
    missing = [c for c in JUDGE_COLUMNS if c not in table.column_names]
    if missing:
        raise InputError(
            f"{command}: '{path}' has no column {', '.join(map(repr, missing))}; it needs "
            f"{', '.join(JUDGE_COLUMNS)} (gold: a reference answer, or a list of them); "
            f"columns: {', '.join(table.column_names)}."
        )
    for name in JUDGE_COLUMNS:  # a CSV column of numbers is read as numbers: judge their text
        i = table.column_names.index(name)
        col = table.column(i)
        if not pa.types.is_nested(col.type) and not pa.types.is_string(col.type):
            table = table.set_column(i, name, col.cast(pa.string()))
    return table, table.select(list(JUDGE_COLUMNS)).to_pylist()


def _csv_ready(table: Any) -> Any:
    """Lists (several references) as JSON text: CSV has no list."""
    import pyarrow as pa

    for i, f in enumerate(table.schema):
        if pa.types.is_nested(f.type):
            text = [None if v is None else json.dumps(v) for v in table.column(i).to_pylist()]
            table = table.set_column(i, f.name, pa.array(text, pa.string()))
    return table


@stated_app.command(
    "judge",
    help="Ask a judge model whether each answer of ANSWERS_FILE is correct, against its "
    "reference answer(s), and write the table with the columns correct (true, false, or empty "
    "when no verdict could be read), grader (the judge, its model and its prompt's hash) and "
    "reason.\n\n"
    "ANSWERS_FILE is a table (.csv, .tsv, .parquet, .jsonl) with the columns id, question, gold "
    "and answer. Every reply is stored in --store first; rerunning resumes and asks nothing "
    "twice. Nothing is sent anywhere but to the --provider given (and --base-url when set).",
)
def stated_judge(
    answers_file: Annotated[
        Path,
        typer.Argument(help="Table with id, question, gold and answer.", show_default=False),
    ],
    provider: Annotated[
        Provider | None,
        typer.Option(help="openai, anthropic, or replay (from the store).", show_default=False),
    ] = None,
    model: Annotated[str | None, typer.Option(help="Judge model.", show_default=False)] = None,
    store: Annotated[
        Path, typer.Option(help="Reply store (SQLite); rerunning with it resumes.")
    ] = Path("judgements.sqlite"),
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Where to write the graded table (.csv or .parquet; default: CSV on stdout).",
            show_default=False,
        ),
    ] = None,
    prompt_file: Annotated[
        Path | None,
        typer.Option(
            help="A text file with the judge prompt ({question}, {gold}, {answer}).",
            show_default=False,
        ),
    ] = None,
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
    concurrency: Annotated[int, typer.Option(help="Requests in flight at once.")] = 4,
    max_retries: Annotated[
        int, typer.Option(help="Extra attempts after a reply with no verdict.")
    ] = 0,
) -> None:
    """Grade answers with a judge model."""
    import pyarrow as pa

    from ..stated.elicit import ProviderUnreachable
    from ..stated.judging import DEFAULT_JUDGE_PROMPT, judge

    command = "stated judge"
    if provider is None or model is None:
        missing = "--provider" if provider is None else "--model"
        _fail(
            f"{command}: {missing} is required: nothing is sent anywhere unless a provider and "
            "a model are named, e.g. --provider openai --model gpt-4o-mini."
        )
    if concurrency < 1 or max_retries < 0:
        _fail(f"{command}: --concurrency must be >= 1 and --max-retries >= 0.")
    if output is not None:
        _check_output(output, command)
    try:
        table, rows = _rows(answers_file, command)
        prompt = DEFAULT_JUDGE_PROMPT
        if prompt_file is not None:
            try:
                prompt = prompt_file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise InputError(
                    f"{command}: cannot read --prompt-file '{prompt_file}': {exc}."
                ) from None
        if store.is_dir():
            raise InputError(f"{command}: --store '{store}' is a directory; pass a file.")
        if not store.parent.exists():
            raise InputError(f"{command}: the folder of --store '{store}' does not exist.")
        inputs = [answers_file] + ([prompt_file] if prompt_file is not None else [])
        check_outputs([("--store", store), ("--output", output)], inputs, where=command)
        try:
            run = judge(
                rows,
                provider=provider.value,
                model=model,
                store=store,
                prompt=prompt,
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
        graded = table
        for name, values, kind in [
            ("correct", [g.correct for g in run.grades], pa.bool_()),
            ("grader", [g.grader for g in run.grades], pa.string()),
            ("reason", [g.reason for g in run.grades], pa.string()),
        ]:
            if name in graded.column_names:
                graded = graded.drop_columns([name])
            graded = graded.append_column(name, pa.array(values, kind))
        if output is None:
            import io

            import pyarrow.csv as pcsv

            buf = io.BytesIO()
            pcsv.write_csv(_csv_ready(graded), buf)
            typer.echo(buf.getvalue().decode("utf-8"), nl=False)
        else:
            from ..io import write_table

            is_csv = output.suffix.lower() == ".csv"
            try:
                write_table(output, _csv_ready(graded) if is_csv else graded, where=command)
            except OSError as exc:
                raise InputError(
                    f"{command}: cannot write '{output}': {exc.strerror or exc}."
                ) from None
    except InputError as exc:
        _fail(str(exc))
    typer.echo(run.summary(), err=True)
