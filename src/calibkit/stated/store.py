"""A local SQLite store of language-model replies: nothing paid for is lost.

Every reply is written and committed *before* it is parsed, keyed by
``(provider, model, prompt_hash, item_id, sample_index, settings_hash)``. A second run with the same
key finds the reply and does not ask again. The database uses WAL journaling, so a crash (Ctrl-C, a
killed process) leaves at worst the transaction in progress uncommitted; reopening is safe.

Two tables:

- ``replies``: one row per key, its latest raw text, token counts and log-probabilities (JSON), the
  parsed answer and confidence once parsed, ``status`` and ``error``, the number of ``attempts`` and
  timestamps. Status is one of ``pending`` (a reply is stored but not yet validated), ``ok``,
  ``failed`` (malformed after every retry), ``permanent_error`` (400/401/403/404...) or
  ``transient_error`` (retries for 429/5xx/timeouts exhausted; a rerun asks again).
- ``attempts``: every call's raw reply or error (one row per attempt), so malformed replies and
  the tokens they cost are kept too. Token totals are summed over this table.
- ``leases``: which run is asking a key now (an owner id and an expiry). Runs sharing a store
  claim each key in one transaction before asking it (:meth:`ReplyStore.claim`), so two runs
  never pay for the same call; a lease is renewed while its request is in flight, released when
  the key is done, and taken over by another run once it has expired (or at once when its owner
  was a process of this machine that no longer runs).

A file that is not such a store (not SQLite, damaged, another program's database) and every
SQLite failure (a full disk, a read-only file, a lock held too long) raise
:class:`StoreError`, an :class:`~calibkit.InputError` naming the file and what to do.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from .._errors import InputError
from .._files import _pid_alive
from .._json import parse_json

__all__ = ["FINAL_STATUSES", "ReplyKey", "ReplyRecord", "ReplyStore", "StoreError", "new_owner"]

#: statuses after which a key is never asked again
FINAL_STATUSES = frozenset({"ok", "failed", "permanent_error"})
_STATUSES = FINAL_STATUSES | {"pending", "transient_error"}


class ReplyKey(NamedTuple):
    provider: str
    model: str
    prompt_hash: str
    item_id: str
    sample_index: int
    settings_hash: str


@dataclass(frozen=True)
class ReplyRecord:
    key: ReplyKey
    text: str | None
    input_tokens: int
    output_tokens: int
    logprobs: Any
    status: str
    error: str | None
    attempts: int
    answer: str | None
    confidence: float | None
    created_at: float
    updated_at: float


_SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    provider TEXT NOT NULL, model TEXT NOT NULL, prompt_hash TEXT NOT NULL,
    item_id TEXT NOT NULL, sample_index INTEGER NOT NULL, settings_hash TEXT NOT NULL,
    text TEXT, input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0,
    logprobs TEXT, status TEXT NOT NULL, error TEXT, attempts INTEGER NOT NULL DEFAULT 0,
    answer TEXT, confidence REAL,
    created_at REAL NOT NULL, updated_at REAL NOT NULL,
    PRIMARY KEY (provider, model, prompt_hash, item_id, sample_index, settings_hash)
);
CREATE TABLE IF NOT EXISTS attempts (
    provider TEXT NOT NULL, model TEXT NOT NULL, prompt_hash TEXT NOT NULL,
    item_id TEXT NOT NULL, sample_index INTEGER NOT NULL, settings_hash TEXT NOT NULL,
    attempt INTEGER NOT NULL, text TEXT, input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0, logprobs TEXT, error TEXT, created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS prompts (
    prompt_hash TEXT PRIMARY KEY, prompt TEXT NOT NULL, created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS leases (
    provider TEXT NOT NULL, model TEXT NOT NULL, prompt_hash TEXT NOT NULL,
    item_id TEXT NOT NULL, sample_index INTEGER NOT NULL, settings_hash TEXT NOT NULL,
    owner TEXT NOT NULL, expires_at REAL NOT NULL,
    PRIMARY KEY (provider, model, prompt_hash, item_id, sample_index, settings_hash)
);
"""

