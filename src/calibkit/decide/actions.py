"""Three actions from a confidence: act, ask the user a clarifying question, or escalate to a
person (Chow's reject option, Chow 1970, with a third, cheaper action). Two thresholds split
the confidence range into three regions; both are set from stated costs, exactly on data and in
closed form for a calibrated confidence."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .. import _display
from .. import _validate as v
from ._format import threshold_text
from ._inputs import decision_inputs
from .coverage import sorted_steps
from .thresholds import costs, without_weights

__all__ = ["ActionChoice", "ActionsEvaluation", "calibrated_actions", "choose_actions"]


def action_costs(
    *, l_wrong: Any, l_defer: Any, l_ask: Any, l_ask_wrong: Any, where: str
) -> tuple[float, float, float, float]:
    """The four costs, checked: acting wrongly and escalating positive with escalating cheaper
    (as for two actions), asking non-negative and at least as costly on a wrong prediction."""
    l_wrong, l_defer = costs(l_wrong=l_wrong, l_defer=l_defer, where=where)
    for name, value in (("l_ask", l_ask), ("l_ask_wrong", l_ask_wrong)):
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float, np.number))
            or not (math.isfinite(float(value)) and float(value) >= 0)
        ):
            raise v.InputError(f"{where}: {name} must be a finite number >= 0, got {value!r}.")
    l_ask, l_ask_wrong = float(l_ask), float(l_ask_wrong)
    if l_ask_wrong < l_ask:
        raise v.InputError(
            f"{where}: asking must cost at least as much when the prediction is wrong as when it "
            f"is right (l_ask_wrong >= l_ask), got l_ask = {l_ask:g} and l_ask_wrong = "
            f"{l_ask_wrong:g}; the three regions (escalate, ask, act as the confidence grows) "
            "rest on it. Swap the two if they were given the wrong way round."
        )
    return l_wrong, l_defer, l_ask, l_ask_wrong


def calibrated_actions(
    *, l_wrong: float, l_defer: float, l_ask: float, l_ask_wrong: float
) -> tuple[float, float]:
    """(act_threshold, ask_threshold) for a calibrated confidence, costs already checked.

    The expected cost of each action is linear in p: act ``(1 - p) l_wrong``, ask
    ``p l_ask + (1 - p) l_ask_wrong``, escalate ``l_defer``. The policy is the lower envelope of
    the three lines; its crossings are the thresholds. When the ask line is nowhere strictly
    lowest, both are Chow's ``1 - l_defer / l_wrong``. At a crossing the two actions cost the
    same and the higher one (act over ask over escalate) is taken.
    """
    chow = 1.0 - l_defer / l_wrong
    slope = l_ask_wrong - l_ask  # the ask line falls by this much from p = 0 to p = 1
    ask_at_chow = l_ask_wrong - slope * chow
    # ask - min(act, escalate) is convex with its kink at Chow's threshold and >= 0 at p = 1:
    # it is negative somewhere in [0, 1] iff it is at p = 0 or at the kink.
    if not (l_ask_wrong < l_defer or ask_at_chow < l_defer):
        return chow, chow
    act = (l_wrong - l_ask_wrong) / (l_wrong - slope)  # ask line = act line (slope < l_wrong)
    ask = max(0.0, (l_ask_wrong - l_defer) / slope) if slope > 0 else 0.0  # ask = escalate
    return act, ask


@dataclass(frozen=True)
class ActionChoice:
    """The pair of thresholds that minimised the cost per case on the data it was chosen on.

    Act when ``confidence >= act_threshold``, ask when ``ask_threshold <= confidence <
    act_threshold``, escalate below ``ask_threshold``. ``inf`` is "above every confidence"
    (both inf: escalate everything); ``ask_threshold == act_threshold`` means no case is asked.
    ``risk`` is the error rate among the acted-on cases (NaN when none is). The
    ``calibrated_*`` thresholds are the closed form for a calibrated confidence (the lower
    envelope of the three expected-cost lines) and ``calibrated_cost`` is their cost per case
    on these data; a gap between them and the empirical pair measures miscalibration where it
    matters. With sample weights the cost is per unit weight, the shares and the risk are
    weighted, the ``n_*`` counts stay raw and ``weight`` is the total weight (None when
    unweighted).
    """

    act_threshold: float
    ask_threshold: float
    cost: float
    share_acted: float
    share_asked: float
    share_escalated: float
    risk: float
    n_acted: int
    n_asked: int
    n_escalated: int
    n: int
    l_wrong: float
    l_defer: float
    l_ask: float
    l_ask_wrong: float
    calibrated_act_threshold: float
    calibrated_ask_threshold: float
    calibrated_cost: float
    weight: float | None = None

    @property
    def asking_pays(self) -> bool:
        """Whether a calibrated confidence would ever ask (the ask line is somewhere lowest)."""
        return self.calibrated_ask_threshold < self.calibrated_act_threshold

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = asdict(self)
        for key in ("act_threshold", "ask_threshold", "risk"):
            if not math.isfinite(d[key]):
                d[key] = None
        d["asking_pays"] = self.asking_pays
        return without_weights(d, self.weight)

    def evaluate(
        self,
        confidence: Any = None,
        outcome: Any = None,
        *,
        probs: Any = None,
        labels: Any = None,
        from_logits: bool = False,
        sample_weight: Any = None,
    ) -> ActionsEvaluation:
        """These thresholds and costs on other (held-out) data: cost per case, the share and
        number of cases acted on, asked and escalated, and the risk among the acted-on ones.
        Takes the inputs of :func:`choose_actions` (either form), and their weights
        (``sample_weight``: the cost per unit weight, the shares and the risk weighted).

        Examples
        --------
        >>> from calibkit.decide.actions import choose_actions
        >>> c = choose_actions([0.95, 0.9, 0.8, 0.7, 0.6], [1, 1, 0, 1, 0],
        ...                    l_wrong=9, l_defer=3, l_ask=1, l_ask_wrong=5)
        >>> e = c.evaluate([0.99, 0.75, 0.5], [0, 1, 1])
        >>> (e.n_acted, e.n_asked, e.n_escalated), e.cost
        ((1, 1, 1), 4.333333333333333)
        """
        conf, out = decision_inputs(
            confidence,
            outcome,
            probs=probs,
            labels=labels,
            from_logits=from_logits,
            where="ActionChoice.evaluate",
        )
        w = v.sample_weight(sample_weight, n=conf.shape[0], where="ActionChoice.evaluate")
        wrong = out == 0
        act = conf >= self.act_threshold
        ask = ~act & (conf >= self.ask_threshold)
        n, n_acted, n_asked = conf.size, int(np.count_nonzero(act)), int(np.count_nonzero(ask))
        n_wrong = int(np.count_nonzero(act & wrong))
        weighted: dict[str, float] = {}
        risk = n_wrong / n_acted if n_acted else math.nan
        if w is not None:
            acted_w = float(w[act].sum())
            weighted = {
                "weight_acted": acted_w,
                "weight_asked": float(w[ask].sum()),
                "weight_escalated": float(w[~act & ~ask].sum()),
            }
            risk = float(w[act & wrong].sum()) / acted_w if acted_w else math.nan
        return ActionsEvaluation(
            choice=self,
            n=n,
            cost=policy_cost(
                conf,
                out,
                self.act_threshold,
                self.ask_threshold,
                l_wrong=self.l_wrong,
                l_defer=self.l_defer,
                l_ask=self.l_ask,
                l_ask_wrong=self.l_ask_wrong,
                weight=w,
            ),
            n_acted=n_acted,
            n_asked=n_asked,
            n_escalated=n - n_acted - n_asked,
            risk=risk,
            **weighted,
        )

    def header(self) -> str:
        return (
            f"three actions on {self.n} predictions: cost {self.cost:.4f} per case "
            f"(act: 0 right, {self.l_wrong:g} wrong; ask: {self.l_ask:g} right, "
            f"{self.l_ask_wrong:g} wrong; escalate: {self.l_defer:g})"
        )

    def table_rows(self) -> list[tuple[str, str, str, str, str]]:
        """Cells of each action: action, confidence range, cases, share, risk (act only)."""
        t = threshold_text
        risk = "-" if math.isnan(self.risk) else f"{self.risk:.4f}"
        middle = (
            "none (empty)"
            if self.ask_threshold == self.act_threshold
            else f"[{t(self.ask_threshold)}, {t(self.act_threshold)})"
        )
        return [
            (
                "act",
                f">= {t(self.act_threshold)}",
                str(self.n_acted),
                f"{self.share_acted:.4f}",
                risk,
            ),
            ("ask", middle, str(self.n_asked), f"{self.share_asked:.4f}", ""),
            (
                "escalate",
                f"< {t(self.ask_threshold)}",
                str(self.n_escalated),
                f"{self.share_escalated:.4f}",
                "",
            ),
        ]

    def notes(self) -> list[str]:
        """The calibrated closed form and its cost on these data."""
        t = threshold_text
        if self.asking_pays:
            closed = (
                f"act >= {t(self.calibrated_act_threshold)}, ask >= "
                f"{t(self.calibrated_ask_threshold)}"
            )
        else:
            closed = (
                f"asking never pays (the ask line is never lowest): Chow's threshold "
                f"{t(self.calibrated_act_threshold)}"
            )
        return [
            f"calibrated closed form: {closed}; it costs {self.calibrated_cost:.4f} per case here"
        ]

    def _repr_html_(self) -> str:
        """What a notebook shows: the HTML report's section for this result."""
        return _display.html(self)

    def __str__(self) -> str:
        lines = [self.header(), f"{'action':<9} {'confidence':<22} {'cases':>8} {'share':>7}"]
        for action, conf, cases, share, risk in self.table_rows():
            tail = f"   risk {risk}" if risk else ""
            lines.append(f"{action:<9} {conf:<22} {cases:>8} {share:>7}{tail}")
        return "\n".join([*lines, *self.notes()])


