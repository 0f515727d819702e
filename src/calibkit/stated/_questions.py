"""Asking one prompt per item through the elicitation runner, for the graders that ask a model
(the judge, P(True)): the keys, the inputs and the run, shared so that each asks the one way.

A key's ``item_id`` is ``"<id>#<h>"``, ``h`` the first 12 hex digits of the sha256 of the
text sent: the prompt template's sha256 is the key's ``prompt_hash`` already, so this part makes
a changed question, reference answer or answer to judge a new key (asked anew), while an
unchanged one is found in the store and never asked twice.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import InputError
from ._runner import Counters, Plan, Reachability, Validator, run_keys
from .elicit import ProviderUnreachable, _lost_message, _unreachable_message, prompt_hash
from .items import Item
from .providers import make_caller
from .store import FINAL_STATUSES, ReplyKey, ReplyRecord, ReplyStore, StoreError, new_owner

__all__ = [
    "Asked",
    "Asking",
    "ask",
    "ask_texts",
    "key_id",
    "open_store",
    "read_rows",
    "render",
    "settings_hash",
]

_FIELD = re.compile(r"\{(\w+)\}")


def render(prompt: str, values: Mapping[str, str]) -> str:
    """Fill ``{name}`` for each name of ``values`` in one pass (a value that holds ``{answer}``
    is not filled again); other braces are kept.

    >>> render("Q: {question} A: {answer} {x}", {"question": "{answer}?", "answer": "4"})
    'Q: {answer}? A: 4 {x}'
    """
    return _FIELD.sub(lambda m: values.get(m.group(1), m.group(0)), prompt)


def key_id(item_id: str, text: str) -> str:
    """The ``item_id`` of a key: the item's id and a hash of the text sent.

    >>> key_id("q1", "Question: 2+2? Proposed answer: 4")
    'q1#25892611620e'
    """
    return f"{item_id}#{hashlib.sha256(text.encode('utf-8')).hexdigest()[:12]}"


def settings_hash(settings: Mapping[str, Any]) -> str:
    """The first 16 hex digits of the sha256 of the settings as sorted JSON (as elicit's)."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]


def read_rows(items: Iterable[Any], names: Sequence[str], *, where: str) -> list[dict[str, Any]]:
    """The rows to ask: mappings with ``names`` (or tuples in that order), ids unique."""
    out: list[dict[str, Any]] = []
    for n, it in enumerate(items):
        if isinstance(it, Mapping):
            missing = [k for k in names if k not in it]
            if missing:
                raise InputError(
                    f"{where}: item {n} has no {', '.join(missing)}; give mappings with "
                    f"{', '.join(names)}, or ({', '.join(names)}) tuples."
                )
            row = {k: it[k] for k in names}
        elif isinstance(it, tuple | list) and len(it) == len(names):
            row = dict(zip(names, it, strict=True))
        else:
            raise InputError(
                f"{where}: item {n} is a {type(it).__name__}, not an item; give mappings with "
                f"{', '.join(names)}, or ({', '.join(names)}) tuples."
            )
        if isinstance(row["id"], bool) or not isinstance(row["id"], str | int):
            raise InputError(f"{where}: item {n}: id must be a string or an integer.")
        row["id"] = str(row["id"])
        for k in names:
            if k in ("id", "gold"):
                continue
            if not isinstance(row[k], str):
                got = "None" if row[k] is None else type(row[k]).__name__
                raise InputError(
                    f"{where}: item {row['id']!r}: {k} must be a string, got {got}; leave out "
                    "the items without one."
                )
        out.append(row)
    seen: set[str] = set()
    for row in out:
        if row["id"] in seen:
            raise InputError(f"{where}: item ids must be unique; {row['id']!r} is given twice.")
        seen.add(row["id"])
    return out


@dataclass(frozen=True)
class Asking:
    """How a grader's questions are asked: the provider and the runner's settings."""

    provider: str
    model: str
    base_url: str | None
    api_key_env: str | None
    temperature: float | None
    max_tokens: int
    logprobs: bool
    top_logprobs: int
    timeout: float
    max_retries: int
    transient_retries: int
    backoff_base: float
    backoff_max: float
    concurrency: int
    lease_s: float
    replay: str | Path | ReplyStore | None

    @classmethod
    def of(cls, arguments: Mapping[str, Any], **given: Any) -> Asking:
        """The settings of this name among a caller's ``arguments`` (its ``locals()``), each
        overridden by ``given`` (a value the caller fixes or converts); a setting in neither is
        an error, never a default.

        >>> names = [f for f in Asking.__dataclass_fields__ if f not in ("logprobs", "model")]
        >>> how = Asking.of(dict.fromkeys(names, 1), model="m", logprobs=False)
        >>> how.model, how.logprobs, how.concurrency
        ('m', False, 1)
        """
        names = cls.__dataclass_fields__
        missing = [n for n in names if n not in given and n not in arguments]
        if missing:
            raise TypeError(f"Asking.of: no value for {', '.join(missing)}")
        return cls(**{n: given[n] if n in given else arguments[n] for n in names})


def ask(
    jobs: Sequence[tuple[ReplyKey, Item, str]],
    store: ReplyStore,
    how: Asking,
    *,
    source: str,
    validate: Validator,
) -> Counters:
    """Ask every job (key, item, text) without a final reply in ``store``; the run's counters.

    Raises :class:`~calibkit.stated.elicit.ProviderUnreachable` when the provider cannot be
    reached and :class:`~calibkit.stated.store.StoreError` (naming what was lost) when the store
    fails, as :func:`~calibkit.stated.elicit.elicit` does.
    """
    if how.concurrency < 1 or how.max_retries < 0 or how.transient_retries < 0:
        raise InputError("concurrency must be >= 1, retries >= 0")
    if not how.lease_s > 0:
        raise InputError(f"lease_s must be a positive number of seconds, got {how.lease_s!r}")
    todo = [
        job for job in jobs if (r := store.get(job[0])) is None or r.status not in FINAL_STATUSES
    ]
    counters = Counters(reused=len(jobs) - len(todo))
    if not todo:
        return counters
    key = todo[0][0]
    call = make_caller(
        how.provider,
        how.model,
        base_url=how.base_url,
        api_key_env=how.api_key_env,
        temperature=how.temperature,
        max_tokens=how.max_tokens,
        source="logprob" if how.logprobs else "verbalized",
        top_logprobs=how.top_logprobs,
        timeout=how.timeout,
        replay=store if how.replay is None else how.replay,
        prompt_hash=key.prompt_hash,
        settings_hash=key.settings_hash,
    )
    plan = Plan(
        call=call,
        store=store,
        source=source,
        max_retries=0 if how.provider == "replay" else how.max_retries,
        transient_retries=how.transient_retries,
        backoff_base=how.backoff_base,
        backoff_max=how.backoff_max,
        owner=new_owner(),
        lease_s=float(how.lease_s),
        validate=validate,
    )
    reach = Reachability()
    try:
        run_keys(todo, plan=plan, concurrency=how.concurrency, counters=counters, reach=reach)
    except StoreError as exc:
        if not counters.lost:
            raise
        raise StoreError(_lost_message(counters, exc)) from None
    if reach.reason is not None:
        raise ProviderUnreachable(
            _unreachable_message(how.provider, how.base_url, reach, len(jobs))
        )
    return counters


def open_store(store: ReplyStore | str | Path) -> tuple[ReplyStore, bool]:
    """The store, and whether it was opened here (so is closed here)."""
    if isinstance(store, ReplyStore):
        return store, False
    return ReplyStore(store), True


@dataclass(frozen=True)
class Asked:
    """What :func:`ask_texts` gave: one stored record per key, in order (None where the run
    stopped before asking it), the run's counters, and the prompt's and the settings' hashes."""

    records: list[ReplyRecord | None]
    counters: Counters
    prompt_hash: str
    settings_hash: str

    def run_fields(
        self,
        *,
        provider: str,
        model: str,
        source: str,
        prompt: str,
        settings: dict[str, Any],
        results: list[Any],
    ) -> dict[str, Any]:
        """The fields of an :class:`~calibkit.stated.elicit.ElicitationRun` of these replies,
        with ``results`` (one :class:`~calibkit.stated.elicit.ItemResult` per item)."""
        return {
            "provider": provider,
            "model": model,
            "source": source,
            "prompt": prompt,
            "prompt_hash": self.prompt_hash,
            "settings": settings,
            "settings_hash": self.settings_hash,
            "results": results,
            "replies": [r for r in self.records if r is not None],
            "input_tokens": self.counters.input_tokens,
            "output_tokens": self.counters.output_tokens,
            "calls": self.counters.calls,
            "reused": self.counters.reused,
            "status_counts": dict(Counter(r.status for r in results)),
        }


def ask_texts(
    texts: Sequence[tuple[str, str, str]],
    *,
    prompt: str,
    settings: Mapping[str, Any],
    store: ReplyStore | str | Path,
    how: Asking,
    source: str,
    validate: Validator,
    samples: int = 1,
) -> Asked:
    """Ask each ``(item id, question, text sent)`` ``samples`` times (keys with sample index 0
    to samples - 1, the item id made by :func:`key_id`), storing every reply first; the
    records in key order (item by item, each item's samples together)."""
    ph, sh = prompt_hash(prompt), settings_hash(settings)
    jobs: list[tuple[ReplyKey, Item, str]] = []
    for item_id, question, text in texts:
        kid = key_id(item_id, text)
        item = Item(kid, question, ())
        jobs += [
            (ReplyKey(how.provider, how.model, ph, kid, s, sh), item, text) for s in range(samples)
        ]
    st, own = open_store(store)
    try:
        st.put_prompt(ph, prompt)
        counters = ask(jobs, st, how, source=source, validate=validate)
        records = [st.get(key) for key, _, _ in jobs]
    finally:
        if own:
            st.close()
    return Asked(records, counters, ph, sh)
