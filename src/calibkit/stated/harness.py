"""Reading the per-sample logs of EleutherAI's lm-evaluation-harness (``lm_eval --log_samples``).

The harness writes one JSON line per document, task and filter to
``<output_path>/<model>/samples_<task>_<date>.jsonl``, with the document's ``doc_id``, its
``target``, the requests it sent (``arguments``: ``gen_args_<i>`` objects holding ``arg_0``, the
context, and ``arg_1``, the continuation or the generation settings; a list of lists in older
versions), the model's replies (``resps``) and the replies after the task's filter
(``filtered_resps``, with the filter's name in ``filter``), and the task's metrics for that
document (``acc``, ``acc_norm``, ``exact_match``...). Numbers in ``resps`` are written as strings
(``["-4.97", "False"]``) since version 0.4.2 and as numbers before; both are read.

Two kinds of task become rows for :func:`calibkit.stated.audit.audit_stated`:

* **multiple choice** (one log-likelihood request per option): the options' log-likelihoods
  ``l_j`` give the model's probability of each option, ``softmax(l)_j``, so the chosen option
  (the harness's ``acc`` choice, the largest ``l_j``, the first on a tie) has confidence
  ``chosen_token_confidence`` and is ``correct`` when it is the target. The length-normalised
  choice of ``acc_norm`` (largest ``l_j / len(option)``, the option's characters without the
  one space the harness puts before it) gives ``chosen_token_confidence_norm`` (its softmax
  over ``l_j / len_j``: a score, not a probability the model assigns) and ``correct_norm``.
  Where the line carries ``acc`` or ``acc_norm``, the recomputed outcome must agree with it, so a
  target or an option read other than the harness meant is an error, not a silent misreading.
* **generation** (one ``generate_until`` request): the reply text is ``reply`` and the filtered
  answer ``answer``; the confidence the model states in the reply is read by
  :func:`calibkit.stated.parse_confidence` (``stated_confidence``, with ``confidence_reason`` when
  none is found), and ``correct`` is the task's own 0/1 metric for the line (``exact_match``,
  or the one named by ``metric``), or a calibkit grader's verdict against the target when
  ``grader`` is given.

Loglikelihood tasks with one request per document (LAMBADA's "is the continuation greedy") and
rolling log-likelihoods (perplexity) have no choice to be confident in and are refused by name.
The file holds no model name: ``llm`` is the ``model_name`` of the run's ``results_<date>.json``
beside it when there is one, else the folder the harness wrote it to (the model's name with
``/`` as ``__``); pass ``llm=`` to name it yourself.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import InputError
from .._json import parse_json, read_json_file

__all__ = ["HARNESS_COLUMNS", "is_harness_samples", "read_harness_samples"]

#: The columns of :func:`read_harness_samples`, in order.
HARNESS_COLUMNS = (
    "llm",
    "qset",
    "filter",
    "doc_id",
    "kind",
    "n_options",
    "target",
    "answer",
    "chosen_token_confidence",
    "correct",
    "chosen_token_confidence_norm",
    "correct_norm",
    "reply",
    "stated_confidence",
    "confidence_reason",
    "grader",
)
_NAME = re.compile(
    r"^samples_(?P<task>.+?)_(?P<date>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)\.jsonl$"
)
_SAMPLE_KEYS = ("doc_id", "resps", "filtered_resps")
_FALSE_TRUE = {"false": False, "true": True}


def is_harness_samples(path: str | Path) -> bool:
    """Whether ``path`` is a harness samples file: a ``.jsonl`` whose first line is an object
    with ``doc_id``, ``resps`` and ``filtered_resps``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from calibkit.stated.harness import is_harness_samples
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "samples_arc_easy.jsonl"
    >>> _ = path.write_text('{"doc_id": 0, "resps": [], "filtered_resps": []}\\n')
    >>> is_harness_samples(path), is_harness_samples("answers.csv")
    (True, False)
    """
    path = Path(path)
    if path.suffix.lower() != ".jsonl" or not path.is_file():
        return False
    try:
        with path.open("rb") as handle:
            first = handle.readline(1 << 22)
    except OSError:
        return False
    try:
        value = parse_json(first, what=str(path), strict=False)
    except InputError:
        return False
    return isinstance(value, dict) and all(k in value for k in _SAMPLE_KEYS)


def _model_name(path: Path, where: str) -> str:
    """The run's model name: ``model_name`` of its ``results_<date>.json``, else the folder."""
    match = _NAME.match(path.name)
    if match is not None:
        results = path.parent / f"results_{match['date']}.json"
        if results.is_file():
            document = read_json_file(results, where=where)
            name = document.get("model_name") if isinstance(document, dict) else None
            if isinstance(name, str) and name.strip():
                return name.strip()
    return path.parent.name or path.stem


