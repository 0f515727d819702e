"""Parse a confidence (and an answer) stated by a language model in its reply.

Rules (conservative: never a guess, never a fallback constant):

* Digits in any Unicode script (fullwidth ``８５``, Arabic-Indic ``٨٥``...) and fullwidth
  ``％``/``／`` are normalised to ASCII one character at a time, so ``.source`` is still the exact
  substring of the original text.
* Numeric forms: ``0.85`` / ``.85`` ("decimal"), ``85%`` / ``85 percent`` ("percent"), ``7/10``
  ("fraction N/10"), ``7 out of 10`` ("N out of 10"). A bare integer counts only right after a
  confidence label (``Confidence: 1``); a bare decimal above 1 is ignored as not a confidence
  (``pH 7.4``) unless it follows a confidence label, where it is "out of range". Percentages over
  100, N/10 over 10, negatives, NaN and infinities are "out of range".
* If a confidence word (confidence, confident, sure, certain, certainty, probability, likelihood)
  occurs, only numbers just before it (within 25 characters) or after it (within 60) are considered;
  otherwise every number is. Equal values are merged; two different values are "conflicting"
  ("about 80% sure but it could be 60%"). Nothing picks one of two numbers.
* Words are read only when no number is found, from a documented, configurable scale
  (:data:`DEFAULT_VERBAL_SCALE`, override with ``scale=``); longest phrase wins at a position, two
  different values are "conflicting".
* JSON objects: a confidence key (:data:`CONFIDENCE_KEYS`, case-insensitive) is parsed by the rules
  above; otherwise an object mapping two or more option-like keys (at most 3 characters) to numbers
  is a per-option distribution ("distribution") whose value is the probability of the option named
  by the answer key when there is one, else of the largest option (a tie for largest is
  "conflicting"). The stated numbers are used as given: each must lie in [0, 1], they are not
  renormalised and need not sum to 1.

Limits (the work per reply is bounded and linear in its length):

* a reply longer than ``max_chars`` (default :data:`MAX_REPLY_CHARS`, 200,000 characters, about
  50,000 tokens) is not read: reason "too long";
* a reply holding a ``{`` whose brackets nest more than 64 levels deep
  (:data:`calibkit._json.MAX_JSON_DEPTH`, outside strings) is not read: reason "too deep".

When nothing usable is found, :func:`parse_confidence` returns a falsy :class:`ConfidenceParse`
whose ``.value`` is None and whose ``.reason`` is one of :data:`REASONS`, so that ``if res:`` works
like a None check and the reason is still there to count.
"""

from __future__ import annotations

from ._batch import ParseReport, parse_batch
from ._confidence import (
    ANSWER_KEYS,
    CONFIDENCE_KEYS,
    DEFAULT_VERBAL_SCALE,
    MAX_REPLY_CHARS,
    REASONS,
    ConfidenceParse,
    parse_confidence,
)
from ._decision import decision_reason, parse_decision

__all__ = [
    "CONFIDENCE_KEYS",
    "ANSWER_KEYS",
    "DEFAULT_VERBAL_SCALE",
    "MAX_REPLY_CHARS",
    "REASONS",
    "ConfidenceParse",
    "ParseReport",
    "decision_reason",
    "parse_batch",
    "parse_confidence",
    "parse_decision",
]
