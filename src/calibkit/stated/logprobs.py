"""Log-probabilities: the options' probabilities at the answer token of a reply."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["option_distribution"]

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
