"""From a profile to a verdict: exclusions, scores, estimates, setup path, flip.

1. Every rule whose condition holds either adds points to a device family or
   excludes families (hard constraints).
2. The estimator prices every catalog accelerator at its real shapes; the
   cost (or time) ratio of the best TPU and the best GPU becomes a scored,
   explained contribution, and a family with nothing feasible is penalised.
3. The verdict is the best-scoring family that is not excluded, its best
   configuration, the highest-priority setup path whose condition holds, and
   a confidence from the score margin.
4. ``flip`` re-runs the decision on single changes to the profile and keeps
   the smallest that change the verdict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from advisor import __version__, capacity, families, trust, whatif
from advisor.catalog import Catalog
from advisor.conditions import evaluate
from advisor.constants import Constants
from advisor.estimate.result import Estimate, rebudgeted
from advisor.estimate.search import all_candidates, basis, best, repriced_keep
from advisor.facts import FieldReader
from advisor.fmt import hours, money
from advisor.knowledge import KnowledgeBase, Rule
from advisor.models import Profile
from advisor.setuppath import SetupPlan, choose_setup, placeholders, plan, setup_cloud

ESTIMATOR_SOURCE = "docs/estimator.md"  # the estimator and scoring policy, shipped with the project


@dataclass(frozen=True)
class Contribution:
    rule: str
    device: str
    points: float
    reason: str
    sources: tuple[str, ...]
    title: str = ""
    fix: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "device": self.device,
            "points": round(self.points, 2),
            "title": self.title,
            "reason": self.reason,
            "source": self.sources[0] if self.sources else None,
            "sources": list(self.sources),
            "fix": self.fix,
        }


@dataclass(frozen=True)
class Exclusion:
    device: str
    rule: str
    reason: str
    sources: tuple[str, ...]
    fix: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "rule": self.rule,
            "reason": self.reason,
            "source": self.sources[0] if self.sources else None,
            "fix": self.fix,
        }


@dataclass
class Decision:
    """The scoring part of a recommendation (cheap to recompute for ``flip``)."""

    device: str
    scores: dict[str, float]
    contributions: list[Contribution]
    excluded: list[Exclusion]
    margin: float
    chosen: Estimate | None
    best_by_device: dict[str, Estimate | None]
    feasible: bool = True  # False: nothing meets the constraints; ``chosen`` is the closest
    confidence: float = 0.5  # P(the chosen family stays the best) under the estimator's scenarios
    sensitivity: str | None = None  # the assumption the verdict is most sensitive to
    scenarios: tuple[tuple[str, float], ...] = ()  # (estimate scenario, P(verdict holds) %)


@dataclass
class Recommendation:
    label: str
    profile: Profile
    decision: Decision
    confidence: float
    candidates: list[Estimate]
    setup: SetupPlan | None
    flip: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    catalog_as_of: str = ""
    table: list[Estimate] = field(default_factory=list)  # one row per accelerator

    @property
    def device(self) -> str:
        return self.decision.device

    @property
    def device_name(self) -> str:
        """The verdict's family as shown to users (``TPU``)."""
        return families.name(self.device)

    @property
    def estimate(self) -> Estimate | None:
        return self.decision.chosen

    def to_json(self) -> dict[str, Any]:
        d = self.decision
        est = d.chosen
        return {
            "profile": self.label,
            "name": self.profile.name,
            "task": self.profile.task,
            "verdict": {
                "device": d.device,
                "accelerator": est.accelerator if est else None,
                "count": est.count if est else None,
                "shape": est.shape if est else None,
                "feasible": d.feasible,
                "confidence": round(self.confidence, 3),
                "confidence_method": "P(the chosen family stays the best) over the estimator's low/expected/high scenarios, rules' score "
                                     "spread 10 points (docs/scoring.md)",
                "sensitive_to": d.sensitivity,
                "setup_path": self.setup.path.id if self.setup else None,
                "cloud": est.price_cloud if est else None,
                "region": est.region if est else None,
                "zone": est.zone if est else None,
                "procurement": est.procurement if est else None,
            },
            "scores": {k: round(v, 2) for k, v in d.scores.items()},
            "estimate": est.to_json() if est else None,
            "best_by_device": {k: (v.to_json() if v else None) for k, v in d.best_by_device.items()},
            # one row per accelerator: its best configuration by the objective, else its closest to feasible
            "candidates": [c.to_json() for c in self.table],
            "configurations_evaluated": len(self.candidates),
            "contributions": [c.to_json() for c in d.contributions],
            "excluded": [x.to_json() for x in d.excluded],
            "setup": self.setup.to_json() if self.setup else None,
            "flip": list(self.flip),
            "warnings": list(self.warnings),
            "catalog_as_of": self.catalog_as_of,
            "advisor_version": __version__,
        }


