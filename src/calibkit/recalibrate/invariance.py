"""What a recalibration map must not change, checked exactly (never with a tolerance).

A temperature never changes an argmax, so never the accuracy of a multiclass model; a strictly
increasing map of binary scores never changes their order, so never their AUC; a sign-preserving
map never changes a decision at the 0.5 threshold. :func:`check_invariance` verifies these on the
numbers a map actually produced (floating point included) and reports exactly what moved: how
many rows, and the first one. They are checked as exact equalities (``np.array_equal`` and
``==``), not within a tolerance.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .. import _validate as v
from .._errors import InputError
from ..measure.ranking import auc as auc_score

__all__ = ["InvarianceCheck", "InvarianceReport", "check_invariance"]


@dataclass(frozen=True)
class InvarianceCheck:
    """One property compared before and after a map.

    ``held`` is True when it did not move. For row-wise properties (argmax, order, decisions)
    ``changed`` counts the rows (sorted positions, for the order) that differ and ``first`` is the
    first of them; for scalar ones (accuracy, AUC) ``before`` and ``after`` are the values, and
    ``changed``/``first`` are None.
    """

    name: str
    what: str
    held: bool
    changed: int | None = None
    first: int | None = None
    before: float | None = None
    after: float | None = None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        """A short phrase: "unchanged", or what moved and where."""
        if self.before is not None and self.after is not None:
            values = f"{self.before:.6g} -> {self.after:.6g}"
            return f"unchanged ({values})" if self.held else f"MOVED: {values}"
        if self.held:
            return "unchanged"
        unit = "sorted positions" if self.name == "order" else "rows"
        where = "sorted position" if self.name == "order" else "row"
        return f"MOVED: {self.changed} {unit} differ, first at {where} {self.first}"

    def __str__(self) -> str:
        text = f"{self.name}: {self.describe()}"
        return f"{text} ({self.note})" if self.note else text


@dataclass(frozen=True)
class InvarianceReport:
    """The result of :func:`check_invariance`: one :class:`InvarianceCheck` per property.

    ``kind`` is ``"multiclass"`` for (N, C) input (checks: ``argmax``, and ``accuracy`` when
    labels were given) or ``"binary"`` for (N,) input (checks: ``order``, ``decisions`` at
    ``threshold``, and ``accuracy`` and ``auc`` when labels were given; ``auc`` only when both
    classes occur). ``ok`` is True when nothing moved.
    """

    kind: str
    n: int
    n_classes: int
    threshold: float | None
    checks: tuple[InvarianceCheck, ...]

    @property
    def ok(self) -> bool:
        return all(check.held for check in self.checks)

    @property
    def moved(self) -> tuple[str, ...]:
        """Names of the checks that did not hold."""
        return tuple(check.name for check in self.checks if not check.held)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(check.name for check in self.checks)

    def __getitem__(self, name: str) -> InvarianceCheck:
        for check in self.checks:
            if check.name == name:
                return check
        raise KeyError(f"no check {name!r}; this report has {', '.join(self.names)}")

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "n": self.n,
            "n_classes": self.n_classes,
            "threshold": self.threshold,
            "ok": self.ok,
            "moved": list(self.moved),
            "checks": [check.to_dict() for check in self.checks],
        }

    def __str__(self) -> str:
        what = (
            f"{self.n} rows of {self.n_classes}-class probabilities"
            if self.kind == "multiclass"
            else f"{self.n} binary forecasts"
        )
        verdict = "nothing moved" if self.ok else f"moved: {', '.join(self.moved)}"
        lines = [f"invariance check on {what}: {verdict}"]
        width = max(len(check.name) for check in self.checks)
        for check in self.checks:
            line = f"  {check.name:<{width}}  {check.what}: {check.describe()}"
            lines.append(f"{line} ({check.note})" if check.note else line)
        return "\n".join(lines)


def check_invariance(
    before: Any,
    after: Any,
    *,
    labels: Any = None,
    threshold: float = 0.5,
    sample_weight: Any = None,
) -> InvarianceReport:
    """Check exactly what a recalibration map changed.

    Parameters
    ----------
    before, after : array of shape (N, C) or (N,)
        The same rows' probabilities (or scores) before and after the map, same shape.
        (N, C): is every row's argmax the same? (N,): is the full order the same
        (``np.argsort(kind="stable")``), and every decision ``x >= threshold``?
    labels : array of shape (N,), optional
        Class indices 0..C-1 ((N, C) input) or 0/1 ((N,) input). Adds the accuracy (argmax, or
        ``x >= threshold`` predicts 1) and, for (N,) input with both classes present, the AUC.
    threshold : float
        The decision threshold of (N,) input: 0.5 for probabilities, 0 for logits. Compare like
        with like: both arrays must be on the scale the threshold is meant for.
    sample_weight : array of shape (N,), optional
        Weights of the rows (with ``labels``): the accuracy and the AUC are then weighted
        (:func:`calibkit.accuracy`, :func:`calibkit.auc`); the row-wise checks still count
        rows, every row of any weight, since a map must keep them all.

    Returns
    -------
    InvarianceReport
        ``.ok`` is True when nothing moved; ``.moved`` names what did, and each check says how
        many rows changed and the first one. Comparisons are exact (``np.array_equal``, ``==``):
        a theorem that fails in floating point (ties created by saturation, say) is reported.

    Examples
    --------
    A temperature keeps every argmax; swapping two columns does not.

    >>> import numpy as np, calibkit as ck
    >>> from calibkit.recalibrate.invariance import check_invariance
    >>> z = np.array([[2.0, 1.0, 0.0], [0.0, 3.0, 1.0], [1.0, 0.0, 0.5]])
    >>> check_invariance(ck.softmax(z), ck.softmax(z / 2.5), labels=[0, 1, 2]).ok
    True
    >>> report = check_invariance(ck.softmax(z), ck.softmax(z[:, [1, 0, 2]]))
    >>> report.moved, report["argmax"].changed, report["argmax"].first
    (('argmax',), 3, 0)

    Binary: sigma(s / T) keeps the order and every decision at 0.5.

    >>> s = np.array([-2.0, 0.5, 3.0, -0.1]); y = [0, 1, 1, 1]
    >>> check_invariance(ck.sigmoid(s), ck.sigmoid(s / 3.0), labels=y).moved
    ()
    """
    where = "check_invariance"
    b = v.scores(before, where=where, name="before", ndim=(1, 2))
    a = v.scores(after, where=where, name="after", ndim=(1, 2))
    if a.shape != b.shape:
        raise InputError(
            f"{where}: before has shape {b.shape} but after has shape {a.shape}; pass the same "
            "rows before and after the map (a binary map's (N,) output against (N,) input)."
        )
    if not isinstance(threshold, (int, float, np.floating)) or not np.isfinite(threshold):
        raise InputError(f"{where}: threshold must be a finite number, got {threshold!r}.")
    n = int(b.shape[0])
    n_classes = 2 if b.ndim == 1 else int(b.shape[1])
    y = None if labels is None else v.labels(labels, n=n, n_classes=n_classes, where=where)
    w = v.sample_weight(sample_weight, n=n, where=where)
    if w is not None and y is None:
        raise InputError(
            f"{where}: sample_weight weighs the accuracy and the AUC, which need labels; pass "
            "labels= too, or leave out sample_weight."
        )
    if b.ndim == 2:
        return _multiclass(b, a, y, n_classes, w)
    return _binary(b, a, y, float(threshold), w)


def _share(right: np.ndarray, w: np.ndarray | None) -> float:
    """The (weighted) share of True in ``right``."""
    if w is None:
        return float(np.mean(right))
    return float(np.sum(w[right]) / np.sum(w))


def _changed(mask: np.ndarray) -> tuple[int, int | None]:
    count = int(np.count_nonzero(mask))
    return count, (int(np.argmax(mask)) if count else None)


def _multiclass(
    b: np.ndarray, a: np.ndarray, y: np.ndarray | None, n_classes: int, w: np.ndarray | None
) -> InvarianceReport:
    pred_b, pred_a = b.argmax(axis=1), a.argmax(axis=1)
    count, first = _changed(pred_b != pred_a)
    accuracy = None
    if y is not None:
        accuracy = (_share(pred_b == y, w), _share(pred_a == y, w))
    return _argmax_checks(int(b.shape[0]), n_classes, count, first, accuracy)


def argmax_report(n: int, n_classes: int, *, correct: int) -> InvarianceReport:
    """The report of a map that moved no row's argmax, ``correct`` rows of ``n`` predicting
    their label (what a pass that checked every row as it went found)."""
    accuracy = float(np.float64(correct) / n)
    return _argmax_checks(n, n_classes, 0, None, (accuracy, accuracy))


def _argmax_checks(
    n: int, n_classes: int, count: int, first: int | None, accuracy: tuple[float, float] | None
) -> InvarianceReport:
    checks = [InvarianceCheck("argmax", "predicted class of each row", count == 0, count, first)]
    if accuracy is not None:
        acc_b, acc_a = accuracy
        checks.append(
            InvarianceCheck(
                "accuracy",
                "share of rows whose argmax is the label",
                acc_b == acc_a,
                before=acc_b,
                after=acc_a,
            )
        )
    return InvarianceReport("multiclass", n, n_classes, None, tuple(checks))


def _binary(
    b: np.ndarray, a: np.ndarray, y: np.ndarray | None, threshold: float, w: np.ndarray | None
) -> InvarianceReport:
    order_b = np.argsort(b, kind="stable")
    order_a = np.argsort(a, kind="stable")
    same_order = np.array_equal(order_b, order_a)
    count, first = _changed(order_b != order_a)
    note = ""
    if not same_order:
        distinct_b = int(np.count_nonzero(np.diff(b[order_b]))) + 1
        distinct_a = int(np.count_nonzero(np.diff(a[order_a]))) + 1
        if distinct_b != distinct_a:
            note = (
                f"{distinct_b} distinct values before, {distinct_a} after: the map "
                f"{'tied' if distinct_a < distinct_b else 'separated'} equal-ranked values "
                "(a flat step, or rounding at 0 or 1)"
            )
    checks = [
        InvarianceCheck(
            "order", "full sorted order (stable argsort)", same_order, count, first, note=note
        )
    ]
    dec_b, dec_a = b >= threshold, a >= threshold
    count, first = _changed(dec_b != dec_a)
    checks.append(
        InvarianceCheck(
            "decisions",
            f"x >= {threshold:g} of each row",
            np.array_equal(dec_b, dec_a),
            count,
            first,
        )
    )
    if y is not None:
        positive = y == 1
        acc_b, acc_a = _share(dec_b == positive, w), _share(dec_a == positive, w)
        checks.append(
            InvarianceCheck(
                "accuracy",
                f"share of decisions at {threshold:g} that are right",
                acc_b == acc_a,
                before=acc_b,
                after=acc_a,
            )
        )
        counted = positive if w is None else positive[w > 0]
        if counted.any() and not counted.all():
            auc_b, auc_a = auc_score(b, y, sample_weight=w), auc_score(a, y, sample_weight=w)
            checks.append(
                InvarianceCheck(
                    "auc",
                    "pairwise ranking of positives above negatives",
                    auc_b == auc_a,
                    before=auc_b,
                    after=auc_a,
                )
            )
    return InvarianceReport("binary", int(b.shape[0]), 2, threshold, tuple(checks))
