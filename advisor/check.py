"""``advisor check``: judge each profile's ``proposal`` against the advisor's own analysis.

A proposal asks for an accelerator, a count and hours. The check estimates
that exact configuration, compares it with the best feasible alternative the
recommender finds, and reports findings with stable rule ids, severities, a
message that says what/why/how to fix, and the line in the proposal file.
Waivers (``proposal.waivers``) need a reason and an unexpired date.
"""

from __future__ import annotations

import datetime as dt
import glob
import math
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor import __version__
from advisor.api import Context, check_accelerators
from advisor.errors import InputError, Problem
from advisor.estimator import HOURS_PER_MONTH, Estimate, candidate_counts, estimate
from advisor.families import family
from advisor.fmt import money
from advisor.loading import LoadedProfile, profiles_from_docs
from advisor.policy import Policy
from advisor.recommend import Recommendation, choose_setup, describe, recommend, setup_cloud
from advisor.yamlsrc import MAX_BYTES

SEVERITIES = ("error", "warning", "note")
RANK = {"note": 0, "warning": 1, "error": 2}


@dataclass(frozen=True)
class CheckRule:
    id: str
    severity: str
    title: str
    help: str


CHECK_RULES: dict[str, CheckRule] = {
    r.id: r
    for r in [
        CheckRule("proposal-device-excluded", "error", "Proposed device family is excluded by a hard constraint",
                  "The proposal names an accelerator of a family that a hard constraint rules out (TPU for an AWS-only or on-prem team, TPU with fp64 or custom CUDA kernels, anything but edge for an edge deployment). Propose an accelerator of an allowed family, or change the constraint in the profile."),
        CheckRule("proposal-does-not-fit-memory", "error", "Proposed configuration does not fit in memory",
                  "Weights, optimiser state, activations (training) or weights plus KV cache (serving) exceed the proposed chips' memory. Propose more chips or an accelerator with more memory per chip."),
        CheckRule("proposal-misses-deadline", "error", "Proposed configuration misses the deadline",
                  "At the estimated utilisation the run takes longer than training.deadline_hours. Propose more chips or a faster accelerator, or relax the deadline."),
        CheckRule("proposal-misses-latency", "error", "Proposed configuration misses the latency target",
                  "Even at batch 1 a request takes longer than inference.latency_p99_ms on the proposed chips. Propose a faster accelerator or more chips per replica."),
        CheckRule("proposal-insufficient-capacity", "error", "Proposed configuration cannot serve the peak QPS",
                  "The proposed chips, split into replicas, serve fewer requests per second than inference.peak_qps at the latency target. Propose more chips."),
        CheckRule("proposal-over-budget", "error", "Proposed spend exceeds the budget",
                  "The proposal's cost (count x hours x price) exceeds goal.budget_usd. Propose fewer hours or chips, a cheaper accelerator, or raise the budget."),
        CheckRule("proposal-unpriced", "error", "Proposed accelerator is not offered or not priced on the allowed clouds",
                  "The catalog has no price for this accelerator on any cloud in deployment.clouds (it is never counted as $0). Propose an accelerator offered there, or add a negotiated price with --catalog."),
        CheckRule("proposal-costs-more-than-best", "warning", "A feasible alternative is much cheaper",
                  "The proposal costs more than the best feasible configuration by more than the policy threshold (default 25%). Consider the alternative named in the message."),
        CheckRule("proposal-oversized", "warning", "More chips than needed",
                  "The proposal asks for more than the policy factor (default 2x) of the smallest count of this accelerator that fits and meets the targets."),
        CheckRule("proposal-hours-excessive", "warning", "More hours than the estimate needs",
                  "The hours asked exceed the estimate (training: the run length at this configuration; serving: the hours per month the profile runs) by more than the policy factor (default 1.5x)."),
        CheckRule("proposal-not-a-real-shape", "warning", "Count is not a real shape of the accelerator",
                  "TPUs come in fixed slice sizes and GPUs in 1/2/4/8 per node and whole nodes beyond; the count will be rounded up when provisioned."),
        CheckRule("cheaper-other-family", "note", "The other device family is cheaper",
                  "The best feasible configuration of the other device family costs less than the proposal; the message names it and its setup path."),
        CheckRule("waiver-invalid", "error", "Waiver is expired, undated or has no reason",
                  "Every waiver needs a reason, and an expiry date that has not passed. Renew or remove the waiver."),
        CheckRule("waiver-unknown-rule", "warning", "Waiver names an unknown rule",
                  "The waiver's rule id is not a check rule; it waives nothing."),
        CheckRule("request-unknown-accelerator", "warning", "The hardware asked for is not in the catalog",
                  "The machine type, instance type, VM size or label names hardware the name index and catalog do not know. It is reported as unknown and never priced as a neighbouring part. Add it with --catalog to judge it."),
        CheckRule("request-unresolved", "warning", "A counted field is not a literal value",
                  "A variable, module output, expression or template placeholder decides the accelerator or the count. Nothing is guessed: run the check on the Terraform plan JSON or on rendered manifests."),
        CheckRule("workload-not-linked", "note", "No workload profile is linked to this resource",
                  "Without the workload (model, tokens, QPS, latency, deadline, budget) only shape, price and policy are checked. Link a profile with `match:` or an `advisor.dev/workload` annotation / `advisor-workload` label."),
        CheckRule("workload-link-broken", "warning", "The workload link cannot be followed",
                  "The resource names a workload profile that was not given or is invalid, or the linked request could not be read completely."),
        CheckRule("policy-max-chips", "error", "More chips than the policy allows",
                  "The resource asks for more chips (count x replicas, the judged end of an autoscaling range) than limits.max_chips in the policy."),
        CheckRule("policy-accelerator-not-allowed", "error", "Accelerator not allowed by the policy",
                  "The accelerator is not in limits.allowed_accelerators."),
        CheckRule("policy-cloud-not-allowed", "error", "Cloud not allowed by the policy",
                  "The cloud is not in limits.allowed_clouds."),
        CheckRule("policy-region-not-allowed", "error", "Region not allowed by the policy",
                  "The region is not in limits.allowed_regions (glob patterns)."),
        CheckRule("policy-spot-required", "error", "Spot capacity required here",
                  "The policy requires spot capacity in this Kubernetes namespace or Terraform workspace (limits.require_spot)."),
        CheckRule("policy-monthly-increase", "error", "The change raises monthly spend past the policy limit",
                  "Against the baseline (or the plan's own prior state), the monthly cost rises by more than limits.max_monthly_increase_usd; every resource that adds cost carries this finding."),
    ]
}