# --------------------------------------------------------------------------- scoring


def _fired(rules: list[Rule], profile: Profile) -> list[Rule]:
    reader = FieldReader(profile)
    return [r for r in rules if evaluate(r.when, reader)]


def describe(e: Estimate) -> str:
    """``tpu-v6e x 8 finishes in 31 h for $2,100``-style summary of a configuration."""
    head = f"{e.accelerator} x {e.count}"
    if e.mode == "training":
        return f"{head} takes {hours(e.hours)} for {money(e.cost_usd)}"
    reps = f" x {e.replicas} replicas" if e.replicas and e.replicas > 1 else ""
    tail = f", p99 {e.p99['latency_ms']:,.0f} ms" if e.p99 else ""
    return f"{head}{reps} serves at {money(e.cost_usd)}/month ({e.latency_ms:,.0f} ms per typical request{tail})"


def _quantitative(
    profile: Profile, cands: list[Estimate], c: Constants, excluded: set[str]
) -> tuple[list[Contribution], dict[str, Estimate | None], tuple[Estimate, Estimate, str] | None]:
    """Estimates as evidence: the two leading accelerator families against each other, a host
    family (CPU) against the best accelerator, and a penalty for a family with nothing feasible."""
    objective = profile.goal.optimize
    best_by = {dev: best(cands, objective, c, dev) for dev in families.sized()}
    out: list[Contribution] = _hosts_against_accelerators(profile, best_by, c, excluded)
    accel = [d for d in families.of_role("accelerator") if d in best_by]
    live = [d for d in accel if d not in excluded]
    if len(live) < 2:
        return out, best_by, None
    what = "time" if objective == "time" else "cost"
    ranked = sorted(
        [d for d in live if best_by[d] is not None],
        key=lambda d: (trust.compared(best_by[d], what) or math.inf, d),  # type: ignore[arg-type]
    )
    quant: tuple[Estimate, Estimate, str] | None = None
    if len(ranked) >= 2:
        pair = sorted(ranked[:2], key=accel.index)  # in the data file's order, for stable wording
        first, second = best_by[pair[0]], best_by[pair[1]]
        assert first is not None and second is not None
        a, b = trust.compared(first, what), trust.compared(second, what)
        if a and b and a > 0 and b > 0:
            quant = (first, second, what)
            out.append(_ratio_contribution(first, second, a, b, what, profile, c))
    if any(best_by[d] is not None for d in live):
        for dev in live:
            if best_by[dev] is None:
                out.append(_no_feasible(dev, cands, profile, c))
    return out, best_by, quant


