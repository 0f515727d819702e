"""Parsing many replies at once (:func:`parse_batch`): the parsed values, where they came from,
and the count of each reason the others were not parsed (:class:`ParseReport`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._confidence import MAX_REPLY_CHARS, _fail, parse_confidence
from ._decision import _decide, _option_map

__all__ = ["ParseReport", "parse_batch"]


@dataclass(frozen=True)
class ParseReport:
    """The parse of a batch. ``values`` holds parsed confidences only (no NaN, no fallback);
    ``indices`` says which replies they came from; ``unparsed`` and ``reasons`` account for the
    rest."""

    n: int
    values: np.ndarray
    indices: np.ndarray
    answers: list[Any] | None
    unparsed: np.ndarray
    reasons: dict[str, int] = field(default_factory=dict)

    @property
    def parse_rate(self) -> float:
        return len(self.indices) / self.n if self.n else float("nan")

    def to_dict(self) -> dict[str, Any]:
        """The counts, the parsed values and where they came from, JSON-ready."""
        return {
            "n": self.n,
            "n_parsed": int(len(self.indices)),
            "parse_rate": self.parse_rate if self.n else None,
            "values": self.values.tolist(),
            "indices": self.indices.tolist(),
            "answers": None if self.answers is None else list(self.answers),
            "unparsed": self.unparsed.tolist(),
            "reasons": dict(self.reasons),
        }

    def __str__(self) -> str:
        """One line: how many replies parsed, and why the others did not.

        >>> print(parse_batch(["80%", "maybe", "0.3"]))
        2 of 3 replies parsed (66.7%); unparsed: absent 1
        """
        if not self.n:
            return "no replies"
        text = f"{len(self.indices):,} of {self.n:,} replies parsed ({self.parse_rate:.1%})"
        if self.reasons:
            why = ", ".join(f"{k} {c:,}" for k, c in sorted(self.reasons.items()))
            text += f"; unparsed: {why}"
        return text


def parse_batch(
    replies: Iterable[str],
    options: Iterable[Any] | None = None,
    *,
    scale: Mapping[str, float] | None = None,
    max_chars: int = MAX_REPLY_CHARS,
) -> ParseReport:
    """Parse many replies: confidences alone (``options`` None) or decisions against ``options``."""
    omap = None if options is None else _option_map(options)
    vals: list[float] = []
    idx: list[int] = []
    answers: list[Any] = []
    bad: list[int] = []
    reasons: Counter[str] = Counter()
    n = 0
    for i, text in enumerate(replies):
        n += 1
        if omap is None:
            c = (
                parse_confidence(text, scale=scale, max_chars=max_chars)
                if isinstance(text, str)
                else _fail("absent")
            )
            if c and c.value is not None:
                vals.append(c.value)
                idx.append(i)
            else:
                bad.append(i)
                reasons[c.reason or "absent"] += 1
        else:
            r = _decide(text, omap, scale, max_chars)
            if isinstance(r, str):
                bad.append(i)
                reasons[r] += 1
            else:
                answers.append(r[0])
                vals.append(r[1])
                idx.append(i)
    return ParseReport(
        n=n,
        values=np.asarray(vals, dtype=float),
        indices=np.asarray(idx, dtype=np.intp),
        answers=None if omap is None else answers,
        unparsed=np.asarray(bad, dtype=np.intp),
        reasons=dict(reasons),
    )