@dataclass
class Finding:
    rule: str
    severity: str
    message: str
    line: int
    col: int = 1
    waived: bool = False
    waiver: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rule": self.rule, "severity": self.severity, "message": self.message, "line": self.line, "column": self.col, "waived": self.waived}
        if self.waiver:
            out["waiver"] = self.waiver
        return out


@dataclass
class ProposalResult:
    label: str
    path: str
    name: str
    status: str  # pass | warning | error | skipped
    findings: list[Finding] = field(default_factory=list)
    proposal: dict[str, Any] | None = None
    proposal_estimate: Estimate | None = None
    proposal_cost: float | None = None
    recommended: Recommendation | None = None
    best: Estimate | None = None
    line: int = 1
    key: str | None = None  # what --baseline matches: the profile label, or kind:address for infrastructure
    source: dict[str, Any] | None = None
    request: dict[str, Any] | None = None
    workload: str | None = None  # the linked profile of an infrastructure request
    before: dict[str, Any] | None = None  # plan JSON: the resource before the change
    notes: list[str] = field(default_factory=list)

    @property
    def chosen(self) -> Estimate | None:
        """The recommendation's own configuration (the verdict)."""
        return self.recommended.estimate if self.recommended is not None else None

    def active(self, severity: str) -> list[Finding]:
        return [f for f in self.findings if f.severity == severity and not f.waived]

    def to_json(self) -> dict[str, Any]:
        rec = self.recommended
        out: dict[str, Any] = {
            "profile": self.label,
            "name": self.name,
            "status": self.status,
            "findings": [f.to_json() for f in self.findings],
            "proposal": None,
            "recommended": None,
            "key": self.key or self.label,
            "source": self.source,
            "request": self.request,
        }
        if self.workload is not None or (self.source or {}).get("kind", "profile") != "profile":
            out["workload"] = self.workload
        if self.before is not None:
            out["before"] = self.before
        if self.notes:
            out["notes"] = self.notes
        if self.proposal is not None:
            est = self.proposal_estimate.to_json() if self.proposal_estimate else {}
            # DESIGN.md: the proposal's estimate; "request" is what the pull request asks for.
            out["proposal"] = {**est, "request": {**self.proposal, "cost_usd": _r(self.proposal_cost)}}
        if rec is not None:
            chosen = rec.estimate
            out["recommended"] = {
                "device": rec.device,
                "accelerator": chosen.accelerator if chosen else None,
                "count": chosen.count if chosen else None,
                "hours": _r(chosen.hours) if chosen else None,
                "cost_usd": _r(chosen.cost_usd) if chosen else None,
                "setup_path": rec.setup.path.id if rec.setup else None,
                "confidence": rec.confidence,
            }
            b = self.best
            out["cheapest_feasible"] = (
                {"accelerator": b.accelerator, "count": b.count, "hours": _r(b.hours), "cost_usd": _r(b.cost_usd)} if b else None
            )
        return out


