"""Answers to audit: a table of answers (one row per answer), or the replies of a reply store
joined with the decision set the run asked, and the answers of an elicitation run.

:func:`audit_answers` is what ``calibkit stated audit`` does with its file: a table (``.csv``,
``.tsv``, ``.parquet``, ``.jsonl``; the formats of :data:`calibkit.io.EXTENSIONS`) is read as it
is, a reply store (``.sqlite``, ``.sqlite3``, ``.db``) becomes one row per parsed reply with the
run it belongs to (``llm``, ``prompt``, ``settings``), its item, its sample, its stated
confidence and whether its answer is the item's label; then
:func:`calibkit.stated.audit.audit_stated` audits each group. A group of a store that pools
several runs is refused unless ``pool=True``, and a group holding several replies of one item
(which are not independent) is warned about.
"""

from __future__ import annotations

import warnings
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import CalibkitWarning, InputError

__all__ = [
    "RUN_COLUMNS",
    "STORE_SUFFIXES",
    "audit_answers",
    "check_pooling",
    "check_something_asked",
    "column_names",
    "is_reply_store",
    "read_answer_table",
    "read_items",
    "run_outcomes",
    "store_answers",
    "unparsed_reasons",
]

#: Extensions of a reply store (SQLite).
STORE_SUFFIXES = (".sqlite", ".sqlite3", ".db")
#: The columns of a store's answers that say which run a reply belongs to.
RUN_COLUMNS = ("llm", "prompt", "settings")
#: The formats a table of answers may have (those of calibkit.io but NumPy's).
TABLE_FORMATS = ("csv", "tsv", "parquet", "jsonl")


def is_reply_store(path: str | Path) -> bool:
    """Whether ``path`` names a reply store (by its extension, :data:`STORE_SUFFIXES`).

    Examples
    --------
    >>> from calibkit.stated.answers import is_reply_store
    >>> is_reply_store("replies.sqlite"), is_reply_store("answers.csv")
    (True, False)
    """
    return Path(path).suffix.lower() in STORE_SUFFIXES


def column_names(spec: str | Sequence[str], option: str, *, where: str) -> list[str]:
    """Column names given as a comma-separated ``spec`` (or a sequence), each once.

    Examples
    --------
    >>> from calibkit.stated.answers import column_names
    >>> column_names("llm, qset", "--group-by", where="stated audit")
    ['llm', 'qset']
    >>> column_names("", "--group-by", where="stated audit")
    []
    """
    parts = spec.split(",") if isinstance(spec, str) else [str(s) for s in spec]
    names = [n.strip() for n in parts if n.strip()]
    if len(set(names)) != len(names):
        raise InputError(f"{where}: {option} names a column twice: {spec!r}.")
    return names


def _check_file(path: Path, what: str, where: str) -> None:
    if not path.exists():
        raise InputError(f"{where}: no such file: '{path}'.")
    if path.is_dir():
        raise InputError(f"{where}: '{path}' is a directory; pass {what}.")


def read_answer_table(path: str | Path, *, where: str = "read_answer_table") -> Any:
    """A table of answers (CSV, TSV, Parquet or JSON lines, by its extension) as a pyarrow
    Table. The file follows the file rules of :mod:`calibkit.io` (a regular file, a sound
    header, JSON lines not too deep); a file that cannot be read raises
    :class:`calibkit.InputError` naming it."""
    import pyarrow as pa

    from ..io import check_file, format_from_extension

    path = Path(path)
    _check_file(path, "a table of answers", where)
    fmt = format_from_extension(path)
    if fmt not in TABLE_FORMATS:
        raise InputError(
            f"{where}: cannot tell the format of '{path}' from its extension "
            f"{path.suffix or '(none)'!r}; use .csv, .tsv, .parquet, .jsonl, or a reply store "
            f"({', '.join(STORE_SUFFIXES)})."
        )
    check_file(path, fmt, where)
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
            f"{where}: could not read '{path}' as {fmt.upper()}: {' '.join(str(exc).split())}"
        ) from None


def read_items(path: str | Path, *, where: str = "read_items") -> list[dict[str, Any]]:
    """The items of a decision set file (JSON lines with id, question, options and label), by
    :func:`calibkit.stated.read_decision_set`, after checking that the file is there."""
    from .decision_set import read_decision_set

    path = Path(path)
    _check_file(path, "a decision set (JSON lines)", where)
    return read_decision_set(path, where=where)


