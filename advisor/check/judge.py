"""The one rule runner of the gate. A subject (a proposal in a profile, or an infrastructure request
judged in ``advisor.check.infra.judge``) is judged by every registered rule the policy does not
disable (``run_rules``), then by its waivers, whatever carried them (``apply_waivers``: a
profile's ``proposal.waivers``, a Kubernetes annotation, a Terraform comment, a SkyPilot env):
one set of conditions for all of them (``waiver-invalid``, ``waiver-unknown-rule``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from advisor.check.results import RANK, Finding, ProposalResult
from advisor.check.rules import CHECK_RULES, CheckRule, Judging, proposal_rules, visible_text
from advisor.conditions import leaves
from advisor.context import Context
from advisor.estimate.result import Estimate
from advisor.estimate.search import NOT_ESTIMATED, all_candidates, workload_key
from advisor.facts import FieldReader
from advisor.knowledge import KnowledgeBase
from advisor.loading import LoadedProfile
from advisor.models import Profile
from advisor.policy import Policy
from advisor.recommend import Decision, decide, recommend
from advisor.setuppath import SetupPlan

# Proposals of one batch often describe the same workload (one model in several environments, a
# proposal re-sized or re-timed). The candidate search is a pure function of the workload, the
# catalog and the constants, so it runs once per distinct workload while that workload is among the
# most recent ones kept: at most KEPT_WORKLOADS of them and KEPT_ESTIMATES configurations in all
# (~3 kB each: the bound caps the memory at ~50 MB, whatever the batch). The key leaves out what the
# estimator never reads (the name, the proposal, the infrastructure it matches).
KEPT_WORKLOADS = 32
KEPT_ESTIMATES = 16_000
_CANDIDATES: dict[str, tuple[Context, list[Estimate], dict[tuple[Any, ...], Decision]]] = {}


def _workload(profile: Profile, ctx: Context) -> tuple[Context, list[Estimate], dict[tuple[Any, ...], Decision]]:
    """(context, ``all_candidates`` of the profile's workload, its decisions so far), estimated once
    per recent workload and context."""
    key = workload_key(profile)
    hit = _CANDIDATES.pop(key, None)
    if hit is None or hit[0].catalog is not ctx.catalog or hit[0].constants is not ctx.constants or hit[0].kb is not ctx.kb:
        hit = (ctx, all_candidates(profile, ctx.catalog, ctx.constants, verdict_only=True), {})
    _CANDIDATES[key] = hit  # the most recent last; the oldest go first
    held = sum(len(v[1]) for v in _CANDIDATES.values())
    while len(_CANDIDATES) > 1 and (len(_CANDIDATES) > KEPT_WORKLOADS or held > KEPT_ESTIMATES):
        held -= len(_CANDIDATES.pop(next(iter(_CANDIDATES)))[1])
    return hit


def candidates(profile: Profile, ctx: Context) -> list[Estimate]:
    """``all_candidates`` of the profile's workload, estimated once per recent workload and context."""
    return list(_workload(profile, ctx)[1])


_RULE_READS: list[Any] = [None, ()]  # (knowledge base, the fields outside the workload its rules read)


def _outside_workload(kb: KnowledgeBase) -> tuple[str, ...]:
    """The fields the estimator never reads (the name, the infrastructure matched) that a rule of
    ``kb`` tests: a decision depends on the workload and on these (none, in the built-in rules)."""
    if _RULE_READS[0] is not kb:
        read = {leaf.field for r in kb.rules for leaf in leaves(r.when)}
        _RULE_READS[0], _RULE_READS[1] = kb, tuple(sorted(f for f in read if f.split(".")[0] in NOT_ESTIMATED))
    return tuple(_RULE_READS[1])


def decided(profile: Profile, ctx: Context) -> tuple[Decision, list[Estimate]]:
    """The verdict on the profile's workload and its candidates: decided once per recent workload
    (and per value of any field outside it that a rule reads), as the candidates are estimated."""
    _ctx, cands, decisions = _workload(profile, ctx)
    reader = FieldReader(profile)
    key = tuple(repr(reader.get(f)) for f in _outside_workload(ctx.kb))
    hit = decisions.get(key)
    if hit is None:
        hit = decisions[key] = decide(profile, ctx.kb, ctx.catalog, ctx.constants, list(cands))[0]
    return hit, list(cands)


def judge(lp: LoadedProfile, ctx: Context, policy: Policy, today: dt.date) -> ProposalResult:
    """Run every registered proposal rule the policy does not disable, then the waivers."""
    profile = lp.profile
    prop = profile.proposal
    if prop is None:
        return ProposalResult(lp.label, lp.path, profile.name, "skipped")
    pline = lp.doc.where(("proposal",), key=True)[0]
    decision, cands = decided(profile, ctx)
    rec = recommend(
        profile, ctx.kb, ctx.catalog, ctx.constants, label=lp.label, with_flip=False, cands=cands, with_table=False, decision=decision
    )
    j = Judging(lp, ctx, policy, rec)
    acc = j.acc
    result = ProposalResult(
        lp.label,
        lp.path,
        profile.name,
        "pass",
        proposal={"accelerator": acc.id, "count": prop.count, "hours": prop.hours},
        recommended=rec,
        line=pline,
        source={"path": lp.path, "kind": "profile", "address": None, "line": pline},
        request={
            "accelerator": acc.id,
            "count": prop.count,
            "replicas": 1,
            "replicas_min": 1,
            "replicas_max": 1,
            "total_chips": prop.count,
        },
    )
    result.proposal_estimate = j.est
    result.proposal_cost = j.cost
    result.best = j.best
    findings = run_rules(proposal_rules(), "check", j, policy)
    apply_waivers(proposal_waivers(lp), findings, today, policy)
    # The report needs the verdict, its best configurations and setup path (not its steps), not
    # every candidate: a batch of 10,000 proposals keeps only what it reports.
    rec.candidates, rec.table, rec.warnings = [], [], []
    if rec.setup is not None:
        rec.setup = SetupPlan(rec.setup.path, [])
    findings.sort(key=lambda f: (-RANK[f.severity], f.line, f.rule))
    result.findings = findings
    if result.active("error"):
        result.status = "error"
    elif result.active("warning"):
        result.status = "warning"
    return result


def run_rules(rules: Iterable[CheckRule], hook: str, subject: Any, policy: Policy) -> list[Finding]:
    """The findings of every rule the policy does not disable, through the rule's ``hook``
    (``check`` for a proposal, ``request_check`` for an infrastructure request)."""
    return [
        Finding(rule.id, rule.severity, message, line, col)
        for rule in rules
        if rule.id not in policy.disabled_rules and (check := getattr(rule, hook)) is not None
        for message, (line, col) in check(subject)
    ]


@dataclass(frozen=True)
class Waiver:
    """One waiver as written, whatever carried it. ``date_problem`` says why a written expiry could
    not be read; ``syntax`` is how the carrier spells an expiry, for the message that one is missing."""

    rule: str
    reason: str
    expires: dt.date | None
    where: tuple[int, int]
    owner: str | None = None
    date_problem: str | None = None
    syntax: str = ""


def proposal_waivers(lp: LoadedProfile) -> list[Waiver]:
    prop = lp.profile.proposal
    assert prop is not None
    return [
        Waiver(w.rule, w.reason, w.expires, lp.doc.where(("proposal", "waivers", i)), owner=w.owner)
        for i, w in enumerate(prop.waivers)
    ]


def _problems(w: Waiver, today: dt.date, policy: Policy) -> list[str]:
    problems = []
    if w.rule.startswith("waiver-"):
        problems.append("names a waiver rule, which cannot be waived")
    if policy.waivers.blocks(w.rule):
        problems.append("names a rule the policy does not let a waiver waive (waivers.unwaivable)")
    if not visible_text(w.reason):
        problems.append("has no reason (no visible text)")
    if w.date_problem is not None:
        problems.append(w.date_problem)
    elif w.expires is None:
        problems.append(f"has no expiry date{w.syntax}")
    elif w.expires < today:
        problems.append(f"expired on {w.expires.isoformat()}")
    elif policy.waivers.max_days is not None and (w.expires - today).days > policy.waivers.max_days:
        days = policy.waivers.max_days
        problems.append(f"expires on {w.expires.isoformat()}, more than the policy's {days} days ahead (waivers.max_days)")
    return problems


def apply_waivers(waivers: Iterable[Waiver], findings: list[Finding], today: dt.date, policy: Policy) -> None:
    """Mark the findings each valid waiver covers; an invalid waiver (no visible reason, no expiry
    or a past one, a ``waiver-*`` rule) waives nothing and is an error, an unknown rule a warning."""
    for w in waivers:
        name = w.rule[:100]
        problems = _problems(w, today, policy)
        if problems:
            if "waiver-invalid" not in policy.disabled_rules:
                findings.append(
                    Finding(
                        "waiver-invalid",
                        "error",
                        f"waiver for '{name}' {' and '.join(problems)}; it waives nothing. Renew it with a reason and a future expiry, "
                        "or remove it.",
                        *w.where,
                    )
                )
            continue
        if w.rule not in CHECK_RULES:
            from advisor.validation import did_you_mean

            findings.append(
                Finding("waiver-unknown-rule", "warning", f"waiver names unknown rule '{name}'{did_you_mean(name, CHECK_RULES)}.", *w.where)
            )
            continue
        for f in findings:
            if f.rule == w.rule and not f.waived:
                f.waived = True
                f.waiver = {"reason": w.reason[:2000], "owner": w.owner, "expires": w.expires.isoformat() if w.expires else None}
