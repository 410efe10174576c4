"""How estimates become evidence, and how sure the verdict is (docs/scoring.md).

* **Materiality**: the cost contribution weighs the ratio *and* the dollars at stake:
  points = per_doubling x log2(ratio), capped, x m with m = D / (D + M), D the absolute
  difference and M = max(materiality_floor_usd, materiality_budget_fraction x budget).
  A $33 saving on a $21 job is almost no evidence; $33,000 a month is nearly full weight.
  Below ``tie_points`` the estimates call it a tie and the qualitative reasons decide.
* **Budget overruns scale**: a family whose closest configuration fails only on budget loses
  no_feasible_penalty x min(1, overrun / budget_overrun_for_full_penalty), not the full penalty.
* **Confidence**: the probability that the chosen family stays the best, over the estimator's
  low / expected / high scenarios for the best TPU and the best GPU (weights 1/6, 2/3, 1/6 each,
  a three-point triangular distribution), with the rules' score treated as uncertain by a
  normal spread of ``confidence_scale_points``: confidence = sum_s w_s x Phi(margin_s / sigma).
  It is halved when nothing is feasible. The scenario that moves the margin most is reported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from advisor.families import name

if TYPE_CHECKING:
    from advisor.constants import Constants
    from advisor.estimate.result import Estimate
    from advisor.models import Profile

SCENARIOS = (("low", 1.0 / 6.0), ("expected", 2.0 / 3.0), ("high", 1.0 / 6.0))


def materiality(a: float, b: float, profile: Profile, c: Constants) -> float:
    """How much of the ratio's weight a cost difference carries (0..1)."""
    sc = c.scoring
    diff = abs(a - b)
    ref = profile.goal.budget_usd or 0.0
    scale = max(sc.materiality_floor_usd.value, sc.materiality_budget_fraction.value * ref)
    return diff / (diff + scale) if diff > 0 else 0.0


def ratio_points(a: float, b: float, what: str, profile: Profile, c: Constants) -> float:
    """Signed points for the first family (value ``a``) against the second (``b``): > 0 favours the first."""
    if not (a > 0 and b > 0):
        return 0.0
    sc = c.scoring
    cap = sc.cost_points_max.value
    raw = max(-cap, min(cap, sc.cost_points_per_doubling.value * math.log2(b / a)))
    return raw * (materiality(a, b, profile, c) if what == "cost" else 1.0)


def compared(e: Estimate, what: str) -> float | None:
    if what == "time":
        return e.hours if e.mode == "training" else e.latency_ms
    return e.cost_usd


def spread(e: Estimate, what: str, scenario: str) -> float:
    """The factor a scenario applies to an estimate's compared value."""
    if scenario == "expected":
        return 1.0
    if what == "time":
        lo, hi, mid = (e.hours_low, e.hours_high, e.hours) if e.mode == "training" else (None, None, None)
    else:
        lo, hi, mid = e.cost_low, e.cost_high, e.cost_usd
    edge = lo if scenario == "low" else hi
    if not edge or not mid:
        return 1.0
    return edge / mid


def budget_penalty(e: Estimate | None, profile: Profile, c: Constants) -> float:
    """The no-feasible penalty, scaled by how far over budget when that is the only failure."""
    full = c.scoring.no_feasible_penalty.value
    budget = profile.goal.budget_usd
    if e is None or budget is None or e.within_budget is not False or e.cost_usd is None:
        return full
    others = (e.why_not or "").split("; ")
    if any(not r.startswith("costs $") for r in others if r):
        return full
    over = (e.cost_usd - budget) / budget
    return full * min(1.0, over / c.scoring.budget_overrun_for_full_penalty.value)


def _phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


@dataclass(frozen=True)
class Confidence:
    value: float
    sensitivity: str | None
    scenarios: tuple[tuple[str, float], ...] = ()  # (scenario, P(verdict holds) in %), for the report


def scenario_confidence(
    device: str, base: dict[str, float], live: list[str], quant: tuple[Estimate, Estimate, str] | None,
    feasible: bool, profile: Profile, c: Constants,
) -> Confidence:
    """``base``: each family's score without the estimate-ratio contribution; ``quant``: the best
    configurations of the two compared families (e.g. TPU and GPU) and what they are compared on
    (None: no ratio contribution)."""
    sigma = c.scoring.confidence_scale_points.value
    others = [d for d in live if d != device]
    if not others:
        return Confidence(0.95 if feasible else 0.475, None)

    def margin(ft: float, fg: float) -> float:
        scores = dict(base)
        if quant is not None:
            first, second, what = quant
            a, b = compared(first, what), compared(second, what)
            if a and b:
                pts = ratio_points(a * ft, b * fg, what, profile, c)
                scores[first.device if pts > 0 else second.device] += abs(pts)
        return scores[device] - max(scores[d] for d in others)

    total = 0.0
    swings: list[tuple[float, str]] = []
    for st, wt in SCENARIOS:
        for sg, wg in SCENARIOS:
            ft = spread(quant[0], quant[2], st) if quant else 1.0
            fg = spread(quant[1], quant[2], sg) if quant else 1.0
            total += wt * wg * _phi(margin(ft, fg) / sigma)
    points: list[tuple[str, float]] = []
    if quant is not None:
        mid = margin(1.0, 1.0)
        points.append(("expected", 100 * _phi(mid / sigma)))
        for i, est in enumerate(quant[:2]):
            assert not isinstance(est, str)
            fam = name(est.device)
            for sc in ("low", "high"):
                f = spread(est, quant[2], sc)
                m = margin(f, 1.0) if i == 0 else margin(1.0, f)
                points.append((f"{fam} {'optimistic' if sc == 'low' else 'pessimistic'}", 100 * _phi(m / sigma)))
                side = "optimistic: high utilisation" if sc == "low" else "pessimistic: low utilisation"
                swings.append((abs(m - mid), f"the {fam} estimate ({side}, {quant[2]} x{f:.2f}: margin {mid:+.1f} -> {m:+.1f} points)"))
    value = total if feasible else total * 0.5
    top = max(swings) if swings else None
    return Confidence(round(min(value, 0.99), 3), top[1] if top and top[0] >= 0.05 else None, tuple(points))


def order_confidence(first: Estimate, other: Estimate, what: str) -> float:
    """P(``first`` stays below ``other`` in ``what``, cost or time: cheaper, or faster) over the low / expected / high
    scenarios of each."""
    a, b = compared(first, what), compared(other, what)
    if not a or not b:
        return 0.5
    total = 0.0
    for sa, wa in SCENARIOS:
        for sb, wb in SCENARIOS:
            x, y = a * spread(first, what, sa), b * spread(other, what, sb)
            total += wa * wb * (1.0 if x < y else 0.5 if x == y else 0.0)
    return round(min(total, 0.99), 3)
