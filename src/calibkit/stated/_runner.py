"""The elicitation loop: claim each key in the store, ask, store the reply, then parse it.

Every key is claimed in the store before it is asked (a lease: owner id and expiry, in the same
SQLite transaction that checks whether the key is already answered), so runs sharing a store
share the work. A key leased by another live run is skipped and come back to once the first
pass is done, until the other run has answered it or its lease has expired. Leases are renewed
by a heartbeat while requests are in flight and released when a key is done, whatever the
outcome.

A reply that cannot be parsed is recorded as "unparsed: <reason>" and the run goes on: a reply
the parser reads nothing from is asked again up to ``max_retries`` times, and one the parser
fails on (a bug) is recorded at once; the reply itself is kept in the store either way.

Connection failures stop the run quickly (see :class:`Reachability`), leaving every key
resumable.

What a reply must hold is the plan's ``validate`` (default: an answer among the item's options
and a confidence, :func:`validate_decision`); the judge and P(True) pass their own, so every
kind of question goes through this one loop.
"""

from __future__ import annotations

import contextlib
import math
import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from .items import Item
from .logprobs import option_distribution
from .parse import decision_reason
from .providers import Caller, Reply, classify, describe
from .store import FINAL_STATUSES, ReplyKey, ReplyStore, StoreError

__all__ = [
    "Counters",
    "Plan",
    "Reachability",
    "Unparsed",
    "Validated",
    "Validator",
    "run_keys",
    "validate_decision",
]

#: connection failures in a row, before any reply has come, after which a run stops
STARTUP_FAILURES = 3


class _Stop(Exception):
    pass


@dataclass
class Counters:
    lock: threading.Lock = field(default_factory=threading.Lock)
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    reused: int = 0
    lost: list[tuple[ReplyKey, int]] = field(default_factory=list)  # replies not stored

    def add(self, r: Reply) -> None:
        with self.lock:
            self.calls += 1
            self.input_tokens += r.input_tokens
            self.output_tokens += r.output_tokens

    def reuse(self) -> None:
        with self.lock:
            self.reused += 1


class Reachability:
    """Whether the provider can be reached. A run stops (every key left resumable) when

    * no reply has come yet and :data:`STARTUP_FAILURES` connections in a row have failed (an
      address nothing listens on fails in a second, not after every key's backoff), or
    * a key has used up its retries on connection failures and nothing has come from any
      request since that key's first failure (the provider stopped answering mid-run).

    Any answer of the provider, an HTTP error included, shows it can be reached.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.replies = 0
        self.in_a_row = 0
        self.reason: str | None = None
        self._last_reply = -math.inf

    def replied(self) -> None:
        with self._lock:
            self.replies += 1
        self.answered()

    def answered(self) -> None:
        """The provider answered (a reply, or an HTTP error such as 429): it can be reached."""
        with self._lock:
            self.in_a_row = 0
            self._last_reply = time.monotonic()

    def failed(self, message: str, since: float, exhausted: bool) -> bool:
        """Count a connection failure; True when the run must stop."""
        with self._lock:
            self.in_a_row += 1
            startup = self.replies == 0 and self.in_a_row >= STARTUP_FAILURES
            if self.reason is None and (startup or (exhausted and self._last_reply < since)):
                self.reason = message
            return self.reason is not None


@dataclass(frozen=True)
class Unparsed:
    """Why a reply gives nothing: recorded as the key's error "unparsed: <reason>"."""

    reason: str
    final: bool  # True: asking again would not help (or the parser itself failed)


#: what a valid reply gives: the answer, the confidence (None: none) and a distribution
Validated = tuple[str, float | None, dict[str, float] | None]
#: ``validate(text, logprobs, item, source)``: what a reply gives, or why it gives nothing
Validator = Callable[[str, Any, Item, str], "Validated | Unparsed"]


