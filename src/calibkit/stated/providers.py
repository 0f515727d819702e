"""The providers the elicitation asks: the official OpenAI and Anthropic SDKs (any
OpenAI-compatible server through ``base_url``) and ``"replay"`` (recorded replies, no network).

Each provider is a function ``call(item, sample_index, prompt_text) -> Reply``; its errors are
sorted by :func:`classify` into the ones worth repeating and the ones that are not.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import InputError
from .._extras import require
from .._json import parse_json
from .items import Item
from .store import ReplyStore

__all__ = [
    "PermanentError",
    "Reply",
    "TransientError",
    "classify",
    "describe",
    "make_caller",
]

#: the longest a connection may take to open (seconds), whatever the request timeout: an
#: unreachable address fails in seconds, not after the full timeout
CONNECT_TIMEOUT = 10.0


class TransientError(Exception):
    """A call that may succeed if repeated (429, 5xx, timeout, connection error)."""


class PermanentError(Exception):
    """A call that will not succeed if repeated (400, 401, 403, 404, 422...)."""


@dataclass(frozen=True)
class Reply:
    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    logprobs: Any = None


Caller = Callable[["Item", int, str], Reply]


def classify(exc: BaseException) -> str | None:
    """ "connection" (the server could not be reached or did not answer in time), "transient",
    "permanent", or None (not an API error: re-raised)."""
    if isinstance(exc, TransientError):
        return "transient"
    if isinstance(exc, PermanentError):
        return "permanent"
    for modname in ("openai", "anthropic"):
        mod = sys.modules.get(modname)  # an SDK that is not imported raised nothing
        if mod is None:
            continue
        if isinstance(exc, mod.APIConnectionError):  # includes APITimeoutError
            return "connection"
        if isinstance(exc, mod.APIStatusError):
            code = int(exc.status_code)
            if code in (408, 409, 429) or code >= 500:
                return "transient"
            return "permanent"
    return None


def describe(exc: BaseException) -> str:
    """The error and its causes in one line ("APIConnectionError: Connection error. (ConnectError:
    [Errno 111] Connection refused)"), at most 2,000 characters."""
    text = f"{type(exc).__name__}: {exc}"
    cause = exc.__cause__ or exc.__context__
    seen = 0
    while cause is not None and seen < 3:
        text += f" ({type(cause).__name__}: {cause})"
        cause = cause.__cause__ or cause.__context__
        seen += 1
    return " ".join(text.split())[:2000]


def _api_key(api_key_env: str | None, default_env: str, base_url: str | None) -> str:
    env = api_key_env or default_env
    key = os.environ.get(env)
    if key:
        return key
    if base_url is not None and api_key_env is None:
        return "not-needed"  # local OpenAI-compatible servers usually take any key
    raise InputError(f"no API key: set the environment variable {env}")


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
) -> Caller:
    openai = require("openai", "provider 'openai'")
    client = openai.OpenAI(
        api_key=_api_key(api_key_env, "OPENAI_API_KEY", base_url),
        base_url=base_url,
        max_retries=0,  # retries are ours: bounded, with backoff, and every attempt stored
        timeout=openai.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT)),
    )

    def call(item: Item, sample_index: int, text: str) -> Reply:
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
        return Reply(
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
) -> Caller:
    anthropic = require("anthropic", "provider 'anthropic'")
    client = anthropic.Anthropic(
        api_key=_api_key(api_key_env, "ANTHROPIC_API_KEY", base_url),
        base_url=base_url,
        max_retries=0,
        timeout=anthropic.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT)),
    )

    def call(item: Item, sample_index: int, text: str) -> Reply:
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
        return Reply(out, int(u.input_tokens or 0), int(u.output_tokens or 0), None)

    return call


def _count(d: dict[str, Any], name: str, where: str) -> int:
    v = d.get(name, 0)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise InputError(f"{where}: {name} must be a whole number >= 0, got {v!r}.")
    return v


def read_replay_file(path: str | Path) -> dict[tuple[str, int], Reply]:
    """The replies of a JSON-lines replay file (``item_id``, ``text``, optional
    ``sample_index``, ``input_tokens``, ``output_tokens``, ``logprobs``), each line read by the
    bounded JSON reader; a line that cannot be used raises InputError naming it."""
    try:
        content = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"replay file '{path}' is not UTF-8 text ({exc}).") from None
    except OSError as exc:
        raise InputError(f"cannot read the replay file '{path}': {exc.strerror or exc}.") from None
    table: dict[tuple[str, int], Reply] = {}
    for number, line in enumerate(content.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"replay file '{path}' line {number}"
        d = parse_json(line, what=where, strict=False)
        if not isinstance(d, dict):
            raise InputError(f"{where} is not a JSON object; each line needs item_id and text.")
        missing = [k for k in ("item_id", "text") if k not in d]
        if missing:
            raise InputError(
                f"{where} has no {', '.join(missing)}; each line needs item_id and text."
            )
        if not isinstance(d["text"], str):
            raise InputError(f"{where}: text must be a string, got {type(d['text']).__name__}.")
        key = (str(d["item_id"]), _count(d, "sample_index", where))
        table[key] = Reply(
            d["text"],
            _count(d, "input_tokens", where),
            _count(d, "output_tokens", where),
            d.get("logprobs"),
        )
    return table


def _replay_caller(
    replay: str | Path | ReplyStore,
    *,
    model: str,
    prompt_hash: str,
    settings_hash: str,
) -> Caller:
    table: dict[tuple[str, int], Reply] = {}
    if isinstance(replay, ReplyStore):
        for rec in replay.items(model=model, prompt_hash=prompt_hash, settings_hash=settings_hash):
            if rec.key.provider != "replay" and rec.text is not None:
                table[(rec.key.item_id, rec.key.sample_index)] = Reply(
                    rec.text, rec.input_tokens, rec.output_tokens, rec.logprobs
                )
    else:
        table = read_replay_file(replay)

    def call(item: Item, sample_index: int, text: str) -> Reply:
        try:
            return table[(item.id, sample_index)]
        except KeyError:
            raise PermanentError(f"no recorded reply for item {item.id!r}") from None

    return call


def make_caller(
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
) -> Caller:
    """The ``call`` of a provider."""
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
