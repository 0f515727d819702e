"""Elicit an answer and a confidence from a language model, without losing a paid reply.

:func:`elicit` asks a model, for every item of a decision set (id, question, options), for an
answer and a confidence in one structured reply, validates it with
:func:`calibkit.stated.parse.parse_decision` and retries a malformed reply a bounded number of
times. The prompt is part of the measurement: it is fixed, returned with the run and its sha256
recorded in every key. Every reply is committed to a :class:`~calibkit.stated.store.ReplyStore`
before it is parsed, so a rerun after an interruption resumes and never repeats a stored call.

Three sources of confidence (seed 002, section 7):

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
import math
import os
import random
import re
import sys
import threading
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .store import FINAL_STATUSES, ReplyKey, ReplyRecord, ReplyStore

__all__ = [
    "DEFAULT_PROMPT",
    "ElicitationRun",
    "Item",
    "ItemResult",
    "PermanentError",
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


class TransientError(Exception):
    """A call that may succeed if repeated (429, 5xx, timeout, connection error)."""


class PermanentError(Exception):
    """A call that will not succeed if repeated (400, 401, 403, 404, 422...)."""


@dataclass(frozen=True)
class Item:
    id: str
    question: str
    options: tuple[str, ...]


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
    for it in items:
        if isinstance(it, Item):
            out.append(it)
        elif isinstance(it, Mapping):
            out.append(Item(str(it["id"]), str(it["question"]), tuple(map(str, it["options"]))))
        else:
            i, q, o = it
            out.append(Item(str(i), str(q), tuple(map(str, o))))
    ids = [it.id for it in out]
    if len(set(ids)) != len(ids):
        raise ValueError("item ids must be unique")
    for it in out:
        if len(it.options) < 2:
            raise ValueError(f"item {it.id!r} needs at least two options")
    return out


# -- log-probabilities -------------------------------------------------------------------------
_ANSWER_AT = (
    re.compile(r'"answer"\s*:\s*"?', re.IGNORECASE),
    re.compile(r"answer\s*[:=]\s*\"?", re.IGNORECASE),
)


def _token_option(token: str, options: Sequence[str]) -> str | None:
    t = token.strip().strip("\"'").strip().casefold()
    if not t:
        return None
    exact = [o for o in options if o.strip().casefold() == t]
    if len(exact) == 1:
        return exact[0]
    pref = [o for o in options if o.strip().casefold().startswith(t)]
    return pref[0] if len(pref) == 1 else None


def option_distribution(
    content: Sequence[Mapping[str, Any]], text: str, answer: str, options: Sequence[str]
) -> dict[str, float] | None:
    """The options' probabilities at the answer token, renormalised over the options.

    ``content`` is the OpenAI ``logprobs.content`` list (token, logprob, top_logprobs). The answer
    token is the one covering the answer's first character in ``text``. None if it cannot be
    found or no top token is an option.

    >>> c = [{"token": "Answer: ", "logprob": 0.0, "top_logprobs": []},
    ...      {"token": "B", "logprob": math.log(0.6), "top_logprobs": [
    ...          {"token": "B", "logprob": math.log(0.6)}, {"token": "A", "logprob": math.log(0.2)},
    ...          {"token": "I", "logprob": math.log(0.2)}]}]
    >>> d = option_distribution(c, "Answer: B", "B", ["A", "B"])
    >>> {k: round(v, 6) for k, v in d.items()}
    {'A': 0.25, 'B': 0.75}
    """
    offset = None
    for rx in _ANSWER_AT:
        m = rx.search(text)
        if m is not None:
            rest = text[m.end() :]
            offset = m.end() + (len(rest) - len(rest.lstrip()))
            break
    if offset is None:
        i = text.casefold().find(answer.casefold())
        offset = None if i < 0 else i
    if offset is None:
        return None
    pos = 0
    entry: Mapping[str, Any] | None = None
    for e in content:
        end = pos + len(e.get("token") or "")
        if end > offset:
            entry = e
            break
        pos = end
    if entry is None:
        return None
    probs = dict.fromkeys(options, 0.0)
    seen: set[str] = set()
    cands = list(entry.get("top_logprobs") or []) + [entry]
    for c in cands:
        tok = c.get("token") or ""
        if tok in seen or c.get("logprob") is None:
            continue
        seen.add(tok)
        opt = _token_option(tok, options)
        if opt is not None:
            probs[opt] += math.exp(float(c["logprob"]))
    total = sum(probs.values())
    if not total > 0:
        return None
    return {o: p / total for o, p in probs.items()}


# -- providers ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Reply:
    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    logprobs: Any = None


def _classify(exc: BaseException) -> str | None:
    """ "transient", "permanent", or None (not an API error: re-raised)."""
    if isinstance(exc, TransientError):
        return "transient"
    if isinstance(exc, PermanentError):
        return "permanent"
    for modname in ("openai", "anthropic"):
        mod = sys.modules.get(modname)  # an SDK that is not imported raised nothing
        if mod is None:
            continue
        if isinstance(exc, mod.APIConnectionError):  # includes APITimeoutError
            return "transient"
        if isinstance(exc, mod.APIStatusError):
            code = int(exc.status_code)
            if code in (408, 409, 429) or code >= 500:
                return "transient"
            return "permanent"
    return None


def _api_key(api_key_env: str | None, default_env: str, base_url: str | None) -> str:
    env = api_key_env or default_env
    key = os.environ.get(env)
    if key:
        return key
    if base_url is not None and api_key_env is None:
        return "not-needed"  # local OpenAI-compatible servers usually take any key
    raise ValueError(f"no API key: set the environment variable {env}")


def _openai_caller(
    model: str,
    *,
    base_url: str | None,
    api_key_env: str | None,
    temperature: float | None,
    max_tokens: int,
    logprobs: bool,
    top_logprobs: int,
    timeout: float,
) -> Callable[[Item, int, str], _Reply]:
    try:
        import openai
    except ImportError as e:  # pragma: no cover
        raise ImportError(
            "provider 'openai' needs the openai SDK: pip install calibkit[llm]"
        ) from e
    client = openai.OpenAI(
        api_key=_api_key(api_key_env, "OPENAI_API_KEY", base_url),
        base_url=base_url,
        max_retries=0,  # retries are ours: bounded, with backoff, and every attempt stored
        timeout=timeout,
    )

    def call(item: Item, sample_index: int, text: str) -> _Reply:
        kw: dict[str, Any] = {}
        if logprobs:
            kw = {"logprobs": True, "top_logprobs": top_logprobs}
        if temperature is not None:
            kw["temperature"] = temperature
        r = client.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": text}],
            max_tokens=max_tokens,
            **kw,
        )
        if not r.choices:
            raise TransientError("reply without choices")
        ch = r.choices[0]
        lp = None
        if ch.logprobs is not None and ch.logprobs.content is not None:
            lp = [c.model_dump(exclude_none=True) for c in ch.logprobs.content]
        u = r.usage
        return _Reply(
            ch.message.content or "",
            int(u.prompt_tokens or 0) if u else 0,
            int(u.completion_tokens or 0) if u else 0,
            lp,
        )

    return call


def _anthropic_caller(
    model: str,
    *,
    base_url: str | None,
    api_key_env: str | None,
    temperature: float | None,
    max_tokens: int,
    timeout: float,
) -> Callable[[Item, int, str], _Reply]:
    try:
        import anthropic
    except ImportError as e:  # pragma: no cover
        raise ImportError(
            "provider 'anthropic' needs the anthropic SDK: pip install calibkit[llm]"
        ) from e
    client = anthropic.Anthropic(
        api_key=_api_key(api_key_env, "ANTHROPIC_API_KEY", base_url),
        base_url=base_url,
        max_retries=0,
        timeout=timeout,
    )

    def call(item: Item, sample_index: int, text: str) -> _Reply:
        # anthropic 2.x has no ``temperature`` argument: it travels in the body when asked for
        extra = None if temperature is None else {"temperature": temperature}
        r = client.messages.create(
            model=model,
            max_tokens=max_tokens,
            messages=[{"role": "user", "content": text}],
            extra_body=extra,
        )
        out = "".join(getattr(b, "text", "") for b in r.content if b.type == "text")
        u = r.usage
        return _Reply(out, int(u.input_tokens or 0), int(u.output_tokens or 0), None)

    return call


def _replay_caller(
    replay: str | Path | ReplyStore,
    *,
    model: str,
    prompt_hash: str,
    settings_hash: str,
) -> Callable[[Item, int, str], _Reply]:
    table: dict[tuple[str, int], _Reply] = {}
    if isinstance(replay, ReplyStore):
        for rec in replay.items(model=model, prompt_hash=prompt_hash, settings_hash=settings_hash):
            if rec.key.provider != "replay" and rec.text is not None:
                table[(rec.key.item_id, rec.key.sample_index)] = _Reply(
                    rec.text, rec.input_tokens, rec.output_tokens, rec.logprobs
                )
    else:
        with open(replay, encoding="utf-8") as fh:
            for line in fh:
                if not line.strip():
                    continue
                d = json.loads(line)
                k = (str(d["item_id"]), int(d.get("sample_index", 0)))
                table[k] = _Reply(
                    str(d["text"]),
                    int(d.get("input_tokens", 0)),
                    int(d.get("output_tokens", 0)),
                    d.get("logprobs"),
                )

    def call(item: Item, sample_index: int, text: str) -> _Reply:
        try:
            return table[(item.id, sample_index)]
        except KeyError:
            raise PermanentError(f"no recorded reply for item {item.id!r}") from None

    return call


# -- the runner --------------------------------------------------------------------------------
class _Stop(Exception):
    pass


@dataclass
class _Counters:
    lock: threading.Lock = field(default_factory=threading.Lock)
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    reused: int = 0

    def add(self, r: _Reply) -> None:
        with self.lock:
            self.calls += 1
            self.input_tokens += r.input_tokens
            self.output_tokens += r.output_tokens


def _validate(
    text: str, logprobs: Any, item: Item, source: str
) -> tuple[str, float, dict[str, float] | None] | str:
    """(answer, confidence, distribution) or the reason it failed: "malformed" or "no_logprob"."""
    from .parse import parse_decision

    parsed = parse_decision(text, item.options)
    if parsed is None:
        return "malformed"
    answer = str(parsed[0])
    if source != "logprob":
        return answer, float(parsed[1]), None
    dist = option_distribution(logprobs or [], text, answer, item.options)
    if dist is None:
        return "no_logprob"
    return answer, dist[answer], dist


def _ask(
    key: ReplyKey,
    item: Item,
    text: str,
    *,
    call: Callable[[Item, int, str], _Reply],
    store: ReplyStore,
    source: str,
    max_retries: int,
    transient_retries: int,
    backoff_base: float,
    backoff_max: float,
    stop: threading.Event,
    counters: _Counters,
) -> None:
    rec = store.get(key)
    if rec is not None and rec.status in FINAL_STATUSES:
        with counters.lock:
            counters.reused += 1
        return
    # replies already stored for this key (an interrupted run): count them, validate the last
    n_replies = sum(1 for a in store.attempts(key) if a["text"] is not None)
    if rec is not None and rec.status == "pending" and rec.text is not None:
        v = _validate(rec.text, rec.logprobs, item, source)
        if not isinstance(v, str):
            store.mark(key, "ok", answer=v[0], confidence=v[1])
            return
        if v == "no_logprob":
            store.mark(key, "failed", error="no log-probabilities for the answer token")
            return
    while True:
        if n_replies > max_retries:
            store.mark(key, "failed", error=f"malformed reply after {n_replies} attempts")
            return
        if stop.is_set():
            raise _Stop
        reply: _Reply | None = None
        for t in range(transient_retries + 1):
            try:
                reply = call(item, key.sample_index, text)
                break
            except Exception as exc:
                kind = _classify(exc)
                if kind is None:
                    raise
                msg = f"{type(exc).__name__}: {exc}"[:2000]
                if kind == "permanent":
                    store.put(key, status="permanent_error", error=msg)
                    return
                store.put(key, status="transient_error", error=msg)
                if t == transient_retries or stop.is_set():
                    return  # left as transient_error: a rerun asks again
                delay = min(backoff_max, backoff_base * 2**t) * (0.5 + random.random() / 2)
                if stop.wait(delay):  # interrupted: stop waiting, leave it for a rerun
                    return
        assert reply is not None
        counters.add(reply)
        # committed before it is parsed
        store.put(
            key,
            text=reply.text,
            input_tokens=reply.input_tokens,
            output_tokens=reply.output_tokens,
            logprobs=reply.logprobs,
            status="pending",
        )
        n_replies += 1
        v = _validate(reply.text, reply.logprobs, item, source)
        if not isinstance(v, str):
            store.mark(key, "ok", answer=v[0], confidence=v[1])
            return
        if v == "no_logprob":
            store.mark(key, "failed", error="no log-probabilities for the answer token")
            return


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
) -> ElicitationRun:
    """Ask ``model`` for an answer and a confidence on every item; store every reply first.

    ``items``: mappings with ``id``, ``question``, ``options`` (or ``(id, question, options)``
    tuples, or :class:`Item`). ``prompt``: a template with ``{question}`` and ``{options}``
    (default :data:`DEFAULT_PROMPT`); its sha256 is part of every key. ``max_retries``: extra
    attempts after a malformed reply (each stored), then the key is recorded ``failed``.
    ``transient_retries``/``backoff_base``/``backoff_max``: bounded exponential backoff (with
    jitter) for 429, 5xx, timeouts and connection errors; when exhausted the key is left
    ``transient_error`` and a rerun asks again. A permanent error (400/401/403/404...) is
    recorded against its item and the run goes on. ``samples``: replies per item (``k`` for
    ``source="consistency"``). ``temperature=None`` sends none (the provider's default); the
    anthropic 2.x SDK has no temperature argument, so a number is sent in the request body.
    ``replay``: for ``provider="replay"``, a JSONL file of
    ``{"item_id", "sample_index", "text", ...}`` or a store (default: ``store`` itself, reading the
    replies other providers stored for the same model, prompt and settings).

    Keys are read only from the environment (``api_key_env``, default ``OPENAI_API_KEY`` or
    ``ANTHROPIC_API_KEY``; with a ``base_url`` and no key, a placeholder is sent, as local
    servers expect). Interrupting (Ctrl-C, an exception) lets in-flight calls finish and store
    their replies; rerunning the same call resumes.
    """
    if provider not in PROVIDERS:
        raise ValueError(f"provider must be one of {PROVIDERS}, got {provider!r}")
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
    if source == "logprob" and provider == "anthropic":
        raise ValueError("source='logprob' needs log-probabilities; the Anthropic API has none")
    if samples < 1 or concurrency < 1 or max_retries < 0 or transient_retries < 0:
        raise ValueError("samples and concurrency must be >= 1, retries >= 0")
    if source == "consistency" and samples < 2:
        raise ValueError("source='consistency' needs samples >= 2")
    if source == "consistency" and not temperature:
        warnings.warn(
            "source='consistency' at temperature 0 samples the same reply k times",
            UserWarning,
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
            (k, it) for k, it in keys if (r := st.get(k)) is None or r.status not in FINAL_STATUSES
        ]
        counters = _Counters(reused=len(keys) - len(todo))
        if todo:
            call = _make_caller(
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
            _run_keys(
                todo,
                prompt=prompt,
                call=call,
                store=st,
                source=source,
                max_retries=0 if provider == "replay" else max_retries,
                transient_retries=transient_retries,
                backoff_base=backoff_base,
                backoff_max=backoff_max,
                concurrency=concurrency,
                counters=counters,
            )
        return _collect(its, keys, st, provider, model, source, prompt, ph, settings, sh, counters)
    finally:
        if own_store:
            st.close()


def _make_caller(
    provider: str,
    model: str,
    *,
    base_url: str | None,
    api_key_env: str | None,
    temperature: float | None,
    max_tokens: int,
    source: str,
    top_logprobs: int,
    timeout: float,
    replay: str | Path | ReplyStore,
    prompt_hash: str,
    settings_hash: str,
) -> Callable[[Item, int, str], _Reply]:
    if provider == "openai":
        return _openai_caller(
            model,
            base_url=base_url,
            api_key_env=api_key_env,
            temperature=temperature,
            max_tokens=max_tokens,
            logprobs=source == "logprob",
            top_logprobs=top_logprobs,
            timeout=timeout,
        )
    if provider == "anthropic":
        return _anthropic_caller(
            model,
            base_url=base_url,
            api_key_env=api_key_env,
            temperature=temperature,
            max_tokens=max_tokens,
            timeout=timeout,
        )
    return _replay_caller(replay, model=model, prompt_hash=prompt_hash, settings_hash=settings_hash)


def _run_keys(
    todo: list[tuple[ReplyKey, Item]],
    *,
    prompt: str,
    call: Callable[[Item, int, str], _Reply],
    store: ReplyStore,
    source: str,
    max_retries: int,
    transient_retries: int,
    backoff_base: float,
    backoff_max: float,
    concurrency: int,
    counters: _Counters,
) -> None:
    stop = threading.Event()
    ex = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="calibkit-elicit")
    futures: list[Future[None]] = []
    try:
        for k, it in todo:
            futures.append(
                ex.submit(
                    _ask,
                    k,
                    it,
                    render_prompt(prompt, it),
                    call=call,
                    store=store,
                    source=source,
                    max_retries=max_retries,
                    transient_retries=transient_retries,
                    backoff_base=backoff_base,
                    backoff_max=backoff_max,
                    stop=stop,
                    counters=counters,
                )
            )
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        for f in done:
            exc = f.exception()
            if exc is not None and not isinstance(exc, _Stop):
                raise exc
    finally:
        # on any exception (or Ctrl-C) stop starting new calls; in-flight calls store their replies
        stop.set()
        ex.shutdown(wait=True, cancel_futures=True)


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
    counters: _Counters,
) -> ElicitationRun:
    from .parse import parse_decision

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
        verbal = None
        for r in ok:
            p = parse_decision(r.text or "", it.options)
            if p is not None:
                verbal = float(p[1])
                break
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
                dist = option_distribution(r0.logprobs or [], r0.text, str(r0.answer), it.options)
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