@dataclass(frozen=True)
class Plan:
    """What every key of one run is asked with."""

    call: Caller
    store: ReplyStore
    source: str
    max_retries: int
    transient_retries: int
    backoff_base: float
    backoff_max: float
    owner: str
    lease_s: float
    validate: Validator | None = None  # None: validate_decision

    def check(self, text: str, logprobs: Any, item: Item) -> Validated | Unparsed:
        """What a reply gives, by the plan's validator; a validator that fails is a parser bug:
        the reply stays stored and the key is recorded unparsed at once."""
        if self.validate is None:
            return validate_decision(text, logprobs, item, self.source)
        try:
            return self.validate(text, logprobs, item, self.source)
        except Exception as exc:
            reason = f"the parser failed on this reply ({describe(exc)[:300]})"
            return Unparsed(reason, final=True)


def validate_decision(text: str, logprobs: Any, item: Item, source: str) -> Validated | Unparsed:
    """(answer, confidence, distribution) of an elicitation reply, or why it gives none."""
    try:
        r = decision_reason(text, item.options)
        if isinstance(r, str):
            return Unparsed(r, final=False)
        answer = str(r[0])
        if source != "logprob":
            return answer, float(r[1]), None
        dist = option_distribution(logprobs or [], text, answer, item.options)  # type: ignore[arg-type]
    except Exception as exc:  # a parser bug must never wedge a run: the reply stays stored
        return Unparsed(f"the parser failed on this reply ({describe(exc)[:300]})", final=True)
    if dist is None:
        return Unparsed("no log-probabilities for the answer token", final=True)
    return answer, dist[answer], dist


def _settle(store: ReplyStore, key: ReplyKey, v: object) -> str | None:
    """Record a validated reply: None when it is done, else the reason to ask again."""
    if isinstance(v, Unparsed):
        if v.final:
            store.mark(key, "failed", error=f"unparsed: {v.reason}")
            return None
        return v.reason
    assert isinstance(v, tuple)
    store.mark(key, "ok", answer=v[0], confidence=v[1])
    return None


def _answer(
    key: ReplyKey,
    item: Item,
    text: str,
    plan: Plan,
    stop: threading.Event,
    counters: Counters,
    reach: Reachability,
) -> None:
    store = plan.store
    rec = store.get(key)
    if rec is not None and rec.status in FINAL_STATUSES:
        counters.reuse()
        return
    # replies already stored for this key (an interrupted run): count them, validate the last
    n_replies = sum(1 for a in store.attempts(key) if a["text"] is not None)
    reason: str | None = "malformed"
    if rec is not None and rec.status == "pending" and rec.text is not None:
        reason = _settle(store, key, plan.check(rec.text, rec.logprobs, item))
        if reason is None:
            return
    while True:
        if n_replies > plan.max_retries:
            store.mark(
                key,
                "failed",
                error=f"unparsed: {reason} (malformed reply after {n_replies} attempts)",
            )
            return
        if stop.is_set():
            raise _Stop
        reply = _call(key, item, text, plan, stop, reach)
        if reply is None:
            return
        reach.replied()
        counters.add(reply)
        try:  # committed before it is parsed
            store.put(
                key,
                text=reply.text,
                input_tokens=reply.input_tokens,
                output_tokens=reply.output_tokens,
                logprobs=reply.logprobs,
                status="pending",
            )
        except StoreError:
            with counters.lock:
                counters.lost.append((key, reply.output_tokens))
            raise
        n_replies += 1
        reason = _settle(store, key, plan.check(reply.text, reply.logprobs, item))
        if reason is None:
            return


