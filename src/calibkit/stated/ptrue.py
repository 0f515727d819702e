"""P(True) (Kadavath et al. 2022): the probability a model gives that a proposed answer is true.

:func:`p_true` shows a model a question and a proposed answer and asks "Is the proposed answer
true? Answer True or False." with log-probabilities (the OpenAI-compatible ``logprobs`` and
``top_logprobs``); the confidence is the probability of the True token renormalised over the
True and False tokens (:func:`true_probability`). It asks through the elicitation runner and its
:class:`~calibkit.stated.store.ReplyStore` as :func:`~calibkit.stated.judging.judge` does: every
reply is stored before it is read, a rerun resumes, a key's item id ``"<id>#<h>"`` hashes the
text sent, so a changed proposed answer is asked anew. The run is an
:class:`~calibkit.stated.elicit.ElicitationRun` with ``source="ptrue"``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._errors import InputError
from ._questions import Asking, ask_texts, read_rows, render
from ._runner import Unparsed, Validated
from .elicit import PROVIDERS, ElicitationRun, ItemResult
from .items import Item
from .store import ReplyRecord, ReplyStore

__all__ = ["DEFAULT_PTRUE_PROMPT", "FALSE_TOKENS", "TRUE_TOKENS", "p_true", "true_probability"]

DEFAULT_PTRUE_PROMPT = """\
Question: {question}
Proposed answer: {answer}
Is the proposed answer true? Answer True or False."""

#: the spellings read as True and as False (after stripping whitespace, case-insensitive)
TRUE_TOKENS = ("true", "yes")
FALSE_TOKENS = ("false", "no")


def _side(token: str) -> bool | None:
    t = token.strip().casefold()
    if t in TRUE_TOKENS:
        return True
    if t in FALSE_TOKENS:
        return False
    return None


def true_probability(
    content: Sequence[Mapping[str, Any]] | None,
) -> tuple[float | None, str | None]:
    """P(True) from the log-probabilities of a reply: ``(p, None)`` or ``(None, reason)``.

    ``content`` is the OpenAI ``logprobs.content`` list (token, logprob, top_logprobs). The
    position read is the reply's first token that is not whitespace. Its candidates (its
    ``top_logprobs`` and the token itself, each spelling once) whose text, stripped of
    whitespace and case-folded, is ``true`` or ``yes`` count for True, ``false`` or ``no`` for
    False: so ``"True"``, ``" True"``, ``"true"``, ``"TRUE"``, ``"Yes"``, ``" no"`` are read, and
    ``"True."`` or ``"Tr"`` are not. The probabilities of each side are summed, and
    ``p = P(True) / (P(True) + P(False))``. A side absent from the top log-probabilities counts
    0 (so p is 1 when only True tokens appear); when neither appears the reason is
    ``"no true/false token"``.

    Examples
    --------
    >>> def tok(t, p):
    ...     return {"token": t, "logprob": math.log(p)}
    >>> top = [tok("True", 0.6), tok(" true", 0.1), tok("False", 0.2), tok("Maybe", 0.1)]
    >>> c = [{**tok("True", 0.6), "top_logprobs": top}]
    >>> p, reason = true_probability(c)
    >>> round(p, 12), reason
    (0.777777777778, None)
    >>> true_probability([{"token": "Maybe", "logprob": 0.0, "top_logprobs": []}])
    (None, 'no true/false token')
    """
    if not content:
        return None, "no log-probabilities in the reply"
    entry = next((e for e in content if (e.get("token") or "").strip()), None)
    if entry is None:
        return None, "no true/false token"
    sums = {True: 0.0, False: 0.0}
    seen: set[str] = set()
    for c in [*(entry.get("top_logprobs") or []), entry]:
        tok = c.get("token")
        lp = c.get("logprob")
        if not isinstance(tok, str) or tok in seen or lp is None:
            continue
        seen.add(tok)
        side = _side(tok)
        if side is not None:
            sums[side] += math.exp(float(lp))
    total = sums[True] + sums[False]
    if not total > 0:
        return None, "no true/false token"
    return sums[True] / total, None


def _validate(text: str, logprobs: Any, item: Item, source: str) -> Validated | Unparsed:
    p, reason = true_probability(logprobs)
    if p is None:
        return Unparsed(str(reason), final=True)
    return ("True" if p >= 0.5 else "False"), p, {"True": p, "False": 1.0 - p}


def p_true(
    items_with_proposed_answers: Iterable[Any],
    *,
    provider: str,
    model: str,
    store: ReplyStore | str | Path,
    prompt: str = DEFAULT_PTRUE_PROMPT,
    concurrency: int = 4,
    base_url: str | None = None,
    api_key_env: str | None = None,
    temperature: float | None = 0.0,
    max_tokens: int = 5,
    top_logprobs: int = 20,
    transient_retries: int = 5,
    backoff_base: float = 1.0,
    backoff_max: float = 60.0,
    timeout: float = 60.0,
    replay: str | Path | ReplyStore | None = None,
    lease_s: float = 30.0,
) -> ElicitationRun:
    """P(True) of each proposed answer; store every reply before it is read.

    Parameters
    ----------
    items_with_proposed_answers : iterable
        Mappings with ``id``, ``question`` and ``answer`` (the proposed answer, a string), or
        ``(id, question, answer)`` tuples.
    provider, model : str
        ``"openai"`` (an OpenAI-compatible server that returns log-probabilities) or
        ``"replay"``; the Anthropic API has no log-probabilities and is refused.
    prompt : str
        With ``{question}`` and ``{answer}`` (required), default :data:`DEFAULT_PTRUE_PROMPT`;
        its sha256 is part of every key.
    max_tokens, top_logprobs : int
        The reply's length (only its first token is read) and how many alternatives the server
        returns at each position.
    store, concurrency, base_url, api_key_env, temperature, transient_retries, backoff_base, \