_KEY_COLS = "provider, model, prompt_hash, item_id, sample_index, settings_hash"
_KEY_WHERE = " AND ".join(f"{c} = ?" for c in _KEY_COLS.split(", "))


_KEY = _KEY_COLS.split(", ")
#: the columns of each table calibkit reads (a store may hold more)
_COLUMNS = {
    "replies": {*_KEY, "text", "input_tokens", "output_tokens", "logprobs", "status", "error"}
    | {"attempts", "answer", "confidence", "created_at", "updated_at"},
    "attempts": {*_KEY, "attempt", "text", "input_tokens", "output_tokens", "logprobs", "error"}
    | {"created_at"},
    "prompts": {"prompt_hash", "prompt", "created_at"},
    "leases": {*_KEY, "owner", "expires_at"},
}


class StoreError(InputError):
    """A reply store that cannot be used: not a store, damaged, the disk full, locked..."""


def _key(key: ReplyKey | tuple[Any, ...]) -> ReplyKey:
    k = ReplyKey(*key)
    return k._replace(item_id=str(k.item_id), sample_index=int(k.sample_index))


def new_owner() -> str:
    """A lease owner id: this machine, this process and a random part (one per run)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(6)}"


def _owner_gone(owner: str) -> bool:
    """Whether a lease's owner was a process of this machine that no longer runs."""
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    return host == socket.gethostname() and pid.isdigit() and not _pid_alive(int(pid))


def _explain(path: str, exc: sqlite3.Error, doing: str, timeout: float) -> str:
    """The message of a StoreError: the file, what went wrong, and what to do."""
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    what = f"reply store '{path}'"
    if code == sqlite3.SQLITE_FULL:
        return (
            f"{what}: the disk is full ({exc}) while {doing}: nothing stored before was lost, "
            "the replies stored so far are kept; free space and rerun."
        )
    if code == sqlite3.SQLITE_NOTADB:
        return (
            f"'{path}' is not a calibkit reply store (not an SQLite database: {exc}); pass the "
            "store that calibkit stated run wrote, or a new file name."
        )
    if code == sqlite3.SQLITE_CORRUPT:
        return (
            f"{what} is damaged: {exc} (truncated or overwritten?); restore it from a copy, "
            "or pass a new file name (the damaged file is left as it is)."
        )
    if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return (
            f"{what} stayed locked by another process for more than {timeout:g} s while "
            f"{doing} ({exc}); rerun when it is done."
        )
    if code in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM):
        return (
            f"{what} cannot be opened for writing ({exc}) while {doing}; check the permissions "
            "of the file and its folder."
        )
    if code == sqlite3.SQLITE_IOERR:
        return f"{what}: the disk failed ({exc}) while {doing}; check the disk and rerun."
    return f"{what}: {exc} while {doing}."


