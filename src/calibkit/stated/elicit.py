"""Elicit an answer and a confidence from a language model, without losing a paid reply.

:func:`elicit` asks a model, for every item of a decision set (id, question, options), for an
answer and a confidence in one structured reply, validates it with
:func:`calibkit.stated.parse.parse_decision` and retries a malformed reply a bounded number of
times. The prompt is part of the measurement: it is fixed, returned with the run and its sha256
recorded in every key. Every reply is committed to a :class:`~calibkit.stated.store.ReplyStore`
before it is parsed, so a rerun after an interruption resumes and never repeats a stored call,
and runs sharing a store share the work (each key is leased to one run before it is asked).

Three sources of confidence:

- ``"verbalized"``: the confidence the model writes in its reply;
- ``"logprob"``: the probability of the answer token, renormalised over the options' tokens
  (OpenAI-compatible servers that return log-probabilities; options must be told apart by their
  first token, as option letters are);
- ``"consistency"``: ``samples`` replies per item; the confidence is the share of parsed replies
  that agree with the most common answer (unparsed samples are excluded and counted).

Providers: ``"openai"`` (the official SDK; any OpenAI-compatible server through ``base_url``:
vLLM, llama.cpp's server, Ollama), ``"anthropic"`` (the official SDK, ``base_url`` supported) and
``"replay"`` (recorded replies from a store or a JSONL file; no network). Keys are read only from
the environment variable ``api_key_env``; nothing is sent unless a provider is called.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import CalibkitWarning, InputError
from ._decision import _option_map
from ._runner import Counters, Plan, Reachability, run_keys
from .items import Item
from .logprobs import option_distribution
from .parse import parse_decision
from .providers import PermanentError, TransientError, make_caller
from .store import FINAL_STATUSES, ReplyKey, ReplyRecord, ReplyStore, StoreError, new_owner

__all__ = [
    "DEFAULT_PROMPT",
    "ElicitationRun",
    "Item",
    "ItemResult",
    "PermanentError",
    "ProviderUnreachable",
    "TransientError",
    "elicit",
    "option_distribution",
    "prompt_hash",
    "render_prompt",
]

PROVIDERS = ("openai", "anthropic", "replay")
SOURCES = ("verbalized", "logprob", "consistency")

DEFAULT_PROMPT = """\
Answer the question below by choosing exactly one of the options.
Then give the probability, between 0 and 1, that your answer is correct.

Question: {question}
Options: {options}

