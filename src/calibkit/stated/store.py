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
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

__all__ = ["FINAL_STATUSES", "ReplyKey", "ReplyRecord", "ReplyStore"]

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
"""

_KEY_COLS = "provider, model, prompt_hash, item_id, sample_index, settings_hash"
_KEY_WHERE = " AND ".join(f"{c} = ?" for c in _KEY_COLS.split(", "))


def _key(key: ReplyKey | tuple[Any, ...]) -> ReplyKey:
    k = ReplyKey(*key)
    return k._replace(item_id=str(k.item_id), sample_index=int(k.sample_index))


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
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(
            self.path, timeout=timeout, check_same_thread=False, isolation_level=None
        )
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.executescript(_SCHEMA)

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
        with self._lock:
            cur = self._conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
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
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise

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
        with self._lock:
            cur = self._conn.execute(
                "UPDATE replies SET status = ?, answer = ?, confidence = ?, error = ?, "
                f"updated_at = ? WHERE {_KEY_WHERE}",
                (status, answer, confidence, error, time.time(), *k),
            )
            if cur.rowcount != 1:
                raise KeyError(f"no stored reply for {k}")

    def put_prompt(self, prompt_hash: str, prompt: str) -> None:
        """Keep the text of a prompt by its hash (the prompt is part of the measurement)."""
        with self._lock:
            self._conn.execute(
                "INSERT OR IGNORE INTO prompts VALUES (?, ?, ?)", (prompt_hash, prompt, time.time())
            )

    def prompt(self, prompt_hash: str) -> str | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT prompt FROM prompts WHERE prompt_hash = ?", (prompt_hash,)
            ).fetchone()
        return None if row is None else str(row[0])

    # -- reading --------------------------------------------------------------------------------
    @staticmethod
    def _record(row: tuple[Any, ...]) -> ReplyRecord:
        return ReplyRecord(
            key=ReplyKey(row[0], row[1], row[2], row[3], int(row[4]), row[5]),
            text=row[6],
            input_tokens=int(row[7]),
            output_tokens=int(row[8]),
            logprobs=None if row[9] is None else json.loads(row[9]),
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
        with self._lock:
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
        with self._lock:
            rows = self._conn.execute(sql, tuple(where.values())).fetchall()
        return iter([self._record(r) for r in rows])

    def attempts(self, key: ReplyKey | tuple[Any, ...]) -> list[dict[str, Any]]:
        """Every stored attempt of a key, in order (raw text or error, tokens)."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT attempt, text, input_tokens, output_tokens, logprobs, error, created_at "
                f"FROM attempts WHERE {_KEY_WHERE} ORDER BY rowid",
                _key(key),
            ).fetchall()
        names = ("attempt", "text", "input_tokens", "output_tokens", "logprobs", "error", "time")
        out = [dict(zip(names, r, strict=True)) for r in rows]
        for d in out:
            d["logprobs"] = None if d["logprobs"] is None else json.loads(d["logprobs"])
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
        with self._lock:
            row = self._conn.execute(sql, tuple(where.values())).fetchone()
        return {"input_tokens": int(row[0]), "output_tokens": int(row[1]), "calls": int(row[2])}

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM replies").fetchone()[0])