backoff_max, timeout, replay, lease_s
        As for :func:`~calibkit.stated.judging.judge`.

    Returns
    -------
    ElicitationRun
        ``source="ptrue"``; ``results[i]`` for the i-th item: ``confidence`` is P(True),
        ``answer`` ``"True"`` or ``"False"`` (the likelier), ``distribution`` both; an item
        whose reply has no True/False token has status ``failed``, confidence None and the
        error ``"unparsed: no true/false token"``. A reply without one is not asked again
        (the model's probabilities would not change).

    Examples
    --------
    >>> import pathlib, tempfile, json
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> item = {"id": "q1", "question": "2 + 2?", "answer": "4"}
    >>> from calibkit.stated._questions import key_id, render
    >>> lp = [{"token": "True", "logprob": math.log(0.72),
    ...        "top_logprobs": [{"token": "False", "logprob": math.log(0.18)}]}]
    >>> text = render(DEFAULT_PTRUE_PROMPT, {"question": "2 + 2?", "answer": "4"})
    >>> line = {"item_id": key_id("q1", text), "text": "True", "logprobs": lp}
    >>> _ = (folder / "replies.jsonl").write_text(json.dumps(line))
    >>> run = p_true([item], provider="replay", model="m", store=folder / "p.sqlite",
    ...              replay=folder / "replies.jsonl")
    >>> run.source, round(run.results[0].confidence, 12)
    ('ptrue', 0.8)
    """
    if provider not in PROVIDERS:
        raise InputError(f"p_true: provider must be one of {PROVIDERS}, got {provider!r}")
    if provider == "anthropic":
        raise InputError("p_true needs log-probabilities; the Anthropic API has none")
    if not isinstance(prompt, str) or "{answer}" not in prompt:
        raise InputError("p_true: the prompt must hold {answer} (the proposed answer).")
    rows = read_rows(items_with_proposed_answers, ("id", "question", "answer"), where="p_true")
    t = None if temperature is None else float(temperature)
    settings: dict[str, Any] = {
        "task": "ptrue",
        "temperature": t,
        "max_tokens": int(max_tokens),
        "logprobs": True,
        "top_logprobs": int(top_logprobs),
    }
    texts = [
        (
            row["id"],
            row["question"],
            render(prompt, {"question": row["question"], "answer": row["answer"]}),
        )
        for row in rows
    ]
    how = Asking.of(
        locals(),
        temperature=t,
        max_tokens=int(max_tokens),
        logprobs=True,
        top_logprobs=int(top_logprobs),
        max_retries=0,
    )
    asked = ask_texts(
        texts,
        prompt=prompt,
        settings=settings,
        store=store,
        how=how,
        source="ptrue",
        validate=_validate,
    )
    results = [_result(row["id"], rec) for row, rec in zip(rows, asked.records, strict=True)]
    fields = asked.run_fields(
        provider=provider,
        model=model,
        source="ptrue",
        prompt=prompt,
        settings=settings,
        results=results,
    )
    return ElicitationRun(**fields)


def _result(item_id: str, rec: ReplyRecord | None) -> ItemResult:
    if rec is None:
        return ItemResult(item_id, "missing", None, None, error="not asked (the run stopped)")
    if rec.status == "ok" and rec.confidence is not None:
        p = float(rec.confidence)
        return ItemResult(item_id, "ok", rec.answer, p, None, {"True": p, "False": 1.0 - p}, 1, 1)
    status = "transient_error" if rec.status == "pending" else rec.status
    return ItemResult(item_id, status, None, None, n_samples=1, n_parsed=0, error=rec.error)
