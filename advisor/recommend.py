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
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from advisor import __version__, capacity, families, whatif
from advisor.catalog import Accelerator, Catalog
from advisor.constants import Constants
from advisor.decide import ESTIMATOR_SOURCE, Contribution, Decision, Exclusion, closest, decide, describe
from advisor.estimate.price import CONSTRAINT_REASON
from advisor.estimate.result import HOURS_PER_MONTH, Estimate, rebudgeted
from advisor.estimate.search import all_candidates, best, repriced_keep
from advisor.fmt import hours, money
from advisor.knowledge import KnowledgeBase
from advisor.models import Profile
from advisor.setuppath import (
    SetupPlan,
    as_priced,
    choose_server,
    choose_setup,
    placeholders,
    plan,
    provisioning_kind,
    setup_cloud,
)

__all__ = ["ESTIMATOR_SOURCE", "Contribution", "Decision", "Exclusion", "Recommendation", "closest", "decide", "describe", "recommend"]



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


def feasibility_changes(profile: Profile, e: Estimate) -> list[str]:
    """The smallest changes to the constraints that make ``e`` feasible: one line per broken constraint where it is the
    only one, one line of them together where several are broken (each alone leaves it infeasible), and what no
    constraint change mends (memory, capacity, where the chip is offered) said with them."""
    changes: list[str] = []
    if e.meets_deadline is False and profile.training is not None and e.hours:
        changes.append(f"training.deadline_hours: {profile.training.deadline_hours:g} -> {math.ceil(e.hours):g}")
    if e.within_budget is False and e.cost_usd is not None:
        changes.append(f"goal.budget_usd: {profile.goal.budget_usd:g} -> {math.ceil(e.cost_usd):g}")
    if e.meets_latency is False and profile.inference is not None and e.latency_ms:
        was = (
            f"{profile.inference.latency_p99_ms:g}"
            if profile.inference.latency_p99_ms is not None
            else f"(default {e.assumptions.get('latency_target_ms', 0):g})"
        )
        # the target is a p99: what it must allow is the estimate's p99 where it has one, never its typical latency
        p99 = (e.p99 or {}).get("latency_ms")
        needed = max(e.latency_ms, float(p99) if p99 else 0.0)
        changes.append(f"inference.latency_p99_ms: {was} -> {math.ceil(needed):g}")
    if not changes:
        return []
    what = f"{e.accelerator} x {e.count}"
    blocked = [r for r in (e.why_not or "").split("; ") if r and not CONSTRAINT_REASON.search(r)]
    if blocked:  # a constraint change alone cannot make it feasible
        return [f"{' and '.join(changes)} would still leave {what} infeasible: {'; '.join(blocked)}"]
    if len(changes) == 1:
        return [f"{changes[0]} makes {what} feasible" + (" (the fastest before adding chips stops paying)"
                                                          if changes[0].startswith("training.deadline_hours") else "")]
    return [f"{' and '.join(changes)} together make {what} feasible (each alone leaves it infeasible)"]



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
    """One row per accelerator: the chosen config, else its best feasible one, else its closest. The verdict's row first
    (a compact table of the first few never leaves it out), then feasible priced rows by what the goal asks for: time
    (hours, or latency) under goal time, else cost (review 20 D10: under goal time the 14-minute B200 verdict was not
    among the five cheapest rows shown)."""
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
    def pace(x: Estimate) -> float:
        return (x.hours if x.mode == "training" else x.latency_ms) or math.inf

    def key(x: Estimate) -> tuple[bool, bool, bool, float, float, str]:
        price = x.cost_usd if x.cost_usd is not None else math.inf
        first, second = (pace(x), price) if objective == "time" else (price, pace(x))
        return (x is not chosen, not x.feasible, not x.priced, first, second, x.accelerator)

    return sorted(rows, key=key)


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
    warnings = _warnings(profile, decision, cands)
    acc = catalog.accelerators.get(decision.chosen.accelerator) if decision.chosen else None
    setup = _setup_plan(profile, kb, decision, acc)
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
        confidence=decision.confidence,
        candidates=cands_sorted,
        setup=setup,
        flip=flip,
        warnings=warnings,
        catalog_as_of=catalog.as_of.isoformat(),
        table=per_accelerator(cands, decision.chosen, profile.goal.optimize, c) if with_table else [],
    )


def _faster_unpriced(profile: Profile, cands: list[Estimate], pick: Estimate | None, unpriced: list[str]) -> Estimate | None:
    """goal.optimize time, training: the fastest feasible configuration of an unpriced accelerator, where it is faster than
    the verdict beyond its time range (its slow end before the verdict's expected hours): time is what the team asked
    for, and a configuration that cannot be priced is never the verdict, so it is said instead of hidden."""
    if profile.goal.optimize != "time" or pick is None or pick.mode != "training" or not pick.hours:
        return None
    rivals = [x for x in cands if x.accelerator in unpriced and x.feasible and x.hours and not x.past_knee]
    fast = min(rivals, key=lambda x: (x.hours or 0.0, x.count, x.accelerator), default=None)
    return fast if fast is not None and (fast.hours_high or fast.hours or 0.0) < pick.hours else None