def _task_name(path: Path) -> str:
    match = _NAME.match(path.name)
    if match is not None:
        return match["task"]
    stem = path.stem
    return stem[len("samples_") :] if stem.startswith("samples_") else stem


def _number(value: Any, at: str) -> float:
    """A log-likelihood as the harness writes it: a number, or its string (``"-inf"`` too)."""
    if isinstance(value, bool):
        raise InputError(f"{at}: expected a log-likelihood, got {value!r}.")
    if isinstance(value, int | float):
        out = float(value)
    elif isinstance(value, str):
        try:
            out = float(value)
        except ValueError:
            raise InputError(f"{at}: expected a log-likelihood, got {value!r:.60}.") from None
    else:
        raise InputError(f"{at}: expected a log-likelihood, got {value!r:.60}.")
    if math.isnan(out) or out == math.inf:
        raise InputError(f"{at}: the log-likelihood {value!r} is not a number <= 0 or -inf.")
    return out


def _pair(value: Any) -> bool:
    """Whether a filtered reply is a loglikelihood pair [log-likelihood, is_greedy]."""
    if not isinstance(value, list) or len(value) != 2:
        return False
    flag = value[1]
    return isinstance(flag, bool) or (isinstance(flag, str) and flag.lower() in _FALSE_TRUE)


def _request(arguments: Any, i: int) -> list[Any]:
    """The arguments of request ``i``: ``gen_args_<i>``'s ``arg_0, arg_1, ...`` (current layout)
    or the ``i``-th list (older layout); empty when there is no such request."""
    if isinstance(arguments, dict):
        request = arguments.get(f"gen_args_{i}")
        if not isinstance(request, dict):
            return []
        out: list[Any] = []
        while f"arg_{len(out)}" in request:
            out.append(request[f"arg_{len(out)}"])
        return out
    if isinstance(arguments, list) and i < len(arguments) and isinstance(arguments[i], list):
        return list(arguments[i])
    return []


def _continuations(arguments: Any, n: int, at: str, step: int = 1) -> list[str]:
    """The option texts (``arg_1`` of every ``step``-th request, new or old layout)."""
    requests = [_request(arguments, i * step) for i in range(n)]
    texts = [r[1] if len(r) >= 2 else None for r in requests]
    if not all(isinstance(t, str) for t in texts):
        raise InputError(
            f"{at}: 'arguments' does not hold the {n} options' texts (gen_args_0 .. "
            f"gen_args_{n - 1}, each with arg_1); is this an lm_eval --log_samples file?"
        )
    return [str(t) for t in texts]


def _option_length(text: str) -> int:
    # the harness divides by len(choice); the request's continuation is " " + choice
    return max(1, len(text[1:] if text.startswith(" ") else text))


def _gold(target: Any, options: Sequence[str], at: str) -> int:
    """The target's option index: an index (as the harness writes it, a string) or the text of
    one option."""
    text = str(target).strip()
    n = len(options)
    if re.fullmatch(r"\d+", text):
        index = int(text)
        if index >= n:
            raise InputError(f"{at}: target {text} is not an option index (0 .. {n - 1}).")
        return index
    stripped = [o[1:] if o.startswith(" ") else o for o in options]
    if text in stripped:
        return stripped.index(text)
    raise InputError(
        f"{at}: target {str(target)!r:.60} is neither an option index nor one of the options "
        f"({', '.join(repr(o) for o in stripped[:4])}{', ...' if n > 4 else ''}); tasks with "
        "several right options are not read."
    )


def _softmax_top(scores: np.ndarray) -> tuple[int, float]:
    top = int(np.argmax(scores))  # the first of equal maxima, as the harness's np.argmax
    finite = scores[np.isfinite(scores)]
    if finite.size == 0:
        return top, 1.0 / scores.size  # every option -inf: nothing to prefer
    shifted = np.exp(scores - finite.max())
    return top, float(shifted[top] / shifted.sum())


def _check_metric(line: dict[str, Any], name: str, mine: int, at: str, how: str) -> None:
    if name not in line:
        return
    theirs = line[name]
    if isinstance(theirs, bool | int | float) and float(theirs) in (0.0, 1.0):
        if int(theirs) != mine:
            raise InputError(
                f"{at}: the harness's {name} is {theirs!r} but {how} gives {mine}; the "
                "target or the options are not read as the harness meant, so nothing is "
                "audited from this file."
            )


