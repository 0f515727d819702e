"""``CalibrationDisplay``: calibkit's reliability diagram in scikit-learn's display pattern
(``from_estimator`` / ``from_predictions`` compute, ``plot`` draws)."""

from __future__ import annotations

from typing import Any

from ..audit import Audit, audit
from ..report.figures import reliability_diagram
from .predictions import encoded_predictions

__all__ = ["CalibrationDisplay"]


class CalibrationDisplay:
    """The audit of predicted probabilities and its reliability diagram.

    Build it with :meth:`from_estimator` or :meth:`from_predictions`, which audit the
    predictions (:func:`calibkit.audit`: a binary problem on P(the second class), a
    multiclass one on the top label) and draw :func:`calibkit.reliability_diagram`.

    Attributes
    ----------
    audit_ : Audit
        The numbers drawn (ECE with its noise floor, the reliability table, Brier, ...).
    ax_, figure_ : matplotlib Axes and Figure
        The reliability diagram's axes (the counts histogram is a second axes under it)
        and figure, set by :meth:`plot`.
    name : str or None
        Shown in the title.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import calibkit as ck
    >>> d = ck.CalibrationDisplay.from_predictions([0, 1, 1, 0], [0.2, 0.9, 0.6, 0.4], n_bins=5)
    >>> d.audit_.n, round(d.audit_.ece, 2), d.ax_.figure is d.figure_
    (4, 0.28, True)
    """

    def __init__(self, audit: Audit, *, name: str | None = None) -> None:
        self.audit_ = audit
        self.name = name

    def plot(self, *, ax: Any = None, name: str | None = None, histogram: bool = True) -> Any:
        """Draw the reliability diagram on ``ax`` (a new figure when None); returns ``self``."""
        title = name if name is not None else self.name
        self.ax_ = reliability_diagram(self.audit_, ax=ax, title=title, histogram=histogram)
        self.figure_ = self.ax_.figure
        return self

    @classmethod
    def from_predictions(
        cls,
        y_true: Any,
        y_prob: Any,
        *,
        classes: Any = None,
        n_bins: int = 15,
        strategy: str = "uniform",
        sample_weight: Any = None,
        name: str | None = None,
        ax: Any = None,
        histogram: bool = True,
        seed: int = 0,
    ) -> CalibrationDisplay:
        """Audit and draw predicted probabilities.

        ``y_prob`` is (N, C) with columns in the order of ``classes`` (by default the sorted
        labels of ``y_true``), or 1-D P(the second class) of a binary problem.
        """
        where = "CalibrationDisplay.from_predictions"
        probs, labels = encoded_predictions(y_true, y_prob, classes=classes, where=where)
        result = audit(
            probs, labels, n_bins=n_bins, strategy=strategy, sample_weight=sample_weight, seed=seed
        )
        assert isinstance(result, Audit)
        return cls(result, name=name).plot(ax=ax, histogram=histogram)

    @classmethod
    def from_estimator(
        cls,
        estimator: Any,
        X: Any,
        y: Any,
        *,
        n_bins: int = 15,
        strategy: str = "uniform",
        sample_weight: Any = None,
        name: str | None = None,
        ax: Any = None,
        histogram: bool = True,
        seed: int = 0,
    ) -> CalibrationDisplay:
        """Audit and draw ``estimator.predict_proba(X)`` against ``y`` (columns follow
        ``estimator.classes_``); ``name`` defaults to the estimator's class name."""
        from .._errors import InputError

        if not hasattr(estimator, "predict_proba"):
            raise InputError(
                f"CalibrationDisplay.from_estimator: {type(estimator).__name__} has no "
                "predict_proba; wrap it in ck.CalibratedClassifier or use from_predictions."
            )
        return cls.from_predictions(
            y,
            estimator.predict_proba(X),
            classes=getattr(estimator, "classes_", None),
            n_bins=n_bins,
            strategy=strategy,
            sample_weight=sample_weight,
            name=type(estimator).__name__ if name is None else name,
            ax=ax,
            histogram=histogram,
            seed=seed,
        )
