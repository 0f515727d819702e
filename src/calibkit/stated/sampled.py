"""Semantic consistency of sampled free-form answers, asked through the elicitation runner.

:func:`sample_answers` asks a model each free-form question k times (at a temperature above 0)
with the fixed prompt :data:`DEFAULT_ANSWER_PROMPT` (or yours), reads the short final answer of
each reply (:func:`parse_answer`), groups an item's answers by meaning with
:func:`~calibkit.stated.semantic.semantic_consistency`, and gives the share of the largest group
as the item's confidence and the semantic entropy of the groups (Kuhn et al. 2023; the discrete
version of Farquhar et al. 2024). It asks as :func:`~calibkit.stated.ptrue.p_true` does: every
reply is stored in the :class:`~calibkit.stated.store.ReplyStore` before it is read, a rerun
resumes, and a key holds the prompt's sha256, the settings' hash, the sample index (0 to k - 1)
and an item id ``"<id>#<h>"`` whose ``h`` hashes the text sent.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .._errors import CalibkitWarning, InputError
from ._questions import Asking, ask_texts, read_rows, render
from ._runner import Unparsed, Validated
from .elicit import PROVIDERS, ElicitationRun, ItemResult
from .items import Item
from .semantic import Equivalence, SemanticConsistency, _equivalence, semantic_consistency
from .store import ReplyRecord, ReplyStore

__all__ = ["DEFAULT_ANSWER_PROMPT", "SampledRun", "parse_answer", "sample_answers"]

DEFAULT_ANSWER_PROMPT = """\
Answer the question below. You may think briefly first. End your reply with your final answer,
as short as possible (a name, a number or a few words), on a line of its own in this form:
Answer: <your answer>

Question: {question}"""

_ANSWER_LINE = re.compile(r"^[ \t]*answer[ \t]*:(.*)$", re.IGNORECASE | re.MULTILINE)


def parse_answer(text: str) -> tuple[str | None, str | None]:
    """The final answer of a reply: ``(answer, None)`` or ``(None, reason)``.

    The answer is the text after ``Answer:`` on the reply's last line that starts with it
    (case-insensitive, leading spaces allowed), stripped of whitespace and of one trailing
    period. A reply with no such line has no answer (``"no answer line"``), nor one whose
    last answer line is empty (``"empty answer line"``).

    Examples
    --------
    >>> parse_answer("Paris is in France.\\nAnswer: Paris.")
    ('Paris', None)
    >>> parse_answer("answer: 3\\nWait, no.\\nAnswer:  4 ")
    ('4', None)
    >>> parse_answer("The answer is 4")
    (None, 'no answer line')
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_answer: text must be a string, got {type(text).__name__}")
    found = _ANSWER_LINE.findall(text)
    if not found:
        return None, "no answer line"
    answer = found[-1].strip()
    answer = answer[:-1].rstrip() if answer.endswith(".") else answer
    if not answer:
        return None, "empty answer line"
    return answer, None


def _validate(text: str, logprobs: Any, item: Item, source: str) -> Validated | Unparsed:
    answer, reason = parse_answer(text)
    if answer is None:
        return Unparsed(str(reason), final=False)
    return answer, None, None


