"""The calibration audit: :func:`audit` (the one pipeline, :mod:`.pipeline`) and its result
:class:`Audit` (:mod:`.result`); by group (``by=``, :mod:`.groups`), a :class:`GroupedAudit`
(:mod:`.grouped`)."""

from __future__ import annotations

from .grouped import GroupedAudit
from .pipeline import AUDIT_STAGES, audit, audit_from_summary
from .result import Audit

__all__ = ["AUDIT_STAGES", "Audit", "GroupedAudit", "audit", "audit_from_summary"]
