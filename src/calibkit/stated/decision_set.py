"""Decision sets: the items an elicitation asks, as JSON lines with ``id``, ``question``,
``options`` and ``label`` (more keys are kept). The shipped one (86 front-desk items, with the
written policy its labels follow) is :data:`SHIPPED`.

Every line is read by the one bounded JSON reader (:func:`calibkit._json.parse_json`), and a
line that cannot be used raises :class:`calibkit.InputError` naming the file, the line and the
fix, before anything is asked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._errors import InputError
from .._json import parse_json
from ._decision import _option_map

__all__ = ["SHIPPED", "read_decision_set"]

#: the decision set that ships with calibkit
SHIPPED = Path(__file__).parent / "data" / "decision_set.jsonl"

_KEYS = ("id", "question", "options", "label")


def _is_scalar(v: Any) -> bool:
    return isinstance(v, str | int | float) and not isinstance(v, bool)


def _item(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InputError(f"{where} is not a JSON object; each line needs {', '.join(_KEYS)}.")
    missing = [k for k in _KEYS if k not in value]
    if missing:
        raise InputError(
            f"{where} has no {', '.join(missing)}; each line needs id, question, options and label."
        )
    if not _is_scalar(value["id"]):
        raise InputError(f"{where}: id must be a string or a number, got {value['id']!r:.60}.")
    if not isinstance(value["question"], str):
        raise InputError(f"{where}: question must be a string.")
    options = value["options"]
    if not isinstance(options, list) or len(options) < 2 or not all(map(_is_scalar, options)):
        raise InputError(f"{where}: options must be a list of at least two strings.")
    try:
        _option_map(options)
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None
    if not _is_scalar(value["label"]) or str(value["label"]) not in map(str, options):
        raise InputError(f"{where}: label {value['label']!r:.60} is not one of its options.")
    return value


def read_decision_set(
    path: str | Path | None = None, *, where: str = "read_decision_set"
) -> list[dict[str, Any]]:
    """The items of a decision set (default: the shipped one), each a dict.

    Examples
    --------
    >>> from calibkit.stated.decision_set import read_decision_set
    >>> items = read_decision_set()
    >>> len(items), sorted(items[0])
    (86, ['id', 'label', 'options', 'question', 'why'])
    """
    file = SHIPPED if path is None else Path(path)
    try:
        text = file.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{where}: '{file}' is not UTF-8 text ({exc}).") from None
    except OSError as exc:
        raise InputError(f"{where}: cannot read '{file}': {exc.strerror or exc}.") from None
    items: list[dict[str, Any]] = []
    # JSON lines end at "\n" only: a U+2028 inside a string is not a line break
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        at = f"{where}: '{file}' line {number}"
        items.append(_item(parse_json(line, what=at), at))
    if not items:
        raise InputError(f"{where}: '{file}' holds no items.")
    seen: set[str] = set()
    for it in items:
        key = str(it["id"])
        if key in seen:
            raise InputError(f"{where}: '{file}' lists item {key!r} more than once.")
        seen.add(key)
    return items
