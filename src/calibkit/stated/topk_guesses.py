"""Verbalized top-k (Tian et al. 2023, "Just Ask for Calibration"): a model's k best guesses,
each with the probability it states that the guess is correct.

:func:`topk` asks a model, for each (item id, question), for its ``k`` best guesses in the
layout ``G1: <guess>`` / ``P1: <probability>`` ... ``Gk:`` / ``Pk:``
(:data:`DEFAULT_TOPK_PROMPT`), reads the reply strictly (:func:`parse_topk`) and takes the guess
with the largest stated probability as the item's answer and that probability as its
confidence. It asks through the elicitation runner and its
:class:`~calibkit.stated.store.ReplyStore` as :func:`~calibkit.stated.ptrue.p_true` does: every
reply is stored before it is read, a rerun resumes, and a key's item id ``"<id>#<h>"`` hashes
the text sent (so a changed question is asked anew; ``k`` is in the settings, so a changed ``k``
too). The answers are free text: grade them with :func:`~calibkit.stated.graders.grade_many`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import InputError
from ._confidence import MAX_REPLY_CHARS, _from_value
from ._normalise import normalize_answer
from ._questions import Asking, ask_texts, read_rows, render
from ._runner import Unparsed, Validated
from .elicit import PROVIDERS, ElicitationRun, ItemResult
from .items import Item
from .store import ReplyRecord, ReplyStore

__all__ = ["DEFAULT_TOPK_PROMPT", "TOPK_REASONS", "TopKRun", "parse_topk", "topk"]

#: the verbalized top-k prompt in the wording of Tian et al. (2023), so that their numbers can be
#: compared; pass ``prompt=`` for another
DEFAULT_TOPK_PROMPT = """\
Provide your {k} best guesses and the probability that each is correct (0.0 to 1.0) for the
following question. Give ONLY the guesses and probabilities, no other words or explanation.
For example:

G1: <first most likely guess, as short as possible; not a complete sentence, just the guess!>
P1: <the probability between 0.0 and 1.0 that G1 is correct, without any extra commentary \
whatsoever; just the probability!>
...
G{k}: <{k}-th most likely guess, as short as possible; not a complete sentence, just the guess!>
P{k}: <the probability between 0.0 and 1.0 that G{k} is correct, without any extra commentary \
whatsoever; just the probability!>

