"""Which columns hold what, told from their names: the detection rules of :mod:`calibkit.io`
(label, probability, logit and confidence columns), and the expansion of names, comma lists
and globs given as options."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence

from .._errors import InputError
from ._sources import WHERE, Source, column_list

LABEL_NAMES = ("label", "labels", "y", "target", "true_label", "y_true")
PROB_GLOBS = ("prob_*", "p_*", "proba_*")
PROB_MATRICES = ("probs", "probabilities", "proba")
LOGIT_GLOBS = ("logit_*", "logits_*")
LOGIT_MATRICES = ("logits",)
CONFIDENCE_NAMES = ("confidence",)
CORRECT_NAMES = ("correct",)
PREDICTION_NAMES = ("prediction", "pred", "pred_label", "predicted", "predicted_label", "y_pred")

Names = str | Sequence[str]


def matches(src: Source, names: Sequence[str]) -> list[str]:
    """The columns named one of ``names``, without regard to case, in the source's order."""
    wanted = {n.lower() for n in names}
    return list(dict.fromkeys(n for n in src.names if n.lower() in wanted))


def glob(names: Sequence[str], pattern: str, *, case: bool = True) -> list[str]:
    """The ``names`` matching ``pattern``, numbered names in numeric order."""
    if case:
        hits = [n for n in names if fnmatch.fnmatchcase(n, pattern)]
    else:
        hits = [n for n in names if fnmatch.fnmatchcase(n.lower(), pattern.lower())]
    return numeric_order(list(dict.fromkeys(hits)))


def numeric_order(names: list[str]) -> list[str]:
    """Names that share a prefix and end in numbers go in numeric order; others keep file
    order."""
    parts = [re.fullmatch(r"(.*?)(\d+)", n) for n in names]
    if names and all(parts) and len({p.group(1) for p in parts if p}) == 1:
        return sorted(names, key=lambda n: int(re.fullmatch(r".*?(\d+)", n).group(1)))  # type: ignore[union-attr]
    return names


def detect_one(src: Source, names: Sequence[str], *, what: str, option: str) -> str:
    """The one column named one of ``names``; none or several is an InputError naming the
    option to pass."""
    hits = matches(src, names)
    if len(hits) == 1:
        return hits[0]
    cli = "--" + option.replace("_", "-")
    if not hits:
        raise InputError(
            f"{WHERE}: cannot tell which {src.kind_of_name} holds {what}: none is named "
            f"{', '.join(names)}; {src.kind_of_name}s: {column_list(src.names)}. Pass "
            f"{option}=NAME ({cli} NAME on the command line)."
        )
    raise InputError(
        f"{WHERE}: cannot tell which {src.kind_of_name} holds {what}: {', '.join(hits)} all "
        f"could. Pass {option}=NAME ({cli} NAME on the command line)."
    )


def detect_label(src: Source, *, required_for: str) -> str:
    return detect_one(
        src, LABEL_NAMES, what=f"the labels (needed with {required_for})", option="label"
    )


def detect_kind(src: Source) -> tuple[str, list[str]]:
    """Find the one family of score columns present: probabilities, logits or a confidence."""
    found: dict[str, list[list[str]]] = {"probs": [], "logits": [], "confidence": []}
    for kind, globs, matrices in (
        ("probs", PROB_GLOBS, PROB_MATRICES),
        ("logits", LOGIT_GLOBS, LOGIT_MATRICES),
    ):
        for pattern in globs:
            hits = glob(src.names, pattern, case=False)
            if hits:
                found[kind].append(hits)
        for name in matches(src, matrices):
            found[kind].append([name])
    for name in matches(src, CONFIDENCE_NAMES):
        found["confidence"].append([name])

    present = {k: groups for k, groups in found.items() if groups}
    if not present:
        raise InputError(
            f"{WHERE}: cannot find the model's scores in {src.shown_as}: no probability "
            f"columns ({', '.join(PROB_GLOBS + PROB_MATRICES)}), logit columns "
            f"({', '.join(LOGIT_GLOBS + LOGIT_MATRICES)}) or a column named "
            f"{' or '.join(CONFIDENCE_NAMES)}; "
            f"{src.kind_of_name}s: {column_list(src.names)}. Pass probs=, logits= or "
            f"confidence= (--probs, --logits, --confidence){candidates(src.names)}."
        )
    described = "; ".join(
        f"{kind}: " + " / ".join(short(g) for g in groups) for kind, groups in present.items()
    )
    if len(present) > 1:
        options = ", ".join(f"{k}= (--{k})" for k in present)
        raise InputError(
            f"{WHERE}: {src.shown_as} could hold more than one kind of score ({described}); "
            f"pass one of {options} to choose."
        )
    kind, groups = next(iter(present.items()))
    if len(groups) > 1:
        raise InputError(
            f"{WHERE}: {src.shown_as} has more than one group of {kind} {src.kind_of_name}s "
            f"({described}); pass {kind}= (--{kind}) with the names or a glob such as "
            f"'{groups[0][0].rsplit('_', 1)[0]}_*'."
        )
    return kind, groups[0]


def candidates(names: Sequence[str]) -> str:
    """Columns whose names suggest scores, as "; perhaps ...": a numbered family of columns as
    its glob ('score_*' (10 columns)), not a list cut short."""
    hits = [n for n in names if re.search("prob|logit|conf|score", n, re.IGNORECASE)]
    shown: list[str] = []
    families: dict[str, int] = {}
    for name in hits:
        numbered = re.fullmatch(r"(.*?\D)\d+", name)
        if numbered is not None:
            families[numbered.group(1)] = families.get(numbered.group(1), 0) + 1
    done: set[str] = set()
    for name in hits:
        numbered = re.fullmatch(r"(.*?\D)\d+", name)
        prefix = numbered.group(1) if numbered is not None else None
        if prefix is not None and families[prefix] > 1:
            if prefix not in done:
                done.add(prefix)
                shown.append(f"'{prefix}*' ({families[prefix]} columns)")
        else:
            shown.append(name)
    return f"; perhaps {', '.join(shown[:6])}" if shown else ""


def short(group: list[str]) -> str:
    return group[0] if len(group) == 1 else f"{group[0]} .. {group[-1]}"


def expand(src: Source, spec: Names, option: str) -> list[str]:
    """Column names from a list, a comma-separated string or globs, in the order given."""
    items = [s.strip() for s in spec.split(",")] if isinstance(spec, str) else list(spec)
    if not items or any(not isinstance(s, str) or not s for s in items):
        raise InputError(
            f"{WHERE}: {option}= needs column names, a comma-separated string or "
            f"a glob such as 'prob_*'; got {spec!r}."
        )
    names: list[str] = []
    for item in items:
        if any(ch in item for ch in "*?["):
            hits = glob(src.names, item)
            if not hits:
                raise InputError(
                    f"{WHERE}: no {src.kind_of_name} of {src.shown_as} matches {item!r} "
                    f"({option}=); {src.kind_of_name}s: {column_list(src.names)}."
                )
            names += hits
        else:
            src.require(item)
            names.append(item)
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise InputError(f"{WHERE}: {option}= names {', '.join(repeated)} more than once.")
    return names