def _conditional(arguments: Any, replies: list[Any]) -> tuple[list[Any], int]:
    """The replies of the options given the context, and the step between their requests. A
    task scoring ``acc_mutual_info`` also asks each option with an empty context; the harness
    orders them by option, each conditional request (even positions) before its unconditional
    one (odd, ``arg_0`` "")."""
    n = len(replies)
    if n < 4 or n % 2:
        return replies, 1
    contexts = [(_request(arguments, i) or [None])[0] for i in range(n)]
    if all(c == "" for c in contexts[1::2]) and all(c for c in contexts[0::2]):
        return replies[0::2], 2
    return replies, 1


def _multiple_choice(line: dict[str, Any], replies: list[Any], at: str) -> dict[str, Any]:
    replies, step = _conditional(line.get("arguments"), replies)
    n = len(replies)
    ll = np.array([_number(r[0], f"{at}: option {j}") for j, r in enumerate(replies)])
    options = _continuations(line.get("arguments"), n, at, step=step)
    gold = _gold(line.get("target"), options, at)
    chosen, conf = _softmax_top(ll)
    lengths = np.array([_option_length(o) for o in options], dtype=np.float64)
    chosen_norm, conf_norm = _softmax_top(ll / lengths)
    correct, correct_norm = int(chosen == gold), int(chosen_norm == gold)
    _check_metric(line, "acc", correct, at, "the option with the largest log-likelihood")
    _check_metric(
        line,
        "acc_norm",
        correct_norm,
        at,
        "the largest log-likelihood per character of the option",
    )
    return {
        "kind": "multiple_choice",
        "n_options": n,
        "target": str(gold),
        "answer": options[chosen][1:] if options[chosen].startswith(" ") else options[chosen],
        "chosen_token_confidence": conf,
        "correct": correct,
        "chosen_token_confidence_norm": conf_norm,
        "correct_norm": correct_norm,
        "reply": "",
        "stated_confidence": math.nan,
        "confidence_reason": "",
        "grader": "lm-eval options (agrees with acc)" if "acc" in line else "lm-eval options",
    }


def _metric_outcome(line: dict[str, Any], metric: str | None, at: str) -> tuple[int, str]:
    if metric is not None:
        names = [metric]
    else:
        listed = line.get("metrics")
        names = [str(m) for m in listed] if isinstance(listed, list) else []
        names += [m for m in ("exact_match", "acc") if m not in names]
    for name in names:
        value = line.get(name)
        if isinstance(value, bool | int | float) and float(value) in (0.0, 1.0):
            return int(value), f"lm-eval {name}"
    if metric is not None:
        raise InputError(
            f"{at}: metric {metric!r} is not a 0/1 value in this line "
            f"(got {line.get(metric)!r:.40}); name a 0/1 metric of the task, or pass a grader."
        )
    raise InputError(
        f"{at}: the line has no 0/1 metric (exact_match, acc or one listed in 'metrics'); "
        "pass metric= naming the task's 0/1 metric, or grader= to grade the answer."
    )


def _generation(
    line: dict[str, Any],
    grader: Callable[[str, Any], Any] | None,
    metric: str | None,
    at: str,
) -> dict[str, Any]:
    from ._confidence import parse_confidence

    resps = line.get("resps")
    raw = resps[0] if isinstance(resps, list) and resps else None
    while isinstance(raw, list) and raw:
        raw = raw[0]
    filtered = line["filtered_resps"][0]
    while isinstance(filtered, list) and filtered:
        filtered = filtered[0]
    if not isinstance(raw, str) or not isinstance(filtered, str):
        raise InputError(f"{at}: the reply of this generation task is not text.")
    parsed = parse_confidence(raw)
    correct: float
    if grader is not None:
        verdict = grader(filtered, line.get("target"))
        # a grader that cannot decide leaves the row out of the audit (missing), not wrong
        correct = math.nan if verdict.correct is None else int(bool(verdict.correct))
        label = str(verdict.grader)
    else:
        correct, label = _metric_outcome(line, metric, at)
    return {
        "kind": "generate_until",
        "n_options": 0,
        "target": str(line.get("target")),
        "answer": filtered,
        "chosen_token_confidence": math.nan,
        "correct": correct,
        "chosen_token_confidence_norm": math.nan,
        "correct_norm": math.nan,
        "reply": raw,
        "stated_confidence": math.nan if parsed.value is None else float(parsed.value),
        "confidence_reason": "" if parsed.value is not None else str(parsed.reason),
        "grader": label,
    }