def _ratio_contribution(
    first: Estimate, second: Estimate, a: float, b: float, what: str, profile: Profile, c: Constants,
) -> Contribution:
    pts = trust.ratio_points(a, b, what, profile, c)
    good, bad = (first, second) if b > a else (second, first)
    winner, loser = families.name(good.device), families.name(bad.device)
    factor = max(b / a, a / b)
    diff = f" (${abs(a - b):,.0f} apart, {trust.materiality(a, b, profile, c):.0%} material)" if what == "cost" else ""
    if abs(pts) >= c.scoring.tie_points.value:
        return Contribution(
            rule=f"estimate-{what}-ratio",
            device=good.device,
            points=abs(pts),
            title=f"Estimated {what}: best {winner} vs best {loser}",
            reason=f"{describe(good)}; {describe(bad)} ({factor:.1f}x the {what}){diff}.",
            sources=(ESTIMATOR_SOURCE,),
        )
    return Contribution(
        rule=f"estimate-{what}-tie",
        device=good.device,
        points=0.0,
        title=f"Estimated {what}: a tie",
        reason=f"{describe(good)}; {describe(bad)}{diff}: too small a difference to decide, so the qualitative reasons do.",
        sources=(ESTIMATOR_SOURCE,),
    )


def _no_feasible(dev: str, cands: list[Estimate], profile: Profile, c: Constants) -> Contribution:
    mine = [x for x in cands if x.device == dev]
    why = _closest_why(mine)
    near = closest(mine)
    penalty = trust.budget_penalty(near, profile, c)
    name = families.name(dev)
    return Contribution(
        rule="estimate-no-feasible-configuration",
        device=dev,
        points=-penalty,
        title=f"No feasible {name} configuration",
        reason=f"No {name} shape in the catalog meets this workload: {why}."
        + (" Only the budget fails, so the penalty scales with the overrun." if penalty < c.scoring.no_feasible_penalty.value else ""),
        sources=(ESTIMATOR_SOURCE,),
    )


def _hosts_against_accelerators(
    profile: Profile, best_by: dict[str, Estimate | None], c: Constants, excluded: set[str],
) -> list[Contribution]:
    """Host families (CPU instances) compete on numbers: the best host configuration against the
    cheaper of the best accelerator ones, with the same materiality rule as between accelerators."""
    accel = [
        b for d, b in best_by.items()
        if families.family(d).role == "accelerator" and d not in excluded and b is not None and b.priced
    ]
    out: list[Contribution] = []
    for dev in families.of_role("host"):
        host = best_by.get(dev)
        if dev in excluded or host is None or not host.priced or not accel or host.cost_usd is None:
            continue
        other = min(accel, key=lambda x: (x.cost_usd or math.inf, x.accelerator))
        a, b = other.cost_usd or 0.0, host.cost_usd
        pts = trust.ratio_points(a, b, "cost", profile, c)  # > 0: the accelerator is cheaper
        if abs(pts) < c.scoring.tie_points.value:
            continue
        # the points go to (or come off) the host family alone: the accelerators are scored on their own
        good, bad = (host, other) if pts < 0 else (other, host)
        out.append(Contribution(
            rule=f"estimate-{dev}-cost-ratio",
            device=dev,
            points=-pts,
            title=f"Estimated cost: best {families.name(dev)} vs best accelerator ({families.name(good.device)} cheaper)",
            reason=f"{describe(good)}; {describe(bad)} ({max(a, b) / max(min(a, b), 1e-9):.1f}x the cost, ${abs(a - b):,.0f} apart).",
            sources=(ESTIMATOR_SOURCE,),
        ))
    return out


def _closest_why(cands: list[Estimate]) -> str:
    """Why the most promising configuration of a family still fails."""
    if not cands:
        return "no catalog entry"
    fitting = [x for x in cands if x.fits_memory and x.priced]
    if not fitting:
        if all(not x.priced for x in cands):
            return "none is priced on the allowed clouds"
        return "nothing fits in memory"
    near = min(fitting, key=lambda x: (x.cost_usd or 0.0, x.accelerator, x.count))
    return f"the cheapest that fits, {near.accelerator} x {near.count}: {near.why_not}"


