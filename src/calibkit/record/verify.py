"""A record against data: its per-bin statistics back as :class:`calibkit.BinStats`, and whether
given arrays are the data it was made from (:func:`verify_record`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._errors import InputError
from .build import fingerprint_array
from .schema import SUM_FIELDS as _SUM_FIELDS
from .signing import RecordTrust, check_record

__all__ = ["RecordCheck", "record_stats", "verify_record"]


def record_stats(record: Mapping[str, Any]) -> Any:
    """The record's per-bin sufficient statistics as a :class:`calibkit.BinStats`."""
    from ..measure.bins import BinStats

    binning, bins = record["binning"], record["bins"]
    return BinStats.from_dict(
        {
            "edges": binning["edges"],
            "closed": binning["closed"],
            "count": bins["count"],
            **{f: bins[f] for f in _SUM_FIELDS},
            **{f: bins[f] for f in ("weight", "weight_sq") if f in bins},
        }
    )


@dataclass(frozen=True)
class RecordCheck:
    """What :func:`verify_record` found. ``data_matches``: the arrays have the recorded
    fingerprint (dtype, shape and sha256 of scores and labels). ``record_intact``: the record's
    fields still hash to its digest and, where it is signed and a key is available, its
    signature verifies. ``trust`` is the :class:`RecordTrust` behind the latter. ``problems``
    says what differs. True (as a bool) only when both hold."""

    data_matches: bool
    record_intact: bool
    problems: tuple[str, ...]
    trust: RecordTrust = RecordTrust("digest-only")

    @property
    def ok(self) -> bool:
        return self.data_matches and self.record_intact

    def __bool__(self) -> bool:
        return self.ok

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "data_matches": self.data_matches,
            "record_intact": self.record_intact,
            "trust": self.trust.to_dict(),
            "problems": list(self.problems),
        }

    def __str__(self) -> str:
        if self.ok:
            return (
                "record verified: the data match its fingerprint and the record is intact "
                f"({self.trust})."
            )
        return "record NOT verified: " + "; ".join(self.problems)


def verify_record(
    record: Mapping[str, Any], scores: Any, labels: Any, *, key: str | bytes | None = None
) -> RecordCheck:
    """Whether ``scores`` and ``labels`` are the data the record was made from, and whether
    the record is as it was made.

    The arrays are fingerprinted as :func:`calibration_record` did (sha256 of the raw bytes,
    dtype, shape) and compared with the record's fingerprint; the record's digest is recomputed
    from its other fields, and its signature checked where it is signed and a key (``key=`` or
    ``CALIBKIT_RECORD_KEY``) is available. Changed data, or a record whose fingerprint (or any
    other field) was edited, give a falsy :class:`RecordCheck` that says what differs. Without
    a signature, an edit whose author recomputed the digest cannot be told from the original.
    """
    where = "verify_record"
    trust = check_record(record, key=key, verify=False, where=where)
    recorded = record["data"]["fingerprint"]
    if recorded is None:
        raise InputError(
            f"{where}: the record has no data fingerprint (it was made without scores and "
            "labels), so there is nothing to check the data against."
        )
    problems: list[str] = []
    for name, x in (("scores", scores), ("labels", labels)):
        now = fingerprint_array(x, name=name, where=where)
        then = recorded[name]
        for field in ("dtype", "shape", "sha256"):
            if now[field] != then[field]:
                what = "contents (sha256)" if field == "sha256" else field
                shown = (
                    f"{then[field][:12]}... recorded, {now[field][:12]}... now"
                    if field == "sha256"
                    else f"{then[field]} recorded, {now[field]} now"
                )
                problems.append(f"{name} {what} differ: {shown}")
                break
    data_matches = not problems
    if trust.status == "edited":
        problems.append(
            "the record was edited after it was made: its fields no longer hash to its digest"
        )
    elif trust.status == "signature-invalid":
        problems.append(f"the record's signature does not verify with {trust.key_origin}")
    return RecordCheck(data_matches, trust.ok, tuple(problems), trust)
