"""The calibration record: one JSON document that holds everything needed to reproduce or
challenge an audit: a calibrator belongs to one measurement contract (one model, outcome
definition, population and data window).

A record names what the audit is about (model, checkpoint, outcome definition, population, data
window: the user's words), fingerprints the data it was computed from (sha256 of the score and
label arrays, with their dtype and shape), says how the rows were split and which calibrator
(with its fitted state and objective) produced the probabilities, and keeps the binning, the
per-bin sufficient statistics (so that :func:`~calibkit.record.compare_records` can
compute intervals later without the data), every metric with its interval, the noise floor, the
software versions and the time.

What a record proves
--------------------
A ``digest`` (sha256 of the other fields as canonical JSON) is checked by every read
(:func:`read_record`, :func:`check_record`, :func:`~calibkit.record.compare_records`):
an edited record is refused. A digest has no secret in it, so it detects accidental and careless
edits, not a forger, who edits a field and recomputes it. A record that crosses a trust boundary
should be *signed*: with a key (``key=``, or the environment variable ``CALIBKIT_RECORD_KEY``)
:func:`calibration_record` and :func:`write_record` add a ``signature``, HMAC-SHA256 of the
same canonical JSON (RFC 2104), which only a holder of the key can make; a read with the key
refuses a signature that does not verify, and a read without one says that it could not verify
it. Removing the signature leaves an unsigned record, so a reader that expects signed records
asks for them (``require_signature=True``, ``calibkit compare --require-signature``). The data
fingerprint (sha256 of the arrays) must describe ``data.n`` rows; whether it is of *these* data
only :func:`verify_record`, given the arrays, can tell.

The record is a :class:`~calibkit.record.CalibrationRecord`: a frozen, read-only mapping of the
JSON document itself, so what :func:`calibration_record` returns is what :func:`write_record`
writes and :func:`read_record` returns, key for key (``record.to_dict()`` is an editable copy
as plain ``dict``). The layout is published as a JSON Schema (draft 2020-12),
``record.schema.json`` beside this module (:func:`record_schema`); :func:`read_record` checks
every document against it.
"""

from __future__ import annotations

import hashlib
import json
import math
import platform
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import numpy as np

from .. import _validate as v
from .._errors import InputError
from .._json import jsonable
from .document import CalibrationRecord
from .schema import FORMAT, FORMAT_VERSION
from .schema import SUM_FIELDS as _SUM_FIELDS
from .signing import _digest, _key, _signature, check_record

__all__ = ["calibration_record", "fingerprint_array"]

#: Bytes hashed per step: a big array is fingerprinted without a second copy of it.
_CHUNK = 1 << 24

_CONTEXT = ("model", "checkpoint", "outcome_definition", "population", "data_window", "notes")
_SCORES_KINDS = ("logits", "probs", "confidence")


# ----------------------------------------------------------------------------- making a record