@dataclass
class InvalidFile:
    """A file of the batch that could not be judged (unreadable, malformed, hostile): its problems."""

    path: str
    problems: list[Problem]

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "errors": [{"line": p.line, "column": p.col, "message": p.message} for p in self.problems]}


@dataclass
class CheckReport:
    results: list[ProposalResult]
    fail_on: str
    catalog_as_of: str
    policy_path: str | None = None
    diff: dict[str, Any] | None = None
    invalid: list[InvalidFile] = field(default_factory=list)
    skipped_files: list[tuple[str, str]] = field(default_factory=list)  # (path, why): not a kind advisor reads

    @property
    def problems(self) -> list[Problem]:
        return [p for bad in self.invalid for p in bad.problems]

    @property
    def summary(self) -> dict[str, Any]:
        checked = [r for r in self.results if r.status != "skipped"]
        return {
            "profiles": len(self.results),
            "proposals": len(checked),
            "skipped": len(self.results) - len(checked),
            "invalid": len(self.invalid),
            "skipped_files": len(self.skipped_files),
            "total_chips": sum((r.request or {}).get("total_chips") or 0 for r in checked),
            "passed": sum(r.status == "pass" for r in checked),
            "warning": sum(r.status == "warning" for r in checked),
            "error": sum(r.status == "error" for r in checked),
            "waived": sum(f.waived for r in checked for f in r.findings),
            "findings": {s: sum(1 for r in checked for f in r.findings if f.severity == s and not f.waived) for s in SEVERITIES},
            "proposed_cost_usd": _r(sum(r.proposal_cost or 0.0 for r in checked)),
            "recommended_cost_usd": _r(sum(r.chosen.cost_usd or 0.0 for r in checked if r.chosen)),
        }

    @property
    def exit_code(self) -> int:
        """2 when a file could not be judged (bad input outranks policy), else 1 when a finding
        is at or above ``fail_on``, else 0."""
        if self.invalid:
            return 2
        if self.fail_on == "never":
            return 0
        threshold = RANK[self.fail_on]
        for r in self.results:
            for f in r.findings:
                if not f.waived and RANK[f.severity] >= threshold:
                    return 1
        return 0

    def needs_changes(self) -> int:
        return sum(1 for r in self.results if r.status in ("error", "warning"))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "results": [r.to_json() for r in self.results if r.status != "skipped"],
            "skipped": [r.label for r in self.results if r.status == "skipped"],
            "invalid": [bad.to_json() for bad in self.invalid],
            "skipped_files": [{"path": p, "reason": why} for p, why in self.skipped_files],
            "summary": self.summary,
            "fail_on": self.fail_on,
            "exit_code": self.exit_code,
            "policy": self.policy_path,
            "catalog_as_of": self.catalog_as_of,
            "advisor_version": __version__,
        }
        if self.diff is not None:
            out["diff"] = self.diff
        return out


