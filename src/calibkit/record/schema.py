"""The calibration record's JSON Schema and the checks a schema cannot say.

The layout is published as a JSON Schema (draft 2020-12), ``record.schema.json`` beside this
module (:func:`record_schema`). :func:`validate_record` checks a document against it with a
small validator of the keywords the schema uses (so reading a record needs no extra
dependency), then checks what a schema cannot say: one entry per bin in every per-bin array,
edges increasing from 0 to 1, counts adding up to ``data.n``, a fingerprint of ``data.n`` rows.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping
from importlib import resources
from typing import Any

from .._errors import InputError
from .._json import shown as _shown

__all__ = [
    "ANNOTATIONS",
    "FORMAT",
    "FORMAT_VERSION",
    "SUM_FIELDS",
    "SUPPORTED_KEYWORDS",
    "record_schema",
    "validate_record",
]

#: The ``format`` field of every calibration record.
FORMAT = "calibkit.calibration-record"
#: The layout version this calibkit writes and reads.
FORMAT_VERSION = 1
#: The per-bin sums a record keeps (:class:`calibkit.BinStats` without edges and closed).
SUM_FIELDS = ("sum_conf", "sum_outcome", "sum_conf_sq", "sum_conf_outcome", "sum_var_weight")


@functools.cache
def _schema_text() -> str:
    return resources.files("calibkit.record").joinpath("record.schema.json").read_text("utf-8")


def record_schema() -> dict[str, Any]:
    """The published JSON Schema (draft 2020-12) of a calibration record (a fresh copy)."""
    return json.loads(_schema_text())


def validate_record(record: Any, *, where: str = "validate_record") -> dict[str, Any]:
    """Check a record against the schema, then the things a schema cannot say (one entry per
    bin in every per-bin array, edges increasing from 0 to 1, counts adding up to N, a
    fingerprint of N rows, nothing but strict JSON values anywhere). Returns the record; raises
    :class:`calibkit.InputError` naming the first failing field.

    calibkit checks the schema with a small validator of the keywords the schema uses (so
    reading a record needs no extra dependency); the tests check the same documents with
    ``jsonschema``.
    """
    schema = _schema()
    problem = _check(record, schema, schema, ())
    if problem is None:
        problem = _check_consistent(record)
    if problem is not None:
        field, message = problem
        raise InputError(
            f"{where}: not a valid calibration record: {_field(field)} {message}"
            + _hint(record, field)
        )
    try:  # free settings (split, calibrator params and state) have no schema of their own
        json.dumps(dict(record), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InputError(
            f"{where}: not a valid calibration record: it holds a value strict JSON cannot ({exc})."
        ) from None
    return record


@functools.cache
def _schema() -> dict[str, Any]:
    return json.loads(_schema_text())


def _hint(record: Any, field: tuple[str | int, ...]) -> str:
    if field and field[0] in ("format", "format_version") and isinstance(record, Mapping):
        return f" (this calibkit reads {FORMAT} version {FORMAT_VERSION})."
    return "."


def _field(path: tuple[str | int, ...]) -> str:
    if not path:
        return "the document"
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


#: Keywords the validator below implements; the others it meets are annotations.
SUPPORTED_KEYWORDS = frozenset(
    {
        "$ref",
        "type",
        "enum",
        "const",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "minItems",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "pattern",
    }
)
ANNOTATIONS = frozenset({"$schema", "$id", "$defs", "title", "description"})

_JSON_TYPES = {
    "object": "an object",
    "array": "an array",
    "string": "text",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}


def _json_type(x: Any) -> str:
    if x is None:
        return "null"
    if isinstance(x, bool):
        return "boolean"
    if isinstance(x, int):
        return "integer"
    if isinstance(x, float):
        return "number"
    if isinstance(x, str):
        return "string"
    if isinstance(x, (list, tuple)):
        return "array"
    if isinstance(x, Mapping):
        return "object"
    return type(x).__name__


def _is_type(x: Any, name: str) -> bool:
    actual = _json_type(x)
    if name == "number":
        return actual in ("integer", "number")
    if name == "integer":
        return actual == "integer" or (actual == "number" and float(x).is_integer())
    return actual == name


Problem = tuple[tuple[str | int, ...], str]


def _check(
    x: Any, schema: Mapping[str, Any], root: Mapping[str, Any], path: tuple
) -> Problem | None:
    """The first way ``x`` breaks ``schema`` (the subset of draft 2020-12 in
    :data:`SUPPORTED_KEYWORDS`), as (path, message), or None."""
    if "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        problem = _check(x, target, root, path)
        if problem is not None:
            return problem
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is_type(x, t) for t in types):
            wanted = " or ".join(_JSON_TYPES[t] for t in types)
            return path, f"must be {wanted}, got {_shown(x)}"
    if "const" in schema and not _same(x, schema["const"]):
        return path, f"must be {_shown(schema['const'])}, got {_shown(x)}"
    if "enum" in schema and not any(_same(x, option) for option in schema["enum"]):
        options = ", ".join(_shown(o) for o in schema["enum"])
        return path, f"must be one of {options}; got {_shown(x)}"
    kind = _json_type(x)
    if kind == "number" and not math.isfinite(x):
        return path, f"must be a finite number (JSON has no NaN or infinity), got {_shown(x)}"
    if kind in ("integer", "number"):
        if "minimum" in schema and x < schema["minimum"]:
            return path, f"must be at least {schema['minimum']}, got {_shown(x)}"
        if "maximum" in schema and x > schema["maximum"]:
            return path, f"must be at most {schema['maximum']}, got {_shown(x)}"
        if "exclusiveMinimum" in schema and x <= schema["exclusiveMinimum"]:
            return path, f"must be above {schema['exclusiveMinimum']}, got {_shown(x)}"
        if "exclusiveMaximum" in schema and x >= schema["exclusiveMaximum"]:
            return path, f"must be below {schema['exclusiveMaximum']}, got {_shown(x)}"
    elif kind == "string":
        if len(x) < schema.get("minLength", 0):
            return path, "must not be empty"
        if "pattern" in schema and re.search(schema["pattern"], x) is None:
            return path, f"is malformed: {_shown(x)} does not match {schema['pattern']}"
    elif kind == "array":
        if len(x) < schema.get("minItems", 0):
            return path, f"must have at least {schema['minItems']} entries, got {len(x)}"
        if "items" in schema:
            for i, item in enumerate(x):
                problem = _check(item, schema["items"], root, (*path, i))
                if problem is not None:
                    return problem
    elif kind == "object":
        for name in schema.get("required", ()):
            if name not in x:
                return (*path, name), "is missing"
        properties = schema.get("properties", {})
        for name, value in x.items():
            if name in properties:
                problem = _check(value, properties[name], root, (*path, name))
                if problem is not None:
                    return problem
            elif schema.get("additionalProperties", True) is False:
                return (*path, name), "is not a field of a calibration record"
    return None


def _same(x: Any, y: Any) -> bool:
    """JSON equality: 1 == 1.0, but true is not 1."""
    if isinstance(x, bool) or isinstance(y, bool):
        return x is y
    return bool(x == y)


def _check_consistent(record: Mapping[str, Any]) -> Problem | None:
    binning, bins = record["binning"], record["bins"]
    edges, m = binning["edges"], binning["n_bins"]
    if len(edges) != m + 1:
        return ("binning", "edges"), f"must have n_bins + 1 = {m + 1} entries, got {len(edges)}"
    if edges[0] != 0 or edges[-1] != 1:
        return ("binning", "edges"), f"must run from 0 to 1, got {edges[0]} to {edges[-1]}"
    for i in range(1, len(edges)):
        # strictly increasing, except the one-value bins [0, 0] and [1, 1] of quantile edges
        if edges[i] < edges[i - 1] or (edges[i] == edges[i - 1] and edges[i] not in (0, 1)):
            return ("binning", "edges", i), f"must increase, got {edges[i - 1]} then {edges[i]}"
    for name in bins:
        if len(bins[name]) != m:
            return ("bins", name), f"must have one entry per bin ({m}), got {len(bins[name])}"
    n = record["data"]["n"]
    if sum(bins["count"]) != n:
        return ("bins", "count"), f"adds up to {sum(bins['count'])}, but data.n is {n}"
    fingerprint = record["data"]["fingerprint"]
    for name in ("scores", "labels") if fingerprint is not None else ():
        shape = fingerprint[name]["shape"]
        if not shape or shape[0] != n:
            rows = f"{shape[0]} rows" if shape else "a single value (shape [])"
            return (
                ("data", "fingerprint", name, "shape"),
                f"describes {rows}, but data.n is {n}: the fingerprint is not of the data this "
                "record counts",
            )
    return None