def calibration_record(
    audit: Any,
    *,
    scores: Any = None,
    labels: Any = None,
    scores_kind: str | None = None,
    model: str | None = None,
    checkpoint: str | None = None,
    outcome_definition: str | None = None,
    population: str | None = None,
    data_window: str | None = None,
    split: Mapping[str, Any] | str | None = None,
    calibrator: Any = None,
    notes: str | None = None,
    key: str | bytes | None = None,
) -> CalibrationRecord:
    """The calibration record of an audit: a :class:`~calibkit.record.CalibrationRecord`, the
    read-only mapping of a JSON document valid under :func:`record_schema`.

    Parameters
    ----------
    audit : Audit
        The result of :func:`calibkit.audit`.
    scores, labels : arrays, optional
        The arrays the audit was computed from, exactly as passed to it (logits, probabilities or
        confidences; class indices or 0/1 outcomes). They are not stored: the record keeps their
        sha256 (raw bytes in C order, hashed chunk by chunk), dtype and shape, so that
        :func:`verify_record` can tell later whether some data are these data. Give both or
        neither (then the fingerprint is null).
    scores_kind : {"logits", "probs", "confidence"}, optional
        What ``scores`` hold (name the unscaled logits: a temperature means nothing without
        the scores it divides).
    model, checkpoint, outcome_definition, population, data_window, notes : str, optional
        The user's description of the measurement contract. :func:`compare_records` refuses to
        compare records whose ``outcome_definition`` differs.
    split : dict or str, optional
        How the audited rows were split off: ``{"method": ..., "seed": ...}`` plus any further
        JSON-ready settings (a string is the method, with no seed).
    calibrator : Calibrator or dict, optional
        The fitted calibrator behind the audited probabilities (or its ``to_dict()``); recorded
        with the objective its method minimises.
    key : str or bytes, optional
        Sign the record (HMAC-SHA256, see the module docstring) with this key; by default with
        the key in the environment variable ``CALIBKIT_RECORD_KEY`` when it is set (and not
        empty); unsigned otherwise. At least 16 bytes.

    Examples
    --------
    >>> import numpy as np, calibkit as ck
    >>> from calibkit.record import calibration_record, verify_record
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0, 1, 400); y = (rng.random(400) < p).astype(int)
    >>> a = ck.audit(p, y, n_boot=100, n_sims=100)
    >>> r = calibration_record(a, scores=p, labels=y, model="demo", outcome_definition="y = 1")
    >>> r["data"]["n"], r["binning"]["n_bins"], sum(r["bins"]["count"])
    (400, 15, 400)
    >>> print(r)  # doctest: +ELLIPSIS
    calibration record of demo, recorded ... (binary, outcome 'y = 1'): N = 400, ECE ...
    >>> bool(verify_record(r, p, y)), bool(verify_record(r, p[::-1], y))
    (True, False)
    """
    from ..audit import Audit

    where = "calibration_record"
    if not isinstance(audit, Audit):
        raise InputError(
            f"{where}: audit must be the result of calibkit.audit, got {type(audit).__name__}."
        )
    context = {
        name: _text(value, name=name, where=where)
        for name, value in zip(
            _CONTEXT,
            (model, checkpoint, outcome_definition, population, data_window, notes),
            strict=True,
        )
    }
    if scores_kind is not None:
        scores_kind = v.choice(scores_kind, name="scores_kind", allowed=_SCORES_KINDS, where=where)
    if (scores is None) != (labels is None):
        raise InputError(
            f"{where}: pass scores and labels together (the data are fingerprinted as a pair), "
            "or neither."
        )
    fingerprint: dict[str, Any] | None = None
    if scores is not None:
        fingerprint = {
            "algorithm": "sha256",
            "scores": fingerprint_array(scores, name="scores", where=where),
            "labels": fingerprint_array(labels, name="labels", where=where),
        }
        for name in ("scores", "labels"):
            rows = fingerprint[name]["shape"][0] if fingerprint[name]["shape"] else None
            if rows != audit.n:
                raise InputError(
                    f"{where}: {name} has {rows} rows but the audit counts {audit.n} "
                    "forecasts; pass the arrays the audit was computed from."
                )

    table, stats = audit.table, audit.stats
    level = float(table.level)
    rows = table.rows
    if stats.weighted:  # the weighted accuracy out of Kish's effective size
        accuracy_interval = _effective_wilson(
            audit.accuracy, stats.total_mass**2 / float(stats.mass_sq.sum()), level
        )
    else:
        accuracy_interval = _wilson(int(round(audit.accuracy * audit.n)), audit.n, level)
    document: dict[str, Any] = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "software": _software(),
        "context": context,
        "data": {
            "n": audit.n,
            **({"total_weight": stats.total_mass} if stats.weighted else {}),
            "event": audit.kind,
            "n_classes": audit.n_classes,
            "scores_kind": scores_kind,
            "fingerprint": fingerprint,
        },
        "split": _split(split, where=where),
        "calibrator": _calibrator(calibrator, where=where),
        "binning": {
            "strategy": table.strategy,
            "requested_bins": table.requested_bins,
            "n_bins": stats.n_bins,
            "closed": stats.closed,
            "edges": stats.edges.tolist(),
            "interval": table.interval,
            "level": level,
        },
        "bins": {
            "count": stats.count.tolist(),
            **{f: getattr(stats, f).tolist() for f in _SUM_FIELDS},
            **(
                {"weight": stats.mass.tolist(), "weight_sq": stats.mass_sq.tolist()}
                if stats.weighted
                else {}
            ),
            **{f: [_number(getattr(r, f)) for r in rows] for f in ("conf", "acc", "gap")},
            "ci_low": [_number(r.ci_low) for r in rows],
            "ci_high": [_number(r.ci_high) for r in rows],
        },
        "metrics": {
            "ece": _metric(
                audit.ece,
                {
                    "low": audit.ece_interval.low,
                    "high": audit.ece_interval.high,
                    "level": audit.ece_interval.level,
                    "method": f"percentile bootstrap ({audit.ece_interval.method})",
                    "n_boot": audit.ece_interval.n_boot,
                    "seed": audit.ece_interval.seed,
                },
            ),
            "mce": _metric(audit.mce),
            "rmsce": _metric(audit.rmsce),
            "debiased_squared_ce": _metric(audit.debiased_squared_ce),
            "classwise_ece": _metric(audit.classwise_ece),
            "brier": {
                **_metric(audit.brier),
                "decomposition": jsonable(audit.brier_decomposition.to_dict()),
            },
            "nll": _metric(audit.nll),
            "auc": _metric(audit.auc),
            "accuracy": _metric(audit.accuracy, accuracy_interval),
            "mean_confidence": _metric(audit.mean_confidence),
            **_beyond_bins(audit),
        },
        "noise_floor": jsonable(audit.noise_floor.to_dict()),
        "tests": [jsonable(t.to_dict()) for t in audit.tests],
        "within_noise": bool(audit.within_noise),
        "verdict": audit.verdict(),
    }
    document["digest"] = {"algorithm": "sha256", "value": _digest(document)}
    secret = _key(key, where=where)
    if secret is not None:
        document["signature"] = _signature(document, secret.value)
    trust = check_record(document, key=key, where=where)  # the schema, the digest, the signature
    return CalibrationRecord(document, trust=trust)