def store_answers(
    path: str | Path, decision_set: str | Path | None, *, where: str = "store_answers"
) -> dict[str, list[Any]]:
    """The ok replies of a reply store joined with the decision set's labels: one row per reply,
    with the run it belongs to (``llm``, ``prompt``, ``settings``), its ``item_id`` and
    ``sample``, its ``stated_confidence`` and whether it is ``correct`` (0/1)."""
    from .store import ReplyStore

    path = Path(path)
    if decision_set is None:
        raise InputError(
            f"{where}: '{path}' is a reply store; pass --decision-set PATH (the JSON lines "
            "the run asked) so each answer can be checked against its label."
        )
    labels = {str(it["id"]): str(it["label"]) for it in read_items(decision_set, where=where)}
    _check_file(path, "a reply store", where)
    try:
        with ReplyStore(path) as store:
            records = list(store.items(status="ok"))
    except InputError as exc:  # not a store, damaged, locked...
        raise InputError(f"{where}: {exc}") from None
    unknown = sorted({r.key.item_id for r in records} - labels.keys())
    if unknown:
        raise InputError(
            f"{where}: {len(unknown)} item(s) of '{path}' are not in '{decision_set}' "
            f"(first: {unknown[0]!r}); pass the decision set the run asked."
        )
    names = (*RUN_COLUMNS, "item_id", "sample", "stated_confidence", "correct")
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
        raise InputError(f"{where}: '{path}' holds no parsed (ok) replies to audit.")
    return columns


def check_pooling(
    table: dict[str, list[Any]],
    groups: Sequence[str],
    *,
    pool: bool,
    path: str | Path,
    where: str = "check_pooling",
) -> None:
    """Refuse a group of a store's answers (:func:`store_answers`) that pools several runs
    (unless ``pool``), and warn (:class:`calibkit.CalibkitWarning`) when a group holds several
    replies of one item (samples, or pooled runs), which are not independent."""
    runs: defaultdict[tuple[Any, ...], set[tuple[Any, ...]]] = defaultdict(set)
    per_item: defaultdict[tuple[Any, ...], Counter[tuple[Any, ...]]] = defaultdict(Counter)
    for i in range(len(table["item_id"])):
        group = tuple(table[g][i] for g in groups)
        run = tuple(table[c][i] for c in RUN_COLUMNS)
        runs[group].add(run)
        per_item[group][(*run, table["item_id"][i])] += 1
    for group, found in runs.items():
        name = "/".join(map(str, group)) or "all rows"
        counts = per_item[group]
        n_replies, n_items = sum(counts.values()), len({k[-1] for k in counts})
        if len(found) > 1 and not pool:
            settings = ", ".join(sorted({f"{r[1]}/{r[2]}" for r in found})[:4])
            raise InputError(
                f"{where}: group {name} of '{path}' pools {len(found)} runs (prompt/settings "
                f"{settings}): {n_replies} replies of {n_items} items; audit each run with the "
                f"default --group-by {','.join(RUN_COLUMNS)}, or pass --pool to pool them."
            )
        most = max(Counter(k[-1] for k in counts.elements()).values())
        if most > 1:
            warnings.warn(
                f"{where}: group {name} holds {n_replies} replies of {n_items} items (up to "
                f"{most} per item, from samples or pooled runs): N counts replies, and replies "
                "of one item are not independent, so the ECE interval is too narrow.",
                CalibkitWarning,
                stacklevel=2,
            )


def _harness_defaults(table: dict[str, list[Any]]) -> tuple[str, str]:
    """Default groups and sources of harness samples: per model and task (and filter when a
    task has several), and the sources its kinds of task give."""
    filters: defaultdict[str, set[str]] = defaultdict(set)
    for task, name in zip(table["qset"], table["filter"], strict=True):
        filters[task].add(name)
    groups = "llm,qset,filter" if any(len(v) > 1 for v in filters.values()) else "llm,qset"
    kinds = set(table["kind"])
    sources = [
        s
        for s, kind in (
            ("chosen_token_confidence", "multiple_choice"),
            ("stated_confidence", "generate_until"),
        )
        if kind in kinds
    ]
    return groups, ",".join(sources)