@dataclass(frozen=True)
class ActionsEvaluation:
    """An :class:`ActionChoice` on other data than it was chosen on (see
    :meth:`ActionChoice.evaluate`): cost per case, cases acted on, asked and escalated, and
    the error rate among the acted-on ones (NaN when none is). With sample weights the cost
    is per unit weight, the shares and the risk weighted, and ``weight_acted``,
    ``weight_asked`` and ``weight_escalated`` the weights beside the raw counts (None when
    unweighted)."""

    choice: ActionChoice
    n: int
    cost: float
    n_acted: int
    n_asked: int
    n_escalated: int
    risk: float
    weight_acted: float | None = None
    weight_asked: float | None = None
    weight_escalated: float | None = None

    def _share(self, count: int, weight: float | None) -> float:
        if weight is None or self.weight_acted is None:
            return count / self.n
        total = self.weight_acted + (self.weight_asked or 0.0) + (self.weight_escalated or 0.0)
        return weight / total

    @property
    def share_acted(self) -> float:
        return self._share(self.n_acted, self.weight_acted)

    @property
    def share_asked(self) -> float:
        return self._share(self.n_asked, self.weight_asked)

    @property
    def share_escalated(self) -> float:
        return self._share(self.n_escalated, self.weight_escalated)

    def to_dict(self) -> dict[str, Any]:
        """The numbers of the held-out data (the choice has its own ``to_dict``)."""
        return {
            "n": self.n,
            "cost": self.cost,
            "share_acted": self.share_acted,
            "share_asked": self.share_asked,
            "share_escalated": self.share_escalated,
            "n_acted": self.n_acted,
            "n_asked": self.n_asked,
            "n_escalated": self.n_escalated,
            "risk": None if math.isnan(self.risk) else self.risk,
            **(
                {}
                if self.weight_acted is None
                else {
                    "weight_acted": self.weight_acted,
                    "weight_asked": self.weight_asked,
                    "weight_escalated": self.weight_escalated,
                }
            ),
        }

    def describe(self, on: str = "") -> str:
        """One line: "on <on>: cost ... per case; act ... (risk ...), ask ..., escalate ..."."""
        risk = "-" if math.isnan(self.risk) else f"{self.risk:.4f}"
        return (
            f"on {on or f'{self.n} held-out cases'}: cost {self.cost:.4f} per case; act "
            f"{self.share_acted:.4f} (risk {risk}), ask {self.share_asked:.4f}, escalate "
            f"{self.share_escalated:.4f}."
        )

    def _repr_html_(self) -> str:
        """What a notebook shows: the HTML report's section for this result."""
        return _display.html(self)

    def __str__(self) -> str:
        return f"{self.choice}\n{self.describe()}"


