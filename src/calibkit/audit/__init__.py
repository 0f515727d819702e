"""The calibration audit: :func:`audit` (the one pipeline, :mod:`.pipeline`) and its result
:class:`Audit` (:mod:`.result`)."""

from __future__ import annotations

from .pipeline import AUDIT_STAGES, audit, audit_from_summary
from .result import Audit

__all__ = ["AUDIT_STAGES", "Audit", "audit", "audit_from_summary"]
