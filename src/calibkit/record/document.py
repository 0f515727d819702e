"""The calibration record as a result: a frozen, read-only mapping of its JSON document.

:class:`CalibrationRecord` is what :func:`~calibkit.record.calibration_record` and
:func:`~calibkit.record.read_record` return. It *is* the JSON document, key for key (a
:class:`collections.abc.Mapping`, so every function that takes a record as a mapping takes it),
and it cannot be changed: its nested objects and arrays are read-only too, and an assignment
raises :class:`TypeError`. :meth:`CalibrationRecord.to_dict` gives an editable deep copy as
plain ``dict`` and ``list`` (the way to make an edited record, which every read then refuses).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

from .._errors import InputError
from .schema import validate_record
from .signing import KEY_ENV, RecordTrust, _intact, _key, _signature, check_record

__all__ = ["CalibrationRecord", "record_name", "sign_record"]

_READ_ONLY = (
    "a calibration record is read-only (its digest vouches for every field); "
    "record.to_dict() gives an editable copy"
)


def _refuse(*_: Any, **__: Any) -> NoReturn:
    raise TypeError(_READ_ONLY)


class _ReadOnlyDict(dict):  # type: ignore[type-arg]
    """A JSON object of a record: a ``dict`` (equal to one, written by :mod:`json` as one)
    whose every mutating method raises :class:`TypeError`."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __copy__(self) -> _ReadOnlyDict:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> _ReadOnlyDict:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (dict(self),))


class _ReadOnlyList(list):  # type: ignore[type-arg]
    """A JSON array of a record: a ``list`` whose every mutating method raises
    :class:`TypeError`."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = clear = extend = insert = pop = remove = reverse = sort = _refuse

    def __copy__(self) -> _ReadOnlyList:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> _ReadOnlyList:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (list(self),))


def _freeze(x: Any) -> Any:
    if isinstance(x, Mapping):
        return _ReadOnlyDict((str(k), _freeze(v)) for k, v in x.items())
    if isinstance(x, (list, tuple)):
        return _ReadOnlyList(_freeze(v) for v in x)
    return x


def _thaw(x: Any) -> Any:
    if isinstance(x, Mapping):
        return {k: _thaw(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_thaw(v) for v in x]
    return x


def record_name(record: Mapping[str, Any]) -> str:
    """What a record is about, in words: model, checkpoint, population, data window, date."""
    context = record["context"]
    parts = [context["model"] or "unnamed model"]
    if context["checkpoint"]:
        parts.append(f"checkpoint {context['checkpoint']}")
    if context["population"]:
        parts.append(context["population"])
    if context["data_window"]:
        parts.append(context["data_window"])
    parts.append(f"recorded {record['created']}")
    return ", ".join(parts)


class CalibrationRecord(_ReadOnlyDict):
    """A calibration record: the JSON document itself (a read-only ``dict``, key for key, so
    :mod:`json` writes it and every function that takes a mapping takes it) and how far it was
    trusted when it was made or read.

    Parameters
    ----------
    document : Mapping
        The record's JSON document; it is checked against the schema and copied (read-only).
    trust : RecordTrust, optional
        How far the record was checked where it was made or read (:func:`check_record`); by
        default found now from the document (with the key in ``CALIBKIT_RECORD_KEY``, if set),
        and an edited record then says ``"edited"``.

    Examples
    --------
    >>> import numpy as np, calibkit as ck
    >>> p = np.linspace(0.05, 0.95, 200); y = (np.arange(200) % 3 == 0).astype(int)
    >>> r = ck.calibration_record(ck.audit(p, y, n_boot=50, n_sims=50), model="demo")
    >>> r["data"]["n"], r["binning"]["n_bins"], r.trust.status
    (200, 15, 'digest-only')
    >>> r["metrics"]["ece"]["value"] = 0.001
    Traceback (most recent call last):
    ...
    TypeError: a calibration record is read-only (its digest vouches for every field); record.to_dict() gives an editable copy
    >>> edited = r.to_dict()
    >>> edited["metrics"]["ece"]["value"] = 0.001
    >>> ck.CalibrationRecord(edited).trust.status
    'edited'
    """  # noqa: E501

    __slots__ = ("trust",)
    trust: RecordTrust

    def __init__(self, document: Mapping[str, Any], trust: RecordTrust | None = None) -> None:
        if trust is None:  # checks the schema too
            trust = check_record(document, verify=False, where="CalibrationRecord")
        dict.__init__(self, ((str(k), _freeze(v)) for k, v in document.items()))
        object.__setattr__(self, "trust", trust)

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        _refuse()

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.to_dict(), self.trust))

    @property
    def document(self) -> dict[str, Any]:
        """The JSON document (this record itself, read-only)."""
        return self

    # ------------------------------------------------------------------ result
    def to_dict(self) -> dict[str, Any]:
        """The JSON document as a deep copy of plain ``dict`` and ``list`` (editable; an edited
        copy no longer matches its digest, and every read refuses it)."""
        out: dict[str, Any] = _thaw(dict(self))
        return out

    def __str__(self) -> str:
        data, ece = self["data"], self["metrics"]["ece"]
        outcome = self["context"]["outcome_definition"]
        what = f"{data['event']}" + (f", outcome {outcome!r}" if outcome else "")
        value, interval = ece["value"], ece["interval"]
        ece_text = "ECE -" if value is None else f"ECE {value:.4f}"
        if value is not None and interval is not None:
            ece_text += (
                f" [{interval['low']:.4f}, {interval['high']:.4f}] "
                f"({interval['level'] * 100:g}% interval)"
            )
        noise = "within noise" if self["within_noise"] else "beyond noise"
        return (
            f"calibration record of {record_name(self)} ({what}): "
            f"N = {data['n']:,}, {ece_text}, {noise}; {self.trust}"
        )

    def __repr__(self) -> str:
        digest = self["digest"]["value"][:12]
        trust = self.trust.status if self.trust is not None else "unchecked"
        return f"CalibrationRecord({record_name(self)!r}, digest {digest}..., {trust})"


def sign_record(record: Mapping[str, Any], *, key: str | bytes | None = None) -> CalibrationRecord:
    """A copy of an intact record with a signature (HMAC-SHA256) made with ``key`` (by
    default the one in ``CALIBKIT_RECORD_KEY``), replacing any signature it had: a
    :class:`~calibkit.record.CalibrationRecord`. An edited record is refused: signing it would
    vouch for the edit."""
    where = "sign_record"
    validate_record(record, where=where)
    if not _intact(record):
        raise InputError(
            f"{where}: the record was edited after it was made (its fields no longer hash to "
            "its digest); signing it would vouch for the edit. Make a new record from the data."
        )
    secret = _key(key, where=where)
    if secret is None:
        raise InputError(f"{where}: no key: pass key= or set {KEY_ENV}.")
    signed = dict(record)
    signed["signature"] = _signature(signed, secret.value)
    trust = RecordTrust("signed-verified", key_id=secret.id, key_origin=secret.origin)
    return CalibrationRecord(signed, trust=trust)