def policy_cost(
    confidence: np.ndarray,
    outcome: np.ndarray,
    act_threshold: float,
    ask_threshold: float,
    *,
    l_wrong: float,
    l_defer: float,
    l_ask: float,
    l_ask_wrong: float,
    weight: np.ndarray | None = None,
) -> float:
    """Cost per case (per unit weight when weighted) of the three-region policy on (checked)
    data."""
    wrong = outcome == 0
    act = confidence >= act_threshold
    ask = ~act & (confidence >= ask_threshold)
    if weight is not None:
        w = weight
        weighted = (
            l_wrong * w[act & wrong].sum()
            + l_ask * w[ask & ~wrong].sum()
            + l_ask_wrong * w[ask & wrong].sum()
            + l_defer * w[~act & ~ask].sum()
        )
        return float(weighted / w.sum())
    total = (
        l_wrong * np.count_nonzero(act & wrong)
        + l_ask * np.count_nonzero(ask & ~wrong)
        + l_ask_wrong * np.count_nonzero(ask & wrong)
        + l_defer * np.count_nonzero(~act & ~ask)
    )
    return float(total / confidence.size)


def choose_actions(
    confidence: Any = None,
    outcome: Any = None,
    *,
    l_wrong: float,
    l_defer: float,
    l_ask: float,
    l_ask_wrong: float,
    probs: Any = None,
    labels: Any = None,
    from_logits: bool = False,
    sample_weight: Any = None,
) -> ActionChoice:
    """The act / ask / escalate thresholds minimising the empirical cost per case.

    Acting costs 0 on a right prediction and ``l_wrong`` on a wrong one; asking the user a
    clarifying question costs ``l_ask`` and ``l_ask_wrong``; escalating to a person costs
    ``l_defer`` either way. Act when ``p >= act_threshold``, ask when ``ask_threshold <= p <
    act_threshold``, escalate when ``p < ask_threshold``. Costs: finite, ``0 < l_defer <
    l_wrong`` (as for two actions), ``0 <= l_ask <= l_ask_wrong``. Costs under which asking
    never pays are allowed: the ask region then comes out empty (or nearly so on noisy data)
    and :attr:`ActionChoice.asking_pays` is False.

    The search is exact over every pair of observed confidences (plus "above all"), equal
    confidences taking the same action. With the M distinct confidences in decreasing order and
    prefix sums ``P_act``, ``P_ask``, ``P_esc`` of each action's cost over the first k of them,
    acting on the first k, asking on the next j - k and escalating the rest costs
    ``[P_act(k) - P_ask(k)] + [P_ask(j) - P_esc(j)] + P_esc(M)``; a running minimum of the first
    bracket over k <= j finds the best pair in O(M) after one sort: O(N log N) in all for N
    predictions (a million take well under a second).

    Ties between equally cheap policies: the one that escalates fewest cases, then among those
    the one that acts on most (so with asking useless this is :func:`choose_threshold`'s
    choice). Report cost and shares on held-out data (:meth:`ActionChoice.evaluate`), not on
    the data the thresholds were chosen on. The calibrated closed form is returned alongside
    (see :class:`ActionChoice`).

    ``confidence`` is the confidence that each prediction is right and ``outcome`` whether it
    was (0/1). Instead, pass a model's class probabilities and labels as ``probs=``,
    ``labels=`` (1-D P(y = 1) of a binary model, or (N, C); logits with ``from_logits=True``):
    they are reduced to acting on the predicted class, as in :func:`choose_threshold`.

    ``sample_weight`` (finite, non-negative, one per row) makes the cost the expected cost
    per unit weight, the prefix sums sums of weighted costs, and the shares and risk weighted;
    with whole weights the choice is that on the data with each row repeated w times (a row
    of weight 0 left out). The counts ``n_*`` stay raw row counts.

    Examples
    --------
    Five predictions (0.95, 0.9, 0.8, 0.7, 0.6; the third and fifth wrong); a wrong action costs 9,
    escalating 3, asking 1 (5 when the prediction is wrong). Acting on 0.95 and 0.9 costs 0, asking
    on 0.8 (wrong) and 0.7 costs 5 + 1, escalating 0.6 costs 3: 9 / 5 = 1.8 per case. Escalating all
    three below 0.9 costs the same 9; the tie goes to the policy that escalates fewer. For a
    calibrated confidence the ask line ``5 - 4p`` meets the act line ``9 - 9p`` at 0.8 and the
    escalate line 3 at 0.5.


    >>> from calibkit.decide.actions import choose_actions
    >>> c = choose_actions([0.95, 0.9, 0.8, 0.7, 0.6], [1, 1, 0, 1, 0],
    ...                    l_wrong=9, l_defer=3, l_ask=1, l_ask_wrong=5)
    >>> c.act_threshold, c.ask_threshold, round(c.cost, 4), c.n_acted, c.n_asked, c.n_escalated
    (0.9, 0.7, 1.8, 2, 2, 1)
    >>> round(c.calibrated_act_threshold, 4), round(c.calibrated_ask_threshold, 4)
    (0.8, 0.5)
    """
    where = "choose_actions"
    l_wrong, l_defer, l_ask, l_ask_wrong = action_costs(
        l_wrong=l_wrong, l_defer=l_defer, l_ask=l_ask, l_ask_wrong=l_ask_wrong, where=where
    )
    conf, out = decision_inputs(
        confidence, outcome, probs=probs, labels=labels, from_logits=from_logits, where=where
    )
    w = v.sample_weight(sample_weight, n=conf.shape[0], where=where)
    steps = sorted_steps(conf, out, w)
    n, total_mass = steps.n, steps.total
    # cases (weight) in the first k groups
    acted = np.concatenate(([0], steps.mass_acted)).astype(np.float64)
    wrong = np.concatenate(([0], steps.mass_wrong)).astype(np.float64)
    right = acted - wrong
    p_act = l_wrong * wrong
    p_ask = l_ask * right + l_ask_wrong * wrong
    p_esc = l_defer * acted
    first = p_act - p_ask  # depends on k
    second = p_ask - p_esc  # depends on j
    running = np.minimum.accumulate(first)
    index = np.arange(first.size)
    # the largest k <= j attaining the running minimum (ties: act on more)
    best_k = np.maximum.accumulate(np.where(first == running, index, 0))
    total = running + second
    j = int(np.flatnonzero(total == total.min())[-1])  # ties: escalate fewer
    k = int(best_k[j])

    mass: float = n if w is None else total_mass  # what the cost and the shares divide by
    mass_acted: float
    mass_ask_upto: float
    if w is None:
        mass_acted, mass_ask_upto = int(acted[k]), int(acted[j])
        mass_wrong: float = int(wrong[k])
        n_acted, n_ask_upto = int(acted[k]), int(acted[j])
    else:
        mass_acted, mass_ask_upto = float(acted[k]), float(acted[j])
        mass_wrong = float(wrong[k])
        raw = np.concatenate(([0], steps.acted))
        n_acted, n_ask_upto = int(raw[k]), int(raw[j])
    cost = (
        l_wrong * mass_wrong
        + l_ask * (right[j] - right[k])
        + l_ask_wrong * (wrong[j] - wrong[k])
        + l_defer * (mass - mass_ask_upto)
    ) / mass
    four = {"l_wrong": l_wrong, "l_defer": l_defer, "l_ask": l_ask, "l_ask_wrong": l_ask_wrong}
    cal_act, cal_ask = calibrated_actions(**four)
    return ActionChoice(
        act_threshold=math.inf if k == 0 else float(steps.threshold[k - 1]),
        ask_threshold=math.inf if j == 0 else float(steps.threshold[j - 1]),
        cost=float(cost),
        share_acted=mass_acted / mass,
        share_asked=(mass_ask_upto - mass_acted) / mass,
        share_escalated=(mass - mass_ask_upto) / mass,
        risk=mass_wrong / mass_acted if mass_acted else math.nan,
        n_acted=n_acted,
        n_asked=n_ask_upto - n_acted,
        n_escalated=n - n_ask_upto,
        n=n,
        l_wrong=l_wrong,
        l_defer=l_defer,
        l_ask=l_ask,
        l_ask_wrong=l_ask_wrong,
        calibrated_act_threshold=cal_act,
        calibrated_ask_threshold=cal_ask,
        calibrated_cost=policy_cost(conf, out, cal_act, cal_ask, **four, weight=w),
        weight=None if w is None else mass,
    )