def fingerprint_array(x: Any, *, name: str = "array", where: str = "fingerprint_array") -> dict:
    """sha256 of an array's raw bytes in C order, with its dtype and shape.

    The bytes are hashed in chunks of 16 MiB straight from the array's memory (a
    non-contiguous array is copied one block of rows at a time), so a large array costs one
    pass and no second copy. The same values in another dtype (float32 against float64) have
    another fingerprint: it identifies these arrays, not their numbers.

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.record import fingerprint_array
    >>> f = fingerprint_array(np.array([1, 2, 3], dtype=np.int64))
    >>> f["dtype"], f["shape"], f["sha256"][:12]
    ('<i8', [3], 'e2e2033ae7e1')
    """
    arr = v.to_numpy(x, name=name, where=where)
    digest = hashlib.sha256()
    if arr.ndim == 0:
        arr = arr.reshape(1)
        shape: list[int] = []
    else:
        shape = [int(s) for s in arr.shape]
    if arr.flags.c_contiguous:
        view = memoryview(arr).cast("B")  # type: ignore[arg-type]
        for start in range(0, view.nbytes, _CHUNK):
            digest.update(view[start : start + _CHUNK])
    else:
        per_row = max(1, arr[:1].nbytes)
        rows = max(1, _CHUNK // per_row)
        for start in range(0, arr.shape[0], rows):
            digest.update(np.ascontiguousarray(arr[start : start + rows]).data)
    return {"dtype": arr.dtype.str, "shape": shape, "sha256": digest.hexdigest()}


def _software() -> dict[str, str]:
    import scipy

    from .._version import __version__

    return {
        "calibkit": __version__,
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "python": platform.python_version(),
    }


def _text(value: Any, *, name: str, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InputError(f"{where}: {name} must be text (a string), got {type(value).__name__}.")
    value = value.strip()
    return value or None


def _split(split: Mapping[str, Any] | str | None, *, where: str) -> dict[str, Any] | None:
    if split is None:
        return None
    if isinstance(split, str):
        split = {"method": split}
    if not isinstance(split, Mapping):
        raise InputError(
            f"{where}: split must be a dict such as {{'method': 'stratified', 'seed': 0}} or "
            f"a string naming the method, got {type(split).__name__}."
        )
    out = {str(k): jsonable(x) for k, x in split.items()}
    method = out.get("method")
    if not isinstance(method, str) or not method.strip():
        raise InputError(f"{where}: split needs a 'method' (text), e.g. 'stratified'.")
    seed = out.setdefault("seed", None)
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise InputError(f"{where}: split 'seed' must be an integer or None, got {seed!r}.")
    try:
        json.dumps(out, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{where}: split must hold JSON values only ({exc}).") from None
    return out


def _calibrator(calibrator: Any, *, where: str) -> dict[str, Any] | None:
    if calibrator is None:
        return None
    if isinstance(calibrator, Mapping):
        data = dict(calibrator)
    elif callable(getattr(calibrator, "to_dict", None)) and hasattr(calibrator, "kind"):
        data = calibrator.to_dict()  # NotFittedError (an InputError) before fit
    else:
        raise InputError(
            f"{where}: calibrator must be a fitted calibkit calibrator or its to_dict(), got "
            f"{type(calibrator).__name__}."
        )
    missing = [k for k in ("kind", "format_version", "params", "state") if k not in data]
    if missing:
        raise InputError(
            f"{where}: calibrator is missing {', '.join(missing)}; pass a fitted calibrator "
            "or the dictionary its to_dict() returns."
        )
    from ..recalibrate.base import Calibrator

    Calibrator._from_dict(data, where=f"{where}: calibrator")  # every field, typed
    objective = data.get("objective") or _objective(str(data["kind"]))
    return {
        "kind": str(data["kind"]),
        "format_version": data["format_version"],
        "params": jsonable(data["params"]),
        "state": jsonable(data["state"]),
        "objective": objective,
    }


def _objective(kind: str) -> str | None:
    from ..recalibrate.ledger import LIKELIHOOD_FITS, SQUARED_ERROR_FITS

    if kind in LIKELIHOOD_FITS:
        return "negative log-likelihood (log loss) on the calibration rows"
    if kind in SQUARED_ERROR_FITS:
        return "squared error (Brier score) on the calibration rows"
    return None


def _number(x: Any) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _beyond_bins(audit: Any) -> dict[str, Any]:
    """The calibration slope and, where the engine held the distinct forecasts, the CORP
    decompositions, smooth ECE and KS calibration error (absent keys: not computed)."""
    out: dict[str, Any] = {}
    s = audit.calibration_slope
    if s is not None and s.defined:
        method = {"level": s.level, "method": "Wald (logistic maximum likelihood)"}
        out["calibration_slope"] = _metric(
            s.slope, {"low": s.slope_ci[0], "high": s.slope_ci[1], **method}
        )
        out["calibration_in_the_large"] = _metric(
            s.in_the_large, {"low": s.in_the_large_ci[0], "high": s.in_the_large_ci[1], **method}
        )
    d = audit.distinct
    if d is not None:
        out["smooth_ece"] = _metric(d.smooth.value)
        out["ks_calibration_error"] = _metric(d.cumulative.ks_error)
        for key, part in (("brier_mcb", d.corp.brier), ("log_loss_mcb", d.corp.log_loss)):
            out[key] = {**_metric(part.miscalibration), "decomposition": part.to_dict()}
    return out


def _metric(value: Any, interval: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"value": _number(value), "interval": None if interval is None else jsonable(interval)}


def _effective_wilson(rate: float, n_eff: float, level: float) -> dict[str, Any]:
    from ..measure.intervals import proportion_interval

    low, high = proportion_interval(
        np.array([rate * n_eff]), np.array([n_eff]), method="wilson", level=level
    )
    return {
        "low": float(low[0]),
        "high": float(high[0]),
        "level": level,
        "method": "wilson at Kish's effective size",
    }


def _wilson(k: int, n: int, level: float) -> dict[str, Any]:
    from ..measure.intervals import binomial_interval

    low, high = binomial_interval(k, n, method="wilson", level=level)
    return {"low": float(low), "high": float(high), "level": level, "method": "wilson"}