def _software_exclusions(cands: list[Estimate]) -> list[Exclusion]:
    """A family none of whose configurations can run the profile's hot-path software (rules/software.yaml)."""
    out = []
    by_device: dict[str, list[Any]] = {}
    for x in cands:
        by_device.setdefault(x.device, []).append(x.assumptions.get("software_blocked"))
    for dev in families.sized():
        blocks = by_device.get(dev)
        if blocks and all(blocks):
            b = blocks[0]
            assert b is not None
            out.append(Exclusion(dev, f"software-{b['entry']}", b["reason"], tuple(b["sources"]), b["fix"]))
    return out


def decide(
    profile: Profile, kb: KnowledgeBase, catalog: Catalog, c: Constants, cands: list[Estimate] | None = None
) -> tuple[Decision, list[Estimate]]:
    fired = _fired(kb.rules, profile)
    contributions: list[Contribution] = []
    excluded: list[Exclusion] = []
    for r in fired:
        if r.exclude:
            excluded.extend(Exclusion(d, r.id, r.reason, r.sources, r.fix) for d in r.exclude)
        else:
            assert r.device is not None
            contributions.append(Contribution(r.id, r.device, r.points, r.reason, r.sources, r.title, r.fix))
    if cands is None:
        cands = all_candidates(profile, catalog, c)
    if profile.deployment.accelerators:
        for dev in families.sized():
            if not any(x.device == dev for x in cands):
                excluded.append(Exclusion(
                    dev, "deployment-accelerators", f"deployment.accelerators lists no {families.name(dev)} accelerator",
                    ("profile: deployment.accelerators",), f"add a {families.name(dev)} catalog id to deployment.accelerators",
                ))
    excluded.extend(_software_exclusions(cands))
    out_set = {x.device for x in excluded}
    quant_ctr, best_by, quant = _quantitative(profile, cands, c, out_set)
    contributions.extend(quant_ctr)
    every = families.ids()
    scores = {d: 0.0 for d in every}
    base = {d: 0.0 for d in every}  # without the estimate ratio: what the confidence scenarios vary
    for ctr in contributions:
        scores[ctr.device] += ctr.points
        if not ctr.rule.startswith(("estimate-cost-ratio", "estimate-time-ratio")):
            base[ctr.device] += ctr.points
    live = [d for d in every if d not in out_set] or list(every)
    cheapest = _cost_decides(profile, best_by, live, scores, c)
    if cheapest is not None:
        contributions.append(cheapest[0])
        scores[cheapest[0].device] += cheapest[0].points
    ranked = sorted(live, key=lambda d: (scores[d], families.family(d).preference), reverse=True)
    device = ranked[0]
    margin = scores[device] - scores[ranked[1]] if len(ranked) > 1 else math.inf
    contributions.sort(key=lambda x: (-abs(x.points), x.rule, x.device))
    excluded.sort(key=lambda x: (x.device, x.rule))
    chosen = best_by.get(device)
    mine = [x for x in cands if x.device == device]
    feasible = chosen is not None or not mine
    if chosen is None and mine:
        chosen = closest(mine)
    conf = trust.scenario_confidence(device, base, live, quant, feasible, profile, c)
    if cheapest is not None and chosen is not None:
        conf = trust.Confidence(
            trust.cost_order_confidence(chosen, cheapest[1]), f"the cost estimates of {describe(chosen)} and {describe(cheapest[1])}"
        )
    return Decision(
        device, scores, contributions, excluded, margin, chosen, best_by, feasible, conf.value, conf.sensitivity, conf.scenarios
    ), cands


