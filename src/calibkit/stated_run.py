"""The audit of an elicitation: the confidences a language model stated, parsed, against the
labels of the items it was asked (what ``calibkit stated run`` prints after asking).

It sits one layer above :mod:`calibkit.audit`, which audits the parsed confidences against the
labels: :mod:`calibkit.stated` (below it) asks and parses, and knows nothing of the whole audit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .audit import Audit, audit

__all__ = ["StatedRun", "audit_elicitation"]


@dataclass(frozen=True, eq=False)
class StatedRun:
    """An elicitation ``run`` (:class:`calibkit.stated.ElicitationRun`) and the audit of its
    parsed replies: ``n_parsed`` of them, the ``accuracy`` among those and their ``audit``
    (both None when none parsed), and ``reasons`` (why the others did not parse, counted)."""

    run: Any
    n_parsed: int
    accuracy: float | None
    audit: Audit | None
    reasons: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The run and its audit (``calibkit stated run --json``, after the decision set and
        the store)."""
        run = self.run
        return {
            "provider": run.provider,
            "model": run.model,
            "source": run.source,
            "prompt_sha256": run.prompt_hash,
            "settings": run.settings,
            "settings_hash": run.settings_hash,
            "items": len(run.results),
            "parsed": self.n_parsed,
            "parse_rate": run.parse_rate,
            "status_counts": dict(run.status_counts),
            "reasons": dict(self.reasons),
            "calls": run.calls,
            "reused": run.reused,
            "tokens": {"input": run.input_tokens, "output": run.output_tokens},
            "accuracy_of_parsed": self.accuracy,
            "audit": None if self.audit is None else self.audit.to_dict(),
        }

    def __str__(self) -> str:
        head = self.run.summary()
        if self.audit is None:
            return f"{head}\nno parsed replies: nothing to audit."
        return f"{head}\n{self.n_parsed} parsed replies: {self.audit.verdict()}"


def audit_elicitation(
    run: Any,
    items: Sequence[Any],
    *,
    n_bins: int = 15,
    seed: int = 0,
    where: str = "audit_elicitation",
) -> StatedRun:
    """Audit the parsed confidences of an elicitation ``run`` (:func:`calibkit.stated.elicit`)
    against the labels of its ``items`` (:func:`calibkit.audit`, ``n_bins`` bins, ``seed``).

    A run in which no item got a reply is an :class:`calibkit.InputError` (nothing could be
    asked; the replies stay in the store). Unparsed replies are counted and left out of the
    audit, never given a fallback confidence.
    """
    from .stated.answers import check_something_asked, run_outcomes, unparsed_reasons

    check_something_asked(run, where=where)
    conf, right = run_outcomes(run, items)
    result = audit(conf, right, n_bins=n_bins, seed=seed) if conf.size else None
    return StatedRun(
        run=run,
        n_parsed=int(conf.size),
        accuracy=None if result is None else float(right.mean()),
        audit=result,
        reasons=dict(unparsed_reasons(run)),
    )