@dataclass(frozen=True)
class SampledRun:
    """The run of :func:`sample_answers`: the :class:`~calibkit.stated.elicit.ElicitationRun`
    (``source="semantic"``, one :class:`~calibkit.stated.elicit.ItemResult` per item), and per
    item, in the same order, the parsed answers by sample index (None for an unparsed sample)
    and their :class:`~calibkit.stated.semantic.SemanticConsistency` (None when no sample
    parsed; its ``groups`` index the parsed answers, in sample order)."""

    run: ElicitationRun
    answers: list[list[str | None]]
    consistency: list[SemanticConsistency | None]

    @property
    def results(self) -> list[ItemResult]:
        """The run's item results (``run.results``)."""
        return self.run.results

    @property
    def entropies(self) -> list[float | None]:
        """The semantic entropy of each item (natural log; None when no sample parsed)."""
        return [None if c is None else c.entropy for c in self.consistency]

    def summary(self) -> str:
        """One line: the run's summary."""
        return self.run.summary()

    def __str__(self) -> str:
        lines = [self.summary(), "item  answer  confidence  entropy  parsed/samples  tie"]
        for r, c in zip(self.results, self.consistency, strict=True):
            conf = "-" if r.confidence is None else f"{r.confidence:.3f}"
            ent = "-" if c is None else f"{c.entropy:.3f}"
            tie = "-" if c is None else str(c.tie)
            answer = r.answer if r.answer is not None else f"({r.status})"
            lines.append(f"{r.item_id}  {answer}  {conf}  {ent}  {r.n_parsed}/{r.n_samples}  {tie}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """The run's settings, counters and items (result, answers, consistency) as a
        JSON-ready ``dict`` (the stored replies are left in the store)."""
        run = self.run
        return {
            "provider": run.provider,
            "model": run.model,
            "source": run.source,
            "prompt_hash": run.prompt_hash,
            "settings": dict(run.settings),
            "settings_hash": run.settings_hash,
            "calls": run.calls,
            "reused": run.reused,
            "input_tokens": run.input_tokens,
            "output_tokens": run.output_tokens,
            "status_counts": dict(run.status_counts),
            "items": [
                {
                    **asdict(r),
                    "answers": list(a),
                    "consistency": None if c is None else c.to_dict(),
                }
                for r, a, c in zip(run.results, self.answers, self.consistency, strict=True)
            ],
        }


def sample_answers(
    items: Iterable[Any],
    *,
    provider: str,
    model: str,
    store: ReplyStore | str | Path,
    k: int = 10,
    prompt: str = DEFAULT_ANSWER_PROMPT,
    temperature: float = 1.0,
    equivalent: str | Equivalence = "exact",
    rel_tol: float = 1e-9,
    abs_tol: float = 0.0,
    concurrency: int = 4,
    base_url: str | None = None,
    api_key_env: str | None = None,
    max_tokens: int = 128,
    max_retries: int = 3,
    transient_retries: int = 5,
    backoff_base: float = 1.0,
    backoff_max: float = 60.0,
    timeout: float = 60.0,
    replay: str | Path | ReplyStore | None = None,
    lease_s: float = 30.0,
) -> SampledRun:
    """Ask each free-form question k times; the confidence is the agreement of the answers.

    Parameters
    ----------
    items : iterable
        Mappings with ``id`` and ``question``, or ``(id, question)`` tuples.
    provider, model : str
        ``"openai"`` (any OpenAI-compatible server through ``base_url``), ``"anthropic"`` or
        ``"replay"`` (a JSON-lines file with ``item_id``, ``sample_index`` and ``text``, or a
        store holding another provider's replies for the same model, prompt and settings).
    store : ReplyStore or path
        The reply store; rerunning with it resumes and asks nothing twice.
    k : int, default 10
        Samples per item (at least 2): keys with ``sample_index`` 0 to k - 1, the same text.
    prompt : str
        With ``{question}`` (required), default :data:`DEFAULT_ANSWER_PROMPT`; the answer is
        read by :func:`parse_answer`. Its sha256 is part of every key.
    temperature : float, default 1.0
        At 0 every sample is the same reply (a :class:`~calibkit.CalibkitWarning` says so).
    equivalent, rel_tol, abs_tol
        How answers are grouped, as for :func:`~calibkit.stated.semantic.semantic_groups`; a
        judge model's equivalence (:func:`~calibkit.stated.judge_equivalence`) is given each
        item's question.
    max_retries : int, default 3
        Extra attempts after a reply with no answer line (each reply is stored); then the
        sample is failed, its error ``"unparsed: no answer line (malformed reply after n
        attempts)"``, and left out of its item's shares.
    concurrency, base_url, api_key_env, max_tokens, transient_retries, backoff_base, \
backoff_max, timeout, lease_s
        As for :func:`~calibkit.stated.elicit.elicit`.

    Returns
    -------
    SampledRun
        ``results[i]`` for the i-th item: ``answer`` is the first answer (by sample index) of
        the largest group, ``confidence`` that group's share of the parsed answers (on a tie
        for largest the first group to appear, the share unchanged, ``consistency[i].tie``
        True), ``distribution`` each group's first answer -> its share, ``n_samples`` k and
        ``n_parsed`` the samples with an answer. An item with none has status ``failed`` (or
        the error's status), confidence None. ``entropies[i]`` is the semantic entropy.

    Examples
    --------
    >>> import pathlib, tempfile, json
    >>> from calibkit.stated._questions import key_id, render
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> kid = key_id("q1", render(DEFAULT_ANSWER_PROMPT, {"question": "Capital of France?"}))
    >>> texts = ["Answer: Paris", "It is Paris.\\nAnswer: paris.", "Answer: Lyon", "I am unsure"]
    >>> lines = [{"item_id": kid, "sample_index": i, "text": t} for i, t in enumerate(texts)]
    >>> _ = (folder / "replies.jsonl").write_text("\\n".join(map(json.dumps, lines)))
    >>> run = sample_answers([{"id": "q1", "question": "Capital of France?"}], k=4,
    ...                      provider="replay", model="m", store=folder / "s.sqlite",
    ...                      replay=folder / "replies.jsonl")
    >>> r = run.results[0]
    >>> r.answer, round(r.confidence, 4), r.n_parsed, r.n_samples   # 2 of the 3 parsed
    ('Paris', 0.6667, 3, 4)
    >>> round(run.entropies[0], 4)   # -(2/3 ln 2/3 + 1/3 ln 1/3)
    0.6365
    """
    where = "sample_answers"
    if provider not in PROVIDERS:
        raise InputError(f"{where}: provider must be one of {PROVIDERS}, got {provider!r}")
    if not isinstance(prompt, str) or "{question}" not in prompt:
        raise InputError(f"{where}: the prompt must hold {{question}} (the question asked).")
    if isinstance(k, bool) or not isinstance(k, int) or k < 2:
        raise InputError(
            f"{where}: k must be an integer >= 2 (the samples per item), got {k!r}; one sample "
            "agrees with itself and gives no confidence."
        )
    if isinstance(temperature, bool) or not isinstance(temperature, int | float):
        raise InputError(f"{where}: temperature must be a number, got {temperature!r}.")
    if not temperature:
        warnings.warn(
            f"{where}: at temperature 0 the model gives the same reply k times; sample at a "
            "temperature above 0 (1.0, say).",
            CalibkitWarning,
            stacklevel=2,
        )
    _equivalence(equivalent, rel_tol, abs_tol, where)  # refused before anything is asked
    rows = read_rows(items, ("id", "question"), where=where)
    t = float(temperature)
    settings: dict[str, Any] = {"task": "sample", "temperature": t, "max_tokens": int(max_tokens)}
    texts = [
        (row["id"], row["question"], render(prompt, {"question": row["question"]})) for row in rows
    ]
    how = Asking.of(
        locals(), temperature=t, max_tokens=int(max_tokens), logprobs=False, top_logprobs=0
    )
    asked = ask_texts(
        texts,
        prompt=prompt,
        settings=settings,
        store=store,
        how=how,
        source="semantic",
        validate=_validate,
        samples=k,
    )
    recs = asked.records
    results: list[ItemResult] = []
    answers: list[list[str | None]] = []
    consistency: list[SemanticConsistency | None] = []
    for n, row in enumerate(rows):
        item_recs = recs[n * k : (n + 1) * k]
        got = [
            r.answer if r is not None and r.status == "ok" and r.answer is not None else None
            for r in item_recs
        ]
        parsed = [a for a in got if a is not None]
        sc = None
        if parsed:
            # a judge's equivalence (judge_equivalence) is told the question it judges for
            same = (
                equivalent.for_question(row["question"])
                if hasattr(equivalent, "for_question")
                else equivalent
            )
            sc = semantic_consistency(parsed, equivalent=same, rel_tol=rel_tol, abs_tol=abs_tol)
        results.append(_result(row["id"], item_recs, parsed, sc))
        answers.append(got)
        consistency.append(sc)
    fields = asked.run_fields(
        provider=provider,
        model=model,
        source="semantic",
        prompt=prompt,
        settings=settings,
        results=results,
    )
    run = ElicitationRun(**fields)
    return SampledRun(run, answers, consistency)


def _result(
    item_id: str,
    recs: list[ReplyRecord | None],
    parsed: list[str],
    sc: SemanticConsistency | None,
) -> ItemResult:
    k = len(recs)
    if sc is None:
        statuses = [
            "missing" if r is None else ("transient_error" if r.status == "pending" else r.status)
            for r in recs
        ]
        status = "permanent_error" if "permanent_error" in statuses else statuses[0]
        error = next((r.error for r in recs if r is not None and r.error), None)
        if status == "missing":
            error = error or "not asked (the run stopped)"
        return ItemResult(item_id, status, None, None, n_samples=k, n_parsed=0, error=error)
    dist: dict[str, float] = {}
    for g in sc.groups:
        rep = parsed[g[0]]
        if rep in dist:
            raise InputError(
                f"sample_answers: item {item_id!r}: the equivalence {sc.equivalence} put the "
                f"answer {rep!r:.60} in two groups (it is not equivalent to itself); give an "
                "equivalence for which every answer is equivalent to itself."
            )
        dist[rep] = len(g) / len(parsed)
    return ItemResult(
        item_id, "ok", sc.chosen, sc.confidence, None, dist, n_samples=k, n_parsed=len(parsed)
    )
