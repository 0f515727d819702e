"""What a record proves: its digest, and the keyed signature of records that cross a trust
boundary.

The digest is sha256 of the record's fields other than ``digest`` and ``signature`` as
canonical JSON (keys sorted, no spaces, ASCII). It has no secret in it: it detects accidental
and careless edits, not a forger who edits a field and recomputes it. The signature is
HMAC-SHA256 (RFC 2104) of the same bytes with a secret key, from ``key=`` or the environment
variable ``CALIBKIT_RECORD_KEY``: only a holder of the key can make one that verifies.
Removing the signature leaves an unsigned record, so a reader that expects signed records asks
for them (``require_signature=True``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._errors import InputError
from .schema import validate_record

__all__ = ["KEY_ENV", "MIN_KEY_BYTES", "TRUST", "RecordTrust", "check_record"]

#: The environment variable a signing key is read from when no ``key=`` is given.
KEY_ENV = "CALIBKIT_RECORD_KEY"
#: The shortest signing key accepted, in bytes (RFC 2104 asks for at least the hash's output
#: length, 32 bytes for SHA-256; 16 random bytes are already beyond guessing).
MIN_KEY_BYTES = 16
_SIGNATURE = "hmac-sha256"


def _canonical(document: Mapping[str, Any]) -> bytes:
    """The bytes the digest and the signature are of: every field but those two."""
    body = {k: x for k, x in document.items() if k not in ("digest", "signature")}
    return json.dumps(
        body, sort_keys=True, separators=(",", ":"), allow_nan=False, ensure_ascii=True
    ).encode("ascii")


def _digest(document: Mapping[str, Any]) -> str:
    return hashlib.sha256(_canonical(document)).hexdigest()


def _intact(record: Mapping[str, Any]) -> bool:
    """The record's fields still hash to its digest."""
    return hmac.compare_digest(record["digest"]["value"], _digest(record))


# ----------------------------------------------------------------------------- signing


@dataclass(frozen=True)
class _Key:
    value: bytes
    origin: str  # for messages: "the given key" or "the key in CALIBKIT_RECORD_KEY"

    @property
    def id(self) -> str:
        return _key_id(self.value)


def _key(key: str | bytes | None, *, where: str) -> _Key | None:
    """The signing key given, else the one in the environment, else None. Never shown."""
    if key is None:
        text = os.environ.get(KEY_ENV)
        if not text:
            return None
        raw, origin = os.fsencode(text), f"the key in {KEY_ENV}"
    elif isinstance(key, str):
        raw, origin = key.encode("utf-8"), "the given key"
    elif isinstance(key, (bytes, bytearray)):
        raw, origin = bytes(key), "the given key"
    else:
        raise InputError(
            f"{where}: key must be text or bytes (the signing secret), got {type(key).__name__}."
        )
    if len(raw) < MIN_KEY_BYTES:
        raise InputError(
            f"{where}: {origin} is {len(raw)} bytes long; a signing key needs at least "
            f"{MIN_KEY_BYTES}. Make one with: python -c 'import secrets; "
            "print(secrets.token_hex(32))'."
        )
    return _Key(raw, origin)


def _key_id(key: bytes) -> str:
    """Names a key without revealing it (an HMAC of a fixed message), so that a record signed
    with another key is told apart from an edited one."""
    return hmac.new(key, b"calibkit record key id", hashlib.sha256).hexdigest()[:16]


def _signature(document: Mapping[str, Any], key: bytes) -> dict[str, str]:
    value = hmac.new(key, _canonical(document), hashlib.sha256).hexdigest()
    return {"algorithm": _SIGNATURE, "key_id": _key_id(key), "value": value}


#: What :class:`RecordTrust` may say, from most to least trusted.
TRUST = ("signed-verified", "signed-unverified", "digest-only", "signature-invalid", "edited")


