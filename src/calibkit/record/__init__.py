"""The calibration record: one JSON document that holds what is needed to reproduce or challenge
an audit (see :mod:`calibkit.record.build`), its schema, its files, its digest and signature,
its check against data, and the comparison of two records."""

from __future__ import annotations

from .build import calibration_record, fingerprint_array
from .compare import BinChange, RecordComparison, compare_records
from .document import CalibrationRecord, sign_record
from .files import read_record, write_record
from .schema import record_schema, validate_record
from .signing import RecordTrust, check_record
from .verify import RecordCheck, record_stats, verify_record

__all__ = [
    "BinChange",
    "CalibrationRecord",
    "RecordCheck",
    "RecordComparison",
    "RecordTrust",
    "calibration_record",
    "check_record",
    "compare_records",
    "fingerprint_array",
    "read_record",
    "record_schema",
    "record_stats",
    "sign_record",
    "validate_record",
    "verify_record",
    "write_record",
]
