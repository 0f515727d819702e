"""The one way a threshold is printed: enough digits that a threshold near 1 never reads as 1."""

from __future__ import annotations

import math

__all__ = ["threshold_text"]


def threshold_text(t: float, *, above: str = "above all") -> str:
    """A threshold as text, with enough digits to tell it from 1.

    Thresholds crowd near 1 on a saturated model: 0.9999997 printed with 4 significant digits
    is ``1``, which reads as "act only on a confidence of exactly 1". Below 0.999 a threshold
    has 4 significant digits; from there the digits grow so that its distance to 1 keeps two
    significant digits (``0.99984``, ``0.999987``), and from 1 - 1e-5 on that distance is
    written out (``1 - 3e-7``). ``inf`` (act on nothing) is ``above``; exactly 1 is ``1``.

    Examples
    --------
    >>> from calibkit.decide._format import threshold_text
    >>> threshold_text(0.9), threshold_text(0.99869), threshold_text(0.99984)
    ('0.9', '0.9987', '0.99984')
    >>> threshold_text(1 - 3e-7), threshold_text(1.0), threshold_text(1 / 21)
    ('1 - 3e-7', '1', '0.04762')
    >>> threshold_text(float("inf"))
    'above all'
    """
    t = float(t)
    if math.isinf(t) and t > 0:
        return above
    gap = 1.0 - t
    if 0.0 < gap < 1e-3:
        decimals = 1 - math.floor(math.log10(gap))  # two significant digits of the gap
        if decimals <= 6:
            return f"{t:.{decimals}f}"
        return "1 - " + f"{gap:.2g}".replace("e-0", "e-")
    return f"{t:.4g}"