class ReplyStore:
    """SQLite store of replies (stdlib ``sqlite3``, WAL). Thread-safe; use as a context manager.

    >>> s = ReplyStore(":memory:")
    >>> k = ReplyKey("openai", "m", "ph", "q1", 0, "sh")
    >>> s.put(k, text='{"answer": "A", "confidence": 0.9}', input_tokens=10, output_tokens=5)
    >>> s.get(k).status, s.totals()
    ('pending', {'input_tokens': 10, 'output_tokens': 5, 'calls': 1})
    >>> s.close()
    """

    def __init__(self, path: str | Path, *, timeout: float = 30.0) -> None:
        self.path = str(path)
        self._timeout = timeout
        self._lock = threading.RLock()
        with self._guard("opening it"):
            self._conn = sqlite3.connect(
                self.path, timeout=timeout, check_same_thread=False, isolation_level=None
            )
        try:
            with self._guard("opening it"):
                self._open_when_free(time.monotonic() + timeout)
        except BaseException:
            self._conn.close()
            raise

    def _open_when_free(self, deadline: float) -> None:
        """Check the schema, switch to WAL and create the tables, waiting out other openers.

        SQLite answers "database is locked" at once, without its busy timeout, when two
        processes switch a new file to WAL together, so the wait is done here.
        """
        pause = 0.005
        while True:
            try:
                self._check_schema()  # before anything changes another program's database
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=NORMAL")
                self._conn.executescript(_SCHEMA)
                return
            except sqlite3.OperationalError as exc:
                code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
                busy = code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
                if not busy or time.monotonic() + pause > deadline:
                    raise
                time.sleep(pause)
                pause = min(2 * pause, 0.25)

    @contextlib.contextmanager
    def _guard(self, doing: str) -> Iterator[None]:
        """SQLite's errors as a StoreError naming the file and what to do."""
        try:
            yield
        except sqlite3.Error as exc:
            raise StoreError(_explain(self.path, exc, doing, self._timeout)) from None

    @contextlib.contextmanager
    def _transaction(self, doing: str) -> Iterator[sqlite3.Cursor]:
        """One write transaction (BEGIN IMMEDIATE ... COMMIT), rolled back on any failure."""
        with self._lock, self._guard(doing):
            cur = self._conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                yield cur
                cur.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:  # SQLite may have rolled back already
                    with contextlib.suppress(sqlite3.Error):
                        cur.execute("ROLLBACK")
                raise

    def _check_schema(self) -> None:
        """Refuse another program's database or a table without the columns calibkit reads."""
        rows = self._conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        ).fetchall()
        tables = {str(r[0]) for r in rows}
        if tables and "replies" not in tables:
            raise StoreError(
                f"'{self.path}' is not a calibkit reply store: it is an SQLite database with "
                f"the tables {', '.join(sorted(tables))} and no 'replies'; pass the store that "
                "calibkit stated run wrote, or a new file name."
            )
        for table, wanted in _COLUMNS.items():
            if table not in tables:
                continue
            have = {str(r[1]) for r in self._conn.execute(f"PRAGMA table_info({table})")}
            missing = sorted(wanted - have)
            if missing:
                raise StoreError(
                    f"'{self.path}' is not a calibkit reply store: its table '{table}' has no "
                    f"column {', '.join(missing)}; pass the store that calibkit stated run "
                    "wrote, or a new file name."
                )

    # -- lifecycle ------------------------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> ReplyStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing --------------------------------------------------------------------------------
    def put(
        self,
        key: ReplyKey | tuple[Any, ...],
        *,
        text: str | None = None,
        input_tokens: int = 0,
        output_tokens: int = 0,
        logprobs: Any = None,
        status: str = "pending",
        error: str | None = None,
        attempt: int | None = None,
    ) -> None:
        """Record one call's outcome (a reply or an error) and commit before returning.

        Appends a row to ``attempts`` and upserts the key's row in ``replies`` (its ``attempts``
        counter becomes ``attempt`` if given, else one more than before). The parsed answer of
        an earlier attempt is cleared.
        """
        if status not in _STATUSES:
            raise ValueError(f"status must be one of {sorted(_STATUSES)}, got {status!r}")
        k = _key(key)
        now = time.time()
        lp = None if logprobs is None else json.dumps(logprobs)
        doing = "storing a reply" if text is not None else "storing an error"
        with self._transaction(doing) as cur:
            row = cur.execute(
                f"SELECT attempts, created_at FROM replies WHERE {_KEY_WHERE}", k
            ).fetchone()
            n = attempt if attempt is not None else (row[0] + 1 if row else 1)
            created = row[1] if row else now
            cur.execute(
                f"INSERT INTO attempts ({_KEY_COLS}, attempt, text, input_tokens, "
                "output_tokens, logprobs, error, created_at) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (*k, n, text, int(input_tokens), int(output_tokens), lp, error, now),
            )
            cur.execute(
                f"INSERT OR REPLACE INTO replies ({_KEY_COLS}, text, input_tokens, "
                "output_tokens, logprobs, status, error, attempts, answer, confidence, "
                "created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    *k,
                    text,
                    int(input_tokens),
                    int(output_tokens),
                    lp,
                    status,
                    error,
                    n,
                    None,
                    None,
                    created,
                    now,
                ),
            )

    def mark(
        self,
        key: ReplyKey | tuple[Any, ...],
        status: str,
        *,
        answer: str | None = None,
        confidence: float | None = None,
        error: str | None = None,
    ) -> None:
        """Set the status (and the parsed answer and confidence) of a stored key."""
        if status not in _STATUSES:
            raise ValueError(f"status must be one of {sorted(_STATUSES)}, got {status!r}")
        k = _key(key)
        with self._lock, self._guard("recording a parsed reply"):
            cur = self._conn.execute(
                "UPDATE replies SET status = ?, answer = ?, confidence = ?, error = ?, "
                f"updated_at = ? WHERE {_KEY_WHERE}",
                (status, answer, confidence, error, time.time(), *k),
            )
            if cur.rowcount != 1:
                raise KeyError(f"no stored reply for {k}")

    def put_prompt(self, prompt_hash: str, prompt: str) -> None:
        """Keep the text of a prompt by its hash (the prompt is part of the measurement)."""
        with self._lock, self._guard("storing the prompt"):
            self._conn.execute(
                "INSERT OR IGNORE INTO prompts VALUES (?, ?, ?)", (prompt_hash, prompt, time.time())
            )

    # -- leases ---------------------------------------------------------------------------------
    def claim(self, key: ReplyKey | tuple[Any, ...], owner: str, lease_s: float) -> str:
        """Claim a key before asking it, in one transaction: "final" when its reply is already
        final, "busy" when another live run holds an unexpired lease on it, else "claimed" (a
        lease for ``owner`` until ``lease_s`` seconds from now).

        >>> s = ReplyStore(":memory:")
        >>> k = ReplyKey("openai", "m", "ph", "q1", 0, "sh")
        >>> s.claim(k, "run-a", 30.0), s.claim(k, "run-b", 30.0), s.claim(k, "run-a", 30.0)
        ('claimed', 'busy', 'claimed')
        >>> s.release(k, "run-a"); s.claim(k, "run-b", 30.0)
        'claimed'
        >>> s.close()
        """
        k = _key(key)
        now = time.time()
        with self._transaction("claiming an item") as cur:
            row = cur.execute(f"SELECT status FROM replies WHERE {_KEY_WHERE}", k).fetchone()
            if row is not None and row[0] in FINAL_STATUSES:
                return "final"
            lease = cur.execute(
                f"SELECT owner, expires_at FROM leases WHERE {_KEY_WHERE}", k
            ).fetchone()
            if lease is not None and lease[0] != owner and lease[1] > now:
                if not _owner_gone(str(lease[0])):
                    return "busy"
            cur.execute(
                f"INSERT OR REPLACE INTO leases ({_KEY_COLS}, owner, expires_at) "
                "VALUES (?,?,?,?,?,?,?,?)",
                (*k, owner, now + lease_s),
            )
            return "claimed"

    def renew(self, owner: str, lease_s: float) -> int:
        """Extend every lease ``owner`` holds to ``lease_s`` seconds from now; how many."""
        with self._lock, self._guard("renewing leases"):
            cur = self._conn.execute(
                "UPDATE leases SET expires_at = ? WHERE owner = ?", (time.time() + lease_s, owner)
            )
            return int(cur.rowcount)

    def release(self, key: ReplyKey | tuple[Any, ...], owner: str) -> None:
        """Give up ``owner``'s lease on a key (nothing when another run has taken it over)."""
        with self._lock, self._guard("releasing an item"):
            self._conn.execute(
                f"DELETE FROM leases WHERE {_KEY_WHERE} AND owner = ?", (*_key(key), owner)
            )

    def prompt(self, prompt_hash: str) -> str | None:
        with self._lock, self._guard("reading a prompt"):
            row = self._conn.execute(
                "SELECT prompt FROM prompts WHERE prompt_hash = ?", (prompt_hash,)
            ).fetchone()
        return None if row is None else str(row[0])

    # -- reading --------------------------------------------------------------------------------
    def _logprobs(self, text: str | None, item_id: str) -> Any:
        if text is None:
            return None
        where = f"reply store '{self.path}': the log-probabilities stored for item {item_id!r}"
        return parse_json(text, what=where, strict=False)

    def _record(self, row: tuple[Any, ...]) -> ReplyRecord:
        return ReplyRecord(
            key=ReplyKey(row[0], row[1], row[2], row[3], int(row[4]), row[5]),
            text=row[6],
            input_tokens=int(row[7]),
            output_tokens=int(row[8]),
            logprobs=self._logprobs(row[9], str(row[3])),
            status=row[10],
            error=row[11],
            attempts=int(row[12]),
            answer=row[13],
            confidence=row[14],
            created_at=float(row[15]),
            updated_at=float(row[16]),
        )

    _SELECT = (
        f"SELECT {_KEY_COLS}, text, input_tokens, output_tokens, logprobs, status, error, "
        "attempts, answer, confidence, created_at, updated_at FROM replies"
    )

    def get(self, key: ReplyKey | tuple[Any, ...]) -> ReplyRecord | None:
        """The stored record of a key, or None."""
        with self._lock, self._guard("reading a reply"):
            row = self._conn.execute(f"{self._SELECT} WHERE {_KEY_WHERE}", _key(key)).fetchone()
        return None if row is None else self._record(row)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, tuple) and self.get(key) is not None

    def items(self, **where: Any) -> Iterator[ReplyRecord]:
        """Stored records, filtered by equality on any of the key columns or ``status``.

        >>> s = ReplyStore(":memory:")
        >>> list(s.items(model="m"))
        []
        """
        allowed = set(_KEY_COLS.split(", ")) | {"status"}
        bad = set(where) - allowed
        if bad:
            raise ValueError(f"cannot filter on {sorted(bad)}; use {sorted(allowed)}")
        clause = " AND ".join(f"{c} = ?" for c in where)
        sql = self._SELECT + (f" WHERE {clause}" if clause else "")
        sql += f" ORDER BY {_KEY_COLS}"
        with self._lock, self._guard("reading replies"):
            rows = self._conn.execute(sql, tuple(where.values())).fetchall()
        return iter([self._record(r) for r in rows])

    def attempts(self, key: ReplyKey | tuple[Any, ...]) -> list[dict[str, Any]]:
        """Every stored attempt of a key, in order (raw text or error, tokens)."""
        k = _key(key)
        with self._lock, self._guard("reading attempts"):
            rows = self._conn.execute(
                "SELECT attempt, text, input_tokens, output_tokens, logprobs, error, created_at "
                f"FROM attempts WHERE {_KEY_WHERE} ORDER BY rowid",
                k,
            ).fetchall()
        names = ("attempt", "text", "input_tokens", "output_tokens", "logprobs", "error", "time")
        out = [dict(zip(names, r, strict=True)) for r in rows]
        for d in out:
            d["logprobs"] = self._logprobs(d["logprobs"], k.item_id)
        return out

    def totals(self, **where: Any) -> dict[str, int]:
        """Tokens summed over every stored attempt (malformed replies cost tokens too)."""
        allowed = set(_KEY_COLS.split(", "))
        bad = set(where) - allowed
        if bad:
            raise ValueError(f"cannot filter on {sorted(bad)}; use {sorted(allowed)}")
        clause = " AND ".join(f"{c} = ?" for c in where)
        sql = (
            "SELECT COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0), "
            "COUNT(*) FROM attempts" + (f" WHERE {clause}" if clause else "")
        )
        with self._lock, self._guard("reading token totals"):
            row = self._conn.execute(sql, tuple(where.values())).fetchone()
        return {"input_tokens": int(row[0]), "output_tokens": int(row[1]), "calls": int(row[2])}

    def __len__(self) -> int:
        with self._lock, self._guard("counting replies"):
            return int(self._conn.execute("SELECT COUNT(*) FROM replies").fetchone()[0])
