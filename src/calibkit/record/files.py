"""Calibration records as files: written atomically (and signed when a key is set), read back
through the bounded JSON reader and checked against the schema, the digest and the signature."""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._errors import CalibkitWarning
from .._files import write_atomic
from .._json import read_json_file
from .._validate import output_path
from .document import CalibrationRecord
from .signing import KEY_ENV, _key, _signature, check_record

__all__ = ["read_record", "write_record"]


def write_record(
    path: str | os.PathLike[str], record: Mapping[str, Any], *, key: str | bytes | None = None
) -> Path:
    """Write a record as JSON, atomically (a temporary file beside ``path``, then renamed): a
    failed write leaves no partial file.

    The record is checked first as :func:`check_record` checks it: an edited record, or one
    whose signature does not verify with the key, is refused rather than written. An unsigned
    record is signed when a key is given (``key=``) or set in ``CALIBKIT_RECORD_KEY``.
    """
    where = "write_record"
    path = output_path(path, where=where, call="write_record(path, record)")
    check_record(record, key=key, where=where)
    document = dict(record)  # the nested objects are written as they are
    if "signature" not in document:
        secret = _key(key, where=where)
        if secret is not None:
            document["signature"] = _signature(document, secret.value)
    text = json.dumps(document, indent=2, allow_nan=False, ensure_ascii=False)
    return write_atomic(path, text + "\n", where=where)


def read_record(
    path: str | os.PathLike[str],
    *,
    key: str | bytes | None = None,
    verify: bool = True,
    require_signature: bool = False,
) -> CalibrationRecord:
    """Read a record written by :func:`write_record`, checked against the schema, its digest
    and (when it is signed and a key is available) its signature: a
    :class:`~calibkit.record.CalibrationRecord` whose ``trust`` says how far it was checked.

    Parameters
    ----------
    path : str or path
        The JSON file (read through calibkit's bounded JSON reader).
    key, verify, require_signature
        As for :func:`check_record`: the signing key (by default ``CALIBKIT_RECORD_KEY``);
        ``verify=False`` reads an edited record, or one whose signature fails, for forensic
        inspection (with a :class:`calibkit.CalibkitWarning` saying so);
        ``require_signature=True`` refuses an unsigned or unverifiable record.

    Raises :class:`calibkit.InputError` naming the file and what is wrong: the first failing
    field (``metrics.ece.value``, ``bins.count[3]``, ...), an edit after the record was made, a
    signature that does not verify. A signed record read without a key gives a
    :class:`calibkit.CalibkitWarning` that its signature could not be verified.
    """
    where = f"read_record: '{Path(path)}'"
    data = read_json_file(path, where="read_record")
    trust = check_record(
        data, key=key, verify=verify, require_signature=require_signature, where=where
    )
    if trust.status == "signed-unverified":
        warnings.warn(
            f"{where}: the record is signed (key id {trust.key_id}), but {KEY_ENV} is not set, "
            "so its signature could not be verified; only its digest was checked, which "
            "detects accidental edits, not a forger.",
            CalibkitWarning,
            stacklevel=2,
        )
    elif not trust.ok:
        warnings.warn(f"{where}: {trust}.", CalibkitWarning, stacklevel=2)
    return CalibrationRecord(data, trust=trust)
