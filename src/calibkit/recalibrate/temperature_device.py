"""Temperature scaling of PyTorch tensors on their own device: the objective's sums of each
Newton step (the NLL and its derivatives in beta = 1 / T, float64) are taken where the logits
are, and only those numbers reach the host. :meth:`calibkit.TemperatureScaling.fit` uses it
for logits given as a tensor without sample weights."""

from __future__ import annotations

from typing import Any, NamedTuple

from ..measure import temperature as tm
from ._inputs import sample_step, warn_extreme_rows
from .invariance import InvarianceReport, argmax_report, check_invariance

__all__ = ["DeviceFit", "fit_on_device"]


class DeviceFit(NamedTuple):
    """What a fit on the device found: the solver's solution, the classes (2 for binary
    scores) and the invariance report of the fitted temperature."""

    solution: tm.Solution
    n_classes: int
    invariance: InvarianceReport


def fit_on_device(scores: Any, labels: Any, *, check_logits: Any, where: str) -> DeviceFit | None:
    """Fit T to tensor logits on their device; ``None`` for input the host path reads
    instead (not a tensor, or rare input whose checks the host path words: logits that may be
    probabilities, binary labels of one value).

    Examples
    --------
    >>> import torch
    >>> z = torch.tensor([[3, 1, 0], [2.5, 1, 0], [3, 0.5, 0], [1.5, 2, 0], [0.5, 0, 1.5],
    ...                   [2, 2.2, 0]])
    >>> fit = fit_on_device(z, torch.tensor([0, 0, 1, 1, 2, 0]), check_logits=True, where="x")
    >>> round(1.0 / fit.solution.beta, 5), fit.n_classes, fit.invariance.ok
    (1.22975, 3, True)
    """
    from .. import _torch_kernels as tk

    z = tk.logits_on(scores, where=where)
    if z is None:
        return None
    n, n_classes = int(z.shape[0]), 2 if z.ndim == 1 else int(z.shape[1])
    y = tk.labels_on(labels, z.device, n=n, n_classes=n_classes, where=where)
    if y is None or not isinstance(check_logits, bool):
        return None
    if check_logits and bool((z.min() >= 0.0) & (z.max() <= 1.0)):
        return None  # they may be probabilities: the host path decides and says so
    if z.ndim == 1 and bool(y.min() == y.max()):
        return None  # one outcome only: the host path says so
    step = sample_step(n, n * (1 if z.ndim == 1 else int(z.shape[1])))
    spread, loss = tk.spread_and_loss(z[::step], y[::step])
    warn_extreme_rows(spread, loss, step=step, where=where)

    def objective(beta: float) -> tm.Objective:
        return tm.objective_of_sums(tk.temperature_sums(z, y, beta, origin=beta == 1.0), n, beta)

    solution = tm.solve_by(objective, lambda: tk.separable(z, y), where=where)
    return DeviceFit(solution, n_classes, _invariance(z, y, 1.0 / solution.beta))


def _invariance(z: Any, y: Any, temperature: float) -> InvarianceReport:
    """The report of :meth:`TemperatureScaling._check_invariance`: for (N, C) logits every
    argmax of z / T compared on the device; binary scores (whose order and AUC the report
    checks), or a row whose argmax moved, are checked on a host copy."""
    if z.ndim == 2:
        pred = z.argmax(dim=1)
        if not bool((pred != (z / temperature).argmax(dim=1)).any()):
            return argmax_report(z.shape[0], z.shape[1], correct=int((pred == y).sum()))
    host, labels = z.cpu().numpy(), y.cpu().numpy()
    return check_invariance(host, host / temperature, labels=labels, threshold=0.0)