def audit_answers(
    path: str | Path | Sequence[str | Path],
    *,
    llm: str | None = None,
    group_by: str | Sequence[str] | None = None,
    sources: str | Sequence[str] | None = None,
    correct: str = "correct",
    decision_set: str | Path | None = None,
    pool: bool = False,
    n_bins: int = 15,
    level: float = 0.95,
    seed: int = 0,
    n_boot: int = 1000,
    n_sims: int = 1000,
    where: str = "audit_answers",
) -> Any:
    """Audit the stated confidences in a file of answers (see the module docstring): a
    :class:`calibkit.stated.StatedAudit`.

    ``path`` may also be one or more samples files of lm-evaluation-harness
    (``lm_eval --log_samples``), read by :func:`calibkit.stated.harness.read_harness_samples`
    with ``llm`` naming the model; their defaults are ``llm,qset`` (and ``filter`` when a task
    has several) and the sources their tasks give (``chosen_token_confidence`` for multiple
    choice, ``stated_confidence`` for generation).

    ``group_by`` and ``sources`` name columns (a comma-separated string, or a sequence; ``""``
    groups nothing). Defaults: for a table ``llm,qset`` and
    ``stated_confidence,chosen_token_confidence``; for a reply store ``llm,prompt,settings``
    (one group per run) and ``stated_confidence``. ``decision_set`` (the items the run asked,
    for their labels) and ``pool`` go with a reply store only.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from calibkit.stated.answers import audit_answers
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "answers.csv"
    >>> rows = "".join(f"m,{c},{y}\\n" for c, y in [(0.9, 1), (0.9, 0), (0.6, 1), (0.7, 1)])
    >>> _ = path.write_text("llm,stated_confidence,correct\\n" + rows)
    >>> a = audit_answers(path, group_by="llm", sources="stated_confidence", n_boot=20, n_sims=20)
    >>> r = a.rows[0]
    >>> r.n, r.accuracy, round(r.mean_confidence, 3)
    (4, 0.75, 0.775)
    """
    from .audit import audit_stated
    from .harness import is_harness_samples, read_harness_samples

    paths = [Path(p) for p in ([path] if isinstance(path, str | Path) else path)]
    if not paths:
        raise InputError(f"{where}: no file given.")
    harness = [p for p in paths if is_harness_samples(p)]
    if harness and len(harness) < len(paths):
        other = next(p for p in paths if p not in harness)
        raise InputError(
            f"{where}: '{other}' is not an lm-evaluation-harness samples file, but "
            f"'{harness[0]}' is; audit harness samples files together, other files one at a time."
        )
    if len(paths) > 1 and not harness:
        raise InputError(
            f"{where}: {len(paths)} files given; several files go together only when all are "
            "lm-evaluation-harness samples files (samples_*.jsonl). Audit one table or store."
        )
    if llm is not None and not harness:
        raise InputError(f"{where}: --llm goes with lm-evaluation-harness samples files only.")
    path = paths[0]
    store = is_reply_store(path)
    if decision_set is not None and not store:
        raise InputError(
            f"{where}: --decision-set goes with a reply store (.sqlite/.db), not '{path}'."
        )
    if pool and not store:
        raise InputError(f"{where}: --pool goes with a reply store (.sqlite/.db), not '{path}'.")
    table: Any = None
    if harness:
        table = read_harness_samples(harness, llm=llm, where=where)
        names = list(table)
        default_groups, default_sources = _harness_defaults(table)
        group_by = default_groups if group_by is None else group_by
        sources = default_sources if sources is None else sources
    if group_by is None:
        group_by = ",".join(RUN_COLUMNS) if store else "llm,qset"
    if sources is None:
        sources = "stated_confidence" if store else "stated_confidence,chosen_token_confidence"
    groups = column_names(group_by, "--group-by", where=where)
    srcs = column_names(sources, "--sources", where=where)
    if not srcs:
        raise InputError(f"{where}: --sources names no column.")
    if store:
        table = store_answers(path, decision_set, where=where)
        names = list(table)
    elif not harness:
        table = read_answer_table(path, where=where)
        names = list(table.column_names)
    wanted = [("--group-by", n) for n in groups] + [("--sources", n) for n in srcs]
    for option, name in [*wanted, ("--correct", correct)]:
        if name not in names:
            raise InputError(
                f"{where}: '{path}' has no column {name!r} ({option}); columns: {', '.join(names)}."
            )
    if store:
        check_pooling(table, groups, pool=pool, path=path, where=where)
    return audit_stated(
        table,
        group_by=groups,
        sources=srcs,
        correct=correct,
        n_bins=n_bins,
        seed=seed,
        n_boot=n_boot,
        n_sims=n_sims,
        level=level,
        skip_absent=bool(harness),
    )


# ----------------------------------------------------------------------------- a run's answers


def check_something_asked(run: Any, *, where: str = "check_something_asked") -> None:
    """Refuse an elicitation run in which no item got a reply (every one an error): nothing
    could be asked. The replies that were stored stay in the store."""
    answered = {"ok", "failed"}
    if not run.results or any(r.status in answered for r in run.results):
        return
    reasons = Counter(f"{r.status}: {r.error}" if r.error else r.status for r in run.results)
    reason, count = reasons.most_common(1)[0]
    raise InputError(
        f"{where}: nothing could be asked: none of the {len(run.results)} items got a reply "
        f"({count} x {reason}). Check the provider, the model name and the API key, then rerun."
    )


def run_outcomes(run: Any, items: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """The parsed answers of an elicitation run as (confidence, outcome): the confidence of
    each item whose reply parsed (``status == "ok"``), and whether its answer is the item's
    label (0/1). Unparsed items are left out, never given a fallback confidence."""
    labels = {str(it["id"]): str(it["label"]) for it in items}
    parsed = [r for r in run.results if r.status == "ok" and r.confidence is not None]
    conf = np.array([r.confidence for r in parsed], dtype=np.float64)
    right = np.array([str(r.answer) == labels[r.item_id] for r in parsed], dtype=np.int64)
    return conf, right


def unparsed_reasons(run: Any) -> Counter[str]:
    """Why the items of a run that did not parse did not: ``"status: error"`` (whitespace
    folded), counted, in order of first appearance."""
    return Counter(
        f"{r.status}: {' '.join(r.error.split())}" if r.error else r.status
        for r in run.results
        if r.status != "ok"
    )
