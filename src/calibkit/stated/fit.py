"""Repair stated confidence: fit a recalibration map per model on stated values and judge it,
BEFORE and AFTER, on questions the map never saw.

:func:`fit_stated` splits the table's distinct questions once (``test_size`` of them held out,
drawn with ``seed``), so no question is in both halves and every group is judged on the same
held-out questions. Each group (``by``, say one per model) gets its own map, fitted on its
answers to the fit questions, and the ledger of
:func:`calibkit.recalibrate.compare_calibration` on its answers to the held-out questions (ECE
with the noise floor of each side, NLL, Brier, accuracy, AUC). With ``transfer`` a map fitted
on one question set is judged on another.

**Coarse values.** Stated confidences are mostly multiples of 0.05 (Xiong et al. 2024). They
are ties, and every step keeps a tied value together: isotonic regression pools equal values
into one point before pool-adjacent-violators (so the map is constant on each stated value),
histogram binning and the ledger's ECE use equal-width bins, in which one value lies in one
bin (quantile edges, which collapse on coarse data, are not used). Maps that take the log-odds
(Platt, beta, temperature) cannot take a stated 0 or 1: they are refused, naming the group
and row, unless ``clip`` is given, which moves every value into [clip, 1 - clip] in fit and
predict alike, with a warning counting the rows (``clip=0.005``, half the finest step 0.01 of
stated values, keeps 1.0 above 0.99).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._errors import InputError
from ..recalibrate.ledger import CalibrationLedger, compare_calibration
from ..recalibrate.methods import make_calibrator
from .audit import _as_float, _column

__all__ = ["StatedFit", "StatedFits", "fit_stated"]

#: Methods for one number per answer (vector and matrix scaling need (N, C) scores).
METHODS = ("isotonic", "platt", "histogram", "beta", "temperature")


@dataclass(frozen=True, eq=False)
class StatedFit:
    """One group's map and its ledger. ``fitted_on`` / ``judged_on`` name the question sets
    (with ``transfer``) or ``"fit questions"`` / ``"held-out questions"``; ``within_floor``
    says whether the ECE after the map is at most the 95th percentile of its noise floor (the
    ECE a calibrated forecaster with the same confidences reaches 5% of the time)."""

    group: tuple[str, ...]
    fitted_on: str
    judged_on: str
    n_questions_fit: int
    n_questions_eval: int
    ledger: CalibrationLedger

    @property
    def calibrator(self) -> Any:
        return self.ledger.calibrator

    @property
    def ece_before(self) -> float:
        return float(self.ledger.before["ECE"])  # type: ignore[arg-type]

    @property
    def ece_after(self) -> float:
        return float(self.ledger.after["ECE"])  # type: ignore[arg-type]

    @property
    def within_floor_before(self) -> bool:
        return self.ece_before <= self.ledger.noise_floor_before.p95

    @property
    def within_floor(self) -> bool:
        return self.ece_after <= self.ledger.noise_floor_after.p95

    def to_dict(self) -> dict[str, Any]:
        return {
            "group": list(self.group),
            "fitted_on": self.fitted_on,
            "judged_on": self.judged_on,
            "n_questions_fit": self.n_questions_fit,
            "n_questions_eval": self.n_questions_eval,
            "ece_before": self.ece_before,
            "ece_after": self.ece_after,
            "noise_floor_before": self.ledger.noise_floor_before.to_dict(),
            "noise_floor_after": self.ledger.noise_floor_after.to_dict(),
            "within_floor_before": self.within_floor_before,
            "within_floor": self.within_floor,
            "ledger": self.ledger.to_dict(),
        }


@dataclass(frozen=True, eq=False)
class StatedFits:
    """The result of :func:`fit_stated`: one :class:`StatedFit` per group (and transfer pair)."""

    method: str
    by: tuple[str, ...]
    confidence: str
    correct: str
    question: tuple[str, ...]
    test_size: float
    seed: int
    n_bins: int
    n_missing: int
    fits: tuple[StatedFit, ...] = field(default=())

    def get(self, group: Sequence[str], fitted_on: str | None = None) -> StatedFit:
        """The fit of ``group`` (and, with transfer, of the set it was fitted on)."""
        key = tuple(str(g) for g in group)
        for f in self.fits:
            if f.group == key and fitted_on in (None, f.fitted_on):
                return f
        raise KeyError(key)

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "by": list(self.by),
            "confidence": self.confidence,
            "correct": self.correct,
            "question": list(self.question),
            "test_size": self.test_size,
            "seed": self.seed,
            "n_bins": self.n_bins,
            "n_missing": self.n_missing,
            "fits": [f.to_dict() for f in self.fits],
        }

    def __str__(self) -> str:
        head = ("group", "fitted on -> judged on", "N", "ECE before (p95)", "ECE after (p95)", "")
        table = [head]
        for f in self.fits:
            lb, la = f.ledger.noise_floor_before, f.ledger.noise_floor_after
            table.append(
                (
                    ", ".join(f.group) or "all rows",
                    f"{f.fitted_on} -> {f.judged_on}",
                    f"{f.ledger.n_fit}/{f.ledger.n_eval}",
                    f"{f.ece_before:.3f} ({lb.p95:.3f})",
                    f"{f.ece_after:.3f} ({la.p95:.3f})",
                    "within floor" if f.within_floor else "above floor",
                )
            )
        widths = [max(len(r[i]) for r in table) for i in range(len(head))]
        lines = [f"{self.method} maps of {self.confidence}, M = {self.n_bins} equal-width bins"]
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                  for r in table]  # fmt: skip
        return "\n".join(lines)


def fit_stated(
    table: Any,
    *,
    confidence: str = "stated_confidence",
    correct: str = "correct",
    by: Sequence[str] = ("llm",),
    question: str | Sequence[str] = "question_id",
    method: str = "isotonic",
    test_size: float = 0.3,
    seed: int = 0,
    transfer: Any = None,
    question_set: str = "qset",
    clip: float | None = None,
    min_questions: int = 20,
    n_bins: int = 15,
    n_sims: int = 1000,
) -> StatedFits:
    """Fit a map per group on stated confidences and judge it on held-out questions.

    Parameters
    ----------
    table : pyarrow Table, pandas DataFrame or mapping of column name to array
        One row per answer.
    confidence, correct : str
        The stated-confidence column (in [0, 1]) and the outcome column (0/1, bool).
    by : sequence of str
        Group columns; each group gets its own map (``()``: one map for all rows).
    question : str or sequence of str
        The column(s) that name a question. In the shipped data question ids repeat across
        question sets: pass ``("qset", "question_id")`` to tell them apart.
    method : {"isotonic", "platt", "histogram", "beta", "temperature"}
    test_size : float
        Share of the distinct questions held out (0 < test_size < 1).
    seed : int
        Seeds the question split and the noise floors.
    transfer : (str, str), sequence of such pairs, or "all", optional
        Fit on the answers of one question set (column ``question_set``) and judge on another's;
        "all" takes every ordered pair. No split is drawn: the sets hold different questions.
    clip : float, optional
        For the maps that take log-odds (platt, beta, temperature): move stated values into
        [clip, 1 - clip] first (values of exactly 0 or 1 are refused without it).
    min_questions : int
        A group needs at least this many questions on each side, or it is refused by name.
    n_bins, n_sims
        Equal-width bins of the ECE and simulations of its noise floor.

    Rows whose confidence or outcome is missing (null or NaN) are left out and counted
    (``n_missing``), as :func:`calibkit.stated.audit.audit_stated` does.

    Examples
    --------
    A model that states 0.9 on 200 questions and is right on 120: 30% of the questions (60)
    are held out. 86 of the 140 fit answers are right, so the isotonic map sends 0.9 to
    86/140 = 0.614; 34 of the 60 held-out answers are right (0.567), so the held-out ECE goes
    from |0.9 - 0.567| = 0.333 to |0.614 - 0.567| = 0.048.

    >>> from calibkit.stated.fit import fit_stated
    >>> n = 200
    >>> t = {"llm": ["m"] * n, "question_id": [str(i) for i in range(n)],
    ...      "stated_confidence": [0.9] * n, "correct": [1, 1, 1, 0, 0] * (n // 5)}
    >>> f = fit_stated(t, n_sims=50).get(["m"])
    >>> f.n_questions_fit, f.n_questions_eval
    (140, 60)
    >>> f.calibrator.predict_proba([0.9]).round(3).tolist(), round(f.ece_before, 3)
    ([0.614], 0.333)
    >>> round(f.ece_after, 3)
    0.048
    """
    where = "fit_stated"
    by = tuple(by)
    qcols = (question,) if isinstance(question, str) else tuple(question)
    if method not in METHODS:
        raise InputError(
            f"{where}: method {method!r} is not a map of one confidence per answer; choose one "
            f"of {', '.join(METHODS)}."
        )
    if not 0.0 < float(test_size) < 1.0:
        raise InputError(f"{where}: test_size must lie strictly between 0 and 1, got {test_size}.")
    conf = _as_float(_column(table, confidence, where), confidence, where)
    y = _as_float(_column(table, correct, where), correct, where)
    n = conf.size
    bad = ~np.isnan(conf) & ((conf < 0.0) | (conf > 1.0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"{where}: column {confidence!r} must lie in [0, 1]; {int(bad.sum())} values do not, "
            f"first at row {i}: {float(conf[i])!r}. If they are percentages, divide them by 100."
        )
    bad = ~np.isnan(y) & (y != 0.0) & (y != 1.0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{where}: column {correct!r} must hold 0/1; row {i} is {float(y[i])!r}.")
    keep = ~np.isnan(conf) & ~np.isnan(y)
    groups, group_keys = _keys(table, by, n, where)
    qkeys, question_keys = _keys(table, qcols, n, where)
    calibrator = _calibrator(method, clip, conf, keep, groups, group_keys, by, confidence, where)
    settings = {"n_bins": n_bins, "n_sims": n_sims, "seed": seed}
    fits: list[StatedFit] = []
    if transfer is None:
        # the distinct questions in sorted order of their values, permuted with seed
        distinct = np.array(sorted(np.unique(qkeys[keep]), key=question_keys.__getitem__))
        order = np.random.default_rng(seed).permutation(distinct.size)
        held = distinct[order[: round(float(test_size) * distinct.size)]]
        is_held = np.isin(qkeys, held)
        for code in np.unique(groups[keep]):
            key = group_keys[code]
            mine = keep & (groups == code)
            sides = (mine & ~is_held, mine & is_held)
            sides_named = ("fit questions", "held-out questions")
            fits.append(_one(calibrator, key, by, qkeys, conf, y, sides, where, settings,
                             min_questions, sides_named))  # fmt: skip
    else:
        if question_set in by:
            raise InputError(
                f"{where}: transfer fits on one {question_set!r} and judges on another, so "
                f"{question_set!r} cannot also be a group column (by={list(by)})."
            )
        sets, set_keys = _keys(table, (question_set,), n, where)
        names = [k[0] for k in set_keys]
        for a, b in _pairs(transfer, names, question_set, where):
            for code in np.unique(groups[keep]):
                key = group_keys[code]
                mine = keep & (groups == code)
                sides = (mine & (sets == names.index(a)), mine & (sets == names.index(b)))
                fits.append(_one(calibrator, key, by, qkeys, conf, y, sides, where, settings,
                                 min_questions, (a, b)))  # fmt: skip
    return StatedFits(
        method=method,
        by=by,
        confidence=confidence,
        correct=correct,
        question=qcols,
        test_size=float(test_size),
        seed=seed,
        n_bins=n_bins,
        n_missing=int(n - keep.sum()),
        fits=tuple(fits),
    )


def _keys(table: Any, columns: tuple[str, ...], n: int, where: str) -> tuple[np.ndarray, list]:
    """A code per row for the values of ``columns``, and the keys (tuples of strings) in order
    of first appearance."""
    cols = [_column(table, c, where).cast("string").to_pylist() for c in columns]
    for c, values in zip(columns, cols, strict=True):
        if len(values) != n:
            raise InputError(f"{where}: column {c!r} has {len(values)} rows, the table {n}.")
    index: dict[tuple[str, ...], int] = {}
    rows = zip(*cols, strict=True) if cols else iter([()] * n)
    codes = np.array(
        [index.setdefault(tuple("" if v is None else v for v in r), len(index)) for r in rows],
        dtype=np.int64,
    )
    return codes, list(index)


def _calibrator(
    method: str,
    clip: float | None,
    conf: np.ndarray,
    keep: np.ndarray,
    groups: np.ndarray,
    group_keys: list,
    by: tuple[str, ...],
    confidence: str,
    where: str,
) -> Any:
    calibrator = make_calibrator(method)
    params = calibrator.get_params()
    if "from_logits" in params:
        calibrator.set_params(from_logits=False)
    takes_logs = "clip" in params
    if clip is not None:
        if not takes_logs:
            raise InputError(
                f"{where}: clip moves values away from 0 and 1 before a map takes log-odds; "
                f"{method} uses stated values as they are (0 and 1 included). Leave out clip."
            )
        calibrator.set_params(clip=clip)
    elif takes_logs:
        ends = keep & ((conf == 0.0) | (conf == 1.0))
        if ends.any():
            i = int(np.flatnonzero(ends)[0])
            raise InputError(
                f"{where}: {method} takes the log-odds of {confidence!r}, infinite at 0 and 1; "
                f"{int(ends.sum())} rows state exactly 0 or 1, first at row {i} "
                f"({_name(by, group_keys[groups[i]])}: {float(conf[i])!r}). Pass clip=0.005 "
                "(--clip 0.005; half the finest step of stated values, and a warning counts the "
                "rows moved), or use isotonic or histogram, which take 0 and 1 as they are."
            )
    return calibrator


def _name(by: tuple[str, ...], key: tuple[str, ...]) -> str:
    return ", ".join(f"{c}={v!r}" for c, v in zip(by, key, strict=True)) or "all rows"


def _pairs(transfer: Any, names: list[str], column: str, where: str) -> list[tuple[str, str]]:
    key_names = names
    if isinstance(transfer, str) and transfer == "all":
        return [(a, b) for a in key_names for b in key_names if a != b]
    pairs = [tuple(transfer)] if isinstance(transfer[0], str) else [tuple(p) for p in transfer]
    for p in pairs:
        if len(p) != 2 or p[0] == p[1]:
            raise InputError(f"{where}: transfer pairs are (from, to) of two sets; got {p!r}.")
        for s in p:
            if s not in key_names:
                raise InputError(
                    f"{where}: transfer names {s!r}, which is not a value of column "
                    f"{column!r} (values: {', '.join(key_names)})."
                )
    return [(str(a), str(b)) for a, b in pairs]


def _one(
    calibrator: Any,
    key: tuple[str, ...],
    by: tuple[str, ...],
    qkeys: np.ndarray,
    conf: np.ndarray,
    y: np.ndarray,
    sides: tuple[np.ndarray, np.ndarray],
    where: str,
    settings: dict[str, Any],
    min_questions: int,
    names: tuple[str, str],
) -> StatedFit:
    fit_rows, eval_rows = sides
    counts = [len(set(qkeys[rows])) for rows in sides]
    for side, count in zip(names, counts, strict=True):
        if count < min_questions:
            raise InputError(
                f"{where}: group {_name(by, key)} has {count} questions in {side!r}; a map "
                f"needs at least {min_questions} on each side (min_questions). Drop the group "
                "or group more coarsely."
            )
    ledger = compare_calibration(
        calibrator,
        conf[fit_rows],
        y[fit_rows].astype(np.int64),
        from_logits=False,
        eval_scores=conf[eval_rows],
        eval_labels=y[eval_rows].astype(np.int64),
        **settings,
    )
    return StatedFit(tuple(key), str(names[0]), str(names[1]), counts[0], counts[1], ledger)