def _call(
    key: ReplyKey,
    item: Item,
    text: str,
    plan: Plan,
    stop: threading.Event,
    reach: Reachability,
) -> Reply | None:
    """One reply, with bounded retries of transient errors; None when there is none to store
    (each error is stored against the key)."""
    store = plan.store
    first_failure: float | None = None
    for t in range(plan.transient_retries + 1):
        try:
            return plan.call(item, key.sample_index, text)
        except Exception as exc:
            kind = classify(exc)
            if kind is None:
                raise
            msg = describe(exc)
            if kind != "connection":
                reach.answered()
            if kind == "permanent":
                store.put(key, status="permanent_error", error=msg)
                return None
            store.put(key, status="transient_error", error=msg)
            if kind == "connection":
                first_failure = time.monotonic() if first_failure is None else first_failure
                if reach.failed(msg, first_failure, exhausted=t == plan.transient_retries):
                    stop.set()
                    return None
            if t == plan.transient_retries or stop.is_set():
                return None  # left as transient_error: a rerun asks again
            delay = min(plan.backoff_max, plan.backoff_base * 2**t) * (0.5 + random.random() / 2)
            if stop.wait(delay):  # interrupted: stop waiting, leave it for a rerun
                return None
    return None  # pragma: no cover - the loop returns


def _ask(
    key: ReplyKey,
    item: Item,
    text: str,
    plan: Plan,
    stop: threading.Event,
    counters: Counters,
    reach: Reachability,
) -> bool:
    """Claim a key and ask it; False when another live run holds it (come back later)."""
    claim = plan.store.claim(key, plan.owner, plan.lease_s)
    if claim == "final":
        counters.reuse()
        return True
    if claim == "busy":
        return False
    try:
        _answer(key, item, text, plan, stop, counters, reach)
    except BaseException as exc:
        if not isinstance(exc, _Stop):
            stop.set()  # at once: no other worker starts a call (a full disk would lose it)
        with contextlib.suppress(Exception):  # the store may be what failed
            plan.store.release(key, plan.owner)
        raise
    plan.store.release(key, plan.owner)
    return True


def _heartbeat(store: ReplyStore, owner: str, lease_s: float, done: threading.Event) -> None:
    """Renew this run's leases every third of their duration until ``done``."""
    while not done.wait(lease_s / 3):
        # a renewal that fails only lets another run take a key over once its lease expires
        with contextlib.suppress(StoreError):
            store.renew(owner, lease_s)


def _raise_failure(futures: Sequence[Future[bool]]) -> None:
    """Raise the first exception of ``futures`` (in order) that is not a :class:`_Stop`."""
    for f in futures:
        if not f.cancelled():
            exc = f.exception()
            if exc is not None and not isinstance(exc, _Stop):
                raise exc


def run_keys(
    todo: Sequence[tuple[ReplyKey, Item, str]],
    *,
    plan: Plan,
    concurrency: int,
    counters: Counters,
    reach: Reachability,
) -> None:
    """Ask every key of ``todo`` (key, item, prompt text) with ``concurrency`` threads."""
    stop = threading.Event()
    beat_done = threading.Event()
    beat = threading.Thread(
        target=_heartbeat,
        args=(plan.store, plan.owner, plan.lease_s, beat_done),
        name="calibkit-lease",
        daemon=True,
    )
    beat.start()
    poll = min(1.0, plan.lease_s / 4)
    ex = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="calibkit-elicit")
    try:
        pending = list(todo)
        while pending:
            futures: list[tuple[tuple[ReplyKey, Item, str], Future[bool]]] = [
                (job, ex.submit(_ask, *job, plan, stop, counters, reach)) for job in pending
            ]
            wait([f for _, f in futures], return_when=FIRST_EXCEPTION)
            if stop.is_set():
                # a worker that failed sets stop before its own future is done, and the others
                # then stop with _Stop: wait for every started call (each stores its reply), then
                # raise the failure, never a _Stop alone, so that no failure goes unreported
                for _, f in futures:
                    f.cancel()  # the calls not started yet
                wait([f for _, f in futures])
                _raise_failure([f for _, f in futures])
                return
            # keys another live run is asking: come back once it has answered or its lease ended
            pending = [job for job, f in futures if not f.result()]
            if pending and stop.wait(poll):
                return
    finally:
        # on any exception (or Ctrl-C) stop starting new calls; in-flight calls store their replies
        stop.set()
        ex.shutdown(wait=True, cancel_futures=True)
        beat_done.set()
        beat.join()