def _r(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else round(x, 2)


# --------------------------------------------------------------------------- inputs


SUFFIXES = (".yaml", ".yml", ".json", ".tf")


def expand_paths(paths: Iterable[str]) -> list[str]:
    """Files as given; directories recursively (*.yaml, *.yml, *.json, *.tf); glob patterns expanded."""
    out: list[str] = []
    problems: list[Problem] = []
    for raw in paths:
        if any(ch in raw for ch in "*?[") and not os.path.exists(raw):
            matches = sorted(glob.glob(raw, recursive=True))
            if not matches:
                problems.append(Problem(raw, 1, 1, "pattern matches no file"))
            out.extend(m for m in matches if not os.path.isdir(m))
            continue
        p = Path(raw)
        if p.is_dir():
            found = sorted(str(f) for f in p.rglob("*") if f.suffix in SUFFIXES and f.is_file() and not _hidden(f, p))
            out.extend(found)
            continue
        out.append(raw)
    if problems:
        raise InputError(problems)
    return list(dict.fromkeys(out))


def _hidden(f: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in f.relative_to(root).parts)


# --------------------------------------------------------------------------- judging


def _proposal_estimate(lp: LoadedProfile, ctx: Context) -> tuple[Estimate, int | None, float | None]:
    """(estimate of the proposed configuration, replicas it allows, its QPS capacity)."""
    profile = lp.profile
    prop = profile.proposal
    assert prop is not None
    acc = ctx.catalog.get(prop.accelerator)
    if profile.is_training:
        return estimate(profile, acc, prop.count, ctx.constants), None, None
    # Serving: the proposed chips are split into replicas of a real single-host shape.
    best: tuple[float, Estimate, int] | None = None
    for per in sorted(set(candidate_counts(profile, acc, ctx.constants)) | {prop.count}):
        if per > prop.count or prop.count % per:
            continue
        e = estimate(profile, acc, per, ctx.constants)
        if not e.fits_memory or not e.capacity_rps:
            continue
        replicas = prop.count // per
        capacity = replicas * e.capacity_rps
        # prefer shapes the cloud sells at this price kind, then those that meet the latency target
        key = capacity * (1.0 if "chips not offered" not in (e.why_not or "") else 1e-3) * (1.0 if e.meets_latency is not False else 1e-6)
        if best is None or key > best[0]:
            best = (key, e, replicas)
    if best is None:
        return estimate(profile, acc, prop.count, ctx.constants), 0, 0.0
    e, replicas = best[1], best[2]
    return e, replicas, replicas * (e.capacity_rps or 0.0)


def _min_feasible_count(lp: LoadedProfile, ctx: Context) -> int | None:
    profile = lp.profile
    assert profile.proposal is not None
    acc = ctx.catalog.get(profile.proposal.accelerator)
    for n in candidate_counts(profile, acc, ctx.constants):
        e = estimate(profile, acc, n, ctx.constants)
        ok = e.fits_memory and e.meets_deadline is not False and e.meets_latency is not False
        if ok and profile.inference is not None and profile.task == "inference":
            needed = (e.replicas or 1) * n
            return needed
        if ok:
            return n
    return None


def judge(lp: LoadedProfile, ctx: Context, policy: Policy, today: dt.date) -> ProposalResult:
    profile = lp.profile
    doc = lp.doc
    prop = profile.proposal
    if prop is None:
        return ProposalResult(lp.label, lp.path, profile.name, "skipped")
    pline = doc.where(("proposal",), key=True)[0]
    line_of: Callable[[str], tuple[int, int]] = lambda key: doc.where(("proposal", key))  # noqa: E731
    acc = ctx.catalog.get(prop.accelerator)
    rec = recommend(profile, ctx.kb, ctx.catalog, ctx.constants, label=lp.label, with_flip=False)
    result = ProposalResult(
        lp.label, lp.path, profile.name, "pass",
        proposal={"accelerator": acc.id, "count": prop.count, "hours": prop.hours},
        recommended=rec, line=pline,
        source={"path": lp.path, "kind": "profile", "address": None, "line": pline},
        request={"accelerator": acc.id, "count": prop.count, "replicas": 1, "replicas_min": 1, "replicas_max": 1, "total_chips": prop.count},
    )
    findings: list[Finding] = []

    def add(rule: str, message: str, where: tuple[int, int]) -> None:
        if rule in policy.disabled_rules:
            return
        findings.append(Finding(rule, CHECK_RULES[rule].severity, message, where[0], where[1]))

    est, replicas, capacity = _proposal_estimate(lp, ctx)
    result.proposal_estimate = est
    price = est.usd_per_chip_hour
    result.proposal_cost = prop.count * prop.hours * price if price is not None else None

    excluded = {x.device: x for x in rec.decision.excluded}
    if acc.device in excluded:
        x = excluded[acc.device]
        fix = f" Fix: {x.fix}" if x.fix else ""
        add("proposal-device-excluded", f"{acc.id} is a {acc.device.upper()}, excluded by '{x.rule}': {x.reason}{fix}", line_of("accelerator"))
    if price is None and est.why_not and "not offered:" in est.why_not:
        add("proposal-unpriced", f"{acc.id} x {prop.count}: {est.why_not.split('; ')[0]}. Propose a count the cloud sells at this pricing, or another pricing (deployment.pricing).", line_of("count"))
    elif price is None:
        add("proposal-unpriced", f"{acc.id} has no catalog price on {', '.join(profile.deployment.clouds)}; it is not counted as $0. Propose an accelerator offered there or add a price with --catalog.", line_of("accelerator"))
    if not est.fits_memory:
        add("proposal-does-not-fit-memory", f"{acc.id} x {prop.count} does not hold the workload: {est.why_not or 'memory'}. Propose more chips or a larger-memory accelerator.", line_of("count"))
    if est.meets_deadline is False:
        assert profile.training is not None
        add("proposal-misses-deadline", f"{acc.id} x {prop.count} needs about {est.hours:,.1f} h (range {est.hours_low:,.1f}-{est.hours_high:,.1f} h), past the {profile.training.deadline_hours:g} h deadline. Propose more chips or a faster accelerator.", line_of("count"))
    if est.fits_memory and est.meets_latency is False:
        assert profile.inference is not None
        target = est.assumptions.get("latency_target_ms") or profile.inference.latency_p99_ms or 0.0
        which = "" if profile.inference.latency_p99_ms else " (the default; set inference.latency_p99_ms)"
        add("proposal-misses-latency", f"a request takes about {est.latency_ms:,.0f} ms on {acc.id} x {est.count}, above the {target:g} ms target{which}. Propose a faster accelerator or more chips per replica.", line_of("accelerator"))
    if capacity is not None and profile.inference is not None and est.fits_memory and capacity + 1e-9 < profile.inference.peak_qps:
        add("proposal-insufficient-capacity", f"{replicas} replica(s) of {acc.id} x {est.count} serve about {capacity:,.1f} requests/s, below the peak of {profile.inference.peak_qps:g}. Propose about {math.ceil(prop.count * profile.inference.peak_qps / max(capacity, 1e-9))} chips.", line_of("count"))
    budget = profile.goal.budget_usd
    if budget is not None and result.proposal_cost is not None and result.proposal_cost > budget:
        unit = "" if profile.is_training else " per month"
        add("proposal-over-budget", f"{prop.count} x {acc.id} for {prop.hours:g} h costs {money(result.proposal_cost)}{unit}, over the {money(budget)} budget.", line_of("hours"))
    if not acc.is_shape(prop.count):
        up = acc.round_up(prop.count)
        unit = family(acc.device).unit_text(acc.shapes)
        add("proposal-not-a-real-shape", f"{acc.id} comes in {unit}, up to {acc.max_chips():,} chips; {prop.count} will be provisioned as {up if up else 'more than the largest published cluster'}.", line_of("count"))

    # Compared with the best feasible alternative of any family the recommender allows.
    pool = [b for d, b in rec.decision.best_by_device.items() if b is not None and d not in excluded]
    best = min(pool, key=lambda b: (b.cost_usd or math.inf, b.accelerator)) if pool else None
    result.best = best
    th = policy.thresholds
    if best is not None and best.cost_usd and result.proposal_cost is not None:
        extra = result.proposal_cost - best.cost_usd
        pct = 100.0 * extra / best.cost_usd
        if pct > th.cost_over_best_percent and extra > th.cost_over_best_usd and (best.accelerator, best.count) != (acc.id, prop.count):
            # One suggestion, and it agrees with the recommendation whenever that is cheaper too.
            chosen = rec.estimate
            target = chosen if (chosen is not None and chosen.cost_usd is not None and chosen.cost_usd < result.proposal_cost
                                and (chosen.accelerator, chosen.count) != (acc.id, prop.count)) else best
            tail = " (the recommendation)" if target is chosen else ""
            add("proposal-costs-more-than-best", f"the proposal costs {money(result.proposal_cost)}, {pct:,.0f}% more than the best feasible alternative: {describe(best)}. Consider {target.accelerator} x {target.count}{tail}.", line_of("accelerator"))
    needed = _min_feasible_count(lp, ctx)
    if needed is not None and prop.count > th.oversize_factor * needed:
        add("proposal-oversized", f"{prop.count} x {acc.id} is {prop.count / needed:,.1f}x the {needed} that fit and meet the targets. Propose {needed}.", line_of("count"))
    if profile.is_training and est.hours and prop.hours > th.hours_over_estimate_factor * est.hours:
        add("proposal-hours-excessive", f"asks for {prop.hours:g} h; the estimate at {acc.id} x {prop.count} is {est.hours:,.1f} h (range {est.hours_low:,.1f}-{est.hours_high:,.1f} h). Propose about {math.ceil(est.hours_high or est.hours)} h.", line_of("hours"))
    if profile.inference is not None and profile.task == "inference":
        month = profile.inference.hours_per_day * HOURS_PER_MONTH / 24
        if prop.hours > th.hours_over_estimate_factor * month:
            add("proposal-hours-excessive", f"asks for {prop.hours:g} h per month; the service runs {profile.inference.hours_per_day:g} h a day ({month:,.0f} h per month).", line_of("hours"))
    other = family(acc.device).rival
    if other and other not in excluded and rec.device == other:  # a note that agrees with the recommendation
        ob = rec.decision.best_by_device.get(other)
        if ob is not None and ob.cost_usd is not None and result.proposal_cost is not None and ob.cost_usd < result.proposal_cost:
            sp = choose_setup(profile, ctx.kb, other, setup_cloud(profile, ob))
            path = f" via setup path '{sp.id}' ({sp.title})" if sp else ""
            add("cheaper-other-family", f"{family(other).name} option: {describe(ob)}{path}.", line_of("accelerator"))

    _apply_waivers(lp, findings, today, policy)
    # The report needs the verdict, its best configurations and setup path, not every candidate.
    rec.candidates, rec.table = [], []
    findings.sort(key=lambda f: (-RANK[f.severity], f.line, f.rule))
    result.findings = findings
    if result.active("error"):
        result.status = "error"
    elif result.active("warning"):
        result.status = "warning"
    return result


def _apply_waivers(lp: LoadedProfile, findings: list[Finding], today: dt.date, policy: Policy) -> None:
    prop = lp.profile.proposal
    assert prop is not None
    for i, w in enumerate(prop.waivers):
        where = lp.doc.where(("proposal", "waivers", i))
        problems = []
        if not w.reason.strip():
            problems.append("has no reason")
        if w.expires is None:
            problems.append("has no expiry date")
        elif w.expires < today:
            problems.append(f"expired on {w.expires.isoformat()}")
        if problems:
            if "waiver-invalid" not in policy.disabled_rules:
                findings.append(Finding("waiver-invalid", "error", f"waiver for '{w.rule}' {' and '.join(problems)}; it waives nothing. Renew it with a reason and a future expiry, or remove it.", where[0], where[1]))
            continue
        if w.rule not in CHECK_RULES:
            from advisor.validation import did_you_mean

            findings.append(Finding("waiver-unknown-rule", "warning", f"waiver names unknown rule '{w.rule}'{did_you_mean(w.rule, CHECK_RULES)}.", where[0], where[1]))
            continue
        for f in findings:
            if f.rule == w.rule and not f.waived:
                f.waived = True
                f.waiver = {"reason": w.reason, "owner": w.owner, "expires": w.expires.isoformat() if w.expires else None}


# --------------------------------------------------------------------------- baseline


def load_baseline(path: str, ctx: Context | None = None, policy: Policy | None = None) -> dict[str, Any]:
    """A previous ``--format json`` result; or, given the context, an old Terraform plan JSON or
    an old directory, checked now to serve as the baseline."""
    if os.path.isdir(path) or not path.endswith(".json"):
        if ctx is None or policy is None:
            raise InputError.single(path, 1, 1, "not an 'advisor check --format json' result")
        return run_check([path], ctx, policy).to_json()
    from advisor.infra.jsonsrc import load_json_file

    data, _text = load_json_file(path)
    if isinstance(data, dict) and "format_version" in data and ctx is not None and policy is not None:
        return run_check([path], ctx, policy).to_json()
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise InputError.single(path, 1, 1, "not an 'advisor check --format json' result (no 'results' list) nor a Terraform plan")
    return data


def _old_findings(entry: dict[str, Any]) -> set[tuple[str, str]]:
    found = entry.get("findings")
    if not isinstance(found, list):
        return set()
    return {
        (f["rule"], f["severity"])
        for f in found
        if isinstance(f, dict) and isinstance(f.get("rule"), str) and isinstance(f.get("severity"), str) and not f.get("waived")
    }


def _old_cost(entry: dict[str, Any]) -> float | None:
    prop = entry.get("proposal")
    if not isinstance(prop, dict):
        return None
    request = prop.get("request")
    value = request.get("cost_usd") if isinstance(request, dict) else prop.get("cost_usd")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _old_chips(entry: dict[str, Any]) -> int | None:
    req = entry.get("request")
    value = req.get("total_chips") if isinstance(req, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def diff_against(report: CheckReport, baseline: dict[str, Any] | None) -> dict[str, Any]:
    """New and fixed findings, chips and monthly cost before -> after per result (matched by
    ``key``: the profile label, or kind:address for infrastructure), and in total. A result new
    against the baseline counts its full cost. Without a baseline, a Terraform plan's own prior
    state (``change.before``) is the baseline of its resources.

    The baseline is untrusted input: entries of the wrong shape are ignored, never trusted.
    """
    entries = baseline["results"] if baseline is not None else []
    old: dict[str, dict[str, Any]] = {}
    for e in entries:
        if isinstance(e, dict):
            k = e.get("key") if isinstance(e.get("key"), str) else e.get("profile")
            if isinstance(k, str):
                old[k] = e
    changes: list[dict[str, Any]] = []
    new_total = fixed_total = 0
    for r in report.results:
        if r.status == "skipped":
            continue
        key = r.key or r.label
        before = old.get(key) if baseline is not None else (
            {"proposal": {"request": {"cost_usd": r.before.get("cost_usd")}}, "request": {"total_chips": r.before.get("total_chips")}} if r.before is not None else None)
        now = {(f.rule, f.severity) for f in r.findings if not f.waived}
        was = _old_findings(before) if before and baseline is not None else (now if baseline is None else set())
        old_cost = _old_cost(before) if before else None
        new = sorted(now - was)
        fixed = sorted(was - now)
        new_total += len(new)
        fixed_total += len(fixed)
        added = before is None
        if added:
            old_cost = 0.0
        delta = None if (old_cost is None or r.proposal_cost is None) else round(r.proposal_cost - old_cost, 2)
        chips_after = (r.request or {}).get("total_chips")
        chips_before = 0 if added else _old_chips(before or {})
        changes.append({
            "profile": r.label,
            "key": key,
            "added": added,
            "new": [{"rule": a, "severity": b} for a, b in new],
            "fixed": [{"rule": a, "severity": b} for a, b in fixed],
            "chips_before": chips_before,
            "chips_after": chips_after,
            "cost_before_usd": old_cost,
            "cost_after_usd": _r(r.proposal_cost),
            "cost_delta_usd": delta,
        })
    current = {r.key or r.label for r in report.results}
    removed = sorted(str(k) for k in set(old) - current)
    removed_cost = sum(c for c in (_old_cost(old[k]) for k in removed) if c is not None)
    before_total = sum(c["cost_before_usd"] or 0.0 for c in changes) + removed_cost
    after_total = sum(c["cost_after_usd"] or 0.0 for c in changes)
    return {
        "baseline": "file" if baseline is not None else "plan-prior-state",
        "new_findings": new_total,
        "fixed_findings": fixed_total,
        "removed_profiles": removed,
        "cost_before_usd": _r(before_total),
        "cost_after_usd": _r(after_total),
        "cost_delta_usd": _r(sum(c["cost_delta_usd"] or 0.0 for c in changes) - removed_cost),
        "chips_before": sum(c["chips_before"] or 0 for c in changes) + sum(_old_chips(old[k]) or 0 for k in removed),
        "chips_after": sum(c["chips_after"] or 0 for c in changes),
        "unpriced": sorted(c["key"] for c in changes if c["cost_delta_usd"] is None),
        "changes": [c for c in changes if c["new"] or c["fixed"] or c["added"] or c["cost_delta_usd"] or c["chips_before"] != c["chips_after"]],
    }


def apply_increase_limit(report: CheckReport, policy: Policy) -> None:
    """``limits.max_monthly_increase_usd``: every result that adds cost carries the finding when
    the total increase passes the limit."""
    limit = policy.limits.max_monthly_increase_usd
    d = report.diff
    if limit is None or d is None or "policy-monthly-increase" in policy.disabled_rules:
        return
    delta = d.get("cost_delta_usd") or 0.0
    if delta <= limit:
        return
    by_key = {c["key"]: c for c in d["changes"]}
    for r in report.results:
        c = by_key.get(r.key or r.label)
        if c is None or not (c["cost_delta_usd"] or 0) > 0:
            continue
        r.findings.append(Finding("policy-monthly-increase", "error",
                                  f"the change raises monthly spend by {money(delta)} in total, over the policy's {money(limit)} limit; this resource adds {money(c['cost_delta_usd'])} ({c['chips_before']} -> {c['chips_after']} chips).",
                                  r.line, 1))
        r.status = "error"


# --------------------------------------------------------------------------- entry


def run_check(
    paths: Iterable[str],
    ctx: Context,
    policy: Policy,
    *,
    policy_path: str | None = None,
    today: dt.date | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> CheckReport:
    files = expand_paths(paths)
    if not files:
        raise InputError([Problem(".", 1, 1, "no YAML files to check")])
    day = today or dt.date.today()
    workers = _workers(len(files))
    batch = _Batch()
    if workers == 1:
        batch = _check_files(files, ctx, policy, day, progress)
    else:
        import multiprocessing

        global _JOB
        _JOB = (ctx, policy, day)
        size = max(1, math.ceil(len(files) / (workers * 4)))
        chunks = [files[i : i + size] for i in range(0, len(files), size)]
        done = 0
        try:
            with multiprocessing.get_context("fork").Pool(workers, initializer=_worker_signals) as pool:
                for chunk, part in zip(chunks, pool.imap(_check_chunk, chunks), strict=True):
                    batch.extend(part)
                    done += len(chunk)
                    if progress:
                        progress(done, len(files))
        finally:
            _JOB = None
    results = batch.results
    if batch.requests:
        from advisor.infra.judge import apply_autoscalers, judge_request

        apply_autoscalers(batch.requests, batch.autoscalers)
        for req in batch.requests:
            try:
                results.append(judge_request(req, batch.workloads, ctx, policy, day))
            except InputError as exc:
                batch.invalid.append(InvalidFile(req.path, exc.problems))
    invalid = batch.invalid
    if invalid and not results and not batch.skipped:  # nothing could be judged: a plain input error, nothing to report
        raise InputError([p for bad in invalid for p in bad.problems])
    return CheckReport(results, policy.fail_on, ctx.catalog.as_of.isoformat(), policy_path, invalid=invalid, skipped_files=batch.skipped)


@dataclass
class _Batch:
    results: list[ProposalResult] = field(default_factory=list)
    invalid: list[InvalidFile] = field(default_factory=list)
    requests: list[Any] = field(default_factory=list)  # advisor.infra.model.Request
    autoscalers: list[Any] = field(default_factory=list)
    workloads: list[LoadedProfile] = field(default_factory=list)  # every profile read (for links)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def extend(self, other: _Batch) -> None:
        self.results += other.results
        self.invalid += other.invalid
        self.requests += other.requests
        self.autoscalers += other.autoscalers
        self.workloads += other.workloads
        self.skipped += other.skipped


def _read_one(path: str, ctx: Context) -> tuple[list[LoadedProfile], Any]:
    """A file's profiles, or its parsed infrastructure (advisor.infra.model.Parsed)."""
    from advisor.yamlsrc import STDIN, stdin_is_json

    if path.endswith(".json") or (path == STDIN and stdin_is_json()):
        from advisor.infra.names import name_index
        from advisor.infra.read import read_json

        return [], read_json(path, name_index(ctx.catalog))
    if path.endswith(".tf"):
        from advisor.infra.names import name_index
        from advisor.infra.read import read_hcl

        return [], read_hcl(path, name_index(ctx.catalog))
    from advisor.infra.sniff import doc_kind
    from advisor.yamlsrc import load_documents, read_text

    text = read_text(path, max_bytes=8 * 1024 * 1024)
    docs = load_documents(text, path, max_nodes=500_000)
    kinds = [doc_kind(d.data) for d in docs if d.data is not None]
    if kinds and all(k in ("other",) for k in kinds):
        from advisor.infra.model import Parsed

        return [], Parsed("other", notes=["YAML that is not a workload profile, a Kubernetes manifest or a SkyPilot task"])
    if "kubernetes" in kinds or "skypilot" in kinds:
        from advisor.infra.names import name_index
        from advisor.infra.read import read_yaml

        return [], read_yaml(docs, kinds, name_index(ctx.catalog))
    if len(text) > MAX_BYTES:
        raise InputError.single(path, 1, 1, f"file is larger than the {MAX_BYTES}-byte limit")
    return profiles_from_docs(path, docs), None


def _check_files(
    files: list[str], ctx: Context, policy: Policy, day: dt.date, progress: Callable[[int, int], None] | None = None
) -> _Batch:
    """Judge file by file: a bad file is listed with its problems and the batch goes on."""
    out = _Batch()
    for i, path in enumerate(files):
        try:
            loaded, parsed = _read_one(path, ctx)
            if parsed is not None:
                if parsed.kind in ("other", "terraform-hcl") and not parsed.requests:
                    out.skipped.append((path, "; ".join(parsed.notes) or "nothing to check"))
                elif not parsed.requests and not parsed.autoscalers:
                    out.skipped.append((path, "; ".join(parsed.notes) or "no accelerator requests"))
                out.requests += parsed.requests
                out.autoscalers += parsed.autoscalers
            else:
                check_accelerators(loaded, ctx.catalog)
                judged = [judge(lp, ctx, policy, day) for lp in loaded]
                out.results.extend(judged)
                out.workloads.extend(loaded)
        except InputError as exc:
            out.invalid.append(InvalidFile(path, exc.problems))
        if progress:
            progress(i + 1, len(files))
    return out


# Large batches are spread over the available cores; forked workers inherit the loaded
# context and profiles, so only results cross the process boundary.
PARALLEL_THRESHOLD = 200
_JOB: tuple[Context, Policy, dt.date] | None = None


def _workers(n: int) -> int:
    import multiprocessing

    if n < PARALLEL_THRESHOLD or os.environ.get("ADVISOR_JOBS") == "1":
        return 1
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    wanted = os.environ.get("ADVISOR_JOBS", "")
    return max(1, min(cores, int(wanted))) if wanted.isdigit() else cores


def _worker_signals() -> None:
    """Workers leave SIGINT to the parent (a Ctrl-C reaches the whole process group) and die
    at once on SIGTERM, which the parent's pool sends them when it is interrupted."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _check_chunk(files: list[str]) -> _Batch:
    assert _JOB is not None
    ctx, policy, day = _JOB
    return _check_files(files, ctx, policy, day)