The question is: {question}"""

#: the largest number of guesses asked for
MAX_K = 20

#: why a reply gives no guesses (:func:`parse_topk`), and "conflicting": a tie for the largest
#: stated probability (no answer is chosen)
TOPK_REASONS = (
    "no guesses",
    "missing probability",
    "unreadable probability",
    "out of range",
    "too few guesses",
    "too many guesses",
    "bad numbering",
    "empty guess",
    "duplicate guess",
    "too long",
    "conflicting",
)

# a label at the start of a line: "G1: x", "**G1:** x", "- p2 : 0.3", "**P1: 0.7**"
_LINE = re.compile(r"^(?:[-*+]\s+)?[*_]*\s*([GP])\s*(\d{1,3})\s*[*_]*\s*:\s*(.*)$", re.IGNORECASE)
_DECORATION = " \t*_`"
_NUMERIC_FORMS = ("decimal", "percent", "fraction N/10", "N out of 10")


def _probability(text: str) -> tuple[float | None, str | None]:
    """The probability written after ``P<i>:`` (the confidence parser's numbers)."""
    if not text:
        return None, "missing probability"
    r = _from_value(text, None, None)
    if r.value is not None and r.form in _NUMERIC_FORMS:
        return r.value, None
    if r.reason == "out of range":
        return None, "out of range"
    return None, "unreadable probability"


def parse_topk(text: str, k: int) -> tuple[list[tuple[str, float]] | None, str | None]:
    """The k guesses of a reply with their stated probabilities: ``(guesses, None)`` or
    ``(None, reason)``.

    A line is read when it starts (after whitespace, a list bullet and Markdown emphasis such
    as ``**G1:**``) with ``G<i>:`` (a guess) or ``P<i>:`` (its probability), case-insensitive;
    other lines (an explanation before or after) are ignored. A probability is read by the
    confidence parser's number rules (``0.7``, ``.7``, ``70%``, ``7/10``; a bare ``1`` or
    ``0`` too); words ("likely") are not read. The guesses must be numbered 1, 2, ... k in
    order, each once, each with its probability; two guesses with the same
    :func:`~calibkit.stated.grade.normalize_answer` form are an error. The probabilities are
    used as given: they are not renormalised, and a sum above 1 is not an error (:func:`topk`
    counts it). Each failure has its reason in :data:`TOPK_REASONS`; nothing is repaired.

    Examples
    --------
    >>> parse_topk("G1: Paris\\nP1: 0.7\\nG2: Lyon\\nP2: 20%", 2)
    ([('Paris', 0.7), ('Lyon', 0.2)], None)
    >>> parse_topk("**G1:** Paris\\n**P1:** .9\\nBecause it is the capital.", 1)
    ([('Paris', 0.9)], None)
    >>> parse_topk("G1: Paris\\nP1: 0.7\\nG2: Lyon", 2)
    (None, 'missing probability')
    >>> parse_topk("G1: Paris\\nP1: 0.7\\nG2: the paris\\nP2: 0.1", 2)
    (None, 'duplicate guess')
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_topk: text must be a string, got {type(text).__name__}")
    if len(text) > MAX_REPLY_CHARS:
        return None, "too long"
    order: list[int] = []
    guesses: dict[int, str] = {}
    probs: dict[int, str] = {}
    for line in text.splitlines():
        m = _LINE.match(line.strip())
        if m is None:
            continue
        kind, i, rest = m.group(1).upper(), int(m.group(2)), m.group(3).strip(_DECORATION)
        seen = guesses if kind == "G" else probs
        if i in seen:
            return None, "bad numbering"
        seen[i] = rest
        if kind == "G":
            order.append(i)
    if not guesses:
        return None, "no guesses"
    if order != list(range(1, len(order) + 1)) or any(i not in guesses for i in probs):
        return None, "bad numbering"
    if any(i not in probs or not probs[i] for i in order):
        return None, "missing probability"
    if len(order) < k:
        return None, "too few guesses"
    if len(order) > k:
        return None, "too many guesses"
    out: list[tuple[str, float]] = []
    forms: set[str] = set()
    for i in order:
        guess = guesses[i]
        form = normalize_answer(guess)
        if not form:
            return None, "empty guess"
        if form in forms:
            return None, "duplicate guess"
        forms.add(form)
        p, reason = _probability(probs[i])
        if p is None:
            return None, reason
        out.append((guess, p))
    return out, None


def _top(guesses: list[tuple[str, float]]) -> tuple[str, float] | None:
    """The guess with the largest stated probability; None on a tie for the largest."""
    best = max(p for _, p in guesses)
    tops = [g for g, p in guesses if p == best]
    return (tops[0], best) if len(tops) == 1 else None


def _over_one(guesses: list[tuple[str, float]]) -> bool:
    return sum(p for _, p in guesses) > 1.0 + 1e-9


def _validator(k: int) -> Any:
    def validate(text: str, logprobs: Any, item: Item, source: str) -> Validated | Unparsed:
        guesses, reason = parse_topk(text, k)
        if guesses is None:
            return Unparsed(str(reason), final=False)
        top = _top(guesses)
        if top is None:
            return Unparsed("conflicting", final=False)
        return top[0], top[1], dict(guesses)

    return validate


@dataclass
class TopKRun(ElicitationRun):
    """An :class:`~calibkit.stated.elicit.ElicitationRun` with ``source="topk"``, and
    ``over_one``: the ids of the items whose stated probabilities sum to more than 1 (used as
    given, not renormalised)."""

    over_one: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return f"{super().summary()} sum>1={len(self.over_one)}"


def _k(k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise InputError(
            f"topk: k must be an integer from 1 to {MAX_K} (the number of guesses asked for), "
            f"got {k!r}."
        )
    return k


def topk(
    items: Iterable[Any],
    *,
    provider: str,
    model: str,
    store: ReplyStore | str | Path,
    k: int = 4,
    prompt: str = DEFAULT_TOPK_PROMPT,
    concurrency: int = 4,
    base_url: str | None = None,
    api_key_env: str | None = None,
    temperature: float | None = 0.0,
    max_tokens: int = 256,
    max_retries: int = 3,
    transient_retries: int = 5,
    backoff_base: float = 1.0,
    backoff_max: float = 60.0,
    timeout: float = 60.0,
    replay: str | Path | ReplyStore | None = None,
    lease_s: float = 30.0,
) -> TopKRun:
    """Ask for each question's ``k`` best guesses with their probabilities; store every reply
    before it is read.

    Parameters
    ----------
    items : iterable
        Mappings with ``id`` and ``question``, or ``(id, question)`` tuples.
    provider, model : str
        ``"openai"`` (any OpenAI-compatible server through ``base_url``), ``"anthropic"`` or
        ``"replay"`` (no log-probabilities are needed).
    k : int
        How many guesses to ask for, 1 to :data:`MAX_K`; part of the settings (so of the keys).
    prompt : str
        With ``{question}`` (required) and ``{k}``, default :data:`DEFAULT_TOPK_PROMPT`; its
        sha256 is part of every key.
    max_retries : int
        Extra attempts after a reply :func:`parse_topk` reads no guesses from, or one with a
        tie for the largest probability; then the item has status ``failed`` and the error
        ``"unparsed: <reason> (malformed reply after n attempts)"``.
    store, concurrency, base_url, api_key_env, temperature, max_tokens, transient_retries, \
backoff_base, backoff_max, timeout, replay, lease_s
        As for :func:`~calibkit.stated.judging.judge`.

    Returns
    -------
    TopKRun
        ``source="topk"``; ``results[i]`` for the i-th item: ``answer`` is the guess with the
        largest stated probability, ``confidence`` (and ``verbalized``) that probability,
        ``distribution`` every guess and its probability; ``over_one`` the items whose
        probabilities sum to more than 1.

    Examples
    --------
    >>> import pathlib, tempfile, json
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> from calibkit.stated._questions import key_id, render
    >>> text = render(DEFAULT_TOPK_PROMPT, {"question": "Capital of France?", "k": "2"})
    >>> reply = "G1: Paris\\nP1: 0.8\\nG2: Lyon\\nP2: 0.1"
    >>> line = {"item_id": key_id("q1", text), "text": reply}
    >>> _ = (folder / "replies.jsonl").write_text(json.dumps(line))
    >>> run = topk([("q1", "Capital of France?")], provider="replay", model="m", k=2,
    ...            store=folder / "t.sqlite", replay=folder / "replies.jsonl")
    >>> r = run.results[0]
    >>> run.source, r.answer, r.confidence, r.distribution
    ('topk', 'Paris', 0.8, {'Paris': 0.8, 'Lyon': 0.1})
    """
    if provider not in PROVIDERS:
        raise InputError(f"topk: provider must be one of {PROVIDERS}, got {provider!r}")
    k = _k(k)
    if not isinstance(prompt, str) or "{question}" not in prompt:
        raise InputError("topk: the prompt must hold {question}, and should hold {k}.")
    rows = read_rows(items, ("id", "question"), where="topk")
    t = None if temperature is None else float(temperature)
    settings: dict[str, Any] = {"task": "topk", "k": k, "temperature": t}
    settings["max_tokens"] = int(max_tokens)
    texts = [
        (row["id"], row["question"], render(prompt, {"question": row["question"], "k": str(k)}))
        for row in rows
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
        source="topk",
        validate=_validator(k),
    )
    results: list[ItemResult] = []
    over_one: list[str] = []
    for row, rec in zip(rows, asked.records, strict=True):
        res, over = _result(row["id"], rec, k)
        results.append(res)
        if over:
            over_one.append(row["id"])
    fields = asked.run_fields(
        provider=provider,
        model=model,
        source="topk",
        prompt=prompt,
        settings=settings,
        results=results,
    )
    return TopKRun(**fields, over_one=over_one)


def _result(item_id: str, rec: ReplyRecord | None, k: int) -> tuple[ItemResult, bool]:
    """The item's result from its stored record (an ok reply is read again for its guesses),
    and whether its stated probabilities sum to more than 1."""
    if rec is None:
        missing = ItemResult(item_id, "missing", None, None, error="not asked (the run stopped)")
        return missing, False
    if rec.status == "ok":
        guesses, reason = parse_topk(rec.text or "", k)
        top = None if guesses is None else _top(guesses)
        if guesses is None or top is None:  # stored by a parser that read it otherwise
            error = f"unparsed: {reason or 'conflicting'} (on reading the stored reply again)"
            return ItemResult(item_id, "failed", None, None, n_parsed=0, error=error), False
        answer, p = top
        dist = dict(guesses)
        return ItemResult(item_id, "ok", answer, p, p, dist, 1, 1), _over_one(guesses)
    status = "transient_error" if rec.status == "pending" else rec.status
    return ItemResult(item_id, status, None, None, n_samples=1, n_parsed=0, error=rec.error), False
