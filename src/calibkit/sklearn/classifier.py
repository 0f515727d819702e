"""``CalibratedClassifier``: a scikit-learn meta-estimator that fits a classifier and a calibkit
map on held-out scores, as ``sklearn.calibration.CalibratedClassifierCV`` does, with every
calibkit map and the BEFORE/AFTER ledger of the held-out rows."""

from __future__ import annotations

import numbers
import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.exceptions import NotFittedError as SklearnNotFittedError
from sklearn.model_selection import check_cv
from sklearn.utils import get_tags, indexable
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d, has_fit_parameter

from .. import _validate as v
from .._errors import CalibkitWarning, InputError, NotFittedError
from ..recalibrate.base import Calibrator
from ..recalibrate.ledger import CalibrationLedger, compare_calibration
from .predictions import encode_labels
from .responses import (
    as_class_probabilities,
    map_input,
    map_template,
    raw_response,
    reads_logits,
    response_method_of,
)

__all__ = ["CalibratedClassifier"]

WHERE = "CalibratedClassifier"
#: Folds of the ledger's cross-fit when ``cv="prefit"``.
PREFIT_LEDGER_FOLDS = 5


class CalibratedClassifier(ClassifierMixin, MetaEstimatorMixin, BaseEstimator):  # type: ignore[misc]
    """A classifier whose probabilities a calibkit map, fitted on held-out scores, calibrates.

    Parameters
    ----------
    estimator : classifier, default ``LinearSVC()``
        The classifier to calibrate (cloned, except with ``cv="prefit"``).
    method : str or calibkit calibrator, default "temperature"
        A calibkit map by name (temperature, platt, isotonic, histogram, beta, vector, matrix)
        or a calibrator instance, whose settings are copied (its ``from_logits`` and
        ``check_logits`` are set to match the response). Binary problems give the map 1-D
        scores; multiclass ones (N, C) scores, which platt, isotonic, histogram and beta
        calibrate one-vs-rest and renormalise (scikit-learn's convention; pass
        ``multiclass="top-label"`` on an instance for the top label), and temperature, vector
        and matrix scaling read as logits. Vector and matrix scaling read a binary margin ``s``
        as the logits ``[-s/2, s/2]`` (so they reduce to Platt scaling).
    cv : int, cross-validation splitter or "prefit", default 5
        An int or splitter (``sklearn.model_selection.check_cv``; stratified for an int): a
        clone of the estimator is fitted on each training part and scores its test part.
        ``"prefit"``: ``estimator`` is already fitted; only the map is fitted, on the data
        given to ``fit`` (which the estimator must not have been trained on).
    ensemble : bool, default False
        ``True``: keep one (estimator, map) pair per split, the map fitted on that split's
        test scores, and average their probabilities (scikit-learn's ``ensemble=True``).
        ``False``: fit one map on the out-of-fold scores of all rows (the test parts must
        partition the rows) and refit the estimator on all of them.
    response_method : {"auto", "decision_function", "predict_proba"}, default "auto"
        The estimator's score. ``"auto"`` takes ``decision_function`` when the estimator has
        it (margins and logits: temperature, platt, vector and matrix scaling want the logit
        scale), else ``predict_proba``, whose probabilities the logit maps read through their
        logs (``from_logits=False``; probabilities of exactly 0 or 1 are refused unless the
        map is given with ``clip=``, e.g. ``method=ck.TemperatureScaling(clip=1e-7)``).
        Histogram binning and beta calibration read ``sigmoid``/``softmax`` of margins; see
        :mod:`calibkit.sklearn.responses`.

    Attributes
    ----------
    classes_ : ndarray of shape (C,)
    n_features_in_ : int
        When the estimator has it.
    estimators_, calibrators_ : lists
        The fitted (estimator, map) pairs, one per split with ``ensemble=True``, else one.
    response_method_ : str
        The response used.
    ledger_ : CalibrationLedger
        BEFORE/AFTER on held-out rows, computed on first access (see :attr:`ledger_`).

    Examples
    --------
    >>> import numpy as np, calibkit as ck
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> X, y = make_classification(n_samples=400, random_state=0)
    >>> clf = ck.CalibratedClassifier(LogisticRegression(), method="platt").fit(X, y)
    >>> clf.response_method_, clf.predict_proba(X[:2]).sum(axis=1).round(12).tolist()
    ('decision_function', [1.0, 1.0])
    >>> clf.ledger_.design, clf.ledger_.n_eval
    ('cross-fit', 400)
    """

    def __init__(
        self,
        estimator: Any = None,
        *,
        method: Any = "temperature",
        cv: Any = 5,
        ensemble: bool = False,
        response_method: str = "auto",
    ) -> None:
        self.estimator = estimator
        self.method = method
        self.cv = cv
        self.ensemble = ensemble
        self.response_method = response_method

    # ------------------------------------------------------------------ fit
    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> CalibratedClassifier:
        """Fit the estimator (unless prefit) and the map on held-out scores.

        ``sample_weight`` goes to the estimator's ``fit`` when it takes one (with a
        :class:`~calibkit.CalibkitWarning` when it does not) and to the map's ``fit``.
        """
        where = f"{WHERE}.fit"
        check_classification_targets(y)
        X, y = indexable(X, y)
        y = column_or_1d(y, warn=True)
        if not isinstance(self.ensemble, (bool, np.bool_)):
            raise InputError(f"{where}: ensemble must be True or False, got {self.ensemble!r}.")
        if len(y) == 0:
            raise InputError(f"{where}: X and y have 0 rows; there is nothing to fit.")
        estimator = self._base_estimator()
        w = v.sample_weight(sample_weight, n=len(y), where=where)
        if w is not None and np.unique(y[w > 0]).size < 2:
            raise InputError(
                f"{where}: only one class has rows of positive sample_weight; a classifier "
                "needs at least 2 classes with weight to calibrate."
            )
        if w is not None and not has_fit_parameter(estimator, "sample_weight"):
            warnings.warn(
                f"{where}: {type(estimator).__name__}.fit takes no sample_weight, so the weights "
                "weigh the map's fit only.",
                CalibkitWarning,
                stacklevel=2,
            )
        if isinstance(self.cv, str) and self.cv == "prefit":
            self._fit_prefit(estimator, X, y, w, where=where)
        else:
            self._fit_cv(estimator, X, y, w, where=where)
        first = self.estimators_[0]
        if hasattr(first, "n_features_in_"):
            self.n_features_in_ = first.n_features_in_
        if hasattr(first, "feature_names_in_"):
            self.feature_names_in_ = first.feature_names_in_
        return self

    def _base_estimator(self) -> Any:
        if self.estimator is None:
            from sklearn.svm import LinearSVC

            return LinearSVC()
        return self.estimator

    def _start(self, estimator: Any, classes: np.ndarray, *, where: str) -> Calibrator:
        """Set ``classes_`` and ``response_method_``; the unfitted map template."""
        if classes.size < 2:
            raise InputError(
                f"{where}: y has only one class ({classes[0]!r}); a classifier needs at least "
                "2 classes to calibrate."
            )
        self.classes_ = classes
        self.response_method_ = response_method_of(estimator, self.response_method, where=where)
        return map_template(self.method, response=self.response_method_, where=where)

    def _fit_prefit(
        self, estimator: Any, X: Any, y: np.ndarray, w: np.ndarray | None, *, where: str
    ) -> None:
        try:
            check_is_fitted(estimator)
        except SklearnNotFittedError as exc:
            raise InputError(
                f"{where}: cv='prefit' wraps an estimator that is already fitted, but "
                f"{type(estimator).__name__} is not fitted; fit it first on data other than "
                "the calibration rows, or pass cv=5 to fit it here."
            ) from exc
        classes = np.asarray(estimator.classes_)
        template = self._start(estimator, classes, where=where)
        labels = encode_labels(y, classes, where=where)
        scores = self._scores(estimator, X, template, where=where)
        calibrator = self._fit_map(template, scores, labels, w, where=where)
        self.estimators_, self.calibrators_ = [estimator], [calibrator]
        self._held_out = (template, scores, labels, w, PREFIT_LEDGER_FOLDS)

    def _fit_cv(
        self, estimator: Any, X: Any, y: np.ndarray, w: np.ndarray | None, *, where: str
    ) -> None:
        classes, labels, counts = np.unique(y, return_inverse=True, return_counts=True)
        labels = labels.reshape(-1).astype(np.int64)
        template = self._start(estimator, classes, where=where)
        n_splits = self.cv if isinstance(self.cv, numbers.Integral) else None
        n_splits = getattr(self.cv, "n_splits", n_splits)
        if isinstance(n_splits, numbers.Integral) and counts.min() < n_splits:
            rare = classes[int(np.argmin(counts))].tolist()
            raise InputError(
                f"{where}: cv={_shown(self.cv)} asks for {n_splits} folds, but class {rare!r} "
                f"has only {int(counts.min())} rows, so some training part would lack it; use "
                f"at most {int(counts.min())} folds, or more rows of that class."
            )
        splitter = check_cv(self.cv, y, classifier=True)
        splits = list(splitter.split(X, y))
        tested = np.zeros(len(y), dtype=np.int64)
        for _, test in splits:
            tested[test] += 1
        if not self.ensemble and (tested != 1).any():  # before any fit
            raise InputError(
                f"{where}: ensemble=False fits one map on the out-of-fold scores of every "
                f"row, but the test parts of cv={_shown(self.cv)} cover "
                f"{int((tested == 1).sum())} of {len(y)} rows exactly once; use a splitter "
                "whose test parts partition the rows (an int, KFold, StratifiedKFold), or "
                "ensemble=True."
            )
        scores: np.ndarray | None = None
        done = np.zeros(len(y), dtype=bool)
        estimators, calibrators = [], []
        for k, (train, test) in enumerate(splits):
            fitted = self._fit_estimator(estimator, X, y, w, train, fold=k, where=where)
            part = self._scores(fitted, _take(X, test), template, where=where)
            if scores is None:
                scores = np.empty((len(y), *part.shape[1:]))
            new = ~done[test]  # a row tested twice keeps its first out-of-fold score
            scores[test[new]] = part[new]
            done[test[new]] = True
            if self.ensemble:
                estimators.append(fitted)
                wt = None if w is None else w[test]
                calibrators.append(self._fit_map(template, part, labels[test], wt, where=where))
        if scores is None:
            raise InputError(f"{where}: the cross-validation splitter gave no splits.")
        rows = np.flatnonzero(done)
        if not self.ensemble:
            calibrators = [self._fit_map(template, scores, labels, w, where=where)]
            estimators = [self._fit_estimator(estimator, X, y, w, None, fold=None, where=where)]
        self.estimators_, self.calibrators_ = estimators, calibrators
        held_w = None if w is None else w[rows]
        folds = max(2, min(len(splits), 10))
        self._held_out = (template, scores[rows], labels[rows], held_w, folds)

    def _fit_estimator(
        self,
        estimator: Any,
        X: Any,
        y: np.ndarray,
        w: np.ndarray | None,
        rows: np.ndarray | None,
        *,
        fold: int | None,
        where: str,
    ) -> Any:
        fitted = clone(estimator)
        Xr, yr = (X, y) if rows is None else (_take(X, rows), y[rows])
        kwargs: dict[str, Any] = {}
        if w is not None and has_fit_parameter(estimator, "sample_weight"):
            kwargs["sample_weight"] = w if rows is None else w[rows]
        fitted.fit(Xr, yr, **kwargs)
        seen = np.asarray(fitted.classes_)
        if not np.array_equal(seen, self.classes_):
            missing = [c for c in self.classes_.tolist() if c not in set(seen.tolist())]
            raise InputError(
                f"{where}: the estimator fitted on the training part of split {fold} saw classes "
                f"{seen.tolist()} but y has {self.classes_.tolist()} (missing: {missing}); use "
                "a stratified splitter, fewer folds, or more rows of those classes."
            )
        return fitted

    def _scores(self, estimator: Any, X: Any, template: Calibrator, *, where: str) -> np.ndarray:
        n_classes = int(self.classes_.size)
        raw = raw_response(estimator, X, self.response_method_, n_classes=n_classes, where=where)
        return map_input(
            raw, kind=template.kind, response=self.response_method_, n_classes=n_classes
        )

    def _fit_map(
        self,
        template: Calibrator,
        scores: np.ndarray,
        labels: np.ndarray,
        w: np.ndarray | None,
        *,
        where: str,
    ) -> Calibrator:
        calibrator = type(template)(**template.get_params())
        try:
            if w is None:
                return calibrator.fit(scores, labels)
            return calibrator.fit(scores, labels, sample_weight=w)
        except InputError as exc:
            raise InputError(self._context(exc, template, where=where)) from exc

    def _context(self, exc: Exception, template: Calibrator, *, where: str) -> str:
        hint = ""
        if "clip" in template.get_params() and "clip=" in str(exc):
            hint = (
                f" Here, pass the map as an instance: method={type(template).__name__}(clip=1e-7)."
            )
        elif template.kind == "temperature" and any(
            words in str(exc) for words in ("no finite", "without bound")
        ):
            hint = (
                " Here, method='platt' (its smoothed targets keep the fit finite) or "
                "method=TemperatureScaling(method='golden') (T searched in [0.05, 20]) fit."
            )
        return f"{where} ({self.response_method_} of the estimator): {exc}{hint}"

    # ------------------------------------------------------------------ predict
    def predict_proba(self, X: Any) -> np.ndarray:
        """Calibrated class probabilities (N, C), columns in the order of ``classes_``: the
        mean over the (estimator, map) pairs."""
        check_is_fitted(self)
        where = f"{WHERE}.predict_proba"
        total: np.ndarray | None = None
        for estimator, calibrator in zip(self.estimators_, self.calibrators_, strict=True):
            scores = self._scores(estimator, X, calibrator, where=where)
            try:
                p = as_class_probabilities(calibrator.predict_proba(scores))
            except InputError as exc:
                raise InputError(self._context(exc, calibrator, where=where)) from exc
            total = p if total is None else total + p
        assert total is not None
        return total / len(self.estimators_)

    def predict(self, X: Any) -> np.ndarray:
        """The class of largest calibrated probability."""
        p = self.predict_proba(X)
        return self.classes_[np.argmax(p, axis=1)]  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ the ledger
    @property
    def ledger_(self) -> CalibrationLedger:
        """BEFORE/AFTER on held-out rows, computed on first access.

        "Held out" twice over: each row's BEFORE score comes from an estimator that did not
        see the row (its out-of-fold score; with ``cv="prefit"``, the rows given to ``fit``,
        which the estimator must not have been trained on), and its AFTER probability from a
        map fitted on the other rows' scores, not on it: calibkit's cross-fit
        (:func:`calibkit.compare_calibration` with ``folds=``, stratified folds of seed 0,
        as many as the splits of ``cv``, at least 2 and at most 10; 5 with ``"prefit"``). The
        map kept in ``calibrators_`` is fitted on all those rows; the ledger estimates what
        such a map does to rows it never saw. BEFORE reads margins through the sigmoid
        (softmax), as the model's own probabilities. Rows that no test part held are left out.
        """
        if "_held_out" not in vars(self):
            raise NotFittedError(
                f"{WHERE}.ledger_: this classifier is not fitted yet; call fit(X, y) first."
            )
        cached = vars(self).get("_ledger")
        if cached is None:
            template, scores, labels, w, folds = self._held_out
            cached = compare_calibration(
                template,
                scores,
                labels,
                from_logits=reads_logits(template, self.response_method_),
                folds=folds,
                seed=0,
                check_logits=self.response_method_ != "decision_function",
                sample_weight=w,
            )
            self._ledger = cached
        return cached  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ scikit-learn
    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = get_tags(self._base_estimator()).input_tags.sparse
        return tags


def _shown(cv: Any) -> str:
    """``cv`` in a message: an int or a splitter as written, a list of splits by its length."""
    if isinstance(cv, (numbers.Integral, str)) or hasattr(cv, "split"):
        return repr(cv)
    return f"<{type(cv).__name__} of splits>"


def _take(X: Any, rows: np.ndarray) -> Any:
    """Rows of X by position: a DataFrame by ``iloc``, an array or sparse matrix by index, a
    list item by item."""
    if hasattr(X, "iloc"):
        return X.iloc[rows]
    if hasattr(X, "shape"):
        return X[rows]
    return [X[i] for i in rows]
