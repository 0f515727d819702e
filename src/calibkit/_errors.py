"""The exception and warning types every calibkit function raises."""

from __future__ import annotations

__all__ = ["CalibkitWarning", "InputError", "MissingExtraError", "NotFittedError"]


class InputError(ValueError):
    """User input calibkit cannot use.

    The message says what is wrong, where (first bad index and value) and how to fix it.
    It subclasses :class:`ValueError`, so ``except ValueError`` keeps working.
    """


class CalibkitWarning(UserWarning):
    """Input calibkit can use but that looks suspicious (for example a probability of exactly 0
    given to the true class, which makes the log loss infinite)."""


class NotFittedError(InputError, AttributeError):
    """A calibrator was used before ``fit`` (an :class:`InputError` and an AttributeError, like
    scikit-learn's)."""


class MissingExtraError(InputError, ImportError):
    """An optional dependency that a feature needs is not installed; the message names the
    extra of calibkit that installs it (``pip install 'calibkit[NAME]'``).

    It is an :class:`InputError` (the command line prints it as one line) and an
    :class:`ImportError` (``except ImportError`` keeps working).
    """