def _cost_decides(
    profile: Profile, best_by: dict[str, Estimate | None], live: list[str], scores: dict[str, float], c: Constants,
) -> tuple[Contribution, Estimate] | None:
    """goal.optimize cost: the cheapest feasible option, full stop. Where the cheapest live family's
    best configuration is cheaper than every other family's by more than ``cost_tie_fraction`` (a
    relative tie, whatever the budget), and the rules' points would choose another, a contribution
    that puts it ahead (the points it takes, stated as such); within the tie the points decide.
    Returns (that contribution, the runner-up's best configuration) or None where the points
    already choose the cheapest or the cheapest is tied."""
    if profile.goal.optimize != "cost":
        return None
    priced = {d: e for d in live if (e := best_by.get(d)) is not None and e.feasible and e.cost_usd is not None}
    if not priced:
        return None
    order = sorted(priced, key=lambda d: (priced[d].cost_usd or 0.0, d))
    a = priced[order[0]].cost_usd or 0.0
    tie = c.scoring.cost_tie_fraction.value
    tied = [d for d in order if (priced[d].cost_usd or 0.0) <= a * (1.0 + tie)]
    others = [d for d in live if d not in tied]
    if not others:
        return None
    low = max(tied, key=lambda d: (scores[d], families.family(d).preference))
    lead = max(scores[d] for d in others)
    if scores[low] > lead:
        return None
    dearer = [d for d in order if d not in tied]
    runner = dearer[0] if dearer else None
    if runner is None:  # the others have nothing feasible and priced: the rules and penalties decide
        return None
    b = priced[runner].cost_usd or 0.0
    need = lead - scores[low] + c.scoring.tie_points.value
    name, other = families.name(low), families.name(runner)
    ctr = Contribution(
        rule="goal-cost-cheapest",
        device=low,
        points=need,
        title=f"goal.optimize cost: the cheapest feasible option ({name})",
        reason=(
            f"{describe(priced[low])}; {describe(priced[runner])} ({b / a:.2f}x the cost, beyond the "
            f"{tie:.0%} tie): under goal.optimize cost the cheapest feasible option decides and the rules' "
            f"points only break ties, so {name} gets the {need:.1f} points it needs to lead {other}."
        ),
        sources=(ESTIMATOR_SOURCE,),
        fix="set goal.optimize: balanced to let the qualitative reasons weigh against the price",
    )
    return ctr, priced[runner]


def closest(cands: list[Estimate]) -> Estimate | None:
    """The configuration nearest to feasible: it fits memory and is offered; training: the
    fastest that can be obtained (offered, within reach) not past the knee; serving: the cheapest."""
    usable = [x for x in cands if x.fits_memory and x.parallelism is not None] if cands and cands[0].mode == "training" else []
    usable = usable or [x for x in cands if x.fits_memory] or cands
    if not usable:
        return None
    if usable[0].mode == "training":
        # the fastest that can be obtained (offered on the clouds, within a procurement kind's reach)
        near = [x for x in usable if x.procurable and "not offered" not in (x.why_not or "")] or usable
        return min([x for x in near if not x.past_knee] or near, key=lambda x: (x.hours or math.inf, x.count, x.accelerator))
    # serving: offered first, then the smallest latency overshoot, then the cheapest (dollars before chip-hours)
    return min(usable, key=lambda x: (
        "not offered" in (x.why_not or "") or "serves a replica from one host" in (x.why_not or ""),
        x.meets_latency is False and (x.latency_ms or math.inf),
        not x.priced, basis(x), x.accelerator, x.count,
    ))


def feasibility_changes(profile: Profile, e: Estimate) -> list[str]:
    """The smallest changes to the constraints that make ``e`` feasible."""
    out: list[str] = []
    if e.meets_deadline is False and profile.training is not None and e.hours:
        out.append(
            f"training.deadline_hours: {profile.training.deadline_hours:g} -> {math.ceil(e.hours):g} makes {e.accelerator} x {e.count} "
            "feasible (the fastest before adding chips stops paying)"
        )
    if e.within_budget is False and e.cost_usd is not None:
        out.append(f"goal.budget_usd: {profile.goal.budget_usd:g} -> {math.ceil(e.cost_usd):g} makes {e.accelerator} x {e.count} feasible")
    if e.meets_latency is False and profile.inference is not None and e.latency_ms:
        was = (
            f"{profile.inference.latency_p99_ms:g}"
            if profile.inference.latency_p99_ms is not None
            else f"(default {e.assumptions.get('latency_target_ms', 0):g})"
        )
        out.append(f"inference.latency_p99_ms: {was} -> {math.ceil(e.latency_ms):g} makes {e.accelerator} x {e.count} feasible")
    return out