Reply with a single JSON object and nothing else, in this form:
{"answer": "<one of the options, exactly as written>", "confidence": <a number between 0 and 1>}"""


class ProviderUnreachable(ConnectionError):
    """The provider could not be reached (or stopped answering): the run stopped early, every
    reply received so far is stored, and a rerun resumes."""


@dataclass(frozen=True)
class ItemResult:
    """The outcome of one item. ``confidence`` comes from the run's source; ``verbalized`` is the
    stated confidence of the first parsed reply whatever the source. No fallback values: an item
    that did not parse has ``status != "ok"`` and ``answer``/``confidence`` None."""

    item_id: str
    status: str
    answer: str | None
    confidence: float | None
    verbalized: float | None = None
    distribution: dict[str, float] | None = None
    n_samples: int = 1
    n_parsed: int = 0
    error: str | None = None


@dataclass
class ElicitationRun:
    provider: str
    model: str
    source: str
    prompt: str
    prompt_hash: str
    settings: dict[str, Any]
    settings_hash: str
    results: list[ItemResult]
    replies: list[ReplyRecord]
    input_tokens: int = 0  # tokens of the calls made by this run
    output_tokens: int = 0
    calls: int = 0  # calls made by this run (0 on a complete resume)
    reused: int = 0  # keys whose final reply was already stored
    status_counts: dict[str, int] = field(default_factory=dict)

    @property
    def parse_rate(self) -> float:
        n = len(self.results)
        return float("nan") if n == 0 else self.status_counts.get("ok", 0) / n

    def summary(self) -> str:
        return (
            f"{self.provider}:{self.model} source={self.source} items={len(self.results)} "
            f"status={dict(self.status_counts)} calls={self.calls} reused={self.reused} "
            f"tokens in/out={self.input_tokens}/{self.output_tokens} "
            f"prompt sha256={self.prompt_hash}"
        )


# -- prompt and keys ---------------------------------------------------------------------------
def prompt_hash(prompt: str) -> str:
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()


def render_prompt(prompt: str, item: Item) -> str:
    """Fill ``{question}`` and ``{options}`` (plain replacement; other braces are kept).

    >>> render_prompt("Q: {question} [{options}]", Item("1", "2+2?", ("3", "4")))
    'Q: 2+2? [3, 4]'
    """
    return prompt.replace("{question}", item.question).replace("{options}", ", ".join(item.options))


def _items(items: Iterable[Any]) -> list[Item]:
    out: list[Item] = []
    for n, it in enumerate(items):
        try:
            if isinstance(it, Item):
                out.append(it)
            elif isinstance(it, Mapping):
                out.append(Item(str(it["id"]), str(it["question"]), tuple(map(str, it["options"]))))
            else:
                i, q, o = it
                out.append(Item(str(i), str(q), tuple(map(str, o))))
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(
                f"elicit: item {n} is not an item ({type(exc).__name__}: {exc}); give mappings "
                "with id, question and options, or (id, question, options) tuples."
            ) from None
    ids = [it.id for it in out]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise InputError(f"elicit: item ids must be unique; {dup!r} is given more than once.")
    for it in out:
        if len(it.options) < 2:
            raise InputError(f"elicit: item {it.id!r} needs at least two options.")
        try:  # options the parser could not tell apart: refused before anything is paid for
            _option_map(it.options)
        except InputError as exc:
            raise InputError(f"elicit: item {it.id!r}: {exc}") from None
    return out


def _settings(
    source: str, samples: int, temperature: float | None, max_tokens: int, top_logprobs: int
) -> dict[str, Any]:
    t = None if temperature is None else float(temperature)
    s: dict[str, Any] = {"temperature": t, "max_tokens": int(max_tokens)}
    if source == "logprob":
        s["logprobs"] = True
        s["top_logprobs"] = int(top_logprobs)
    return s


def elicit(
    items: Iterable[Any],
    *,
    provider: str,
    model: str,
    prompt: str | None = None,
    store: ReplyStore | str | Path,
    samples: int = 1,
    temperature: float | None = 0.0,
    max_retries: int = 3,
    concurrency: int = 4,
    base_url: str | None = None,
    api_key_env: str | None = None,
    source: str = "verbalized",
    max_tokens: int = 256,
    top_logprobs: int = 20,
    transient_retries: int = 5,
    backoff_base: float = 1.0,
    backoff_max: float = 60.0,
    timeout: float = 60.0,
    replay: str | Path | ReplyStore | None = None,
    lease_s: float = 30.0,
) -> ElicitationRun:
    """Ask ``model`` for an answer and a confidence on every item; store every reply first.

    ``items``: mappings with ``id``, ``question``, ``options`` (or ``(id, question, options)``
    tuples, or :class:`Item`). ``prompt``: a template with ``{question}`` and ``{options}``
    (default :data:`DEFAULT_PROMPT`); its sha256 is part of every key. ``max_retries``: extra
    attempts after a reply the parser reads nothing from (each stored), then the key is
    recorded ``failed`` with the error "unparsed: <reason>"; a reply the parser itself fails on
    is recorded so at once. ``transient_retries``/``backoff_base``/``backoff_max``: bounded
    exponential backoff (with jitter) for 429, 5xx, timeouts and connection errors; when
    exhausted the key is left ``transient_error`` and a rerun asks again. When the provider
    cannot be reached (three connections in a row fail before any reply, or a key's retries all
    fail to connect with no reply from any request meanwhile) the run stops and
    :class:`ProviderUnreachable` says why. A permanent error (400/401/403/404...) is recorded
    against its item and the run goes on. ``samples``: replies per item (``k`` for
    ``source="consistency"``). ``temperature=None`` sends none (the provider's default); the
    anthropic 2.x SDK has no temperature argument, so a number is sent in the request body.
    ``replay``: for ``provider="replay"``, a JSONL file of
    ``{"item_id", "sample_index", "text", ...}`` or a store (default: ``store`` itself, reading the
    replies other providers stored for the same model, prompt and settings).

    Runs sharing a store share the work: each key is leased (``lease_s`` seconds, renewed while
    its request is in flight) to the run asking it; a key leased by another live run is come
    back to once that run has answered it or its lease has expired, so every key is asked once.

    Keys are read only from the environment (``api_key_env``, default ``OPENAI_API_KEY`` or
    ``ANTHROPIC_API_KEY``; with a ``base_url`` and no key, a placeholder is sent, as local
    servers expect). Interrupting (Ctrl-C, an exception) lets in-flight calls finish and store
    their replies; rerunning the same call resumes. A store that fails (a full disk, a damaged
    file) raises :class:`~calibkit.stated.store.StoreError`, saying which received replies
    could not be stored.
    """
    if provider not in PROVIDERS:
        raise InputError(f"provider must be one of {PROVIDERS}, got {provider!r}")
    if source not in SOURCES:
        raise InputError(f"source must be one of {SOURCES}, got {source!r}")
    if source == "logprob" and provider == "anthropic":
        raise InputError("source='logprob' needs log-probabilities; the Anthropic API has none")
    if samples < 1 or concurrency < 1 or max_retries < 0 or transient_retries < 0:
        raise InputError("samples and concurrency must be >= 1, retries >= 0")
    if not lease_s > 0:
        raise InputError(f"lease_s must be a positive number of seconds, got {lease_s!r}")
    if source == "consistency" and samples < 2:
        raise InputError("source='consistency' needs samples >= 2")
    if source == "consistency" and not temperature:
        warnings.warn(
            "source='consistency' at temperature 0 samples the same reply k times",
            CalibkitWarning,
            stacklevel=2,
        )
    its = _items(items)
    prompt = DEFAULT_PROMPT if prompt is None else prompt
    ph = prompt_hash(prompt)
    settings = _settings(source, samples, temperature, max_tokens, top_logprobs)
    sh = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]

    own_store = not isinstance(store, ReplyStore)
    st = ReplyStore(store) if not isinstance(store, ReplyStore) else store
    try:
        st.put_prompt(ph, prompt)
        keys = [
            (ReplyKey(provider, model, ph, it.id, s, sh), it) for it in its for s in range(samples)
        ]
        todo = [
            (k, it, render_prompt(prompt, it))
            for k, it in keys
            if (r := st.get(k)) is None or r.status not in FINAL_STATUSES
        ]
        counters = Counters(reused=len(keys) - len(todo))
        reach = Reachability()
        if todo:
            call = make_caller(
                provider,
                model,
                base_url=base_url,
                api_key_env=api_key_env,
                temperature=temperature,
                max_tokens=max_tokens,
                source=source,
                top_logprobs=top_logprobs,
                timeout=timeout,
                replay=st if replay is None else replay,
                prompt_hash=ph,
                settings_hash=sh,
            )
            plan = Plan(
                call=call,
                store=st,
                source=source,
                max_retries=0 if provider == "replay" else max_retries,
                transient_retries=transient_retries,
                backoff_base=backoff_base,
                backoff_max=backoff_max,
                owner=new_owner(),
                lease_s=float(lease_s),
            )
            try:
                run_keys(todo, plan=plan, concurrency=concurrency, counters=counters, reach=reach)
            except StoreError as exc:
                if not counters.lost:
                    raise
                raise StoreError(_lost_message(counters, exc)) from None
        if reach.reason is not None:
            raise ProviderUnreachable(_unreachable_message(provider, base_url, reach, len(keys)))
        return _collect(its, keys, st, provider, model, source, prompt, ph, settings, sh, counters)
    finally:
        if own_store:
            st.close()


def _lost_message(counters: Counters, exc: StoreError) -> str:
    lost = counters.lost
    tokens = sum(t for _, t in lost)
    names = ", ".join(f"{k.item_id!r} (sample {k.sample_index})" for k, _ in lost[:5])
    if len(lost) == 1:
        head = f"the reply received for item {names} could not be stored and is lost"
    else:
        more = f" and {len(lost) - 5} more" if len(lost) > 5 else ""
        head = f"{len(lost)} replies received could not be stored and are lost: {names}{more}"
    return (
        f"{head} ({tokens} output tokens paid); the run stopped, and a rerun asks again what "
        f"was lost. {exc}"
    )


def _unreachable_message(
    provider: str, base_url: str | None, reach: Reachability, n_keys: int
) -> str:
    where = f"{provider} at {base_url}" if base_url else f"{provider} (its default address)"
    got = (
        "nothing was asked"
        if reach.replies == 0
        else f"{reach.replies} of {n_keys} replies came before it stopped answering"
    )
    return (
        f"cannot reach {where}: {reach.reason}; {reach.in_a_row} connection attempts in a row "
        f"failed and {got}. The replies stored so far are kept; check the address and the "
        "network, then rerun (stored replies are not asked again)."
    )


def _verbalized(r: ReplyRecord, options: tuple[str, ...]) -> float | None:
    try:
        p = parse_decision(r.text or "", options)
    except Exception:  # the parser failing on a stored reply loses only this side figure
        return None
    return None if p is None else float(p[1])


def _distribution(r: ReplyRecord, options: tuple[str, ...]) -> dict[str, float] | None:
    try:
        return option_distribution(r.logprobs or [], r.text or "", str(r.answer), options)
    except Exception:  # as in _verbalized
        return None


def _collect(
    its: list[Item],
    keys: list[tuple[ReplyKey, Item]],
    st: ReplyStore,
    provider: str,
    model: str,
    source: str,
    prompt: str,
    ph: str,
    settings: dict[str, Any],
    sh: str,
    counters: Counters,
) -> ElicitationRun:
    by_item: dict[str, list[ReplyRecord]] = {it.id: [] for it in its}
    replies: list[ReplyRecord] = []
    for k, _ in keys:
        rec = st.get(k)
        if rec is not None:
            by_item[k.item_id].append(rec)
            replies.append(rec)
    results: list[ItemResult] = []
    for it in its:
        recs = by_item[it.id]
        ok = [r for r in recs if r.status == "ok" and r.answer is not None]
        n = len(recs)
        verbal = next((v for r in ok if (v := _verbalized(r, it.options)) is not None), None)
        if not ok:
            statuses = [r.status for r in recs] or ["missing"]
            status = "permanent_error" if "permanent_error" in statuses else statuses[0]
            if status == "pending":
                status = "transient_error"
            err = next((r.error for r in recs if r.error), None)
            results.append(ItemResult(it.id, status, None, None, None, None, n, 0, err))
            continue
        if source == "consistency":
            counts = Counter(str(r.answer) for r in ok)
            answer, c = counts.most_common(1)[0]
            dist = {o: counts.get(o, 0) / len(ok) for o in it.options}
            results.append(ItemResult(it.id, "ok", answer, c / len(ok), verbal, dist, n, len(ok)))
        else:
            r0 = ok[0]
            dist = None
            if source == "logprob" and r0.text is not None:
                dist = _distribution(r0, it.options)
            results.append(
                ItemResult(it.id, "ok", r0.answer, r0.confidence, verbal, dist, n, len(ok))
            )
    return ElicitationRun(
        provider=provider,
        model=model,
        source=source,
        prompt=prompt,
        prompt_hash=ph,
        settings=settings,
        settings_hash=sh,
        results=results,
        replies=replies,
        input_tokens=counters.input_tokens,
        output_tokens=counters.output_tokens,
        calls=counters.calls,
        reused=counters.reused,
        status_counts=dict(Counter(r.status for r in results)),
    )