def _row(
    line: Any,
    grader: Callable[[str, Any], Any] | None,
    metric: str | None,
    at: str,
) -> dict[str, Any]:
    if not isinstance(line, dict) or not all(k in line for k in _SAMPLE_KEYS):
        raise InputError(
            f"{at}: not a harness sample (a JSON object with doc_id, resps and "
            "filtered_resps, as lm_eval --log_samples writes)."
        )
    replies = line["filtered_resps"]
    if not isinstance(replies, list) or not replies:
        raise InputError(f"{at}: filtered_resps is empty; the harness logged no reply.")
    if all(_pair(r) for r in replies):
        if len(replies) < 2:
            raise InputError(
                f"{at}: one loglikelihood request per document (a task such as LAMBADA, "
                "scored by whether the continuation is the greedy one): there is no choice "
                "among options to be confident in, so calibkit does not audit it."
            )
        return _multiple_choice(line, replies, at)
    first = replies[0]
    while isinstance(first, list) and first:
        first = first[0]
    # a rolling log-likelihood's request holds the text alone; a generation's adds its settings
    alone = len(_request(line.get("arguments"), 0)) == 1
    if isinstance(first, str) and len(replies) == 1 and not alone:
        return _generation(line, grader, metric, at)
    if isinstance(first, int | float | str):
        raise InputError(
            f"{at}: the replies are single numbers (a loglikelihood_rolling task such as "
            "perplexity on WikiText); there is no answer to be confident in."
        )
    raise InputError(f"{at}: filtered_resps {str(replies)!r:.80} is not a layout calibkit reads.")


def read_harness_samples(
    paths: str | Path | Sequence[str | Path],
    *,
    llm: str | None = None,
    metric: str | None = None,
    grader: str | Callable[[str, Any], Any] | None = None,
    where: str = "read_harness_samples",
) -> dict[str, list[Any]]:
    """One row per (task, filter, document) of lm-evaluation-harness samples files, with the
    columns :data:`HARNESS_COLUMNS` (see the module docstring for each).

    ``llm`` names the model (default: the run's results file, else the folder); ``metric``
    names the 0/1 metric that marks a generation right (default ``exact_match``, or the first
    0/1 metric the line lists); ``grader`` (a name of :data:`calibkit.stated.GRADERS` or a
    callable ``(answer, target) -> Grade``) grades generations by calibkit instead.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> from calibkit.stated.harness import read_harness_samples
    >>> run = pathlib.Path(tempfile.mkdtemp()) / "org__model"
    >>> run.mkdir()
    >>> line = {"doc_id": 0, "target": "1", "filter": "none", "acc": 1.0,
    ...         "arguments": {f"gen_args_{i}": {"arg_0": "Q: 2+2? A:", "arg_1": f" {o}"}
    ...                       for i, o in enumerate(["3", "4"])},
    ...         "resps": [[["-2.0", "False"]], [["-1.0", "True"]]],
    ...         "filtered_resps": [["-2.0", "False"], ["-1.0", "True"]]}
    >>> path = run / "samples_sums_2026-01-02T03-04-05.678901.jsonl"
    >>> _ = path.write_text(json.dumps(line) + "\\n")
    >>> rows = read_harness_samples(path)
    >>> rows["llm"], rows["qset"], rows["answer"], rows["correct"]
    (['org__model'], ['sums'], ['4'], [1])
    >>> round(rows["chosen_token_confidence"][0], 4)  # e^-1 / (e^-2 + e^-1)
    0.7311
    """
    from .graders import make_grader

    if isinstance(paths, str | Path):
        paths = [paths]
    files = [Path(p) for p in paths]
    if not files:
        raise InputError(f"{where}: no samples file given.")
    if llm is not None and not str(llm).strip():
        raise InputError(f"{where}: llm= is empty; give the model's name.")
    grade = make_grader(grader) if isinstance(grader, str) else grader
    columns: dict[str, list[Any]] = {k: [] for k in HARNESS_COLUMNS}
    seen: dict[tuple[str, str, str, str], str] = {}
    for path in files:
        if not path.is_file():
            raise InputError(f"{where}: no such file: '{path}'.")
        name = str(llm).strip() if llm is not None else _model_name(path, where)
        task = _task_name(path)
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"{where}: '{path}' is not UTF-8 text ({exc}).") from None
        n_before = len(columns["llm"])
        for number, raw in enumerate(text.split("\n"), start=1):
            if not raw.strip():
                continue
            at = f"{where}: '{path}' line {number}"
            line = parse_json(raw, what=at, strict=False)
            row = _row(line, grade, metric, at)
            key = (name, task, str(line.get("filter", "")), str(line["doc_id"]))
            if key in seen:
                raise InputError(
                    f"{at}: document {key[3]} of task {task} (filter {key[2] or 'none'}) for "
                    f"{name} is also {seen[key]}; pass the samples of one run per model, or "
                    "name the runs apart with llm=."
                )
            seen[key] = f"at '{path}' line {number}"
            for column, value in zip(("llm", "qset", "filter", "doc_id"), key, strict=True):
                columns[column].append(value)
            for column, value in row.items():
                columns[column].append(value)
        if len(columns["llm"]) == n_before:
            raise InputError(f"{where}: '{path}' holds no samples.")
    return columns