# --------------------------------------------------------------------------- flip


def _verdict_text(d: Decision) -> str:
    if d.chosen is not None:
        return f"{d.device.upper()} ({d.chosen.accelerator} x {d.chosen.count})"
    return d.device.upper()


def flips(
    profile: Profile, base: Decision, kb: KnowledgeBase, catalog: Catalog, c: Constants,
    cands: list[Estimate] | None = None, limit: int = 5,
) -> list[str]:
    """What would change the verdict, smallest change first (advisor/whatif.py)."""

    def redecide(p: Profile, reuse: str) -> Decision:
        if cands is not None and reuse != "none":
            if reuse == "reuse":
                return decide(p, kb, catalog, c, cands)[0]
            if reuse == "prices":
                return decide(
                    p,
                    kb,
                    catalog,
                    c,
                    all_candidates(p, catalog, c, keep=repriced_keep(profile, p, cands, catalog), verdict_only=True, ranges=False),
                )[0]
            if reuse == "budget":
                moved = [rebudgeted(x, profile.goal.budget_usd, p.goal.budget_usd) for x in cands]
                if all(x is not None for x in moved):
                    return decide(p, kb, catalog, c, [x for x in moved if x is not None])[0]
        return decide(p, kb, catalog, c, all_candidates(p, catalog, c, verdict_only=True, ranges=False))[0]

    rival = families.family(base.device).rival
    other = rival if rival and base.best_by_device.get(rival) is not None and rival not in {x.device for x in base.excluded} else None

    def priced(factor: float) -> Decision:
        cat = _scaled_catalog(catalog, other or "", factor)
        return decide(profile, kb, cat, c, all_candidates(profile, cat, c, verdict_only=True, ranges=False))[0]

    was = base.chosen.cost_usd if base.chosen is not None else None

    def text(d: Decision) -> str:
        out = _verdict_text(d)
        now = d.chosen.cost_usd if d.chosen is not None else None
        if profile.goal.optimize == "cost" and was is not None and now is not None and now > was:
            out += f" (dearer: {money(now)} against today's {money(was)})"
        return out

    whatif.DEFAULT_DEADLINE_HOURS[0] = c.estimator.scaling.default_deadline_hours.value
    return whatif.what_ifs(
        profile, base.device, redecide, text, limit, priced=priced if other else None, rival=families.name(other) if other else None
    )


def _scaled_catalog(catalog: Catalog, device: str, factor: float) -> Catalog:
    """``catalog`` with every price of ``device``'s accelerators times ``factor``."""
    import dataclasses

    accs = {}
    for aid, acc in catalog.accelerators.items():
        if acc.device == device:
            acc = acc.model_copy(
                update={"prices": [p.model_copy(update={"usd_per_chip_hour": p.usd_per_chip_hour * factor}) for p in acc.prices]}
            )
        accs[aid] = acc
    return dataclasses.replace(catalog, accelerators=accs)


# --------------------------------------------------------------------------- entry


def per_accelerator(cands: list[Estimate], chosen: Estimate | None, objective: str, c: Constants) -> list[Estimate]:
    """One row per accelerator: the chosen config, else its best feasible one, else its closest."""
    by_acc: dict[str, list[Estimate]] = {}
    for e in cands:
        by_acc.setdefault(e.accelerator, []).append(e)
    rows = []
    for acc, mine in by_acc.items():
        if chosen is not None and chosen.accelerator == acc:
            rows.append(chosen)
            continue
        pick = best(mine, objective, c) or closest(mine)
        if pick is not None:
            rows.append(pick)
    return sorted(
        rows,
        key=lambda x: (not x.feasible, not x.priced, x.cost_usd if x.cost_usd is not None else math.inf, x.accelerator),
    )


