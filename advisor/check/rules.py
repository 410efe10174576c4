"""The check rules of ``advisor check``, each a registered unit: id, severity, title, docs, check.

A proposal rule is a function from a :class:`Judging` (the proposal, its estimate, the
recommendation and the policy) to the findings it raises, each a message and a position;
``@proposal_rule`` registers it in :data:`CHECK_RULES`, and ``check_judge.judge`` runs every
registered rule that the policy does not disable. A request rule is the same for an
infrastructure request (:class:`RequestJudging`, run by ``advisor.check.infra.judge``); a proposal
rule may have a request check too. The waiver rules and the increase limits (``policy-monthly-increase``,
``policy-one-off-increase``) are
registered with their docs and checked where their input is read (``check_judge``,
``check_diff``). ``python -m advisor.docgen`` writes the reference page
``docs/reference/check-rules.md`` from this registry.

This module is the rule table: the rules register in the order of its source when it is
imported, and that order is the order of the output. The registry and the decorators are in
``advisor.check.registry``, what a rule reads in ``advisor.check.judging``; both are re-exported
here, and :data:`CHECK_RULES` is read from here so that every rule is registered.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Callable, Iterator
from typing import Any

from advisor.check.judging import (
    KEPT_PROPOSAL_ESTIMATES,
    PATH_LINKED,
    Judging,
    RequestJudging,
    min_feasible_count,
    proposal_estimate,
)
from advisor.check.registry import (
    CHECK_RULES,
    SCOPES,
    CheckRule,
    Hit,
    Where,
    declared_rule,
    proposal_check,
    proposal_rule,
    proposal_rules,
    request_rule,
    request_rules,
)
from advisor.estimate.result import HOURS_PER_MONTH
from advisor.families import family
from advisor.fmt import money
from advisor.recommend import describe
from advisor.setuppath import choose_setup, setup_cloud

__all__ = [
    "CHECK_RULES",
    "KEPT_PROPOSAL_ESTIMATES",
    "SCOPES",
    "CheckRule",
    "Hit",
    "Judging",
    "RequestJudging",
    "Where",
    "declared_rule",
    "min_feasible_count",
    "proposal_estimate",
    "proposal_rule",
    "proposal_rules",
    "request_rule",
    "request_rules",
    "visible_text",
]


# --------------------------------------------------------------------------- proposal rules


@proposal_rule(
    "proposal-device-excluded",
    "error",
    "Proposed device family is excluded by a hard constraint",
    "The proposal names an accelerator of a family that a hard constraint rules out (TPU for an AWS-only or on-prem team, TPU with fp64 "
    "or custom CUDA kernels, anything but edge for an edge deployment). Propose an accelerator of an allowed family, or change the "
    "constraint in the profile.",
)
def device_excluded(j: Judging) -> Iterator[Hit]:
    x = j.excluded.get(j.acc.device)
    if x is not None:
        fix = f" Fix: {x.fix}" if x.fix else ""
        yield f"{j.acc.id} is a {j.acc.device.upper()}, excluded by '{x.rule}': {x.reason}{fix}", j.line_of("accelerator")


@proposal_rule(
    "proposal-does-not-fit-memory",
    "error",
    "Proposed configuration does not fit in memory",
    "Weights, optimiser state, activations (training) or weights plus KV cache (serving) exceed the proposed chips' memory. Propose more "
    "chips or an accelerator with more memory per chip.",
)
def does_not_fit_memory(j: Judging) -> Iterator[Hit]:
    if not j.est.fits_memory:
        yield (
            f"{j.acc.id} x {j.prop.count} does not hold the workload: {j.est.why_not or 'memory'}. Propose more chips or a larger-memory "
            "accelerator.",
            j.line_of("count"),
        )


@proposal_rule(
    "proposal-misses-deadline",
    "error",
    "Proposed configuration misses the deadline",
    "At the estimated utilisation the run takes longer than training.deadline_hours. Propose more chips or a faster accelerator, or "
    "relax the deadline.",
)
def misses_deadline(j: Judging) -> Iterator[Hit]:
    est = j.est
    if est.meets_deadline is False:
        assert j.profile.training is not None
        yield (
            f"{j.acc.id} x {j.prop.count} needs about {est.hours:,.1f} h (range {est.hours_low:,.1f}-{est.hours_high:,.1f} h), past the "
            f"{j.profile.training.deadline_hours:g} h deadline. Propose more chips or a faster accelerator.",
            j.line_of("count"),
        )


@proposal_rule(
    "proposal-misses-latency",
    "error",
    "Proposed configuration misses the latency target",
    "Even at batch 1 a request takes longer than inference.latency_p99_ms on the proposed chips. Propose a faster accelerator or more "
    "chips per replica.",
)
def misses_latency(j: Judging) -> Iterator[Hit]:
    est, inference = j.est, j.profile.inference
    if est.fits_memory and est.meets_latency is False:
        assert inference is not None
        target = est.assumptions.get("latency_target_ms") or inference.latency_p99_ms or 0.0
        which = "" if inference.latency_p99_ms else " (the default; set inference.latency_p99_ms)"
        yield (
            f"a request takes about {est.latency_ms:,.0f} ms on {j.acc.id} x {est.count}, above the {target:g} ms target{which}. Propose "
            "a faster accelerator or more chips per replica.",
            j.line_of("accelerator"),
        )


@proposal_rule(
    "proposal-insufficient-capacity",
    "error",
    "Proposed configuration cannot serve the peak QPS",
    "The proposed chips, split into replicas, serve fewer requests per second than inference.peak_qps at the latency target. Propose "
    "more chips.",
)
def insufficient_capacity(j: Judging) -> Iterator[Hit]:
    capacity, inference = j.capacity, j.profile.inference
    if capacity is not None and inference is not None and j.est.fits_memory and capacity + 1e-9 < inference.peak_qps:
        yield (
            f"{j.replicas} replica(s) of {j.acc.id} x {j.est.count} serve about {capacity:,.1f} requests/s, below the peak of "
            f"{inference.peak_qps:g}. Propose about {math.ceil(j.prop.count * inference.peak_qps / max(capacity, 1e-9))} chips.",
            j.line_of("count"),
        )


@proposal_rule(
    "proposal-over-budget",
    "error",
    "Proposed spend exceeds the budget",
    "The proposal's cost (count x hours x price) exceeds goal.budget_usd. Propose fewer hours or chips, a cheaper accelerator, or raise "
    "the budget.",
)
def over_budget(j: Judging) -> Iterator[Hit]:
    budget, cost = j.profile.goal.budget_usd, j.cost
    if budget is not None and cost is not None and cost > budget:
        unit = "" if j.profile.is_training else " per month"
        yield (
            f"{j.prop.count} x {j.acc.id} for {j.prop.hours:g} h costs {money(cost)}{unit}, over the {money(budget)} budget.",
            j.line_of("hours"),
        )


@proposal_rule(
    "proposal-unpriced",
    "error",
    "Proposed accelerator is not offered or not priced on the allowed clouds",
    "The catalog has no price for this accelerator on any cloud in deployment.clouds (it is never counted as $0). Propose an accelerator "
    "offered there, or add a negotiated price with --catalog.",
)
def unpriced(j: Judging) -> Iterator[Hit]:
    if j.price is not None:
        return
    why = j.est.why_not
    if why and "not offered:" in why:
        yield (
            f"{j.acc.id} x {j.prop.count}: {why.split('; ')[0]}. Propose a count the cloud sells at this pricing, or another pricing "
            "(deployment.pricing).",
            j.line_of("count"),
        )
    else:
        yield (
            f"{j.acc.id} has no catalog price on {', '.join(j.profile.deployment.clouds)}; it is not counted as $0. Propose an "
            "accelerator offered there or add a price with --catalog.",
            j.line_of("accelerator"),
        )


@proposal_rule(
    "proposal-costs-more-than-best",
    "warning",
    "A feasible alternative is much cheaper",
    "The proposal costs more than the best feasible configuration by more than the policy threshold (default 25%). Consider the "
    "alternative named in the message.",
)
def costs_more_than_best(j: Judging) -> Iterator[Hit]:
    best, cost, th = j.best, j.cost, j.policy.thresholds
    if best is None or not best.cost_usd or cost is None:
        return
    extra = cost - best.cost_usd
    pct = 100.0 * extra / best.cost_usd
    mine = (j.acc.id, j.prop.count)
    if pct > th.cost_over_best_percent and extra > th.cost_over_best_usd and (best.accelerator, best.count) != mine:
        # One suggestion, and it agrees with the recommendation whenever that is cheaper too.
        chosen = j.rec.estimate
        target = chosen if (chosen is not None and chosen.cost_usd is not None and chosen.cost_usd < cost
                            and (chosen.accelerator, chosen.count) != mine) else best
        tail = " (the recommendation)" if target is chosen else ""
        yield (
            f"the proposal costs {money(cost)}, {pct:,.0f}% more than the best feasible alternative: {describe(best)}. Consider "
            f"{target.accelerator} x {target.count}{tail}.",
            j.line_of("accelerator"),
        )


@proposal_rule(
    "proposal-oversized",
    "warning",
    "More chips than needed",
    "The proposal asks for more than the policy factor (default 2x) of the smallest count of this accelerator that fits and meets the "
    "targets.",
)
def oversized(j: Judging) -> Iterator[Hit]:
    needed = j.min_feasible_count
    if needed is not None and j.prop.count > j.policy.thresholds.oversize_factor * needed:
        yield (
            f"{j.prop.count} x {j.acc.id} is {j.prop.count / needed:,.1f}x the {needed} that fit and meet the targets. Propose {needed}.",
            j.line_of("count"),
        )


@proposal_rule(
    "proposal-hours-excessive",
    "warning",
    "More hours than the estimate needs",
    "The hours asked exceed the estimate (training: the run length at this configuration; serving: the hours per month the profile runs) "
    "by more than the policy factor (default 1.5x).",
)
def hours_excessive(j: Judging) -> Iterator[Hit]:
    est, prop, profile = j.est, j.prop, j.profile
    factor = j.policy.thresholds.hours_over_estimate_factor
    if profile.is_training and est.hours and prop.hours > factor * est.hours:
        yield (
            f"asks for {prop.hours:g} h; the estimate at {j.acc.id} x {prop.count} is {est.hours:,.1f} h (range "
            f"{est.hours_low:,.1f}-{est.hours_high:,.1f} h). Propose about {math.ceil(est.hours_high or est.hours)} h.",
            j.line_of("hours"),
        )
    if profile.inference is not None and profile.task == "inference":
        month = profile.inference.run_hours_per_day * HOURS_PER_MONTH / 24
        if prop.hours > factor * month:
            yield (
                f"asks for {prop.hours:g} h per month; the service runs {profile.inference.run_hours_per_day:g} h a day "
                f"({month:,.0f} h per month).",
                j.line_of("hours"),
            )


@proposal_rule(
    "proposal-not-a-real-shape", "warning", "Count is not a real shape of the accelerator",
    "TPUs come in fixed slice sizes and GPUs in 1/2/4/8 per node and whole nodes beyond; the count will be rounded up when provisioned.")
def not_a_real_shape(j: Judging) -> Iterator[Hit]:
    acc, count = j.acc, j.prop.count
    if not acc.is_shape(count):
        up = acc.round_up(count)
        unit = family(acc.device).unit_text(acc.shapes)
        yield (
            f"{acc.id} comes in {unit}, up to {acc.max_chips():,} chips; {count} will be provisioned as "
            f"{up if up else 'more than the largest published cluster'}.",
            j.line_of("count"),
        )


@proposal_rule(
    "cheaper-other-family", "note", "The other device family is cheaper",
    "The best feasible configuration of the other device family costs less than the proposal; the message names it and its setup path.")
def cheaper_other_family(j: Judging) -> Iterator[Hit]:
    other = family(j.acc.device).rival
    if not other or other in j.excluded or j.rec.device != other:  # a note that agrees with the recommendation
        return
    ob = j.rec.decision.best_by_device.get(other)
    if ob is not None and ob.cost_usd is not None and j.cost is not None and ob.cost_usd < j.cost:
        sp = choose_setup(j.profile, j.ctx.kb, other, setup_cloud(j.profile, ob))
        path = f" via setup path '{sp.id}' ({sp.title})" if sp else ""
        yield f"{family(other).name} option: {describe(ob)}{path}.", j.line_of("accelerator")


# --------------------------------------------------------------------------- rules checked where their input is read

_CHECK = "advisor/check/judge.py"

declared_rule(
    "waiver-invalid",
    "error",
    "Waiver is expired, undated or has no reason",
    "Every waiver needs a reason in visible text (not only spaces or zero-width characters), and an expiry date that has not passed; "
    "the waiver-* rules themselves cannot be waived. Renew or remove the waiver.",
    "waiver",
    _CHECK,
)


def visible_text(text: str) -> bool:
    """Whether ``text`` has a character a reader sees: not only whitespace, zero-width and other
    format characters (U+200B, U+FEFF, bidirectional marks), controls or combining marks."""
    import unicodedata

    return any(
        not ch.isspace() and unicodedata.category(ch) not in ("Cf", "Cc", "Cs", "Co", "Cn", "Mn", "Me", "Zs", "Zl", "Zp") for ch in text
    )


declared_rule("waiver-unknown-rule", "warning", "Waiver names an unknown rule",
              "The waiver's rule id is not a check rule; it waives nothing.", "waiver", _CHECK)


# --------------------------------------------------------------------------- request rules


@request_rule(
    "request-unresolved",
    "warning",
    "A counted field is not a literal value",
    "A variable, module output, expression or template placeholder decides the accelerator or the count. Nothing is guessed: run the "
    "check on the Terraform plan JSON or on rendered manifests.",
)
def unresolved(r: RequestJudging) -> Iterator[Hit]:
    how = (
        "Run the check on the plan JSON (terraform show -json)."
        if r.req.kind.startswith("terraform")
        else "Run the check on the rendered output (helm template / kubectl kustomize / envsubst)."
    )
    conditions = [(v, p) for f, v, p in r.req.unresolved if f == "helm-condition"]
    said_conditions = False
    for fld, value, pos in r.req.unresolved:
        if fld == "kind":  # a pod spec found in a kind no reader knows: counted once, a lower bound
            yield (
                f"{value} is not a workload kind advisor reads: this pod spec's accelerators are counted once (one pod, one "
                "replica), a lower bound on the count and the cost; its replicas are not read.",
                pos,
            )
            continue
        if fld == "kustomize":  # a kustomization advisor built itself: a part it does not evaluate
            yield (
                f"the kustomization's {value} is not evaluated by advisor, so the count and cost may differ from what "
                "`kubectl kustomize` builds. Run the check on that output to judge it exactly.",
                pos,
            )
            continue
        if fld == "release":  # a release of a chart in the repository: a values source it names that advisor does not read
            yield (
                f"the release names {value}, which advisor does not read: the count and cost are of the chart with the values "
                "it could read. Check the output of helm template with every values source to judge it exactly.",
                pos,
            )
            continue
        if fld == "helm-condition":  # a chart read without helm: the conditions its reader could not evaluate, said once
            if said_conditions:
                continue
            said_conditions = True
            named = ", ".join(f"`{v}` (line {p[0]})" for v, p in conditions[:3])
            more = f" and {len(conditions) - 3} more" if len(conditions) > 3 else ""
            yield (
                f"the chart was read without helm (not on PATH) and {len(conditions)} template condition(s) could not be "
                f"evaluated: {named}{more}; the first branch of each was read, so the count and cost may differ from what "
                "helm renders. Install helm on the runner (the chart is then rendered with helm template), or give the "
                "chart the values it is installed with (a values file beside it).",
                pos,
            )
            continue
        if fld == "helm-dependency":  # an umbrella chart: its accelerators are in a dependency the repository does not hold
            yield (
                f"the chart depends on {value}, which advisor does not render without helm (not in its charts/ directory, or "
                "there only as a packaged .tgz), and its values ask that chart for accelerators: the gate cannot count them. "
                "Install helm on the runner, vendor the dependency as a directory, or check the output of helm template.",
                pos,
            )
            continue
        if fld == "helm-remote":  # a release of a chart from a Helm repository, whose values ask it for accelerators
            yield (
                f"the release installs {value}, a chart from a Helm repository that advisor does not render, and its values "
                "ask that chart for accelerators: the gate cannot count them. Check the output of helm template with these "
                "values (a rendered manifest in the pull request), or keep the chart in the repository.",
                pos,
            )
            continue
        if fld == "helm-left-out":  # a chart read without helm: a line that rendered only as a placeholder
            yield (
                f"the chart was read without helm (not on PATH) and `{value}` could not be evaluated where it stands alone on a "
                "line: the line was left out, so what it would add (a list of env entries, resources, a whole block) is not "
                "read and the count and cost may differ from what helm renders. Install helm on the runner, or give the "
                "chart the values it is installed with (a values file beside it).",
                pos,
            )
            continue
        if fld == "count-unknown":  # the file says what bounds the count but not the count (the reader's own words)
            yield f"{value}, so the count and cost are not guessed.", pos
            continue
        yield f"{fld} = {value} is not a literal value; the count and cost are not guessed. " + how, pos


@request_rule(
    "request-unknown-accelerator",
    "warning",
    "The hardware asked for is not in the catalog",
    "The machine type, instance type, VM size or label names hardware the name index and catalog do not know. It is reported as unknown "
    "and never priced as a neighbouring part. Add it with --catalog to judge it.",
)
def unknown_accelerator(r: RequestJudging) -> Iterator[Hit]:
    if r.req.unknown:
        yield (
            f"{r.req.unknown}. It is reported as unknown and not priced (never as a neighbouring part); add it with --catalog if it "
            "should be judged.",
            r.req.pos("accelerator"),
        )


@request_rule(
    "request-unpriced",
    "warning",
    "The request has no catalog price (unpriced)",
    "The accelerator is known but the catalog has no price for it on the cloud the file names (or any cloud, when none is named) at this "
    "pricing. The request is reported as unpriced, never counted as $0; add a price with --catalog.",
)
def request_unpriced(r: RequestJudging) -> Iterator[Hit]:
    if r.unlinked_shape_price and r.cost is None and r.total:
        assert r.acc is not None
        yield (
            f"unpriced: {r.acc.id} has no catalog {r.req.pricing} price on {r.clouds}; it is not counted as $0. Add a price with "
            "--catalog.",
            r.req.pos("accelerator"),
        )


@request_rule("proposal-not-a-real-shape")
def request_not_a_real_shape(r: RequestJudging) -> Iterator[Hit]:
    req = r.req
    if r.unlinked_shape_price and req.count and not req.cap and r.acc is not None and not r.acc.is_shape(req.count):
        up = r.acc.round_up(req.count)
        yield (
            f"{r.acc.id} x {req.count} per replica is not a real shape; it would be provisioned as "
            f"{up if up else 'more than the largest published cluster'}.",
            req.pos("count"),
        )
    for problem in req.shape_problems:
        yield problem, req.pos("count")


@request_rule(
    "workload-not-linked",
    "note",
    "No workload profile is linked to this resource",
    "Without the workload (model, tokens, QPS, latency, deadline, budget) only shape, price and policy are checked. Link a profile with "
    "`match:` or an `advisor.dev/workload` annotation / `advisor-workload` label.",
)
def not_linked(r: RequestJudging) -> Iterator[Hit]:
    req = r.req
    if r.linked is not None or req.action == "delete":
        return
    how = (
        f'add `match: ["{req.address}"]` to its workload profile'
        if req.kind not in PATH_LINKED
        else f'add `match: ["{req.path}"]` to its workload profile'
    ) + (
        ", or the annotation `advisor.dev/workload: <profile name>`"
        if req.kind == "kubernetes"
        else ", or the label/tag `advisor-workload = <profile name>`"
        if req.kind == "terraform-plan"
        else ""
    )
    yield (
        "no workload profile is linked: memory fit, deadline, latency, capacity, oversizing, cheaper-family and budget checks were not "
        f"possible (shape, price and policy only). To link it, {how}.",
        (req.line, req.col),
    )


@request_rule(
    "workload-link-broken", "warning", "The workload link cannot be followed",
    "The resource names a workload profile that was not given or is invalid, or the linked request could not be read completely.")
def link_broken(r: RequestJudging) -> Iterator[Hit]:
    req = r.req
    if r.linked is None and req.action != "delete" and r.broken:
        yield r.broken + ".", (req.line, req.col)
    elif r.linked is not None and (r.acc is None or not r.total or req.unresolved):
        yield (
            f"linked to {r.linked.label}, but the request could not be read completely, so only shape, price and policy were checked.",
            (req.line, req.col),
        )


@request_rule(
    "policy-max-chips",
    "error",
    "More chips than the policy allows",
    "The resource asks for more chips (count x replicas, the judged end of an autoscaling range) than limits.max_chips in the policy.",
    "policy",
)
def max_chips(r: RequestJudging) -> Iterator[Hit]:
    limit, total, req = r.policy.limits.max_chips, r.total, r.req
    if req.action == "delete" or limit is None:
        return
    if total is not None and total > limit:
        yield (
            f"asks for {total} chips ({req.count} x {req.replicas(r.end)} replicas, the {r.end} end), over the policy's max_chips {limit}.",
            req.pos("replicas"),
        )
    elif total is None and (req.accelerator or req.unknown):  # fail closed: a limit nobody can verify is not met
        yield (
            f"how many chips this asks for could not be read, so the policy's max_chips {limit} cannot be verified; write the count "
            "as a literal, or check the rendered plan or manifest.",
            req.pos("count"),
        )
    elif total is not None and (unread := req.count_unread()) is not None:
        # a total read beside a count that was not (count = var.n without a default, replicas of a kind not read): a lower bound
        fld, value = unread
        yield (
            f"asks for at least {total} chips, but {fld} ({value[:60]}) could not be read, so the policy's max_chips {limit} "
            "cannot be verified; write it as a literal, or check the rendered plan or manifest.",
            req.pos("count"),
        )
    replicas = req.replicas(r.end)
    for acc, each in req.options:
        n = each if each is not None else req.count  # an alternative of the same count (a node-affinity value)
        if n is not None and replicas is not None and n * replicas > limit and (total is None or total <= limit):
            yield (
                f"may provision {acc or 'an unknown accelerator'} x {n} x {replicas} replicas instead (an alternative it lists), "
                f"over the policy's max_chips {limit}.",
                req.pos("accelerator"),
            )
            break


@request_rule(
    "policy-accelerator-not-allowed", "error", "Accelerator not allowed by the policy",
    "The accelerator is not in limits.allowed_accelerators.", "policy")
def accelerator_not_allowed(r: RequestJudging) -> Iterator[Hit]:
    allowed, req = r.policy.limits.allowed_accelerators, r.req
    if req.action == "delete" or allowed is None:
        return
    if req.accelerator and req.accelerator not in allowed:
        yield f"{req.accelerator} is not in the policy's allowed_accelerators ({', '.join(allowed)}).", req.pos("accelerator")
    elif not req.accelerator and (req.hardware or req.unknown):  # fail closed: unknown hardware is not an allowed one
        what = f"'{req.hardware[:80]}'" if req.hardware else "the hardware"
        yield (
            f"{what} is no accelerator the catalog knows, so it cannot be shown to be one of the policy's allowed_accelerators "
            f"({', '.join(allowed)}).",
            req.pos("accelerator"),
        )
    others = sorted({acc or "an unknown accelerator" for acc, _n in req.options if acc not in allowed})
    if others:
        yield (
            f"may provision {', '.join(others)} instead (alternatives it lists), not in the policy's allowed_accelerators "
            f"({', '.join(allowed)}).",
            req.pos("accelerator"),
        )


@request_rule(
    "policy-cloud-not-allowed", "error", "Cloud not allowed by the policy",
    "The cloud is not in limits.allowed_clouds.", "policy")
def cloud_not_allowed(r: RequestJudging) -> Iterator[Hit]:
    allowed, req = r.policy.limits.allowed_clouds, r.req
    if req.action == "delete" or allowed is None:
        return
    if req.cloud and req.cloud not in allowed:
        yield f"cloud {req.cloud} is not in the policy's allowed_clouds ({', '.join(allowed)}).", (req.line, req.col)
        return
    hit = _place_hit(req, allowed, 0, lambda c: c in allowed, "cloud", "on any cloud it has credentials for", "infra / backends")
    if hit is not None:
        yield hit


def _place_hit(req: Any, allowed: list[str], part: int, ok: Callable[[str], bool], what: str, anywhere: str,
               name_it: str) -> Hit | None:
    """The first place a launcher may use (every option it may fall back to, each on its own: Request.places) that pins
    no ``what`` (cloud, region) or one the policy does not allow, as a finding; None where every one is allowed."""
    for place in req.places or ():
        value = place[part]
        if value is None:
            return (f"the {req.kind} task pins no {what}: its launcher may start it {anywhere}; the policy allows "
                    f"{', '.join(allowed)} (name it: {name_it})."), (req.line, req.col)
        if not ok(value):
            return f"it may launch in {what} {value}, not in the policy's allowed_{what}s ({', '.join(allowed)}).", (req.line, req.col)
    return None


def _region_allowed(region: str, allowed: list[str]) -> bool:
    """limits.allowed_regions holds glob patterns (europe-west4*)."""
    return any(fnmatch.fnmatchcase(region, p) for p in allowed)


@request_rule(
    "policy-region-not-allowed", "error", "Region not allowed by the policy",
    "The region is not in limits.allowed_regions (glob patterns).", "policy")
def region_not_allowed(r: RequestJudging) -> Iterator[Hit]:
    allowed, req = r.policy.limits.allowed_regions, r.req
    if req.action == "delete" or allowed is None:
        return
    if req.region and not _region_allowed(req.region, allowed):
        yield f"region {req.region} is not in the policy's allowed_regions ({', '.join(allowed)}).", (req.line, req.col)
        return
    for other in req.other_regions:  # a node affinity that allows several regions: the scheduler may use any
        if not _region_allowed(other, allowed):
            yield (f"its node affinity also allows region {other}, not in the policy's allowed_regions "
                   f"({', '.join(allowed)})."), (req.line, req.col)
            return
    hit = _place_hit(req, allowed, 1, lambda r: _region_allowed(r, allowed), "region", "in any region",
                     "infra: CLOUD/REGION, or regions")
    if hit is not None:
        yield hit


# a profile's proposal is judged against the same limits: a pull request that proposes spend in a
# profile, not in Terraform or a manifest, meets the policy all the same


@proposal_check("policy-max-chips")
def proposal_max_chips(j: Judging) -> Iterator[Hit]:
    limit, total = j.policy.limits.max_chips, j.prop.count * (j.replicas or 1)
    if limit is not None and total > limit:
        each = f" ({j.prop.count} x {j.replicas} replicas)" if (j.replicas or 1) > 1 else ""
        yield f"proposes {total} chips{each}, over the policy's max_chips {limit}.", j.line_of("count")


@proposal_check("policy-accelerator-not-allowed")
def proposal_accelerator_not_allowed(j: Judging) -> Iterator[Hit]:
    allowed = j.policy.limits.allowed_accelerators
    if allowed is not None and j.acc.id not in allowed:
        yield f"{j.acc.id} is not in the policy's allowed_accelerators ({', '.join(allowed)}).", j.line_of("accelerator")


@proposal_check("policy-cloud-not-allowed")
def proposal_cloud_not_allowed(j: Judging) -> Iterator[Hit]:
    allowed, cloud = j.policy.limits.allowed_clouds, j.est.price_cloud
    if allowed is not None and cloud and cloud not in allowed:
        yield f"priced on {cloud}, not in the policy's allowed_clouds ({', '.join(allowed)}).", j.line_of("accelerator")


@proposal_check("policy-region-not-allowed")
def proposal_region_not_allowed(j: Judging) -> Iterator[Hit]:
    allowed, region = j.policy.limits.allowed_regions, j.est.region
    if allowed is not None and region and not _region_allowed(region, allowed):
        yield f"runs in {region}, not in the policy's allowed_regions ({', '.join(allowed)}).", j.line_of("accelerator")


def _in_workspace(path: str, workspace: str) -> bool:
    """``./envs/dev``, ``envs/dev/`` and ``envs/dev`` are one workspace: the file is in it, or matches it as a glob."""
    import posixpath

    p = posixpath.normpath(path.replace("\\", "/"))
    w = posixpath.normpath(workspace.replace("\\", "/"))
    if w == ".":
        return not p.startswith("../")
    return fnmatch.fnmatchcase(p, w) or p.startswith(w.rstrip("/") + "/") or fnmatch.fnmatchcase(p, w.rstrip("/") + "/*")


@request_rule(
    "policy-spot-required", "error", "Spot capacity required here",
    "The policy requires spot capacity in this Kubernetes namespace or Terraform workspace (limits.require_spot).", "policy")
def spot_required(r: RequestJudging) -> Iterator[Hit]:
    spot, req = r.policy.limits.require_spot, r.req
    if req.action == "delete":
        return
    scoped = (req.kind == "kubernetes" and req.scope is not None and any(fnmatch.fnmatchcase(req.scope, n) for n in spot.namespaces)) or \
             (req.kind != "kubernetes" and any(_in_workspace(req.path, w) or fnmatch.fnmatchcase(req.address, w) for w in spot.workspaces))
    if scoped and req.pricing != "spot":
        where = f"namespace {req.scope}" if req.kind == "kubernetes" else "this workspace"
        yield f"the policy requires spot capacity in {where}; this asks for {req.pricing}.", req.pos("accelerator")


declared_rule(
    "policy-monthly-increase",
    "error",
    "The change raises monthly spend past the policy limit",
    "Against the baseline (or the plan's own prior state), spend in a month rises by more than limits.max_monthly_increase_usd: "
    "always-on resources' monthly cost, and each run's cost in its costliest month (all of it for a run of up to a month); every "
    "resource that adds cost carries this finding.",
    "policy",
    "advisor/check/diff.py",
)

declared_rule(
    "policy-one-off-increase",
    "error",
    "The change adds one-off runs past the policy limit",
    "Against the baseline (or the plan's own prior state), the one-off runs (training jobs with an enforced deadline, training "
    "profiles) cost more than limits.max_one_off_increase_usd in total; every run that adds cost carries this finding.",
    "policy",
    "advisor/check/diff.py",
)
