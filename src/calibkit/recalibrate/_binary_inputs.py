"""How the binary recalibration maps read their scores: 1-D, one-vs-rest (one column per class)
or top-label (the top class's confidence or log-odds, and the distribution of the others), in
the domain each map takes (see :data:`DOMAINS`). The multiclass modes are described in
:mod:`calibkit.recalibrate._binary_maps`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import _validate as v
from ._inputs import away_from_0_and_1

__all__ = ["DOMAINS", "Inputs", "read_inputs"]


#: How the four maps read their input. "scores": finite real scores (logits in top-label mode);
#: "logit": probabilities turned into their log-odds (0 and 1 under the ``clip`` policy of
#: :mod:`calibkit.recalibrate._inputs`); "probs": probabilities in [0, 1]; "real": finite real
#: scores in 1-D and one-vs-rest, probabilities in top-label mode.
DOMAINS = ("scores", "logit", "probs", "real")


@dataclass(frozen=True)
class Inputs:
    """Scores read and checked, as the maps see them.

    ``x`` is (N,) for 1-D input and for top-label mode, (N, C) for one-vs-rest. In top-label
    mode ``top`` is each row's predicted class and ``rest`` the distribution of the other
    classes (zero at ``top``, rows summing to 1).
    """

    ndim: int
    n_classes: int
    x: np.ndarray
    top: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.intp))
    rest: np.ndarray = field(default_factory=lambda: np.empty((0, 0)))


def read_inputs(
    raw: Any,
    *,
    domain: str,
    mode: str,
    where: str,
    clip: float | None = None,
    logs: bool = False,
    check_logits: bool = False,
) -> Inputs:
    """The scores as the maps see them. ``logs``: the map takes logs of the probabilities
    (domain "logit", or beta calibration's log p and log(1 - p)), so exact 0 and 1 follow the
    ``clip`` policy (:func:`~calibkit.recalibrate._inputs.away_from_0_and_1`).
    ``check_logits``: logits that look like probabilities are refused (fit)."""
    name = "probs" if domain in ("probs", "logit") else "scores"
    takes = "the log-odds" if domain == "logit" else "log p or log(1 - p)"
    # beta calibration has no from_logits: a model with logits goes to a map of logits
    instead = (
        "the model's logits with from_logits=True"
        if domain == "logit"
        else "the model's logits to a map that reads them (PlattScaling, TemperatureScaling)"
    )
    arr = v.float_array(raw, name=name, where=where, ndim=(1, 2))
    if arr.ndim == 1:
        if domain in ("probs", "logit"):
            p = v.confidence(arr, where=where, name=name).astype(np.float64, copy=False)
            if logs:
                p = away_from_0_and_1(
                    p, clip=clip, where=where, name=name, takes=takes, instead=instead
                )
            return Inputs(1, 2, _logit(p) if domain == "logit" else p)
        s = v.scores(arr, where=where, name=name, ndim=1).astype(np.float64, copy=False)
        if domain == "scores":
            v.logits_not_probabilities(s, where=where, name=name, check=check_logits)
        return Inputs(1, 2, s)
    n_classes = int(arr.shape[1])
    if mode == "ovr":
        if domain in ("probs", "logit"):
            p = v.probabilities(arr, where=where, name=name).astype(np.float64, copy=False)
            if logs:
                p = away_from_0_and_1(
                    p, clip=clip, where=where, name=name, takes=takes, instead=instead
                )
            return Inputs(2, n_classes, _logit(p) if domain == "logit" else p)
        s = v.scores(arr, where=where, name=name, ndim=2).astype(np.float64, copy=False)
        if domain == "scores":
            v.logits_not_probabilities(s, where=where, name=name, check=check_logits)
        return Inputs(2, n_classes, s)
    rows = np.arange(arr.shape[0])
    if domain == "scores":  # logits: the softmax, computed without forming 1 - p
        z = v.scores(arr, where=where, name="logits", ndim=2).astype(np.float64)
        v.logits_not_probabilities(z, where=where, check=check_logits)
        top = np.argmax(z, axis=1)
        best = z[rows, top]
        z[rows, top] = -np.inf
        runner = z.max(axis=1)
        e = np.exp(z - runner[:, None])  # the top entry is exp(-inf) = 0
        total = e.sum(axis=1)  # >= 1
        margin = (best - runner) - np.log(total)  # log(p_top / (1 - p_top))
        return Inputs(2, n_classes, margin, top, e / total[:, None])
    given = v.probabilities(arr, where=where, name="probs")
    probs = given.astype(np.float64)
    top = np.argmax(probs, axis=1)
    conf = probs[rows, top]
    probs[rows, top] = 0.0
    others = probs.sum(axis=1)
    empty = others == 0.0
    if logs:
        # the confidence is at least 1/C, so only a certain top class has an infinite log: for
        # the log-odds log(conf / others), a row whose other classes are all exactly 0
        given_conf = given[rows, top]
        infinite = empty if domain == "logit" else given_conf == 1.0
        moved = away_from_0_and_1(
            given_conf,
            clip=clip,
            where=where,
            name="probs",
            takes=f"{takes} of the top-label confidence",
            infinite=infinite,
            when="when it is 1 (every other class exactly 0)",
            instead=instead,
            columns=top,
        )
        if moved is not given_conf:
            changed = infinite | (moved != conf)
            conf = np.asarray(moved, dtype=np.float64)
            others = np.where(changed, 1.0 - conf, others)
    rest = np.divide(probs, others[:, None], out=probs, where=~empty[:, None])
    if empty.any():  # every other class has probability exactly 0: they share equally
        rest[empty] = 1.0 / (n_classes - 1)
        rest[rows[empty], top[empty]] = 0.0
    feature = np.log(conf) - np.log(others) if domain == "logit" else conf
    return Inputs(2, n_classes, feature, top, rest)


def _logit(p: np.ndarray) -> np.ndarray:
    """log(p / (1 - p)) of probabilities strictly inside (0, 1)."""
    return np.log(p) - np.log1p(-p)