def recommend(
    profile: Profile,
    kb: KnowledgeBase,
    catalog: Catalog,
    c: Constants,
    *,
    label: str = "",
    with_flip: bool = True,
    cands: list[Estimate] | None = None,
    with_table: bool = True,
    decision: Decision | None = None,
) -> Recommendation:
    """The verdict and everything shown with it; ``cands``: this profile's candidates, already
    estimated (``all_candidates``), for a caller that has them; ``decision``: with them, their
    ``decide`` (a caller that decided this workload before). ``with_table``: False for a caller
    that reads the verdict and not the candidates (``candidates`` and ``table`` are left empty)."""
    if decision is None or cands is None:
        decision, cands = decide(profile, kb, catalog, c, cands)
    warnings: list[str] = []
    if {x.device for x in decision.excluded} >= set(families.ids()):
        warnings.append(
            "every device family is excluded by a hard constraint; the verdict shows the best-scoring "
            "one regardless: resolve the conflicting constraints (see 'excluded')"
        )
    acc = catalog.accelerators.get(decision.chosen.accelerator) if decision.chosen else None
    if not decision.feasible:
        near = decision.chosen
        warnings.append(
            f"no feasible {decision.device.upper()} configuration in the catalog for this workload"
            + (f"; the closest is {near.accelerator} x {near.count} ({near.why_not})" if near else "")
            + "; see 'flip' for what makes it feasible"
        )
    if decision.chosen is not None:
        warnings.extend(decision.chosen.warnings)
    owned = [x for x in cands if x.owned_chips is not None]
    if owned and (decision.chosen is None or decision.chosen.owned_chips is None):
        near = closest(owned)
        if near is not None:
            warnings.append(
                f"the owned {near.owned_chips} x {near.accelerator} are not enough: "
                f"{near.accelerator} x {near.count} {near.why_not}; the verdict uses other hardware"
            )
    priced_somewhere = {x.accelerator for x in cands if x.usd_per_chip_hour is not None}
    sized = set(families.sized())
    unpriced = sorted({x.accelerator for x in cands if x.device in sized and x.owned_chips is None} - priced_somewhere)
    if unpriced:
        warnings.append(f"unpriced on {', '.join(profile.deployment.clouds)}: {', '.join(unpriced)} (never counted as $0)")
    if decision.chosen is not None:
        approx = decision.chosen.assumptions.get("model_shape", {}).get("approximated") or decision.chosen.assumptions.get(
            "memory", {}
        ).get("model_shape", {}).get("approximated")
        if approx:
            warnings.append(f"model {', '.join(approx)} not given: approximated from params_b (see assumptions)")
    cloud = setup_cloud(profile, decision.chosen)
    path = choose_setup(profile, kb, decision.device, cloud, acc)
    setup = (
        plan(path, placeholders(profile, acc, decision.chosen), profile.task, cloud, profile.software.framework)
        if path
        else None
    )
    if setup is not None and decision.chosen is not None and decision.chosen.procurement not in (None, "on-demand", "spot"):
        # a count beyond on-demand quota: the step that obtains it comes first
        chosen = decision.chosen
        title, text = capacity.setup_step(chosen.procurement or "", chosen.count * (chosen.replicas or 1), chosen.accelerator)
        setup.steps.insert(0, (title, [], text))
    conf = decision.confidence
    flip = flips(profile, decision, kb, catalog, c, cands) if with_flip else []
    if not decision.feasible and decision.chosen is not None:
        flip = feasibility_changes(profile, decision.chosen) + flip
    cands_sorted = sorted(
        cands,
        key=lambda x: (not x.feasible, not x.priced, x.cost_usd if x.cost_usd is not None else math.inf, x.accelerator, x.count),
    ) if with_table else []
    return Recommendation(
        label=label,
        profile=profile,
        decision=decision,
        confidence=conf,
        candidates=cands_sorted,
        setup=setup,
        flip=flip,
        warnings=warnings,
        catalog_as_of=catalog.as_of.isoformat(),
        table=per_accelerator(cands, decision.chosen, profile.goal.optimize, c) if with_table else [],
    )