def _short_of(e: Estimate) -> str:
    """What keeps the closest configuration from being a verdict: its reasons, or that its cost is unknown."""
    if e.why_not:
        return e.why_not
    return "unpriced: its cost cannot be weighed against the others" if e.cost_usd is None else "it meets the constraints"


def _owned_share(profile: Profile, owned: Estimate, chosen: Estimate | None) -> str | None:
    """A service the owned chips cannot carry alone: what their replicas serve of the peak, and what the verdict's
    replicas would cost for the rest only (review 25: 16 owned H100 carry 20 of 60 requests/s, yet the verdict bought
    all 60 on B200 and left them idle). The advisor sizes one pool per verdict: the split is said, not set up."""
    inf = profile.inference
    if (inf is None or inf.mode != "online" or chosen is None or chosen.owned_chips is not None or not chosen.cost_usd
            or not chosen.replicas or not chosen.capacity_rps or not owned.capacity_rps or not owned.owned_chips):
        return None
    replicas = owned.owned_chips // max(owned.count, 1)
    served = replicas * owned.capacity_rps
    if replicas < 1 or served >= inf.peak_qps:
        return None
    rest = math.ceil((inf.peak_qps - served) / chosen.capacity_rps - 1e-9)
    if rest >= chosen.replicas:
        return None
    share = chosen.cost_usd * rest / chosen.replicas
    run = (owned.usd_per_chip_hour or 0.0) * replicas * owned.count * float(inf.hours_per_day) * HOURS_PER_MONTH / 24.0
    own = f" plus the owned chips' running cost, about ${run:,.0f}/month" if run else ""
    return (
        f"the owned {owned.owned_chips} x {owned.accelerator} carry about {served:,.1f} of the {inf.peak_qps:g} requests/s at the "
        f"latency target ({replicas} replica(s) of {owned.count}); the rest on {rest} of the verdict's {chosen.replicas} "
        f"{chosen.accelerator} x {chosen.count} replicas would cost about ${share:,.0f}/month at its rate{own}, against "
        f"${chosen.cost_usd:,.0f} for the whole load: two pools behind one load balancer, which the setup does not write"
    )


def _kinds(procurement: str | Sequence[str] | None) -> str:
    return ", ".join([procurement] if isinstance(procurement, str) else procurement or [])


