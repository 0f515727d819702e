"""What every decide function reads: (confidence, outcome) pairs, given as they are or as a
model's class probabilities (or logits) and labels, reduced to acting on the predicted class.

Two forms, never confused:

* positional ``(confidence, outcome)``: the confidence that each prediction is right (1-D, in
  [0, 1]) and whether it was (0/1);
* keyword ``probs=..., labels=...``: 1-D P(y = 1) of a binary model, or (N, C) class
  probabilities (logits with ``from_logits=True``), and the class labels. The decision acts on
  the predicted class: its confidence and whether it was right (:func:`act_forecast`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate as v

__all__ = ["act_forecast", "decision_inputs", "validated"]

#: How to pass class probabilities instead, for the messages of the positional form.
PROBS_HINT = (
    "If they are class probabilities, pass probs=p, labels=y instead (on the command line: "
    "--probs COLUMN --label COLUMN): a 1-D P(y = 1) is read as the predicted class's confidence "
    "max(p, 1 - p), right when (p >= 0.5) == y; (N, C) probabilities top-label."
)


#: What to do when class labels were given as the outcome.
LABELS_HINT = (
    "If these are class labels 0..C-1, pass the class probabilities and the labels instead: "
    "probs=..., labels=...."
)


def validated(
    confidence: Any,
    outcome: Any,
    *,
    where: str,
    name: str = "confidence",
    outcome_name: str = "outcome",
    hint: str = LABELS_HINT,
) -> tuple[np.ndarray, np.ndarray]:
    """Confidences in [0, 1] (float64) and 0/1 outcomes, checked; ``hint`` says what to do
    when the outcome is not 0/1."""
    conf = v.confidence(confidence, where=where, name=name).astype(np.float64, copy=False)
    out = v.outcome(outcome, n=conf.shape[0], where=where, name=outcome_name, hint=hint)
    return conf, out.astype(np.int8, copy=False) if out.dtype.kind == "b" else out


def act_forecast(
    scores: Any, labels: Any, *, from_logits: bool = False, calibrator: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    """The (confidence, outcome) pairs of acting on the model's predicted class.

    2-D scores (N, C): top-label (the softmax of logits with ``from_logits``). 1-D binary scores
    (P(label = 1), or logits with ``from_logits``): the predicted class is 1 when P >= 0.5 (the
    score >= 0), its confidence max(P, 1 - P), computed on the logit scale as sigmoid(|s|) so
    that no two scores collapse into a tie. A fitted ``calibrator`` (logit scale) maps the
    scores first; the predicted classes are those of the raw scores.

    Examples
    --------
    >>> from calibkit.decide.policy import act_forecast
    >>> conf, right = act_forecast([0.9, 0.2, 0.6], [1, 1, 0])
    >>> conf.round(2).tolist(), right.tolist()
    ([0.9, 0.8, 0.6], [True, False, False])
    """
    return reduce_to_action(
        scores, labels, from_logits=from_logits, calibrator=calibrator, where="act_forecast"
    )


def reduce_to_action(
    scores: Any,
    labels: Any,
    *,
    from_logits: bool,
    where: str,
    calibrator: Any = None,
    names: tuple[str, str] = ("probs", "labels"),
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`act_forecast` with the caller's name (and argument names) in its messages."""
    from ..forecasts import reduce_top_label, sigmoid

    probs_name, labels_name = names
    x = v.to_numpy(scores, name=probs_name, where=where)
    if x.ndim == 2:
        if calibrator is not None:
            f = reduce_top_label(
                calibrator.predict_proba(x), labels, from_logits=False, where=where
            )
        else:
            f = reduce_top_label(x, labels, from_logits=from_logits, where=where)
        return f.confidence, f.outcome
    if x.ndim != 1:
        raise v.InputError(f"{where}: {probs_name} must be 1-D or 2-D, got shape {x.shape}.")
    y = v.labels(labels, n=x.shape[0], n_classes=2, where=where, name=labels_name)
    if from_logits:
        s = v.scores(x, where=where, ndim=1, name=probs_name).astype(np.float64, copy=False)
        pred = s >= 0
        a = np.abs(s)
        conf = calibrator.predict_proba(a) if calibrator is not None else sigmoid(a)
    else:
        if calibrator is not None:
            raise v.InputError(f"{where}: a calibrator needs logits (from_logits=True).")
        p = v.confidence(x, where=where, name=probs_name).astype(np.float64, copy=False)
        pred = p >= 0.5
        conf = np.where(pred, p, 1.0 - p)
    return np.asarray(conf, dtype=np.float64), pred == (y == 1)


def decision_inputs(
    confidence: Any,
    outcome: Any,
    *,
    probs: Any,
    labels: Any,
    from_logits: bool,
    where: str,
    names: tuple[str, str, str, str] = ("confidence", "outcome", "probs", "labels"),
    stacklevel: int = 2,
) -> tuple[np.ndarray, np.ndarray]:
    """The checked (confidence, outcome) of either form; the other form, both forms, neither, or
    half of one is an :class:`~calibkit.InputError` that says which arguments to pass.

    A 2-D array given as the confidence is refused with a pointer to ``probs=``; a positional
    confidence with at least 10% of its values below 0.05 warns that it looks like P(y = 1)
    (:func:`calibkit._validate.confidence_not_class_probability`). ``stacklevel`` counts from
    the public function that called this one (2: its caller).
    """
    conf_name, out_name, probs_name, labels_name = names
    positional = confidence is not None or outcome is not None
    keyword = probs is not None or labels is not None
    forms = (
        f"either ({conf_name}, {out_name}): the confidence that each prediction is right and "
        f"whether it was (0/1), or {probs_name}=..., {labels_name}=...: class probabilities "
        "(1-D P(y = 1) of a binary model, or (N, C)) and the class labels"
    )
    if positional and keyword:
        raise v.InputError(f"{where}: pass {forms}; not both.")
    if not positional and not keyword:
        raise v.InputError(f"{where}: nothing to decide on; pass {forms}.")
    if keyword:
        if probs is None or labels is None:
            missing = probs_name if probs is None else labels_name
            raise v.InputError(
                f"{where}: {probs_name}= and {labels_name}= go together; {missing}= is missing."
            )
        if not isinstance(from_logits, bool):
            raise v.InputError(f"{where}: from_logits must be True or False, got {from_logits!r}.")
        conf, right = reduce_to_action(
            probs,
            labels,
            from_logits=from_logits,
            where=where,
            names=(probs_name, labels_name),
        )
        return conf, right.astype(np.int8)
    if confidence is None or outcome is None:
        missing = conf_name if confidence is None else out_name
        raise v.InputError(
            f"{where}: {conf_name} and {out_name} go together; {missing} is missing."
        )
    if from_logits:
        raise v.InputError(
            f"{where}: from_logits=True reads {probs_name}= as logits; a confidence is a "
            f"probability already. Pass {probs_name}=logits, {labels_name}=y, from_logits=True."
        )
    given = v.to_numpy(confidence, name=conf_name, where=where)
    if given.ndim == 2:
        raise v.InputError(
            f"{where}: {conf_name} is 2-D (shape {given.shape}); a confidence is one number per "
            f"prediction. For class probabilities (N, C), pass {probs_name}=probs, "
            f"{labels_name}=labels (read top-label: the largest probability, right when its "
            "class is the label); for logits add from_logits=True."
        )
    conf, out = validated(given, outcome, where=where, name=conf_name, outcome_name=out_name)
    v.confidence_not_class_probability(
        conf, where=where, hint=PROBS_HINT, stacklevel=stacklevel + 1
    )
    return conf, out
