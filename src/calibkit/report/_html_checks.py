"""The checks of :func:`~calibkit.report.html.write_report`'s arguments: the path, and that each
result passed is of the kind its section draws."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._errors import InputError


def _target(path: Any) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise InputError(
            f"write_report: path must be a file name (str or Path), got {type(path).__name__}."
        )
    target = Path(path)
    if target.is_dir():
        raise InputError(f"write_report: {str(target)!r} is a folder; give a file name.")
    if not target.parent.is_dir():
        raise InputError(
            f"write_report: the folder {str(target.parent)!r} does not exist; create it first."
        )
    return target


def _check(
    audit: Any,
    ledger: Any,
    policy: Any,
    record: Any,
    title: Any,
    before: Any,
    after: Any,
    *,
    where: str,
    stated: Any = None,
) -> None:
    from ..audit import Audit
    from ..decide.policy import PolicyTable
    from ..measure.reliability import ReliabilityTable
    from ..recalibrate.ledger import CalibrationLedger

    if stated is not None:
        from ..stated.audit import StatedAudit

        if not isinstance(stated, StatedAudit):
            raise InputError(
                f"{where}: stated must be a StatedAudit (from ck.audit_stated(...)), "
                f"got {type(stated).__name__}."
            )
    for value, name, kind, maker in (
        (audit, "audit", Audit, "ck.audit(...)"),
        (ledger, "ledger", CalibrationLedger, "ck.compare_calibration(...)"),
        (policy, "policy", PolicyTable, "ck.decision_report(...) or ck.policy_table(...)"),
    ):
        if value is not None and not isinstance(value, kind):
            raise InputError(
                f"{where}: {name} must be a {kind.__name__} (from {maker}), "
                f"got {type(value).__name__}."
            )
    if record is not None and not isinstance(record, Mapping):
        raise InputError(
            f"{where}: record must be a calibration record (ck.calibration_record or "
            f"ck.read_record), got {type(record).__name__}."
        )
    if title is not None and not isinstance(title, str):
        raise InputError(f"{where}: title must be a str, got {type(title).__name__}.")
    if (before is None) != (after is None):
        raise InputError(f"{where}: pass before= and after= together, or neither.")
    for value, name in ((before, "before"), (after, "after")):
        if value is not None and not isinstance(value, (Audit, ReliabilityTable)):
            raise InputError(
                f"{where}: {name} must be an Audit or a ReliabilityTable of the held-out rows, "
                f"got {type(value).__name__}."
            )


def _check_decisions(actions: Any, guarantee: Any, binary: Any, *, where: str) -> bool:
    """The decision sections are of their kinds; True when any is given."""
    from ..decide.actions import ActionChoice, ActionsEvaluation
    from ..decide.binary import BinaryPolicyTable
    from ..decide.guarantee import GuaranteeEvaluation, RiskGuarantee

    for value, name, kinds, maker in (
        (actions, "actions", (ActionChoice, ActionsEvaluation), "ck.choose_actions(...)"),
        (guarantee, "guarantee", (RiskGuarantee, GuaranteeEvaluation), "ck.guaranteed_threshold"),
        (binary, "binary", (BinaryPolicyTable,), "ck.binary_policy_table(...)"),
    ):
        if value is not None and not isinstance(value, kinds):
            raise InputError(
                f"{where}: {name} must be a {' or '.join(k.__name__ for k in kinds)} (from "
                f"{maker}, or its .evaluate(...) on held-out data), got {type(value).__name__}."
            )
    return any(x is not None for x in (actions, guarantee, binary))