def _warnings(profile: Profile, decision: Decision, cands: list[Estimate]) -> list[str]:
    """What the verdict needs said with it: every family excluded, nothing feasible, the chosen
    configuration's own warnings, owned chips not enough, unpriced accelerators, an approximated model."""
    warnings: list[str] = []
    if {x.device for x in decision.excluded} >= set(families.ids()):
        warnings.append(
            "every device family is excluded by a hard constraint; the verdict shows the best-scoring "
            "one regardless: resolve the conflicting constraints (see 'excluded')"
        )
    if not decision.feasible:
        near = decision.chosen
        live = [d for d in decision.scores if d not in {x.device for x in decision.excluded}]
        top = max(live or decision.scores, key=lambda d: decision.scores[d])
        if near is not None and decision.scores[top] > decision.scores[decision.device]:
            warnings.append(
                f"nothing is feasible in any family: the verdict is the configuration nearest to feasible of them all "
                f"({near.accelerator} x {near.count}), not the nearest of the family the rules favour ({families.name(top)})"
            )
        warnings.append(
            f"no feasible {decision.device.upper()} configuration in the catalog for this workload"
            + (f"; the closest is {near.accelerator} x {near.count} ({_short_of(near)})" if near else "")
            + "; see 'flip' for what makes it feasible"
        )
    if decision.chosen is not None:
        warnings.extend(decision.chosen.warnings)
    owned = [x for x in cands if x.owned_chips is not None]
    if owned and (decision.chosen is None or decision.chosen.owned_chips is None):
        near = closest(owned)
        if near is not None and near.feasible:
            warnings.append(
                f"the owned {near.owned_chips} x {near.accelerator} could run it ({describe(near)}), but the verdict "
                "uses other hardware: see --explain for the points that chose it"
            )
        elif near is not None:
            warnings.append(
                f"the owned {near.owned_chips} x {near.accelerator} are not enough: "
                f"{near.accelerator} x {near.count} {near.why_not}; the verdict uses other hardware"
            )
            split = _owned_share(profile, near, decision.chosen)
            if split is not None:
                warnings.append(split)
    dep = profile.deployment
    from advisor import regions
    from advisor.validation import did_you_mean

    known = regions.known_ids()
    for name in dict.fromkeys([*(dep.regions or []), *([dep.region] if dep.region else [])]):
        if name not in known:  # a new or sovereign region, an on-prem site, or a typo
            owner = regions.cloud_of(name)
            warnings.append(f"{name} is not a region the advisor knows (rules/regions.yaml){did_you_mean(name, known)}: "
                            + (f"taken as a {owner} region where no accelerator is known to be offered" if owner else
                               "of no cloud's form, so no cloud's configuration runs there (an on-prem site's name is fine)"))
    kinds = capacity.accepted(dep.procurement)
    if kinds is not None and capacity.PRICING_KIND.get(dep.pricing, "on-demand") not in kinds:
        # pricing names a kind the team does not accept: the accepted kinds price it, at their own rates
        warnings.append(
            f"deployment.pricing is {dep.pricing}, which deployment.procurement ({_kinds(dep.procurement)}) does not accept: "
            "priced and set up under the accepted kinds only, at their own rates"
        )
    priced_somewhere = {x.accelerator for x in cands if x.usd_per_chip_hour is not None}
    sized = set(families.sized())
    unpriced = sorted({x.accelerator for x in cands if x.device in sized and x.owned_chips is None} - priced_somewhere)
    if unpriced:
        warnings.append(f"unpriced on {', '.join(profile.deployment.clouds)}: {', '.join(unpriced)} (never counted as $0)")
    pick = decision.chosen
    faster = _faster_unpriced(profile, cands, pick, unpriced)
    if faster is not None and pick is not None:
        warnings.append(
            f"goal.optimize time: {faster.accelerator} x {faster.count} ({faster.shape}) would take {hours(faster.hours)} "
            f"(range {hours(faster.hours_low)}-{hours(faster.hours_high)}), {(pick.hours or 0.0) / (faster.hours or 1.0):.1f}x "
            f"faster than the verdict, but has no price on {', '.join(profile.deployment.clouds)}, so it cannot be weighed "
            "against it: ask for a quote and add it with --catalog"
        )
    if pick is not None and pick.cost_usd is None and pick.owned_chips is None and profile.goal.budget_usd is not None:
        # review 20, D12: a fixed budget and an unpriced verdict said nothing about the budget
        warnings.append(
            f"the budget ${profile.goal.budget_usd:,.0f} is not checked: the verdict {pick.accelerator} x {pick.count} is "
            f"unpriced on {', '.join(profile.deployment.clouds)}; add its price with --catalog to hold it to the budget"
        )
    dep = profile.deployment
    chosen = decision.chosen
    if (chosen is not None and chosen.price_cloud is None and chosen.owned_chips is None and "on-prem" in dep.clouds
            and not dep.owned and not (dep.onprem is not None and dep.onprem.purchase)):
        # on-prem hardware the team neither owns (deployment.owned) nor will buy (deployment.onprem.purchase)
        warnings.append(
            f"the verdict {chosen.accelerator} x {chosen.count} runs on-prem, and deployment.owned lists no hardware: it "
            "is hardware to buy, not priced here (no capex, lead time or break-even against renting); list the chips you "
            "have in deployment.owned, or set deployment.onprem.purchase for the purchase's cost and lead time"
        )
    m = profile.model
    if m.architecture == "moe" and not (m.experts and m.experts_per_token):
        missing = [f for f, v in (("experts", m.experts), ("experts_per_token", m.experts_per_token)) if not v]
        warnings.append(
            f"model {', '.join(missing)} not given: sized with defaults (moe_routed_share of the active parameters, "
            "Mixtral's top-2 of 8); give both (DeepSeek-V3: 256 experts, 8 per token)"
        )
    if decision.chosen is not None:
        approx = decision.chosen.assumptions.get("model_shape", {}).get("approximated") or decision.chosen.assumptions.get(
            "memory", {}
        ).get("model_shape", {}).get("approximated")
        if approx:
            warnings.append(f"model {', '.join(approx)} not given: approximated from params_b (see assumptions)")
    return warnings


def _provisioning_kind(profile: Profile, chosen: Any) -> str | None:
    """The procurement kind the verdict's provisioning commands take flags for: the kind its price is (Spot), else
    the one its capacity comes from (a reservation, calendar or flex-start)."""
    if chosen is None:
        return provisioning_kind(profile.deployment.pricing, None)
    return provisioning_kind(chosen.price_kind or profile.deployment.pricing, chosen.procurement)


def _setup_plan(profile: Profile, kb: KnowledgeBase, decision: Decision, acc: Accelerator | None) -> SetupPlan | None:
    """The setup path for the verdict, led by the step that obtains a count beyond on-demand quota."""
    cloud = setup_cloud(profile, decision.chosen)
    path = choose_setup(as_priced(profile, decision.chosen), kb, decision.device, cloud, acc)
    values = placeholders(profile, acc, decision.chosen)
    # the server the scaffold's files run (a replica over several hosts takes one that spans them): its steps only
    server = (choose_server(profile.software.serving_stack, decision.device, int(values["hosts"]) > 1, values.get("vendor") or None)[0]
              or None
              if decision.chosen is not None and profile.serves_llm else None)
    setup = plan(path, values, profile, cloud, _provisioning_kind(profile, decision.chosen), server) if path else None
    if setup is not None and decision.chosen is not None and decision.chosen.procurement not in (None, "on-demand", "spot"):
        # a count beyond on-demand quota: the step that obtains it comes first
        chosen = decision.chosen
        title, text = capacity.setup_step(chosen.procurement or "", chosen.count * (chosen.replicas or 1), chosen.accelerator,
                                          float((chosen.capacity or {}).get("term_hours") or 0.0))
        setup.steps.insert(0, (title, [], text))
    return setup