@dataclass(frozen=True)
class RecordTrust:
    """How far a record can be trusted, as :func:`check_record` found it.

    ``status`` is one of ``"signed-verified"`` (its HMAC-SHA256 signature verifies with the
    key), ``"signed-unverified"`` (signed, but no key was available to check it; its digest is
    intact), ``"digest-only"`` (unsigned; its digest is intact, which detects accidental edits,
    not a forger who recomputes it), and, only when read with ``verify=False``,
    ``"signature-invalid"`` or ``"edited"`` (its fields no longer hash to its digest).
    """

    status: str
    key_id: str | None = None
    key_origin: str | None = None

    @property
    def ok(self) -> bool:
        """Intact as far as could be checked (not edited, no signature that fails)."""
        return self.status in ("signed-verified", "signed-unverified", "digest-only")

    def __str__(self) -> str:
        if self.status == "signed-verified":
            return f"signed and verified with {self.key_origin} (HMAC-SHA256, key id {self.key_id})"
        if self.status == "signed-unverified":
            return (
                f"signed (key id {self.key_id}) but NOT verified: no key (set {KEY_ENV}); "
                "digest intact"
            )
        if self.status == "digest-only":
            return "unsigned; digest intact: catches accidental edits, not forgery"
        if self.status == "signature-invalid":
            return f"SIGNATURE DOES NOT VERIFY with {self.key_origin} (read with verify=False)"
        return "EDITED: its fields no longer hash to its digest (read with verify=False)"

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "key_id": self.key_id, "text": str(self)}


def check_record(
    record: Any,
    *,
    key: str | bytes | None = None,
    verify: bool = True,
    require_signature: bool = False,
    where: str = "check_record",
) -> RecordTrust:
    """Check a record against the schema, its digest and, where it is signed and a key is
    available, its signature; say how far it can be trusted.

    Parameters
    ----------
    record : CalibrationRecord or Mapping
        A calibration record (or its JSON document as a ``dict``).
    key : str or bytes, optional
        The signing key; by default the one in ``CALIBKIT_RECORD_KEY``, if set.
    verify : bool
        Refuse (:class:`calibkit.InputError`) a record whose digest or signature does not
        match. ``False`` is for forensic reading: the result then says ``"edited"`` or
        ``"signature-invalid"`` instead.
    require_signature : bool
        Refuse a record that is unsigned, or signed but not verifiable for want of a key: the
        setting for records from across a trust boundary, where a forger could have removed
        the signature.

    Examples
    --------
    >>> import numpy as np, calibkit as ck
    >>> from calibkit.record import calibration_record, check_record
    >>> p = np.linspace(0.05, 0.95, 200); y = (np.arange(200) % 3 == 0).astype(int)
    >>> r = calibration_record(ck.audit(p, y, n_boot=50, n_sims=50), key="k" * 32)
    >>> str(check_record(r, key="k" * 32)).startswith("signed and verified")
    True
    >>> edited = r.to_dict()
    >>> edited["metrics"]["ece"]["value"] = 0.001
    >>> check_record(edited, key="k" * 32)
    Traceback (most recent call last):
    ...
    calibkit._errors.InputError: check_record: the record was edited after it was made: ...
    """
    validate_record(record, where=where)
    if not _intact(record):
        if verify:
            raise InputError(
                f"{where}: the record was edited after it was made: its fields no longer hash "
                "to its digest (sha256). Refusing to use it; make a new record from the data "
                "(calibkit audit --record), or read it with verify=False to inspect it."
            )
        return RecordTrust("edited")
    signature = record.get("signature")
    if signature is None:
        if require_signature:
            raise InputError(
                f"{where}: the record is not signed, and a signed record is required; sign it "
                f"where it is made (set {KEY_ENV} for calibkit audit --record, or "
                "calibkit.record.sign_record)."
            )
        return RecordTrust("digest-only")
    secret = _key(key, where=where)
    if secret is None:
        if require_signature:
            raise InputError(
                f"{where}: the record is signed (key id {signature['key_id']}) but there is no "
                f"key to verify it with; set {KEY_ENV} to the key it was signed with."
            )
        return RecordTrust("signed-unverified", key_id=signature["key_id"])
    expected = _signature(record, secret.value)
    if hmac.compare_digest(expected["value"], signature["value"]):
        return RecordTrust("signed-verified", key_id=secret.id, key_origin=secret.origin)
    if verify:
        why = (
            f"it was signed with another key (key id {signature['key_id']}; {secret.origin} "
            f"has key id {secret.id})"
            if signature["key_id"] != secret.id
            else "the record, or its signature, was changed after it was signed (its digest "
            "was recomputed to match)"
        )
        raise InputError(
            f"{where}: the record's signature does not verify with {secret.origin}: {why}. "
            "Refusing to use it; read it with verify=False to inspect it."
        )
    return RecordTrust("signature-invalid", key_id=signature["key_id"], key_origin=secret.origin)
